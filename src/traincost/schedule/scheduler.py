"""Stream-style scheduling of a workload on an HDA, vectorised over hardware configurations.

Ops are visited once, in program order (a topological order), and for every configuration at once:

1. **Placement.** Each op goes to the core that runs its kind. With tensor parallelism a MAC op is
   split across all instances of its core, over its output channels or, for a convolution or GEMM, over its
   output rows (each instance then holds every weight and reads its rows' inputs with their halo, as Stream 2.1.1
   splits a convolution), whichever scores better by the plan's mapping objective (``rows_split`` in the per-op
   table); otherwise it takes the instance that frees up first.
2. **Data.** Each input comes from the core's own top memory if it is resident there (free), from
   another core over the bus, or from off-chip memory over the bus. Outputs stay in the producing
   core's top memory while they fit in its resident share; what does not fit spills off chip (and
   its partial sums with it). A tensor read from off chip stays cached if it fits and is read
   again. Updated parameters, optimizer states and the loss are always written off chip.
   A tensor leaves memory after its last reader. Every byte that crosses a core's boundary is charged
   here, once, at the memory's own energies: written into the outermost memory of the core that keeps its operand
   (the top memory, or the one beside it that keeps weights, or inputs and outputs, apart: ``Core.outermost``) as
   it arrives, read out of it as it leaves (out of another core's top memory, for a resident tensor sent over the
   bus); the partial sums an op sends off chip are read back from there and written in again. The per-op core cost
   charges only what moves inside.
3. **Time.** An op starts when its inputs are ready and its core is free (in layer-by-layer mode,
   when the previous op has finished). Its duration is the longest of its core-internal latency,
   its off-chip bytes over the off-chip bandwidth and its bus bytes over the bus bandwidth.
   **Fused groups** run as stacks of tiles (:mod:`traincost.schedule.fusion_memory`: cut along samples, then
   rows, into the fewest tiles that fit the cores' resident shares but at least Stream's 8 pipeline tiles; the
   count per configuration). Inside a group a consumer starts on its producer's first tile and ends no earlier
   than one of its own tiles after it. A member holds its weights whole, in one buffer, so its first tile waits
   for them to arrive (its **fill**: their bytes over the off-chip link and the bus, overlapping nothing of its
   own, as Stream 2.1.1's ``_resident_fill`` has each held tensor fill "before the iteration that reads it,
   overlapping none"); the rest of its traffic streams under its tiles. Intermediates of the group never leave
   the chip (each keeps its tile, double-buffered); the tiles read the halo rows again and reload weights that do
   not stay below the top memory (:mod:`traincost.schedule.tile_overhead`); its weights stay on chip (the memory
   model counts them).
   A group is fused only at the configurations where it fits the one memory model of fusion
   (which the fusion solver also admits groups by); elsewhere its ops run one by one and its intermediates take
   the ordinary path (resident where they fit, off chip and back where not). Stream 2.1.1 does the same with a
   group no tiling fits: ``GenericMappingGenerator._unfit_nodes`` makes each of its operators "a group of its own:
   an operator alone has the memories to itself and the whole tile budget, as a layer-by-layer mapping gives it".
   ``fusion_fits`` says per configuration whether every group fits, ``fitting_groups`` how many do.
4. **Totals.** Latency = max(last op end, all off-chip bytes / off-chip bandwidth, all bus bytes /
   bus bandwidth); energy = MACs + every memory level + bus + off-chip (each a column, and per op in the per-op
   table; a byte read from off-chip memory costs its read energy, one written there its write energy); the memory
   timeline keeps the peak of resident on-chip bytes and of live off-chip bytes.

Per-configuration numpy arrays, a Python loop over ops only: the work per op is a few vector
operations of length = configurations (processed in chunks to bound memory). Configurations whose every number is
the same (``HardwareSpec.distinct_configs``: 2 x 4 PE cores and 4 x 2) are scheduled once, and an op's cost on one
instance of a core once for every count of that core.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from traincost.cost.core import MAPPINGS, CoreOpCost, ExternalPath, mac_cost, simd_cost
from traincost.cost.optable import MAC_KINDS, ROW_SPLIT_KINDS, OpTable, flat_ids
from traincost.hardware.load import HardwareError
from traincost.hardware.spec import Core, HardwareSpec, at_rows, distinct_rows
from traincost.schedule.fusion_memory import GroupTiling, core_capacity_bytes, output_copies
from traincost.schedule.lanes import Lane, Lanes, lanes_for
from traincost.schedule.plan import SchedulePlan
from traincost.schedule.tile_overhead import TileOverhead

__all__ = ["schedule", "StepCost", "place_ops", "OpCosts"]

_BITS = 8.0
_CHUNK = 512
# what crosses a core's boundary, (direction, operand), at the outermost memory of the core keeping the operand
# (``Core.outermost``): weights and the other inputs written in as they arrive, partial sums written back in, outputs
# (and partial sums) read out as they leave
_BOUNDARY = (("write", "W"), ("write", "I"), ("write", "O"), ("read", "O"))


@dataclass(frozen=True, slots=True)
class StepCost:
    """Cost of one step per configuration (``summary``) and, on request, per op (``ops``): start and end
    cycles, latency, energy, and the memory timeline (resident on-chip bytes and live off-chip bytes
    after each op)."""

    summary: pd.DataFrame
    ops: pd.DataFrame | None

    def copied(self, alike: np.ndarray, configs: pd.DataFrame) -> StepCost:
        """The costs of every configuration of ``configs`` from these of distinct configurations: configuration ``i``
        costs what distinct configuration ``alike[i]`` does, under its own ``config_id`` and parameters."""
        summary = self.summary.iloc[alike].reset_index(drop=True)
        summary = pd.concat([configs.reset_index(drop=True), summary.drop(columns=configs.columns)], axis=1)
        if self.ops is None:
            return StepCost(summary=summary, ops=None)
        n_ops = len(self.ops) // len(self.summary)
        ops = self.ops.iloc[(alike[:, None] * n_ops + np.arange(n_ops)).ravel()].reset_index(drop=True)
        ops["config_id"] = np.repeat(configs["config_id"].to_numpy(), n_ops)
        return StepCost(summary=summary, ops=ops)


def schedule(
    table: OpTable, hardware: HardwareSpec, plan: SchedulePlan, *, per_op: bool = False, op_costs: OpCosts | None = None
) -> StepCost:
    """Latency, energy and memory of ``table`` on every configuration of ``hardware``.

    Args:
        table: the workload (all phases for training, forward only for inference).
        hardware: the accelerator template at its configurations.
        plan: parallelism and fusion choices.
        per_op: also return start, end and energy of every op (one row per op and configuration).
        op_costs: the ops' core-internal costs (``OpCosts.of(table, hardware, plan)``, or taken from the costs of
            a table whose rows ``table`` copies); computed here if not given.

    Raises:
        HardwareError: an op kind that no core runs.
        ValueError: ``op_costs`` of another table, template or plan.
    """
    core_of = place_ops(table, hardware)
    context = _Static.build(table, hardware, plan, core_of)
    if op_costs is not None:
        op_costs.check(table, hardware, plan)
    first, alike = hardware.distinct_configs()  # configurations alike cost alike: each distinct one is scheduled once
    apart = np.array_equal(first, np.arange(hardware.n_configs))  # every configuration a design of its own, in order
    distinct = hardware if apart else hardware.take(first)
    summaries, details = [], []
    for start in range(0, distinct.n_configs, _CHUNK):
        rows = slice(start, start + _CHUNK)
        chunk = distinct.take(rows)
        costs = OpCosts.of(table, chunk, plan) if op_costs is None else op_costs.configs(rows if apart else first[rows])
        summary, detail = _run(table, chunk, plan, context, costs, per_op=per_op)
        summaries.append(summary)
        if detail is not None:
            details.append(detail)
    cost = StepCost(
        summary=pd.concat(summaries, ignore_index=True), ops=pd.concat(details, ignore_index=True) if per_op else None
    )
    return cost if apart else cost.copied(alike, hardware.configs)


def place_ops(table: OpTable, hardware: HardwareSpec) -> np.ndarray:
    """Per op: the index of the core that runs its kind.

    Raises:
        HardwareError: an op kind that no core runs.
    """
    kinds = table.kind.tolist()
    core_of_kind = {}
    for kind in sorted(set(kinds)):
        core = hardware.core_for(kind)
        if core is None:
            first = int(table.op[kinds.index(kind)])
            raise HardwareError(
                f"{hardware.source}: no core runs op kind {kind!r} (first at Workload op {first}); add it to a core's runs"
            )
        core_of_kind[kind] = core
    return np.array([core_of_kind[kind] for kind in kinds], dtype=np.int64)


@dataclass(frozen=True, slots=True)
class _Static:
    """What does not depend on the configuration: placement, pools, producers, fusion; and, as Python lists for
    the per-op loop, what it reads of each op and tensor."""

    core_of: np.ndarray
    pool_of_core: tuple[int, ...]
    pool_memory: dict[int, str]  # per pool: the name of the memory it is
    linked: dict[int, tuple[tuple[int, int], ...]]  # per pool: (point-to-point link, the pool at its other end)
    producer: np.ndarray  # per tensor: table index of the op that makes it, -1 for graph inputs
    group_of: np.ndarray  # per op: fused group index or -1
    tiling: GroupTiling  # the cuts each fused group may run in and what each core holds at each
    intermediate: np.ndarray  # per tensor: made and read only inside one fused group
    op: _OpFacts

    @classmethod
    def build(cls, table: OpTable, hardware: HardwareSpec, plan: SchedulePlan, core_of: np.ndarray) -> _Static:
        pools: dict[tuple[str, object], int] = {}
        pool_of_core = []
        for index, core in enumerate(hardware.cores):
            key = ("shared", core.top.name) if core.top.shared else ("core", index)
            pool_of_core.append(pools.setdefault(key, len(pools)))
        n_tensors = len(table.tensor_elems)
        producer = table.producers()
        position = {op: i for i, op in enumerate(table.op.tolist())}
        groups = [-1] * len(table)
        for g, group in enumerate(plan.fused):
            for op in group:
                if op in position:  # view ops and other-phase ops are not scheduled
                    groups[position[op]] = g
        group_of = np.array(groups, dtype=np.int64)
        tiling = GroupTiling.of(table, hardware, core_of, group_of, tiling=plan.fusion_tiling)
        is_mac = table.is_mac
        # an intermediate is made in a group and read only inside it (and not a step output)
        reader, read = flat_ids(table.inputs)
        reader_group = group_of[reader]
        maker_group = np.where(producer >= 0, group_of[np.maximum(producer, 0)], -1)
        has_reader, read_outside = np.zeros(n_tensors, dtype=bool), np.zeros(n_tensors, dtype=bool)
        has_reader[read] = True
        read_outside[read[reader_group != maker_group[read]]] = True
        intermediate = (maker_group >= 0) & has_reader & ~read_outside & ~table.tensor_step_output
        return cls(
            core_of=core_of,
            pool_of_core=tuple(pool_of_core),
            pool_memory={pool: hardware.cores[k].top.name for k, pool in enumerate(pool_of_core)},
            linked=_linked_pools(hardware, pool_of_core),
            producer=producer,
            group_of=group_of,
            tiling=tiling,
            intermediate=intermediate,
            op=_OpFacts.build(
                table,
                plan,
                is_mac=is_mac,
                core_of=core_of,
                pool_of_core=pool_of_core,
                group_of=group_of,
                producer=producer,
                intermediate=intermediate,
            ),
        )


def _linked_pools(hardware: HardwareSpec, pool_of_core: Sequence[int]) -> dict[int, tuple[tuple[int, int], ...]]:
    """Per pool, the point-to-point links that reach it: (link, the pool at the other end); a link between two cores
    that share a top memory carries nothing (they read it in place)."""
    linked: dict[int, list[tuple[int, int]]] = {}
    for j, link in enumerate(hardware.links):
        a, b = (pool_of_core[k] for k in link.cores)
        if a != b:
            linked.setdefault(a, []).append((j, b))
            linked.setdefault(b, []).append((j, a))
    return {pool: tuple(ends) for pool, ends in linked.items()}


@dataclass(frozen=True, slots=True)
class _OpFacts:
    """Per op and per tensor, as Python lists (the per-op loop reads them one element at a time)."""

    core: list[int]
    pool: list[int]
    group: list[int]
    kept: list[float]  # of each output tile of the op, the copies it keeps while fused (0: the whole output, it accumulates)
    split: list[bool]  # tensor parallel: the op takes every instance of its core
    x_tensor: list[int]
    s_tensor: list[int]
    released: list[list[int]]  # tensors that leave memory after the op: inputs it reads last, outputs nobody reads later
    last_use: list[int]  # per tensor
    producer: list[int]
    intermediate: list[bool]
    persistent: list[bool]
    step_output: list[bool]

    @classmethod
    def build(
        cls,
        table: OpTable,
        plan: SchedulePlan,
        *,
        is_mac: np.ndarray,
        core_of: np.ndarray,
        pool_of_core: Sequence[int],
        group_of: np.ndarray,
        producer: np.ndarray,
        intermediate: np.ndarray,
    ) -> _OpFacts:
        released: list[list[int]] = [[] for _ in range(len(table))]
        for per_op, last in ((table.inputs, np.equal), (table.outputs, np.less)):  # inputs read last, outputs never read
            op, tensor = flat_ids(per_op)
            leaving = last(table.last_use[tensor], op)
            for i, t in zip(op[leaving].tolist(), tensor[leaving].tolist(), strict=True):
                released[i].append(t)
        return cls(
            core=core_of.tolist(),
            pool=[pool_of_core[k] for k in core_of.tolist()],
            group=group_of.tolist(),
            kept=output_copies(table, plan.fusion_tiling).tolist(),
            split=(is_mac & plan.tensor_parallel).tolist(),
            x_tensor=table.x_tensor.tolist(),
            s_tensor=table.s_tensor.tolist(),
            released=released,
            last_use=table.last_use.tolist(),
            producer=producer.tolist(),
            intermediate=intermediate.tolist(),
            persistent=table.tensor_persistent.tolist(),
            step_output=table.tensor_step_output.tolist(),
        )


@dataclass(frozen=True, slots=True)
class OpCosts:
    """Core-internal cost of every op of a table at every configuration of a template, as (configurations, ops) arrays.

    An op's columns depend only on its own row of the table (kind, shape, core) and on the plan's tensor
    parallelism and mapping objective, so a table whose rows copy another's rows (a recompute rewrite: a
    clone costs what the op it clones costs) has the other's columns taken (``take``). The energy totals per
    memory are summed in ``schedule`` from the per-op columns, over the table's own rows.
    """

    kind: np.ndarray  # per op, to check the costs belong to the table they are used with
    tensor_parallel: bool
    mapping_objective: str
    latency: np.ndarray
    energy: np.ndarray  # inside the core, every share of the op, and the multicast copies of its streamed operand
    in_w: np.ndarray  # bytes into the core's top memory: weights, streamed operand, partial sums back in
    in_i: np.ndarray
    psum: np.ndarray
    out: np.ndarray  # bytes out of the top memory: outputs and partial sums
    mapping: np.ndarray
    mapping_below_top: np.ndarray
    reduction_levels: np.ndarray
    held_rows: np.ndarray
    held_columns: np.ndarray
    band_grown: np.ndarray
    inputs_latched: np.ndarray
    reduction_chunk: np.ndarray
    widened_columns: np.ndarray
    own_loops: np.ndarray
    rows_split: np.ndarray  # a tensor-parallel MAC op split over its output rows, not its output channels
    spatial_variant: np.ndarray  # which of the core's ``spatial_variants`` unrolled a MAC op
    compute_cycles: np.ndarray  # a MAC op's cycles of compute, on one instance of its core
    utilization: np.ndarray  # of that instance's PEs over those cycles
    mac_pj: np.ndarray  # MAC energy, every share
    copies_pj: np.ndarray  # writing the multicast operand into every busy core's outermost memory keeping it but one
    level_pj: dict[str, np.ndarray]  # per memory: energy inside the core, every share (0 for ops of other cores)
    whole: OpCosts | None = None  # with the ``per_op`` allocation: the costs of each op on one instance of its core

    @classmethod
    def of(cls, table: OpTable, hardware: HardwareSpec, plan: SchedulePlan) -> OpCosts:
        """The costs of every op of ``table`` on the core it runs on, at every configuration of ``hardware``.

        Raises:
            HardwareError: an op kind that no core runs.
        """
        core_of = place_ops(table, hardware)
        shape = (hardware.n_configs, len(table))
        arrays = {name: np.zeros(shape) for name in ("latency", "energy", "in_w", "in_i", "psum", "out", "mac_pj", "copies_pj")}
        records = {name: np.full(shape, other) for name, other in _MAPPING_RECORDS.items()}
        level_pj = {name: np.zeros(shape) for name in hardware.memories}
        mac = table.is_mac
        for k, core in enumerate(hardware.cores):
            on_core = core_of == k
            split = core.count if plan.tensor_parallel else np.ones_like(core.count)
            external = ExternalPath.of(hardware, core)
            # an op's cost is that of one instance of its core, its share of the split and the price of outside: each
            # distinct set of their numbers is costed once (configurations that differ only in how many instances
            # the core has, with no tensor parallelism)
            inputs = (core, split, external)
            instances, configs = distinct_rows(inputs, hardware.n_configs, leave_out=frozenset({"count"}))
            apart = np.array_equal(instances, np.arange(hardware.n_configs))  # each configuration its own, in order
            instance, split, external = inputs if apart else at_rows(inputs, instances)
            rows = slice(None) if apart else configs
            for index, is_mac in ((np.flatnonzero(on_core & mac), True), (np.flatnonzero(on_core & ~mac), False)):
                if not len(index):
                    continue
                first, group = table.distinct_rows(index)  # each distinct op costed once, its columns copied to the others
                alike = index[first]
                if is_mac:
                    columns = _mac_columns(table, plan, instance, alike, split=split, external=external)
                else:
                    columns = _columns(simd_cost(instance, table, alike))
                for name, values in columns.items():
                    if name == "level_pj":
                        for memory, energy in values.items():
                            level_pj[memory][:, index] = _copied(energy, rows, group, distinct=len(instances))
                    else:
                        (records if name in records else arrays)[name][:, index] = _copied(
                            values, rows, group, distinct=len(instances)
                        )
        choosing = plan.tensor_parallel and plan.allocation == "per_op"
        return cls(
            kind=table.kind,
            tensor_parallel=plan.tensor_parallel,
            mapping_objective=plan.mapping_objective,
            **records,
            level_pj=level_pj,
            **arrays,
            whole=cls.of(table, hardware, replace(plan, tensor_parallel=False, allocation="split")) if choosing else None,
        )

    def choosing(self, one: np.ndarray) -> OpCosts:
        """These costs where ``one`` ((configurations, ops)) is False, the ``whole`` costs where it is True."""
        whole = self.whole
        if whole is None:
            return self
        return replace(
            self,
            level_pj={name: np.where(one, whole.level_pj[name], values) for name, values in self.level_pj.items()},
            whole=None,
            **{name: np.where(one, getattr(whole, name), getattr(self, name)) for name in _PER_OP_COSTS},
        )

    def take(self, rows: np.ndarray) -> OpCosts:
        """The costs of a table whose op ``j`` copies this table's op ``rows[j]`` (C-ordered, as ``of`` makes them)."""
        return self._map(lambda values: np.take(values, rows, axis=1), self.kind[rows])

    def configs(self, rows: slice | np.ndarray) -> OpCosts:
        """The costs at configurations ``rows`` of the template (a slice of them, or their indices)."""
        return self._map(lambda values: values[rows], self.kind)

    def _map(self, pick: Callable[[np.ndarray], np.ndarray], kind: np.ndarray) -> OpCosts:
        return OpCosts(
            kind=kind,
            tensor_parallel=self.tensor_parallel,
            mapping_objective=self.mapping_objective,
            level_pj={name: pick(values) for name, values in self.level_pj.items()},
            **{name: pick(getattr(self, name)) for name in _PER_OP_COSTS},
            whole=None if self.whole is None else self.whole._map(pick, kind),
        )

    def check(self, table: OpTable, hardware: HardwareSpec, plan: SchedulePlan) -> None:
        """Raise ValueError unless these are the costs of ``table`` at ``hardware``'s configurations under ``plan``."""
        if (
            self.latency.shape != (hardware.n_configs, len(table))
            or not np.array_equal(self.kind, table.kind)
            or (self.tensor_parallel, self.mapping_objective) != (plan.tensor_parallel, plan.mapping_objective)
            or (self.whole is not None) != (plan.tensor_parallel and plan.allocation == "per_op")
        ):
            raise ValueError(
                f"op costs of {self.latency.shape[1]} ops at {self.latency.shape[0]} configurations (tensor parallel "
                f"{self.tensor_parallel}, objective {self.mapping_objective}) do not belong to a table of {len(table)} ops "
                f"at {hardware.n_configs} (tensor parallel {plan.tensor_parallel}, objective {plan.mapping_objective})"
            )


