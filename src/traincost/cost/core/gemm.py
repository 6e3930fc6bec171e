"""The GEMM view of MAC ops on one core.

Each op is ``g`` GEMMs ``O[M×N] = X[M×R]·S[R×N]`` (``optable.ROLES`` says which loop dimensions play M, N and R).
Each PE-array axis unrolls one loop dimension; compute cycles are ``Π_d ceil(D_d / u_d)`` over the loop dims, so a
layer narrower than the array wastes PEs (the ceil effect), and spatial utilisation is MACs / (cycles · PEs). A conv
gradient carries its forward's loops; its axes unroll them as named there or as its primitive names them
(``optable.OWN_LOOPS``, ``mac``). At the PE array the tile is what one step of the array unrolls
(``Gemm.array_tile``). Every tile above takes as much of each loop as fits, the loop's last tile partial, or, on a
core with ``tiling: divisors``, the largest multiple of the tile inside it that divides the loop, as ZigZag's
temporal mappings split each loop into factors of its size (``fitted_extent``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

from traincost.cost.core.vocabulary import Precision, Tile, innermost_level
from traincost.cost.halo import Halo
from traincost.cost.optable import ROLES, ROW_SPLIT_KINDS, SPLIT_DIM, OpTable
from traincost.cost.step_windows import WINDOWED_KINDS, step_shares
from traincost.hardware.spec import Core

__all__ = [
    "whole_elems",
    "AxisUse",
    "axis_use",
    "Gemm",
    "cut_to_chunk",
    "pes_fed_by_one",
    "group_bytes",
    "array_step_tile",
    "array_steps",
    "own_partial_sum_steps",
    "per_role",
    "fitted_extent",
    "largest_divisor",
]


def whole_elems(gemm: Gemm) -> dict[str, np.ndarray]:
    """Each operand's elements in one group of ``gemm``."""
    m, n, r = gemm.full
    return {"W": r * n, "I": m * r, "O": m * n}


@dataclass(frozen=True, slots=True)
class AxisUse:
    """One PE axis on MAC ops, arrays (configs, ops): its PEs each op keeps busy, and the role its loop plays in each
    op (0, 1, 2: M, N, R of ``ROLES``; -1: none, one PE busy)."""

    name: str
    used: np.ndarray
    role: np.ndarray


