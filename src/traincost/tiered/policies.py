"""The placement policies of TM-Training (sections 2.1, 3, 5.1), each a class behind ``engine.Policy``.

===================  ==========================================================================
policy               behaviour
===================  ==========================================================================
hbm_only             the baseline: 32 GB of HBM, every byte in Tier 1
hor_off              horizontal; Belady's replacement; proactive prefetch of data that would stall;
                     no promotion when reading straight from Tier 2 causes no stall; outputs that
                     Belady would evict first bypass Tier 1
hor_on               horizontal; LRU; everything starts in Tier 2 and is promoted on access
ver_off              vertical (Tier 1 caches Tier 2); Belady; proactive fills
ver_on               vertical; LRU; fills on demand
sentinel             horizontal address space, but reads only from Tier 1: data needed within the
                     migration interval is promoted ahead, data used and not needed within it demoted
autotm               an ILP (OR-Tools CP-SAT) over each op's four in/out placement cases
                     (``traincost.tiered.autotm``), executed as planned (LRU if Tier 1 overflows)
deeptm               AutoTM's plan for the first layer; afterwards outputs go to Tier 1 and evictions
                     cost no run time (the DRL agent's idealisation, section 5.1)
tm_training          horizontal; outputs split between tiers by the ratio of their op type, found at
                     its first occurrence by Algorithms 1-3 (``split_ratio``, which sizes the Tier 2
                     share to stream within the prefetch window or accepts the overhead); promotes
                     only hot data (read in several passes); LRU that spares data promoted and not
                     yet used, evicting ahead of a full Tier 1
tm_training_off      TM-Training with Belady's replacement
ideal                TM-Training with Belady's replacement and each data type's ratio tuned exactly
                     (on a grid 8x finer than 1/seq_len, from its first occurrence on)
===================  ==========================================================================

The migration interval of Sentinel and the look-ahead of proactive prefetching are ``LOOKAHEAD_OPS``.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Mapping

import numpy as np

from traincost.errors import ConfigError
from traincost.tiered.engine import Simulator
from traincost.tiered.split_ratio import DataCost, adjust_ratio, approximate_ratio, best_ratio
from traincost.tiered.trace import NEVER

__all__ = ["POLICIES", "make_policy", "LOOKAHEAD_OPS", "HEADROOM"]

LOOKAHEAD_OPS = 8
"""Ops ahead that proactive prefetching (and Sentinel's migration interval) looks."""
HEADROOM = 0.02
"""Share of Tier 1 TM-Training keeps free by evicting ahead of need."""
_HOT_READS = 1.5
"""Data still to be read more than this many times its size (several passes or readers) is hot."""


class _Policy:
    """Defaults: horizontal, LRU, persistent data placed in Tier 1 by first use, outputs to Tier 1."""

    name = ""
    vertical = False
    belady = False

    def start(self, sim: Simulator) -> None:
        _place_by_first_use(sim, self.initial_fraction)

    def initial_fraction(self, sim: Simulator, tensor: int) -> float:
        return 1.0

    def before_op(self, sim: Simulator, k: int, issue_s: float) -> None:
        return None

    def fetch(self, sim: Simulator, k: int, tensor: int, nbytes: float, issue_s: float) -> float:
        return sim.read(tensor, nbytes, issue_s)

    def store_fraction(self, sim: Simulator, k: int, tensor: int) -> float:
        return 1.0

    def after_op(self, sim: Simulator, k: int) -> None:
        return None

    def _evicted(self, sim: Simulator, k: int, nxt: int) -> bool:
        """Whether Tier 1 will have evicted data stored at op ``k`` by its next use at ``nxt``: the live data
        outgrows Tier 1 in between, and more new data than Tier 1 holds is written meanwhile."""
        room = sim.tier1_capacity * (1 - HEADROOM)
        return bool(self.live[k:nxt].max() > room and self.written[nxt] - self.written[k + 1] > room)

    def victim_priority(self, sim: Simulator, tensor: int, k: int) -> float:
        if self.belady:  # the next use first (Trace.next_use)
            uses = sim.trace.accesses[tensor]
            i = bisect.bisect_right(uses, k)
            return -float(uses[i] if i < len(uses) else NEVER)
        return float(sim.last_access[tensor])

    def evictable(self, sim: Simulator, tensor: int, k: int) -> bool:
        return True


def _place_by_first_use(sim: Simulator, fraction: Callable[[Simulator, int], float]) -> None:
    """Place persistent tensors, those used first going first into Tier 1."""
    for t in sim.walk.persistent_by_first_use:
        sim.place(t, fraction(sim, t))


def _tier2_stalls(sim: Simulator, k: int, tensor: int, nbytes: float, issue_s: float) -> bool:
    """Whether reading ``tensor``'s Tier 2 share straight to SRAM for op ``k``, behind what Tier 2 already has
    queued at ``issue_s``, outlasts the op's prefetch window."""
    size = sim.size_bytes[tensor]
    share2 = 1.0 - sim.resident[tensor] / size if size > 0 else 0.0
    if share2 <= 0:
        return False
    backlog = max(0.0, sim.t2.free_s - issue_s)
    return backlog + nbytes * share2 / sim.system.tier2.read_bytes_per_s > sim.window_s(k)


def _promote_then_read(sim: Simulator, k: int, tensor: int, nbytes: float, issue_s: float) -> float:
    """Promote ``tensor`` wholly (what does not fit streams through Tier 1), then read it from Tier 1."""
    ready = sim.promote(tensor, issue_s, k)
    size = sim.size_bytes[tensor]
    missing = size - sim.resident[tensor]
    if missing > 0 and sim.policy.vertical:
        ready = max(ready, sim.stream_through(missing, issue_s))
    return sim.read(tensor, nbytes, ready)


def _prefetch_ahead(sim: Simulator, k: int, issue_s: float, wanted: Callable[[int, int, float], bool]) -> None:
    """Promote, while Tier 2 is idle, the inputs of the next ``LOOKAHEAD_OPS`` ops that ``wanted(op, tensor, bytes)`` picks."""
    reads, first = sim.walk.reads_in_order
    accesses, t2 = sim.trace.accesses, sim.t2
    for j, t, b in reads[first[k + 1] : first[min(len(first) - 1, k + 1 + LOOKAHEAD_OPS)]]:
        if t2.free_s > issue_s:
            return
        written = sim.persistent[t] or accesses[t][0] < k
        if written and sim.resident[t] < sim.size_bytes[t] and wanted(j, t, b):
            sim.promote(t, issue_s, k)


class HbmOnly(_Policy):
    name = "hbm_only"


class HorOff(_Policy):
    name = "hor_off"
    belady = True

    def before_op(self, sim: Simulator, k: int, issue_s: float) -> None:
        _prefetch_ahead(sim, k, issue_s, lambda j, t, b: _tier2_stalls(sim, j, t, b, issue_s))

    def fetch(self, sim: Simulator, k: int, tensor: int, nbytes: float, issue_s: float) -> float:
        if _tier2_stalls(sim, k, tensor, nbytes, issue_s):
            return _promote_then_read(sim, k, tensor, nbytes, issue_s)
        return sim.read(tensor, nbytes, issue_s)

    def store_fraction(self, sim: Simulator, k: int, tensor: int) -> float:
        return _belady_keeps(sim, k, tensor)


def _belady_keeps(sim: Simulator, k: int, tensor: int) -> float:
    """1 if Belady's algorithm would keep ``tensor`` in Tier 1 (free room, or used before the first victim), else 0."""
    if sim.tier1_capacity - sim.tier1_used >= sim.size_bytes[tensor]:
        return 1.0
    victim = sim.peek_victim(k)
    if victim < 0:
        return 0.0
    return 1.0 if sim.next_use(tensor, k) < sim.next_use(victim, k) else 0.0


class HorOn(_Policy):
    name = "hor_on"

    def initial_fraction(self, sim: Simulator, tensor: int) -> float:
        return 0.0  # everything starts in Tier 2 (placed in Tier 1 only if Tier 2 lacks room)

    def fetch(self, sim: Simulator, k: int, tensor: int, nbytes: float, issue_s: float) -> float:
        return _promote_then_read(sim, k, tensor, nbytes, issue_s)


class VerOff(_Policy):
    name = "ver_off"
    vertical = True
    belady = True

    def initial_fraction(self, sim: Simulator, tensor: int) -> float:
        return 0.0  # a cold cache

    def before_op(self, sim: Simulator, k: int, issue_s: float) -> None:
        _prefetch_ahead(sim, k, issue_s, lambda j, t, b: True)

    def fetch(self, sim: Simulator, k: int, tensor: int, nbytes: float, issue_s: float) -> float:
        return _promote_then_read(sim, k, tensor, nbytes, issue_s)


class VerOn(VerOff):
    name = "ver_on"
    belady = False

    def before_op(self, sim: Simulator, k: int, issue_s: float) -> None:
        return None


class Sentinel(HorOn):
    name = "sentinel"

    def before_op(self, sim: Simulator, k: int, issue_s: float) -> None:
        _prefetch_ahead(sim, k, issue_s, lambda j, t, b: True)

    def after_op(self, sim: Simulator, k: int) -> None:
        """Demote what op ``k`` used and the next interval does not need, if that interval's data lacks room."""
        trace = sim.trace
        ahead = range(k + 1, min(len(trace), k + 1 + LOOKAHEAD_OPS))
        needed = {t for j in ahead for t, _ in trace.reads[j]}
        missing = sum(sim.size_bytes[t] - sim.resident[t] for t in needed)
        if sim.tier1_capacity - sim.tier1_used >= missing:
            return
        for t in {t for t, _ in trace.reads[k]} | {t for t, _ in trace.writes[k]}:
            if sim.resident[t] > 0 and NEVER > sim.next_use(t, k) > k + LOOKAHEAD_OPS:
                sim.demote(t, sim.resident[t], sim.now_s)


class AutoTM(_Policy):
    """Executes a plan: ``tier1[t]`` (tensor t lives in Tier 1) and ``promote[op]`` (op reads from Tier 1)."""

    name = "autotm"

    def __init__(self, tier1: np.ndarray, promote: np.ndarray) -> None:
        self.tier1 = tier1
        self.promote = promote

    def _base(self, sim: Simulator, tensor: int) -> int:
        return tensor % len(sim.base.size_bytes)

    def initial_fraction(self, sim: Simulator, tensor: int) -> float:
        return float(self.tier1[self._base(sim, tensor)])

    def fetch(self, sim: Simulator, k: int, tensor: int, nbytes: float, issue_s: float) -> float:
        if self.promote[k % sim.trace.ops_per_iteration]:
            return _promote_then_read(sim, k, tensor, nbytes, issue_s)
        return sim.read(tensor, nbytes, issue_s)

    def store_fraction(self, sim: Simulator, k: int, tensor: int) -> float:
        return float(self.tier1[self._base(sim, tensor)])


class DeepTM(AutoTM):
    name = "deeptm"

    def start(self, sim: Simulator) -> None:
        super().start(sim)
        sim.free_evictions = not sim.system.deeptm_eviction_costs_time
        self.first_layer_ops = _first_layer_ops(sim.trace.signature[: sim.trace.ops_per_iteration])

    def _planned(self, sim: Simulator, k: int) -> bool:
        return k % sim.trace.ops_per_iteration < self.first_layer_ops

    def fetch(self, sim: Simulator, k: int, tensor: int, nbytes: float, issue_s: float) -> float:
        if self._planned(sim, k):
            return super().fetch(sim, k, tensor, nbytes, issue_s)
        return sim.read(tensor, nbytes, issue_s)

    def store_fraction(self, sim: Simulator, k: int, tensor: int) -> float:
        return super().store_fraction(sim, k, tensor) if self._planned(sim, k) else 1.0


def _first_layer_ops(signature: np.ndarray) -> int:
    """Ops before the first repeated op type: the first layer of a stack of identical layers."""
    seen: set[int] = set()
    for i, s in enumerate(signature):
        if int(s) in seen:
            return i
        seen.add(int(s))
    return len(signature)


class TMTraining(_Policy):
    name = "tm_training"
    exact = False

    def start(self, sim: Simulator) -> None:
        self.ratio: dict[tuple[int, int], float] = {}
        self.live = sim.walk.live_bytes
        self.written = sim.walk.written_bytes
        # per tensor, the bytes still to be read from each of its reads on (to tell hot data; the first is all)
        self.remaining = sim.walk.reads_from
        super().start(sim)

    def before_op(self, sim: Simulator, k: int, issue_s: float) -> None:
        _prefetch_ahead(sim, k, issue_s, lambda j, t, b: self._hot(sim, t, j))
        free = sim.tier1_capacity - sim.tier1_used
        if free < HEADROOM * sim.tier1_capacity:
            sim.make_room(HEADROOM * sim.tier1_capacity, k)

    def _hot(self, sim: Simulator, tensor: int, k: int) -> bool:
        """Hot data: what is still to be read of it from op ``k`` on exceeds its size (several passes or readers)."""
        ops, remaining = self.remaining[tensor]
        i = bisect.bisect_left(ops, k)
        return i < len(ops) and remaining[i] > _HOT_READS * sim.size_bytes[tensor]

    def fetch(self, sim: Simulator, k: int, tensor: int, nbytes: float, issue_s: float) -> float:
        # the Tier 2 share was sized at store time to stream within the window (or accepted as overhead)
        if sim.resident[tensor] < sim.size_bytes[tensor] and self._hot(sim, tensor, k):
            return _promote_then_read(sim, k, tensor, nbytes, issue_s)
        return sim.read(tensor, nbytes, issue_s)

    def store_fraction(self, sim: Simulator, k: int, tensor: int) -> float:
        # a data type of the request timing monitor (Table 4): one output slot of one op type
        slot = next(i for i, (t, _) in enumerate(sim.trace.writes[k]) if t == tensor)
        label = (sim.walk.signature[k], slot)
        if label not in self.ratio:
            self.ratio[label] = self._decide(sim, k, tensor)
            if not self.exact:
                return 1.0  # first occurrence: measured with the data in Tier 1
        return self.ratio[label]

    def _decide(self, sim: Simulator, k: int, tensor: int) -> float:
        """Algorithms 1-3 for the data ``tensor`` written at op ``k``, timed at its next read."""
        trace, system = sim.trace, sim.system
        read_at = sim.next_use(tensor, k)
        if read_at >= NEVER:
            return 1.0
        capacity2 = system.capacity_bytes - sim.tier1_capacity
        cost = DataCost(
            size_bytes=float(sim.size_bytes[tensor]),
            read_bytes=float(self.remaining[tensor][1][0]) if tensor in self.remaining else 0.0,
            next_read_bytes=float(sum(b for t, b in trace.reads[read_at] if t == tensor)),
            t_req_s=sim.window_s(read_at),
            evicted=self._evicted(sim, k, read_at),
            w1_pj=system.tier1.write_pj_per_byte,
            rd1_pj=system.tier1.read_pj_per_byte,
            w2_pj=system.tier2.write_pj_per_byte,
            rd2_pj=system.tier2.read_pj_per_byte,
            bw2_bytes_per_s=system.tier2.read_bytes_per_s,
            static_w=system.accelerator_static_w
            + system.tier1.static_w(sim.tier1_capacity)
            + system.tier2.static_w(max(0.0, capacity2)),
        )
        if self.exact:
            return best_ratio(cost, resolution=8 * trace.seq_len)
        start = approximate_ratio(
            cost.t_req_s, cost.next_read_bytes, system.tier1.read_bytes_per_s, system.tier2.read_bytes_per_s
        )
        return adjust_ratio(start, trace.seq_len, cost)

    def _evicted(self, sim: Simulator, after: int, use: int) -> bool:
        """Whether Tier 1 will have evicted data touched at op ``after`` by its use at ``use``: the live data
        outgrows Tier 1 in between, and more new data than Tier 1 holds is written meanwhile."""
        room = sim.tier1_capacity * (1 - HEADROOM)
        return bool(self.live[after:use].max() > room and self.written[use] - self.written[after + 1] > room)

    def evictable(self, sim: Simulator, tensor: int, k: int) -> bool:
        return tensor not in sim.promoted_unused


class TMTrainingOff(TMTraining):
    name = "tm_training_off"
    belady = True


class Ideal(TMTrainingOff):
    """The offline optimal replacement (Belady, as Hor_Off) with data splitting at exactly tuned ratios
    (section 5.1), decided from the first occurrence on."""

    name = "ideal"
    exact = True


POLICIES: Mapping[str, type[_Policy]] = {
    cls.name: cls for cls in (HbmOnly, HorOff, HorOn, VerOff, VerOn, Sentinel, AutoTM, DeepTM, TMTraining, TMTrainingOff, Ideal)
}


def make_policy(name: str, *, plan: tuple[np.ndarray, np.ndarray] | None = None) -> _Policy:
    """A fresh policy by name; ``autotm`` and ``deeptm`` need the AutoTM ``plan`` (tier1, promote).

    Raises:
        ConfigError: an unknown name, or a missing plan.
    """
    if name not in POLICIES:
        raise ConfigError(f"tiered policy {name!r}: expected one of {', '.join(POLICIES)}")
    cls = POLICIES[name]
    if issubclass(cls, AutoTM):
        if plan is None:
            raise ConfigError(f"tiered policy {name!r} needs an AutoTM plan")
        return cls(*plan)
    return cls()
