"""Latency, throughput and DRAM of a mapping of G*_model onto accelerators, by list scheduling.

Sub-operations run in the graph's topological order; each starts when its accelerator is free and
its predecessors have finished, and then receives, over the P2P link, every input made on another
accelerator (bytes / bandwidth), then computes: its latency is communication + computation, as in
MTrain section III-C. DRAM per accelerator = the weights and optimizer states of every DAG node it
runs (one copy each) + the outputs of its sub-operations, held from their start until their last
reader finishes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from traincost.fpga.subops import SubOpGraph

__all__ = ["Schedule", "evaluate_mapping", "Replanner"]


@dataclass(frozen=True, slots=True)
class Schedule:
    latency_s: float
    start_s: np.ndarray
    end_s: np.ndarray
    busy_s: np.ndarray  # per accelerator
    peak_dram_bytes: np.ndarray  # per accelerator
    comm_bytes: float

    def duty(self) -> np.ndarray:
        """Per accelerator: the fraction of the step it is busy."""
        return self.busy_s / self.latency_s

    def fits(self, capacity_bytes: np.ndarray) -> bool:
        return bool(np.all(self.peak_dram_bytes <= capacity_bytes))


def evaluate_mapping(graph: SubOpGraph, assign: np.ndarray, *, bandwidth_bytes_per_s: float) -> Schedule:
    """The schedule of ``graph`` with sub-operation ``k`` on accelerator ``assign[k]``."""
    n_acc = graph.seconds.shape[1]
    device = assign.tolist()
    free = [0.0] * n_acc
    busy = [0.0] * n_acc
    start, end = [0.0] * len(device), [0.0] * len(device)
    seconds = graph.seconds
    moved = 0.0
    for k, d in enumerate(device):
        ready, incoming = 0.0, 0.0
        for p, nbytes in graph.preds[k]:
            ready = max(ready, end[p])
            if device[p] != d:
                incoming += nbytes
        moved += incoming
        start[k] = max(free[d], ready)
        duration = incoming / bandwidth_bytes_per_s + seconds[k, d]
        end[k] = free[d] = start[k] + duration
        busy[d] += duration
    start_a, end_a = np.array(start), np.array(end)
    return Schedule(
        latency_s=float(end_a.max()) if len(end) else 0.0,
        start_s=start_a,
        end_s=end_a,
        busy_s=np.array(busy),
        peak_dram_bytes=_peak_dram(graph, assign, start_a, end_a, n_acc),
        comm_bytes=moved,
    )


class Replanner:
    """The list schedule of one mapping, kept so that moving one sub-operation is re-timed from that
    sub-operation on (the schedule before it cannot change) and given up as soon as a finish time
    reaches the latency to beat."""

    def __init__(self, graph: SubOpGraph, assign: np.ndarray, *, bandwidth_bytes_per_s: float) -> None:
        self._n_acc = graph.seconds.shape[1]
        self._seconds = graph.seconds.tolist()
        self._preds = [[(p, nbytes / bandwidth_bytes_per_s) for p, nbytes in incoming] for incoming in graph.preds]
        self.reset(assign)

    def reset(self, assign: np.ndarray) -> None:
        """Adopt ``assign`` as the current mapping."""
        self.assign = assign.copy()
        self._device = assign.tolist()
        free = [0.0] * self._n_acc
        self._free_before: list[tuple[float, ...]] = []
        self._end = self._run(0, self._device, free, [0.0] * len(self._device), float("inf"))
        self._max_before = np.maximum.accumulate([0.0, *self._end[:-1]]).tolist() if self._end else [0.0]

    def move(self, k: int, device: int) -> None:
        """Adopt the current mapping with sub-operation ``k`` on ``device``."""
        trial = self.assign.copy()
        trial[k] = device
        self.reset(trial)

    def latency_if_moved(self, k: int, device: int, beat_s: float) -> float | None:
        """The latency with sub-operation ``k`` on ``device``, or None if it is not below ``beat_s``."""
        if self._max_before[k] >= beat_s:
            return None
        trial = self._device.copy()
        trial[k] = device
        end = self._run(k, trial, list(self._free_before[k]), self._end.copy(), beat_s)
        return None if end is None else max(self._max_before[k], *end[k:])

    def _run(self, first: int, device: list[int], free: list[float], end: list[float], beat_s: float) -> list[float] | None:
        """Finish times from sub-operation ``first`` on (None once one reaches ``beat_s``); records the
        accelerators' free times before each sub-operation when run from the start."""
        record = first == 0
        seconds, preds = self._seconds, self._preds
        for k in range(first, len(device)):
            if record:
                self._free_before.append(tuple(free))
            d = device[k]
            ready = 0.0
            duration = seconds[k][d]
            for p, transfer_s in preds[k]:
                if end[p] > ready:  # noqa: PLR1730 (a comparison is faster than max() in this inner loop)
                    ready = end[p]
                if device[p] != d:
                    duration += transfer_s
            finish = (free[d] if free[d] > ready else ready) + duration
            if finish >= beat_s:
                return None
            end[k] = free[d] = finish
        return end


def _peak_dram(graph: SubOpGraph, assign: np.ndarray, start: np.ndarray, end: np.ndarray, n_acc: int) -> np.ndarray:
    held_until = end.copy()
    for k, successors in enumerate(graph.succs):
        if successors:
            held_until[k] = max(held_until[k], *(end[s] for s in successors))
    peak = np.zeros(n_acc)
    for d in range(n_acc):
        on = assign == d
        _, first = np.unique(graph.node[on], return_index=True)  # one copy of each DAG node's states
        static = float(graph.state_bytes[on][first].sum())
        times = np.concatenate([start[on], held_until[on]])
        deltas = np.concatenate([graph.out_bytes[on], -graph.out_bytes[on]])
        order = np.lexsort((deltas, times))  # frees before allocations at the same instant
        live = np.cumsum(deltas[order]) if len(order) else np.zeros(1)
        peak[d] = static + max(0.0, float(live.max()))
    return peak
