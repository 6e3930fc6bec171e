"""Stream-style scheduling of a workload on an HDA, vectorised over hardware configurations.

Ops are visited once, in program order (a topological order), and for every configuration at once:

1. **Placement.** Each op goes to the core that runs its kind. With tensor parallelism a MAC op is
   split over output channels across all instances of its core; otherwise it takes the instance
   that frees up first.
2. **Data.** Each input comes from the core's own top memory if it is resident there (free), from
   another core over the bus, or from off-chip memory over the bus. Outputs stay in the producing
   core's top memory while they fit in its resident share; what does not fit spills off chip (and
   its partial sums with it). A tensor read from off chip stays cached if it fits and is read
   again. Updated parameters, optimizer states and the loss are always written off chip.
   A tensor leaves memory after its last reader. Every byte that crosses a core's boundary is charged
   here, once: written into the top memory it arrives in, read out of the top memory it leaves (another
   core's, for a resident tensor sent over the bus); the per-op core cost charges only what moves inside.
3. **Time.** An op starts when its inputs are ready and its core is free (in layer-by-layer mode,
   when the previous op has finished). Its duration is the longest of its core-internal latency,
   its off-chip bytes over the off-chip bandwidth and its bus bytes over the bus bandwidth. Inside
   a fused group a consumer starts on its producer's first tile (rows / tiles) and ends no earlier
   than one tile after it; intermediates of the group never leave the chip, and the group's weights
   are fetched once per tile if they do not fit on chip. ``fusion_fits`` says per configuration
   whether every group fits the one memory model of fusion (:mod:`traincost.schedule.fusion_memory`,
   which the fusion solver also admits groups by); a group that does not fit is still costed, and
   reported so.
4. **Totals.** Latency = max(last op end, all off-chip bytes / off-chip bandwidth, all bus bytes /
   bus bandwidth); energy = MACs + every memory level + bus + off-chip (each a column); the memory timeline keeps
   the peak of resident on-chip bytes and of live off-chip bytes.

Per-configuration numpy arrays, a Python loop over ops only: the work per op is a few vector
operations of length = configurations (processed in chunks to bound memory).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from traincost.cost.core_cost import MAPPINGS, ExternalPath, mac_cost, simd_cost
from traincost.cost.optable import MAC_KINDS, OpTable, flat_ids
from traincost.hardware.load import HardwareError
from traincost.hardware.spec import HardwareSpec
from traincost.schedule.fusion_memory import groups_fit
from traincost.schedule.plan import SchedulePlan

__all__ = ["schedule", "StepCost", "place_ops"]

_BITS = 8.0
_CHUNK = 512


@dataclass(frozen=True, slots=True)
class StepCost:
    """Cost of one step per configuration (``summary``) and, on request, per op (``ops``): start and end
    cycles, latency, energy, and the memory timeline (resident on-chip bytes and live off-chip bytes
    after each op)."""

    summary: pd.DataFrame
    ops: pd.DataFrame | None


def schedule(table: OpTable, hardware: HardwareSpec, plan: SchedulePlan, *, per_op: bool = False) -> StepCost:
    """Latency, energy and memory of ``table`` on every configuration of ``hardware``.

    Args:
        table: the workload (all phases for training, forward only for inference).
        hardware: the accelerator template at its configurations.
        plan: parallelism and fusion choices.
        per_op: also return start, end and energy of every op (one row per op and configuration).

    Raises:
        HardwareError: an op kind that no core runs.
    """
    core_of = place_ops(table, hardware)
    context = _Static.build(table, hardware, plan, core_of)
    summaries, details = [], []
    for start in range(0, hardware.n_configs, _CHUNK):
        chunk = hardware.take(slice(start, start + _CHUNK))
        summary, detail = _run(table, chunk, plan, context, per_op=per_op)
        summaries.append(summary)
        if detail is not None:
            details.append(detail)
    return StepCost(
        summary=pd.concat(summaries, ignore_index=True), ops=pd.concat(details, ignore_index=True) if per_op else None
    )


def place_ops(table: OpTable, hardware: HardwareSpec) -> np.ndarray:
    """Per op: the index of the core that runs its kind.

    Raises:
        HardwareError: an op kind that no core runs.
    """
    core_of = np.empty(len(table), dtype=np.int64)
    for kind in np.unique(table.kind):
        core = hardware.core_for(kind)
        if core is None:
            first = int(table.op[np.flatnonzero(table.kind == kind)[0]])
            raise HardwareError(
                f"{hardware.source}: no core runs op kind {kind!r} (first at Workload op {first}); add it to a core's runs"
            )
        core_of[table.kind == kind] = core
    return core_of


@dataclass(frozen=True, slots=True)
class _Static:
    """What does not depend on the configuration: placement, pools, producers, fusion."""

    core_of: np.ndarray
    pool_of_core: tuple[int, ...]
    pool_memory: dict[int, str]  # per pool: the name of the memory it is
    producer: np.ndarray  # per tensor: table index of the op that makes it, -1 for graph inputs
    group_of: np.ndarray  # per op: fused group index or -1
    tiles_of_group: np.ndarray
    intermediate: np.ndarray  # per tensor: made and read only inside one fused group
    group_weight_bytes: np.ndarray  # per group: stationary operand bytes of its MAC ops

    @classmethod
    def build(cls, table: OpTable, hardware: HardwareSpec, plan: SchedulePlan, core_of: np.ndarray) -> _Static:
        pools: dict[tuple[str, object], int] = {}
        pool_of_core = []
        for index, core in enumerate(hardware.cores):
            key = ("shared", core.top.name) if core.top.shared else ("core", index)
            pool_of_core.append(pools.setdefault(key, len(pools)))
        n_tensors = len(table.tensor_elems)
        producer = table.producers()
        position = {int(op): i for i, op in enumerate(table.op)}
        group_of = np.full(len(table), -1, dtype=np.int64)
        for g, group in enumerate(plan.fused):
            for op in group:
                if op in position:  # view ops and other-phase ops are not scheduled
                    group_of[position[op]] = g
        unset = np.iinfo(np.int64).max
        tiles = np.full(len(plan.fused), unset, dtype=np.int64)
        weights = np.zeros(len(plan.fused))
        fused_macs = np.flatnonzero((group_of >= 0) & table.is_mac)
        np.minimum.at(tiles, group_of[fused_macs], np.maximum(1, table.dims["OY"][fused_macs]))
        tiles[tiles == unset] = 1  # a group without MAC ops
        np.add.at(weights, group_of[fused_macs], table.s_elems[fused_macs] * hardware.word_bytes)
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
            producer=producer,
            group_of=group_of,
            tiles_of_group=tiles,
            intermediate=intermediate,
            group_weight_bytes=weights,
        )


class _OpCosts:
    """Core-internal cost of every op at the configurations of one chunk, in (configs, ops) arrays."""

    def __init__(self, table: OpTable, hardware: HardwareSpec, plan: SchedulePlan, static: _Static) -> None:
        shape = (hardware.n_configs, len(table))
        self.latency = np.zeros(shape)
        self.energy = np.zeros(shape)
        self.in_w = np.zeros(shape)
        self.in_i = np.zeros(shape)
        self.psum = np.zeros(shape)
        self.out = np.zeros(shape)
        self.busy_pe_cycles = np.zeros(shape)
        self.mapping = np.full(shape, -1)
        self.reduction_levels = np.full(shape, -1)
        self.level_energy: dict[str, np.ndarray] = {}
        self.mac_energy = np.zeros(hardware.n_configs)
        mac = table.is_mac
        for k, core in enumerate(hardware.cores):
            on_core = static.core_of == k
            for index, is_mac in ((np.flatnonzero(on_core & mac), True), (np.flatnonzero(on_core & ~mac), False)):
                if not len(index):
                    continue
                copies = np.zeros((hardware.n_configs, len(index)))
                if is_mac:
                    split = core.count if plan.tensor_parallel else np.ones_like(core.count)
                    cost = mac_cost(
                        core,
                        table,
                        index,
                        split=split,
                        external=ExternalPath.of(hardware, core),
                        objective=plan.mapping_objective,
                    )
                    self.mapping[:, index] = cost.mapping
                    self.reduction_levels[:, index] = cost.reduction_levels
                    # the work is charged once: K < cores leaves cores idle, and an uneven split leaves the
                    # last core a smaller share (one core's cost times the shares the op fills)
                    shares = cost.core_shares
                    self.in_w[:, index] = cost.ext_in_bytes.get("W", 0) * shares
                    # the streamed operand is multicast: fetched once, written into every busy core's top memory
                    self.in_i[:, index] = cost.ext_in_bytes.get("I", 0)
                    copies = self.in_i[:, index] * (np.ceil(shares) - 1) * _BITS * core.top.write_energy_pj_per_bit[:, None]
                    self.psum[:, index] = cost.ext_in_bytes.get("O", 0) * shares
                else:
                    cost = simd_cost(core, table, index)
                    shares = cost.core_shares
                self.out[:, index] = cost.ext_write_bytes * shares
                self.latency[:, index] = cost.latency_cycles
                internal = cost.energy_mac_pj.copy()
                for name, energy in cost.energy_level_pj.items():
                    internal += energy
                    self.level_energy[name] = self.level_energy.get(name, 0) + (energy * shares).sum(axis=1)
                self.energy[:, index] = internal * shares + copies
                self.level_energy[core.top.name] = self.level_energy.get(core.top.name, 0) + np.sum(copies, axis=1)
                self.mac_energy += (cost.energy_mac_pj * shares).sum(axis=1)


class _Memory:
    """Where every tensor lives, per configuration: a core pool's top memory or off chip."""

    def __init__(self, table: OpTable, hw: HardwareSpec, plan: SchedulePlan, static: _Static) -> None:
        n_cfg = hw.n_configs
        self.table = table
        self.rows = np.arange(n_cfg)
        self.sizes = table.tensor_elems.astype(np.float64) * hw.word_bytes
        n_pools = max(static.pool_of_core) + 1
        self.budget = np.zeros((n_cfg, n_pools))
        for k, core in enumerate(hw.cores):
            instances = 1.0 if core.top.shared else core.count
            pool = static.pool_of_core[k]
            self.budget[:, pool] = np.maximum(self.budget[:, pool], core.top.size_bytes * instances * plan.resident_fraction)
        self.pool = np.full((n_cfg, len(self.sizes)), -1, dtype=np.int16)  # -1 = off chip
        self.held = np.zeros((n_cfg, len(self.sizes)), dtype=np.float32)  # on-chip bytes a tensor occupies
        self.spilled = np.zeros((n_cfg, len(self.sizes)), dtype=np.float32)  # off-chip bytes of a live temporary
        self.occupancy = np.zeros((n_cfg, n_pools))
        self.read_pj_per_bit = np.zeros((n_cfg, n_pools))  # reading a resident tensor out of a pool for another core
        for k, core in enumerate(hw.cores):
            self.read_pj_per_bit[:, static.pool_of_core[k]] = core.top.read_energy_pj_per_bit
        self.offchip_live = np.zeros(n_cfg)
        self.persistent_bytes = float(self.sizes[table.tensor_persistent].sum())
        self.peak_onchip = np.zeros(n_cfg)
        self.peak_offchip = np.full(n_cfg, self.persistent_bytes)
        # tensors resident somewhere, and temporaries spilled somewhere: the only ones release has work for
        self.resident: set[int] = set()
        self.offchip: set[int] = set()

    def keep(self, t: int, pool: int, mask: np.ndarray, nbytes: float) -> None:
        """Make ``t`` resident in ``pool`` where ``mask``, occupying ``nbytes``."""
        if not mask.any():
            return
        self.resident.add(t)
        self.pool[mask, t] = pool
        self.held[mask, t] = nbytes
        self.occupancy[mask, pool] += nbytes

    def fits(self, t: int, pool: int) -> np.ndarray:
        return self.occupancy[:, pool] + self.sizes[t] <= self.budget[:, pool]

    def spill(self, t: int, mask: np.ndarray) -> None:
        if not self.table.tensor_persistent[t] and mask.any():
            self.offchip.add(t)
            self.spilled[mask, t] = self.sizes[t]
            self.offchip_live += self.sizes[t] * mask

    def release(self, t: int) -> None:
        if t in self.resident:
            self.resident.discard(t)
            # held is 0 where the tensor is off chip, so pool 0 takes nothing there
            self.occupancy[self.rows, np.maximum(self.pool[:, t], 0)] -= self.held[:, t]
            self.pool[:, t] = -1
            self.held[:, t] = 0
        if t in self.offchip:
            self.offchip.discard(t)
            self.offchip_live -= self.spilled[:, t]
            self.spilled[:, t] = 0

    def record_peaks(self) -> None:
        self.peak_onchip = np.maximum(self.peak_onchip, self.occupancy.sum(axis=1))
        self.peak_offchip = np.maximum(self.peak_offchip, self.persistent_bytes + self.offchip_live)


