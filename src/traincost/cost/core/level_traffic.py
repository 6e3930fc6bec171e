"""The bytes each memory level reads and writes, what they cost and how long its ports take.

Energy = MACs · e_mac + Σ levels (bits read · e_read + bits written · e_write), a step narrower than a memory's
``min_access_bits`` (per instance) charged as whole accesses of it (``bits_per_access``; a level holding a whole
group's op of a grouped one moves as many groups' tiles together as it holds, ``groups_together``), an operand with
energies of its own in a memory at those. A level's cycles are its reads over its read bandwidth and its writes
over its write bandwidth, or, where its ports share bandwidth or serve some operands only, the fewest cycles its
ports take (``LevelTraffic.cycles``).
"""

from __future__ import annotations

import numpy as np

from traincost.cost.core.gemm import Gemm, group_bytes, largest_divisor
from traincost.cost.core.memory import buffer_copies, capacity_bytes
from traincost.cost.core.vocabulary import BITS, Precision, Tile
from traincost.hardware.spec import Core, MemoryLevel

__all__ = ["LevelTraffic", "bits_per_access", "groups_together"]


class LevelTraffic:
    """Accumulates reads and writes per memory level of a core: the bytes moved, and the bytes charged (an access
    narrower than the memory's ``min_access_bits`` costs a full-width access, as in ZigZag), apart for an operand
    with energies of its own in the memory (``MemoryLevel.operand_energy_pj_per_bit``)."""

    def __init__(self, core: Core, shape: tuple[int, int], instances: list[np.ndarray] | None = None) -> None:
        """``instances``: per level, those at work (default: all of them)."""
        self.core = core
        self.instances = instances or [level.memory.instances[:, None] for level in core.levels]
        self.reads = [np.zeros(shape) for _ in core.levels]
        self.writes = [np.zeros(shape) for _ in core.levels]
        # per level, charged (reads, writes) by operand, None for those at the memory's own energies
        self.charged: list[dict[str | None, list[np.ndarray]]] = [{} for _ in core.levels]
        # per level whose ports share bandwidth or serve some operands only (``_shared_ports``), (reads, writes) by
        # operand, for the ports that carry them
        self.moved: list[dict[str, list[np.ndarray]] | None] = [
            {} if _shared_ports(level.memory) else None for level in core.levels
        ]

    def move(self, i: int, operand: str, *, read: np.ndarray, write: np.ndarray, access_bits: np.ndarray | None = None) -> None:
        """``read`` bytes of ``operand`` out of and ``write`` bytes into level ``i``, in accesses of ``access_bits``
        per instance (None: as wide as the memory likes)."""
        memory = self.core.levels[i].memory
        widen = 1.0
        if access_bits is not None:
            minimum = memory.min_access_bits[:, None]
            accesses = np.ceil(access_bits / np.where(minimum > 0, minimum, 1))
            widen = np.where((minimum > 0) & (access_bits > 0), accesses * minimum / np.maximum(access_bits, 1e-300), 1.0)
        self.reads[i] += read
        self.writes[i] += write
        if self.moved[i] is not None:
            _add(self.moved[i], operand, read, write, like=self.reads[i])
        key = operand if operand in memory.operand_energy_pj_per_bit else None
        _add(self.charged[i], key, read * widen, write * widen, like=self.reads[i])

    def by_memory(self) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], dict[str, np.ndarray]]:
        """Bytes read from and written into each memory (levels sharing a memory added up), and its energy."""
        reads: dict[str, np.ndarray] = {}
        writes: dict[str, np.ndarray] = {}
        energy: dict[str, np.ndarray] = {}
        for level, rd, wr, charged in zip(self.core.levels, self.reads, self.writes, self.charged, strict=True):
            m = level.memory
            reads[m.name] = reads.get(m.name, 0) + rd
            writes[m.name] = writes.get(m.name, 0) + wr
            pj = np.zeros_like(rd)
            for operand, (c_rd, c_wr) in charged.items():
                read_pj, write_pj = m.energy_pj_per_bit(operand)  # the memory's own for None
                pj = pj + BITS * (c_rd * read_pj[:, None] + c_wr * write_pj[:, None])
            energy[m.name] = energy.get(m.name, 0) + pj
        return reads, writes, energy

    def cycles(self) -> np.ndarray:
        """The cycles of the busiest level: its reads over its read bandwidth and its writes over its write bandwidth,
        or, where its ports share bandwidth or serve some operands only, its ports' (``_port_cycles``)."""
        worst = np.zeros_like(self.reads[0])
        for i, (level, instances) in enumerate(zip(self.core.levels, self.instances, strict=True)):
            mem, moved = level.memory, self.moved[i]
            if moved is not None:
                worst = np.maximum(worst, _port_cycles(mem, moved, instances))
                continue
            worst = np.maximum(worst, self.reads[i] / (mem.read_bandwidth_bytes_per_cycle[:, None] * instances))
            worst = np.maximum(worst, self.writes[i] / (mem.write_bandwidth_bytes_per_cycle[:, None] * instances))
        return worst


