"""torch with every random draw at its keep value: the torch side of ``randomness.without_randomness``.

The export check compares the exported graph's output with torch's on one batch; both draw their masks
at their keep values (see :mod:`traincost.frontend.onnx.randomness`), so the comparison is like with like.
"""

from __future__ import annotations

import torch
from torch.utils._python_dispatch import TorchDispatchMode

__all__ = ["no_randomness"]


class no_randomness(TorchDispatchMode):  # noqa: N801 (used as a context manager, like torch's own modes)
    """torch with every random draw at its keep value, as ``without_randomness`` does to an ONNX graph: ``bernoulli``
    draws 1, ``rand`` and ``uniform_`` their low end, ``randn`` and ``normal_`` their mean."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204 (torch's signature)
        kwargs = kwargs or {}
        packet = func.overloadpacket
        if packet in _FILLED:
            target = args[0]
            return target.fill_(_FILLED[packet](*args[1:], **kwargs))
        if packet in _DRAWN_LIKE:
            return torch.full_like(args[0], _DRAWN_LIKE[packet], dtype=kwargs.get("dtype"))
        if packet in _DRAWN:
            dtype = kwargs.get("dtype") or torch.get_default_dtype()
            return torch.full(tuple(args[0]), _DRAWN[packet], dtype=dtype, device=kwargs.get("device"))
        if packet is _aten.bernoulli:  # draws from the probabilities it is given (or p): keeps every element
            return torch.ones_like(args[0])
        return func(*args, **kwargs)


def _uniform_low(low: float = 0.0, *_: object, **kwargs: object) -> float:
    return float(kwargs.get("from", low))


def _normal_mean(mean: float = 0.0, *_: object, **kwargs: object) -> float:
    return float(kwargs.get("mean", mean))


_aten = torch.ops.aten
_FILLED = {_aten.bernoulli_: lambda *_, **__: 1.0, _aten.uniform_: _uniform_low, _aten.normal_: _normal_mean}
_DRAWN_LIKE = {_aten.rand_like: 0.0, _aten.randn_like: 0.0}
_DRAWN = {_aten.rand: 0.0, _aten.randn: 0.0}