def _copied(values: np.ndarray | float, configs: np.ndarray | slice, group: np.ndarray, *, distinct: int) -> np.ndarray:
    """Columns of the distinct ops at ``distinct`` configurations (``values``, broadcast to (distinct configurations,
    distinct ops)) copied to every configuration alike (``configs``: which distinct one each is, or ``slice(None)``
    where each is its own) and every op of their ``group``."""
    return np.broadcast_to(values, (distinct, int(group.max()) + 1))[configs][:, group]


# what the per-op table records of the mapping a MAC op takes (``CoreOpCost``'s fields), and its value for other ops
_MAPPING_RECORDS = {
    "mapping": -1,
    "mapping_below_top": False,
    "reduction_levels": -1,
    "held_rows": -1.0,
    "held_columns": -1.0,
    "band_grown": True,
    "inputs_latched": False,
    "reduction_chunk": -1.0,
    "widened_columns": -1.0,
    "own_loops": False,
    "rows_split": False,
    "spatial_variant": -1,
    "compute_cycles": -1.0,
    "utilization": -1.0,
}
_PER_OP_COSTS = (
    *("latency", "energy", "in_w", "in_i", "psum", "out"),
    *_MAPPING_RECORDS,
    *("mac_pj", "copies_pj"),
)


def _mac_columns(
    table: OpTable, plan: SchedulePlan, core: Core, index: np.ndarray, *, split: np.ndarray, external: ExternalPath
) -> dict:
    """The ``OpCosts`` columns of the MAC ops ``index`` on ``core``, split over ``split`` instances (per configuration;
    1 with no tensor parallelism). With tensor parallelism each op is split over every instance, along its output
    channels, or along its output rows (``ROW_SPLIT_KINDS``, as Stream 2.1.1 splits a convolution) where that scores
    better by the plan's mapping objective, its traffic from outside at the price of ``external`` included (a row
    split fetches every weight once for all the cores and each core's input rows with their halo; a channel split
    each core's weights and the input once); ``rows_split`` records which."""

    def costed(ops: np.ndarray, *, by_rows: bool) -> dict:
        cost = mac_cost(core, table, ops, split=split, split_rows=by_rows, external=external, objective=plan.mapping_objective)
        multicast = "W" if by_rows else "I"
        holder = core.outermost(multicast)
        write = np.zeros_like(core.count) if holder is None else holder.write_energy_pj_per_bit
        return _columns(cost, multicast=multicast, write_pj_per_bit=write)

    by_channels = costed(index, by_rows=False)
    eligible = np.flatnonzero(np.isin(table.kind[index], ROW_SPLIT_KINDS) & (table.dims["OY"][index] > 1))
    if not plan.tensor_parallel or not len(eligible):
        return by_channels
    by_rows = costed(index[eligible], by_rows=True)  # the others split by channels either way
    shape = (len(split), len(index))

    def whole(values: np.ndarray | float) -> np.ndarray:
        return np.broadcast_to(np.asarray(values), shape)

    channels_there = {name: whole(values)[:, eligible] for name, values in by_channels.items() if name != "level_pj"}
    objective = plan.mapping_objective
    rows = _split_score(by_rows, external, objective) < _split_score(channels_there, external, objective)

    def chosen(by_channels_values: np.ndarray, by_rows_values: np.ndarray) -> np.ndarray:
        values = whole(by_channels_values).copy()
        values[:, eligible] = np.where(rows, by_rows_values, values[:, eligible])
        return values

    out = {name: chosen(values, by_rows[name]) for name, values in by_channels.items() if name != "level_pj"}
    out["level_pj"] = {memory: chosen(values, by_rows["level_pj"][memory]) for memory, values in by_channels["level_pj"].items()}
    rows_split = np.zeros(shape, dtype=bool)
    rows_split[:, eligible] = rows
    return out | {"rows_split": rows_split}


