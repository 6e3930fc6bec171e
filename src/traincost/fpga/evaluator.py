"""Latency, throughput and DRAM of a mapping of G*_model onto accelerators, by list scheduling.

Sub-operations run in the graph's topological order; each starts when its accelerator is free and
its predecessors have finished, and then receives, over the P2P link, every input made on another
accelerator (bytes / bandwidth), then computes: its latency is communication + computation, as in
MTrain section III-C. DRAM per accelerator = the weights and optimizer states of every DAG node it
runs (one copy each) + the outputs of its sub-operations, held from their start until their last
reader finishes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from traincost.fpga.subops import SubOpGraph

__all__ = ["Schedule", "evaluate_mapping", "list_timing", "schedule_from_timing"]


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
    device = np.asarray(assign).tolist()
    n_acc = graph.seconds.shape[1]
    timing = list_timing(graph.preds, graph.seconds.tolist(), device, bandwidth_bytes_per_s, n_acc)
    return schedule_from_timing(graph, device, *timing, bandwidth_bytes_per_s=bandwidth_bytes_per_s)


def list_timing(
    preds: Sequence[Sequence[tuple[int, float]]],
    seconds: Sequence[Sequence[float]],
    device: Sequence[int],
    bandwidth_bytes_per_s: float,
    n_acc: int,
) -> tuple[list[float], list[float], list[float]]:
    """Per sub-operation its start, its finish and the bytes it receives from other accelerators: the
    list schedule in index order (``seconds[k][d]``: compute latency of ``k`` on accelerator ``d``)."""
    n = len(device)
    start, end, incoming = [0.0] * n, [0.0] * n, [0.0] * n
    free = [0.0] * n_acc
    for k in range(n):
        d = device[k]
        ready, received = 0.0, 0.0
        for p, nbytes in preds[k]:
            if end[p] > ready:  # noqa: PLR1730 (a comparison is faster than max() in this inner loop)
                ready = end[p]
            if device[p] != d:
                received += nbytes
        begin = start[k] = free[d] if free[d] > ready else ready
        end[k] = free[d] = begin + (received / bandwidth_bytes_per_s + seconds[k][d])
        incoming[k] = received
    return start, end, incoming


def schedule_from_timing(
    graph: SubOpGraph,
    device: Sequence[int],
    start: Sequence[float],
    end: Sequence[float],
    incoming: Sequence[float],
    *,
    bandwidth_bytes_per_s: float,
) -> Schedule:
    """The schedule of a timed mapping (``list_timing``'s lists), with busy times and DRAM peaks."""
    n_acc = graph.seconds.shape[1]
    assign = np.array(device, dtype=np.int64)
    start_s, end_s, incoming_bytes = np.array(start, dtype=np.float64), np.array(end, dtype=np.float64), np.array(incoming)
    compute = graph.seconds[np.arange(len(assign)), assign]
    # the same roundings as the timing: per sub-operation, then summed in order (bincount and cumsum add sequentially)
    busy = np.bincount(assign, weights=incoming_bytes / bandwidth_bytes_per_s + compute, minlength=n_acc)
    return Schedule(
        latency_s=float(end_s.max()) if len(end_s) else 0.0,
        start_s=start_s,
        end_s=end_s,
        busy_s=busy,
        peak_dram_bytes=_peak_dram(graph, assign, start_s, end_s, n_acc),
        comm_bytes=float(np.cumsum(incoming_bytes)[-1]) if len(incoming_bytes) else 0.0,
    )


def _peak_dram(graph: SubOpGraph, assign: np.ndarray, start: np.ndarray, end: np.ndarray, n_acc: int) -> np.ndarray:
    held_until = end.copy()  # until the last reader finishes
    np.maximum.at(held_until, graph.edge_src, end[graph.edge_dst])
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
