"""Validated hardware: frozen dataclasses whose numbers are arrays over a sweep's configurations.

A ``HardwareSpec`` describes one accelerator template evaluated at ``n_configs`` configurations:
every numeric field is a float64 array of shape ``(n_configs,)`` (length 1 for a single design),
so the cost model computes a whole grid with numpy broadcasting. The structure (which cores, which
memory levels, which operands a level keeps) is the same for every configuration.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields, is_dataclass, replace
from pathlib import Path
from typing import TypeVar

import numpy as np
import pandas as pd

_T = TypeVar("_T")

__all__ = [
    "MemoryPort",
    "MemoryLevel",
    "CoreLevel",
    "PEAxis",
    "Core",
    "Link",
    "CoreLink",
    "HardwareSpec",
    "InMemoryArray",
    "at_rows",
    "distinct_rows",
    "DATAFLOWS",
    "OPERANDS",
    "PORT_DIRECTIONS",
    "PRECISIONS",
    "TILE_IO",
    "TILINGS",
]

DATAFLOWS = ("weight_stationary", "output_stationary", "simd")
OPERANDS = ("W", "I", "O")
PORT_DIRECTIONS = ("read", "write", "read_write")
# the keys of Core.precision_bits: bits per element of each operand as the core stores and moves it
PRECISIONS = ("inputs", "weights", "outputs", "partial_sums")
TILE_IO = ("overlapped", "serial")
TILINGS = ("any", "divisors")


@dataclass(frozen=True, slots=True)
class MemoryPort:
    """One port of a memory instance: its direction, width per cycle and the operands it serves.

    A ``read_write`` port carries reads and writes through the same ``bandwidth_bytes_per_cycle``.
    """

    name: str
    direction: str
    bandwidth_bytes_per_cycle: np.ndarray
    operands: frozenset[str]


@dataclass(frozen=True, slots=True)
class MemoryLevel:
    """A memory: capacity, bandwidth and energy per bit, one value per configuration.

    ``size_bytes``, the bandwidths and ``ports`` describe one instance; there are ``instances``
    copies of it in each core that lists it (in the whole accelerator when ``shared``), e.g. one per
    PE when ``per_pe``. The read and write bandwidths are the sums over the ports that can read and
    the ports that can write. An access moves at least ``min_access_bits`` (0 = no minimum). An
    operand in ``operand_energy_pj_per_bit`` (read, write) costs that inside a core instead of the
    memory's own energies (``energy_pj_per_bit``). A ``double_buffered`` memory keeps two of each tile
    that is less than its whole operand (the next one loads while the array works on this one).
    """

    name: str
    shared: bool
    size_bytes: np.ndarray
    read_bandwidth_bytes_per_cycle: np.ndarray
    write_bandwidth_bytes_per_cycle: np.ndarray
    read_energy_pj_per_bit: np.ndarray
    write_energy_pj_per_bit: np.ndarray
    instances: np.ndarray
    per_pe: bool
    min_access_bits: np.ndarray
    ports: tuple[MemoryPort, ...]
    operand_energy_pj_per_bit: Mapping[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    double_buffered: bool = False

    def energy_pj_per_bit(self, operand: str | None) -> tuple[np.ndarray, np.ndarray]:
        """What a bit of ``operand`` costs read from and written into one instance (None: the memory's own)."""
        return self.operand_energy_pj_per_bit.get(operand, (self.read_energy_pj_per_bit, self.write_energy_pj_per_bit))


@dataclass(frozen=True, slots=True)
class CoreLevel:
    """A memory level as one core uses it: which operands it keeps there and, where given, the PE axes one instance
    of it spans (``served_axes``, ZigZag's ``served_dimensions``): one instance per PE of the core's other axes, each
    feeding every PE along these (a register shared by the output channels it holds, or by the PEs an input is
    broadcast to). None: each instance beside one PE at work, up to the memory's ``instances``."""

    memory: MemoryLevel
    operands: frozenset[str]
    served_axes: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class PEAxis:
    """One axis of a PE array, unrolling loop dimension ``dim`` over ``size`` PEs; or, per op, one of the loop
    dimensions in ``alternatives`` instead, or over ``size / d`` of its PEs for a ``d`` in ``divisors``,
    whichever costs the op least by the mapping objective (ZigZag's ``spatial_mapping_hint``, whose smaller
    factors ZigZag weighs too)."""

    name: str
    dim: str
    size: np.ndarray
    alternatives: tuple[str, ...] = ()
    divisors: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class InMemoryArray:
    """A PE array that computes inside its weight memory (ZigZag's ``ImcArray``): the weights stay in SRAM cells,
    ``bitline_size`` rows of them summed along each bitline, ``wordline_size`` columns (outputs) side by side.

    ``kind`` is ``analog`` (DACs drive the rows, the bitlines add in charge, an
    ``adc_bits`` ADC reads each column bit) or ``digital`` (1-bit multipliers and adder trees). Activations enter
    ``bit_serial_bits`` at a time, so a MAC takes ``activation_bits / bit_serial_bits`` cycles, and the array computes
    only between writes of its cells (the cost engine adds their cycles to the compute's). The PE axes of
    the core named in ``wordline_axes`` and ``bitline_axes`` say which loops a macro's columns and rows unroll. The
    fields are structure, the same in every configuration of a sweep."""

    kind: str
    wordline_axes: tuple[str, ...]
    bitline_axes: tuple[str, ...]
    wordline_size: int
    bitline_size: int
    activation_bits: int
    weight_bits: int
    bit_serial_bits: int
    adc_bits: int

    @property
    def cycles_per_mac(self) -> float:
        """Cycles one MAC takes: the activation enters ``bit_serial_bits`` at a time."""
        return self.activation_bits / self.bit_serial_bits


@dataclass(frozen=True, slots=True)
class Core:
    """``count`` identical cores with a dataflow, a PE array and a memory hierarchy (innermost first).

    ``precision_bits`` maps each of ``PRECISIONS`` (inputs, weights, outputs, partial_sums) to the
    bits per element of that operand on this core. ``tile_io`` is one of ``TILE_IO``: ``overlapped``
    (loads and stores run under the compute, but for one fill) or ``serial`` (ZigZag's: each MAC op
    first loads its first tiles from off chip, and stores its last output tile after the compute).
    ``tiling`` is one of ``TILINGS``: ``any`` (a tile takes as much of a loop as its memory holds, the last one
    partial) or ``divisors`` (each tile a multiple of the one inside it that divides the loop, as ZigZag's temporal
    mappings split each loop into factors of its size).
    ``in_memory`` describes an array that computes in its weight memory: its MAC ops' energy and cycles come from
    ``traincost.hardware.in_memory`` instead of ``mac_energy_pj`` (which its other ops keep).
    """

    name: str
    count: np.ndarray
    dataflow: str
    runs: tuple[str, ...]
    pe_array: tuple[PEAxis, ...]
    mac_energy_pj: np.ndarray
    levels: tuple[CoreLevel, ...]
    precision_bits: Mapping[str, np.ndarray]
    tile_io: str = "overlapped"
    tiling: str = "any"
    in_memory: InMemoryArray | None = None

    def spatial_variants(self) -> list[Core]:
        """The core once per way its axes may unroll (each axis its ``dim`` or one of its ``alternatives``, over all
        its PEs or ``size / d`` of them for each of its ``divisors``, at least one), the axes' own ``dim`` over all
        their PEs first; one core where no axis has alternatives or divisors."""
        choices = [
            [
                replace(axis, dim=dim, size=size, alternatives=(), divisors=())
                for dim in (axis.dim, *axis.alternatives)
                for size in (axis.size, *(np.maximum(1.0, np.floor(axis.size / d)) for d in axis.divisors))
            ]
            for axis in self.pe_array
        ]
        return [replace(self, pe_array=tuple(axes)) for axes in itertools.product(*choices)]

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

    def outermost(self, operand: str) -> MemoryLevel | None:
        """The outermost level of this core that keeps ``operand``: what a byte of it arriving from outside the core is
        written into and what one leaving is read out of (None: no level keeps it, it goes straight to the PEs)."""
        return next((level.memory for level in reversed(self.levels) if operand in level.operands), None)


@dataclass(frozen=True, slots=True)
class Link:
    """The bus between cores, or the off-chip memory interface.

    ``energy_pj_per_bit`` is the energy per bit moved either way (the mean of the read and the write
    energy when the description gives both: the bus's, and the price of a byte from outside a core when the loop
    order is chosen); ``read_energy_pj_per_bit`` / ``write_energy_pj_per_bit`` are the energies per bit read from and
    written to the memory behind the link (what the scheduler charges the off-chip memory's reads and writes).
    """

    bandwidth_bytes_per_cycle: np.ndarray
    energy_pj_per_bit: np.ndarray
    read_energy_pj_per_bit: np.ndarray
    write_energy_pj_per_bit: np.ndarray


@dataclass(frozen=True, slots=True)
class CoreLink:
    """A point-to-point link between two cores (indexes into ``HardwareSpec.cores``): what one reads out of the
    other's top memory goes over it instead of the bus."""

    cores: tuple[int, int]
    bandwidth_bytes_per_cycle: np.ndarray
    energy_pj_per_bit: np.ndarray


@dataclass(frozen=True, slots=True)
class HardwareSpec:
    """An accelerator template evaluated at every configuration of ``configs``.

    ``configs`` has one row per configuration: ``config_id`` (stable hash of the parameters) and one
    column per template parameter. ``description`` is the file's (empty if it gives none).
    """

    name: str
    source: Path
    word_bytes: int
    configs: pd.DataFrame
    memories: Mapping[str, MemoryLevel]
    cores: tuple[Core, ...]
    bus: Link
    offchip: Link
    links: tuple[CoreLink, ...] = ()
    description: str = ""

    @property
    def n_configs(self) -> int:
        return len(self.configs)

    def take(self, rows: slice | np.ndarray) -> HardwareSpec:
        """The same template at some of its configurations: a slice of them, or their indices."""
        memories = at_rows(dict(self.memories), rows)
        # each core level keeps the spec's own memory, taken once
        cores = tuple(
            replace(
                at_rows(replace(core, levels=()), rows),
                levels=tuple(replace(level, memory=memories[level.memory.name]) for level in core.levels),
            )
            for core in self.cores
        )
        return replace(
            self,
            configs=self.configs.iloc[rows].reset_index(drop=True),
            memories=memories,
            cores=cores,
            bus=at_rows(self.bus, rows),
            offchip=at_rows(self.offchip, rows),
            links=at_rows(self.links, rows),
        )

    def distinct_configs(self) -> tuple[np.ndarray, np.ndarray]:
        """The configurations that describe different hardware, and which of them each configuration describes.

        Two configurations are alike when every number of the template (each memory's, core's, link's) is the same
        in both, bit for bit: parameters that enter only through a product, as ``count: x_pes * y_pes`` does, make
        several configurations of one. The distinct ones come ordered so that those that differ only in how many
        instances their cores have are together (``distinct_rows`` of the instances first).

        Returns:
            ``first``: the index of a configuration of each distinct one; ``alike``: per configuration, the position
            in ``first`` of the configuration it is alike to.
        """
        return distinct_rows(
            (self.memories, self.cores, self.bus, self.offchip, self.links, tuple(core.count for core in self.cores)),
            self.n_configs,
            leave_out=frozenset({"count"}),
        )

    def core_for(self, kind: str) -> int | None:
        """Index of the core that runs op kind ``kind``, or None."""
        for index, core in enumerate(self.cores):
            if kind in core.runs:
                return index
        return None


def distinct_rows(item: object, n_configs: int, *, leave_out: frozenset[str] = frozenset()) -> tuple[np.ndarray, np.ndarray]:
    """The configurations at which every number of ``item`` is different, and which of them each configuration is.

    ``item`` holds per-configuration arrays of length ``n_configs``, in dataclass fields, mappings and tuples
    (``at_rows``); dataclass fields named in ``leave_out`` are not compared. Configurations are alike when all
    compared numbers are the same bit for bit.

    Returns:
        ``first``: the index of a configuration of each distinct one, ordered by their numbers in the order ``item``
        holds them (so those alike in all but the last numbers are together); ``alike``: per configuration, the
        position in ``first`` of the configuration it is alike to.
    """
    if n_configs == 1:  # nothing to compare
        return np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64)
    numbers = [np.asarray(values, dtype=np.float64) for values in _arrays(item, leave_out)]
    rows = np.stack(np.broadcast_arrays(*numbers), axis=1) if numbers else np.zeros((1, 0))
    # big-endian, each row one string of bytes: rows alike in their first numbers sort together
    keys = np.ascontiguousarray(rows.astype(">f8")).view(np.dtype((np.void, 8 * rows.shape[1])))[:, 0]
    _, first, alike = np.unique(keys, return_index=True, return_inverse=True)
    return first, alike.reshape(-1)


