"""TM-Training's data placement manager (section 4.2): the share of a tensor stored in Tier 1.

* **Algorithm 1** (``approximate_ratio``): the smallest Tier 1 share that keeps Tier 2 off the critical
  path. With ``T_req`` the time between the data's request and its use and ``T_min = D / (BW1 + BW2)``:
  if ``T_req >= T_min``, ``r' = 1 - T_req · BW2 / D`` (Tier 2 streams its share exactly within
  ``T_req``; clamped to [0, 1]); otherwise ``r' = BW1 / (BW1 + BW2)`` (both tiers stream in parallel).
* **Algorithm 2** (``DataCost``): the energy of storing and reading the data, and the static energy
  of any run-time overhead, from profiled constants (tier energies per byte, static power).
* **Algorithm 3** (``adjust_ratio``): from ``r'``, lower the ratio by ``1 / seq_len`` while energy
  efficiency (work per joule) improves, and return the last ratio that improved it (RATIOADJUSTMENT,
  lines 13-23: ``r2 = r1 - 1/seq``; stop when ``EE(r1) >= EE(r2)``). The ratio is never raised above ``r'``.

The run-time overhead is Algorithm 3's line 3, ``T_o = D·(1-r) / BW2 - T_req`` (never negative), for the
read of the Tier 2 share by its next reader; to it we add the same for writing the Tier 2 share within
the producing op (``(1-r)·S / BW2_write - T_write``), since Tier 2's one channel serves both (ours: the
printed line counts the read alone). Both depend on ``1 - r``, as the printed line does.

The energy the manager weighs (``DataCost.energy_pj``) is Algorithm 3's ENERGYOVERHEAD as printed (``printed``, the
default): "E_r = 2 x r x E_off.d + (1 - r) x D x T2ReadEnergy + Tier2Memsize x E_off.s + T2Static x T_r", with
Algorithm 2's "E_off.d = HBMAccess x HBMDynamicEnergy", "HBMAccess = D x n" (n the re-fetches of OFFCHIPACCESSPERDATA;
ours: the bytes its readers fetch, measured on the trace). The Tier 1 share is charged twice its re-fetched bytes at
HBM's energy, the Tier 2 share one flash read of its bytes; the static terms vary with r only through ``T_r``, charged
at the system's static power over the run-time overhead. The alternative (``per_access``, the ``split_energy=per_access``
ablation) is ours, the simulator's accounting: storing a share ``r`` of ``S`` bytes costs ``r·S·w1 + (1-r)·S·w2``;
reading ``R`` bytes costs ``r·R·rd1 + (1-r)·R·rd2`` unless Tier 1 is expected to evict the data before its next use
(its reuse distance — bytes written between the store and the next use — exceeds Tier 1), in which case the Tier 1
share is demoted (``r·S·(rd1 + w2)``) and read from Tier 2. Under the printed accounting a large input fetched ``n``
times saves energy in flash once ``2·n·E_HBM > E_flash`` (n >= 10 at Table 2's 3.97 and 75 pJ/bit); under ours never.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["approximate_ratio", "DataCost", "adjust_ratio", "best_ratio"]


def approximate_ratio(
    t_req_s: float, data_bytes: float, bw1_bytes_per_s: float, bw2_bytes_per_s: float, *, reading: str = "printed"
) -> float:
    """Algorithm 1: the approximated split ratio r' (share of the data in Tier 1).

    The printed algorithm and the prose beside it disagree on which branch takes ``T_req >= T_min``. Printed:
    "if T_req >= T_min then r' = 1 - T_req x BW2 / D (T_req = (1 - r') x D / BW2)", else the bandwidths' proportion.
    Prose: "If T_req is larger than T_min, then it means that the system is memory-bound. Thus, the algorithm does
    not allocate more data to Tier 2 to prevent extra performance degradation. Otherwise, the algorithm finds the
    split ratio if the time required for prefetching from Tier 2 is equal to T_req."

    Decided by the goal the text states, "the smallest split ratio (r) value that prevents Tier 2 from becoming a
    critical path", and by the physics of prefetching: the data streams from both tiers at once, in
    ``max(r·D/BW1, (1-r)·D/BW2)``, whose least value over r is ``T_min = D / (BW1 + BW2)``, at r = BW1 / (BW1 + BW2).
    A window ``T_req >= T_min`` has time to spare: every r whose Tier 2 share streams within it,
    ``(1-r)·D/BW2 <= T_req``, keeps Tier 2 off the critical path, and the smallest is ``1 - T_req·BW2/D`` (its Tier 1
    share then streams within ``T_min <= T_req`` too); a window ``T_req < T_min`` is the memory-bound one (no split
    prefetches in time), where the bandwidths' proportion loses the least. That is the printed algorithm, the
    default (``reading="printed"``). The prose's reading (``reading="prose"``, the ``split_ratio_reading=prose``
    ablation) keeps the proportion where a smaller r would stream in time, and in a memory-bound window puts more in
    Tier 1 than the proportion, so its Tier 1 share outlasts ``T_min``.
    """
    if data_bytes <= 0:
        return 0.0
    t_min = data_bytes / (bw1_bytes_per_s + bw2_bytes_per_s)
    streams = min(1.0, max(0.0, 1.0 - t_req_s * bw2_bytes_per_s / data_bytes))
    proportion = bw1_bytes_per_s / (bw1_bytes_per_s + bw2_bytes_per_s)
    if reading == "prose":
        return proportion if t_req_s >= t_min else streams
    return streams if t_req_s >= t_min else proportion


@dataclass(frozen=True, slots=True)
class DataCost:
    """Energy of placing one tensor with a split ratio, as Algorithm 3 prints it or as the simulator charges it.

    Attributes:
        size_bytes: S, the tensor.
        read_bytes: R, off-chip bytes read by all its readers.
        next_read_bytes: bytes its next reader fetches (what must arrive within ``t_req_s``).
        t_req_s: T_req, the prefetch window of its next reader.
        t_write_s: the time the producing op computes, within which its Tier 2 share is written.
        evicted: Tier 1 is expected to evict it before its next use.
        w1_pj, rd1_pj, w2_pj, rd2_pj: write / read energy per byte of Tier 1 and Tier 2.
        bw2_bytes_per_s: Tier 2 read bandwidth.
        bw2_write_bytes_per_s: Tier 2 write bandwidth.
        static_w: static power charged for run-time overhead.
        accounting: ``printed`` (Algorithm 3's ENERGYOVERHEAD) or ``per_access`` (the simulator's); see the module.
    """

    size_bytes: float
    read_bytes: float
    next_read_bytes: float
    t_req_s: float
    t_write_s: float
    evicted: bool
    w1_pj: float
    rd1_pj: float
    w2_pj: float
    rd2_pj: float
    bw2_bytes_per_s: float
    bw2_write_bytes_per_s: float
    static_w: float
    accounting: str = "printed"

    def runtime_overhead_s(self, ratio: float | np.ndarray) -> float | np.ndarray:
        """Algorithm 3's RUNTIMEOVERHEAD: how long Tier 2 outlasts the prefetch window of the next read, plus how
        long writing the Tier 2 share outlasts the producing op (a ratio or an array of them)."""
        share2 = 1.0 - np.asarray(ratio, dtype=float)
        read = np.maximum(0.0, self.next_read_bytes * share2 / self.bw2_bytes_per_s - self.t_req_s)
        write = np.maximum(0.0, self.size_bytes * share2 / self.bw2_write_bytes_per_s - self.t_write_s)
        return read + write

    def energy_pj(self, ratio: float | np.ndarray) -> float | np.ndarray:
        """Energy of storing the data with Tier 1 share ``ratio`` (a ratio or an array of them), less what does not
        depend on the ratio."""
        s, r = self.size_bytes, ratio
        overhead = self.static_w * self.runtime_overhead_s(r) * 1e12
        if self.accounting == "printed":  # 2·r·E_off.d + (1 - r)·D·T2ReadEnergy + T2Static·T_r
            return 2.0 * r * self.read_bytes * self.rd1_pj + (1 - r) * s * self.rd2_pj + overhead
        store = r * s * self.w1_pj + (1 - r) * s * self.w2_pj
        if self.evicted:
            read = r * s * (self.rd1_pj + self.w2_pj) + self.read_bytes * self.rd2_pj
        else:
            read = self.read_bytes * (r * self.rd1_pj + (1 - r) * self.rd2_pj)
        return store + read + overhead


def adjust_ratio(start: float, seq_len: int, cost: DataCost) -> float:
    """Algorithm 3's RATIOADJUSTMENT: lower ``start`` by 1/seq_len while that lowers the energy; the last ratio that did.

    The walk down to 0 is evaluated at once: it stops before the first step that does not lower the energy.
    """
    step = 1.0 / max(1, seq_len)
    path = np.unique(np.clip(start - step * np.arange(seq_len + 1), 0.0, 1.0))[::-1]  # from start down
    energy = cost.energy_pj(path)
    rises = np.flatnonzero(np.diff(energy) >= 0)
    return float(path[int(rises[0]) if len(rises) else len(path) - 1])


def best_ratio(cost: DataCost, *, resolution: int) -> float:
    """The ideal system's ratio: the lowest-energy one on a grid of ``resolution`` + 1 points in [0, 1]."""
    grid = np.linspace(0.0, 1.0, resolution + 1)
    return float(grid[int(np.argmin(cost.energy_pj(grid)))])
