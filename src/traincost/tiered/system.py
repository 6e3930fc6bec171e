"""A tiered-memory NPU system: the accelerator (an HDA) plus its two-tier off-chip memory.

Read from a hardware YAML that has a ``tiered_memory`` section and a ``clock_mhz``
(``config/hardware/tpuv4_tiered.yaml``). Human units of the YAML (GB/s, pJ/bit, mW, GiB, KiB) are
converted once here to bytes per second, pJ per byte, watts per byte of capacity and bytes.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from traincost.errors import ConfigError
from traincost.hardware import HardwareError, HardwareSpec, load_hardware, read_hardware_yaml

__all__ = ["Tier", "TieredSystem", "load_tiered_system", "GIB"]

GIB = 1024**3
_BITS = 8.0


@dataclass(frozen=True, slots=True)
class Tier:
    """One memory tier: bandwidths, dynamic energy per byte and static power per byte of capacity."""

    technology: str
    read_bytes_per_s: float
    write_bytes_per_s: float
    read_pj_per_byte: float
    write_pj_per_byte: float
    static_w_per_byte: float

    def static_w(self, capacity_bytes: float) -> float:
        """Static power of ``capacity_bytes`` of this memory, W."""
        return self.static_w_per_byte * capacity_bytes


@dataclass(frozen=True, slots=True)
class TieredSystem:
    """One chip: its accelerator (one configuration) and its tiered off-chip memory.

    Attributes:
        hardware: the accelerator (cores, VMEM, CMEM) for the per-op cost model.
        clock_hz: accelerator clock.
        capacity_bytes: address space per chip (Tier 1 + Tier 2 when horizontal, Tier 2 when vertical).
        accelerator_static_w: static power of the chip's SRAM, charged over the whole iteration.
        page_bytes: migration granularity.
        iommu_entries: translation entries (recorded; the model charges no translation misses).
        tier1, tier2: HBM and NAND flash.
        accelerator_energy_scale: multiplies the per-MAC and per-SRAM-access energies of the cost model
            (1: as the hardware file gives them; ``traincost calibrate`` fits it, see ``tiered.calibration``).
        stall_static_power: whether static power (the chip's SRAM and both tiers) is charged while the
            accelerator stalls (True: over the whole iteration; False: over its compute time only). An
            ablation switch (``traincost tiered-study --assume``).
        split_only_if_evicted: whether TM-Training splits only data Tier 1 is expected to evict before its next read,
            storing the rest whole in Tier 1 (True: section 1's "splits ... as needed"), or every data type by
            Algorithms 1-3 as printed (False). An ablation switch.
        deeptm_eviction_costs_time: whether DeepTM's evictions occupy the tiers' channels (False: they are
            free in time, as DeepTM's paper assumes; their energy is charged either way). An ablation switch.
        split_ratio_reading: Algorithm 1's branches as printed (``printed``: with ``T_req >= T_min``, the Tier 2 share
            that streams within ``T_req``; otherwise the bandwidths' proportion) or as the prose beside it words them
            (``prose``: with ``T_req >= T_min`` the bandwidths' proportion, otherwise the share that streams within
            ``T_req``). An ablation switch (``split_ratio.approximate_ratio``).
        hot_promotion: whether TM-Training (and its offline forms) promotes hot data to Tier 1, re-promoting what LRU
            demoted of a split's Tier 1 share (True: the paper's "TM-Training proactively promotes only hot data or
            data that cannot be prefetched from Tier 2 to on-chip SRAM within computation time to Tier 1", section 1),
            or reads every datum where it lies (False). An ablation switch.
        autotm_lookahead: whether AutoTM's cost of storing an output in Tier 2 includes how long its next reader's
            fetch of it outlasts that reader's prefetch window (True), or only the op's own Tier 2 traffic (False). True is
            AutoTM's own formulation, which section 5.1's "AutoTM predicts performance for applying each case using ILP"
            names: its ILP gives a tensor one location variable read by its producer and by every kernel that uses it
            ("Create an expression for the input and output locations", ``get_tensor_in_dram(F, tensor, node)``, in
            AutoTM/src/optimizer/ilp/formulation.jl) and minimises the sum of all kernels' times ("Default objective is
            to just sum all of the node times"), so storing an output in slow memory is charged to its readers too. An
            ablation switch.
        split_energy: the energy TM-Training's data placement manager weighs a split ratio by (``split_ratio.DataCost``):
            Algorithm 3's ENERGYOVERHEAD as printed (``printed``) or the simulator's per-access accounting
            (``per_access``). An ablation switch.
        tier2_read_energy: how reads of Tier 2 into SRAM are priced: each at Tier 2's read energy (``per_access``: the
            accesses the simulation counts, as section 5.1's simulator counts "number of memory accesses"), or each byte
            stored in Tier 2 once, its re-reads before it is stored again free (``once_per_store``: Algorithm 3's
            "(1 - r) x D x T2ReadEnergy", re-reads served by the SSD's DRAM buffer of section 1: "If the DRAM hits, then
            it issues a PCIe MMIO response"). The paper states neither for its simulator; only pricing reads it
            (``outcome.price``).
    """

    hardware: HardwareSpec
    clock_hz: float
    capacity_bytes: float
    accelerator_static_w: float
    page_bytes: float
    iommu_entries: int
    tier1: Tier
    tier2: Tier
    accelerator_energy_scale: float = 1.0
    stall_static_power: bool = True
    deeptm_eviction_costs_time: bool = False
    split_only_if_evicted: bool = False
    split_ratio_reading: str = "printed"
    hot_promotion: bool = True
    autotm_lookahead: bool = True
    split_energy: str = "printed"
    tier2_read_energy: str = "per_access"

    def __post_init__(self) -> None:
        """Check the switches that take a name; see the class docstring."""
        for name, allowed in (
            ("split_ratio_reading", ("printed", "prose")),
            ("split_energy", ("printed", "per_access")),
            ("tier2_read_energy", ("per_access", "once_per_store")),
        ):
            if getattr(self, name) not in allowed:
                raise ConfigError(f"tiered system {name} {getattr(self, name)!r}: expected one of {', '.join(allowed)}")

    @property
    def onchip_bytes(self) -> float:
        """The largest on-chip memory (CMEM): outputs that fit in a part of it can stay on chip."""
        return max(float(m.size_bytes[0]) for m in self.hardware.memories.values())

    def with_tier2_bandwidth(self, factor: float) -> TieredSystem:
        """The same system with Tier 2's read and write bandwidth scaled by ``factor``."""
        tier2 = replace(
            self.tier2,
            read_bytes_per_s=self.tier2.read_bytes_per_s * factor,
            write_bytes_per_s=self.tier2.write_bytes_per_s * factor,
        )
        return replace(self, tier2=tier2)

    def with_tier2_energy(self, factor: float) -> TieredSystem:
        """The same system with Tier 2's read and write energy per byte multiplied by ``factor``."""
        if not (math.isfinite(factor) and factor > 0):
            raise ConfigError(f"Tier 2 energy factor {factor!r}: expected a finite number > 0")
        tier2 = replace(
            self.tier2,
            read_pj_per_byte=self.tier2.read_pj_per_byte * factor,
            write_pj_per_byte=self.tier2.write_pj_per_byte * factor,
        )
        return replace(self, tier2=tier2)

    def with_accelerator_energy_scale(self, scale: float) -> TieredSystem:
        """The same system with the accelerator's dynamic (MAC and SRAM access) energy multiplied by ``scale``."""
        if not (math.isfinite(scale) and scale > 0):
            raise ConfigError(f"accelerator energy scale {scale!r}: expected a finite number > 0")
        return replace(self, accelerator_energy_scale=float(scale))

    def with_capacity(self, capacity_bytes: float) -> TieredSystem:
        """The same system with another address space per chip (Figure 13 grows Tier 2 only)."""
        return replace(self, capacity_bytes=float(capacity_bytes))


def load_tiered_system(path: str | os.PathLike[str]) -> TieredSystem:
    """Load the accelerator and its ``tiered_memory`` section.

    Raises:
        HardwareError: the file fails the hardware schema, or has no ``tiered_memory`` or ``clock_mhz``.
    """
    file = Path(path)
    data = read_hardware_yaml(file)
    missing = [key for key in ("tiered_memory", "clock_mhz") if key not in data]
    if missing:
        raise HardwareError(
            f"{file}: a tiered-memory system needs {' and '.join(missing)} (see config/hardware/tpuv4_tiered.yaml)"
        )
    section = data["tiered_memory"]
    return TieredSystem(
        hardware=load_hardware(file),
        clock_hz=float(data["clock_mhz"]) * 1e6,
        capacity_bytes=float(section["capacity_per_chip_gib"]) * GIB,
        accelerator_static_w=float(section.get("accelerator_static_power_w", 0.0)),
        page_bytes=float(section["page_kib"]) * 1024,
        iommu_entries=int(section["iommu_entries"]),
        tier1=_tier(section["tier1"]),
        tier2=_tier(section["tier2"]),
    )


def _tier(entry: dict[str, Any]) -> Tier:
    return Tier(
        technology=str(entry["technology"]),
        read_bytes_per_s=float(entry["read_bandwidth_gb_per_s"]) * 1e9,
        write_bytes_per_s=float(entry["write_bandwidth_gb_per_s"]) * 1e9,
        read_pj_per_byte=float(entry["read_energy_pj_per_bit"]) * _BITS,
        write_pj_per_byte=float(entry["write_energy_pj_per_bit"]) * _BITS,
        static_w_per_byte=float(entry["static_power_mw"]) * 1e-3 / (float(entry["static_power_capacity_gib"]) * GIB),
    )
