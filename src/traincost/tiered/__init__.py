"""Tiered-memory training (TM-Training): an HBM + NAND flash memory behind a TPUv4-like NPU.

``system`` loads the chip and its tiers; ``trace`` turns a training step into per-op traffic;
``engine`` simulates iterations; ``policies`` are the placement policies of the paper (``split_ratio`` holds
TM-Training's Algorithms 1-3); ``study`` runs them all.
"""
