"""Checks of the papers' qualitative claims, computed on our own results."""