def _split_score(columns: dict, external: ExternalPath, objective: str) -> np.ndarray:
    """An op's score by ``objective`` as split so (``columns``): its core latency or the time its traffic from
    outside takes, whichever is longer, and its energy with that traffic's."""
    moved = columns["in_w"] + columns["in_i"] + columns["psum"] + columns["out"]
    latency = np.maximum(columns["latency"], moved / external.bandwidth_bytes_per_cycle[:, None])
    energy = columns["energy"] + moved * _BITS * external.energy_pj_per_bit[:, None]
    return {"latency": latency, "energy": energy}.get(objective, latency * energy)


def _columns(cost: CoreOpCost, *, multicast: str | None = None, write_pj_per_bit: np.ndarray | None = None) -> dict:
    """The ``OpCosts`` columns of ``cost`` (one core instance's share of each op) for the whole op: the work is charged
    once (K < cores leaves cores idle, and an uneven split leaves the last core a smaller share: one core's cost
    times the shares the op fills). For MAC ops (a ``multicast`` operand named) the bytes each brings in too: the
    multicast operand (the input, or the weights of a row split) fetched once and written into every busy core's
    outermost memory keeping it but one (``copies_pj``, at ``write_pj_per_bit``), the others each core's own, and the
    mapping records."""
    shares = cost.core_shares
    columns: dict = {}
    copies = np.zeros_like(cost.latency_cycles)
    if multicast is not None:
        ext_in = cost.ext_in_bytes
        columns = {name: getattr(cost, name) for name in _MAPPING_RECORDS if name != "rows_split"}
        columns |= {"in_w": ext_in.get("W", 0) * shares, "in_i": ext_in.get("I", 0) * shares, "psum": ext_in.get("O", 0) * shares}
        fetched = ext_in.get(multicast, 0) * np.ones_like(shares)
        columns["in_i" if multicast == "I" else "in_w"] = fetched
        copies = fetched * (np.ceil(shares) - 1) * _BITS * write_pj_per_bit[:, None]
    internal = cost.energy_mac_pj.copy()
    for energy in cost.energy_level_pj.values():
        internal += energy
    return columns | {
        "out": cost.ext_write_bytes * shares,
        "latency": cost.latency_cycles,
        "energy": internal * shares + copies,
        "copies_pj": copies,
        "mac_pj": cost.energy_mac_pj * shares,
        "level_pj": {name: energy * shares for name, energy in cost.energy_level_pj.items()},
    }


