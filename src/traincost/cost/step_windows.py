"""The input pixels one step of a PE array reads where it unrolls a convolution's outputs and its filter taps together.

An array that unrolls both output pixels and filter taps along the same image axis (ZigZag's ``edge_tpu_like_mixed``:
OX 4 on two array dimensions, FX 2 on a third) computes, in one step, windows that overlap: 4 outputs x 2 taps at
stride 1 touch 5 input columns, not 8. A memory that feeds all those PEs reads each of the 5 once and the array
passes it to every PE that uses it (ZigZag counts a step's inputs so: its ``data_elem_per_level`` of ``I`` at the
array is the step's distinct pixels). Over the op, the array then reads this share of the streamed operand's im2col.

Along one axis, a step covers ``u_o`` of the ``O`` outputs and ``u_f`` of the ``F`` taps (the last step along
each partial: FX 3 on 2 PEs is a step of 2 taps and one of 1) and reads ``optable.window_span`` of them; the share
is the sum over the steps over ``O · F``. It multiplies over Y and X. A convolution and its weight gradient stream
the forward's input through these windows; a data gradient, whose GEMM view streams the output gradient once per
tap, and every other op read their im2col (share 1).
"""

from __future__ import annotations

import functools

import numpy as np

from traincost.cost.optable import window_span

__all__ = ["WINDOWED_KINDS", "step_share", "step_shares"]

WINDOWED_KINDS = ("conv", "conv_wgrad")  # the MAC kinds whose streamed operand is the forward's windowed input


@functools.cache
def step_share(window: tuple[int, int, int, int], per_step: tuple[int, int]) -> float:
    """Along one axis: the input positions an op's steps read over the op's im2col ``outputs · taps``. ``window`` is
    (outputs, taps, stride, dilation), ``per_step`` how many of the outputs and of the taps a step takes (the last of
    each partial)."""
    outputs, taps, stride, dilation = window
    read = 0
    for o_len, o_count in _steps(outputs, per_step[0]):
        for t_len, t_count in _steps(taps, per_step[1]):
            read += o_count * t_count * window_span(stride, o_len, dilation, t_len)
    return read / (outputs * taps)


def _steps(size: int, per_step: int) -> list[tuple[int, int]]:
    """A loop of ``size`` cut into steps of ``per_step``: (length, how many) of the whole steps and the partial one."""
    whole, last = divmod(size, per_step)
    return [(length, count) for length, count in ((per_step, whole), (last, 1)) if length and count]


def step_shares(
    dims: dict[str, np.ndarray], stride: np.ndarray, dilation: np.ndarray, windowed: np.ndarray, unroll: dict[str, np.ndarray]
) -> np.ndarray:
    """Per (configuration, op): the share of the streamed operand's im2col the PE array reads (``step_share`` along Y
    times along X), 1 where an op is not ``windowed`` or a step does not unroll both outputs and taps on an axis.

    ``dims`` are the ops' loop sizes (configurations x ops), ``stride`` and ``dilation`` theirs along Y and X (ops x
    2), ``unroll`` the PEs one step puts along each loop dimension (configurations x 1)."""
    share = np.ones_like(dims["OX"])
    for a, axis in enumerate("YX"):
        outputs, taps = dims[f"O{axis}"], dims[f"F{axis}"]
        per_step_o, per_step_t = np.minimum(outputs, unroll[f"O{axis}"]), np.minimum(taps, unroll[f"F{axis}"])
        overlaps = windowed[None, :] & (per_step_o > 1) & (per_step_t > 1)
        if not overlaps.any():
            continue
        geometry = np.stack(np.broadcast_arrays(outputs, taps, stride[None, :, a], dilation[None, :, a], per_step_o, per_step_t))[
            :, overlaps
        ].astype(np.int64)
        distinct, where = np.unique(geometry, axis=1, return_inverse=True)
        along = np.array([step_share(tuple(map(int, c[:4])), tuple(map(int, c[4:]))) for c in distinct.T])
        share[overlaps] *= along[where.ravel()]
    return share