class _Traffic:
    """Bytes each op moves, per configuration: off chip, over the bus, read from and written to its core's top
    memory; and the energy of reading its inputs out of other cores' top memories."""

    def __init__(self, n_cfg: int, n_ops: int, n_pools: int) -> None:
        self.offchip, self.bus, self.top_read, self.top_write = (np.zeros((n_cfg, n_ops)) for _ in range(4))
        self.remote_read_pj = np.zeros((n_cfg, n_ops))
        self.remote_read_pj_by_pool = np.zeros((n_cfg, n_pools))

    def energy(self, hw: HardwareSpec, static: _Static) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """Per op the energy of its data movement (pJ), and per place (offchip, bus, each memory) its total."""
        core_of = static.core_of
        offchip = self.offchip * (_BITS * hw.offchip.energy_pj_per_bit)[:, None]
        bus = self.bus * (_BITS * hw.bus.energy_pj_per_bit)[:, None]
        read = np.stack([c.top.read_energy_pj_per_bit for c in hw.cores], axis=1)[:, core_of]
        write = np.stack([c.top.write_energy_pj_per_bit for c in hw.cores], axis=1)[:, core_of]
        top = _BITS * (self.top_read * read + self.top_write * write)
        totals = {"offchip": offchip.sum(axis=1), "bus": bus.sum(axis=1)} | {name: np.zeros(len(offchip)) for name in hw.memories}
        for k, core in enumerate(hw.cores):
            totals[core.top.name] = totals[core.top.name] + top[:, core_of == k].sum(axis=1)
        for pool, name in static.pool_memory.items():
            totals[name] = totals[name] + self.remote_read_pj_by_pool[:, pool]
        return offchip + bus + top + self.remote_read_pj, totals


