"""The one memory model of a fused group, used by the fusion solver and the scheduler alike.

A fused group runs as a stack of tiles, as Stream's layer fusion runs it: every op of the group is cut along
the group's outer loops into computation nodes, and the stack advances a tile at a time, each op holding on its
core only the tile it is working on. The loops a group is cut along are its samples and its rows:

* **rows** (MONET section V-A, the intra-core tiling constraint: "a subset of the loops defining its computation
  is designated as outer temporal loops and expressed as intra-core tilings in Stream"): the output rows ``OY``
  of a MAC op, the rows of the first output otherwise (``op_tiling``); a group's members' factors divide one
  another, and it is cut into at most its smallest factor of row tiles;
* **samples**: the batch extent every member shares (``op_batch``; 1 where a member has no batch axis, e.g. a
  classifier's 2-D tensors). Stream 2.1.1's ``CapacityTiler`` tiles "every unique dim" of a group that is not a
  protected reduction, shrinking first the dim that "most reduces the worst overflow": a batch tile has no halo, so
  it saves more than a row tile of the same count, and samples are cut before rows (``tile_candidates``).

While the stack runs, each member keeps on its core (``OpMemory``):

* its weights (the stationary operand of a MAC op), whole;
* its output tile, twice ("twice where a temporal loop steps it (double buffered)", ``CapacityTiler.memory_bits``),
  or its whole output once where the op accumulates over the tiled loops (a weight gradient: "an accumulating
  output stays put");
* where rows are tiled, the halo of a convolution's input: the ``(FY - 1) · DY + 1 - SY`` input rows the next row
  tile's windows read again, for the samples of a tile.

A group's inputs from outside it stream through the core's working space (the share of its top memory that is not
resident), as a single op's do. A group fits a configuration when, at its finest tiling (at most Stream's
``MAX_STEADY_STATE_TILES`` = 1024 tiles), the bytes of its members on every core do not exceed the core's resident
share of its top memory (its size, times the instances unless shared, times the plan's ``resident_fraction``, the
scheduler's on-chip budget). Where it fits it runs in the fewest candidate tiles that fit, but at least
``PIPELINE_TILES`` = 8 where the group can be cut that fine (Stream: "cut ``resident`` into at least PIPELINE_TILES
steady-state tiles ... so that each tile's transfers overlap the others' compute"): ``GroupTiling.choose``.

The ``rows`` tiling (``FUSION_TILINGS``; the ``fusion_tiling`` ablation) is the simpler rule, kept to measure what
the tiling changes: a group cut into its smallest factor of rows and no finer, samples whole, each member holding its
weights and one tile of its output, no halo and nothing added by the tiles.

The solver admits a candidate subgraph only if it fits (:mod:`traincost.optimize.fusion`); the scheduler fuses a
group only at the configurations where it fits (:mod:`traincost.schedule.scheduler`), so no strategy is both
infeasible and free.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from traincost.cost.optable import MAC_KINDS, OpTable, window_span
from traincost.hardware.spec import HardwareSpec

__all__ = [
    "FUSION_TILINGS",
    "MAX_TILES",
    "PIPELINE_TILES",
    "GroupTiling",
    "OpMemory",
    "core_capacity_bytes",
    "group_fits",
    "groups_fit",
    "deciding_cuts",
    "held_bytes",
    "op_batch",
    "op_tiling",
    "output_copies",
    "pipeline_floor",
    "tile_candidates",
]

FUSION_TILINGS = ("stream", "rows")
MAX_TILES = 1024  # Stream 2.1.1 CapacityTiler.MAX_STEADY_STATE_TILES
PIPELINE_TILES = 8  # Stream 2.1.1 CapacityTiler.PIPELINE_TILES
_ACCUMULATING = ("conv_wgrad",)  # ops whose output sums over the samples and rows the group is cut along
_WINDOWED = ("conv", "conv_dgrad")  # ops whose windows slide over the rows of their streamed input


def output_copies(table: OpTable, tiling: str = "stream") -> np.ndarray:
    """Per op: the copies of its output tile it keeps while fused, 0 where it keeps its whole output once (it
    accumulates over the loops the group is cut along); with ``tiling`` ``rows``, one copy of every op's tile."""
    if tiling == "rows":
        return np.ones(len(table))
    return np.where(np.isin(table.kind, _ACCUMULATING), 0.0, 2.0)


