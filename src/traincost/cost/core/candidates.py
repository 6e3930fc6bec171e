"""The candidates for MAC ops on a core: listed, scored and picked (``cost_candidates``).

A candidate is a loop order inside the core (``orders``) under a mapping above it (``MAPPINGS``, ZigZag's
temporal-mapping search reduced to its three stationarities): ``weight_resident`` (a weight tile stays while every
input row streams past it), ``input_resident`` (an input block, all of R, stays while the weights stream past it:
the input is fetched once) and ``output_resident`` (an M×N output block stays until complete: no partial sums
leave). Three families are listed: every order inside the core under each mapping whose resident operand has a
memory; every order again over chunks of the reduction under the output-resident mapping (``orders.chunked_view``);
and, where the top memory holds the whole op, every order with each mapping's block right below the top memory
(``orders.below_top_blocks``). Each is scored by its latency and energy inside the core with its external bytes
fetched over the ``ExternalPath`` (off chip, over the bus, into the top memory), only where it is possible (its
block fits); the best by the objective (latency, energy or EDP; ties to the secondary metric, then to the first
listed) is picked per (configuration, op) and what it chose is recorded in ``CoreOpCost``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from traincost.cost.core.gemm import Gemm
from traincost.cost.core.inside import InsideCost, cells_written_cycles, cost_inside, pipeline_depth, serial_tile_io_cycles
from traincost.cost.core.orders import (
    HeldBlock,
    LoopOrder,
    below_top_blocks,
    chunked_view,
    latched_fits,
    loop_orders,
    memories_below_top,
    order_tiles,
    reduction_parts,
)
from traincost.cost.core.tiles import holds_the_whole_op
from traincost.cost.core.traffic import ExternalTraffic, external_traffic
from traincost.cost.core.vocabulary import BITS, MAPPINGS, NATIVE, TIE, CoreOpCost, ExternalPath, Precision, Tile
from traincost.cost.optable import OpTable
from traincost.hardware import in_memory
from traincost.hardware.spec import Core

__all__ = ["OpsOnCore", "Candidate", "cost_candidates", "best_candidate", "take_picked"]


@dataclass(frozen=True, slots=True)
class OpsOnCore:
    """MAC ops as one core runs them, arrays (configurations, ops): their GEMM view, the core's precision, the
    array's steps, the compute cycles and the MACs' energy, whatever the loop order."""

    core: Core
    gemm: Gemm
    precision: Precision
    steps: np.ndarray
    compute_cycles: np.ndarray
    mac_pj: np.ndarray

    @classmethod
    def of(cls, core: Core, table: OpTable, index: np.ndarray, *, split: np.ndarray | None, split_rows: bool) -> OpsOnCore:
        """Ops ``index`` of ``table`` on one of ``split`` cores (``mac_cost``)."""
        split = np.ones(core.count.shape[0]) if split is None else np.asarray(split, dtype=np.float64)
        unroll = {d: core.unroll(d)[:, None] for d in table.dims}
        gemm = Gemm.of(table, index, split, core, unroll, rows=split_rows)
        steps = np.ones_like(gemm.macs)
        for d, size in gemm.dims.items():
            steps = steps * np.ceil(size / unroll[d])
        # a step of an in-memory array takes a cycle per group of input bits that enter together
        compute = steps * (core.in_memory.cycles_per_mac if core.in_memory is not None else 1.0)
        mac_pj = (
            in_memory.mac_energy_pj(core, gemm.dims, gemm.macs)
            if core.in_memory is not None
            else gemm.macs * core.mac_energy_pj[:, None]
        )
        return cls(core, gemm, Precision.of(core), steps, compute, mac_pj)

    def inside(self, order: LoopOrder) -> InsideCost:
        """What ``order`` costs inside the core."""
        return cost_inside(self.core, self.gemm, self.precision, compute=self.compute_cycles, mac_pj=self.mac_pj, candidate=order)


@dataclass(frozen=True, slots=True)
class Candidate:
    """One way to run the ops: a loop ``order`` inside the core, the ``mapping`` above it (a ``MAPPINGS`` name), what
    the order costs inside the core and what crosses the core's outer boundary in that mapping."""

    order: LoopOrder
    mapping: str
    inside: InsideCost
    traffic: ExternalTraffic