class _Clock:
    """When each core instance is free and when each op ends, per configuration."""

    def __init__(self, table: OpTable, hw: HardwareSpec, plan: SchedulePlan, static: _Static) -> None:
        n_cfg = hw.n_configs
        self.table, self.plan, self.static = table, plan, static
        self.rows = np.arange(n_cfg)
        self.free = [np.where(np.arange(int(c.count.max()))[None, :] < c.count[:, None], 0.0, np.inf) for c in hw.cores]
        self.start = np.zeros((n_cfg, len(table)))
        self.end = np.zeros((n_cfg, len(table)))
        self.first_tile = np.zeros((n_cfg, len(table)))
        self.last = np.zeros(n_cfg)

    def run(self, i: int, duration: np.ndarray, tiles: int) -> None:
        """Place op ``i`` of ``duration`` cycles on its core, after its inputs and (layer by layer) the previous op."""
        static, table = self.static, self.table
        group = int(static.group_of[i])
        ready = 0.0 if self.plan.pipeline else self.last
        fused_producers = []
        for t in table.inputs[i]:
            p = int(static.producer[t])
            if p >= 0 and group >= 0 and static.group_of[p] == group:
                ready = np.maximum(ready, self.first_tile[:, p])
                fused_producers.append(p)
            elif p >= 0:
                ready = np.maximum(ready, self.end[:, p])
        k = int(static.core_of[i])
        slots = self.free[k]
        split = self.plan.tensor_parallel and table.kind[i] in MAC_KINDS
        if split:
            start = np.maximum(ready, np.where(np.isfinite(slots), slots, -np.inf).max(axis=1))
        else:
            pick = slots.argmin(axis=1)
            start = np.maximum(ready, slots[self.rows, pick])
        finish = start + duration
        for p in fused_producers:
            finish = np.maximum(finish, self.end[:, p] + duration / tiles)
        if split:
            self.free[k] = np.where(np.isfinite(slots), finish[:, None], np.inf)
        else:
            slots[self.rows, pick] = finish
        self.start[:, i], self.end[:, i] = start, finish
        self.first_tile[:, i] = start + duration / tiles
        self.last = np.maximum(self.last, finish)