def op_tiling(table: OpTable) -> np.ndarray:
    """Per op: the intra-core tiling factor (output rows of a MAC op, else its first output's rows), at least 1."""
    tiling = np.maximum(1, table.dims["OY"]).astype(np.int64)
    first_output = _first_output(table)
    by_rows = ~table.is_mac & (first_output >= 0)
    tiling[by_rows] = np.maximum(1, table.tensor_rows[first_output[by_rows]])
    return tiling


def op_batch(table: OpTable) -> np.ndarray:
    """Per op: the samples it may be cut along (the batch extent of a MAC op's streamed input, else of its first
    output; 1 where that tensor has no batch axis)."""
    first_output = _first_output(table)
    tensor = np.where(table.is_mac, table.x_tensor, first_output)
    return np.where(tensor >= 0, table.tensor_batch[np.maximum(tensor, 0)], 1).astype(np.int64)


def _first_output(table: OpTable) -> np.ndarray:
    return np.array([outs[0] if outs else -1 for outs in table.outputs], dtype=np.int64)


@functools.cache
def tile_candidates(batch: int, rows: int, tiling: str = "stream") -> tuple[tuple[int, int], ...]:
    """The ways a group of ``batch`` samples and ``rows`` rows may be cut, fewest tiles first, as (sample tiles,
    row tiles): samples first, one divisor at a time, then rows of every sample; at most ``MAX_TILES`` tiles. With
    ``tiling`` ``rows`` (the ``fusion_tiling`` ablation: every row a tile, samples whole), only ``(1, rows)``."""
    if tiling == "rows":
        return ((1, rows),)
    samples = [(b, 1) for b in range(1, batch + 1) if batch % b == 0]
    by_rows = [(batch, r) for r in range(2, rows + 1) if rows % r == 0]
    return tuple(c for c in samples + by_rows if c[0] * c[1] <= MAX_TILES) or ((1, 1),)


@dataclass(frozen=True, slots=True)
class OpMemory:
    """Per op, what it keeps on its core while fused: ``fixed`` bytes whatever the tiling (weights; an accumulating
    output), ``tiled`` bytes divided by the tiles (its double-buffered output tile), ``halo_row_bytes`` bytes per
    sample kept where rows are tiled (a convolution's input halo); and the loops it may be cut along, ``batch``
    samples and ``rows`` rows (``op_tiling``)."""

    fixed: np.ndarray
    tiled: np.ndarray
    halo_row_bytes: np.ndarray
    batch: np.ndarray
    rows: np.ndarray

    @classmethod
    def of(cls, table: OpTable, hardware: HardwareSpec, *, tiling: str = "stream") -> OpMemory:
        """What each op of ``table`` holds while fused; with ``tiling`` ``rows`` (the ``fusion_tiling`` ablation), its
        weights and one tile of its outputs, no halo, samples never cut."""
        word = hardware.word_bytes
        weights = np.where(np.isin(table.kind, MAC_KINDS), table.s_elems * word, 0.0)
        outputs = table.sum_over_outputs(table.tensor_elems) * word
        if tiling == "rows":
            ones = np.ones(len(table), dtype=np.int64)
            return cls(fixed=weights, tiled=outputs, halo_row_bytes=np.zeros(len(table)), batch=ones, rows=op_tiling(table))
        copies = output_copies(table, tiling)
        halo = np.zeros(len(table))
        for i in np.flatnonzero(np.isin(table.kind, _WINDOWED) & (table.x_tensor >= 0)).tolist():
            x = int(table.x_tensor[i])
            stride, dilation, taps = int(table.stride[i][0]), int(table.dilation[i][0]), int(table.dims["FY"][i])
            rows_again = max(0, window_span(stride, 1, dilation, taps) - stride)
            per_row = table.tensor_elems[x] * word / (table.tensor_batch[x] * table.tensor_rows[x])
            halo[i] = rows_again * per_row
        return cls(
            fixed=weights + np.where(copies == 0, outputs, 0.0),
            tiled=copies * outputs,
            halo_row_bytes=halo,
            batch=op_batch(table),
            rows=op_tiling(table),
        )


