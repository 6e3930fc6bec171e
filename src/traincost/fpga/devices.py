"""FPGA devices and clusters (MTrain Table II), read from ``config/hardware/fpga/devices.yaml``."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from traincost.config_files import read_yaml
from traincost.errors import ConfigError

__all__ = ["Device", "Cluster", "FpgaCatalog", "load_fpga_catalog"]

_NUMBERS = ("dsp", "bram_36kb", "uram_288kb", "luts_k", "dram_gb", "dram_bandwidth_gb_per_s", "clock_mhz")
_POSITIVE = ("dsp", "bram_36kb", "luts_k", "dram_gb", "dram_bandwidth_gb_per_s", "clock_mhz")


@dataclass(frozen=True, slots=True)
class Device:
    """One FPGA's resources."""

    name: str
    dsp: int
    bram_36kb: int
    uram_288kb: int
    luts_k: float
    dram_gb: float
    dram_bandwidth_gb_per_s: float
    clock_mhz: float

    @property
    def dram_bytes(self) -> float:
        return self.dram_gb * 2**30

    @property
    def onchip_bytes(self) -> float:
        """Block RAM and UltraRAM capacity."""
        return (self.bram_36kb * 36 + self.uram_288kb * 288) * 1024 / 8


@dataclass(frozen=True, slots=True)
class Cluster:
    """FPGAs linked peer to peer, trained at one batch size."""

    name: str
    devices: tuple[Device, ...]
    batch: int


@dataclass(frozen=True, slots=True)
class FpgaCatalog:
    devices: dict[str, Device]
    clusters: dict[str, Cluster]
    p2p_bandwidths_gb_per_s: tuple[float, ...]


def load_fpga_catalog(path: str | os.PathLike[str]) -> FpgaCatalog:
    """Devices, clusters and the P2P bandwidth sweep of a devices YAML.

    Raises:
        ConfigError: a missing or non-positive resource, a cluster naming an unknown device, or a
            batch smaller than its cluster (every problem is listed with its key path).
    """
    file = Path(path)
    data = read_yaml(file) or {}
    if not isinstance(data, dict):
        raise ConfigError(f"{file}: expected a mapping of devices, clusters and p2p_bandwidths_gb_per_s")
    for key in ("devices", "clusters"):
        section = data.get(key, {})
        if not isinstance(section, dict) or not all(isinstance(entry, dict) for entry in section.values()):
            raise ConfigError(f"{file}: {key}: expected a mapping of names to mappings")
    problems: list[str] = []
    devices = {}
    for name, entry in data.get("devices", {}).items():
        missing = [key for key in _NUMBERS if not isinstance(entry.get(key), int | float)]
        bad = [key for key in _POSITIVE if key not in missing and entry[key] <= 0]
        problems += [f"devices.{name}.{key}: a number is required" for key in missing]
        problems += [f"devices.{name}.{key}: {entry[key]} must be > 0" for key in bad]
        if not missing and not bad:
            devices[name] = Device(name=name, **{key: entry[key] for key in _NUMBERS})
    clusters = {}
    for name, entry in data.get("clusters", {}).items():
        members = entry.get("devices") or []
        if not isinstance(members, list) or not members or not all(isinstance(m, str) for m in members):
            problems.append(f"clusters.{name}.devices: {members!r}; a cluster needs a list of at least one device name")
            continue
        unknown = [m for m in members if m not in devices]
        problems += [f"clusters.{name}.devices: unknown device {m!r} (known: {sorted(devices)})" for m in unknown]
        batch = entry.get("batch")
        if not isinstance(batch, int) or batch < max(1, len(members)):
            problems.append(f"clusters.{name}.batch: {batch!r} must be an integer of at least {max(1, len(members))}")
        elif not unknown:
            clusters[name] = Cluster(name=name, devices=tuple(devices[m] for m in members), batch=batch)
    bandwidths = data.get("p2p_bandwidths_gb_per_s", [])
    if not isinstance(bandwidths, list) or not bandwidths or any(not isinstance(b, int | float) or b <= 0 for b in bandwidths):
        problems.append(f"p2p_bandwidths_gb_per_s: {bandwidths!r} must be a list of positive numbers")
    if problems:
        raise ConfigError(f"{file}: " + "; ".join(problems))
    return FpgaCatalog(devices=devices, clusters=clusters, p2p_bandwidths_gb_per_s=tuple(float(b) for b in bandwidths))
