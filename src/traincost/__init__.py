"""traincost: model what it costs to train a neural network on an accelerator."""

from __future__ import annotations

__all__ = ["__version__"]

__version__ = "0.1.0"