def _run(
    table: OpTable, hw: HardwareSpec, plan: SchedulePlan, static: _Static, *, per_op: bool
) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    n_cfg = hw.n_configs
    costs = _OpCosts(table, hw, plan, static)
    memory = _Memory(table, hw, plan, static)
    clock = _Clock(table, hw, plan, static)
    traffic = _Traffic(n_cfg, len(table), memory.budget.shape[1])
    onchip_timeline = np.zeros((n_cfg, len(table))) if per_op else None
    offchip_timeline = np.zeros((n_cfg, len(table))) if per_op else None
    for i in range(len(table)):
        group = int(static.group_of[i])
        tiles = int(static.tiles_of_group[group]) if group >= 0 else 1
        off_b, bus_b = _move_data(table, i, hw=hw, static=static, costs=costs, memory=memory, tiles=tiles, traffic=traffic)
        bandwidth_cycles = np.maximum(off_b / hw.offchip.bandwidth_bytes_per_cycle, bus_b / hw.bus.bandwidth_bytes_per_cycle)
        clock.run(i, np.maximum(costs.latency[:, i], bandwidth_cycles), tiles)
        memory.record_peaks()
        if onchip_timeline is not None:
            onchip_timeline[:, i] = memory.occupancy.sum(axis=1)
            offchip_timeline[:, i] = memory.persistent_bytes + memory.offchip_live
        for t in [t for t in table.inputs[i] if table.last_use[t] == i] + [t for t in table.outputs[i] if table.last_use[t] < i]:
            memory.release(t)

    offchip_bytes, bus_bytes = traffic.offchip.sum(axis=1), traffic.bus.sum(axis=1)
    energy_ext, moved_pj = traffic.energy(hw, static)
    latency = np.maximum(
        clock.last,
        np.maximum(offchip_bytes / hw.offchip.bandwidth_bytes_per_cycle, bus_bytes / hw.bus.bandwidth_bytes_per_cycle),
    )
    op_energy = costs.energy + energy_ext
    mac_pes = sum(core.pes * core.count for core in hw.cores if set(core.runs) & set(MAC_KINDS))
    columns = {"latency_cycles": latency, "energy_pj": op_energy.sum(axis=1), "energy_mac_pj": costs.mac_energy}
    for name in hw.memories:
        columns[f"energy_{name}_pj"] = costs.level_energy.get(name, np.zeros(n_cfg)) + moved_pj[name]
    columns |= {"energy_bus_pj": moved_pj["bus"], "energy_offchip_pj": moved_pj["offchip"]}
    for phase in np.unique(table.phase):
        columns[f"energy_{phase}_pj"] = op_energy[:, table.phase == phase].sum(axis=1)
    columns |= {
        "offchip_bytes": offchip_bytes,
        "bus_bytes": bus_bytes,
        "peak_onchip_bytes": memory.peak_onchip,
        "peak_offchip_bytes": memory.peak_offchip,
        "mac_pes": mac_pes,
        "utilization": table.macs.sum() / (latency * mac_pes),
        "fusion_fits": groups_fit(table, hw, static.core_of, static.group_of, resident_fraction=plan.resident_fraction),
    }
    summary = pd.concat([hw.configs, pd.DataFrame(columns, index=hw.configs.index)], axis=1)
    if not per_op:
        return summary, None
    n_ops = len(table)
    detail = pd.DataFrame(
        {
            "config_id": np.repeat(hw.configs["config_id"].to_numpy(), n_ops),
            "op": np.tile(table.op, n_cfg),
            "kind": np.tile(table.kind, n_cfg),
            "phase": np.tile(table.phase, n_cfg),
            "core": np.tile([hw.cores[k].name for k in static.core_of], n_cfg),
            "start_cycles": clock.start.ravel(),
            "end_cycles": clock.end.ravel(),
            "latency_cycles": costs.latency.ravel(),
            "energy_pj": op_energy.ravel(),
            "mapping": np.array(["", *MAPPINGS])[costs.mapping.ravel() + 1],
            "reduction_levels": costs.reduction_levels.ravel(),
            "onchip_bytes": onchip_timeline.ravel(),
            "offchip_bytes": offchip_timeline.ravel(),
        }
    )
    return summary, detail


