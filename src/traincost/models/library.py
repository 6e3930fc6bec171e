"""Factories of torchvision's and timm's networks, with random weights, for ``traincost cost``.

A library's builder takes the network's name, so ``traincost cost`` reaches every network of the library through one
factory path, the builder's name and options in ``--kwargs``::

    traincost cost traincost.models.library:torchvision_model --name swin_t \\
        --kwargs '{"name": "swin_t", "num_classes": 10}' --input-shape 3,32,32 --batch 2 --hardware edge_tpu.yaml

torchvision and timm are not dependencies of traincost (the ``test`` extra installs them): each factory imports its
library when it is called, after :func:`~traincost.models.torchvision_ops.declare_unloadable_ops`, and names the
package when it is not installed. Nothing is downloaded (``weights=None``, ``pretrained=False``).
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING

from traincost.errors import ConfigError
from traincost.models.torchvision_ops import declare_unloadable_ops

if TYPE_CHECKING:
    from torch import nn

__all__ = ["timm_model", "torchvision_model"]

# the versions the `test` extra pins (pyproject.toml), named when a library is missing
_PINNED = {"torchvision": "torchvision==0.28.0", "timm": "timm==1.0.31"}


def torchvision_model(name: str, **kwargs: object) -> nn.Module:
    """torchvision's classification builder ``name`` with random weights (``torchvision.models.get_model``).

    Args:
        name: the builder's name, e.g. ``resnet18``, ``swin_t``.
        **kwargs: the builder's keyword arguments, e.g. ``num_classes``.

    Raises:
        ConfigError: torchvision is not installed.
    """
    torchvision = _library("torchvision", "torchvision_model")
    return torchvision.models.get_model(name, weights=None, **kwargs)


def timm_model(name: str, **kwargs: object) -> nn.Module:
    """timm's model ``name`` with random weights (``timm.create_model``).

    Args:
        name: the model's name, e.g. ``convnext_atto``, ``vit_tiny_patch16_224``.
        **kwargs: ``create_model``'s keyword arguments, e.g. ``num_classes``, ``img_size``.

    Raises:
        ConfigError: timm is not installed.
    """
    timm = _library("timm", "timm_model")
    return timm.create_model(name, pretrained=False, **kwargs)


def _library(package: str, factory: str) -> ModuleType:
    """``package`` imported, torchvision's operator schemas declared first where its own cannot load (timm imports
    torchvision too)."""
    declare_unloadable_ops()
    try:
        return importlib.import_module(package)
    except ModuleNotFoundError as err:
        if err.name not in _PINNED:  # another module missing: not ours to name
            raise
        raise ConfigError(
            f"traincost.models.library:{factory} needs {err.name}, which is not installed "
            f"(pip install {_PINNED[err.name]}, as the `test` extra does)"
        ) from err