def _energy_totals(costs: OpCosts, table: OpTable, hardware: HardwareSpec, core_of: np.ndarray) -> tuple[np.ndarray, dict]:
    """MAC energy and energy inside the cores per memory, per configuration: the per-op columns summed per core and
    kind of op (MAC ops, then the others), in that order. The columns are taken with ``np.take``, which keeps
    them C-ordered (``values[:, index]`` is Fortran-ordered, and numpy sums the rows of the two layouts in
    different orders)."""
    mac_energy = np.zeros(hardware.n_configs)
    level_energy: dict[str, np.ndarray] = {}
    mac = table.is_mac
    for k, core in enumerate(hardware.cores):
        on_core = core_of == k
        for index in (np.flatnonzero(on_core & mac), np.flatnonzero(on_core & ~mac)):
            if not len(index):
                continue
            copies = _copies_where_spent(costs, core, index)
            for name in dict.fromkeys(level.memory.name for level in core.levels):
                level_energy[name] = level_energy.get(name, 0) + np.take(costs.level_pj[name], index, axis=1).sum(axis=1)
                if name in copies:
                    level_energy[name] = level_energy[name] + copies[name].sum(axis=1)
            mac_energy += np.take(costs.mac_pj, index, axis=1).sum(axis=1)
    return mac_energy, level_energy


def _copies_where_spent(costs: OpCosts, core: Core, index: np.ndarray) -> dict[str, np.ndarray]:
    """Per memory of ``core`` that receives any, (configurations, ops ``index``): the energy of the multicast copies
    (``copies_pj``) of those ops, in the outermost memory keeping the operand multicast (the weights of a row split,
    else the inputs)."""
    copies, rows = np.take(costs.copies_pj, index, axis=1), np.take(costs.rows_split, index, axis=1)
    spent: dict[str, np.ndarray] = {}
    for operand, chosen in (("W", rows), ("I", ~rows)):
        holder = core.outermost(operand)
        if holder is not None:
            spent[holder.name] = spent.get(holder.name, 0.0) + np.where(chosen, copies, 0.0)
    return spent


