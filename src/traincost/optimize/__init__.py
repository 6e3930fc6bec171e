"""Searches over deployment choices: layer fusion (CP-SAT) and, later, activation checkpointing."""
