"""The placement policies of TM-Training (sections 2.1, 3, 5.1), each a subclass of ``engine.Policy``.

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
autotm               per op, the best of its four cases (inputs from Tier 1 or Tier 2,
                     outputs to Tier 1 or Tier 2): the one that stalls least, then moves
                     fewest Tier 2 bytes; LRU
deeptm               AutoTM's cases in the first layer; afterwards outputs go to Tier 1 and evictions
                     cost no run time (the DRL agent's idealisation, section 5.1)
tm_training          horizontal; outputs split between tiers by the ratio of their op type, found at
                     its first occurrence by Algorithms 1-3 (``split_ratio``, which sizes the Tier 2
                     share to stream within the prefetch window or accepts the overhead); promotes
                     only hot data (read in several passes), and no share a split placed in
                     Tier 2; LRU that spares data promoted and not yet used, evicting ahead of
                     a full Tier 1
tm_training_off      TM-Training with Belady's replacement
ideal                TM-Training with Belady's replacement and each data type's ratio tuned exactly
                     (on a grid 8x finer than 1/seq_len, from its first occurrence on)
===================  ==========================================================================

The migration interval of Sentinel and the look-ahead of proactive prefetching are ``LOOKAHEAD_OPS``.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from traincost.errors import ConfigError
from traincost.tiered.engine import Policy, Simulator
from traincost.tiered.split_ratio import DataCost, adjust_ratio, approximate_ratio, best_ratio
from traincost.tiered.trace import NEVER

__all__ = ["POLICIES", "make_policy", "LOOKAHEAD_OPS", "HEADROOM"]

LOOKAHEAD_OPS = 8
"""Ops ahead that proactive prefetching (and Sentinel's migration interval) looks."""
HEADROOM = 0.02
"""Share of Tier 1 TM-Training keeps free by evicting ahead of need."""
_HOT_READS = 1.5
"""Data still to be read more than this many times its size (several passes or readers) is hot."""


def _tier2_stalls(sim: Simulator, k: int, tensor: int, nbytes: float, issue_s: float) -> bool:
    """Whether reading ``tensor``'s Tier 2 share straight to SRAM for op ``k``, behind what Tier 2 already has
    queued at ``issue_s``, outlasts the op's prefetch window."""
    size = sim.size_bytes[tensor]
    share2 = 1.0 - sim.resident[tensor] / size if size > 0 else 0.0
    if share2 <= 0:
        return False
    backlog = max(0.0, sim.t2.free_s - issue_s)
    return backlog + nbytes * share2 / sim.system.tier2.read_bytes_per_s > sim.window_s(k)


def _promote_then_read(sim: Simulator, k: int, tensor: int, nbytes: float, issue_s: float, *, share: float = 1.0) -> float:
    """Promote ``share`` of ``tensor`` (vertical: wholly; what does not fit streams through Tier 1), then read it."""
    ready = sim.promote(tensor, issue_s, k, share=share)
    size = sim.size_bytes[tensor]
    missing = size - sim.resident[tensor]
    if missing > 0 and sim.policy.vertical:
        ready = max(ready, sim.stream_through(missing, issue_s))
    return sim.read(tensor, nbytes, ready)


def _prefetch_ahead(
    sim: Simulator,
    k: int,
    issue_s: float,
    wanted: Callable[[int, int, float], bool],
    share: Callable[[int], float] = lambda t: 1.0,
) -> None:
    """Promote, while Tier 2 is idle, the inputs of the next ``LOOKAHEAD_OPS`` ops that ``wanted(op, tensor, bytes)`` picks
    (up to ``share(tensor)`` of each)."""
    reads, first = sim.walk.reads_in_order
    accesses, t2 = sim.trace.accesses, sim.t2
    for j, t, b in reads[first[k + 1] : first[min(len(first) - 1, k + 1 + LOOKAHEAD_OPS)]]:
        if t2.free_s > issue_s:
            return
        written = sim.persistent[t] or accesses[t][0] < k
        if written and sim.resident[t] < sim.size_bytes[t] and wanted(j, t, b):
            sim.promote(t, issue_s, k, share=share(t))


class HbmOnly(Policy):
    name = "hbm_only"


class HorOff(Policy):
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


class HorOn(Policy):
    name = "hor_on"

    def initial_fraction(self, sim: Simulator, tensor: int) -> float:
        return 0.0  # everything starts in Tier 2 (placed in Tier 1 only if Tier 2 lacks room)

    def fetch(self, sim: Simulator, k: int, tensor: int, nbytes: float, issue_s: float) -> float:
        return _promote_then_read(sim, k, tensor, nbytes, issue_s)


class VerOff(Policy):
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


_CASES = ((False, True), (True, True), (False, False), (True, False))
"""AutoTM's four cases of an op: (inputs read from Tier 1, outputs written to Tier 1); ties go to the first."""


class AutoTM(Policy):
    """AutoTM as TM-Training models it (section 5.1): "For each operation, it analyzes four cases, as there are four
    combinations where input and output data are stored across Tiers 1 and 2 ... we derive all results of four cases
    for each operation. Then, we choose the best case among the results."

    Before op ``k`` its four cases are costed on the simulator's state: inputs from Tier 1 (their Tier 2 bytes promoted
    first) or read where they are (Tier 2 bytes straight from Tier 2); outputs to Tier 1 (room made by demoting what
    is there) or to Tier 2. A case's Tier 2 time is the channel's backlog plus the promotions or direct reads, the
    demotions and the Tier 2 writes it causes; its stall is what of that outlasts the op's prefetch window and compute,
    plus, for outputs stored in Tier 2, what their next reader's fetch of them from Tier 2 outlasts that reader's
    prefetch window (where an output is stored decides how it is read: the case is of "input and output data", and
    AutoTM's ILP, which the sentence names, charges a tensor's location to every kernel that uses it:
    ``TieredSystem.autotm_lookahead``).
    The case that stalls least is applied (AutoTM minimises run time), then the one that moves fewest bytes through
    Tier 2 (a promotion counts twice: it is read from Tier 2 and moved between tiers); persistent data starts in Tier 1
    as far as it fits (first used first).
    """

    name = "autotm"

    def start(self, sim: Simulator) -> None:
        super().start(sim)
        self.case = (False, True)

    def before_op(self, sim: Simulator, k: int, issue_s: float) -> None:
        self.case = _best_case(sim, k, issue_s)

    def fetch(self, sim: Simulator, k: int, tensor: int, nbytes: float, issue_s: float) -> float:
        if self.case[0]:
            return _promote_then_read(sim, k, tensor, nbytes, issue_s)
        return sim.read(tensor, nbytes, issue_s)

    def store_fraction(self, sim: Simulator, k: int, tensor: int) -> float:
        return 1.0 if self.case[1] else 0.0


def _best_case(sim: Simulator, k: int, issue_s: float) -> tuple[bool, bool]:
    """AutoTM's case for op ``k`` (``AutoTM``): (inputs from Tier 1, outputs to Tier 1)."""
    tier2 = sim.system.tier2
    reads, writes, size, resident = sim.trace.reads[k], sim.trace.writes[k], sim.size_bytes, sim.resident
    direct = sum(b * (1.0 - resident[t] / size[t]) for t, b in reads if size[t] > 0)  # Tier 2 bytes read where they are
    promote = sum(size[t] - resident[t] for t in {t for t, _ in reads})
    written = sum(b for _, b in writes)
    outputs = sum(size[t] - resident[t] for t in {t for t, _ in writes})
    free = sim.tier1_capacity - sim.tier1_used
    backlog = max(0.0, sim.t2.free_s - issue_s)
    budget = sim.window_s(k) + sim.walk.compute_s[k]
    read_later, stall_later = _next_reads_from_tier2(sim, k) if sim.system.autotm_lookahead else (0.0, 0.0)

    def cost(case: tuple[bool, bool]) -> tuple[float, float]:
        inputs_t1, outputs_t1 = case
        demote = max(0.0, (promote if inputs_t1 else 0.0) + (outputs if outputs_t1 else 0.0) - free)
        read2 = promote if inputs_t1 else direct
        write2 = demote + (0.0 if outputs_t1 else written)
        busy = backlog + read2 / tier2.read_bytes_per_s + write2 / tier2.write_bytes_per_s
        migrated = demote + (promote if inputs_t1 else 0.0)
        later = (0.0, 0.0) if outputs_t1 else (stall_later, read_later)
        return max(0.0, busy - budget) + later[0], read2 + write2 + migrated + later[1]

    return min(_CASES, key=cost)


def _bytes_of(pairs: tuple[tuple[int, float], ...], tensor: int) -> float:
    """The off-chip bytes of ``tensor`` among one op's (tensor, bytes) reads or writes."""
    return float(sum(b for t, b in pairs if t == tensor))


def _next_reads_from_tier2(sim: Simulator, k: int) -> tuple[float, float]:
    """If op ``k``'s outputs were stored in Tier 2: the bytes their next readers would fetch from it, and the time those
    fetches outlast the readers' prefetch windows (each reader's fetches of them together)."""
    per_reader: dict[int, float] = {}
    trace = sim.trace
    for t, _ in trace.writes[k]:
        j = trace.next_use(t, k)
        if j < NEVER:
            per_reader[j] = per_reader.get(j, 0.0) + _bytes_of(trace.reads[j], t)
    rate = sim.system.tier2.read_bytes_per_s
    stall = sum(max(0.0, nbytes / rate - sim.window_s(j)) for j, nbytes in per_reader.items())
    return sum(per_reader.values()), stall


class DeepTM(AutoTM):
    """DeepTM as TM-Training models it (section 5.1): AutoTM's cases during the first layer; from the second layer on,
    outputs are written to Tier 1 and evictions take no run time (the DRL agent's idealisation)."""

    name = "deeptm"

    def start(self, sim: Simulator) -> None:
        super().start(sim)
        sim.free_evictions = not sim.system.deeptm_eviction_costs_time
        self.first_layer_ops = _first_layer_ops(sim.trace.signature[: sim.trace.ops_per_iteration])

    def before_op(self, sim: Simulator, k: int, issue_s: float) -> None:
        first_layer = k % sim.trace.ops_per_iteration < self.first_layer_ops
        self.case = _best_case(sim, k, issue_s) if first_layer else (False, True)  # reads where data is, writes to Tier 1


def _first_layer_ops(signature: np.ndarray) -> int:
    """Ops before the first repeated op type: the first layer of a stack of identical layers."""
    seen: set[int] = set()
    for i, s in enumerate(signature):
        if int(s) in seen:
            return i
        seen.add(int(s))
    return len(signature)


class TMTraining(Policy):
    name = "tm_training"
    exact = False

    def start(self, sim: Simulator) -> None:
        self.ratio: dict[tuple[int, int], float] = {}
        self.split: dict[int, float] = {}  # tensors stored with a split ratio below 1, and that ratio
        self.live = sim.walk.live_bytes
        self.written = sim.walk.written_bytes
        # per tensor, the bytes still to be read from each of its reads on (to tell hot data; the first is all)
        self.remaining = sim.walk.reads_from
        super().start(sim)

    def before_op(self, sim: Simulator, k: int, issue_s: float) -> None:
        _prefetch_ahead(sim, k, issue_s, lambda j, t, b: self._promotable(sim, t, j), self._tier1_share)
        free = sim.tier1_capacity - sim.tier1_used
        if free < HEADROOM * sim.tier1_capacity:
            sim.make_room(HEADROOM * sim.tier1_capacity, k)

    def _tier1_share(self, tensor: int) -> float:
        """The share of ``tensor`` the hot-data rule may hold in Tier 1: its split ratio if one placed it, else all.
        Data stored with a split ratio keeps its Tier 2 share in Tier 2, to be prefetched from there: the split
        "leverages the bandwidth of Tier 1 and Tier 2 for prefetching the data to on-chip SRAM buffers" (section 1), and
        promoting that share would undo the placement the data placement manager chose to minimise migration (sections
        3.2, 4.2). What LRU demoted of its Tier 1 share is hot data like any other."""
        return self.split.get(tensor, 1.0)

    def _promotable(self, sim: Simulator, tensor: int, k: int) -> bool:
        """Whether the hot-data rule promotes ``tensor`` for op ``k``: it is hot (what is still to be read of it from
        op ``k`` on exceeds its size: several passes or readers) and less than its Tier 1 share is in Tier 1. Never
        where the system's ``hot_promotion`` switch is off (an ablation)."""
        if not sim.system.hot_promotion or sim.resident[tensor] >= self._tier1_share(tensor) * sim.size_bytes[tensor]:
            return False
        ops, remaining = self.remaining[tensor]
        i = bisect.bisect_left(ops, k)
        return i < len(ops) and remaining[i] > _HOT_READS * sim.size_bytes[tensor]

    def fetch(self, sim: Simulator, k: int, tensor: int, nbytes: float, issue_s: float) -> float:
        # the Tier 2 share was sized at store time to stream within the window (or accepted as overhead)
        if self._promotable(sim, tensor, k):
            return _promote_then_read(sim, k, tensor, nbytes, issue_s, share=self._tier1_share(tensor))
        return sim.read(tensor, nbytes, issue_s)

    def store_fraction(self, sim: Simulator, k: int, tensor: int) -> float:
        # a data type of the request timing monitor (Table 4): one output slot of one op type
        slot = next(i for i, (t, _) in enumerate(sim.trace.writes[k]) if t == tensor)
        label = (sim.walk.signature[k], slot)
        if label not in self.ratio:
            self.ratio[label] = self._decide(sim, k, tensor)
            if not self.exact:
                return 1.0  # first occurrence: measured with the data in Tier 1
        ratio = self.ratio[label]
        if ratio < 1.0:
            self.split[tensor] = ratio
        return ratio

    def _decide(self, sim: Simulator, k: int, tensor: int) -> float:
        """Algorithms 1-3 for the data ``tensor`` written at op ``k``, timed at its next read."""
        trace, system = sim.trace, sim.system
        read_at = sim.next_use(tensor, k)
        if read_at >= NEVER:
            return 1.0
        evicted = self._evicted(sim, k, read_at)
        if system.split_only_if_evicted and not evicted and not self.exact:
            return 1.0  # the ablation's reading of "splits ... as needed": Tier 1 keeps it, no split needed
        capacity2 = system.capacity_bytes - sim.tier1_capacity
        next_read = _bytes_of(trace.reads[read_at], tensor)
        written = _bytes_of(trace.writes[k], tensor)
        cost = DataCost(
            size_bytes=float(sim.size_bytes[tensor]),
            read_bytes=float(self.remaining[tensor][1][0]) if tensor in self.remaining else 0.0,
            next_read_bytes=next_read,
            t_req_s=self._request_interval_s(sim, read_at - 1, next_read),
            t_write_s=self._request_interval_s(sim, k, written),
            evicted=evicted,
            w1_pj=system.tier1.write_pj_per_byte,
            rd1_pj=system.tier1.read_pj_per_byte,
            w2_pj=system.tier2.write_pj_per_byte,
            rd2_pj=system.tier2.read_pj_per_byte,
            bw2_bytes_per_s=system.tier2.read_bytes_per_s,
            bw2_write_bytes_per_s=system.tier2.write_bytes_per_s,
            static_w=system.accelerator_static_w
            + system.tier1.static_w(sim.tier1_capacity)
            + system.tier2.static_w(max(0.0, capacity2)),
            accounting=system.split_energy,
        )
        if self.exact:
            return best_ratio(cost, resolution=8 * trace.seq_len)
        start = approximate_ratio(
            cost.t_req_s,
            cost.next_read_bytes,
            system.tier1.read_bytes_per_s,
            system.tier2.read_bytes_per_s,
            reading=system.split_ratio_reading,
        )
        return adjust_ratio(start, trace.seq_len, cost)

    @staticmethod
    def _request_interval_s(sim: Simulator, k: int, nbytes: float) -> float:
        """Algorithm 1's T_req, the "memory requests interval" of ``nbytes`` requested while op ``k`` computes: its share,
        by bytes, of that compute time, the requests of the window (op ``k``'s writes, op ``k + 1``'s reads) being
        spaced over it. Summed over a window's requests, the intervals make the window, so Tier 2 shares sized by them
        stream within it together, not each as if it had Tier 2 alone."""
        if k < 0:
            return 0.0
        requested = sim.walk.requested_bytes[k]
        return sim.walk.compute_s[k] * nbytes / requested if requested > 0 else 0.0

    def _evicted(self, sim: Simulator, after: int, use: int) -> bool:
        """Whether Tier 1 will have evicted data touched at op ``after`` by its use at ``use``: the live data
        outgrows Tier 1 in between, and more new data than Tier 1 holds is written meanwhile."""
        room = sim.tier1_capacity * (1 - HEADROOM)
        return bool(self.live[after:use].max() > room and self.written[use] - self.written[after + 1] > room)

    def evictable(self, sim: Simulator, tensor: int, k: int) -> bool:
        return tensor not in sim.promoted_unused

    def split_ratios(self) -> Sequence[float]:
        return tuple(self.ratio.values())


class TMTrainingOff(TMTraining):
    name = "tm_training_off"
    belady = True


class Ideal(TMTrainingOff):
    """The offline optimal replacement (Belady, as Hor_Off) with data splitting at exactly tuned ratios
    (section 5.1), decided from the first occurrence on."""

    name = "ideal"
    exact = True


POLICIES: Mapping[str, type[Policy]] = {
    cls.name: cls for cls in (HbmOnly, HorOff, HorOn, VerOff, VerOn, Sentinel, AutoTM, DeepTM, TMTraining, TMTrainingOff, Ideal)
}


def make_policy(name: str) -> Policy:
    """A fresh policy by name.

    Raises:
        ConfigError: an unknown name.
    """
    if name not in POLICIES:
        raise ConfigError(f"tiered policy {name!r}: expected one of {', '.join(POLICIES)}")
    return POLICIES[name]()