class _Memory:
    """Where every tensor lives, per configuration: a core pool's top memory or off chip."""

    def __init__(self, table: OpTable, hw: HardwareSpec, plan: SchedulePlan, static: _Static, lanes: Lanes) -> None:
        n_cfg = hw.n_configs
        self.lanes = lanes
        self.any, self.where, self.maximum, self.total = lanes.any, lanes.where, lanes.maximum, lanes.total
        self.persistent_tensor = static.op.persistent
        sizes = table.tensor_elems.astype(np.float64) * hw.word_bytes
        self.sizes: list[float] = sizes.tolist()
        self.n_pools = max(static.pool_of_core) + 1
        budget = np.zeros((n_cfg, self.n_pools))
        for k, core in enumerate(hw.cores):
            instances = 1.0 if core.top.shared else core.count
            pool = static.pool_of_core[k]
            budget[:, pool] = np.maximum(budget[:, pool], core.top.size_bytes * instances * plan.resident_fraction)
        self.budget = lanes.columns(budget)
        read_pj_per_bit = np.zeros((n_cfg, self.n_pools))  # reading a resident tensor out of a pool for another core
        for k, core in enumerate(hw.cores):
            read_pj_per_bit[:, static.pool_of_core[k]] = core.top.read_energy_pj_per_bit
        self.read_pj_per_bit = lanes.columns(read_pj_per_bit)
        self.pool = lanes.state(len(sizes), -1, "int16")  # per tensor: its pool, -1 = off chip
        self.held = lanes.state(len(sizes), 0.0, "float32")  # on-chip bytes a tensor occupies
        self.spilled = lanes.state(len(sizes), 0.0, "float32")  # off-chip bytes of a live temporary
        self.occupancy = lanes.columns(np.zeros((n_cfg, self.n_pools)))  # per pool
        self.offchip_live = lanes.zeros()
        self.persistent_bytes = float(sizes[table.tensor_persistent].sum())
        self.peak_onchip = lanes.zeros()
        self.peak_offchip = lanes.lane(np.full(n_cfg, self.persistent_bytes))
        # tensors resident somewhere, and temporaries spilled somewhere: the only ones release has work for
        self.resident: set[int] = set()
        self.offchip: set[int] = set()

    def keep(self, t: int, pool: int, mask: Lane, nbytes: float) -> None:
        """Make ``t`` resident in ``pool`` where ``mask``, occupying ``nbytes``."""
        if not self.any(mask):
            return
        self.resident.add(t)
        self.pool[t] = self.where(mask, pool, self.pool[t])
        self.held[t] = self.where(mask, nbytes, self.held[t])
        self.occupancy[pool] = self.occupancy[pool] + nbytes * mask

    def fits(self, t: int, pool: int) -> Lane:
        return self.occupancy[pool] + self.sizes[t] <= self.budget[pool]

    def spill(self, t: int, mask: Lane) -> None:
        if not self.persistent_tensor[t] and self.any(mask):
            self.offchip.add(t)
            self.spilled[t] = self.where(mask, self.sizes[t], self.spilled[t])
            self.offchip_live = self.offchip_live + self.sizes[t] * mask

    def release(self, t: int) -> None:
        if t in self.resident:
            self.resident.discard(t)
            # held is 0 where the tensor is off chip, so pool 0 takes nothing there
            self.lanes.add_at(self.occupancy, self.maximum(self.pool[t], 0), -self.held[t])
            self.pool[t] = -1
            self.held[t] = 0
        if t in self.offchip:
            self.offchip.discard(t)
            self.offchip_live = self.offchip_live - self.spilled[t]
            self.spilled[t] = 0

    def onchip(self) -> Lane:
        """Resident bytes over every pool."""
        return self.total(self.occupancy)

    def record_peaks(self) -> None:
        self.peak_onchip = self.maximum(self.peak_onchip, self.total(self.occupancy))
        self.peak_offchip = self.maximum(self.peak_offchip, self.persistent_bytes + self.offchip_live)


class _Traffic:
    """Bytes each op moves, per configuration: read from and written to off-chip memory, over the bus and over each
    point-to-point link, and written into and read out of its core's memories at the core's boundary, per operand
    (``_BOUNDARY``); and the energy of reading its inputs out of other cores' top memories, per pool. One lane per
    op, stacked into (configurations, ops) arrays by ``energy``."""

    def __init__(self, n_ops: int, lanes: Lanes, n_pools: int, n_links: int) -> None:
        self.lanes, self.n_pools = lanes, n_pools
        self.offchip_read: list[Lane] = [0.0] * n_ops
        self.offchip_write: list[Lane] = [0.0] * n_ops
        self.bus: list[Lane] = [0.0] * n_ops
        self.links: list[list[Lane]] = [[0.0] * n_ops for _ in range(n_links)]  # per point-to-point link
        self.boundary: dict[tuple[str, str], list[Lane]] = {way: [0.0] * n_ops for way in _BOUNDARY}
        self.remote_read_pj: dict[int, Any] = {}  # per op that reads another core's top memory: per pool (``columns``)

    def remote(self, i: int) -> Any:
        """Op ``i``'s energy of reading out of other cores' top memories, per pool (lanes made by ``columns``)."""
        if i not in self.remote_read_pj:
            self.remote_read_pj[i] = self.lanes.columns(np.zeros((self.lanes.n, self.n_pools)))
        return self.remote_read_pj[i]

    def energy(self, hw: HardwareSpec, static: _Static, lanes: Lanes) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        """Per op the bytes off chip, over the bus and over the point-to-point links, and the energy of its data
        movement (pJ) per place: ``offchip`` (reads and writes each at the off-chip memory's own energy), ``bus``,
        ``links`` and each memory; (configurations, ops) arrays."""
        read, written = lanes.stack(self.offchip_read), lanes.stack(self.offchip_write)
        bus_bytes = lanes.stack(self.bus)
        link_bytes = [lanes.stack(per_op) for per_op in self.links]
        offchip = hw.offchip
        spent = {
            "offchip": _BITS
            * (read * offchip.read_energy_pj_per_bit[:, None] + written * offchip.write_energy_pj_per_bit[:, None]),
            "bus": bus_bytes * (_BITS * hw.bus.energy_pj_per_bit)[:, None],
            "links": sum(
                (moved * (_BITS * link.energy_pj_per_bit)[:, None] for moved, link in zip(link_bytes, hw.links, strict=True)),
                start=np.zeros_like(bus_bytes),
            ),
        }
        spent |= {name: np.zeros_like(bus_bytes) for name in hw.memories}
        for (way, operand), per_op in self.boundary.items():
            moved = lanes.stack(per_op)
            for k, core in enumerate(hw.cores):
                holder = core.outermost(operand)
                if holder is not None:
                    on = static.core_of == k
                    pj_per_bit = holder.write_energy_pj_per_bit if way == "write" else holder.read_energy_pj_per_bit
                    spent[holder.name][:, on] += _BITS * moved[:, on] * pj_per_bit[:, None]
        for i, by_pool in self.remote_read_pj.items():
            for pool, name in static.pool_memory.items():
                spent[name][:, i] += lanes.array(by_pool[pool])
        moved = {"offchip": read + written, "bus": bus_bytes, "links": sum(link_bytes, start=np.zeros_like(bus_bytes))}
        moved |= {f"link{j}": per_link for j, per_link in enumerate(link_bytes)}
        return moved, spent