def _move_data(
    table: OpTable, i: int, *, hw: HardwareSpec, static: _Static, costs: _OpCosts, memory: _Memory, tiles: int, traffic: _Traffic
) -> tuple[np.ndarray, np.ndarray]:
    """Bring op ``i``'s inputs in and its outputs to where they live; record the bytes in ``traffic`` and
    return the off-chip and bus bytes."""
    n_cfg = len(memory.rows)
    k = int(static.core_of[i])
    pool, group = static.pool_of_core[k], int(static.group_of[i])
    off_b, bus_b, top_r, top_w = np.zeros(n_cfg), np.zeros(n_cfg), np.zeros(n_cfg), np.zeros(n_cfg)
    for t, fetched in _input_traffic(table, i, costs, memory.sizes, n_cfg):
        if static.intermediate[t]:
            continue  # a fused intermediate is produced and consumed tile by tile on chip
        moved = fetched
        if group >= 0 and t == table.s_tensor[i] and table.tensor_persistent[t]:
            moved = fetched * np.where(static.group_weight_bytes[group] > memory.budget[:, pool], tiles, 1)
        if t not in memory.resident:  # off chip in every configuration: the general case below, shortened
            off_b += moved
            bus_b += moved
            top_w += moved
            if table.last_use[t] > i:
                memory.keep(t, pool, memory.fits(t, pool), memory.sizes[t])
            continue
        where = memory.pool[:, t]
        away = where < 0
        over_bus = away | (where != pool)
        off_b += moved * away
        bus_b += moved * over_bus
        top_w += moved * over_bus
        remote = ~away & over_bus  # read out of another core's top memory
        if remote.any():
            source = np.maximum(where, 0)
            read_pj = moved * remote * _BITS * memory.read_pj_per_bit[memory.rows, source]
            traffic.remote_read_pj[:, i] += read_pj
            traffic.remote_read_pj_by_pool[memory.rows, source] += read_pj
        if table.last_use[t] > i:  # keep a fetched copy for later readers if it fits
            memory.keep(t, pool, away & memory.fits(t, pool), memory.sizes[t])
    for t in table.outputs[i]:
        if static.intermediate[t]:
            memory.keep(t, pool, np.ones(n_cfg, dtype=bool), memory.sizes[t] / tiles)
            continue
        written = costs.out[:, i] if len(table.outputs[i]) == 1 else np.full(n_cfg, memory.sizes[t])
        if table.last_use[t] > i:
            stays = memory.fits(t, pool)
            memory.keep(t, pool, stays, memory.sizes[t])
            spill = ~stays
            memory.spill(t, spill)
        else:  # no later reader: nothing to keep (a step output is still written through)
            spill = np.zeros(n_cfg, dtype=bool)
        moved = (written + costs.psum[:, i]) * spill
        if table.tensor_step_output[t]:
            moved = moved + memory.sizes[t] * ~spill  # written through to off-chip memory
        off_b += moved
        bus_b += moved
        top_r += moved
    traffic.offchip[:, i], traffic.bus[:, i], traffic.top_read[:, i], traffic.top_write[:, i] = off_b, bus_b, top_r, top_w
    return off_b, bus_b


def _input_traffic(table: OpTable, i: int, costs: _OpCosts, sizes: np.ndarray, n_cfg: int) -> Iterable[tuple[int, np.ndarray]]:
    """(tensor, bytes moved into the core) for each input of op ``i``."""
    x, s = int(table.x_tensor[i]), int(table.s_tensor[i])
    for t in table.inputs[i]:
        if t == x:
            yield t, costs.in_i[:, i]
        elif t == s:
            yield t, costs.in_w[:, i]
        else:
            yield t, np.full(n_cfg, sizes[t])
