"""Incremental re-timing of one mapping of G*_model: MTrain-Mapping's re-mapping moves judged without
re-timing what cannot change, and given up as soon as a move provably cannot beat a latency.

A move of sub-operation ``k`` changes only the durations of ``k`` and its successors (their transfers
from ``k``) and where ``k`` queues; the schedule before ``k`` stays. A trial re-times from ``k`` on, in
place on a working copy of the schedule that is put back afterwards, and stops once a finish time, plus
a lower bound on the time still to run after it (the longest chain of durations behind it, through
data and device-queue order, less what the move sheds), reaches the latency to beat. Before any
re-timing, a move that touches neither the chain of binding inputs behind the last finish (each
sub-operation's latest input: its accelerator coming free or a predecessor finishing) nor a successor
on it that the move brings onto its own accelerator leaves that chain at least as long, and is
rejected at once. Both tests only reject moves that re-timing in full would reject: list scheduling in
a fixed order is monotone in its inputs. Every time is computed as ``evaluate_mapping`` would, bit for
bit; a kept move carries its timing, so adopting it re-times nothing.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from traincost.fpga.evaluator import Schedule, list_timing, schedule_from_timing
from traincost.fpga.subops import SubOpGraph

__all__ = ["Move", "Replanner"]


@dataclass(frozen=True, slots=True)
class Move:
    """Sub-operation ``k`` moved to accelerator ``device``: the latency it gives and the timing of every
    sub-operation from ``k`` on (the schedule before ``k`` does not change)."""

    k: int
    device: int
    latency_s: float
    start_s: list[float]
    end_s: list[float]
    incoming_bytes: list[float]


class Replanner:
    """The list schedule of one mapping, kept so that moving one sub-operation is judged cheaply."""

    def __init__(self, graph: SubOpGraph, assign: np.ndarray, *, bandwidth_bytes_per_s: float) -> None:
        self._graph = graph
        self._bandwidth = bandwidth_bytes_per_s
        self._n_acc = graph.seconds.shape[1]
        self._seconds = graph.seconds.tolist()
        self._preds = [list(incoming) for incoming in graph.preds]
        self._pred_ids = [[p for p, _ in incoming] for incoming in graph.preds]
        self._succs = [list(successors) for successors in graph.succs]
        self._out: list[list[tuple[int, float]]] = [[] for _ in graph.succs]  # per sub-op: (successor, bytes)
        for k, incoming in enumerate(graph.preds):
            for p, nbytes in incoming:
                self._out[p].append((k, nbytes))
        # a chain summed backwards (the tails) and timed forwards round differently: two roundings per
        # addition of a chain at most as long as the graph, relative to the latency
        self._rounding = 2 * float(np.finfo(np.float64).eps) * (len(graph) + 2)
        self._node, self._state_bytes, self._out_bytes = graph.node.tolist(), graph.state_bytes.tolist(), graph.out_bytes.tolist()
        self._all_bytes = float(graph.state_bytes.sum() + graph.out_bytes.sum())
        dst = graph.edge_dst  # edges come grouped by their reader, in the order of its predecessors
        self._edge_firsts = np.flatnonzero(np.concatenate(([True], dst[1:] != dst[:-1]))) if len(dst) else dst
        self._edge_first_dst = dst[self._edge_firsts]
        self.reset(assign)

    @property
    def latency_s(self) -> float:
        """The current mapping's latency."""
        return self._latency

    @property
    def device(self) -> list[int]:
        """The accelerator of each sub-operation (read only)."""
        return self._device

    def reset(self, assign: np.ndarray) -> None:
        """Adopt ``assign`` as the current mapping."""
        self.assign = np.asarray(assign).copy()
        self.moves = 0  # moves adopted since
        n, n_acc = len(self.assign), self._n_acc
        device = self._device = self.assign.tolist()
        self._start, self._end, self._incoming = list_timing(self._preds, self._seconds, device, self._bandwidth, n_acc)
        self._work = (device.copy(), self._start.copy(), self._end.copy(), self._incoming.copy())
        self._changed = bytearray(n)  # per trial: sub-operations with a re-timed predecessor or a new accelerator
        self._rewired = bytearray(n)  # per trial: the moved sub-operation and its successors (their transfers change)
        self._members: list[list[int]] = [[] for _ in range(n_acc)]  # per accelerator, its sub-operations in order
        for k, d in enumerate(device):
            self._members[d].append(k)
        self._queue_prev, self._queue_next = np.full(n, -1, dtype=np.int64), [-1] * n
        for members in self._members:
            for before, after in zip(members, members[1:], strict=False):
                self._queue_prev[after], self._queue_next[before] = before, after
        self._copies: list[dict[int, int]] = [{} for _ in range(n_acc)]  # per accelerator: sub-operations per DAG node
        self._held = [0.0] * n_acc
        for k, d in enumerate(device):
            self._hold(k, d, +1)
        rows = np.arange(n)
        self._duration = (np.array(self._incoming) / self._bandwidth + self._graph.seconds[rows, self.assign]).tolist()
        self._tail, self._parent = [0.0] * n, [-1] * n
        self._tails_from = n  # the tails are those of the current mapping from this sub-operation on
        self._refresh()

    def schedule(self) -> Schedule:
        """The current mapping's schedule."""
        return schedule_from_timing(
            self._graph, self._device, self._start, self._end, self._incoming, bandwidth_bytes_per_s=self._bandwidth
        )

    def schedule_of(self, move: Move) -> Schedule:
        """The schedule of the current mapping with ``move`` made."""
        k = move.k
        device = self._device.copy()
        device[k] = move.device
        return schedule_from_timing(
            self._graph,
            device,
            self._start[:k] + move.start_s,
            self._end[:k] + move.end_s,
            self._incoming[:k] + move.incoming_bytes,
            bandwidth_bytes_per_s=self._bandwidth,
        )

    def schedule_if_moved(self, k: int, device: int, beat_s: float) -> Schedule | None:
        """The schedule with sub-operation ``k`` on ``device`` if its latency is below ``beat_s``, else None."""
        move = self.try_move(k, device, beat_s)
        return None if move is None else self.schedule_of(move)

    def fits(self, move: Move, capacity_bytes: np.ndarray) -> bool:
        """Whether every accelerator's DRAM holds the mapping with ``move`` made (``Schedule.fits`` of
        ``schedule_of(move)``; decided without its timing when even holding every output at once fits)."""
        k, device = move.k, move.device
        was, node = self._device[k], self._node[k]
        held = self._held.copy()  # per accelerator: its DAG nodes' states and all its outputs
        held[was] -= self._out_bytes[k] + (self._state_bytes[k] if self._copies[was][node] == 1 else 0.0)
        held[device] += self._out_bytes[k] + (self._state_bytes[k] if not self._copies[device].get(node) else 0.0)
        # the peak adds these non-negative bytes in another order, and ``held`` is kept up to date by
        # additions and subtractions: allow for every rounding either can have made
        slack = 16 * (len(self._device) + self.moves + 2) * float(np.finfo(np.float64).eps) * self._all_bytes
        if all(h + slack <= c for h, c in zip(held, capacity_bytes.tolist(), strict=True)):
            return True
        return self.schedule_of(move).fits(capacity_bytes)

    def move(self, k: int, device: int) -> None:
        """Adopt the current mapping with sub-operation ``k`` on ``device``."""
        self.adopt(self.try_move(k, device, math.inf))

    def try_move(self, k: int, device: int, beat_s: float) -> Move | None:
        """Sub-operation ``k`` moved to ``device``, if the latency it gives is below ``beat_s``; else None."""
        if self._max_before[k] >= beat_s:
            return None
        on_chain, on = self._on_chain, self._device
        if self._latency >= beat_s and not (on_chain[k] or any(on_chain[s] and on[s] == device for s in self._succs[k])):
            return None  # the binding chain behind the last finish keeps its length or grows
        # k's own times on device (everything before k stays): the trial ends here if they cannot beat the latency
        members = self._members[device]
        i = bisect_left(members, k)
        came_free = self._end[members[i - 1]] if i else 0.0
        ready, received = 0.0, 0.0
        for p, nbytes in self._preds[k]:
            if self._end[p] > ready:  # noqa: PLR1730
                ready = self._end[p]
            if on[p] != device:
                received += nbytes
        begin = came_free if came_free > ready else ready
        finish = begin + (received / self._bandwidth + self._seconds[k][device])
        if finish >= beat_s:
            return None
        self._tails(k + 1)
        # moving k sheds its transfers to the successors on its new accelerator; nothing else gets shorter
        shed = [(s, nbytes / self._bandwidth * (1 + self._rounding)) for s, nbytes in self._out[k] if on[s] == device]
        bound_s = beat_s * (1 + self._rounding)
        if finish + self._longest_after(k, device) >= bound_s + sum(t for _, t in shed):
            return None
        return self._retime_moved(k, device, beat_s, times=(begin, finish, received), bound_s=bound_s, shed=shed)

    def _retime_moved(
        self, k: int, device: int, beat_s: float, *, times: tuple[float, float, float], bound_s: float, shed: list
    ) -> Move | None:
        """``try_move`` past k (``times``: k's start, finish and received bytes on ``device``), in the working copy."""
        on, n = self._device, len(self._device)
        work_device, work_start, work_end, work_incoming = self._work
        work_device[k] = device
        changed, rewired = self._changed, self._rewired
        changed[k] = rewired[k] = 1
        for s in self._succs[k]:
            changed[s] = rewired[s] = 1  # their transfers from k change
        free = []  # when each accelerator comes free after k
        for members in self._members:
            i = bisect_left(members, k)
            free.append(self._end[members[i - 1]] if i else 0.0)
        work_start[k], work_end[k], work_incoming[k] = times
        free[device] = times[1]
        move = None
        reached = self._run(free, k + 1, n, beat_s, bound_s=bound_s, shed=shed)
        if reached == n:
            latency_s = max(self._max_before[k], *work_end[k:])
            move = Move(k, device, latency_s, work_start[k:], work_end[k:], work_incoming[k:])
        # put the working copy back: the trial wrote sub-operations k to reached - 1
        work_device[k] = on[k]
        work_start[k:reached] = self._start[k:reached]
        work_end[k:reached] = self._end[k:reached]
        work_incoming[k:reached] = self._incoming[k:reached]
        changed[k:] = bytes(n - k)
        rewired[k] = 0
        for s in self._succs[k]:
            rewired[s] = 0
        return move

    def adopt(self, move: Move) -> None:
        """Make ``move`` (``try_move``'s, on the current mapping)."""
        k, device = move.k, move.device
        on = self._device
        was = on[k]
        # a tail runs through later sub-operations only: past k and the successors whose transfers from k
        # come or go, the tails stand
        changed = max((s for s in self._succs[k] if on[s] in (was, device)), default=k)
        self._tails_from = max(self._tails_from, changed + 1)
        self.assign = self.assign.copy()
        self.assign[k] = device
        on[k] = self._work[0][k] = device
        for now, work, new in zip(
            (self._start, self._end, self._incoming), self._work[1:], (move.start_s, move.end_s, move.incoming_bytes), strict=True
        ):
            now[k:] = new
            work[k:] = new
        self._unqueue(k, was)
        self._enqueue(k, device)
        self._hold(k, was, -1)
        self._hold(k, device, +1)
        self.moves += 1
        for j in (k, *self._succs[k]):  # their transfers changed
            self._duration[j] = self._incoming[j] / self._bandwidth + self._seconds[j][on[j]]
        self._refresh()

    def _hold(self, k: int, device: int, sign: int) -> None:
        """Counts sub-operation ``k`` in (``sign`` +1) or out of (-1) what ``device``'s DRAM holds at most: the
        states of its DAG nodes, once each, and all its outputs."""
        copies, node = self._copies[device], self._node[k]
        copies[node] = copies.get(node, 0) + sign
        first_or_last = copies[node] == (1 if sign > 0 else 0)
        self._held[device] += sign * (self._out_bytes[k] + (self._state_bytes[k] if first_or_last else 0.0))

    def _unqueue(self, k: int, device: int) -> None:
        members = self._members[device]
        i = bisect_left(members, k)
        del members[i]
        before, after = self._queue_prev[k], self._queue_next[k]
        if before >= 0:
            self._queue_next[before] = after
        if after >= 0:
            self._queue_prev[after] = before

    def _enqueue(self, k: int, device: int) -> None:
        members = self._members[device]
        i = bisect_left(members, k)
        members.insert(i, k)
        before, after = members[i - 1] if i else -1, members[i + 1] if i + 1 < len(members) else -1
        self._queue_prev[k], self._queue_next[k] = before, after
        if before >= 0:
            self._queue_next[before] = k
        if after >= 0:
            self._queue_prev[after] = k

    def _refresh(self) -> None:
        """After the timing changed: when each sub-operation's accelerator comes free for it, the latest
        finish before it, the latency and the binding chain behind the last finish."""
        n = len(self._end)
        end = np.array(self._end, dtype=np.float64)
        free_at = np.where(self._queue_prev >= 0, end[self._queue_prev], 0.0)
        self._free_at = free_at.tolist()
        self._max_before = np.maximum.accumulate(np.concatenate(([0.0], end[:-1]))).tolist() if n else [0.0]
        self._latency = float(end.max()) if n else 0.0
        self._enter: list[int] = []
        self._on_chain = bytearray(n)
        binding = self._bindings(end, free_at)
        k = int(np.argmax(end)) if n else -1
        while k >= 0:
            self._on_chain[k] = 1
            k = binding[k]

    def _bindings(self, end: np.ndarray, free_at: np.ndarray) -> list[int]:
        """Per sub-operation its latest input: the one before it on its accelerator if that came free last
        (and after 0), else its first predecessor to finish last (-1 if none finished after 0)."""
        src, dst = self._graph.edge_src, self._graph.edge_dst
        made = end[src]
        ready = np.zeros(len(end))
        if len(src):
            ready[self._edge_first_dst] = np.maximum.reduceat(made, self._edge_firsts)
        last = np.flatnonzero((made == ready[dst]) & (made > 0.0))  # edges from a predecessor that finished last
        to = dst[last]
        first = np.ones(len(last), dtype=bool)  # the first such edge of each sub-operation
        first[1:] = to[1:] != to[:-1]
        latest = np.full(len(end), -1, dtype=np.int64)
        latest[to[first]] = src[last[first]]
        return np.where((free_at >= ready) & (free_at > 0.0), self._queue_prev, latest).tolist()

    def _longest_after(self, k: int, device: int) -> float:
        """The longest chain of durations after sub-operation ``k`` finishes on ``device`` instead, through a
        successor, whose transfer from ``k`` comes or goes (each successor's tail as it is now)."""
        was, duration, tail, on, bandwidth = self._device[k], self._duration, self._tail, self._device, self._bandwidth
        longest = 0.0
        for s, nbytes in self._out[k]:
            took = duration[s] + (nbytes / bandwidth if on[s] == was else -nbytes / bandwidth if on[s] == device else 0.0)
            longest = max(longest, took + tail[s])
        return longest

    def _run(
        self,
        free: list[float],
        first: int,
        stop: int,
        beat_s: float,
        *,
        bound_s: float = math.inf,
        shed: Sequence[tuple[int, float]] = (),
    ) -> int:
        """Re-times sub-operations ``first`` to ``stop`` in the working copy; returns ``stop``, or the first
        sub-operation (left as it was) whose finish reaches ``beat_s``, or whose finish plus its tail (less
        what ``shed`` takes off the chain behind it) reaches ``bound_s``. A sub-operation whose inputs are
        all as in the current schedule (no predecessor re-timed to another finish, its accelerator free
        at the same time) keeps its times and is only checked against the bounds; one whose transfers do
        not change (not the moved sub-operation nor a successor of it) keeps its duration."""
        succs, tail, pred_ids, duration = self._succs, self._tail, self._pred_ids, self._duration
        free_at, changed, rewired = self._free_at, self._changed, self._rewired
        device, start, end, incoming = self._work
        cut_s = bound_s + sum(t for _, t in shed)  # a finish plus its tail past this is out, whatever it sheds
        last = max((s for s, _ in shed), default=-1)
        for k in range(first, stop):
            d = device[k]
            came_free = free[d]
            if not changed[k] and came_free == free_at[k]:
                finish = end[k]
                settled = finish + tail[k]  # as the current schedule has it
                if finish >= beat_s or (
                    settled >= bound_s and (settled >= cut_s or settled >= bound_s + self._shed_behind(k, shed, last))
                ):
                    return k
                free[d] = finish
                continue
            if rewired[k]:
                ready, received, took = self._rewired_inputs(k)
            else:
                ready, received, took = 0.0, None, duration[k]
                for p in pred_ids[k]:
                    if end[p] > ready:  # noqa: PLR1730 (a comparison is faster than max() in this inner loop)
                        ready = end[p]
            begin = came_free if came_free > ready else ready
            finish = begin + took
            if finish >= beat_s:
                return k
            settled = finish + tail[k]
            if settled >= bound_s and (settled >= cut_s or settled >= bound_s + self._shed_behind(k, shed, last)):
                return k
            if finish != end[k]:
                end[k] = finish
                for s in succs[k]:
                    changed[s] = 1
            start[k], free[d] = begin, finish
            if received is not None:
                incoming[k] = received
        return stop

    def _rewired_inputs(self, k: int) -> tuple[float, float, float]:
        """In the working copy: when sub-operation ``k``'s inputs are all made, the bytes it receives from
        other accelerators and its duration (receiving, then computing)."""
        device, end = self._work[0], self._work[2]
        d = device[k]
        ready, received = 0.0, 0.0
        for p, nbytes in self._preds[k]:
            if end[p] > ready:  # noqa: PLR1730
                ready = end[p]
            if device[p] != d:
                received += nbytes
        return ready, received, received / self._bandwidth + self._seconds[k][d]

    def _shed_behind(self, k: int, shed: Sequence[tuple[int, float]], last: int) -> float:
        """What ``shed`` (successors of the moved sub-operation, each with the seconds it loses; ``last`` the
        latest of them) takes off the chain of sub-operation ``k``'s tail: the sum over those on it (each an
        ancestor of ``k`` in the forest of tail chains)."""
        if last <= k:
            return 0.0  # only later sub-operations are on the chain behind k
        if last >= len(self._enter):  # numbered when first needed after each change of the tails, as far as needed
            first = self._tails_from
            self._number_chains(min(len(self._parent), max(last + 1, 2 * len(self._enter) - first)))
        enter, leave = self._enter, self._leave
        at, behind = enter[k], 0.0
        for s, t in shed:
            if enter[s] <= at < leave[s] and s > k:
                behind += t
        return behind

    def _tails(self, first: int) -> None:
        """Makes the tails hold from sub-operation ``first`` on: per sub-operation, the longest chain of
        durations after it finishes, through its successors and the next sub-operation on its
        accelerator (and the next sub-operation on that chain)."""
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

    def _number_chains(self, stop: int) -> None:
        """Numbers the forest of tail chains of sub-operations ``_tails_from`` to ``stop`` (a sub-operation's parent
        is the next on its chain, always a later one; one whose parent is ``stop`` or later is a root there) in
        pre-order: the descendants of ``s`` get ``enter[s]`` to ``leave[s]``, exclusive. A sub-operation's
        descendants all come before it, so they are those of the whole forest."""
        parent, first = self._parent, self._tails_from
        size = [1] * stop
        for k in range(first, stop):  # children come before their parent
            if parent[k] >= 0 and parent[k] < stop:
                size[parent[k]] += size[k]
        enter, slot = [0] * stop, [0] * stop  # slot: where a sub-operation's next child's numbers start
        roots = 0
        for k in range(stop - 1, first - 1, -1):  # parents before their children
            p = parent[k]
            if p < 0 or p >= stop:
                enter[k], roots = roots, roots + size[k]
            else:
                enter[k] = slot[p]
                slot[p] += size[k]
            slot[k] = enter[k] + 1
        self._enter, self._leave = enter, [e + z for e, z in zip(enter, size, strict=True)]