class _Clock:
    """When each core instance is free and when each op ends, per configuration."""

    def __init__(
        self, table: OpTable, hw: HardwareSpec, plan: SchedulePlan, static: _Static, lanes: Lanes, *, fused: list[Lane]
    ) -> None:
        self.lanes, self.plan, self.op = lanes, plan, static.op
        self.inputs = table.inputs
        self.fused = fused  # per group: where it is fused (it fits)
        self.free = [lanes.slots(c.count) for c in hw.cores]
        self.start: list[Lane] = [0.0] * len(table)
        self.end: list[Lane] = [0.0] * len(table)
        self.first_tile: list[Lane] = [0.0] * len(table)
        self.last = lanes.zeros()

    def ready(self, i: int) -> tuple[Lane, list[int]]:
        """When op ``i``'s inputs are ready (a fused producer's first tile where its group is fused), and its
        producers in its own group."""
        lanes, op = self.lanes, self.op
        maximum = lanes.maximum
        group = op.group[i]
        ready = 0.0 if self.plan.pipeline else self.last
        fused_producers = []
        for t in self.inputs[i]:
            p = op.producer[t]
            if p >= 0 and group >= 0 and op.group[p] == group:
                ready = maximum(ready, lanes.where(self.fused[group], self.first_tile[p], self.end[p]))
                fused_producers.append(p)
            elif p >= 0:
                ready = maximum(ready, self.end[p])
        return ready, fused_producers

    def prefers_one(self, i: int, ready: Lane, split: tuple[Lane, Lane], one: tuple[Lane, Lane]) -> Lane:
        """Where op ``i``, its inputs ``ready`` then, scores no worse by the plan's mapping objective on the instance of
        its core that frees up first than on every instance, given its (core-internal cycles, energy) each way:
        ``latency`` compares when it would finish, ``energy`` its energy, ``edp`` the product of the two (its time
        from ready to finish)."""
        lanes = self.lanes
        slots = self.free[self.op.core[i]]
        _, free = lanes.earliest(slots)
        split_end = lanes.maximum(ready, lanes.latest(slots)) + split[0]
        one_end = lanes.maximum(ready, free) + one[0]
        match self.plan.mapping_objective:
            case "latency":
                return one_end <= split_end
            case "energy":
                return one[1] <= split[1]
        return (one_end - ready) * one[1] <= (split_end - ready) * split[1]

    def run(self, i: int, duration: Lane, tiles: Lane, one: Lane, ready: tuple[Lane, list[int]], *, fill: Lane) -> None:
        """Place op ``i`` of ``duration`` cycles on its core, after its inputs (``ready``: when, and its producers in
        its own group) and (layer by layer) the previous op: on every instance of the core where it is split (but
        where ``one``), else on the one that frees up first. The first ``fill`` cycles of ``duration`` come before
        its first tile (its held weights arriving); the rest is its tiles."""
        lanes, op = self.lanes, self.op
        maximum = lanes.maximum
        group = op.group[i]
        ready, fused_producers = ready
        k = op.core[i]
        slots = self.free[k]
        if not op.split[i]:
            pick, free = lanes.earliest(slots)
            start = maximum(ready, free)
        elif one is False:
            start = maximum(ready, lanes.latest(slots))
        else:
            pick, free = lanes.earliest(slots)
            start = maximum(ready, lanes.where(one, free, lanes.latest(slots)))
        finish = start + duration
        tile = (duration - fill) / tiles
        for p in fused_producers:
            finish = lanes.where(self.fused[group], maximum(finish, self.end[p] + tile), finish)
        if not op.split[i]:
            lanes.occupy(slots, pick, finish)
        elif one is False:
            self.free[k] = lanes.occupy_all(slots, finish)
        else:
            self.free[k] = lanes.occupy_some(slots, pick, finish, every=lanes.logical_not(one))
        self.start[i], self.end[i] = start, finish
        self.first_tile[i] = start + fill + tile
        self.last = maximum(self.last, finish)


def _run(
    table: OpTable, hw: HardwareSpec, plan: SchedulePlan, static: _Static, costs: OpCosts, *, per_op: bool
) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    n_cfg = hw.n_configs
    lanes = lanes_for(n_cfg)
    maximum = lanes.maximum
    split = np.array(static.op.split, dtype=bool)
    fits, op_tiles, overhead, alone = _tiles(table, hw, plan, static, split, choosing=costs.whole is not None)
    fused = list(lanes.columns(fits))  # per group: where it is fused (it fits)
    memory = _Memory(table, hw, plan, static, lanes)
    clock = _Clock(table, hw, plan, static, lanes, fused=fused)
    traffic = _Traffic(len(table), lanes, memory.n_pools, len(hw.links))
    moves = _Moves(table, static, costs, memory=memory, traffic=traffic, lanes=lanes, fused=fused)
    latency_of = lanes.columns(costs.latency + overhead.cycles)
    tiles_of = lanes.columns(op_tiles)
    allocation = _Allocation(lanes, clock, moves, costs, overhead=overhead, alone=alone, split=split)
    transfer = _Transfer(hw, lanes)
    onchip_timeline: list[Lane] = []
    offchip_timeline: list[Lane] = []
    fills: list[Lane] = []
    move, ready, run, record_peaks, release = moves.move, clock.ready, clock.run, memory.record_peaks, memory.release
    for i, released in enumerate(static.op.released):
        inputs = ready(i)
        tiles, latency = tiles_of[i], allocation.latency(i, latency_of[i], inputs[0])
        off_b, bus_b, link_b, held = move(i, tiles)
        bandwidth_cycles = transfer.cycles(off_b, bus_b, link_b)
        fill = transfer.cycles(*held) if static.op.group[i] >= 0 else 0.0  # only a fused member holds weights
        fills.append(fill)
        run(i, maximum(latency + fill, bandwidth_cycles), tiles, allocation.one[i], inputs, fill=fill)
        record_peaks()
        if per_op:
            onchip_timeline.append(memory.onchip())
            offchip_timeline.append(memory.persistent_bytes + memory.offchip_live)
        for t in released:
            release(t)

    one_instance = lanes.stack(allocation.one) > 0
    if alone is not None:
        costs, overhead = costs.choosing(one_instance), overhead.choosing(alone, one_instance)
    moved, spent = traffic.energy(hw, static, lanes)
    offchip_bytes, bus_bytes = moved["offchip"].sum(axis=1), moved["bus"].sum(axis=1)
    latency = _bounded_latency(lanes.array(clock.last), hw, moved)
    op_energy = costs.energy + sum(spent.values()) + overhead.energy_pj
    mac_energy, level_energy = _energy_totals(costs, table, hw, static.core_of)
    mac_pes = sum(core.pes * core.count for core in hw.cores if set(core.runs) & set(MAC_KINDS))
    columns = {"latency_cycles": latency, "energy_pj": op_energy.sum(axis=1), "energy_mac_pj": mac_energy}
    for name in hw.memories:
        columns[f"energy_{name}_pj"] = (
            level_energy.get(name, np.zeros(n_cfg)) + spent[name].sum(axis=1) + overhead.by_memory[name].sum(axis=1)
        )
    columns |= {"energy_bus_pj": spent["bus"].sum(axis=1), "energy_offchip_pj": spent["offchip"].sum(axis=1)}
    if hw.links:
        columns["energy_links_pj"] = spent["links"].sum(axis=1)
    for phase in sorted(set(table.phase.tolist())):
        columns[f"energy_{phase}_pj"] = op_energy[:, table.phase == phase].sum(axis=1)
    columns |= {
        "offchip_bytes": offchip_bytes,
        "bus_bytes": bus_bytes,
        **({"link_bytes": moved["links"].sum(axis=1)} if hw.links else {}),
        "peak_onchip_bytes": lanes.array(memory.peak_onchip),
        "peak_offchip_bytes": lanes.array(memory.peak_offchip),
        "mac_pes": mac_pes,
        "utilization": table.macs.sum() / (latency * mac_pes),
        "fusion_fits": fits.all(axis=1),
        "fitting_groups": fits.sum(axis=1),
    }
    summary = pd.concat([hw.configs, pd.DataFrame(columns, index=hw.configs.index)], axis=1)
    if not per_op:
        return summary, None
    timelines = (lanes.stack(onchip_timeline), lanes.stack(offchip_timeline))
    return summary, _detail(
        table,
        hw,
        static,
        clock,
        costs,
        overhead=overhead,
        op_tiles=op_tiles,
        one_instance=one_instance,
        op_energy=op_energy,
        timelines=timelines,
        moved=moved,
        spent=spent,
        fill=lanes.stack(fills),
    )


class _Transfer:
    """How long bytes take over the off-chip link, the bus and each point-to-point link, per configuration."""

    def __init__(self, hw: HardwareSpec, lanes: Lanes) -> None:
        self.maximum = lanes.maximum
        self.offchip = lanes.lane(hw.offchip.bandwidth_bytes_per_cycle)
        self.bus = lanes.lane(hw.bus.bandwidth_bytes_per_cycle)
        self.links = [lanes.lane(link.bandwidth_bytes_per_cycle) for link in hw.links]

    def cycles(self, offchip_bytes: Lane, bus_bytes: Lane, link_bytes: dict[int, Lane]) -> Lane:
        """The longest of the transfers, each at its own bandwidth (they run side by side)."""
        cycles = self.maximum(offchip_bytes / self.offchip, bus_bytes / self.bus)
        for link, moved in link_bytes.items():
            cycles = self.maximum(cycles, moved / self.links[link])
        return cycles


