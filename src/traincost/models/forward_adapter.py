"""A library module's forward as the front ends call it: named tensors in, one tensor out.

A Hugging Face model takes its inputs by name (``input_ids``, ``attention_mask``, ``labels``) and returns a
``ModelOutput``; a diffusers model returns a ``BaseOutput``; torchvision's segmentation networks a dict; others a
tuple. :func:`adapt_forward` wraps such a module's forward, on the module itself so that every parameter keeps its
name, so that it reads the batch's tensors in the order the front ends pass them and returns the one tensor the
loss reads:

* **inputs**: each goes to the forward's parameter of its name; where none has it (the forward's parameters are
  ``x``, ``*args``), the inputs go in order;
* **output**: the entry ``--output`` names; else the first of ``loss`` (the model computed its own loss, from labels
  among its inputs; in training mode only), ``logits``, ``sample``, ``out``; else the first tensor. A tensor is
  itself.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import torch
from torch.utils._pytree import tree_leaves

from traincost.errors import ConfigError

__all__ = ["OUTPUT_PREFERENCE", "OWN_LOSS", "adapt_forward", "output_used", "select_output"]

OWN_LOSS = "loss"  # the entry a model returns its own loss in (a Hugging Face model given labels)
OUTPUT_PREFERENCE = (OWN_LOSS, "logits", "sample", "out")
TENSOR = "output"  # what the summary calls a forward's output that is one tensor


def select_output(output: object, *, named: str | None, training: bool, where: str) -> tuple[str, torch.Tensor]:
    """The tensor of a forward's ``output`` the loss reads, and its name (``TENSOR`` for a tensor, a key, or an
    index of a tuple): ``named`` if given, else the module docstring's rule (``loss`` only if ``training``).

    Raises:
        ConfigError: ``named`` is not an entry, or the output holds no tensor.
    """
    if isinstance(output, torch.Tensor):
        if named not in (None, TENSOR):
            raise ConfigError(f"{where}: --output {named!r}: the forward returns one tensor, which has no entries")
        return TENSOR, output
    entries = _entries(output)
    tensors = {key: value for key, value in entries.items() if isinstance(value, torch.Tensor)}
    if named is not None:
        if named not in tensors:
            raise ConfigError(f"{where}: --output {named!r}: its forward returns {type(output).__name__} with tensors "
                              f"{sorted(tensors) or 'none'}")  # fmt: skip
        return named, tensors[named]
    preferred = OUTPUT_PREFERENCE if training else OUTPUT_PREFERENCE[1:]
    for key in preferred:
        if key in tensors:
            return key, tensors[key]
    for key, value in entries.items():
        leaves = [leaf for leaf in tree_leaves(value) if isinstance(leaf, torch.Tensor)]
        if leaves:
            return key, leaves[0]
    raise ConfigError(f"{where}: its forward returns {type(output).__name__} holding no tensor; expected a tensor")


def _entries(output: object) -> dict[str, object]:
    """A forward's output as named entries: a mapping's items (a ``ModelOutput`` holds only the entries it set), a
    sequence's by index."""
    if isinstance(output, Mapping):
        return {str(key): value for key, value in output.items()}
    if isinstance(output, Sequence) and not isinstance(output, str):
        return {str(index): value for index, value in enumerate(output)}
    return {}


@dataclass
class _Forward:
    """The adapted forward, bound to the module (``types.MethodType``): a copy of the module takes it along."""

    names: tuple[str, ...]
    keywords: frozenset[str]  # the names the forward has a parameter of (``_keyword_inputs``)
    output: str | None
    where: str
    chosen: str = field(default="", init=False)  # the output entry the last call returned

    def __call__(self, module: torch.nn.Module, *tensors: torch.Tensor) -> torch.Tensor:
        positional = [t for name, t in zip(self.names, tensors, strict=True) if name not in self.keywords]
        named = {name: t for name, t in zip(self.names, tensors, strict=True) if name in self.keywords}
        output = type(module).forward(module, *positional, **named)
        self.chosen, tensor = select_output(output, named=self.output, training=module.training, where=self.where)
        return tensor


def _keyword_inputs(forward: object, names: Sequence[str]) -> frozenset[str]:
    """The inputs among ``names`` the forward has a parameter of that name for (``**kwargs`` takes no name)."""
    parameters = inspect.signature(forward).parameters
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return frozenset(name for name in names if name in parameters and parameters[name].kind in kinds)


def adapt_forward(module: torch.nn.Module, names: Sequence[str], *, output: str | None, where: str) -> torch.nn.Module:
    """``module`` with its forward taking the tensors ``names`` in order and returning one tensor (the module
    docstring's rules; ``output`` names the entry to return). The module itself, changed in place."""
    keywords = _keyword_inputs(type(module).forward, names)
    module.forward = types.MethodType(_Forward(tuple(names), keywords, output, where), module)
    return module


def output_used(module: torch.nn.Module) -> str:
    """The output entry ``module``'s adapted forward returned last (``TENSOR`` for a module not adapted)."""
    adapter = getattr(module.forward, "__func__", None)
    return adapter.chosen if isinstance(adapter, _Forward) and adapter.chosen else TENSOR
