"""Searches over deployment choices: layer fusion (CP-SAT) and activation checkpointing (recomputation)."""