def axis_use(core: Core, dims: dict[str, np.ndarray], kinds: np.ndarray) -> tuple[AxisUse, ...]:
    """What each of ``core``'s PE axes does for each op: a loop over several axes fills them in turn."""
    left = dict(dims)
    out = []
    distinct, each = np.unique(kinds, return_inverse=True)
    for axis in core.pe_array:
        role = np.array([next((w for w, ds in enumerate(ROLES[kind]) if axis.dim in ds), -1) for kind in distinct])[each]
        used = np.ones_like(next(iter(dims.values())))
        if axis.dim in left:
            size = axis.size[:, None]
            used = np.where(role >= 0, np.minimum(left[axis.dim], size), 1.0)
            left[axis.dim] = np.ceil(left[axis.dim] / size)
        out.append(AxisUse(name=axis.name, used=used, role=role))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class Gemm:
    """The GEMM view of MAC ops on one core (after a tensor-parallel split), arrays (configs, ops)."""

    dims: dict[str, np.ndarray]
    full: Tile  # M, N, R per group
    groups: np.ndarray
    macs: np.ndarray
    s_elems: np.ndarray  # per group
    o_elems: np.ndarray
    x_unique: np.ndarray
    window: np.ndarray
    core_shares: np.ndarray  # D / ceil(D / split): how many shares the split dimension fills
    array_tile: Tile  # what one step of the PE array covers (``array_step_tile``)
    steps: Tile  # the PE array's steps along M, N and R (``array_steps``)
    axes: tuple[AxisUse, ...]  # what each PE axis does for each op (``axis_use``; only where a level has served_axes)
    halo: Halo  # the pixels a convolution's blocks of outputs read again (``inputs_read``)
    step_share: np.ndarray  # of the streamed operand's im2col, what the array reads (``x_streamed``)
    own_steps: tuple[
        np.ndarray, ...
    ]  # per level, the partial sums a PE's own copy of an output takes (``own_partial_sum_steps``)
    divisor_tiles: bool = False  # the core's ``tiling`` is ``divisors`` (``fitted_extent``)
    # what ``memory.copies_per_element`` found for this view, by (memory, its served axes, operand): it depends on the
    # view and the level alone, and every candidate loop order asks for it again (a new view starts empty)
    copies: dict[tuple, np.ndarray | float] = field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def pes_at_work(self) -> np.ndarray:
        """PEs one step of the array keeps busy: its MACs."""
        m_a, n_a, r_a = self.array_tile
        return m_a * n_a * r_a

    def inputs_read(self, tile: Tile) -> np.ndarray:
        """Input elements per group the op reads when it is cut into ``tile``'s blocks: the pixels each block's windows
        touch, the halo between blocks read once per block (``halo.Halo``), at most what the array reads (``x_streamed``)."""
        return np.minimum(self.x_unique * self.halo.factor(tile), self.x_streamed)

    def block_input_elems(self, rows: np.ndarray, reduction: np.ndarray) -> np.ndarray:
        """Input elements per group that a block of ``rows`` of M over ``reduction`` of R touches, as a memory holding
        the block must keep them: the op's unique inputs per im2col element, times the halo of blocks of that many rows
        (of that much of R, for a weight gradient, whose blocks of output pixels cut R; ``halo.Halo``): a 3x3 window's
        8 outputs as 2 x 4 touch 4 x 6 = 24 pixels of each channel, not 8 x 9 / 9 = 8."""
        unique = self.x_unique / (self.full[0] * self.full[2])
        return rows * reduction * unique * self.halo.factor((rows, self.full[1], reduction))

    def tile_count(self, axis: int, tile: np.ndarray, *, steps: np.ndarray | None = None) -> np.ndarray:
        """How many tiles of ``tile`` elements the op takes along ``axis`` (0, 1, 2: M, N, R). One step of the array
        (``array_tile``) at a time: the array's steps along the axis, each loop unrolled on it padded apart
        (``edge_tpu_like_mixed``'s C 2 x FX 2 x FY 2 on a 3x3 layer of 64 channels: 32 x 2 x 2 = 128 steps, where its
        576 taps would fill 72; 14 x 14 outputs over OX 4 x OY 4: 16, not 13), or ``steps`` where the caller counts
        otherwise (a PE's own copy of an output, ``own_steps``). With ``divisors`` a tile is whole steps, and the op
        that many times fewer of them. Otherwise ceil(extent / tile), as a tile of ``any`` size holds its elements.
        The three agree where the axis has one loop or no unrolled loop pads its last step."""
        whole, unit = self.full[axis], self.array_tile[axis]
        steps = self.steps[axis] if steps is None else steps
        spans = tile / unit
        stepped = ((spans == 1.0) | (self.divisor_tiles & (spans == np.round(spans)))) & (tile < whole)
        return np.where(stepped, steps / spans, np.ceil(whole / tile))

    @property
    def x_streamed(self) -> np.ndarray:
        """Elements per group of the streamed operand the PE array reads over the op: its im2col, less where one step
        unrolls a convolution's outputs and taps together and its windows overlap (``step_windows``)."""
        return self.full[0] * self.full[2] * self.step_share

    @classmethod
    def of(
        cls, table: OpTable, index: np.ndarray, split: np.ndarray, core: Core, unroll: dict[str, np.ndarray], *, rows: bool
    ) -> Gemm:
        """The GEMM view of ops ``index`` on one of ``split`` cores: each core takes ceil(D / split) of the dimension
        the op is split along, its output channels (``SPLIT_DIM``), or with ``rows`` its output rows where its kind
        allows (``ROW_SPLIT_KINDS``: each core then holds every weight and reads its rows' inputs with their halo)."""
        shape = (split.shape[0], len(index))
        kinds = table.kind[index]
        dims = {d: np.broadcast_to(table.dims[d][index].astype(np.float64), shape).copy() for d in table.dims}
        m_share, n_share, x_share = np.ones(shape), np.ones(shape), np.ones(shape)
        for kind, channels in SPLIT_DIM.items():
            mask = kinds == kind
            if not mask.any():
                continue
            by_rows = rows and kind in ROW_SPLIT_KINDS
            dim = "OY" if by_rows else channels
            part = np.ceil(dims[dim][:, mask] / split[:, None])
            (m_share if by_rows else n_share)[:, mask] = part / dims[dim][:, mask]
            if by_rows:  # the input rows a share's windows touch, of those the whole op's touch
                stride, dilation = table.stride[index][mask, 0], table.dilation[index][mask, 0]
                taps = (dims["FY"][:, mask] - 1) * dilation + 1
                x_share[:, mask] = ((part - 1) * stride + taps) / ((dims[dim][:, mask] - 1) * stride + taps)
            dims[dim][:, mask] = part
        share = m_share * n_share
        groups = table.groups[index][None, :]
        full = (
            table.m[index][None, :] * m_share,
            table.n[index][None, :] * n_share,
            table.r[index][None, :] * np.ones(shape),
        )
        return cls(
            dims=dims,
            full=full,
            groups=groups,
            macs=table.macs[index][None, :] * share,
            s_elems=table.s_elems[index][None, :] * n_share / groups,
            o_elems=table.o_elems[index][None, :] * share / groups,
            x_unique=table.x_elems[index][None, :] * x_share / groups,
            window=table.window[index][None, :],
            core_shares=1 / share,
            array_tile=array_step_tile(dims, full, kinds, unroll),
            steps=array_steps(dims, kinds, unroll),
            axes=axis_use(core, dims, kinds) if any(level.served_axes is not None for level in core.levels) else (),
            halo=Halo.of(table, index, dims["OY"] if rows else None),  # a row share's halo: of its own rows
            step_share=step_shares(
                dims, table.stride[index], table.dilation[index], np.isin(kinds, WINDOWED_KINDS), pes_fed_by_one(core, unroll)
            ),
            own_steps=own_partial_sum_steps(core, dims, kinds, unroll),
            divisor_tiles=core.tiling == "divisors",
        )


