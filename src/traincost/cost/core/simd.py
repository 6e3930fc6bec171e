"""Element-wise ops on a SIMD core (``simd_cost``).

``ceil(elementwise_ops / lanes)`` cycles; every input and output element passes each level that keeps it once (no
reuse), ``e_op`` per operation.
"""

from __future__ import annotations

import numpy as np

from traincost.cost.core.level_traffic import LevelTraffic
from traincost.cost.core.vocabulary import CoreOpCost, Precision
from traincost.cost.optable import OpTable
from traincost.hardware.spec import Core

__all__ = ["simd_cost"]


def simd_cost(core: Core, table: OpTable, index: np.ndarray) -> CoreOpCost:
    """Cost of element-wise, reduction, normalisation, softmax, pooling, layout and optimizer ops."""
    n_cfg = core.count.shape[0]
    shape = (n_cfg, len(index))
    ops = table.elementwise_ops[index][None, :]
    precision = Precision.of(core)
    in_bytes = np.broadcast_to(table.in_elems[index][None, :] * precision.final_bytes["I"], shape)
    out_bytes = np.broadcast_to(table.o_elems[index][None, :] * precision.final_bytes["O"], shape)
    lanes = core.pes[:, None]
    compute = np.ceil(ops / lanes) * np.ones(shape)
    levels = LevelTraffic(core, shape)
    for operand, moved in (("I", in_bytes), ("O", out_bytes)):
        holders = [i for i, level in enumerate(core.levels) if operand in level.operands]
        for i in holders:
            # inputs are read towards the lanes, outputs written from them; the outermost holder's write of
            # an arriving input and read of a leaving output are the scheduler's (module docstring)
            levels.move(
                i, operand, read=moved * (operand == "I" or i != holders[-1]), write=moved * (operand == "O" or i != holders[-1])
            )
    latency = np.maximum(compute, levels.cycles())
    busy = np.divide(ops, compute * lanes, out=np.zeros(shape), where=compute > 0)
    reads, writes, level_energy = levels.by_memory()
    return CoreOpCost(
        latency_cycles=latency,
        compute_cycles=compute,
        utilization=busy,
        energy_mac_pj=ops * core.mac_energy_pj[:, None] * np.ones(shape),
        energy_level_pj=level_energy,
        ext_in_bytes={"I": in_bytes.copy()},
        ext_write_bytes=out_bytes.copy(),
        core_shares=np.ones(shape),
        mapping=np.full(shape, -1),
        mapping_below_top=np.zeros(shape, dtype=bool),
        band_grown=np.ones(shape, dtype=bool),
        inputs_latched=np.zeros(shape, dtype=bool),
        reduction_chunk=np.full(shape, -1.0),
        widened_columns=np.full(shape, -1.0),
        reduction_levels=np.full(shape, -1),
        held_rows=np.full(shape, -1.0),
        held_columns=np.full(shape, -1.0),
        level_read_bytes=reads,
        level_write_bytes=writes,
    )
