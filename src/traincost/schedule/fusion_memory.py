"""The one memory model of a fused group, used by the fusion solver and the scheduler alike.

While a group runs fused, each of its ops keeps on its core its weights (stationary operand of a MAC
op) and one tile of its output: the output divided by the op's intra-core tiling factor (output rows
``OY`` for a MAC op, the first output's rows otherwise). A group fits when, on every core, the bytes of
its ops there do not exceed the core's resident share of its top memory (its size, times the instances
unless shared, times the plan's ``resident_fraction``: the share that keeps tensors between ops, as the
scheduler's on-chip budget; the rest is the running op's working space). The
solver admits a candidate subgraph only if it fits (:mod:`traincost.optimize.fusion`); the scheduler
reports, per configuration, whether every group of its plan fits (``fusion_fits``), so that a group
written by hand (the manual fusion) is either infeasible in both or a point the solver could choose.
"""

from __future__ import annotations

import numpy as np

from traincost.cost.optable import MAC_KINDS, OpTable
from traincost.hardware.spec import HardwareSpec

__all__ = ["core_capacity_bytes", "fused_op_bytes", "groups_fit", "op_tiling"]


def op_tiling(table: OpTable) -> np.ndarray:
    """Per op: the intra-core tiling factor (output rows of a MAC op, else its first output's rows), at least 1."""
    tiling = np.maximum(1, table.dims["OY"]).astype(np.int64)
    first_output = np.array([outs[0] if outs else -1 for outs in table.outputs], dtype=np.int64)
    by_rows = ~table.is_mac & (first_output >= 0)
    tiling[by_rows] = np.maximum(1, table.tensor_rows[first_output[by_rows]])
    return tiling


def fused_op_bytes(table: OpTable, hardware: HardwareSpec) -> np.ndarray:
    """Per op: the bytes it keeps on its core while fused (weights plus one tile of its output)."""
    word = hardware.word_bytes
    out_bytes = table.sum_over_outputs(table.tensor_elems) * word
    weights = np.where(np.isin(table.kind, MAC_KINDS), table.s_elems * word, 0.0)
    return weights + out_bytes / op_tiling(table)


def core_capacity_bytes(hardware: HardwareSpec, *, resident_fraction: float) -> np.ndarray:
    """(configurations, cores): each core's top memory, times its instances unless the memory is shared, times
    ``resident_fraction`` (the share that keeps tensors between ops, :class:`traincost.schedule.plan.SchedulePlan`)."""
    per_core = [
        np.asarray(c.top.size_bytes, dtype=np.float64) * (1 if c.top.shared else c.count) * resident_fraction
        for c in hardware.cores
    ]
    return np.stack([np.broadcast_to(c, (hardware.n_configs,)) for c in per_core], axis=1)


def groups_fit(
    table: OpTable, hardware: HardwareSpec, core_of: np.ndarray, group_of: np.ndarray, *, resident_fraction: float
) -> np.ndarray:
    """Per configuration: whether every fused group (``group_of`` >= 0; -1 = not fused) fits in every core's resident
    share (``resident_fraction`` of its top memory)."""
    fused = np.flatnonzero(group_of >= 0)
    if fused.size == 0:
        return np.ones(hardware.n_configs, dtype=bool)
    used = np.zeros((int(group_of.max()) + 1, len(hardware.cores)))
    np.add.at(used, (group_of[fused], core_of[fused]), fused_op_bytes(table, hardware)[fused])
    return (used[None, :, :] <= core_capacity_bytes(hardware, resident_fraction=resident_fraction)[:, None, :]).all(axis=(1, 2))
