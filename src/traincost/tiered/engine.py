"""The event-driven simulator of training iterations on one chip with a two-tier off-chip memory.

Time advances op by op (the ops of a ``Walk``: the trace repeated ``iterations`` times); data moves on two channels, one
per tier, each a FIFO resource that serves one transfer after another at its bandwidth, so reads,
writes, promotions and demotions on a tier share its bandwidth honestly.

For op ``k``:

1. **Prefetch.** Its inputs are fetched into CMEM/VMEM from when op ``k-1`` starts computing (double
   buffering). A tensor's bytes come from where they are: the Tier 1 share over the Tier 1 channel and
   the rest over the Tier 2 channel, in parallel. The placement policy may first promote (Tier 2 →
   Tier 1) what it wants, or have promoted it earlier (proactive prefetch).
2. **Compute.** The op starts when the previous one has finished and its inputs are on chip; any wait
   is a stall.
3. **Outputs.** Written as the op runs, a policy-chosen share to Tier 1 (making room first) and the
   rest to Tier 2.
4. **Release.** A tensor used for the last time leaves memory (persistent state never does; nor, under
   vertical tiering, does a cached copy before it is evicted).

Making room in Tier 1 evicts victims in the policy's order (LRU, Belady …): a victim with a future use
is demoted (Tier 1 → Tier 2), a dead one dropped (written back if it is a dirty cache line). Migrations
move whole pages.

Vertical tiering: Tier 2 holds every byte and Tier 1 is a hardware cache in front of it (section 2.1: "only
Tier 2 memory is mapped to address space, while Tier 1 works as a hardware cache"; a page-based DRAM cache
after Unison Cache). "Memory requests cannot directly access Tier 2, so all the data should be prefetched into
Tier 1" (section 2.1): every read is served from Tier 1, a miss filled from Tier 2 first, and writes allocate in
Tier 1. Dirty pages are written back to Tier 2 when evicted. A hardware cache does not know which data the
program has freed: a dead tensor's pages stay cached until evicted, and dirty ones are then written back like
any other (we model no reuse of freed addresses, which would let new data overwrite dead pages in place).

Reported for the last iteration (the steady one): its ``Tally`` (time, bytes, dynamic energies) and the
``Outcome`` that ``outcome.price`` makes of it: energy as accelerator (MACs, SRAM accesses, SRAM static
power over the iteration) + tier-to-SRAM traffic + tier-to-tier migration + static power of both tiers
over the iteration (over its compute time only when the system's ``stall_static_power`` switch is off).
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Sequence

import numpy as np

from traincost.errors import ConfigError
from traincost.tiered.outcome import SPLIT_RATIO_FIELDS, Outcome, Tally, price
from traincost.tiered.system import GIB, TieredSystem
from traincost.tiered.trace import NEVER
from traincost.tiered.walk import Walk

__all__ = ["Policy", "Simulator", "simulate", "simulate_tally", "tier1_bytes_for_ratio"]


def tier1_bytes_for_ratio(
    ratio: float, parameter_bytes: float, capacity_bytes: float, *, share_per_ratio: float | None = None
) -> float:
    """Tier 1 size for a ratio of Tier 1 to model (parameter) size, capped at the chip's address space ``capacity_bytes``.

    ``share_per_ratio`` given: ``ratio × share_per_ratio`` of the address space (TM-Training names its Tier 1 sizes by
    the share of memory they are: 25:1 "corresponds to allocating 12.5% of the total memory capacity to Tier 1", 100:1
    to 50 %, so 0.005 per unit of ratio); otherwise ``ratio × parameter_bytes``.
    """
    if not ratio > 0:  # also rejects NaN
        raise ConfigError(f"Tier 1 ratio {ratio}: expected > 0 (Tier 1 size / model size)")
    if share_per_ratio is not None:
        if not share_per_ratio > 0:
            raise ConfigError(f"Tier 1 share per unit of ratio {share_per_ratio}: expected > 0")
        return min(ratio * share_per_ratio, 1.0) * capacity_bytes
    return min(ratio * parameter_bytes, capacity_bytes)


class Policy:
    """A placement policy: where outputs go, what to promote, which Tier 1 data to evict first.

    The simulator calls these hooks; each placement policy of ``policies`` subclasses this class and overrides the
    hooks it changes. The defaults are the HBM-only baseline: horizontal tiering, persistent data placed wholly in
    Tier 1 in order of first use, every read from where the data is, every output to Tier 1, and LRU replacement
    (Belady's, the next use furthest away first, where ``belady`` is set).

    Attributes:
        name: the policy's name, as ``tiered-study --policies`` names it.
        vertical: Tier 1 caches Tier 2 (every byte in Tier 2, every read through Tier 1) instead of adding to it.
        belady: the default eviction order is Belady's, not LRU.
    """

    name = ""
    vertical = False
    belady = False

    def start(self, sim: Simulator) -> None:
        """Place the persistent tensors before the first op (``sim.place``): those used first go first into Tier 1,
        each at its ``initial_fraction``."""
        for tensor in sim.walk.persistent_by_first_use:
            sim.place(tensor, self.initial_fraction(sim, tensor))

    def initial_fraction(self, sim: Simulator, tensor: int) -> float:
        """The share of persistent ``tensor`` the default ``start`` wants in Tier 1."""
        return 1.0

    def before_op(self, sim: Simulator, k: int, issue_s: float) -> None:
        """Proactive work when op ``k``'s prefetch may start (promotions, demotions)."""
        return None

    def fetch(self, sim: Simulator, k: int, tensor: int, nbytes: float, issue_s: float) -> float:
        """Bring ``nbytes`` of ``tensor`` on chip for op ``k``; return when they are there."""
        return sim.read(tensor, nbytes, issue_s)

    def store_fraction(self, sim: Simulator, k: int, tensor: int) -> float:
        """The share of output ``tensor`` of op ``k`` written to Tier 1."""
        return 1.0

    def after_op(self, sim: Simulator, k: int) -> None:
        """Work once op ``k`` has computed (e.g. demote what it used)."""
        return None

    def victim_priority(self, sim: Simulator, tensor: int, k: int) -> float:
        """Eviction order key at op ``k``: lowest goes first (LRU, or Belady's next use where ``belady``)."""
        if self.belady:  # the next use first (Trace.next_use)
            uses = sim.trace.accesses[tensor]
            i = bisect.bisect_right(uses, k)
            return -float(uses[i] if i < len(uses) else NEVER)
        return float(sim.last_access[tensor])

    def evictable(self, sim: Simulator, tensor: int, k: int) -> bool:
        """Whether ``tensor`` may be evicted now."""
        return True

    def split_ratios(self) -> Sequence[float]:
        """The split ratios (Tier 1 shares) chosen, one per data type; none for a policy that does not split."""
        return ()


class _Channel:
    """One tier's port: transfers are served one after the other."""

    __slots__ = ("free_s",)

    def __init__(self) -> None:
        self.free_s = 0.0

    def serve(self, start_s: float, seconds: float) -> float:
        free_s = self.free_s
        self.free_s = (free_s if free_s > start_s else start_s) + seconds
        return self.free_s


class Simulator:
    """The state of one simulation and the primitives policies use.

    Attributes (read by policies): ``walk`` (what it simulates), ``trace`` (``walk.trace``), ``base`` (one
    iteration of it), ``size_bytes`` and ``persistent`` (per tensor, the walk's lists), ``system``,
    ``tier1_capacity`` (bytes), ``resident`` (per tensor, bytes in Tier 1), ``tier1_used``, ``last_access``
    (per tensor, op position), ``promoted_unused`` (tensors promoted and not read since), ``counting`` (in
    the measured iteration).
    """

    def __init__(self, walk: Walk, system: TieredSystem, policy: Policy, *, tier1_bytes: float) -> None:
        self.walk = walk
        self.base = walk.base
        self.trace = walk.trace
        self.size_bytes = walk.size_bytes
        self.persistent = walk.persistent
        self.system = system
        self.policy = policy
        self.tier1_capacity = float(tier1_bytes)
        n_tensors = len(walk.size_bytes)
        self.resident = [0.0] * n_tensors
        self.dirty = [False] * n_tensors
        self.tier2_unread = [0.0] * n_tensors  # per tensor, bytes of its Tier 2 share not read since they were stored
        self.tier1_used = 0.0
        self.last_access = [-1] * n_tensors
        self.promoted_unused: set[int] = set()
        self.free_evictions = False
        self.counting = False
        self.t1 = _Channel()
        self.t2 = _Channel()
        self._heap: list[tuple[float, int, int]] = []
        self._stamp = [0] * n_tensors
        self._protect: frozenset[int] = frozenset()
        self._vertical = policy.vertical
        self._priority = policy.victim_priority
        tier1, tier2 = system.tier1, system.tier2
        self._sram_paths = {  # write? -> per tier: bandwidth, energy per byte, byte counter
            False: (
                (tier1.read_bytes_per_s, tier1.read_pj_per_byte, "t1r"),
                (tier2.read_bytes_per_s, tier2.read_pj_per_byte, "t2r"),
            ),
            True: (
                (tier1.write_bytes_per_s, tier1.write_pj_per_byte, "t1w"),
                (tier2.write_bytes_per_s, tier2.write_pj_per_byte, "t2w"),
            ),
        }
        self._k = 0
        self._now = 0.0
        self._count = {
            k: 0.0 for k in ("t1r", "t1w", "t2r", "t2w", "t2rr", "prom", "dem", "stall", "compute", "accel", "e_sram", "e_mig")
        }

    @property
    def now_s(self) -> float:
        """When the op being simulated (or the last one) finishes computing."""
        return self._now

    # ---- placement primitives -------------------------------------------------------------
    def place(self, tensor: int, tier1_fraction: float) -> None:
        """Put ``tensor``'s bytes at the start (no traffic): a share in Tier 1 if it fits."""
        want = _min(tier1_fraction * self.size_bytes[tensor], self.tier1_capacity - self.tier1_used)
        self._set_resident(tensor, _max(0.0, want))
        self.tier2_unread[tensor] = self.size_bytes[tensor] - self.resident[tensor]

    def next_use(self, tensor: int, k: int) -> int:
        return self.trace.next_use(tensor, k)

    def window_s(self, k: int) -> float:
        """The prefetch window of op ``k``: the compute time of the op before it."""
        return self.walk.compute_s[k - 1] if k > 0 else 0.0

    def read(self, tensor: int, nbytes: float, issue_s: float) -> float:
        """Read ``nbytes`` of ``tensor`` to SRAM from where it is; return when done."""
        size = self.size_bytes[tensor]
        resident = self.resident[tensor]
        share = 1.0 if self._vertical else (resident / size if size > 0 else 1.0)
        tier2_bytes = nbytes * (1.0 - share)
        done = self._to_or_from_sram(nbytes * share, tier2_bytes, issue_s, write=False)
        if tier2_bytes > 0:
            first = _min(tier2_bytes, self.tier2_unread[tensor])
            self.tier2_unread[tensor] -= first
            self._add("t2rr", tier2_bytes - first)
        self.last_access[tensor] = self._k
        if resident > 0:
            self._push(tensor)
        self.promoted_unused.discard(tensor)
        return done

    def promote(self, tensor: int, issue_s: float, k: int, *, share: float = 1.0) -> float:
        """Move ``tensor``'s Tier 2 bytes to Tier 1 until ``share`` of it is there (as many as room can be made for);
        return when done."""
        size = self.size_bytes[tensor]
        want = share * size - self.resident[tensor]
        if want <= 0:
            return issue_s
        want = self._pages(want, size - self.resident[tensor])
        got = _min(want, self.make_room(want, k))
        if got <= 0:
            return issue_s
        done = self._tier2_to_tier1(got, issue_s)
        self._set_resident(tensor, self.resident[tensor] + got)
        self.tier2_unread[tensor] = _min(self.tier2_unread[tensor], size - self.resident[tensor])
        self.promoted_unused.add(tensor)
        return done

    def demote(self, tensor: int, nbytes: float, issue_s: float) -> None:
        """Move ``nbytes`` of ``tensor`` from Tier 1 to Tier 2 (write-back, for vertical tiering)."""
        nbytes = _min(nbytes, self.resident[tensor])
        if nbytes <= 0:
            return
        if not self._vertical or self.dirty[tensor]:
            self._tier1_to_tier2(self._pages(nbytes, self.resident[tensor]), issue_s)
            self.tier2_unread[tensor] += nbytes
        self._set_resident(tensor, self.resident[tensor] - nbytes)
        if self.resident[tensor] <= 0:
            self.dirty[tensor] = False

    def drop(self, tensor: int) -> None:
        """Forget ``tensor``'s Tier 1 copy: dead data's pages (horizontal), or a cache line, written back first if dirty
        (vertical: the cache does not know the data is dead)."""
        if self._vertical and self.dirty[tensor]:
            self.demote(tensor, self.resident[tensor], self._now)
        self._set_resident(tensor, 0.0)
        self.dirty[tensor] = False

    def make_room(self, nbytes: float, k: int) -> float:
        """Evict until ``nbytes`` are free in Tier 1 (or nothing more can go); return the free bytes."""
        free = self.tier1_capacity - self.tier1_used
        if free >= nbytes:
            return _max(0.0, free)
        heap, stamps, resident = self._heap, self._stamp, self.resident
        skipped = []
        while free < nbytes and heap:
            _, stamp, t = heapq.heappop(heap)
            if stamp != stamps[t] or resident[t] <= 0:
                continue
            if t in self._protect or not self.policy.evictable(self, t, k):
                skipped.append(t)
                continue
            amount = _min(resident[t], _max(nbytes - free, self.system.page_bytes))
            if self.trace.next_use(t, k) >= NEVER and not self.persistent[t]:
                amount = self.resident[t]
                self.drop(t)
            else:
                self.demote(t, amount, self._now)
            if self.resident[t] > 0:
                self._push(t)
            free = self.tier1_capacity - self.tier1_used
        for t in skipped:
            self._push(t)
        return _max(0.0, free)

    def peek_victim(self, k: int) -> int:
        """The tensor ``make_room`` would evict first now, -1 if none."""
        while self._heap:
            _, stamp, t = self._heap[0]
            if stamp != self._stamp[t] or self.resident[t] <= 0:
                heapq.heappop(self._heap)
                continue
            return t if t not in self._protect and self.policy.evictable(self, t, k) else -1
        return -1

    def stream_through(self, nbytes: float, issue_s: float) -> float:
        """Pass ``nbytes`` from Tier 2 through Tier 1 without keeping them (a cache too small to hold them)."""
        return self._tier2_to_tier1(nbytes, issue_s) if nbytes > 0 else issue_s

    def _tier1_to_tier2(self, nbytes: float, issue_s: float) -> None:
        """Move ``nbytes`` down (Tier 1 read, Tier 2 write; both channels busy unless evictions are free)."""
        if nbytes <= 0:
            return
        tier1, tier2 = self.system.tier1, self.system.tier2
        if not self.free_evictions:
            self.t1.serve(issue_s, nbytes / tier1.read_bytes_per_s)
            self.t2.serve(issue_s, nbytes / tier2.write_bytes_per_s)
        self._add("dem", nbytes, nbytes * (tier1.read_pj_per_byte + tier2.write_pj_per_byte), "e_mig")

    def _tier2_to_tier1(self, nbytes: float, issue_s: float) -> float:
        """Move ``nbytes`` up (Tier 2 read, Tier 1 write, both channels busy); return when done."""
        tier1, tier2 = self.system.tier1, self.system.tier2
        end2 = self.t2.serve(issue_s, nbytes / tier2.read_bytes_per_s)
        end1 = self.t1.serve(issue_s, nbytes / tier1.write_bytes_per_s)
        self._add("prom", nbytes, nbytes * (tier2.read_pj_per_byte + tier1.write_pj_per_byte), "e_mig")
        return _max(end1, end2)

    # ---- the run --------------------------------------------------------------------------
    def run(self) -> Outcome:
        """Simulate the walk; the steady iteration priced on the simulated system."""
        return price(self.count(), self.system)

    def count(self) -> Tally:
        """Simulate the walk; the steady (last) iteration as counted."""
        walk, policy = self.walk, self.policy
        reads, writes, compute_s = walk.trace.reads, walk.trace.writes, walk.compute_s
        n = len(compute_s)
        per_iteration = walk.trace.ops_per_iteration
        policy.start(self)
        issue = 0.0
        iteration_start = 0.0
        for k in range(n):
            self._k = k
            if k == n - per_iteration:
                self.counting = True
                iteration_start = max(self._now, self.t1.free_s, self.t2.free_s)
            self._protect = walk.touched[k]
            policy.before_op(self, k, issue)
            ready = issue
            for t, b in reads[k]:
                done = policy.fetch(self, k, t, b, issue)
                ready = done if done > ready else ready
            start = ready if ready > self._now else self._now
            if self.counting:
                self._add("stall", start - self._now)
                self._add("compute", compute_s[k])
                self._add("accel", walk.accel_energy_pj[k])
            for t, b in writes[k]:
                self._write(k, t, b, start)
            issue = start
            self._now = start + compute_s[k]
            if not self._vertical:  # a hardware cache keeps dead data until it evicts it
                for t in walk.released[k]:
                    self.drop(t)
            policy.after_op(self, k)
        end = max(self._now, self.t1.free_s, self.t2.free_s)
        return self._tally(end - iteration_start)

    def _write(self, k: int, tensor: int, nbytes: float, start_s: float) -> None:
        size = self.size_bytes[tensor]
        resident = self.resident
        share = 1.0 if self._vertical else _min(1.0, _max(0.0, float(self.policy.store_fraction(self, k, tensor))))
        want = share * size
        if want > resident[tensor]:
            want = resident[tensor] + _min(want - resident[tensor], self.make_room(want - resident[tensor], k))
        want = float(want) if want > 0.0 else 0.0
        self.tier1_used += want - resident[tensor]
        resident[tensor] = want
        if want > 0:
            # the eviction heap's entry for it comes from the touch below (nothing reads the heap in between);
            # the stamp still counts the superseded entry, so ties between tensors break as they always have
            self._stamp[tensor] += 1
        if self._vertical:  # written into the cache; what it cannot hold passes through it on to Tier 2
            b1, b2 = nbytes, 0.0
            self.dirty[tensor] = want > 0
            self._tier1_to_tier2(nbytes * (1.0 - want / size) if size > 0 else 0.0, start_s)
        else:
            frac = want / size if size > 0 else 1.0
            b1, b2 = nbytes * frac, nbytes * (1.0 - frac)
            self.tier2_unread[tensor] = size - want
        self._to_or_from_sram(b1, b2, start_s, write=True)
        self._touch(tensor)

    def _to_or_from_sram(self, tier1_bytes: float, tier2_bytes: float, start_s: float, *, write: bool) -> float:
        """Move bytes between the tiers and SRAM, each tier on its own channel (served after what it has queued);
        return when both are done."""
        done = start_s
        path1, path2 = self._sram_paths[write]  # per tier: bandwidth, energy per byte, byte counter
        if tier1_bytes > 0:
            channel = self.t1
            free_s = channel.free_s
            channel.free_s = end = (free_s if free_s > start_s else start_s) + tier1_bytes / path1[0]
            done = end if end > done else done
            if self.counting:
                self._count[path1[2]] += tier1_bytes
                self._count["e_sram"] += tier1_bytes * path1[1]
        if tier2_bytes > 0:
            channel = self.t2
            free_s = channel.free_s
            channel.free_s = end = (free_s if free_s > start_s else start_s) + tier2_bytes / path2[0]
            done = end if end > done else done
            if self.counting:
                self._count[path2[2]] += tier2_bytes
                self._count["e_sram"] += tier2_bytes * path2[1]
        return done

    # ---- bookkeeping ----------------------------------------------------------------------
    def _pages(self, nbytes: float, limit: float) -> float:
        page = self.system.page_bytes
        return _min(math.ceil(nbytes / page) * page, limit)

    def _set_resident(self, tensor: int, nbytes: float) -> None:
        nbytes = _max(0.0, float(nbytes))
        self.tier1_used += nbytes - self.resident[tensor]
        self.resident[tensor] = nbytes
        if nbytes > 0:
            self._push(tensor)

    def _touch(self, tensor: int) -> None:
        self.last_access[tensor] = self._k
        if self.resident[tensor] > 0:
            self._push(tensor)

    def _push(self, tensor: int) -> None:
        """(Re-)enter ``tensor`` in the eviction heap with its priority now; older entries go stale."""
        stamp = self._stamp[tensor] + 1
        self._stamp[tensor] = stamp
        heapq.heappush(self._heap, (self._priority(self, tensor, self._k), stamp, tensor))

    def _add(self, key: str, amount: float, energy_pj: float = 0.0, energy_key: str = "") -> None:
        if not self.counting:
            return
        self._count[key] += amount
        if energy_key:
            self._count[energy_key] += energy_pj

    def _tally(self, iteration_s: float) -> Tally:
        c = self._count
        return Tally(
            iteration_s=iteration_s,
            stall_s=c["stall"],
            compute_s=c["compute"],
            accelerator_pj=c["accel"],
            tier_sram_pj=c["e_sram"],
            migration_pj=c["e_mig"],
            tier1_read_bytes=c["t1r"],
            tier1_write_bytes=c["t1w"],
            tier2_read_bytes=c["t2r"],
            tier2_write_bytes=c["t2w"],
            tier2_reread_bytes=c["t2rr"],
            promoted_bytes=c["prom"],
            demoted_bytes=c["dem"],
            tier1_bytes=self.tier1_capacity,
            vertical=bool(self._vertical),
            samples=self.trace.samples,
            **_ratio_summary(self.policy.split_ratios()),
        )


def _ratio_summary(ratios: Sequence[float]) -> dict[str, float]:
    """The ``split_ratio_*`` fields of a ``Tally``: count, minimum, quartiles, maximum (NaN if there are none)."""
    if not len(ratios):
        return {}
    q = np.quantile(np.asarray(ratios, dtype=float), [0.0, 0.25, 0.5, 0.75, 1.0])
    return dict(zip(SPLIT_RATIO_FIELDS, (float(len(ratios)), *map(float, q)), strict=True))


def _max(a: float, b: float) -> float:
    """``max(a, b)`` (the first if neither is larger), without the builtin's overhead on the hot path."""
    return b if b > a else a


def _min(a: float, b: float) -> float:
    """``min(a, b)`` (the first if neither is smaller)."""
    return b if b < a else a


def simulate(walk: Walk, system: TieredSystem, policy: Policy, *, tier1_bytes: float) -> Outcome:
    """Simulate the iterations of ``walk`` (``Walk.of(trace)``: two) and report the last one.

    Raises:
        ConfigError: the iteration's live data does not fit in the chip's address space.
    """
    return price(simulate_tally(walk, system, policy, tier1_bytes=tier1_bytes), system)


def simulate_tally(walk: Walk, system: TieredSystem, policy: Policy, *, tier1_bytes: float) -> Tally:
    """``simulate``'s last iteration as counted, before pricing.

    Raises:
        ConfigError: the iteration's live data does not fit in the chip's address space.
    """
    peak = walk.live_peak_bytes
    if peak > system.capacity_bytes:
        raise ConfigError(
            f"workload {walk.base.name}: {peak / GIB:.1f} GiB of live data per chip does not fit in "
            f"{system.capacity_bytes / GIB:.0f} GiB of memory per chip"
        )
    return Simulator(walk, system, policy, tier1_bytes=tier1_bytes).count()