def _bounded_latency(last_end: np.ndarray, hw: HardwareSpec, moved: dict[str, np.ndarray]) -> np.ndarray:
    """The step's latency: its last op's end, or the time all its bytes take over the off-chip link, the bus or any
    point-to-point link, whichever is longest."""
    latency = np.maximum(last_end, moved["offchip"].sum(axis=1) / hw.offchip.bandwidth_bytes_per_cycle)
    latency = np.maximum(latency, moved["bus"].sum(axis=1) / hw.bus.bandwidth_bytes_per_cycle)
    for j, link in enumerate(hw.links):
        latency = np.maximum(latency, moved[f"link{j}"].sum(axis=1) / link.bandwidth_bytes_per_cycle)
    return latency


def _detail(
    table: OpTable,
    hw: HardwareSpec,
    static: _Static,
    clock: _Clock,
    costs: OpCosts,
    *,
    overhead: TileOverhead,
    op_tiles: np.ndarray,
    one_instance: np.ndarray,
    op_energy: np.ndarray,
    timelines: tuple[np.ndarray, np.ndarray],
    moved: dict[str, np.ndarray],
    spent: dict[str, np.ndarray],
    fill: np.ndarray,
) -> pd.DataFrame:
    """The per-op table: one row per op and configuration. ``onchip_bytes`` and ``offchip_bytes`` are the memory
    timeline after the op; ``offchip_traffic_bytes`` and ``bus_traffic_bytes`` what the op itself moves off chip and
    over the bus; ``fill_cycles`` how long a fused member's first tile waits for the weights it holds. Its energy
    (``energy_pj``) is split as the summary's is, by where it is spent: ``energy_mac_pj``, ``energy_<memory>_pj`` for
    each memory (inside the core, the bytes crossing the core's boundary, the tiles' overhead), ``energy_bus_pj``,
    ``energy_offchip_pj`` (and ``energy_links_pj`` with point-to-point links). A MAC op's mapping records come from its
    core cost (``CoreOpCost``): the loop order and its choices, the PEs' ``utilization`` over its ``compute_cycles``
    and the ``spatial_variant`` of its core that unrolled it (-1 for other ops)."""
    n_cfg, n_ops = hw.n_configs, len(table)
    stack = clock.lanes.stack
    copies = {name: np.zeros_like(costs.copies_pj) for name in hw.memories}
    for k, core in enumerate(hw.cores):
        index = np.flatnonzero(static.core_of == k)
        for name, spent_there in _copies_where_spent(costs, core, index).items():
            copies[name][:, index] = spent_there
    by_place = {"energy_mac_pj": costs.mac_pj}
    by_place |= {
        f"energy_{name}_pj": costs.level_pj[name] + copies[name] + spent[name] + overhead.by_memory[name] for name in hw.memories
    }
    by_place |= {"energy_bus_pj": spent["bus"], "energy_offchip_pj": spent["offchip"]}
    if hw.links:
        by_place["energy_links_pj"] = spent["links"]
    return pd.DataFrame(
        {
            "config_id": np.repeat(hw.configs["config_id"].to_numpy(), n_ops),
            "op": np.tile(table.op, n_cfg),
            "kind": np.tile(table.kind, n_cfg),
            "phase": np.tile(table.phase, n_cfg),
            "core": np.tile([hw.cores[k].name for k in static.core_of], n_cfg),
            "start_cycles": stack(clock.start).ravel(),
            "end_cycles": stack(clock.end).ravel(),
            "latency_cycles": (costs.latency + overhead.cycles).ravel(),
            "tiles": op_tiles.astype(np.int64).ravel(),
            "fill_cycles": fill.ravel(),
            "one_instance": one_instance.ravel(),
            "halo_bytes": overhead.halo_bytes.ravel(),
            "reload_bytes": overhead.reload_bytes.ravel(),
            "energy_pj": op_energy.ravel(),
            **{name: energy.ravel() for name, energy in by_place.items()},
            "mapping": np.array(["", *MAPPINGS])[costs.mapping.ravel() + 1],
            **{name: getattr(costs, name).ravel() for name in _MAPPING_RECORDS if name != "mapping"},
            "onchip_bytes": timelines[0].ravel(),
            "offchip_bytes": timelines[1].ravel(),
            "offchip_traffic_bytes": moved["offchip"].ravel(),
            "bus_traffic_bytes": moved["bus"].ravel(),
            "link_traffic_bytes": moved["links"].ravel(),
        }
    )


class _Allocation:
    """Per op, where a MAC op split over every instance of its core takes one instead (the ``per_op`` allocation:
    where that scores no worse by the plan's objective, ``_Clock.prefers_one``)."""

    def __init__(
        self,
        lanes: Lanes,
        clock: _Clock,
        moves: _Moves,
        costs: OpCosts,
        *,
        overhead: TileOverhead,
        alone: TileOverhead | None,
        split: np.ndarray,
    ) -> None:
        self.lanes, self.clock, self.moves, self.split = lanes, clock, moves, split.tolist()
        self.one: list[Lane] = [False] * len(split)
        self.alone: tuple | None = None
        if costs.whole is not None and alone is not None:
            self.split_pj = lanes.columns(costs.energy + overhead.energy_pj)
            self.alone = (
                lanes.columns(costs.whole.latency + alone.cycles),
                lanes.columns(costs.whole.energy + alone.energy_pj),
            )
            moves.offer(costs, costs.whole)

    def latency(self, i: int, split_cycles: Lane, ready: Lane) -> Lane:
        """Op ``i``'s core-internal latency as allocated (its inputs ``ready`` then): ``split_cycles`` where it takes
        every instance."""
        if self.alone is None or not self.split[i]:
            return split_cycles
        cycles, energy = self.alone[0][i], self.alone[1][i]
        self.one[i] = one = self.clock.prefers_one(i, ready, (split_cycles, self.split_pj[i]), (cycles, energy))
        self.moves.choose(i, one)
        return self.lanes.where(one, cycles, split_cycles)


def _tiles(
    table: OpTable, hw: HardwareSpec, plan: SchedulePlan, static: _Static, split: np.ndarray, *, choosing: bool
) -> tuple[np.ndarray, np.ndarray, TileOverhead, TileOverhead | None]:
    """Where each fused group fits ((configurations, groups)), the tiles each op runs in ((configurations, ops)),
    and what the tiles add to the ops split as ``split`` says and, ``choosing`` between, on one instance each."""
    capacity = core_capacity_bytes(hw, resident_fraction=plan.resident_fraction)
    fits, group_tiles, group_row_tiles = static.tiling.choose(capacity)
    op_tiles, op_row_tiles = _per_op(group_tiles, static.group_of), _per_op(group_row_tiles, static.group_of)
    charged = op_tiles if plan.fusion_tiling == "stream" else np.ones_like(op_tiles)  # the rows rule adds nothing
    overhead = [
        TileOverhead.of(table, hw, core_of=static.core_of, split=parts, op_tiles=charged, op_row_tiles=op_row_tiles)
        for parts in ((split, np.zeros_like(split)) if choosing else (split,))
    ]
    return fits, op_tiles, overhead[0], overhead[1] if choosing else None


def _per_op(per_group: np.ndarray, group_of: np.ndarray) -> np.ndarray:
    """(configurations, ops): each fused op's value of its group in ``per_group`` ((configurations, groups)), 1
    for an op not fused."""
    values = np.ones((len(per_group), len(group_of)))
    fused = np.flatnonzero(group_of >= 0)
    values[:, fused] = per_group[:, group_of[fused]]
    return values