def _add(pairs: dict, key: str | None, read: np.ndarray, write: np.ndarray, *, like: np.ndarray) -> None:
    """Adds ``read`` and ``write`` to the pair of arrays (shaped ``like``) kept under ``key``."""
    if key not in pairs:
        pairs[key] = [np.zeros_like(like), np.zeros_like(like)]
    pairs[key][0] += read
    pairs[key][1] += write


def _shared_ports(memory: MemoryLevel) -> bool:
    """Whether some port of ``memory`` both reads and writes, or serves some of its operands only."""
    return any(port.direction == "read_write" or port.operands for port in memory.ports)


def _port_cycles(memory: MemoryLevel, moved: dict[str, list[np.ndarray]], instances: np.ndarray) -> np.ndarray:
    """The fewest cycles ``memory``'s ports (per instance at work) take to read and write ``moved`` (bytes read and
    written, by operand): each operand's reads through the ports that read it (any that reads, where none names it),
    its writes likewise, a ``read_write`` port sharing its bandwidth between the two. The bytes fit in T cycles if and
    only if every set of them fits in T cycles of the ports that can carry one of its members (the supply-demand
    theorem), so T is the worst such set's bytes over those ports' bandwidth; bytes that the same ports carry are
    one member."""
    carried: dict[frozenset[int], np.ndarray] = {}
    for operand, per_way in moved.items():
        for nbytes, ways in zip(per_way, (_READ_WAYS, _WRITE_WAYS), strict=True):
            way = [j for j, port in enumerate(memory.ports) if port.direction in ways]
            named = [j for j in way if not memory.ports[j].operands or operand in memory.ports[j].operands]
            key = frozenset(named or way)
            carried[key] = carried.get(key, 0.0) + nbytes
    worst = np.zeros(1)
    members = list(carried)
    for chosen in range(1, 2 ** len(members)):
        sets = [members[b] for b in range(len(members)) if chosen >> b & 1]
        bandwidth = sum(memory.ports[j].bandwidth_bytes_per_cycle for j in frozenset().union(*sets))
        worst = np.maximum(worst, sum(carried[s] for s in sets) / (bandwidth[:, None] * instances))
    return worst


_READ_WAYS, _WRITE_WAYS = frozenset({"read", "read_write"}), frozenset({"write", "read_write"})


def bits_per_access(
    operand: str, tile: Tile, precision: Precision, instances: np.ndarray, copies: np.ndarray | float
) -> np.ndarray:
    """Bits one of a memory's ``instances`` at work moves per step of the child ``tile`` over a boundary:
    ``operand``'s share of the tile (each element in ``copies`` instances, ``copies_per_element``) spread over them, at least one
    element each; outputs in partial-sum precision."""
    m, n, r = tile
    elems = {"W": n * r, "I": m * r, "O": m * n}[operand]
    return np.maximum(elems * copies / instances, 1.0) * BITS * precision.tile_bytes[operand]


def groups_together(core: Core, gemm: Gemm, boundary: tuple[int, int], tile: Tile, precision: Precision) -> np.ndarray | float:
    """How many groups of a grouped op (a depthwise convolution's channels) one transfer over ``boundary`` (child,
    parent: level indices, child -1 for the PE array) carries: where the child level's ``tile`` is a whole group's op,
    the loop above it runs over the groups and nothing else, so the tiles of as many groups as it holds (each group's
    weights, unique inputs and partial sums; twice in a double-buffered memory unless it holds them all, ``buffer_copies``)
    cross together, in accesses as wide as all of them (ZigZag's ``G`` loops inside the memory's tile). Else 1: a
    transfer is one group's tile. (How wide a transfer is matters only where a side has a ``min_access_bits``.)"""
    child = boundary[0]
    widened = any((core.levels[j].memory.min_access_bits > 0).any() for j in boundary if j >= 0)
    if child < 0 or not widened or not (gemm.groups > 1).any():
        return 1.0
    level = core.levels[child]
    (m_t, n_t, r_t), (m, n, r) = tile, gemm.full
    whole = (m_t >= m) & (n_t >= n) & (r_t >= r)
    held = np.floor(capacity_bytes(level, gemm) / group_bytes(gemm, precision, level.operands))
    held = np.floor(held / buffer_copies(level, held, gemm.groups))
    held = np.clip(held, 1.0, gemm.groups)
    if gemm.divisor_tiles:  # as many groups as divide them (``fitted_extent``)
        held = largest_divisor(*np.broadcast_arrays(gemm.groups, held))
    return np.where(whole, held, 1.0)
