"""What a simulation of one (workload, policy, Tier 1 size) gives: its ``Tally`` (the steady iteration as counted,
before pricing) and the ``Outcome`` that ``price`` makes of it on a system (seconds, joules, bytes).

Pricing reads the system's capacity and static powers, its accelerator energy scale and its
``stall_static_power`` and ``tier2_read_energy`` switches; the simulation reads none of the last three. A tally
priced on a system that differs from the simulated one in those three alone is therefore what simulating on that
system gives, to the bit (``study.resimulated`` says which differences a policy's simulation reads).
"""

from __future__ import annotations

from dataclasses import dataclass

from traincost.tiered.system import TieredSystem

__all__ = ["Outcome", "SPLIT_RATIO_FIELDS", "Tally", "price"]


@dataclass(frozen=True, slots=True)
class Outcome:
    """The steady iteration of one (workload, policy, Tier 1 size) simulation. Energies in joules;
    ``energy_tier2_reread_j`` is the part of ``energy_tier_sram_j`` spent on Tier 2's re-reads (0 when the system prices
    each stored byte's read once)."""

    iteration_s: float
    stall_s: float
    compute_s: float
    samples_per_s: float
    energy_accelerator_j: float
    energy_tier_sram_j: float
    energy_migration_j: float
    energy_static_j: float
    tier1_read_bytes: float
    tier1_write_bytes: float
    tier2_read_bytes: float
    tier2_write_bytes: float
    tier2_reread_bytes: float
    energy_tier2_reread_j: float
    promoted_bytes: float
    demoted_bytes: float
    tier1_bytes: float
    tier2_bytes: float
    split_ratio_count: float
    split_ratio_min: float
    split_ratio_q25: float
    split_ratio_median: float
    split_ratio_q75: float
    split_ratio_max: float

    @property
    def energy_j(self) -> float:
        return self.energy_accelerator_j + self.energy_tier_sram_j + self.energy_migration_j + self.energy_static_j

    @property
    def migrated_bytes(self) -> float:
        return self.promoted_bytes + self.demoted_bytes

    @property
    def samples_per_j(self) -> float:
        """Throughput per watt."""
        return self.samples_per_s * self.iteration_s / self.energy_j


@dataclass(frozen=True, slots=True)
class Tally:
    """The steady iteration of one simulation as counted, before pricing.

    Attributes:
        iteration_s, stall_s, compute_s: its time, the accelerator's stalls and its compute time.
        accelerator_pj: MAC and on-chip memory energy at the hardware file's energies (scale 1).
        tier_sram_pj: tier-to-SRAM traffic at the simulated system's energies per byte.
        migration_pj: tier-to-tier migrations at the simulated system's energies per byte.
        tier1_read_bytes ... demoted_bytes: traffic, as in ``Outcome``; ``tier2_reread_bytes`` are the Tier 2 reads into
            SRAM of bytes already read since they were stored in Tier 2 (re-fetches), priced in ``tier_sram_pj``.
        tier1_bytes: the Tier 1 capacity simulated.
        vertical: the policy's Tier 1 caches Tier 2 (Tier 2 then holds the whole address space).
        samples: samples one iteration processes.
        split_ratio_count ... split_ratio_max: the split ratios (Tier 1 shares) the policy chose, one per data type
            (TM-Training's), as their count, minimum, quartiles and maximum; count 0 and NaN for a policy that splits none.
    """

    iteration_s: float
    stall_s: float
    compute_s: float
    accelerator_pj: float
    tier_sram_pj: float
    migration_pj: float
    tier1_read_bytes: float
    tier1_write_bytes: float
    tier2_read_bytes: float
    tier2_write_bytes: float
    tier2_reread_bytes: float
    promoted_bytes: float
    demoted_bytes: float
    tier1_bytes: float
    vertical: bool
    samples: float
    split_ratio_count: float = 0.0
    split_ratio_min: float = float("nan")
    split_ratio_q25: float = float("nan")
    split_ratio_median: float = float("nan")
    split_ratio_q75: float = float("nan")
    split_ratio_max: float = float("nan")


SPLIT_RATIO_FIELDS = (
    "split_ratio_count",
    "split_ratio_min",
    "split_ratio_q25",
    "split_ratio_median",
    "split_ratio_q75",
    "split_ratio_max",
)
"""The split-ratio summary a ``Tally`` carries to its ``Outcome`` unchanged."""


def price(tally: Tally, system: TieredSystem) -> Outcome:
    """The outcome of ``tally`` on ``system``: accelerator energy at its scale plus the static power of the chip's
    SRAM and both tiers, over the iteration (over its compute time only when ``stall_static_power`` is off); Tier 2's
    re-reads at its read energy, or free when the system prices each stored byte's read once (``tier2_read_energy``)."""
    iteration_s = tally.iteration_s
    reread_pj = tally.tier2_reread_bytes * system.tier2.read_pj_per_byte
    tier_sram_pj = tally.tier_sram_pj
    if system.tier2_read_energy != "per_access":
        tier_sram_pj, reread_pj = tier_sram_pj - reread_pj, 0.0
    capacity2 = system.capacity_bytes if tally.vertical else max(0.0, system.capacity_bytes - tally.tier1_bytes)
    static_w = system.tier1.static_w(tally.tier1_bytes) + system.tier2.static_w(capacity2)
    static_s = iteration_s if system.stall_static_power else max(0.0, iteration_s - tally.stall_s)
    return Outcome(
        iteration_s=iteration_s,
        stall_s=tally.stall_s,
        compute_s=tally.compute_s,
        samples_per_s=tally.samples / iteration_s if iteration_s > 0 else 0.0,
        energy_accelerator_j=tally.accelerator_pj * system.accelerator_energy_scale * 1e-12
        + system.accelerator_static_w * static_s,
        energy_tier_sram_j=tier_sram_pj * 1e-12,
        energy_migration_j=tally.migration_pj * 1e-12,
        energy_static_j=static_w * static_s,
        tier1_read_bytes=tally.tier1_read_bytes,
        tier1_write_bytes=tally.tier1_write_bytes,
        tier2_read_bytes=tally.tier2_read_bytes,
        tier2_write_bytes=tally.tier2_write_bytes,
        tier2_reread_bytes=tally.tier2_reread_bytes,
        energy_tier2_reread_j=reread_pj * 1e-12,
        promoted_bytes=tally.promoted_bytes,
        demoted_bytes=tally.demoted_bytes,
        tier1_bytes=tally.tier1_bytes,
        tier2_bytes=capacity2,
        **{name: getattr(tally, name) for name in SPLIT_RATIO_FIELDS},
    )
