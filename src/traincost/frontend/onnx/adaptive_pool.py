"""Adaptive average pooling of any output size, for torch's legacy ONNX exporter.

The exporter writes ``adaptive_avg_pool2d`` only where each output size divides the input size (an
``AveragePool``) or is 1 (a ``GlobalAveragePool``), and fails otherwise: AlexNet at 64x64 pools its 1x1 map
to 6x6, and VGG at 32x32 its 1x1 map to 7x7. Adaptive average pooling is linear along each axis: output
cell ``i`` of an axis of ``n`` inputs and ``m`` outputs averages inputs ``floor(i n / m)`` up to
``ceil((i + 1) n / m)`` (torch's definition). So it is two matrix products with constant pooling matrices,
``Y = P_h · X · P_wᵀ``, which ONNX and its gradient (two more matrix products) express exactly, and which
are costed as the matrix products they are.

``general_adaptive_pooling`` registers that symbolic for the duration of one export, delegating to torch's
own where it can write a pool.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator

import numpy as np
import torch
from torch.onnx import symbolic_helper

__all__ = ["general_adaptive_pooling", "pooling_matrix"]

_OPSET = 9  # torch's symbolic for aten::adaptive_avg_pool2d is registered from opset 9 on


def pooling_matrix(inputs: int, outputs: int) -> np.ndarray:
    """The ``outputs`` x ``inputs`` matrix of adaptive average pooling along one axis (torch's windows)."""
    matrix = np.zeros((outputs, inputs), dtype=np.float32)
    for i in range(outputs):
        start, end = (i * inputs) // outputs, math.ceil((i + 1) * inputs / outputs)
        matrix[i, start:end] = 1.0 / (end - start)
    return matrix


def _symbolic(g, x, output_size):  # noqa: ANN001, ANN202 (torch's symbolic signature)
    from torch.onnx.symbolic_opset9 import adaptive_avg_pool2d  # noqa: PLC0415 (torch's own, as registered)

    sizes = symbolic_helper._get_tensor_sizes(x)
    wanted = symbolic_helper._parse_arg(output_size, "is")
    spatial = sizes[-2:] if sizes else [None, None]
    if None in spatial or all(o == 1 or n % o == 0 for n, o in zip(spatial, wanted, strict=True)):
        return adaptive_avg_pool2d(g, x, output_size)
    (height, width), (rows, columns) = spatial, wanted
    along_h = g.op("Constant", value_t=torch.from_numpy(pooling_matrix(height, rows)))
    along_w = g.op("Constant", value_t=torch.from_numpy(pooling_matrix(width, columns).T.copy()))
    return g.op("MatMul", along_h, g.op("MatMul", x, along_w))


@contextlib.contextmanager
def general_adaptive_pooling() -> Iterator[None]:
    """Within the block, the legacy exporter writes every ``adaptive_avg_pool2d`` (two ``MatMul`` with pooling matrices
    where no pool fits); torch's own symbolic again after it."""
    torch.onnx.register_custom_op_symbolic("aten::adaptive_avg_pool2d", _symbolic, _OPSET)
    try:
        yield
    finally:
        torch.onnx.unregister_custom_op_symbolic("aten::adaptive_avg_pool2d", _OPSET)