def cost_candidates(
    core: Core,
    table: OpTable,
    index: np.ndarray,
    *,
    split: np.ndarray | None,
    split_rows: bool,
    external: ExternalPath | None,
    objective: str,
) -> CoreOpCost:
    """``mac_cost`` on a core whose PE axes each unroll one loop dimension: the candidates listed (the orders inside
    the core under each mapping above it; with an off-chip path, each order again over chunks of the reduction, and
    the orders below a top memory that holds the whole op), each scored by its latency and energy with its external
    bytes, and the best by ``objective`` picked per (configuration, op). Without an off-chip path the dataflow's own
    order and mapping are the cost."""
    ops = OpsOnCore.of(core, table, index, split=split, split_rows=split_rows)
    in_core = [(order, ops.inside(order)) for order in loop_orders(core, ops.gemm, ops.precision)]
    # without an off-chip path no mapping above the core is chosen: the dataflow's own
    mappings = MAPPINGS if external is not None else (NATIVE[core.dataflow],)
    candidates = _above_the_core(ops, in_core, mappings=mappings)
    whole = holds_the_whole_op(core, ops.gemm, ops.precision)
    if external is not None:
        candidates += _over_reduction_chunks(ops)
        if whole.any():
            candidates += _below_the_top(ops, in_core)
    latencies = [_latency(ops, candidate, external) for candidate in candidates]
    serial = serial_tile_io_cycles(core, ops.gemm, ops.precision, external) if core.tile_io == "serial" else 0.0
    pick = np.zeros(ops.compute_cycles.shape, dtype=np.int64)
    if len(candidates) > 1 and external is not None:
        possible = np.stack([_possible(ops, candidate, whole) for candidate in candidates])
        pick = best_candidate(
            [sum(candidate.traffic.in_bytes.values()) + candidate.traffic.write_bytes for candidate in candidates],
            latency=np.where(possible, np.stack(latencies) + serial, np.inf),
            energy_pj=np.where(possible, np.stack([candidate.inside.energy_pj for candidate in candidates]), np.inf),
            external=external,
            objective=objective,
        )
    return _picked(ops, candidates, latencies, pick, serial=serial)


def _above_the_core(ops: OpsOnCore, in_core: list[tuple[LoopOrder, InsideCost]], *, mappings: tuple[str, ...]) -> list[Candidate]:
    """Each order inside the core (a band of reduction-innermost levels, a block held in the PEs, inputs latched at the
    array's port: ``loop_orders``) under each of ``mappings`` above the core whose resident operand has a memory
    (``external_traffic``: the dataflow's own first)."""
    return [
        Candidate(order, name, inside, traffic)
        for order, inside in in_core
        for name, traffic in _crossing(ops, inside, band=order.band, mappings=mappings).items()
    ]


def _over_reduction_chunks(ops: OpsOnCore) -> list[Candidate]:
    """Each order inside the core again over chunks of the reduction (``chunked_view``), under the output-resident
    mapping alone: an output block stays above the core across the chunks (ZigZag's ``tpu_like`` GPT-2
    ``mlp_proj``)."""
    chunked = chunked_view(ops.core, ops.gemm, ops.precision)
    if chunked is None:
        return []
    candidates = []
    for order in loop_orders(ops.core, chunked, ops.precision):
        inside = ops.inside(replace(order, chunk=chunked))
        (traffic,) = _crossing(ops, inside, band=order.band, mappings=("output_resident",)).values()
        candidates.append(Candidate(replace(order, chunk=chunked), "output_resident", inside, traffic))
    return candidates