def held_bytes(
    fixed: float | np.ndarray,
    tiled: float | np.ndarray,
    halo_samples: float | np.ndarray,
    cut: tuple[int | np.ndarray, int | np.ndarray],
) -> float | np.ndarray:
    """Bytes a group's members on one core hold when it is cut into ``cut`` = (sample tiles, row tiles): ``fixed``,
    ``tiled`` over the tiles, and, where rows are cut, the halo rows of ``halo_samples`` (the members' halo bytes
    per sample times their samples) over the sample tiles. Numbers, or arrays that broadcast (``GroupTiling.of``:
    every cut of every group at once)."""
    sample_tiles, row_tiles = cut
    halo = halo_samples / sample_tiles * (row_tiles > 1)  # 0 where rows are whole (a finite byte count times False)
    return fixed + tiled / (sample_tiles * row_tiles) + halo


def pipeline_floor(cuts: Sequence[tuple[int, int]]) -> int:
    """The fewest tiles a group of these candidate cuts may run in: ``PIPELINE_TILES``, or as many as it can be cut."""
    return min(PIPELINE_TILES, max(b * r for b, r in cuts))


def deciding_cuts(batch: int, rows: int, tiling: str = "stream") -> tuple[tuple[int, int], ...]:
    """The candidate cuts that decide whether a group fits: it fits at some cut of at least the pipeline floor
    exactly when it fits at one of these. Cutting samples finer never holds more, nor does cutting rows finer, so
    they are the finest cut of samples alone (where it reaches the floor) and the finest cut of all."""
    cuts = tile_candidates(batch, rows, tiling)
    floor = pipeline_floor(cuts)
    by_samples = [c for c in cuts if c[1] == 1 and c[0] * c[1] >= floor]
    return tuple(dict.fromkeys([*by_samples[-1:], cuts[-1]]))


