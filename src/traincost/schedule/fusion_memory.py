"""The one memory model of a fused group, used by the fusion solver and the scheduler alike.

A fused group runs a tile at a time: its ops' intra-core tiling factors (output rows ``OY`` for a MAC
op, the first output's rows otherwise) divide one another (MONET section V-A, the intra-core tiling
constraint), so the group advances in as many tiles as its smallest factor allows (``group_tiles``:
a group holding a full reduction or a pooling to one row runs in one tile). While it runs, each of its
ops keeps on its core its weights (stationary operand of a MAC op) and one tile of its output: the
output divided by the group's tiles. A group fits when, on every core, the bytes of its ops there do
not exceed the core's resident share of its top memory (its size, times the instances unless shared,
times the plan's ``resident_fraction``: the share that keeps tensors between ops, as the scheduler's
on-chip budget; the rest is the running op's working space).

The solver admits a candidate subgraph only if it fits (:mod:`traincost.optimize.fusion`); the scheduler
fuses a group only at the configurations where it fits (:mod:`traincost.schedule.scheduler`), so no
strategy is both infeasible and free.
"""

from __future__ import annotations

import numpy as np

from traincost.cost.optable import MAC_KINDS, OpTable
from traincost.hardware.spec import HardwareSpec

__all__ = [
    "core_capacity_bytes",
    "group_fits",
    "group_tiles",
    "groups_fit",
    "op_output_bytes",
    "op_tiling",
    "op_weight_bytes",
]


def op_tiling(table: OpTable) -> np.ndarray:
    """Per op: the intra-core tiling factor (output rows of a MAC op, else its first output's rows), at least 1."""
    tiling = np.maximum(1, table.dims["OY"]).astype(np.int64)
    first_output = np.array([outs[0] if outs else -1 for outs in table.outputs], dtype=np.int64)
    by_rows = ~table.is_mac & (first_output >= 0)
    tiling[by_rows] = np.maximum(1, table.tensor_rows[first_output[by_rows]])
    return tiling


def group_tiles(table: OpTable, group_of: np.ndarray) -> np.ndarray:
    """Per group (``group_of`` >= 0; -1 = not fused): the tiles it runs in, its members' smallest tiling factor."""
    n_groups = int(group_of.max()) + 1 if len(group_of) else 0
    tiles = np.full(n_groups, np.iinfo(np.int64).max, dtype=np.int64)
    fused = np.flatnonzero(group_of >= 0)
    np.minimum.at(tiles, group_of[fused], op_tiling(table)[fused])
    return np.where(tiles == np.iinfo(np.int64).max, 1, tiles)


def op_weight_bytes(table: OpTable, hardware: HardwareSpec) -> np.ndarray:
    """Per op: the weights it keeps on its core while fused (the stationary operand of a MAC op, else 0)."""
    return np.where(np.isin(table.kind, MAC_KINDS), table.s_elems * hardware.word_bytes, 0.0)


def op_output_bytes(table: OpTable, hardware: HardwareSpec) -> np.ndarray:
    """Per op: the bytes of all its outputs (one tile of them stays on its core while fused)."""
    return table.sum_over_outputs(table.tensor_elems) * hardware.word_bytes


def core_capacity_bytes(hardware: HardwareSpec, *, resident_fraction: float) -> np.ndarray:
    """(configurations, cores): each core's top memory, times its instances unless the memory is shared, times
    ``resident_fraction`` (the share that keeps tensors between ops, :class:`traincost.schedule.plan.SchedulePlan`)."""
    per_core = [
        np.asarray(c.top.size_bytes, dtype=np.float64) * (1 if c.top.shared else c.count) * resident_fraction
        for c in hardware.cores
    ]
    return np.stack([np.broadcast_to(c, (hardware.n_configs,)) for c in per_core], axis=1)


def group_fits(
    table: OpTable, hardware: HardwareSpec, core_of: np.ndarray, group_of: np.ndarray, *, resident_fraction: float
) -> np.ndarray:
    """(configurations, groups): whether each fused group (``group_of`` >= 0; -1 = not fused) fits in every core's
    resident share (``resident_fraction`` of its top memory)."""
    fused = np.flatnonzero(group_of >= 0)
    n_groups = int(group_of.max()) + 1 if fused.size else 0
    if n_groups == 0:
        return np.ones((hardware.n_configs, 0), dtype=bool)
    kept = (
        op_weight_bytes(table, hardware)
        + op_output_bytes(table, hardware) / group_tiles(table, group_of)[np.maximum(group_of, 0)]
    )
    used = np.zeros((n_groups, len(hardware.cores)))
    np.add.at(used, (group_of[fused], core_of[fused]), kept[fused])
    capacity = core_capacity_bytes(hardware, resident_fraction=resident_fraction)
    return (used[None, :, :] <= capacity[:, None, :]).all(axis=2)


def groups_fit(
    table: OpTable, hardware: HardwareSpec, core_of: np.ndarray, group_of: np.ndarray, *, resident_fraction: float
) -> np.ndarray:
    """Per configuration: whether every fused group fits (:func:`group_fits`)."""
    return group_fits(table, hardware, core_of, group_of, resident_fraction=resident_fraction).all(axis=1)
