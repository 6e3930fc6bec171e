"""Validated hardware: frozen dataclasses whose numbers are arrays over a sweep's configurations.

A ``HardwareSpec`` describes one accelerator template evaluated at ``n_configs`` configurations:
every numeric field is a float64 array of shape ``(n_configs,)`` (length 1 for a single design),
so the cost model computes a whole grid with numpy broadcasting. The structure (which cores, which
memory levels, which operands a level keeps) is the same for every configuration.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import TypeVar

import numpy as np
import pandas as pd

_T = TypeVar("_T")

__all__ = ["MemoryLevel", "CoreLevel", "PEAxis", "Core", "Link", "HardwareSpec", "DATAFLOWS", "OPERANDS"]

DATAFLOWS = ("weight_stationary", "output_stationary", "simd")
OPERANDS = ("W", "I", "O")


@dataclass(frozen=True, slots=True)
class MemoryLevel:
    """A memory: capacity, bandwidth and energy per bit, one value per configuration."""

    name: str
    shared: bool
    size_bytes: np.ndarray
    read_bandwidth_bytes_per_cycle: np.ndarray
    write_bandwidth_bytes_per_cycle: np.ndarray
    read_energy_pj_per_bit: np.ndarray
    write_energy_pj_per_bit: np.ndarray


@dataclass(frozen=True, slots=True)
class CoreLevel:
    """A memory level as one core uses it: which operands it keeps there."""

    memory: MemoryLevel
    operands: frozenset[str]


@dataclass(frozen=True, slots=True)
class PEAxis:
    """One axis of a PE array, unrolling loop dimension ``dim`` over ``size`` PEs."""

    name: str
    dim: str
    size: np.ndarray


@dataclass(frozen=True, slots=True)
class Core:
    """``count`` identical cores with a dataflow, a PE array and a memory hierarchy (innermost first)."""

    name: str
    count: np.ndarray
    dataflow: str
    runs: tuple[str, ...]
    pe_array: tuple[PEAxis, ...]
    mac_energy_pj: np.ndarray
    levels: tuple[CoreLevel, ...]

    def unroll(self, dim: str) -> np.ndarray:
        """PEs along loop dimension ``dim`` (the product of the axes that unroll it; 1 if none)."""
        total = np.ones_like(self.count, dtype=np.float64)
        for axis in self.pe_array:
            if axis.dim == dim:
                total = total * axis.size
        return total

    @property
    def pes(self) -> np.ndarray:
        """PEs (MAC units, or SIMD lanes) per core."""
        total = np.ones_like(self.count, dtype=np.float64)
        for axis in self.pe_array:
            total = total * axis.size
        return total

    @property
    def top(self) -> MemoryLevel:
        """The outermost level of this core: what it exchanges with the bus and off-chip memory."""
        return self.levels[-1].memory


@dataclass(frozen=True, slots=True)
class Link:
    """The bus between cores, or the off-chip memory interface."""

    bandwidth_bytes_per_cycle: np.ndarray
    energy_pj_per_bit: np.ndarray


@dataclass(frozen=True, slots=True)
class HardwareSpec:
    """An accelerator template evaluated at every configuration of ``configs``.

    ``configs`` has one row per configuration: ``config_id`` (stable hash of the parameters) and one
    column per template parameter.
    """

    name: str
    source: Path
    word_bytes: int
    configs: pd.DataFrame
    memories: Mapping[str, MemoryLevel]
    cores: tuple[Core, ...]
    bus: Link
    offchip: Link

    @property
    def n_configs(self) -> int:
        return len(self.configs)

    def take(self, rows: slice) -> HardwareSpec:
        """The same template at a contiguous slice of its configurations."""
        memories = {name: _sliced(mem, rows) for name, mem in self.memories.items()}
        cores = tuple(
            replace(
                _sliced(core, rows),
                pe_array=tuple(_sliced(axis, rows) for axis in core.pe_array),
                levels=tuple(CoreLevel(memory=memories[lv.memory.name], operands=lv.operands) for lv in core.levels),
            )
            for core in self.cores
        )
        return replace(
            self,
            configs=self.configs.iloc[rows].reset_index(drop=True),
            memories=memories,
            cores=cores,
            bus=_sliced(self.bus, rows),
            offchip=_sliced(self.offchip, rows),
        )

    def core_for(self, kind: str) -> int | None:
        """Index of the core that runs op kind ``kind``, or None."""
        for index, core in enumerate(self.cores):
            if kind in core.runs:
                return index
        return None


def _sliced(item: _T, rows: slice) -> _T:
    """``item`` with every numpy-array field sliced to ``rows``."""
    changes = {f.name: getattr(item, f.name)[rows] for f in fields(item) if isinstance(getattr(item, f.name), np.ndarray)}
    return replace(item, **changes)
