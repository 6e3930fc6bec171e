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
    return Replanner(graph, assign, bandwidth_bytes_per_s=bandwidth_bytes_per_s).schedule()


@dataclass(slots=True)
class _Timing:
    """A list schedule being timed: per sub-operation its accelerator, start, finish and the bytes it
    receives from other accelerators; per accelerator when it comes free."""

    device: list[int]
    start: list[float]
    end: list[float]
    incoming: list[float]
    free: list[float]
    changed: bytearray  # sub-operations with a re-timed predecessor or a new accelerator


class Replanner:
    """The list schedule of one mapping, kept so that moving one sub-operation is judged without
    re-timing what cannot change, and given up as soon as the move provably cannot beat a latency.

    A move of sub-operation ``k`` changes only the durations of ``k`` and its successors (their
    transfers from ``k``) and where ``k`` queues; the schedule before ``k`` stays. Re-timing runs from
    ``k`` on and stops once a finish time, plus a lower bound on the time still to run after it (the
    longest chain of durations behind it, through data and device-queue order, less what the move
    sheds), reaches the latency to beat. Before any re-timing, a move that touches neither the chain of
    binding inputs behind the last finish (each sub-operation's latest input: its accelerator coming
    free or a predecessor finishing) nor a successor on it leaves that chain at least as long, and is
    rejected at once. Both tests only reject moves that re-timing in full would reject: list scheduling
    in a fixed order is monotone in its inputs. Every time is computed as ``evaluate_mapping`` would,
    bit for bit (``evaluate_mapping`` is this class's full timing).
    """

    def __init__(self, graph: SubOpGraph, assign: np.ndarray, *, bandwidth_bytes_per_s: float) -> None:
        self._graph = graph
        self._bandwidth = bandwidth_bytes_per_s
        self._n_acc = graph.seconds.shape[1]
        self._seconds = graph.seconds.tolist()
        self._preds = [list(incoming) for incoming in graph.preds]
        self._succs = [list(successors) for successors in graph.succs]
        self._out: list[list[tuple[int, float]]] = [[] for _ in graph.succs]  # per sub-op: (successor, bytes)
        for k, incoming in enumerate(graph.preds):
            for p, nbytes in incoming:
                self._out[p].append((k, nbytes))
        # a chain summed backwards (the tails) and timed forwards round differently: two roundings per
        # addition of a chain at most as long as the graph, relative to the latency
        self._rounding = 2 * float(np.finfo(np.float64).eps) * (len(graph) + 2)
        self.reset(assign)

    def reset(self, assign: np.ndarray) -> None:
        """Adopt ``assign`` as the current mapping."""
        self.assign = np.asarray(assign).copy()
        n = len(self.assign)
        self._now = _Timing(self.assign.tolist(), [0.0] * n, [0.0] * n, [0.0] * n, [0.0] * self._n_acc, bytearray(n))
        self._free_at = [0.0] * n  # when its accelerator comes free for each sub-operation
        self._duration, self._binding, self._queue_prev, self._queue_next = [0.0] * n, [-1] * n, [-1] * n, [-1] * n
        self._free_before: list[tuple[float, ...]] = [()] * n
        self._tail, self._parent, self._settled = [0.0] * n, [-1] * n, [0.0] * n
        self._tails_from = n  # the tails are those of the current mapping from this sub-operation on
        self._retime(0)

    def move(self, k: int, device: int) -> None:
        """Adopt the current mapping with sub-operation ``k`` on ``device``."""
        was, on = self._now.device[k], self._now.device
        # a tail runs through later sub-operations only: past k and the successors whose transfers from k
        # come or go, the tails stand
        changed = max((s for s in self._succs[k] if on[s] in (was, device)), default=k)
        self._tails_from = max(self._tails_from, changed + 1)
        self.assign = self.assign.copy()
        self.assign[k] = device
        on[k] = device
        self._retime(k)

    def schedule(self) -> Schedule:
        """The current mapping's schedule."""
        return self._schedule(self._now)

    def schedule_if_moved(self, k: int, device: int, beat_s: float) -> Schedule | None:
        """The schedule with sub-operation ``k`` on ``device`` if its latency is below ``beat_s``, else None."""
        if self._max_before[k] >= beat_s:
            return None
        if self._latency >= beat_s and not (self._on_chain[k] or any(self._on_chain[s] for s in self._succs[k])):
            return None  # the binding chain behind the last finish keeps its length or grows
        self._tails(k + 1)
        now = self._now
        changed = bytearray(len(now.device))
        changed[k] = 1
        for s in self._succs[k]:
            changed[s] = 1  # their transfers from k change
        trial = _Timing(
            now.device.copy(), now.start.copy(), now.end.copy(), now.incoming.copy(), list(self._free_before[k]), changed
        )
        trial.device[k] = device
        # moving k sheds its transfers to the successors on its new accelerator; nothing else gets shorter
        shed = [(s, nbytes / self._bandwidth * (1 + self._rounding)) for s, nbytes in self._out[k] if trial.device[s] == device]
        bound_s = beat_s * (1 + self._rounding)
        if not self._run(trial, k, k + 1, beat_s):
            return None
        if trial.end[k] + self._longest_after(k, device) >= bound_s + sum(t for _, t in shed):
            return None
        if not self._run(trial, k + 1, len(trial.device), beat_s, bound_s=bound_s, shed=shed):
            return None
        return self._schedule(trial)

    def _longest_after(self, k: int, device: int) -> float:
        """The longest chain of durations after sub-operation ``k`` finishes on ``device`` instead, through a
        successor, whose transfer from ``k`` comes or goes (each successor's tail as it is now)."""
        was, duration, tail = self._now.device[k], self._duration, self._tail
        longest = 0.0
        for s, nbytes in self._out[k]:
            on = self._now.device[s]
            took = duration[s] + (nbytes / self._bandwidth if on == was else -nbytes / self._bandwidth if on == device else 0.0)
            longest = max(longest, took + tail[s])
        return longest

    def _run(
        self,
        timing: _Timing,
        first: int,
        stop: int,
        beat_s: float,
        *,
        bound_s: float | None = None,
        shed: Sequence[tuple[int, float]] = (),
    ) -> bool:
        """Re-times sub-operations ``first`` to ``stop``; False once a finish reaches ``beat_s``, or a
        finish plus its tail (less what ``shed`` takes off the chain behind it) reaches ``bound_s``. A
        sub-operation whose inputs are all as in the current schedule (no predecessor re-timed to another
        finish, its accelerator free at the same time) keeps its times and is only checked against the bounds."""
        seconds, preds, succs, bandwidth, tail = self._seconds, self._preds, self._succs, self._bandwidth, self._tail
        free_at, settled = self._free_at, self._settled
        device, start, end, incoming, free, changed = (
            timing.device,
            timing.start,
            timing.end,
            timing.incoming,
            timing.free,
            timing.changed,
        )
        for k in range(first, stop):
            d = device[k]
            if not changed[k] and free[d] == free_at[k]:
                if end[k] >= beat_s or (
                    bound_s is not None and settled[k] >= bound_s and settled[k] >= bound_s + self._shed_behind(k, shed)
                ):
                    return False
                free[d] = end[k]
                continue
            ready, received = 0.0, 0.0
            for p, nbytes in preds[k]:
                if end[p] > ready:  # noqa: PLR1730 (a comparison is faster than max() in this inner loop)
                    ready = end[p]
                if device[p] != d:
                    received += nbytes
            begin = free[d] if free[d] > ready else ready
            finish = begin + (received / bandwidth + seconds[k][d])
            if finish >= beat_s or (
                bound_s is not None and finish + tail[k] >= bound_s and finish + tail[k] >= bound_s + self._shed_behind(k, shed)
            ):
                return False
            if finish != end[k]:
                for s in succs[k]:
                    changed[s] = 1
            start[k], end[k], incoming[k] = begin, finish, received
            free[d] = finish
        return True

    def _shed_behind(self, k: int, shed: Sequence[tuple[int, float]]) -> float:
        """What ``shed`` (successors of the moved sub-operation, each with the seconds it loses) takes off
        the chain of sub-operation ``k``'s tail: the sum over those on it (each an ancestor of ``k`` in the
        forest of tail chains)."""
        if not shed:
            return 0.0
        if not self._enter:  # numbered when first needed after each re-timing
            self._number_chains()
        enter, leave = self._enter, self._leave
        return sum(t for s, t in shed if s > k and enter[s] <= enter[k] < leave[s])

    def _retime(self, first: int) -> None:
        """Times sub-operations ``first`` on (the schedule before them stands), then the tails and the
        binding chain behind the last finish."""
        now, n, bandwidth = self._now, len(self._now.device), self._bandwidth
        device, start, end, incoming = now.device, now.start, now.end, now.incoming
        seconds, preds, duration, binding = self._seconds, self._preds, self._duration, self._binding
        queue_prev = self._queue_prev
        queue_next = self._queue_next
        free = now.free = list(self._free_before[first]) if first > 0 else [0.0] * self._n_acc
        last = [-1] * self._n_acc  # the last sub-operation before ``first`` on each accelerator
        for j in range(first - 1, -1, -1):
            if last[device[j]] < 0:
                last[device[j]] = j
                if min(last) >= 0:
                    break
        for q in last:
            if q >= 0:
                queue_next[q] = -1
        free_before, free_at = self._free_before, self._free_at
        for k in range(first, n):
            free_before[k] = tuple(free)
            d = device[k]
            ready, latest, received = 0.0, -1, 0.0
            for p, nbytes in preds[k]:
                if end[p] > ready:
                    ready, latest = end[p], p
                if device[p] != d:
                    received += nbytes
            took = duration[k] = received / bandwidth + seconds[k][d]
            came_free, before = free[d], last[d]
            queue_prev[k], queue_next[k] = before, -1
            if before >= 0:
                queue_next[before] = k
            free_at[k] = came_free
            binding[k] = before if came_free >= ready and came_free > 0.0 else latest
            begin = start[k] = came_free if came_free > ready else ready
            end[k] = free[d] = begin + took
            incoming[k] = received
            last[d] = k
        self._max_before = np.maximum.accumulate([0.0, *end[:-1]]).tolist() if end else [0.0]
        self._latency = max(end, default=0.0)
        self._settled_from = n  # end + tail: from this sub-operation on
        self._enter = []
        self._on_chain = [False] * n
        k = int(np.argmax(end)) if n else -1
        while k >= 0:
            self._on_chain[k] = True
            k = binding[k]

    def _tails(self, first: int) -> None:
        """Makes the tails hold from sub-operation ``first`` on: per sub-operation, the longest chain of
        durations after it finishes, through its successors and the next sub-operation on its
        accelerator (and the next sub-operation on that chain); and its finish plus its tail."""
        if first < self._tails_from:
            duration, succs, queue_next, tail, parent = self._duration, self._succs, self._queue_next, self._tail, self._parent
            for k in range(self._tails_from - 1, first - 1, -1):
                longest, via = 0.0, -1
                for s in succs[k]:
                    if duration[s] + tail[s] > longest:
                        longest, via = duration[s] + tail[s], s
                q = queue_next[k]
                if q >= 0 and duration[q] + tail[q] > longest:
                    longest, via = duration[q] + tail[q], q
                tail[k], parent[k] = longest, via
            self._tails_from, self._enter = first, []
        if first < self._settled_from:
            end, tail, settled = self._now.end, self._tail, self._settled
            for k in range(first, self._settled_from):
                settled[k] = end[k] + tail[k]
            self._settled_from = first

    def _number_chains(self) -> None:
        """Numbers the forest of tail chains from ``_tails_from`` on (a sub-operation's parent is the next on
        its chain, always a later one) in pre-order: the descendants of ``s`` get ``enter[s]`` to
        ``leave[s]``, exclusive."""
        parent, n, first = self._parent, len(self._parent), self._tails_from
        size = [1] * n
        for k in range(first, n):  # children come before their parent
            if parent[k] >= 0:
                size[parent[k]] += size[k]
        enter, slot = [0] * n, [0] * n  # slot: where a sub-operation's next child's numbers start
        roots = 0
        for k in range(n - 1, first - 1, -1):  # parents before their children
            p = parent[k]
            if p < 0:
                enter[k], roots = roots, roots + size[k]
            else:
                enter[k] = slot[p]
                slot[p] += size[k]
            slot[k] = enter[k] + 1
        self._enter, self._leave = enter, [e + z for e, z in zip(enter, size, strict=True)]

    def _schedule(self, timing: _Timing) -> Schedule:
        graph, n_acc = self._graph, self._n_acc
        assign = np.array(timing.device, dtype=np.int64)
        start, end, incoming = np.array(timing.start), np.array(timing.end), np.array(timing.incoming)
        compute = graph.seconds[np.arange(len(assign)), assign]
        # the same roundings as the timing: per sub-operation, then summed in order (bincount and cumsum add sequentially)
        busy = np.bincount(assign, weights=incoming / self._bandwidth + compute, minlength=n_acc)
        return Schedule(
            latency_s=float(end.max()) if len(end) else 0.0,
            start_s=start,
            end_s=end,
            busy_s=busy,
            peak_dram_bytes=_peak_dram(graph, assign, start, end, n_acc),
            comm_bytes=float(np.cumsum(incoming)[-1]) if len(incoming) else 0.0,
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