def at_rows(item: _T, rows: slice | np.ndarray) -> _T:
    """``item`` at configurations ``rows``: every numpy array in it indexed along its first axis, in its dataclass
    fields, mapping values and tuple items; anything else as it is."""
    if isinstance(item, np.ndarray):
        return item[rows]
    if is_dataclass(item) and not isinstance(item, type):
        return replace(item, **{f.name: at_rows(getattr(item, f.name), rows) for f in fields(item)})
    if isinstance(item, Mapping):
        return {key: at_rows(value, rows) for key, value in item.items()}
    if isinstance(item, tuple):
        return tuple(at_rows(value, rows) for value in item)
    return item


def _arrays(item: object, leave_out: frozenset[str]) -> Iterator[np.ndarray]:
    """Every numpy array in ``item``: its own, and those of its dataclass fields (but ``leave_out``), mapping values and
    tuple items."""
    if isinstance(item, np.ndarray):
        yield item
    elif is_dataclass(item):
        for f in fields(item):
            if f.name not in leave_out:
                yield from _arrays(getattr(item, f.name), leave_out)
    elif isinstance(item, Mapping):
        for value in item.values():
            yield from _arrays(value, leave_out)
    elif isinstance(item, tuple):
        for value in item:
            yield from _arrays(value, leave_out)
