"""What a model reads and how it is trained: named inputs (shape, dtype, value range) and a loss.

A zoo model, a user's torch module and an ONNX file are all described this way. ``traincost export``
records the resolved description (every shape with its batch, the labels and the loss) in the
graph's metadata, and every later stage draws its batches from there (:func:`draw_tensors`).

A description in the config or on the command line is a mapping from input name to
``{shape: [...], dtype: float32 | int64, range: [low, high]}``: ``shape`` is one sample's shape
without the batch, ``range`` bounds int64 values (drawn uniformly from ``[low, high)``, e.g. token
ids below the vocabulary size); float32 values are drawn from N(0, 1).

numpy draws the batches, so a stage that only executes a graph (``verify-decomposition``) never imports torch.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from traincost.errors import ConfigError
from traincost.limits import MAX_DRAWN_BYTES

__all__ = ["LOSSES", "MODEL_LOSS", "InputSpec", "check_loss", "draw_tensors", "parse_inputs", "parse_labels"]

LOSSES = ("cross_entropy", "token_cross_entropy", "mse")
"""Built-in losses: cross-entropy over the output's dimension 1, as torch takes it (int64 labels); token cross-entropy
over its last axis, every other position a row (a language model's per-token logits); mean squared error (float
targets shaped like the output). A factory path ``package.module:function`` names any other."""
MODEL_LOSS = "model"
"""A traced step's loss where the model computes its own from labels among its inputs (a Hugging Face model's
``loss`` output, ``traincost.models.forward_adapter``): no loss is added and no labels are drawn."""

_DTYPES = ("float32", "int64")


@dataclass(frozen=True, slots=True)
class InputSpec:
    """One named input tensor.

    Attributes:
        name: the graph input's name.
        shape: its shape (one sample's without the batch where the caller says so, else the whole tensor's).
        dtype: ``"float32"`` (drawn from N(0, 1)) or ``"int64"`` (drawn uniformly from ``[low, high)``).
        low: smallest int64 value.
        high: one past the largest int64 value (0 for float32).
    """

    name: str
    shape: tuple[int, ...]
    dtype: Literal["float32", "int64"]
    low: int = 0
    high: int = 0

    def batched(self, batch: int) -> InputSpec:
        """The spec of a batch of ``batch`` such samples."""
        return InputSpec(self.name, (batch, *self.shape), self.dtype, self.low, self.high)

    def to_json(self) -> dict[str, object]:
        """A JSON-ready mapping (graph metadata)."""
        return {"name": self.name, "shape": list(self.shape), "dtype": self.dtype, "range": [self.low, self.high]}

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> InputSpec:
        """The spec :meth:`to_json` wrote."""
        low, high = data["range"]  # type: ignore[misc]
        return cls(str(data["name"]), tuple(data["shape"]), data["dtype"], int(low), int(high))  # type: ignore[arg-type]

    def describe(self) -> str:
        """``tokens: int64 2x16`` for error messages."""
        return f"{self.name}: {self.dtype} {'x'.join(map(str, self.shape))}"


def parse_inputs(data: object, *, where: str) -> tuple[InputSpec, ...]:
    """Check a mapping name → ``{shape, dtype, range}`` (config ``inputs:`` or ``--inputs``).

    Args:
        data: the mapping, as YAML or JSON gave it.
        where: what to name in an error (``workloads.mine.inputs``, ``--inputs``).

    Returns:
        One spec per input, in the mapping's order; shapes without the batch.

    Raises:
        ConfigError: naming ``where`` and the input at fault.
    """
    if not isinstance(data, Mapping) or not data:
        raise ConfigError(f"{where}: expected a mapping of input name to {{shape, dtype, range}}, got {data!r}")
    specs = []
    for name, entry in data.items():
        if not isinstance(name, str) or not name:
            raise ConfigError(f"{where}: input names must be non-empty strings, got {name!r}")
        specs.append(_spec(name, entry, at=f"{where}.{name}"))
    return tuple(specs)


def parse_labels(data: object, *, where: str) -> InputSpec:
    """Check the labels a user's loss function reads (config ``labels:`` or ``--labels``): one
    ``{shape, dtype, range}``, the shape one sample's without the batch; the tensor is named ``labels``.

    Raises:
        ConfigError: naming ``where`` and what is wrong.
    """
    return _spec("labels", data, at=where)


def _spec(name: str, entry: object, *, at: str) -> InputSpec:
    if not isinstance(entry, Mapping) or not set(entry) <= {"shape", "dtype", "range"} or "shape" not in entry:
        raise ConfigError(f"{at}: expected {{shape: [...], dtype: float32 | int64, range: [low, high]}}, got {entry!r}")
    shape = entry["shape"]
    if not isinstance(shape, Sequence) or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 1 for d in shape):
        raise ConfigError(f"{at}.shape: expected a list of positive sizes (one sample, no batch), got {shape!r}")
    dtype = entry.get("dtype", "float32")
    if dtype not in _DTYPES:
        raise ConfigError(f"{at}.dtype: expected one of {', '.join(_DTYPES)}, got {dtype!r}")
    low, high = _range(entry.get("range"), dtype=dtype, at=at)
    return InputSpec(name, tuple(shape), dtype, low, high)


def _range(value: object, *, dtype: str, at: str) -> tuple[int, int]:
    if dtype == "float32":
        if value is not None:
            raise ConfigError(f"{at}.range: only int64 inputs take a range (float32 is drawn from N(0, 1))")
        return 0, 0
    if (
        not isinstance(value, Sequence)
        or len(value) != 2
        or not all(isinstance(v, int) and not isinstance(v, bool) for v in value)
        or value[0] >= value[1]
    ):
        raise ConfigError(f"{at}.range: an int64 input needs [low, high], low < high (drawn from [low, high)), got {value!r}")
    return int(value[0]), int(value[1])


def check_loss(loss: object, *, where: str) -> str:
    """``loss`` if it is a built-in loss or a factory path ``package.module:function``."""
    if isinstance(loss, str) and (loss in LOSSES or _is_factory_path(loss)):
        return loss
    raise ConfigError(f"{where}: expected {', '.join(LOSSES)} or a factory path package.module:function, got {loss!r}")


def _is_factory_path(text: str) -> bool:
    module, _, function = text.partition(":")
    return bool(module) and all(part.isidentifier() for part in module.split(".")) and function.isidentifier()


def draw_tensors(specs: Sequence[InputSpec], *, seed: int) -> dict[str, np.ndarray]:
    """Deterministic random tensors of the given (whole) shapes, in order, from one numpy generator seeded with
    ``seed`` (``torch.from_numpy`` shares them with torch)."""
    nbytes = sum(math.prod(spec.shape) * (8 if spec.dtype == "int64" else 4) for spec in specs)
    if nbytes > MAX_DRAWN_BYTES:
        shapes = ", ".join(f"{spec.name} {'x'.join(map(str, spec.shape))}" for spec in specs)
        raise ConfigError(
            f"the batch ({shapes}) would take {nbytes:,} bytes; expected at most {MAX_DRAWN_BYTES:,} "
            "(traincost.limits.MAX_DRAWN_BYTES): a smaller batch"
        )
    rng = np.random.default_rng(seed)
    drawn = {}
    for spec in specs:
        if spec.dtype == "int64":
            drawn[spec.name] = rng.integers(spec.low, spec.high, size=spec.shape, dtype=np.int64)
        else:
            drawn[spec.name] = rng.standard_normal(spec.shape, dtype=np.float32)
    return drawn
