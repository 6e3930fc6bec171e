"""The input halo of a convolution cut into blocks of outputs: the pixels a block's windows share with its neighbours'.

A memory that keeps one block of a convolution's outputs at a time brings in every input pixel that block's windows
touch; blocks side by side overlap by the window less a stride, so the pixels on their border (the halo) come in once
per block that reads them. ZigZag counts a block's inputs the same way: on its ``aimc`` array, SALSA cuts ResNet-18's
``layer1.0.conv1`` (56 x 56 outputs, 3 x 3 windows) into 28 blocks of 14 x 8 outputs and moves 28 x 16 x 10 = 4,480
pixels of each input channel off chip, where the layer's windows touch 58 x 58 = 3,364 of them once.

``Halo`` gives, per op, the factor by which the input pixels its blocks read exceed those its windows touch once,
for a block of up to ``t`` outputs shaped as the fewest pixels need (``halo_factors``: ``b_y`` rows of ``b_x``
outputs, ``b_y · b_x ≤ t``, the last block along each axis partial). Which GEMM loop the blocks cut depends on the
op (``optable.ROLES``): the rows M (B·OY·OX) of a convolution and of its data gradient, the reduction R (B·OY·OX) of
its weight gradient. A data gradient's windows slide over the output gradient: a block of rows of it reads
``ceil(dilation · (taps - 1) / stride)`` more of them along each axis (its transposed windows). Other ops read no
halo (factor 1).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from traincost.cost.optable import OpTable, window_spans

__all__ = ["Halo", "block_spans", "halo_factors"]

# the GEMM loop (0, 1, 2: M, N, R) whose tiles are blocks of a convolution's output pixels
_BLOCKED_AXIS = {"conv": 0, "conv_dgrad": 0, "conv_wgrad": 2}


@functools.cache
def block_spans(stride: int, outputs: int, dilation: int, taps: int) -> np.ndarray:
    """Index ``b`` (1 .. ``outputs``; 0 repeats 1): the input positions ``stride · o + dilation · f`` that the blocks
    of ``b`` consecutive outputs read, summed over the ``ceil(outputs / b)`` blocks (the last one partial). Index
    ``outputs`` is ``optable.window_span``: one block reads each position once."""
    first = window_spans(stride, outputs, dilation, taps)  # a block's positions do not depend on where it starts
    b = np.arange(1, outputs + 1)
    whole, last = outputs // b, outputs % b
    total = whole * first[b] + first[last]
    return np.concatenate([total[:1], total])


@functools.cache
def halo_factors(rows: tuple[int, int, int, int], columns: tuple[int, int, int, int]) -> np.ndarray:
    """Index ``t`` (0 .. OY·OX; 0 as 1): the input pixels blocks of at most ``t`` outputs read, over the pixels the
    op's windows touch once, the block shaped as the fewest pixels need (``b_y`` output rows of ``b_x``, ``b_y · b_x
    ≤ t``; ``block_spans`` along each). ``rows`` and ``columns`` are (outputs, taps, stride, dilation) along Y and X.
    At least 1; 1 from a whole image on."""
    (oy, fy, sy, dy), (ox, fx, sx, dx) = rows, columns
    along_y, along_x = block_spans(sy, oy, dy, fy), block_spans(sx, ox, dx, fx)
    t = np.maximum(np.arange(oy * ox + 1), 1)
    if oy == 1:  # one row of outputs (a 1-D convolution): the block is a run of t of them
        return along_x[np.minimum(t, ox)] / along_x[ox]
    best = np.full(t.shape, np.inf)
    for b_x in range(1, ox + 1):
        b_y = np.minimum(t // b_x, oy)
        fits = b_y >= 1
        best[fits] = np.minimum(best[fits], along_y[b_y[fits]] * along_x[b_x])
    return best / (along_y[oy] * along_x[ox])


@dataclass(frozen=True, slots=True)
class Halo:
    """The halo factor of a set of MAC ops: ``factors`` (one row per distinct window geometry, padded with 1 past
    its whole image; row 0 all 1), ``row`` each op's (1, ops), ``axis`` the GEMM loop its blocks cut (1, ops)."""

    factors: np.ndarray
    row: np.ndarray
    axis: np.ndarray

    @classmethod
    def of(cls, table: OpTable, index: np.ndarray, output_rows: np.ndarray | None = None) -> Halo:
        """The halo of ops ``index`` of ``table``; with ``output_rows`` ((configurations, ops)), of the share of each op
        that has so many of its output rows (a row split across cores: the share is an image of its own)."""
        geometries: dict[tuple[tuple[int, int, int, int], tuple[int, int, int, int]], int] = {}
        rows = np.zeros((1 if output_rows is None else output_rows.shape[0], len(index)), dtype=np.int64)
        axes = np.zeros(len(index), dtype=np.int64)
        for k, i in enumerate(index.tolist()):
            kind = table.kind[i]
            if kind not in _BLOCKED_AXIS:
                continue
            shares = [int(table.dims["OY"][i])] if output_rows is None else np.unique(output_rows[:, k]).astype(int).tolist()
            for share in shares:
                per_axis = []
                for a, axis in enumerate("YX"):
                    outputs, taps = int(table.dims[f"O{axis}"][i]), int(table.dims[f"F{axis}"][i])
                    outputs = share if axis == "Y" else outputs
                    stride, dilation = int(table.stride[i, a]), int(table.dilation[i, a])
                    if kind == "conv_dgrad":  # its transposed windows over the output gradient
                        taps, stride, dilation = math.ceil(dilation * (taps - 1) / stride) + 1, 1, 1
                    per_axis.append((outputs, taps, stride, dilation))
                at = slice(None) if output_rows is None else output_rows[:, k] == share
                rows[at, k] = geometries.setdefault((per_axis[0], per_axis[1]), len(geometries) + 1)
            axes[k] = _BLOCKED_AXIS[kind]
        tables = [halo_factors(*geometry) for geometry in geometries]
        factors = np.ones((len(tables) + 1, max((len(f) for f in tables), default=0) + 1))
        for k, f in enumerate(tables, start=1):
            factors[k, : len(f)] = f
        return cls(factors=factors, row=rows, axis=axes[None, :])

    def factor(self, tile: tuple[np.ndarray, np.ndarray, np.ndarray]) -> np.ndarray | float:
        """Per (configuration, op): the factor for blocks the size of ``tile``'s extent along each op's ``axis`` (1
        where no op reads a halo)."""
        if len(self.factors) == 1:
            return 1.0
        extent = np.where(self.axis == 0, tile[0], tile[2])
        at = np.minimum(extent, self.factors.shape[1] - 1).astype(np.int64)  # extents are whole elements, at least 1
        return self.factors[self.row, at]