def cut_to_chunk(gemm: Gemm, chunk: np.ndarray) -> Gemm:
    """The op as tiles over a ``chunk`` of its reduction see it: its R, weights and input elements cut to the chunk."""
    cut = chunk / gemm.full[2]
    steps = np.where(chunk >= gemm.full[2], gemm.steps[2], np.ceil(chunk / gemm.array_tile[2]))
    return replace(
        gemm,
        full=(*gemm.full[:2], chunk),
        s_elems=gemm.s_elems * cut,
        x_unique=gemm.x_unique * cut,
        steps=(*gemm.steps[:2], steps),
    )


def pes_fed_by_one(core: Core, unroll: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The PEs along each loop dimension that one instance of the innermost input memory feeds (configurations x 1):
    every PE where one instance feeds the array (or the inputs come straight from outside the core), those along its
    ``served_axes`` where it has them, one where it has an instance per PE (each keeps its own copy of a pixel)."""
    inner = innermost_level(core, "I")
    if inner < 0:
        return unroll
    level = core.levels[inner]
    if level.served_axes is None:
        one = (level.memory.instances == 1)[:, None]
        return {d: np.where(one, size, 1.0) for d, size in unroll.items()}
    fed = {d: np.ones_like(size) for d, size in unroll.items()}
    for axis in core.pe_array:
        if axis.name in level.served_axes and axis.dim in fed:
            fed[axis.dim] = fed[axis.dim] * axis.size[:, None]
    return fed


def group_bytes(gemm: Gemm, precision: Precision, operands: frozenset[str]) -> np.ndarray:
    """Bytes of one group's whole op in ``operands``: its weights, the input pixels it reads and its outputs in
    partial-sum precision."""
    elems = {"W": gemm.s_elems, "I": gemm.x_unique, "O": gemm.o_elems}
    return sum(elems[operand] * precision.tile_bytes[operand] for operand in operands)


def array_step_tile(dims: dict[str, np.ndarray], full: Tile, kinds: np.ndarray, unroll: dict[str, np.ndarray]) -> Tile:
    """What one step of the PE array covers: (m, n, r) elements per group, each the product of its unrolled dims."""
    spatial = per_role(dims, kinds, lambda d: np.minimum(dims[d], unroll[d]))
    return np.minimum(spatial[0], full[0]), np.minimum(spatial[1], full[1]), np.minimum(spatial[2], full[2])


def array_steps(dims: dict[str, np.ndarray], kinds: np.ndarray, unroll: dict[str, np.ndarray]) -> Tile:
    """The PE array's steps along M, N and R: the product of each of their loops' steps, ceil(D / unrolled)."""
    return per_role(dims, kinds, lambda d: np.ceil(dims[d] / unroll[d]))


def own_partial_sum_steps(
    core: Core, dims: dict[str, np.ndarray], kinds: np.ndarray, unroll: dict[str, np.ndarray]
) -> tuple[np.ndarray, ...]:
    """Per level of ``core``, the partial sums one copy of an output takes over an op's reduction where the level keeps
    a copy in each PE of the axes it does not serve (all of them without ``served_axes``; ``copies_per_element``): a PE
    accumulates only in the steps it works in, so along a loop on such an axis D / its PEs (C 3 on 2: 1.5; ZigZag's
    per-PE ``rf_2B`` on ``tpu_like_mixed``'s ``conv1``, C 3 on 2 beside FX 7 and FY 7 on 3: 1.5 x 7/3 x 7/3 partial
    sums in each of 18 copies, 147 an output, where 18 steps of the array would count 324), along the others one per
    step, ceil(D / its PEs). A loop on some axes the level serves and some it does not counts as its own."""
    out = []
    for level in core.levels:
        own = {axis.dim for axis in core.pe_array if level.served_axes is None or axis.name not in level.served_axes}
        out.append(
            per_role(
                dims,
                kinds,
                lambda d, own=own: dims[d] / np.minimum(unroll[d], dims[d]) if d in own else np.ceil(dims[d] / unroll[d]),
            )[2]
        )
    return tuple(out)


def per_role(dims: dict[str, np.ndarray], kinds: np.ndarray, each: Callable[[str], np.ndarray]) -> Tile:
    """Per role of ``ROLES`` (M, N, R), the product over each op's loop dimensions in that role of ``each(dim)``."""
    out = []
    for which in range(3):
        product = np.ones_like(next(iter(dims.values())))
        for kind, roles in ROLES.items():
            mask = kinds == kind
            for d in roles[which] if mask.any() else ():
                product[:, mask] *= each(d)[:, mask]
        out.append(product)
    return out[0], out[1], out[2]


def fitted_extent(gemm: Gemm, size: np.ndarray, inner: np.ndarray, axis: int) -> np.ndarray:
    """A tile's extent along ``axis`` (0, 1, 2: M, N, R) as the core's ``tiling`` allows it, from ``size`` elements
    (at least the ``inner`` tile's, at most the op's): as it is (``any``: the loop's last tile partial), or
    (``divisors``) the array's tile times the largest divisor of the array's steps along the axis (``Gemm.steps``)
    that is a multiple of the inner tile's steps and fits, as ZigZag's temporal mapping splits each loop into
    factors of its size (ResNet-18's 3,136 rows of ``layer1.0.conv1`` in blocks of 112 where 165 fit, ZigZag's
    ``OX2 OY7 OX2 OX2 OY2`` on ``aimc``; 14 x 14 rows over a 4 x 4 array in 4 x 4 steps, not 13). An inner tile
    that is not a whole number of steps dividing the axis's counts as one step."""
    if not gemm.divisor_tiles:
        return size
    whole, unit, steps = gemm.full[axis], gemm.array_tile[axis], gemm.steps[axis]
    size, inner, whole, unit, steps = np.broadcast_arrays(size, inner, whole, unit, steps)
    base = inner / unit
    base = np.where((base == np.round(base)) & (np.mod(steps, np.maximum(base, 1.0)) == 0), np.maximum(base, 1.0), 1.0)
    limit = np.where(size >= whole, steps / base, np.maximum(np.floor(size / (unit * base)), 1.0))
    tile = np.minimum(unit * base * largest_divisor(steps / base, limit), whole)
    return np.where(inner >= whole, whole, tile)


def largest_divisor(n: np.ndarray, limit: np.ndarray) -> np.ndarray:
    """Elementwise the largest divisor of the positive integer ``n`` that is at most ``limit`` (>= 1)."""
    out = np.ones(n.shape)
    for value in np.unique(n):
        at = n == value
        small = np.arange(1, math.isqrt(int(value)) + 1)
        small = small[int(value) % small == 0]
        divisors = np.unique(np.concatenate([small, int(value) // small])).astype(np.float64)
        out[at] = divisors[np.searchsorted(divisors, limit[at], side="right") - 1]
    return out