def _below_the_top(ops: OpsOnCore, in_core: list[tuple[LoopOrder, InsideCost]]) -> list[Candidate]:
    """Where the top memory holds the whole op, every mapping above the core moves each operand across once: the
    mapping is chosen right below the top memory instead (``below_top_blocks``, ZigZag's loop order between ``l1`` and
    ``l3`` on ``gemm_l1_l3``), around each order inside the core and each again over 2, 4 and 8 chunks of the
    reduction (``reduction_parts``), the dataflow's order above the top memory, whose tile is the whole op."""
    core, gemm, precision = ops.core, ops.gemm, ops.precision
    shapes = [(order, inside.tiles) for order, inside in in_core]
    if memories_below_top(core):
        for part in reduction_parts(gemm):
            shapes += [
                (replace(order, chunk=part), order_tiles(core, part, precision, order))
                for order in loop_orders(core, part, precision)
            ]
    candidates = []
    for order, tiles in shapes:
        shaped = gemm if order.chunk is None else order.chunk
        for name, (block, fits) in below_top_blocks(core, shaped, tiles, precision, band=order.band).items():
            below = replace(order, below_top=(name, block))
            inside = ops.inside(below)
            # the top memory's tile is the whole op, whatever chunk of the reduction the tiles below it run over
            whole = replace(inside, tiles=[*inside.tiles[:-1], gemm.full])
            (traffic,) = _crossing(ops, whole, band=order.band, mappings=(NATIVE[core.dataflow],)).values()
            candidates.append(Candidate(below, name, inside, replace(traffic, fits=fits)))
    return candidates


def _crossing(ops: OpsOnCore, inside: InsideCost, *, band: int, mappings: tuple[str, ...]) -> dict[str, ExternalTraffic]:
    """What crosses the core's outer boundary around ``inside``'s tiles, per mapping of ``mappings``."""
    return external_traffic(ops.core, ops.gemm, inside.tiles, inside.outermost, ops.precision, band=band, mappings=mappings)


def _latency(ops: OpsOnCore, candidate: Candidate, external: ExternalPath | None) -> np.ndarray:
    """A candidate's latency inside the core; an in-memory array computes only between writes of its cells
    (``cells_written_cycles``)."""
    if ops.core.in_memory is None:
        return candidate.inside.latency
    written = cells_written_cycles(ops.core, ops.gemm, candidate.inside, candidate.traffic.in_bytes["W"], external)
    return np.maximum(candidate.inside.latency, ops.compute_cycles + written + pipeline_depth(ops.core))


def _possible(ops: OpsOnCore, candidate: Candidate, whole: np.ndarray) -> np.ndarray:
    """Where a candidate can run: a loop order below the top memory only where that memory holds the whole op; a
    mapping's block only where its memory holds it; inputs latched over the columns only where the weight memory
    below the top holds them all."""
    order = candidate.order
    fits = latched_fits(ops.core, order, candidate.inside.tiles, ops.gemm, ops.precision)
    return (whole | (order.below_top is None)) & candidate.traffic.fits & fits


