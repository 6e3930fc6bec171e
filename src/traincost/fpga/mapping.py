"""MTrain-Mapping (Algorithm 2): G*_model onto accelerators in three steps, each keeping DRAM within budget.

1. **DRAM budget aware mapping.** Repeatedly take the unmapped sub-operations whose predecessors are
   all mapped, enumerate every assignment of them to accelerators (one at a time when there are more
   than ``MAX_COMBINATIONS``), drop those that overflow an accelerator's DRAM (weights and states of
   the nodes it runs + outputs still awaited by an unmapped reader), and keep the one that lengthens
   the partial schedule least (ties: the earliest finishes).
2. **Balance aware re-mapping.** The balanced scheme puts branch ``i`` on accelerator ``i``; every
   sub-operation mapped elsewhere is moved there if that shortens the step; repeat until no move helps.
3. **Data locality aware re-mapping.** Every sub-operation is tried on the accelerators of its
   predecessors and successors; the best shortening move is kept; repeat until none helps.

Every accepted mapping is evaluated in full (``evaluate_mapping``) and must fit each DRAM.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from traincost.errors import ConfigError
from traincost.fpga.evaluator import Schedule, evaluate_mapping
from traincost.fpga.subops import SubOpGraph

__all__ = ["MappingResult", "mtrain_mapping", "MAX_COMBINATIONS"]

MAX_COMBINATIONS = 243
_MAX_PASSES = 20


@dataclass(frozen=True, slots=True)
class MappingResult:
    """The final assignment and the schedule after each step (``dram_aware``, ``balance``, ``locality``)."""

    assign: np.ndarray
    steps: dict[str, Schedule]

    @property
    def schedule(self) -> Schedule:
        return self.steps["locality"]


@dataclass
class _Mapper:
    graph: SubOpGraph
    capacity: np.ndarray
    bandwidth: float
    names: tuple[str, ...]

    def schedule(self, assign: np.ndarray) -> Schedule:
        return evaluate_mapping(self.graph, assign, bandwidth_bytes_per_s=self.bandwidth)

    def better(self, assign: np.ndarray, current: Schedule) -> Schedule | None:
        """The schedule of ``assign`` if it is shorter than ``current`` and fits every DRAM."""
        quick = evaluate_mapping(self.graph, assign, bandwidth_bytes_per_s=self.bandwidth, dram=False)
        if quick.latency_s >= current.latency_s * (1 - 1e-12):
            return None
        full = self.schedule(assign)
        return full if full.fits(self.capacity) else None

    def dram_aware(self) -> np.ndarray:
        graph, n_acc = self.graph, len(self.capacity)
        assign = np.full(len(graph), -1)
        free, end = np.zeros(n_acc), np.zeros(len(graph))
        resident = [set() for _ in range(n_acc)]  # DAG nodes whose states an accelerator holds
        usage = np.zeros(n_acc)
        waiting = [len(s) for s in graph.succs]  # unmapped readers of each sub-operation's outputs
        unmapped_preds = [len(p) for p in graph.preds]
        wave = [k for k in range(len(graph)) if unmapped_preds[k] == 0]
        while wave:
            if n_acc ** len(wave) > MAX_COMBINATIONS:
                wave = wave[:1]
            best = None
            for combo in itertools.product(range(n_acc), repeat=len(wave)):
                trial_free, trial_usage = free.copy(), usage.copy()
                trial_resident = [set(r) for r in resident]
                ends = []
                for k, d in zip(wave, combo, strict=True):
                    ready = max((end[p] for p, _ in graph.preds[k]), default=0.0)
                    comm = sum(b for p, b in graph.preds[k] if assign[p] != d) / self.bandwidth
                    trial_free[d] = max(trial_free[d], ready) + comm + graph.seconds[k, d]
                    ends.append(trial_free[d])
                    if graph.node[k] not in trial_resident[d]:
                        trial_resident[d].add(graph.node[k])
                        trial_usage[d] += graph.state_bytes[k]
                    trial_usage[d] += graph.out_bytes[k]
                if np.any(trial_usage > self.capacity):
                    continue
                key = (max(*ends, float(end.max(initial=0.0))), sum(ends))
                if best is None or key < best[0]:
                    best = (key, combo, trial_free, trial_usage, trial_resident, ends)
            if best is None:
                k = wave[0]
                d = int(np.argmax(self.capacity - usage))
                need = usage[d] + graph.out_bytes[k] + graph.state_bytes[k] - self.capacity[d]
                raise ConfigError(
                    f"the cluster's DRAM cannot hold the training step: sub-operation {k} (DAG node {graph.node[k]}) "
                    f"overflows every accelerator; the emptiest, {self.names[d]}, is {need / 2**20:.1f} MiB short"
                )
            _, combo, free, usage, resident, ends = best
            for k, d, e in zip(wave, combo, ends, strict=True):
                assign[k], end[k] = d, e
                for p, _ in graph.preds[k]:
                    waiting[p] -= 1
                    if waiting[p] == 0:  # every reader mapped: its outputs can go once they are read
                        usage[assign[p]] -= graph.out_bytes[p]
                for s in graph.succs[k]:
                    unmapped_preds[s] -= 1
            wave = [k for k in range(len(graph)) if assign[k] < 0 and unmapped_preds[k] == 0]
        return assign

    def balance(self, assign: np.ndarray, current: Schedule) -> tuple[np.ndarray, Schedule]:
        balanced = np.where(self.graph.branch >= 0, self.graph.branch, assign)
        for _ in range(_MAX_PASSES):
            moved = False
            for k in np.flatnonzero(assign != balanced):
                trial = assign.copy()
                trial[k] = balanced[k]
                schedule = self.better(trial, current)
                if schedule is not None:
                    assign, current, moved = trial, schedule, True
            if not moved:
                break
        return assign, current

    def locality(self, assign: np.ndarray, current: Schedule) -> tuple[np.ndarray, Schedule]:
        graph = self.graph
        for _ in range(_MAX_PASSES):
            moved = False
            for k in range(len(graph)):
                near = {assign[p] for p, _ in graph.preds[k]} | {assign[s] for s in graph.succs[k]}
                best = None
                for d in sorted(near - {assign[k]}):
                    trial = assign.copy()
                    trial[k] = d
                    schedule = self.better(trial, current if best is None else best[1])
                    if schedule is not None:
                        best = (trial, schedule)
                if best is not None:
                    (assign, current), moved = best, True
            if not moved:
                break
        return assign, current


def mtrain_mapping(
    graph: SubOpGraph, *, capacity_bytes: np.ndarray, bandwidth_bytes_per_s: float, names: tuple[str, ...]
) -> MappingResult:
    """Algorithm 2 on ``graph``: the mapping and the schedule after each of its three steps.

    Raises:
        ConfigError: the accelerators' DRAM cannot hold the step (the message names the accelerator and the shortfall).
    """
    mapper = _Mapper(graph, np.asarray(capacity_bytes, dtype=np.float64), bandwidth_bytes_per_s, names)
    assign = mapper.dram_aware()
    first = mapper.schedule(assign)
    if not first.fits(mapper.capacity):
        d = int(np.argmax(first.peak_dram_bytes - mapper.capacity))
        short = first.peak_dram_bytes[d] - mapper.capacity[d]
        raise ConfigError(f"the cluster's DRAM cannot hold the training step: {names[d]} is {short / 2**20:.1f} MiB short")
    assign, balanced = mapper.balance(assign, first)
    assign, local = mapper.locality(assign, balanced)
    return MappingResult(assign=assign, steps={"dram_aware": first, "balance": balanced, "locality": local})