class _Moves:
    """The data each op moves: its inputs brought in, its outputs put where they live."""

    def __init__(
        self,
        table: OpTable,
        static: _Static,
        costs: OpCosts,
        *,
        memory: _Memory,
        traffic: _Traffic,
        lanes: Lanes,
        fused: list[Lane],
    ) -> None:
        self.inputs, self.outputs = table.inputs, table.outputs
        self.fused = fused  # per group: where it is fused (it fits)
        self.linked = static.linked  # per pool: (link, the pool at its other end)
        self.op, self.memory, self.traffic, self.lanes = static.op, memory, traffic, lanes
        self.in_w, self.in_i = lanes.columns(costs.in_w), lanes.columns(costs.in_i)
        self.psum, self.out = lanes.columns(costs.psum), lanes.columns(costs.out)
        self.alone: tuple | None = None

    def offer(self, costs: OpCosts, whole: OpCosts) -> None:
        """Let ``choose`` move an op's data as it runs on every instance of its core (``costs``' bytes) or on one
        (``whole``'s)."""
        names = ("in_w", "in_i", "psum", "out")
        self.alone = tuple(self.lanes.columns(getattr(whole, name)) for name in names)
        # the chosen bytes are written per op: lanes of copies, not views of the costs
        self.in_w, self.in_i, self.psum, self.out = (self.lanes.columns(getattr(costs, name).copy()) for name in names)

    def choose(self, i: int, one: Lane) -> None:
        """Op ``i`` moves the bytes of one instance of its core where ``one``, of every instance elsewhere."""
        where = self.lanes.where
        in_w, in_i, psum, out = self.alone
        self.in_w[i] = where(one, in_w[i], self.in_w[i])
        self.in_i[i] = where(one, in_i[i], self.in_i[i])
        self.psum[i] = where(one, psum[i], self.psum[i])
        self.out[i] = where(one, out[i], self.out[i])

    def move(self, i: int, tiles: Lane) -> tuple[Lane, Lane, dict[int, Lane], tuple[Lane, Lane, dict[int, Lane]]]:
        """Bring op ``i``'s inputs in and its outputs to where they live; record the bytes in the traffic and
        return the off-chip, bus and per-link bytes, and of them those of the weights it holds while fused."""
        (fetched, bus_b, weights_in, inputs_in), held, link_b = self._inputs(i, tiles)
        (written, back, bus_b, read_out) = self._outputs(i, tiles, bus_b)
        traffic = self.traffic
        traffic.offchip_read[i], traffic.offchip_write[i], traffic.bus[i] = fetched + back, written, bus_b
        boundary = traffic.boundary
        boundary["write", "W"][i], boundary["write", "I"][i] = weights_in, inputs_in
        boundary["write", "O"][i], boundary["read", "O"][i] = back, read_out
        for link, moved in link_b.items():
            traffic.links[link][i] = moved
        return fetched + back + written, bus_b, link_b, held

    def _inputs(
        self, i: int, tiles: Lane
    ) -> tuple[tuple[Lane, Lane, Lane, Lane], tuple[Lane, Lane, dict[int, Lane]], dict[int, Lane]]:
        """Bytes op ``i``'s inputs move off chip, over the bus and into its core (its weights, its other inputs), and
        the energy of reading them out of other cores' top memories (into the traffic's ``remote``); and of those
        bytes, off chip and over the bus, the weights it holds whole while its group is fused (its stationary operand,
        made outside the group: ``fusion_memory``'s fixed bytes), which its first tile waits for, off chip, over the
        bus and per link; and per point-to-point link the bytes read over it out of the top memory at its other end
        (which then cross no bus)."""
        op, memory, lanes = self.op, self.memory, self.lanes
        sizes, last_use = memory.sizes, op.last_use
        pool, group = op.pool[i], op.group[i]
        x, s = op.x_tensor[i], op.s_tensor[i]
        off_b = bus_b = held_off = held_bus = 0.0
        arrived: list[Lane] = [0.0, 0.0]  # bytes written into the core: the other inputs, the weights (``t == s``)
        link_b: dict[int, Lane] = {}
        held_link: dict[int, Lane] = {}
        linked = self.linked.get(pool, ())
        for t in self.inputs[i]:
            moved = self.in_i[i] if t == x else self.in_w[i] if t == s else sizes[t]
            if op.intermediate[t]:  # produced and consumed tile by tile on chip where the group is fused
                unfused = lanes.logical_not(self.fused[group])
                if not lanes.any(unfused):
                    continue
                moved = moved * unfused
            held = moved * self.fused[group] if t == s and group >= 0 and not op.intermediate[t] else 0.0
            if t not in memory.resident:  # off chip in every configuration: the general case below, shortened
                off_b = off_b + moved
                bus_b = bus_b + moved
                arrived[t == s] = arrived[t == s] + moved
                held_off = held_off + held
                held_bus = held_bus + held
                if last_use[t] > i:
                    memory.keep(t, pool, memory.fits(t, pool), sizes[t])
                continue
            where = memory.pool[t]
            away = where < 0
            over_bus = away | (where != pool)
            arrived[t == s] = arrived[t == s] + moved * over_bus
            on_bus = over_bus
            for link, other in linked:  # read out of the linked core's top memory: over the link, not the bus
                via = where == other
                if lanes.any(via):
                    link_b[link] = link_b.get(link, 0.0) + moved * via
                    held_link[link] = held_link.get(link, 0.0) + held * via
                    on_bus = on_bus & lanes.logical_not(via)
            off_b = off_b + moved * away
            bus_b = bus_b + moved * on_bus
            held_off = held_off + held * away
            held_bus = held_bus + held * on_bus
            remote = (where >= 0) & over_bus  # read out of another core's top memory
            if lanes.any(remote):
                source = lanes.maximum(where, 0)
                read_pj = moved * remote * _BITS * lanes.at(memory.read_pj_per_bit, source)
                lanes.add_at(self.traffic.remote(i), source, read_pj)
            if last_use[t] > i:  # keep a fetched copy for later readers if it fits
                memory.keep(t, pool, away & memory.fits(t, pool), sizes[t])
        return (off_b, bus_b, arrived[True], arrived[False]), (held_off, held_bus, held_link), link_b

    def _outputs(self, i: int, tiles: Lane, bus_b: Lane) -> tuple[Lane, Lane, Lane, Lane]:
        """Keep op ``i``'s outputs on chip where they fit, spill the rest: the bytes written off chip (outputs and
        partial sums), the partial sums read back from there, ``bus_b`` with both added, and the bytes read out of
        its core."""
        op, memory, lanes = self.op, self.memory, self.lanes
        sizes, pool, outputs = memory.sizes, op.pool[i], self.outputs[i]
        written = back = read_out = 0.0
        for t in outputs:
            placed = True  # where the output takes the ordinary path
            if op.intermediate[t]:  # its tile, double-buffered, on chip where the group is fused (whole if accumulated)
                fused = self.fused[op.group[i]]
                memory.keep(t, pool, fused, op.kept[i] * sizes[t] / tiles if op.kept[i] else sizes[t])
                placed = lanes.logical_not(fused)
                if not lanes.any(placed):
                    continue
            leaving = self.out[i] if len(outputs) == 1 else sizes[t]
            if op.last_use[t] > i:
                stays = memory.fits(t, pool) & placed
                memory.keep(t, pool, stays, sizes[t])
                spill = lanes.logical_not(stays) & placed
                memory.spill(t, spill)
            else:  # no later reader: nothing to keep; a step output leaves for off-chip memory as a spilled one does
                spill = placed if op.step_output[t] else False
            out = leaving * spill
            if op.step_output[t]:
                out = out + sizes[t] * lanes.logical_not(spill)  # kept for a later reader, and written through
            psum = self.psum[i] * spill
            written = written + out
            back = back + psum
            read_out = read_out + out
            bus_b = bus_b + out + psum
        return written, back, bus_b, read_out