def _picked(
    ops: OpsOnCore, candidates: list[Candidate], latencies: list[np.ndarray], pick: np.ndarray, *, serial: np.ndarray | float
) -> CoreOpCost:
    """The cost of candidate ``pick`` per (configuration, op), with what it chose recorded."""
    gemm, compute = ops.gemm, ops.compute_cycles
    orders = [candidate.order for candidate in candidates]
    inside = [candidate.inside for candidate in candidates]
    traffic = [candidate.traffic for candidate in candidates]

    def chosen(arrays: list[np.ndarray]) -> np.ndarray:
        return take_picked(arrays, pick)

    def recorded(values: list) -> np.ndarray:
        return np.asarray(values)[pick]

    return CoreOpCost(
        latency_cycles=chosen(latencies) + serial,
        compute_cycles=compute,
        utilization=gemm.macs / (ops.steps * ops.core.pes[:, None]),
        energy_mac_pj=ops.mac_pj,
        energy_level_pj={m: chosen([cand.level_pj[m] for cand in inside]) for m in inside[0].level_pj},
        ext_in_bytes={op: chosen([moved.in_bytes[op] for moved in traffic]) for op in ("W", "I", "O")},
        ext_write_bytes=chosen([moved.write_bytes for moved in traffic]),
        core_shares=gemm.core_shares,
        mapping=recorded([MAPPINGS.index(candidate.mapping) for candidate in candidates]),
        mapping_below_top=recorded([order.below_top is not None for order in orders]),
        reduction_levels=recorded([order.band for order in orders]),
        band_grown=recorded([order.grow for order in orders]),
        inputs_latched=recorded([order.latched for order in orders]),
        held_rows=chosen([_held_record(order.held, "rows", compute) for order in orders]),
        held_columns=chosen([_held_record(order.held, "columns", compute) for order in orders]),
        reduction_chunk=chosen([_chunk_record(order, gemm) for order in orders]),
        widened_columns=chosen([_widened_record(order, cand.tiles) for order, cand in zip(orders, inside, strict=True)]),
        level_read_bytes={m: chosen([cand.read_bytes[m] for cand in inside]) for m in inside[0].read_bytes},
        level_write_bytes={m: chosen([cand.write_bytes[m] for cand in inside]) for m in inside[0].write_bytes},
    )


def _widened_record(order: LoopOrder, tiles: list[Tile]) -> np.ndarray:
    """What ``CoreOpCost`` records of a candidate's widened weight tile: the columns the first tile above its band
    spans where they are more than the band's, else 0."""
    if order.widen == 1.0:
        return np.zeros_like(tiles[0][1])
    below, above = tiles[order.band - 1][1], tiles[order.band][1]
    return np.where(above > below, above, 0.0)


def _chunk_record(order: LoopOrder, gemm: Gemm) -> np.ndarray:
    """What ``CoreOpCost`` records of a candidate's chunk of the reduction: its R where it is less than the op's,
    else 0."""
    if order.chunk is None:
        return np.zeros_like(gemm.macs)
    return np.where(order.chunk.full[2] < gemm.full[2], order.chunk.full[2], 0.0)


def _held_record(held: HeldBlock | None, innermost: str, like: np.ndarray) -> np.ndarray:
    """What ``CoreOpCost`` records of a candidate's held block: its rows (or columns) where they are innermost, else 0."""
    if held is None or held.innermost != innermost:
        return np.zeros_like(like)
    return np.broadcast_to(held.rows if innermost == "rows" else held.columns, like.shape)


def best_candidate(
    ext_bytes: list[np.ndarray], *, latency: np.ndarray, energy_pj: np.ndarray, external: ExternalPath, objective: str
) -> np.ndarray:
    """Per (configuration, op): the position in ``ext_bytes`` of the best candidate by ``objective``, its
    external bytes fetched over ``external``; ties go to the secondary metric, then to the first candidate.
    ``latency`` and ``energy_pj`` are each candidate's inside the core, stacked like ``ext_bytes``."""
    moved = np.stack(ext_bytes)
    cycles = np.maximum(latency, moved / external.bandwidth_bytes_per_cycle[None, :, None])
    energy = energy_pj + moved * BITS * external.energy_pj_per_bit[None, :, None]
    primary, secondary = {"latency": (cycles, energy), "energy": (energy, cycles), "edp": (cycles * energy, energy)}[objective]
    tied = primary <= primary.min(axis=0) * (1 + TIE)
    return np.where(tied, secondary, np.inf).argmin(axis=0)


def take_picked(arrays: list[np.ndarray], pick: np.ndarray) -> np.ndarray:
    """Elementwise ``arrays[pick]``."""
    return np.take_along_axis(np.stack(arrays), pick[None], axis=0)[0]
