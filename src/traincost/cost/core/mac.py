"""The cost of MAC ops on one core (``mac_cost``), over the ways its PE axes may unroll them.

A core whose PE axes have ``alternatives`` or ``divisors`` is costed once per way they may unroll
(``Core.spatial_variants``), and each op takes the cheapest by the objective, as ZigZag picks among a spatial-mapping
hint's loops and their factors. A conv gradient is costed again with the axes on the loops its primitive names as
its own (``optable.OWN_LOOPS``: a K axis over the data gradient's output channels, as Stream maps MONET's
ConvTranspose) and takes that where it costs less.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields, replace
from typing import Any

import numpy as np

from traincost.cost.core.candidates import best_candidate, cost_candidates, take_picked
from traincost.cost.core.vocabulary import CoreOpCost, ExternalPath, check_objective
from traincost.cost.optable import OWN_LOOPS, OpTable
from traincost.hardware.spec import Core

__all__ = ["mac_cost"]


def mac_cost(
    core: Core,
    table: OpTable,
    index: np.ndarray,
    *,
    split: np.ndarray | None = None,
    split_rows: bool = False,
    external: ExternalPath | None = None,
    objective: str = "edp",
) -> CoreOpCost:
    """Cost of the MAC ops ``index`` of ``table`` on one instance of ``core``.

    Args:
        core: a core whose ``runs`` include these ops' kinds.
        table: the workload's op table.
        index: positions in ``table`` of MAC ops.
        split: per configuration, the number of cores the op's output channels are split over
            (tensor parallelism); the cost is that of one of those cores (the largest share), and
            ``core_shares`` says how many such shares the op's work fills (D / ceil(D / split): fewer
            than ``split`` when D is smaller, fractional when it does not divide evenly). Default 1.
        split_rows: split a convolution's or GEMM's output rows over the ``split`` cores instead (``ROW_SPLIT_KINDS``:
            each core holds every weight and reads the input rows its share's windows touch, the halo between shares
            read by both); the other kinds keep their output-channel split.
        external: the price of a byte from outside; with it, the loop order above the core is chosen per op
            among ``MAPPINGS``; without it, the core's dataflow decides.
        objective: what the choice minimises: ``latency``, ``energy`` or ``edp``.

    A core whose PE axes have ``alternatives`` or ``divisors`` is costed once per way they may unroll
    (``Core.spatial_variants``) and each op takes the cheapest by ``objective`` (its external bytes fetched over
    ``external``, if given), as ZigZag picks among a spatial-mapping hint's loops and their factors;
    ``spatial_variant`` records which. A conv gradient is costed again with its axes on the loops its primitive names
    as theirs (``OWN_LOOPS``: a K axis over the data gradient's output channels, the forward's C, as Stream maps
    MONET's ConvTranspose) and takes that where it costs less; ``own_loops`` records it.
    """
    check_objective(objective)

    def costed(variant: Core, ops: np.ndarray) -> CoreOpCost:
        return cost_candidates(variant, table, ops, split=split, split_rows=split_rows, external=external, objective=objective)

    distinct = core.spatial_variants()
    costs = [costed(variant, index) for variant in distinct]
    # each variant again with a conv gradient's loops unrolled as its primitive names them (``OWN_LOOPS``)
    own = [
        _on_own_loops(cost, variant, table.kind[index], lambda renamed, columns: costed(renamed, index[columns]))
        for cost, variant in zip(costs, distinct, strict=True)
    ]
    variants = distinct
    if any(cost is not None for cost in own):
        costs = [*costs, *(cost if cost is not None else forward for cost, forward in zip(own, costs, strict=True))]
        variants = [*distinct, *distinct]
    if len(costs) == 1:
        return costs[0]
    # a variant over fewer PEs (``divisors``) leaves the others idle: utilisation is of the whole array
    costs = [
        replace(cost, utilization=cost.utilization * (v.pes / core.pes)[:, None]) for cost, v in zip(costs, variants, strict=True)
    ]
    moved = [sum(cost.ext_in_bytes.values()) + cost.ext_write_bytes for cost in costs]
    latency = np.stack([cost.latency_cycles for cost in costs])
    energy_pj = np.stack([cost.energy_mac_pj + sum(cost.energy_level_pj.values()) for cost in costs])
    if external is None:  # in the core alone
        external = ExternalPath(
            bandwidth_bytes_per_cycle=np.full(core.count.shape, np.inf), energy_pj_per_bit=np.zeros(core.count.shape)
        )
    pick = best_candidate(moved, latency=latency, energy_pj=energy_pj, external=external, objective=objective)
    chosen = _fieldwise(costs, lambda arrays: take_picked([np.broadcast_to(array, pick.shape) for array in arrays], pick))
    return replace(chosen, spatial_variant=pick % len(distinct), own_loops=pick >= len(distinct))


def _on_own_loops(
    forward: CoreOpCost, core: Core, kinds: np.ndarray, costed: Callable[[Core, np.ndarray], CoreOpCost]
) -> CoreOpCost | None:
    """``forward`` (the cost of ops of ``kinds`` on ``core``) with each conv gradient's columns costed again
    (``costed(core, columns)``) on the array unrolling the loops its axes name as the gradient's primitive names them
    (``OWN_LOOPS``: the data gradient's output channels on a K axis, as a ConvTranspose's, its reduction on a C axis);
    None where no axis of ``core`` unrolls such a loop of a gradient among them."""
    out = None
    for kind, loops in OWN_LOOPS.items():
        columns = np.flatnonzero(kinds == kind)
        if not len(columns) or not any(axis.dim in loops for axis in core.pe_array):
            continue
        renamed = replace(core, pe_array=tuple(replace(axis, dim=loops.get(axis.dim, axis.dim)) for axis in core.pe_array))
        out = _spliced(forward if out is None else out, costed(renamed, columns), columns)
    return out


def _spliced(whole: CoreOpCost, part: CoreOpCost, columns: np.ndarray) -> CoreOpCost:
    """``whole`` with its ops ``columns`` costed as ``part`` (whose ops they are, in order)."""
    shape = whole.latency_cycles.shape

    def spliced(arrays: list[np.ndarray]) -> np.ndarray:
        into, values = arrays
        out = np.broadcast_to(into, shape).copy()
        out[:, columns] = np.broadcast_to(values, (shape[0], len(columns)))
        return out

    return _fieldwise([whole, part], spliced)


def _fieldwise(costs: list[CoreOpCost], combine: Callable[[list[np.ndarray]], np.ndarray]) -> CoreOpCost:
    """The cost whose every array (each memory's and operand's apart) is ``combine`` of ``costs``'; the records of
    which variant and which loops at their defaults."""
    out: dict[str, Any] = {}
    for field in fields(CoreOpCost):
        if field.name in ("spatial_variant", "own_loops"):
            continue
        values = [getattr(cost, field.name) for cost in costs]
        out[field.name] = (
            {key: combine([value[key] for value in values]) for key in values[0]}
            if isinstance(values[0], dict)
            else combine(values)
        )
    return CoreOpCost(**out)
