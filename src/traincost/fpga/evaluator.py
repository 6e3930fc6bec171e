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

__all__ = ["Schedule", "evaluate_mapping"]


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


def evaluate_mapping(graph: SubOpGraph, assign: np.ndarray, *, bandwidth_bytes_per_s: float, dram: bool = True) -> Schedule:
    """The schedule of ``graph`` with sub-operation ``k`` on accelerator ``assign[k]`` (``dram=False``: skip
    the DRAM peaks, left at zero)."""
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
        peak_dram_bytes=_peak_dram(graph, assign, start_a, end_a, n_acc) if dram else np.zeros(n_acc),
        comm_bytes=moved,
    )


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
