"""A 3-layer perceptron (64 → 128 → 128 → 10), the smallest model with saved activations to recompute."""

from __future__ import annotations

from torch import nn

__all__ = ["mlp", "MLP_FEATURES", "MLP_CLASSES"]

MLP_FEATURES = 64
MLP_CLASSES = 10
_HIDDEN = 128


def mlp() -> nn.Module:
    """Linear-ReLU-Linear-ReLU-Linear on 64 features; logits for 10 classes."""
    return nn.Sequential(
        nn.Linear(MLP_FEATURES, _HIDDEN),
        nn.ReLU(),
        nn.Linear(_HIDDEN, _HIDDEN),
        nn.ReLU(),
        nn.Linear(_HIDDEN, MLP_CLASSES),
    )
