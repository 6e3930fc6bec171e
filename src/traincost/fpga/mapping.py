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

Every accepted mapping has its full list schedule (``evaluate_mapping``'s, bit for bit) and must fit each DRAM.
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass

import numpy as np

from traincost.errors import DramError
from traincost.fpga.evaluator import Schedule
from traincost.fpga.replanner import Move, Replanner
from traincost.fpga.subops import SubOpGraph

__all__ = ["MappingResult", "mtrain_mapping", "MAX_COMBINATIONS"]

MAX_COMBINATIONS = 243
FEW_COMBINATIONS = 9  # waves with at most this many assignments are weighed in plain Python (faster there)


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

    @functools.cached_property
    def _capacity(self) -> list[float]:
        return self.capacity.tolist()

    def better(self, plan: Replanner, k: int, device: int, beat_s: float) -> Move | None:
        """Sub-operation ``k`` moved to ``device`` if that is shorter than ``beat_s`` and fits every DRAM."""
        # strictly shorter, so re-mapping can never cycle
        move = plan.try_move(k, device, beat_s * (1 - 1e-12))
        return move if move is not None and plan.fits(move, self.capacity) else None

    def dram_aware(self) -> np.ndarray:
        graph, n_acc = self.graph, len(self.capacity)
        seconds, node = graph.seconds.tolist(), graph.node.tolist()
        out_bytes = graph.out_bytes.tolist()
        assign = [-1] * len(graph)
        free, end = [0.0] * n_acc, [0.0] * len(graph)
        resident = [set() for _ in range(n_acc)]  # DAG nodes whose states an accelerator holds
        usage = [0.0] * n_acc
        waiting = [len(s) for s in graph.succs]  # unmapped readers of each sub-operation's outputs
        unmapped_preds = [len(p) for p in graph.preds]
        ready = [k for k in range(len(graph)) if unmapped_preds[k] == 0]
        latest = 0.0
        while ready:
            wave = ready.copy() if n_acc ** len(ready) <= MAX_COMBINATIONS else ready[:1]
            # per wave member and accelerator: when it could start (its inputs are all made) and its
            # duration there (receiving the inputs made elsewhere, then computing)
            timing = [
                (
                    max((end[p] for p, _ in graph.preds[k]), default=0.0),
                    [sum(b for p, b in graph.preds[k] if assign[p] != d) / self.bandwidth + seconds[k][d] for d in range(n_acc)],
                )
                for k in wave
            ]
            progress = (free, usage, resident, latest)
            few = n_acc ** len(wave) <= FEW_COMBINATIONS
            best = (self._best_few if few else self._best_combo)(wave, timing, progress)
            if best is None:
                k = wave[0]
                d = int(np.argmax(self.capacity - np.array(usage)))
                need = usage[d] + graph.out_bytes[k] + graph.state_bytes[k] - self.capacity[d]
                raise DramError(
                    f"the cluster's DRAM cannot hold the training step: sub-operation {k} (DAG node {node[k]}) "
                    f"overflows every accelerator; the emptiest, {self.names[d]}, is {need / 2**20:.1f} MiB short"
                )
            (latest, _), combo, free, usage, placed, ends = best
            for d, n in placed:
                resident[d].add(n)
            for k, d, e in zip(wave, combo, ends, strict=True):
                assign[k], end[k] = d, e
                for p, _ in graph.preds[k]:
                    waiting[p] -= 1
                    if waiting[p] == 0:  # every reader mapped: its outputs can go once they are read
                        usage[assign[p]] -= out_bytes[p]
                for s in graph.succs[k]:
                    unmapped_preds[s] -= 1
                    if unmapped_preds[s] == 0:
                        ready.append(s)
            mapped = set(wave)
            ready = sorted(k for k in ready if k not in mapped)
        return np.array(assign)

    def _best_few(self, wave: list[int], timing: list[tuple[float, list[float]]], progress: tuple) -> tuple | None:
        """``_best_combo`` assignment by assignment in plain Python (the same sums in the same order): faster
        when the assignments are few."""
        graph, capacity = self.graph, self._capacity
        free, usage, resident, latest = progress
        nodes = [int(graph.node[k]) for k in wave]
        states, outs = graph.state_bytes[wave].tolist(), graph.out_bytes[wave].tolist()
        best = None
        for combo in itertools.product(range(len(capacity)), repeat=len(wave)):
            trial_free, used, ends = free.copy(), usage.copy(), []
            for i, d in enumerate(combo):
                start, durations = timing[i]
                end = trial_free[d] = max(trial_free[d], start) + durations[d]
                ends.append(end)
                new_copy = nodes[i] not in resident[d] and not any(nodes[j] == nodes[i] and combo[j] == d for j in range(i))
                used[d] = used[d] + (states[i] if new_copy else 0.0) + outs[i]
            if any(u > c for u, c in zip(used, capacity, strict=True)):
                continue
            summed = ends[0]
            for end in ends[1:]:  # added in order, as _best_combo does
                summed += end
            key = (max(*ends, latest), summed)
            if best is None or key < best[0]:
                best = (key, combo, trial_free, used, ends)
        if best is None:
            return None
        key, combo, trial_free, used, ends = best
        placed = {(d, n) for n, d in zip(nodes, combo, strict=True) if n not in resident[d]}
        return key, combo, trial_free, used, placed, ends

    def _best_combo(self, wave: list[int], timing: list[tuple[float, list[float]]], progress: tuple) -> tuple | None:
        """The assignment of ``wave`` to accelerators that fits every DRAM and finishes first (then: the
        least summed finish time; then: the first in ``itertools.product`` order), with the free times,
        DRAM usage and placed states it leads to. Every assignment is timed at once, one array row each.

        ``timing``: per wave member, its earliest start and its duration on each accelerator;
        ``progress``: the accelerators' free times, DRAM usage and resident DAG nodes, and the latest finish.
        """
        graph, n_acc = self.graph, len(self.capacity)
        free, usage, resident, latest = progress
        combos, cells = _combinations(n_acc, len(wave))
        count = len(combos)
        # one row of accelerators per assignment, flat: assignment a's accelerator d at a * n_acc + d (``cells``)
        trial_free = np.tile(np.asarray(free, dtype=np.float64), count)
        trial_usage = np.tile(np.asarray(usage, dtype=np.float64), count)
        ends = np.empty(combos.shape)
        nodes, states, outs = graph.node[wave].tolist(), graph.state_bytes[wave].tolist(), graph.out_bytes[wave].tolist()
        for i, n in enumerate(nodes):
            d, cell = combos[:, i], cells[:, i]
            start, durations = timing[i]
            ends[:, i] = trial_free[cell] = np.maximum(trial_free[cell], start) + np.array(durations)[d]
            new_copy = np.array([n not in held for held in resident])[d]  # one copy of a DAG node's states per accelerator
            for j in range(i):
                if nodes[j] == n:
                    new_copy &= combos[:, j] != d
            trial_usage[cell] = (trial_usage[cell] + np.where(new_copy, states[i], 0.0)) + outs[i]
        trial_free, trial_usage = trial_free.reshape(count, n_acc), trial_usage.reshape(count, n_acc)
        fits = np.all(trial_usage <= self.capacity, axis=1)
        if not fits.any():
            return None
        finish = np.maximum(ends.max(axis=1), latest)
        summed = ends[:, 0].copy()
        for i in range(1, len(wave)):  # added in order, as sum() would
            summed += ends[:, i]
        candidates = np.flatnonzero(fits)
        candidates = candidates[finish[candidates] == finish[candidates].min()]
        best = int(candidates[np.argmin(summed[candidates])])
        combo = tuple(int(d) for d in combos[best])
        placed = {(d, int(graph.node[k])) for k, d in zip(wave, combo, strict=True) if int(graph.node[k]) not in resident[d]}
        key = (float(finish[best]), float(summed[best]))
        return key, combo, trial_free[best].tolist(), trial_usage[best].tolist(), placed, ends[best].tolist()

    def balance(self, plan: Replanner) -> Schedule:
        """Balance aware re-mapping of ``plan``'s mapping; its schedule after."""
        balanced = np.where(self.graph.branch >= 0, self.graph.branch, plan.assign)
        judged = [-1] * len(self.graph)  # per sub-operation: moves made before it was last judged
        latency_s, moved = plan.latency_s, True
        while moved:  # every accepted move shortens the schedule, so no assignment repeats: a fixed point is reached
            moved = False
            for k in np.flatnonzero(plan.assign != balanced).tolist():
                if judged[k] == plan.moves:
                    continue  # judged on this very mapping: no move
                judged[k] = plan.moves
                move = self.better(plan, k, int(balanced[k]), latency_s)
                if move is not None:
                    plan.adopt(move)
                    latency_s, moved = move.latency_s, True
        return plan.schedule()

    def locality(self, plan: Replanner) -> Schedule:
        """Data locality aware re-mapping of ``plan``'s mapping; its schedule after."""
        preds, succs = [[p for p, _ in incoming] for incoming in self.graph.preds], self.graph.succs
        on = plan.device
        judged = [-1] * len(self.graph)  # as in balance
        latency_s, moved = plan.latency_s, True
        while moved:  # as in balance: strictly shorter at every move, so it ends at a fixed point
            moved = False
            for k in range(len(self.graph)):
                if judged[k] == plan.moves:
                    continue
                judged[k] = plan.moves
                near = {on[p] for p in preds[k]} | {on[s] for s in succs[k]}
                best = None
                for d in sorted(near - {on[k]}):
                    move = self.better(plan, k, d, latency_s if best is None else best.latency_s)
                    if move is not None:
                        best = move
                if best is not None:
                    plan.adopt(best)
                    latency_s, moved = best.latency_s, True
        return plan.schedule()


@functools.cache
def _combinations(n_acc: int, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Every assignment of ``size`` sub-operations to ``n_acc`` accelerators, one row each, in ``itertools.product``
    order; and where each member's accelerator is in a flat array of one row of ``n_acc`` per assignment."""
    combos = np.array(list(itertools.product(range(n_acc), repeat=size)), dtype=np.int64).reshape(-1, size)
    return combos, combos + n_acc * np.arange(len(combos))[:, None]


def mtrain_mapping(
    graph: SubOpGraph, *, capacity_bytes: np.ndarray, bandwidth_bytes_per_s: float, names: tuple[str, ...]
) -> MappingResult:
    """Algorithm 2 on ``graph``: the mapping and the schedule after each of its three steps.

    Raises:
        DramError: the accelerators' DRAM cannot hold the step (the message names the accelerator and the shortfall).
    """
    mapper = _Mapper(graph, np.asarray(capacity_bytes, dtype=np.float64), bandwidth_bytes_per_s, names)
    plan = Replanner(graph, mapper.dram_aware(), bandwidth_bytes_per_s=bandwidth_bytes_per_s)
    first = plan.schedule()
    if not first.fits(mapper.capacity):
        d = int(np.argmax(first.peak_dram_bytes - mapper.capacity))
        short = first.peak_dram_bytes[d] - mapper.capacity[d]
        raise DramError(f"the cluster's DRAM cannot hold the training step: {names[d]} is {short / 2**20:.1f} MiB short")
    balanced = mapper.balance(plan)
    local = mapper.locality(plan)
    return MappingResult(assign=plan.assign, steps={"dram_aware": first, "balance": balanced, "locality": local})