@dataclass(frozen=True, slots=True)
class GroupTiling:
    """The fused groups of a plan (``group_of`` per op, -1 = not fused) and their candidate cuts (fewest tiles first,
    ``tile_candidates``), every group's one after another: ``start`` (per group, its first candidate's position; every
    group has at least one); per candidate its ``tiles``, ``row_tiles``, the bytes each core holds at it (``held``,
    (candidates, cores)) and whether it reaches its group's ``pipeline_floor`` (``deep``)."""

    start: np.ndarray
    tiles: np.ndarray
    row_tiles: np.ndarray
    held: np.ndarray
    deep: np.ndarray

    @classmethod
    def of(
        cls, table: OpTable, hardware: HardwareSpec, core_of: np.ndarray, group_of: np.ndarray, *, tiling: str = "stream"
    ) -> GroupTiling:
        """The groups of ``group_of`` cut as ``tiling`` (``FUSION_TILINGS``) cuts them."""
        memory = OpMemory.of(table, hardware, tiling=tiling)
        n_groups = int(group_of.max()) + 1 if len(group_of) else 0
        n_cores = len(hardware.cores)
        fused = np.flatnonzero(group_of >= 0)
        by_group = fused[np.argsort(group_of[fused], kind="stable")]  # members of each group, in table order
        sizes = np.bincount(group_of[fused], minlength=n_groups)
        present = sizes > 0
        first_member = (np.cumsum(sizes) - sizes)[present]
        batch, rows = np.ones(n_groups, dtype=np.int64), np.ones(n_groups, dtype=np.int64)
        if present.any():
            batch[present] = np.gcd.reduceat(memory.batch[by_group], first_member)
            rows[present] = np.minimum.reduceat(memory.rows[by_group], first_member)
        # per (group, core): the members' fixed, tiled and halo bytes, each summed in table order as ``ndarray.sum``
        # sums them (left to right below 8 addends, as ``bincount`` does; pairwise from 8, so summed by slices there)
        slot = group_of[fused] * n_cores + core_of[fused]
        addends = {
            "fixed": memory.fixed[fused],
            "tiled": memory.tiled[fused],
            "halo": memory.halo_row_bytes[fused] * memory.batch[fused],
        }
        sums = {name: np.bincount(slot, weights=values, minlength=n_groups * n_cores) for name, values in addends.items()}
        for many in np.flatnonzero(np.bincount(slot, minlength=n_groups * n_cores) >= 8).tolist():
            on = slot == many
            for name, values in addends.items():
                sums[name][many] = values[on].sum()
        fixed, tiled, halo = (sums[name].reshape(n_groups, n_cores) for name in ("fixed", "tiled", "halo"))
        cuts = [_cut_arrays(int(b), int(r), tiling) for b, r in zip(batch.tolist(), rows.tolist(), strict=True)]
        counts = np.array([len(c[0]) for c in cuts], dtype=np.int64)
        group = np.repeat(np.arange(n_groups), counts)  # per candidate, its group
        samples = np.concatenate([c[0] for c in cuts]) if cuts else np.ones(0, dtype=np.int64)
        row_tiles = np.concatenate([c[1] for c in cuts]) if cuts else np.ones(0, dtype=np.int64)
        tiles = samples * row_tiles
        floor = np.array([c[2] for c in cuts], dtype=np.int64)
        held = held_bytes(fixed[group], tiled[group], halo[group], (samples[:, None], row_tiles[:, None]))
        return cls(start=np.cumsum(counts) - counts, tiles=tiles, row_tiles=row_tiles, held=held, deep=tiles >= floor[group])

    @property
    def cuts(self) -> tuple[tuple[tuple[int, int], ...], ...]:
        """Per group, its candidate cuts as (sample tiles, row tiles), fewest tiles first (``tile_candidates``)."""
        samples, rows = (self.tiles // self.row_tiles).tolist(), self.row_tiles.tolist()
        ends = [*self.start[1:].tolist(), len(self.tiles)]
        return tuple(tuple(zip(samples[a:b], rows[a:b], strict=True)) for a, b in zip(self.start.tolist(), ends, strict=True))

    def choose(self, capacity: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per configuration (rows of ``capacity``, (configurations, cores)) and group: whether it fits, the tiles it
        runs in and its row tiles (1 and 1 where it does not fit): the fewest candidate tiles that fit, at least
        ``PIPELINE_TILES`` where the group can be cut that fine."""
        n_cfg, n = len(capacity), len(self.tiles)
        if not len(self.start):
            empty = np.ones((n_cfg, 0), dtype=np.int64)
            return np.zeros((n_cfg, 0), dtype=bool), empty, empty
        fitting = (self.held[None] <= capacity[:, None, :]).all(axis=2) & self.deep[None]
        # each group's first fitting candidate: the largest of n - position over its fitting ones (0: none fits)
        rank = np.maximum.reduceat(np.where(fitting, n - np.arange(n), 0), self.start, axis=1)
        fits = rank > 0
        first = np.where(fits, n - rank, 0)
        return fits, np.where(fits, self.tiles[first], 1), np.where(fits, self.row_tiles[first], 1)


@functools.cache
def _cut_arrays(batch: int, rows: int, tiling: str) -> tuple[np.ndarray, np.ndarray, int]:
    """``tile_candidates(batch, rows, tiling)`` as arrays of sample tiles and of row tiles, and their
    ``pipeline_floor``."""
    cuts = tile_candidates(batch, rows, tiling)
    return np.array([b for b, _ in cuts], dtype=np.int64), np.array([r for _, r in cuts], dtype=np.int64), pipeline_floor(cuts)


def core_capacity_bytes(hardware: HardwareSpec, *, resident_fraction: float) -> np.ndarray:
    """(configurations, cores): each core's top memory, times its instances unless the memory is shared, times
    ``resident_fraction`` (the share that keeps tensors between ops, :class:`traincost.schedule.plan.SchedulePlan`)."""
    per_core = [
        np.asarray(c.top.size_bytes, dtype=np.float64) * (1 if c.top.shared else c.count) * resident_fraction
        for c in hardware.cores
    ]
    return np.stack([np.broadcast_to(c, (hardware.n_configs,)) for c in per_core], axis=1)


def group_fits(
    table: OpTable,
    hardware: HardwareSpec,
    core_of: np.ndarray,
    group_of: np.ndarray,
    *,
    resident_fraction: float,
    tiling: str = "stream",
) -> np.ndarray:
    """(configurations, groups): whether each fused group (``group_of`` >= 0; -1 = not fused) fits in every core's
    resident share (``resident_fraction`` of its top memory) at a cut ``tiling`` allows."""
    groups = GroupTiling.of(table, hardware, core_of, group_of, tiling=tiling)
    return groups.choose(core_capacity_bytes(hardware, resident_fraction=resident_fraction))[0]


def groups_fit(
    table: OpTable, hardware: HardwareSpec, core_of: np.ndarray, group_of: np.ndarray, *, resident_fraction: float
) -> np.ndarray:
    """Per configuration: whether every fused group fits (:func:`group_fits`)."""
    return group_fits(table, hardware, core_of, group_of, resident_fraction=resident_fraction).all(axis=1)
