"""Per-op cost on one core, as arrays over (configurations × ops): the ZigZag-style analytical model.

MAC ops (``mac_cost``) follow a recipe in the spirit of ZigZag's cost model evaluation:

1. **Spatial unrolling.** Each PE-array axis unrolls one loop dimension. Compute cycles are
   ``Π_d ceil(D_d / u_d)`` over the loop dims, so a layer narrower than the array wastes PEs
   (the ceil effect); spatial utilisation = MACs / (cycles · PEs). A conv gradient carries its forward's loops; its
   axes unroll them as named there or as its primitive names them (``optable.OWN_LOOPS``), whichever costs less.
2. **Tiles per memory level.** Each op is ``g`` GEMMs ``O[M×N] = X[M×R]·S[R×N]``. At the PE array
   the tile is what the array unrolls. Going outwards, a level that keeps the dataflow's stationary
   operand (S for weight-stationary, O for output-stationary) grows the tile to fill the room the
   level leaves it (``_room``: its capacity less the slices the other operands it keeps need while
   the tile stays, as ZigZag fills a shared memory with the sum of the operands' tiles):
   weight-stationary first takes all of R (so no partial sums), then as much of N as fits;
   output-stationary takes a square-ish M×N block (all M rows where they are fewer than its side, and the columns
   the room then holds), but in its outermost output memory the block that brings the fewest
   bytes in (``_output_block``, as the output-resident mapping above any core). A double-buffered memory
   (``MemoryLevel.double_buffered``, ZigZag's ``force_double_buffering``) keeps two of each tile or slice that is less
   than its whole operand
   (``_buffers``), in every block this recipe sizes; a memory with a copy of an element in each instance that works
   on it (per-PE registers under a reduction unrolled over the array, ``_copies``) holds that many times fewer.
   Every tile takes as much of each loop as fits, the loop's last tile partial, or, on a core with ``tiling:
   divisors``, the largest multiple of the tile inside it that divides the loop, as ZigZag's temporal mappings
   split each loop into factors of its size (``_fitted``).
3. **A loop order per op inside the core.** Below the top memory, a band of the innermost levels
   may keep the reduction loops innermost (output-stationary: an output tile stays in its memory
   until all of R is done, while the weights and inputs under it change every step; all of R the
   first weight memory above the band holds, which keeps its tile while the rows stream past it,
   ``_band_within_weights``); above the band the order is the core's dataflow. Where a memory keeps inputs
   between the band and that weight memory, the weight tile is also tried cut in R to 2, 4 or 8 times the columns
   (whole steps of the array's R), as far as the weight memories above it hold (``_columns_above``): the inputs
   there serve that many columns before they are replaced, while the
   band's partial sums leave once per shorter R-tile (ZigZag's ``ascend_like`` GPT-2 ``mlp_fc``: 128 of R x 64
   columns in its 8 KB weight register file, ``I: rf_64KB_I[C2 C2 C2 OY2 K2 OY2 OY2 OY2 OY2 K2]``; recorded in
   ``CoreOpCost.widened_columns``). The band is chosen
   per op and per configuration among 0 (the dataflow's order everywhere) up to every level below
   the top (``_in_band``), with the mapping above the core, by the same objective, and recorded in
   ``CoreOpCost.reduction_levels``. A band's output memories grow their block to their room, or keep the
   array's (``CoreOpCost.band_grown``): a wide block reuses more inside the band but needs a wider slice of
   weights in the memory above it. With a
   one-weight register per PE (ZigZag's ``edge_tpu_like``) the dataflow's order sends partial sums
   to the big SRAM once per reduction tile of the register; the band keeps them in the per-PE
   output registers. The PE array itself keeps no outputs: its partial sums reach the innermost
   output memory once per reduction tile of the array in any order. An output-stationary core has
   only band 0. One more candidate keeps partial sums in the PEs (``_held_blocks``, row-stationary-like
   reuse): where a weight memory (a per-PE register file) lies below the innermost output memory,
   the array takes as many rows as that output memory holds partial sums for, runs the whole
   reduction of the weight memory's tile over them (re-reading those weights once per block of
   rows), and only then moves on; the partial sums leave the output memory once per R-tile of the
   weight memory instead of once per R-tile of the array (ZigZag's ``eyeriss_like``: 16 B output
   registers that would otherwise pass 38 MB of partial sums of one ResNet-18 layer through an
   8 KB SRAM's 16 B/cycle port). Up to that output memory the tiles span the block of rows, so an
   input register that holds a block's inputs is filled in accesses as wide as the block
   (``_block_in_the_pes``). It is recorded in ``CoreOpCost.held_rows``. Where an input memory lies at or
   below that output memory, the same block is tried once more with the weight memory's tile cut to the
   reduction whose inputs of the block's rows the input memory holds, and as wide as the weight memory (and each
   weight memory above it, ``_columns_above``) then holds: the block's inputs stay in the PEs over the whole
   tile, its columns too, loaded once per weight tile instead of once per step of the array's columns, where the
   partial sums leave the output memory once per shorter R-tile (row-stationary reuse, ZigZag's ``eyeriss_like``
   GPT-2 ``qkv``: ``I: rf_64B_A[OY8 C8 K5]``, 8 rows x 8 of C in each 64 B input register over 5 output channels;
   ``_weights_for_the_block``). Its mirror image keeps one step of the
   array's rows and as many of its column tiles as the output memory holds, the columns innermost: each input is
   read once per block of columns, each weight once per step of rows (ZigZag's energy-optimal ``eyeriss_like``
   mappings, an output-channel loop innermost in the PE: ``I: rf_64B_A[K7 ...]``). It is recorded in
   ``CoreOpCost.held_columns``. (ZigZag counts a word the array uses in consecutive cycles as one read, so of all
   the blocks the output memory holds only these two extremes are worth trying: rows innermost reuse weights over
   the rows, columns innermost reuse inputs over the columns, and a block of both reuses only the innermost.)
   Where the weights have no memory below the top (ZigZag's ``gemm_l1``), the array may instead keep each input at
   its port over all the column tiles of a step of rows, the weights read every step and the partial sums leaving
   the array every reduction step (``CoreOpCost.inputs_latched``); on an output-stationary core whose innermost
   output memory lies below its innermost input memory, over the column tiles of that output memory's block.
4. **A mapping per op above the core.** Around the core, the outer loop order is chosen per op and
   per configuration among ``MAPPINGS``, ZigZag's temporal-mapping search reduced to its three
   stationarities: ``weight_resident`` (the dataflow's order for a weight-stationary core: a weight
   tile stays while every input row streams past it), ``input_resident`` (an input block, all of R,
   stays while the weights stream past it: the input is fetched once) and ``output_resident`` (an
   M×N output block stays until complete: no partial sums leave). Each candidate's block grows to
   the room its resident operand's outermost memory leaves it (``_room``; an input or output block
   beside only what its own rows need, ``_input_block``, ``_output_block``; an output block takes, of a
   few shapes that fit, the one that brings the fewest weights and inputs in). A block never shrinks below the tile
   under it, so a mapping is weighed only where its memory holds its block beside the slices it keeps for the
   others (``_block_fits``); the dataflow's own mapping always is. Every order inside the core
   is tried again over chunks of the reduction (``_chunked``), in the output-resident mapping: its tiles
   grow as if the op's R were a chunk, short enough that the outputs' outermost memory keeps the whole
   output, or all columns of half or a quarter of its rows, beside those rows' inputs of a chunk, so an
   output block stays above the core across the chunks while the weights below it are cut to the chunk and
   grow wider (ZigZag's ``tpu_like`` GPT-2 ``mlp_proj``: its 2 MB SRAM keeps all 1,024 x 768 partial sums
   over six chunks of R, weights and inputs fetched once; recorded in ``CoreOpCost.reduction_chunk``). The
   best by the objective
   (latency, energy or EDP of the op with its external bytes fetched from off chip,
   ``ExternalPath``) is kept and recorded in ``CoreOpCost.mapping``. Where the top memory holds the whole op
   (``_holds_the_whole_op``), every mapping above the core moves each operand across once, and the three are weighed
   one level down instead (``_below_top``): the block stays in the resident operand's outermost memory below the
   top and every operand crosses into the top in that mapping's order around it, the dataflow's order above
   (``CoreOpCost.mapping_below_top``; ZigZag's loop order between ``l1`` and ``l3`` on its ``gemm_l1_l3``, whose
   1.25 GB ``l3`` holds every layer). Every order inside the core is tried there again over 2, 4 and 8 chunks of
   the reduction (``_parts_of_the_reduction``): a block below the top keeps its inputs of a chunk (or its outputs)
   while the partial sums go back to the top once per chunk (ZigZag's ``gemm_l1_l3`` GPT-2 ``mlp_proj``: 128 rows' inputs
   of 384 of R in ``l1`` while every column passes; recorded in ``CoreOpCost.reduction_chunk``).
5. **Traffic at each boundary** (child tile → parent), in elements per group, for the loop order
   at that boundary: with S resident, S once, X once per N-tile, O written once per R-tile and read
   back (partial sums) one time fewer (the GEMM's M x N outputs: the pixels of a strided convolution's data
   gradient that no window reaches are written once); with X resident, X once, S once per M-tile, O as before; with
   O resident, O once, S once per M-tile, X once per N-tile. In the S-resident order every row of M
   streams past a weight tile, so an output memory that cannot hold M x N-tile partial sums passes
   them on as they arrive, once per R-tile of the array (of the weight memory, below rows held in
   the PEs; ``_held_partial_sums``), unless an output memory in the band below it has finished them.
   Weights whose only memories lie in the band come in again for every block of rows it finishes, in
   any order above (an in-memory array's cells).
   The streamed operand is counted as its im2col (M·R) at the PE array, less where one step unrolls a convolution's
   outputs and its filter taps along the same axis and one memory instance feeds those PEs: the step's windows
   overlap and it reads each pixel once (``step_windows``; ZigZag's ``edge_tpu_like_mixed``, OX 4 x FX 2 reading 5
   input columns), and as the input pixels its
   windows touch above it (a tile that holds the whole filter window reuses the overlap; a strided
   window skips pixels, ``optable.window_span``). A tile that stays resident cuts a convolution into blocks of
   outputs (of rows in the input- and output-resident orders, of the weight gradient's reduction beside a weight
   tile), and each block reads the pixels its own windows touch: the halo it shares with its neighbours comes in
   once per block (``halo``; ZigZag's ``aimc`` ResNet-18 ``layer1.0.conv1``, 28 blocks of 14 x 8 outputs reading
   16 x 10 pixels each). Rows that stream past a weight tile, and a reduction past an output block, slide over
   the overlap.
6. **Energy** = MACs · e_mac + Σ levels (bits read · e_read + bits written · e_write), a step
   narrower than a memory's ``min_access_bits`` (per instance) charged as whole accesses of it (a
   level holding a whole group's op of a grouped one moves as many groups' tiles together as it holds,
   ``_groups_together``). A
   memory with an instance per PE keeps its own copy of what its PE works on (``_copies``): an input
   broadcast over the output channels the array unrolls is written into and read out of each PE's
   register, and under a reduction the array unrolls each PE accumulates its own partial sum of an
   output (ZigZag's ``tpu_like``, ``eyeriss_like``); the copies meet (added up, or fetched once) at the
   shared memory above. An output-stationary PE accumulates in such a register of its own, reading and writing
   its partial sum every step of the reduction (ZigZag's ``tesla_npu_like_mixed``, two accesses of ``rf_4B`` a
   MAC); under an output memory the PEs share, its accumulator is the MAC's (FuseMax). Such a memory's instances
   beside PEs the op leaves idle hold, move and add nothing (``_working``): capacities, bandwidths and copies
   count the instances at work. A level with ``served_axes`` (ZigZag's ``served_dimensions``) has an instance
   per busy PE of the other axes, holding side by side what varies along the served ones (``gemm_l1_l3``'s
   output register: two output channels' partial sums in one 32-bit access), and copies along the others. On an
   in-memory-computing core (``Core.in_memory``) the MACs' energy is that of the macro activations
   the op takes (``in_memory``: ZigZag's model of the rows and columns it fills), and each step of
   the array takes ``cycles_per_mac`` compute cycles (the inputs enter a few bits at a time).
   A core whose PE axes have ``alternatives`` or ``divisors`` is costed once per way they may unroll
   and each op takes the cheapest by the objective (``mac_cost``; ZigZag's choice among a hint's loops
   and their factors).
7. **Latency** = max(compute cycles, each level's read and write cycles) + fill/drain (array
   pipeline depth plus the first stationary tile load); on a core with ``tile_io: serial`` also
   ZigZag's on- and off-loading (``_serial_tile_io``). An in-memory array computes only between writes of its
   cells: its latency is at least the compute's plus the cycles of writing them, at the external path's pace for
   weights that come from outside (``_cells_written``).

The outermost boundary (core ↔ bus/off-chip, or a tensor already resident in the core) is returned
as traffic (``ext_in_bytes``, ``ext_write_bytes``) and not costed here, not even its write into or
read out of the top memory: where the data comes from is the scheduler's business, and the scheduler
charges each byte that crosses it once, at the top memory, the bus and off chip.

Element-wise ops on a SIMD core (``simd_cost``): ``ceil(elementwise_ops / lanes)`` cycles, every
input and output element passes each level that keeps it once (no reuse), ``e_op`` per operation.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np

from traincost.cost.halo import Halo
from traincost.cost.optable import OWN_LOOPS, ROLES, ROW_SPLIT_KINDS, SPLIT_DIM, OpTable
from traincost.cost.step_windows import WINDOWED_KINDS, step_shares
from traincost.errors import ConfigError
from traincost.hardware import in_memory
from traincost.hardware.spec import Core, CoreLevel, HardwareSpec, MemoryLevel

__all__ = ["CoreOpCost", "ExternalPath", "mac_cost", "simd_cost", "MAPPINGS", "OBJECTIVES", "check_objective"]

_BITS = 8.0
# the loop order above a core: which operand stays resident in its outermost memory
MAPPINGS = ("weight_resident", "input_resident", "output_resident")
_RESIDENT = {"weight_resident": "W", "input_resident": "I", "output_resident": "O"}
OBJECTIVES = ("latency", "energy", "edp")
_TIE = 1e-9  # candidates within this relative margin of the best are tied; the secondary metric decides


def check_objective(objective: str) -> str:
    """``objective`` if it is one of ``OBJECTIVES``.

    Raises:
        ConfigError: any other value.
    """
    if objective not in OBJECTIVES:
        raise ConfigError(f"mapping objective {objective!r}: expected one of {', '.join(OBJECTIVES)}")
    return objective


@dataclass(frozen=True, slots=True)
class ExternalPath:
    """What a byte from outside a core costs on its way in, per configuration: the mapping choice's price of
    external traffic (off chip, over the bus, written into the core's top memory)."""

    bandwidth_bytes_per_cycle: np.ndarray
    energy_pj_per_bit: np.ndarray

    @classmethod
    def of(cls, hardware: HardwareSpec, core: Core) -> ExternalPath:
        """Off-chip memory over the bus into ``core``'s top memory."""
        offchip, bus = hardware.offchip, hardware.bus
        return cls(
            bandwidth_bytes_per_cycle=np.minimum(offchip.bandwidth_bytes_per_cycle, bus.bandwidth_bytes_per_cycle),
            energy_pj_per_bit=offchip.energy_pj_per_bit + bus.energy_pj_per_bit + core.top.write_energy_pj_per_bit,
        )


@dataclass(frozen=True, slots=True)
class CoreOpCost:
    """Cost of ops on one core instance, arrays of shape (configurations, ops)."""

    latency_cycles: np.ndarray
    compute_cycles: np.ndarray
    utilization: np.ndarray
    energy_mac_pj: np.ndarray
    energy_level_pj: dict[str, np.ndarray]
    ext_in_bytes: dict[str, np.ndarray]  # into the top level from outside, per operand W, I, O (partial sums back)
    ext_write_bytes: np.ndarray  # out of the top level: outputs and partial sums
    core_shares: np.ndarray  # the op's work in units of one core's share: D / ceil(D / split), at most split
    mapping: np.ndarray  # index into MAPPINGS of the loop order chosen above the core (-1: not a MAC op)
    # whether ``mapping`` is the loop order below the core's top memory, which holds the whole op (``_below_top``)
    mapping_below_top: np.ndarray
    reduction_levels: np.ndarray  # the chosen band: reduction innermost over the array and band - 1 levels (-1: no MAC)
    held_rows: np.ndarray  # rows whose partial sums the PEs' output memory holds across the reduction (0: not that order)
    held_columns: np.ndarray  # the same, columns with the inputs reused across them (0: not that order)
    band_grown: np.ndarray  # whether the band's output memories grew their block to their room (else the array's)
    inputs_latched: np.ndarray  # whether each input stays at the port over the output channels (``_orders``)
    # the chunk of the reduction the tiles inside the core run over, the output block kept above them across the
    # chunks (``_chunked``; 0: all of R)
    reduction_chunk: np.ndarray
    # the columns of the band's weight tile where it was cut in R so that the input memories below it serve that many
    # columns (``_band_within_weights``; 0: not that order)
    widened_columns: np.ndarray
    level_read_bytes: dict[str, np.ndarray]  # bytes read from each memory level, inside the core
    level_write_bytes: dict[str, np.ndarray]  # bytes written into each memory level, inside the core
    # which of the core's ``spatial_variants`` unrolled the op (0: the axes' own dims, and every non-MAC op)
    spatial_variant: np.ndarray | int = 0
    # whether the PE axes unrolled a conv gradient's loops as its primitive names them (``OWN_LOOPS``), not as its
    # forward convolution's
    own_loops: np.ndarray | bool = False


class _Levels:
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
                pj = pj + _BITS * (c_rd * read_pj[:, None] + c_wr * write_pj[:, None])
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


_Tile = tuple[np.ndarray, np.ndarray, np.ndarray]  # (m, n, r) elements per group


@dataclass(frozen=True, slots=True)
class _Precision:
    """Bytes per element of each operand on a core, arrays (configurations, 1): W weights, I inputs, O outputs, and
    the partial sums an unfinished output is kept and moved in."""

    final_bytes: dict[str, np.ndarray]  # W, I, O as stored once complete
    partial_sum_bytes: np.ndarray

    @classmethod
    def of(cls, core: Core) -> _Precision:
        bits = core.precision_bits
        final = {"W": bits["weights"], "I": bits["inputs"], "O": bits["outputs"]}
        return cls(
            final_bytes={operand: (b / 8.0)[:, None] for operand, b in final.items()},
            partial_sum_bytes=(bits["partial_sums"] / 8.0)[:, None],
        )

    @property
    def tile_bytes(self) -> dict[str, np.ndarray]:
        """What one element of a resident tile takes: an output block accumulates in partial-sum precision."""
        return {"W": self.final_bytes["W"], "I": self.final_bytes["I"], "O": self.partial_sum_bytes}

    def bytes(self, operand: str, down: np.ndarray, up: np.ndarray, *, partial: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """Elements over a boundary (``_traffic``) in bytes. Of an output's ``up`` elements, the first ``down`` (as
        many as come back down) are partial sums; the rest are final outputs, or partial sums too where ``partial``
        (a PE's own copy of an output, to be added to the other PEs' in the memory above: ``_copies``)."""
        if operand != "O":
            return down * self.final_bytes[operand], up * self.final_bytes[operand]
        last = self.partial_sum_bytes if partial else self.final_bytes["O"]
        return down * self.partial_sum_bytes, down * self.partial_sum_bytes + (up - down) * last


def _working(level: CoreLevel, gemm: _Gemm) -> np.ndarray:
    """Instances of ``level``'s memory at work on each op: at most one per PE the op keeps busy (the MACs of one step
    of the array); for a level with ``served_axes``, one per busy PE of the other axes. A memory with one instance per
    PE has the rest beside idle PEs (an array unrolling a loop the op does not fill, or an imported array that unrolls
    fewer PEs than it has: ZigZag's ``generic_array_cacti``, 65,536 register files and 1,024 PEs at work); they hold
    nothing, move nothing and add no bandwidth."""
    instances = level.memory.instances[:, None]
    if level.served_axes is None:
        return np.minimum(instances, gemm.pes_at_work)
    return np.minimum(instances, _unserved_pes(level, gemm))


def _unserved_pes(level: CoreLevel, gemm: _Gemm, *, skip: tuple[int, ...] = ()) -> np.ndarray:
    """The busy PEs along the axes ``level`` does not serve (a level with ``served_axes``), but for those whose loop
    plays a role in ``skip`` (of ``ROLES``: 0 M, 1 N, 2 R) in an op."""
    busy = np.ones_like(gemm.macs)
    for axis in gemm.axes:
        if axis.name not in level.served_axes:
            busy = busy * np.where(np.isin(axis.role, skip), 1.0, axis.used)
    return busy


def _capacity_bytes(level: CoreLevel, gemm: _Gemm) -> np.ndarray:
    """Bytes a level holds for each op: its size over the instances at work (``_working``)."""
    return level.memory.size_bytes[:, None] * _working(level, gemm)


def _share_elems(level: CoreLevel, gemm: _Gemm, element_bytes: np.ndarray) -> np.ndarray:
    """Elements of one operand a level holds: its capacity over the instances at work, shared by the operands it
    keeps (a share is a slice: half of it in a double-buffered memory, ``_buffers``)."""
    halves = 2.0 if level.memory.double_buffered else 1.0
    return _capacity_bytes(level, gemm) / len(level.operands) / element_bytes / halves


def _buffers(level: CoreLevel, elems: np.ndarray, whole: np.ndarray) -> np.ndarray | float:
    """How many copies of a tile of ``elems`` elements ``level`` keeps: two in a double-buffered memory where the tile
    is less than its whole operand (``whole`` elements: the next tile loads while the array works on this one, as
    ZigZag sizes a tile in a memory with ``force_double_buffering``), else one."""
    if not level.memory.double_buffered:
        return 1.0
    return np.where(elems < whole, 2.0, 1.0)


def _room(level: CoreLevel, gemm: _Gemm, inner: _Tile, operand: str, precision: _Precision) -> np.ndarray:
    """Elements of ``operand`` a level holds when its tile stays there: the level's capacity over the instances at work
    (``_working``) less,
    for each other operand the level keeps, the slice that operand needs there meanwhile (ZigZag fills a memory
    with the sum of its operands' tiles; an equal share each would leave most of it unused). While a tile stays,
    the others pass it one step of the ``inner`` tile at a time: beside a weight tile the rows streaming past it
    (inputs m_inner x R as im2col, partial sums m_inner x N), beside an input block a weight slice R x n_inner and
    outputs M x n_inner, beside an output block an input slice M x r_inner and a weight slice r_inner x N. Each
    slice spans the op's whole extent in the tile's dimensions, so the room does not depend on how far it grows.
    In a double-buffered memory a slice, and the tile unless it is its whole operand, take twice their size
    (``_buffers``). A memory with a copy of an element in each instance that works on it (``_copies``: a partial sum
    of an output whose reduction the array unrolls, an input broadcast over the output channels) holds that many
    times fewer, the tile's elements and the slices' alike (ZigZag's ``eyeriss_like``: 16 B output registers in 168
    PEs, 12 of them on each output, hold 112 outputs, not 1,344)."""
    room = np.maximum(_capacity_bytes(level, gemm) - _reserved(level, gemm, inner, operand, precision), 0.0)
    room = room / precision.tile_bytes[operand] / _copies(level, operand, gemm)
    return room / _buffers(level, room, _whole(gemm)[operand])


def _whole(gemm: _Gemm) -> dict[str, np.ndarray]:
    """Each operand's elements in one group of ``gemm``."""
    m, n, r = gemm.full
    return {"W": r * n, "I": m * r, "O": m * n}


def _reserved(level: CoreLevel, gemm: _Gemm, inner: _Tile, operand: str, precision: _Precision) -> np.ndarray | float:
    """Bytes ``level`` keeps for the slices of its other operands while a tile of ``operand`` stays (``_room``), each
    element in each of its copies (``_copies``)."""
    (m, n, r), (m_i, n_i, r_i) = gemm.full, inner
    whole = _whole(gemm)
    beside = {"W": {"I": m_i * r, "O": m_i * n}, "I": {"W": r * n_i, "O": m * n_i}, "O": {"I": m * r_i, "W": r_i * n}}[operand]
    return sum(
        beside[other] * precision.tile_bytes[other] * _buffers(level, beside[other], whole[other]) * _copies(level, other, gemm)
        for other in level.operands
        if other != operand
    )


@dataclass(frozen=True, slots=True)
class _AxisUse:
    """One PE axis on MAC ops, arrays (configs, ops): its PEs each op keeps busy, and the role its loop plays in each
    op (0, 1, 2: M, N, R of ``ROLES``; -1: none, one PE busy)."""

    name: str
    used: np.ndarray
    role: np.ndarray


def _axis_use(core: Core, dims: dict[str, np.ndarray], kinds: np.ndarray) -> tuple[_AxisUse, ...]:
    """What each of ``core``'s PE axes does for each op: a loop over several axes fills them in turn."""
    left = dict(dims)
    out = []
    distinct, each = np.unique(kinds, return_inverse=True)
    for axis in core.pe_array:
        role = np.array([next((w for w, ds in enumerate(ROLES[kind]) if axis.dim in ds), -1) for kind in distinct])[each]
        used = np.ones_like(next(iter(dims.values())))
        if axis.dim in left:
            size = axis.size[:, None]
            used = np.where(role >= 0, np.minimum(left[axis.dim], size), 1.0)
            left[axis.dim] = np.ceil(left[axis.dim] / size)
        out.append(_AxisUse(name=axis.name, used=used, role=role))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class _Gemm:
    """The GEMM view of MAC ops on one core (after a tensor-parallel split), arrays (configs, ops)."""

    dims: dict[str, np.ndarray]
    full: _Tile  # M, N, R per group
    groups: np.ndarray
    macs: np.ndarray
    s_elems: np.ndarray  # per group
    o_elems: np.ndarray
    x_unique: np.ndarray
    window: np.ndarray
    core_shares: np.ndarray  # D / ceil(D / split): how many shares the split dimension fills
    array_tile: _Tile  # what one step of the PE array covers (``_array_tile``)
    steps: _Tile  # the PE array's steps along M, N and R (``_array_steps``)
    axes: tuple[_AxisUse, ...]  # what each PE axis does for each op (``_axis_use``; only where a level has served_axes)
    halo: Halo  # the pixels a convolution's blocks of outputs read again (``inputs_read``)
    step_share: np.ndarray  # of the streamed operand's im2col, what the array reads (``x_streamed``)
    own_steps: tuple[np.ndarray, ...]  # per level, the partial sums a PE's own copy of an output takes (``_own_steps``)
    divisor_tiles: bool = False  # the core's ``tiling`` is ``divisors`` (``_fitted``)

    @property
    def pes_at_work(self) -> np.ndarray:
        """PEs one step of the array keeps busy: its MACs."""
        m_a, n_a, r_a = self.array_tile
        return m_a * n_a * r_a

    def inputs_read(self, tile: _Tile) -> np.ndarray:
        """Input elements per group the op reads when it is cut into ``tile``'s blocks: the pixels each block's windows
        touch, the halo between blocks read once per block (``halo.Halo``), at most what the array reads (``x_streamed``)."""
        return np.minimum(self.x_unique * self.halo.factor(tile), self.x_streamed)

    def tile_count(self, axis: int, tile: np.ndarray, *, steps: np.ndarray | None = None) -> np.ndarray:
        """How many tiles of ``tile`` elements the op takes along ``axis`` (0, 1, 2: M, N, R). One step of the array
        (``array_tile``) at a time: the array's steps along the axis, each loop unrolled on it padded apart
        (``edge_tpu_like_mixed``'s C 2 x FX 2 x FY 2 on a 3x3 layer of 64 channels: 32 x 2 x 2 = 128 steps, where its
        576 taps would fill 72; 14 x 14 outputs over OX 4 x OY 4: 16, not 13), or ``steps`` where the caller counts
        otherwise (a PE's own copy of an output, ``own_steps``). With ``divisors`` a tile is whole steps, and the op
        that many times fewer of them. Otherwise ceil(extent / tile), as a tile of ``any`` size holds its elements.
        The three agree where the axis has one loop or no unrolled loop pads its last step."""
        whole, unit = self.full[axis], self.array_tile[axis]
        steps = self.steps[axis] if steps is None else steps
        spans = tile / unit
        stepped = ((spans == 1.0) | (self.divisor_tiles & (spans == np.round(spans)))) & (tile < whole)
        return np.where(stepped, steps / spans, np.ceil(whole / tile))

    @property
    def x_streamed(self) -> np.ndarray:
        """Elements per group of the streamed operand the PE array reads over the op: its im2col, less where one step
        unrolls a convolution's outputs and taps together and its windows overlap (``step_windows``)."""
        return self.full[0] * self.full[2] * self.step_share

    @classmethod
    def of(
        cls, table: OpTable, index: np.ndarray, split: np.ndarray, core: Core, unroll: dict[str, np.ndarray], *, rows: bool
    ) -> _Gemm:
        """The GEMM view of ops ``index`` on one of ``split`` cores: each core takes ceil(D / split) of the dimension
        the op is split along, its output channels (``SPLIT_DIM``), or with ``rows`` its output rows where its kind
        allows (``ROW_SPLIT_KINDS``: each core then holds every weight and reads its rows' inputs with their halo)."""
        shape = (split.shape[0], len(index))
        kinds = table.kind[index]
        dims = {d: np.broadcast_to(table.dims[d][index].astype(np.float64), shape).copy() for d in table.dims}
        m_share, n_share, x_share = np.ones(shape), np.ones(shape), np.ones(shape)
        for kind, channels in SPLIT_DIM.items():
            mask = kinds == kind
            if not mask.any():
                continue
            by_rows = rows and kind in ROW_SPLIT_KINDS
            dim = "OY" if by_rows else channels
            part = np.ceil(dims[dim][:, mask] / split[:, None])
            (m_share if by_rows else n_share)[:, mask] = part / dims[dim][:, mask]
            if by_rows:  # the input rows a share's windows touch, of those the whole op's touch
                stride, dilation = table.stride[index][mask, 0], table.dilation[index][mask, 0]
                taps = (dims["FY"][:, mask] - 1) * dilation + 1
                x_share[:, mask] = ((part - 1) * stride + taps) / ((dims[dim][:, mask] - 1) * stride + taps)
            dims[dim][:, mask] = part
        share = m_share * n_share
        groups = table.groups[index][None, :]
        full = (
            table.m[index][None, :] * m_share,
            table.n[index][None, :] * n_share,
            table.r[index][None, :] * np.ones(shape),
        )
        return cls(
            dims=dims,
            full=full,
            groups=groups,
            macs=table.macs[index][None, :] * share,
            s_elems=table.s_elems[index][None, :] * n_share / groups,
            o_elems=table.o_elems[index][None, :] * share / groups,
            x_unique=table.x_elems[index][None, :] * x_share / groups,
            window=table.window[index][None, :],
            core_shares=1 / share,
            array_tile=_array_tile(dims, full, kinds, unroll),
            steps=_array_steps(dims, kinds, unroll),
            axes=_axis_use(core, dims, kinds) if any(level.served_axes is not None for level in core.levels) else (),
            halo=Halo.of(table, index, dims["OY"] if rows else None),  # a row share's halo: of its own rows
            step_share=step_shares(
                dims, table.stride[index], table.dilation[index], np.isin(kinds, WINDOWED_KINDS), _fed_by_one(core, unroll)
            ),
            own_steps=_own_steps(core, dims, kinds, unroll),
            divisor_tiles=core.tiling == "divisors",
        )


def mac_cost(
    core: Core,
    table: OpTable,
    index: np.ndarray,
    *,
    split: np.ndarray | None = None,
    split_rows: bool = False,
    external: ExternalPath | None = None,
    objective: str = "edp",
) -> CoreOpCost:
    """Cost of the MAC ops ``index`` of ``table`` on one instance of ``core``.

    Args:
        core: a core whose ``runs`` include these ops' kinds.
        table: the workload's op table.
        index: positions in ``table`` of MAC ops.
        split: per configuration, the number of cores the op's output channels are split over
            (tensor parallelism); the cost is that of one of those cores (the largest share), and
            ``core_shares`` says how many such shares the op's work fills (D / ceil(D / split): fewer
            than ``split`` when D is smaller, fractional when it does not divide evenly). Default 1.
        split_rows: split a convolution's or GEMM's output rows over the ``split`` cores instead (``ROW_SPLIT_KINDS``:
            each core holds every weight and reads the input rows its share's windows touch, the halo between shares
            read by both); the other kinds keep their output-channel split.
        external: the price of a byte from outside; with it, the loop order above the core is chosen per op
            among ``MAPPINGS``; without it, the core's dataflow decides.
        objective: what the choice minimises: ``latency``, ``energy`` or ``edp``.

    A core whose PE axes have ``alternatives`` or ``divisors`` is costed once per way they may unroll
    (``Core.spatial_variants``) and each op takes the cheapest by ``objective`` (its external bytes fetched over
    ``external``, if given), as ZigZag picks among a spatial-mapping hint's loops and their factors;
    ``spatial_variant`` records which. A conv gradient is costed again with its axes on the loops its primitive names
    as theirs (``OWN_LOOPS``: a K axis over the data gradient's output channels, the forward's C, as Stream maps
    MONET's ConvTranspose) and takes that where it costs less; ``own_loops`` records it.
    """
    check_objective(objective)

    def costed(variant: Core, ops: np.ndarray) -> CoreOpCost:
        return _mac_cost(variant, table, ops, split=split, split_rows=split_rows, external=external, objective=objective)

    distinct = core.spatial_variants()
    costs = [costed(variant, index) for variant in distinct]
    # each variant again with a conv gradient's loops unrolled as its primitive names them (``OWN_LOOPS``)
    own = [
        _on_own_loops(cost, variant, table.kind[index], lambda renamed, columns: costed(renamed, index[columns]))
        for cost, variant in zip(costs, distinct, strict=True)
    ]
    variants = distinct
    if any(cost is not None for cost in own):
        costs = [*costs, *(cost if cost is not None else forward for cost, forward in zip(own, costs, strict=True))]
        variants = [*distinct, *distinct]
    if len(costs) == 1:
        return costs[0]
    # a variant over fewer PEs (``divisors``) leaves the others idle: utilisation is of the whole array
    costs = [
        replace(cost, utilization=cost.utilization * (v.pes / core.pes)[:, None]) for cost, v in zip(costs, variants, strict=True)
    ]
    moved = [sum(cost.ext_in_bytes.values()) + cost.ext_write_bytes for cost in costs]
    latency = np.stack([cost.latency_cycles for cost in costs])
    energy_pj = np.stack([cost.energy_mac_pj + sum(cost.energy_level_pj.values()) for cost in costs])
    if external is None:  # in the core alone
        external = ExternalPath(
            bandwidth_bytes_per_cycle=np.full(core.count.shape, np.inf), energy_pj_per_bit=np.zeros(core.count.shape)
        )
    pick = _best(moved, latency=latency, energy_pj=energy_pj, external=external, objective=objective)
    chosen = _fieldwise(costs, lambda arrays: _choose([np.broadcast_to(array, pick.shape) for array in arrays], pick))
    return replace(chosen, spatial_variant=pick % len(distinct), own_loops=pick >= len(distinct))


def _on_own_loops(
    forward: CoreOpCost, core: Core, kinds: np.ndarray, costed: Callable[[Core, np.ndarray], CoreOpCost]
) -> CoreOpCost | None:
    """``forward`` (the cost of ops of ``kinds`` on ``core``) with each conv gradient's columns costed again
    (``costed(core, columns)``) on the array unrolling the loops its axes name as the gradient's primitive names them
    (``OWN_LOOPS``: the data gradient's output channels on a K axis, as a ConvTranspose's, its reduction on a C axis);
    None where no axis of ``core`` unrolls such a loop of a gradient among them."""
    out = None
    for kind, loops in OWN_LOOPS.items():
        columns = np.flatnonzero(kinds == kind)
        if not len(columns) or not any(axis.dim in loops for axis in core.pe_array):
            continue
        renamed = replace(core, pe_array=tuple(replace(axis, dim=loops.get(axis.dim, axis.dim)) for axis in core.pe_array))
        out = _spliced(forward if out is None else out, costed(renamed, columns), columns)
    return out


def _spliced(whole: CoreOpCost, part: CoreOpCost, columns: np.ndarray) -> CoreOpCost:
    """``whole`` with its ops ``columns`` costed as ``part`` (whose ops they are, in order)."""
    shape = whole.latency_cycles.shape

    def spliced(arrays: list[np.ndarray]) -> np.ndarray:
        into, values = arrays
        out = np.broadcast_to(into, shape).copy()
        out[:, columns] = np.broadcast_to(values, (shape[0], len(columns)))
        return out

    return _fieldwise([whole, part], spliced)


def _fieldwise(costs: list[CoreOpCost], combine: Callable[[list[np.ndarray]], np.ndarray]) -> CoreOpCost:
    """The cost whose every array (each memory's and operand's apart) is ``combine`` of ``costs``'; the records of
    which variant and which loops at their defaults."""
    out: dict[str, Any] = {}
    for field in fields(CoreOpCost):
        if field.name in ("spatial_variant", "own_loops"):
            continue
        values = [getattr(cost, field.name) for cost in costs]
        out[field.name] = (
            {key: combine([value[key] for value in values]) for key in values[0]}
            if isinstance(values[0], dict)
            else combine(values)
        )
    return CoreOpCost(**out)


def _mac_cost(
    core: Core,
    table: OpTable,
    index: np.ndarray,
    *,
    split: np.ndarray | None,
    split_rows: bool,
    external: ExternalPath | None,
    objective: str,
) -> CoreOpCost:
    """``mac_cost`` on a core whose PE axes each unroll one loop dimension."""
    n_cfg = core.count.shape[0]
    split = np.ones(n_cfg) if split is None else np.asarray(split, dtype=np.float64)
    unroll = {d: core.unroll(d)[:, None] for d in table.dims}
    gemm = _Gemm.of(table, index, split, core, unroll, rows=split_rows)
    steps = np.ones_like(gemm.macs)
    for d, size in gemm.dims.items():
        steps = steps * np.ceil(size / unroll[d])
    # a step of an in-memory array takes a cycle per group of input bits that enter together
    compute = steps * (core.in_memory.cycles_per_mac if core.in_memory is not None else 1.0)
    mac_pj = (
        in_memory.mac_energy_pj(core, gemm.dims, gemm.macs)
        if core.in_memory is not None
        else gemm.macs * core.mac_energy_pj[:, None]
    )

    precision = _Precision.of(core)
    # the candidates inside the core (a band of reduction-innermost levels, or rows held in the PEs), each x a
    # mapping above the core
    orders = _orders(core, gemm, precision)
    # each order again over chunks of the reduction, an output block kept above the core: a mapping above the core is
    # chosen only with an external path
    chunked = _chunked(core, gemm, precision) if external is not None else None
    if chunked is not None:
        orders += [replace(order, chunk=chunked) for order in _orders(core, chunked, precision)]
    inside = [_inside(core, gemm, precision, compute=compute, mac_pj=mac_pj, candidate=order) for order in orders]
    serial = _serial_tile_io(core, gemm, precision, external) if core.tile_io == "serial" else 0.0
    # the orders over chunks are for an output block above the core: weighed in that mapping alone
    weighed = MAPPINGS if external is not None else (_NATIVE[core.dataflow],)
    options = [
        (k, name, traffic)
        for k, cand in enumerate(inside)
        for name, traffic in _external_traffic(
            core,
            gemm,
            cand.tiles,
            cand.outermost,
            precision,
            band=orders[k].band,
            mappings=weighed if orders[k].chunk is None else ("output_resident",),
        ).items()
    ]
    whole = _holds_the_whole_op(core, gemm, precision)
    if external is not None and whole.any():
        # the top memory holds the whole op (every mapping above the core moves each operand across once): the
        # loop order is chosen below it instead, with the dataflow's above, and again over chunks of the reduction
        candidates = [(order, cand.tiles) for order, cand in zip(orders, inside, strict=True) if order.chunk is None]
        if _memories_below_top(core):
            for part in _parts_of_the_reduction(gemm):
                candidates += [
                    (replace(order, chunk=part), _order_tiles(core, part, precision, order))
                    for order in _orders(core, part, precision)
                ]
        for order, tiles in candidates:
            shaped = gemm if order.chunk is None else order.chunk
            for name, (block, fits) in _below_top(core, shaped, tiles, precision, band=order.band).items():
                orders.append(replace(order, below_top=(name, block)))
                inside.append(_inside(core, gemm, precision, compute=compute, mac_pj=mac_pj, candidate=orders[-1]))
                # the top memory's tile is the whole op, whatever chunk of the reduction the tiles below it run over
                (traffic,) = _external_traffic(
                    core,
                    gemm,
                    [*inside[-1].tiles[:-1], gemm.full],
                    inside[-1].outermost,
                    precision,
                    band=order.band,
                    mappings=(_NATIVE[core.dataflow],),
                ).values()
                options.append((len(inside) - 1, name, replace(traffic, fits=fits)))
    below = [orders[k].below_top is not None for k, *_ in options]
    latencies = [
        np.maximum(
            inside[k].latency, compute + _cells_written(core, gemm, inside[k], traffic.in_bytes["W"], external) + _depth(core)
        )
        if core.in_memory is not None
        else inside[k].latency
        for k, _, traffic in options
    ]
    pick = np.zeros(compute.shape, dtype=np.int64)
    if len(options) > 1 and external is not None:
        # a loop order below the top memory is one only where that memory holds the whole op; a mapping's block, only
        # where its memory holds it; inputs latched over the columns, only where the weight memory below the top holds
        # them all
        possible = np.stack(
            [
                (whole | (not below_top)) & traffic.fits & _latched_fits(core, orders[k], inside[k].tiles, gemm, precision)
                for below_top, (k, _, traffic) in zip(below, options, strict=True)
            ]
        )
        pick = _best(
            [sum(traffic.in_bytes.values()) + traffic.write_bytes for *_, traffic in options],
            latency=np.where(possible, np.stack(latencies) + serial, np.inf),
            energy_pj=np.where(possible, np.stack([inside[k].energy_pj for k, *_ in options]), np.inf),
            external=external,
            objective=objective,
        )
    chosen = [inside[k] for k, *_ in options]
    held_of = [orders[k].held for k, *_ in options]
    return CoreOpCost(
        latency_cycles=_choose(latencies, pick) + serial,
        compute_cycles=compute,
        utilization=gemm.macs / (steps * core.pes[:, None]),
        energy_mac_pj=mac_pj,
        energy_level_pj={m: _choose([cand.level_pj[m] for cand in chosen], pick) for m in inside[0].level_pj},
        ext_in_bytes={op: _choose([traffic.in_bytes[op] for *_, traffic in options], pick) for op in ("W", "I", "O")},
        ext_write_bytes=_choose([traffic.write_bytes for *_, traffic in options], pick),
        core_shares=gemm.core_shares,
        mapping=np.asarray([MAPPINGS.index(name) for _, name, _ in options])[pick],
        mapping_below_top=np.asarray(below)[pick],
        reduction_levels=np.asarray([orders[k].band for k, *_ in options])[pick],
        band_grown=np.asarray([orders[k].grow for k, *_ in options])[pick],
        inputs_latched=np.asarray([orders[k].latched for k, *_ in options])[pick],
        held_rows=_choose([_recorded(held, "rows", compute) for held in held_of], pick),
        held_columns=_choose([_recorded(held, "columns", compute) for held in held_of], pick),
        reduction_chunk=_choose([_chunk_of(orders[k], gemm) for k, *_ in options], pick),
        widened_columns=_choose([_widened_of(orders[k], inside[k].tiles) for k, *_ in options], pick),
        level_read_bytes={m: _choose([cand.read_bytes[m] for cand in chosen], pick) for m in inside[0].read_bytes},
        level_write_bytes={m: _choose([cand.write_bytes[m] for cand in chosen], pick) for m in inside[0].write_bytes},
    )


@dataclass(frozen=True, slots=True)
class _Order:
    """One candidate order inside a core (``_orders``): a ``band`` of reduction-innermost levels whose output memories
    grow their block to their room (``grow``) or keep the array's, or a block of outputs ``held`` in the PEs (band
    0); with ``below_top``, a ``MAPPINGS`` name and its block right below the top memory (``_below_top``); or the
    inputs ``latched`` at the array's port (``_orders``). With ``chunk``, the op as its tiles see it, its R cut to a
    chunk of the reduction (``_chunked``)."""

    band: int
    held: _Held | None = None
    grow: bool = True
    below_top: tuple[str, _Tile] | None = None
    latched: bool = False
    chunk: _Gemm | None = None
    widen: float = 1.0


def _orders(core: Core, gemm: _Gemm, precision: _Precision) -> list[_Order]:
    """The candidate orders inside a core: each band (``_bands``); again with the array's block of outputs where a level
    in the band keeps outputs (whose block would grow: a block as wide as the array's leaves the weight slice above it
    narrow, ZigZag's ``O: reg_O[C16 FY3 FX3]`` on ``gemm_l1_l3``); each block held in the PEs (``_held_blocks``); and,
    on a weight-stationary core whose weights have no memory below the top (the array takes them straight from it, as
    ZigZag's ``gemm_l1``), the inputs latched: each step of rows runs over all the array's column tiles, each input
    staying at the port while the weights change every step, and the partial sums of the row step's outputs leave the
    array every reduction step (ZigZag's ``access_same_data_considered_as_no_access`` with the output channels
    innermost, ``I: l1[K64 ...]``; a weight held in the array is the dataflow's own latch), or whose weights' innermost
    memory is a register in each PE that holds the weights of every column for a step of the array's R
    (``_latched_columns``, ``_latches_over_weights``). On an output-stationary
    core whose innermost output memory lies below its innermost input memory, the inputs latched too: the array runs
    the column tiles of that memory's block innermost, each input staying at its port while they pass and the weights
    changing every step as in the dataflow's order (ZigZag's ``tesla_npu_like_mixed``: ``I: sram_1KB_I[K2]``, two
    output-channel tiles' partial sums in each 4-byte output register, ``O: rf_4B[K2 C64 FY3 FX3]``). And each band whose weight
    memory above it has an input memory below it (``_inputs_below_weights``) again with that memory's tile cut in R to
    ``_WIDER`` times the columns (``_band_within_weights``)."""
    orders = [_Order(band) for band in _bands(core)]
    orders += [_Order(band, grow=False) for band in _bands(core) if any("O" in core.levels[i].operands for i in range(band - 1))]
    orders += [_Order(band, widen=widen) for band in _bands(core) if _inputs_below_weights(core, band) for widen in _WIDER]
    orders += [_Order(0, held=held) for held in _held_blocks(core, gemm, precision)]
    if core.dataflow == "weight_stationary" and _latches_over_weights(core):
        orders.append(_Order(0, latched=True))
    if core.dataflow == "output_stationary" and 0 <= _innermost(core, "O") < _innermost(core, "I"):
        orders.append(_Order(0, latched=True))
    return orders


_WIDER = (2.0, 4.0, 8.0)  # the columns a band's weight tile is tried at, in units of the tile below it


def _weights_above_band(core: Core, band: int) -> int | None:
    """The position in ``core.levels`` of the first weight memory above a ``band`` >= 1 (None: band 0, or none)."""
    above = [i for i, level in enumerate(core.levels) if "W" in level.operands and not _in_band(i, band)]
    return above[0] if band > 0 and above else None


def _inputs_below_weights(core: Core, band: int) -> bool:
    """Whether, above a ``band`` >= 1, a memory keeps inputs (and no outputs lie) below the first weight memory."""
    w = _weights_above_band(core, band)
    if w is None:
        return False
    between = [core.levels[i].operands for i in range(band - 1, w)]
    return any("I" in operands for operands in between) and not any("O" in operands for operands in between)


def _chunked(core: Core, gemm: _Gemm, precision: _Precision) -> _Gemm | None:
    """The op as the tiles inside the core see it when the outputs' outermost memory keeps a block of outputs, all the
    columns of a half, a quarter or all of the rows (the most that fits), over chunks of the reduction: its R cut to
    the chunk whose inputs of the block's rows (and, where that memory keeps them, weights of every column; twice in a
    double-buffered memory) fit beside the block in partial-sum precision, whole steps of the array's R (ZigZag's
    ``O: sram_2MB[OY64 K6 OY16 K4 C6]`` on ``tpu_like``'s GPT-2 ``mlp_proj``: the 1,024 x 768 partial sums and 512 of
    R's 3,072 inputs of every row fill its 2 MB; ``O: sram_1MB_A[OY2 OY2 C2 C2]`` on ``ascend_like``'s, 512 rows).
    None where no op of any configuration fits at least one step of the array's R in fewer than all of R, or that
    memory keeps neither inputs nor weights (a block of outputs alone stays over all of R)."""
    holders = [level for level in core.levels if "O" in level.operands]
    if not holders or not {"I", "W"} & holders[-1].operands:
        return None
    level, (m, n, r), r_a = holders[-1], gemm.full, gemm.array_tile[2]
    capacity = _capacity_bytes(level, gemm) / _copies(level, "O", gemm)
    chunk = np.zeros_like(r)
    for parts in (4.0, 2.0, 1.0):  # the most rows last, to be kept where they fit
        rows = _fitted(gemm, np.ceil(m / parts), gemm.array_tile[0], 0)
        per_r = sum(
            extent * precision.tile_bytes[operand] * _buffers(level, extent * r_a, extent * r)
            for operand, extent in (("I", rows), ("W", n))
            if operand in level.operands
        )
        left = capacity - rows * n * precision.tile_bytes["O"]
        fitted = np.floor(np.maximum(left, 0.0) / per_r / r_a) * r_a
        chunk = np.where(fitted >= r_a, _fitted(gemm, np.minimum(fitted, r), r_a, 2), chunk)
    fits = (chunk >= r_a) & (chunk < r)
    if not fits.any():
        return None
    return _cut_reduction(gemm, np.where(fits, chunk, r))


def _cut_reduction(gemm: _Gemm, chunk: np.ndarray) -> _Gemm:
    """The op as tiles over a ``chunk`` of its reduction see it: its R, weights and input elements cut to the chunk."""
    cut = chunk / gemm.full[2]
    steps = np.where(chunk >= gemm.full[2], gemm.steps[2], np.ceil(chunk / gemm.array_tile[2]))
    return replace(
        gemm,
        full=(*gemm.full[:2], chunk),
        s_elems=gemm.s_elems * cut,
        x_unique=gemm.x_unique * cut,
        steps=(*gemm.steps[:2], steps),
    )


def _fed_by_one(core: Core, unroll: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The PEs along each loop dimension that one instance of the innermost input memory feeds (configurations x 1):
    every PE where one instance feeds the array (or the inputs come straight from outside the core), those along its
    ``served_axes`` where it has them, one where it has an instance per PE (each keeps its own copy of a pixel)."""
    inner = _innermost(core, "I")
    if inner < 0:
        return unroll
    level = core.levels[inner]
    if level.served_axes is None:
        one = (level.memory.instances == 1)[:, None]
        return {d: np.where(one, size, 1.0) for d, size in unroll.items()}
    fed = {d: np.ones_like(size) for d, size in unroll.items()}
    for axis in core.pe_array:
        if axis.name in level.served_axes and axis.dim in fed:
            fed[axis.dim] = fed[axis.dim] * axis.size[:, None]
    return fed


def _innermost(core: Core, operand: str) -> int:
    """The position in ``core.levels`` of the innermost level that keeps ``operand`` (-1: none does)."""
    return next((i for i, level in enumerate(core.levels) if operand in level.operands), -1)


def _outermost(core: Core, operand: str) -> int | None:
    """The position in ``core.levels`` of the outermost level that keeps ``operand`` (None: none does)."""
    return next((i for i in reversed(range(len(core.levels))) if operand in core.levels[i].operands), None)


@dataclass(frozen=True, slots=True)
class _Held:
    """A block of outputs whose partial sums the innermost output memory keeps across the reduction of the innermost
    weight memory's tile (``_held_blocks``): ``rows`` x ``columns`` elements per group, the ``innermost`` of the two
    looped over fastest (its reuse: each weight read once per block of rows, or each input once per block of
    columns). ``weights``: the innermost weight memory's tile cut to the reduction whose inputs of the block's rows
    the input memory in the PEs holds (None: the tile it grows to, ``_tiles``)."""

    rows: np.ndarray
    columns: np.ndarray
    innermost: str  # "rows" or "columns"
    weights: _Tile | None = None


def _held_blocks(core: Core, gemm: _Gemm, precision: _Precision) -> list[_Held]:
    """The blocks of outputs the innermost output memory can keep across the reduction (row-stationary-like reuse in
    the PEs): inside the tile of a weight memory below it, the array takes a block, runs the whole reduction of that
    tile over it, and only then moves on, so the output memory passes on each output once per R-tile of the weight
    memory instead of once per R-tile of the array. Two blocks: as many rows of the array's columns as the memory
    holds, rows innermost (the weights read again from their memory once per block of rows); or one step of the
    array's rows and as many of its column tiles as the memory holds (at most the weight memory's tile), columns
    innermost (the inputs read once per block of columns, the weights every step). An output memory with more
    instances than the outputs of one array step (one per PE, under a reduction unrolled over the array) keeps a
    partial sum of each output in every instance that works on it: it holds that many times fewer. No block where the
    order does not apply: a core that is not weight-stationary, no weight memory below the innermost output memory,
    or no output memory above it."""
    outputs = [i for i, level in enumerate(core.levels) if "O" in level.operands]
    weight = _innermost(core, "W")
    if core.dataflow != "weight_stationary" or len(outputs) < 2 or not 0 <= weight < outputs[0]:
        return []
    level = core.levels[outputs[0]]
    m_a, n_a, _ = gemm.array_tile
    tiles = _tiles(core, gemm, precision, band=0)
    m, n_w = gemm.full[0], tiles[weight + 1][1]
    held = _share_elems(level, gemm, precision.partial_sum_bytes) / _copies(level, "O", gemm)
    steps = np.floor(held / (m_a * n_a))
    rows = _Held(rows=_fitted(gemm, np.clip(steps * m_a, m_a, m), m_a, 0), columns=n_a, innermost="rows")
    columns = _fitted(gemm, np.clip(steps * n_a, n_a, np.maximum(n_w, n_a)), n_a, 1)
    blocks = [rows, _Held(rows=m_a, columns=columns, innermost="columns")]
    inputs = [i for i, level in enumerate(core.levels[: outputs[0] + 1]) if "I" in level.operands]
    if inputs:
        weights = _weights_for_the_block(core, gemm, tiles, precision, rows=rows.rows, inputs=inputs[0])
        blocks.append(replace(rows, weights=weights))
    return blocks


def _weights_for_the_block(
    core: Core, gemm: _Gemm, tiles: list[_Tile], precision: _Precision, *, rows: np.ndarray, inputs: int
) -> _Tile:
    """The innermost weight memory's tile for a block of ``rows`` held in the PEs, cut to the reduction whose inputs of
    those rows the input memory at ``inputs`` holds (whole steps of the array's, at least one) and as wide as the
    weight memory, and the weight memories above it (``_columns_above``), then hold: the block's inputs stay in the
    PEs over the whole tile, its columns too (an Eyeriss-like row-stationary order, ZigZag's ``I: rf_64B_A[OY8 C8
    K5]``, ``W: rf_64B_W[OY8 C8 K5 OY4]``: 8 rows of inputs in the 64-byte input registers over 8 of the reduction
    and 5 output channels)."""
    (m, n, r), (_, n_a, r_a) = gemm.full, gemm.array_tile
    weight = _innermost(core, "W")
    level = core.levels[inputs]
    room = _share_elems(level, gemm, precision.final_bytes["I"]) / _copies(level, "I", gemm)
    unique = gemm.x_unique / (m * r)
    r_b = _fitted(gemm, np.clip(np.floor(room / (rows * unique) / r_a) * r_a, r_a, r), r_a, 2)
    m_w, n_w, r_w = tiles[weight + 1]
    r_b = np.minimum(r_b, r_w)
    space = _room(core.levels[weight], gemm, tiles[weight], "W", precision)
    columns = np.minimum(space / r_b, _columns_above(core, gemm, tiles, precision, weight=weight, r=r_b))
    n_b = _fitted(gemm, np.clip(np.floor(columns / n_a) * n_a, n_w, n), n_w, 1)
    return m_w, n_b, r_b


def _columns_above(
    core: Core, gemm: _Gemm, tiles: list[_Tile], precision: _Precision, *, weight: int, r: np.ndarray
) -> np.ndarray | float:
    """The most columns a weight tile at level ``weight`` may span so that every weight memory above it (below the
    top, whose block the mapping above the core sizes) still holds its own tile, which takes as many columns over
    its R-tile, or ``r`` where that is longer (``tiles``: the order's tiles before the widening): ZigZag's
    ``eyeriss_like`` on GPT-2's ``qkv``, 96 of R x 112 columns in the 64 B weight registers would need 112 x 768
    weights of its 64 KB SRAM, which holds 85 columns. inf where no weight memory lies there."""
    columns: np.ndarray | float = np.inf
    for k in range(weight + 1, len(core.levels) - 1):
        if "W" in core.levels[k].operands:
            room = _room(core.levels[k], gemm, tiles[k], "W", precision)
            columns = np.minimum(columns, np.floor(room / np.maximum(tiles[k + 1][2], r)))
    return columns


def _holds_the_whole_op(core: Core, gemm: _Gemm, precision: _Precision) -> np.ndarray:
    """Whether the core's top memory keeps all three operands and holds the whole op at once: its weights, the input
    pixels it reads and its outputs in partial-sum precision, per (configuration, op)."""
    level = core.levels[-1]
    if level.operands != {"W", "I", "O"}:
        return np.zeros(gemm.macs.shape, dtype=bool)
    return _group_bytes(gemm, precision, level.operands) * gemm.groups <= _capacity_bytes(level, gemm)


def _group_bytes(gemm: _Gemm, precision: _Precision, operands: frozenset[str]) -> np.ndarray:
    """Bytes of one group's whole op in ``operands``: its weights, the input pixels it reads and its outputs in
    partial-sum precision."""
    elems = {"W": gemm.s_elems, "I": gemm.x_unique, "O": gemm.o_elems}
    return sum(elems[operand] * precision.tile_bytes[operand] for operand in operands)


def _order_tiles(core: Core, shaped: _Gemm, precision: _Precision, candidate: _Order) -> list[_Tile]:
    """The tiles of ``candidate`` (``_tiles``, with a held block ``_block_in_the_pes``, or the columns a weight memory
    keeps for inputs latched over them, ``_latched_columns``) on the op as they see it."""
    tiles = _tiles(core, shaped, precision, band=candidate.band, grow=candidate.grow, widen=candidate.widen)
    if candidate.latched and core.dataflow == "weight_stationary":
        return _latched_columns(core, shaped, tiles, precision)
    return tiles if candidate.held is None else _block_in_the_pes(core, shaped, tiles, candidate.held, precision)


def _latched_columns(core: Core, gemm: _Gemm, tiles: list[_Tile], precision: _Precision) -> list[_Tile]:
    """The tiles of a weight-stationary core whose inputs stay latched at the array's port over every column of the op
    (``_orders``) where a weight memory lies below the top: that memory (a register in each PE) keeps the weights of all N
    columns over as much of the reduction as it holds, whole steps of the array's R, so each input is read once while
    the columns pass and each weight tile is loaded once and reused by every row (ZigZag's ``tpu_like`` under Stream's
    inter-core split, output columns x input channels on the array: ``I2: rf_128B[K16 ...]``, the 16 output channels
    of a core's share innermost, the partial sums to the 2 MB SRAM every step). Every tile above it spans all N. Where
    it does not hold all N columns for one step of the array's R, the order is not possible (``_latched_fits``)."""
    w, (_, n, r), r_a = _innermost(core, "W"), gemm.full, gemm.array_tile[2]
    if w == len(core.levels) - 1:  # the weights come straight from the top memory: every tile as the dataflow's
        return tiles
    room = _room(core.levels[w], gemm, tiles[w], "W", precision)
    r_w = _fitted(gemm, np.clip(np.floor(room / n / r_a) * r_a, r_a, r), r_a, 2)
    return [
        (m_k, np.maximum(n_k, n), np.minimum(r_k, r_w) if k <= w + 1 else np.maximum(r_k, r_w)) if k > w else (m_k, n_k, r_k)
        for k, (m_k, n_k, r_k) in enumerate(tiles)
    ]


def _latches_over_weights(core: Core) -> bool:
    """Whether a weight-stationary core may latch its inputs over the columns: its weights come straight from the top
    memory, or their innermost memory is a register in each PE (``tpu_like``'s ``rf_128B``, where ZigZag's mapping
    under Stream runs the output channels innermost). A weight memory shared by the array (the Edge TPU study's
    register file) is not offered the order."""
    w = _innermost(core, "W")
    return w == len(core.levels) - 1 or (w >= 0 and core.levels[w].memory.per_pe)


def _latched_fits(core: Core, order: _Order, tiles: list[_Tile], gemm: _Gemm, precision: _Precision) -> np.ndarray | bool:
    """Whether ``order`` is possible as far as latching goes: where it latches the inputs over the columns of a
    weight-stationary core (``_latched_columns``, whose ``tiles`` these are), the innermost weight memory below the top
    holds all N columns of the op (``order.chunk``, else ``gemm``) for one step of the array's R; True for any other
    order and where the weights have no memory below the top."""
    w = _innermost(core, "W")
    if not order.latched or core.dataflow != "weight_stationary" or w == len(core.levels) - 1:
        return True
    shaped = order.chunk or gemm
    return _room(core.levels[w], shaped, tiles[w], "W", precision) >= shaped.full[1] * shaped.array_tile[2]


_PARTS = (2.0, 4.0, 8.0)  # the chunks of the reduction an order below the top memory is tried over


def _parts_of_the_reduction(gemm: _Gemm) -> list[_Gemm]:
    """The op as tiles below the top memory see it when its R is cut into ``_PARTS`` chunks, whole steps of the
    array's R (ZigZag's ``gemm_l1_l3`` GPT-2 ``mlp_proj``: ``I: l1[C2 C2 C3 C2 C2 ...]``, 128 rows' inputs of 384 of
    R in ``l1`` while all the columns pass, the partial sums back to ``l3`` once per chunk), where some op of some
    configuration has a chunk shorter than its R."""
    r, r_a = gemm.full[2], gemm.array_tile[2]
    parts = []
    for count in _PARTS:
        chunk = _fitted(gemm, np.minimum(np.ceil(r / count / r_a) * r_a, r), r_a, 2)
        if (chunk < r).any():
            parts.append(_cut_reduction(gemm, chunk))
    return parts


def _memories_below_top(core: Core) -> bool:
    """Whether every operand has a memory below the core's top one (where a loop order below the top may be chosen)."""
    return all(any(operand in level.operands for level in core.levels[:-1]) for operand in "WIO")


def _below_top(
    core: Core, gemm: _Gemm, tiles: list[_Tile], precision: _Precision, *, band: int
) -> dict[str, tuple[_Tile, np.ndarray]]:
    """The mappings other than the dataflow's for the loop order right below the top memory, each with its block
    (``_resident_tile``) in the resident operand's outermost memory below the top, grown from the tile below that
    memory, and whether the block fits there (``_block_fits``): as ``MAPPINGS`` above the core, one loop nest around
    the block whichever memory each operand arrives in (ZigZag's loop order between ``l1`` and ``l3`` on its
    ``gemm_l1_l3``, whose 1.25 GB ``l3`` holds every layer). None where an operand has no memory below the top (it
    would cross into the array straight from the top) or its boundary into the top lies in the reduction-innermost
    ``band`` (whose order is set there). An input block runs all of R below the top: where the outputs' memory below
    the top is another than the inputs', the block takes no more rows than that memory holds partial sums for over
    its column tile (a copy in each instance that works on an output, ``_copies``, as ``_held_blocks`` counts them:
    ZigZag's ``generic_array_cacti``, per-PE registers for each operand under a 32 MB SRAM), and fits only where that
    memory holds them for the rows of the tile below."""
    below = {operand: [i for i, level in enumerate(core.levels[:-1]) if operand in level.operands] for operand in "WIO"}
    if not all(below.values()) or any(_in_band(holders[-1], band) for holders in below.values()):
        return {}
    native = _NATIVE[core.dataflow]
    blocks = {}
    for name in (name for name in MAPPINGS if name != native):
        resident = _RESIDENT[name]
        home = below[resident][-1]
        block = _resident_tile(core.levels[home], gemm, tiles[home], resident, precision)
        partial_sums_fit: np.ndarray | bool = True
        if resident == "I" and below["O"][-1] != home:
            level, (m_b, n_b, r_b) = core.levels[below["O"][-1]], block
            held = _share_elems(level, gemm, precision.partial_sum_bytes) / _copies(level, "O", gemm)
            inner = tiles[home][0]
            block = (_fitted(gemm, np.clip(np.floor(held / n_b), inner, m_b), inner, 0), n_b, r_b)
            partial_sums_fit = block[0] * n_b <= held * (1 + _TIE)
        fits = _block_fits(core.levels[home], gemm, tiles[home], resident, precision, block=block)
        blocks[name] = (block, fits & partial_sums_fit)
    return blocks


def _widened_of(order: _Order, tiles: list[_Tile]) -> np.ndarray:
    """What ``CoreOpCost`` records of a candidate's widened weight tile: the columns the first tile above its band
    spans where they are more than the band's, else 0."""
    if order.widen == 1.0:
        return np.zeros_like(tiles[0][1])
    below, above = tiles[order.band - 1][1], tiles[order.band][1]
    return np.where(above > below, above, 0.0)


def _chunk_of(order: _Order, gemm: _Gemm) -> np.ndarray:
    """What ``CoreOpCost`` records of a candidate's chunk of the reduction: its R where it is less than the op's,
    else 0."""
    if order.chunk is None:
        return np.zeros_like(gemm.macs)
    return np.where(order.chunk.full[2] < gemm.full[2], order.chunk.full[2], 0.0)


def _recorded(held: _Held | None, innermost: str, like: np.ndarray) -> np.ndarray:
    """What ``CoreOpCost`` records of a candidate's held block: its rows (or columns) where they are innermost, else 0."""
    if held is None or held.innermost != innermost:
        return np.zeros_like(like)
    return np.broadcast_to(held.rows if innermost == "rows" else held.columns, like.shape)


def _block_in_the_pes(core: Core, gemm: _Gemm, tiles: list[_Tile], held: _Held, precision: _Precision) -> list[_Tile]:
    """The tiles of a held-block order (``_held_blocks``): up to the innermost output memory, each level that keeps
    inputs keeps them across the block. Its tile spans the block's rows (their inputs of one R-step of the array move
    together, in accesses as wide as the block; the traffic is the same) where its inputs fit (per copy,
    ``_copies``), and the block's columns (each input stays while they pass: loaded once per block of columns). Where
    it also holds the inputs of the block's rows over the innermost weight memory's whole R-tile (its unique pixels,
    at the op's ratio of unique inputs to im2col elements), it keeps them over that R-tile: a window's overlap is
    loaded once (ZigZag's input register holding a depthwise layer's ``OY FX FY OX``); a block of rows keeps them over
    the tile's columns too, loaded once per weight tile. With ``held.weights`` the weight memory's tile is that one
    (``_weights_for_the_block``)."""
    if held.weights is not None:  # the weight memory's tile cut for the block, the tiles above it at least as large
        w = _innermost(core, "W") + 1
        tiles = [*tiles[:w], held.weights, *(tuple(map(np.maximum, tile, held.weights)) for tile in tiles[w + 1 :])]
    out = [tiles[0]]
    top = _innermost(core, "O")
    _, n_w, r_w = tiles[_innermost(core, "W") + 1]
    unique = gemm.x_unique / (gemm.full[0] * gemm.full[2])
    for i, (m_t, n_t, r_t) in enumerate(tiles[1:]):
        level, m_new = core.levels[i], np.maximum(m_t, out[-1][0])
        n_new, r_new = n_t, r_t
        if i <= top and "I" in level.operands:
            room = _share_elems(level, gemm, precision.final_bytes["I"]) / _copies(level, "I", gemm)
            m_new = np.where(room >= held.rows * tiles[0][2], np.maximum(m_new, held.rows), m_new)
            whole_r = room >= held.rows * r_w * unique
            across = np.maximum(held.columns, n_w) if held.innermost == "rows" else held.columns
            n_new = np.maximum(n_t, np.where(whole_r, across, held.columns))
            r_new = np.where(whole_r, np.maximum(r_t, r_w), r_t)
        out.append((m_new if i <= top else m_t, n_new, r_new))
    return out


def _reads_at_the_array(core: Core, gemm: _Gemm, tiles: list[_Tile], candidate: _Order, operand: str) -> np.ndarray | float:
    """How many times more often the array reads ``operand`` in the ``candidate`` order than in the dataflow's: in a
    held-block order (``_held_blocks``) the weights again per block of rows, the inputs once per block of columns;
    with the inputs ``latched``, the weights every step and each input once, or, on an output-stationary core, each
    input once per block of columns of the innermost output memory (1 in any other order)."""
    n_a, rows, columns = gemm.array_tile[1], gemm.steps[0], gemm.steps[1]
    if candidate.latched and core.dataflow == "output_stationary":
        n_o = tiles[_innermost(core, "O") + 1][1]
        return gemm.tile_count(1, np.maximum(n_o, n_a)) / columns if operand == "I" else 1.0
    if candidate.latched and operand != "O":
        return rows if operand == "W" else 1 / columns
    if candidate.held is None or operand == "O":
        return 1.0
    held = candidate.held
    return gemm.tile_count(0, held.rows) if operand == "W" else gemm.tile_count(1, held.columns) / columns


def _held_partial_sums(level: CoreLevel, gemm: _Gemm, tile: _Tile, arriving: np.ndarray, precision: _Precision) -> _Tile:
    """The tile whose partial sums leave an output memory in the weight-resident order: every row of M streams
    past a weight tile, so the memory must hold M x N-tile partial sums to finish the tile's R-tiles; one that
    cannot passes them on as they arrive, once per ``arriving`` R-tile (the array's, or the weight memory's
    below an output memory that holds a block, ``_held_blocks``). (Outputs an output memory in the band has finished
    are not partial sums: the caller does not ask.)"""
    m_t, n_t, r_t = tile
    fits = _share_elems(level, gemm, precision.partial_sum_bytes) >= gemm.full[0] * n_t
    return m_t, n_t, np.where(fits, r_t, np.minimum(r_t, arriving))


def _serial_tile_io(core: Core, gemm: _Gemm, precision: _Precision, external: ExternalPath | None) -> np.ndarray:
    """ZigZag's on- and off-loading cycles (``tile_io: serial``). An input operand whose only memory in the core
    holds all of it (in the room that memory leaves it, ``_room``) is loaded once, before the compute (ZigZag's
    period count of 1); one with more levels, or that does not fit, is loaded tile by tile under the compute. The
    inputs load side by side (the slower one counts); after the compute, the array's last output tile leaves. Over
    ``external``'s bandwidth (without it, the top memory's write bandwidth)."""
    top = core.top
    bandwidth = (
        external.bandwidth_bytes_per_cycle if external is not None else top.write_bandwidth_bytes_per_cycle * top.instances
    )[:, None]
    first = np.zeros_like(gemm.macs)
    for operand, elems in (("W", gemm.s_elems), ("I", gemm.x_unique)):
        holders = [level for level in core.levels if operand in level.operands]
        if len(holders) == 1:
            whole = elems * gemm.groups
            fits = whole <= _room(holders[0], gemm, gemm.array_tile, operand, precision)
            first = np.maximum(first, np.where(fits, whole * precision.final_bytes[operand], 0.0))
    m_t, n_t, _ = gemm.array_tile
    return (first + m_t * n_t * precision.final_bytes["O"]) / bandwidth


def _bands(core: Core) -> range:
    """The candidate bands of reduction-innermost levels: 0 (the dataflow's order at every level) up to every level
    below the top. An output-stationary core keeps its reduction innermost already: only 0."""
    return range(1 if core.dataflow == "output_stationary" else len(core.levels) + 1)


@dataclass(frozen=True, slots=True)
class _Inside:
    """One candidate order inside a core: its tiles, each operand's outermost holder (None: straight into the array),
    latency, MAC + level energy, and bytes read, bytes written and energy per memory, arrays (configs, ops)."""

    tiles: list[_Tile]
    outermost: dict[str, int | None]
    latency: np.ndarray
    energy_pj: np.ndarray
    read_bytes: dict[str, np.ndarray]
    write_bytes: dict[str, np.ndarray]
    level_pj: dict[str, np.ndarray]


def _inside(
    core: Core, gemm: _Gemm, precision: _Precision, *, compute: np.ndarray, mac_pj: np.ndarray, candidate: _Order
) -> _Inside:
    """Inside the core in the ``candidate`` order: with the reduction loops innermost over the PE array and the
    ``band`` - 1 innermost levels (``_in_band``) and the dataflow's order above them; or, with ``held``
    (``_held_blocks``), the dataflow's order except inside the innermost weight memory's tile, where the reduction
    runs innermost over blocks of outputs whose partial sums stay in the innermost output memory. With ``below_top``
    (a ``MAPPINGS`` name and its block, ``_below_top``), every operand crosses into the top memory in that loop
    order around the block."""
    band, held, below_top = candidate.band, candidate.held, candidate.below_top
    tiles = _order_tiles(core, gemm if candidate.chunk is None else candidate.chunk, precision, candidate)
    top = len(core.levels) - 1
    levels = _Levels(core, compute.shape, [_working(level, gemm) for level in core.levels])
    outermost = {operand: _outermost(core, operand) for operand in ("W", "I", "O")}
    for operand in ("W", "I", "O"):
        holders = [i for i, level in enumerate(core.levels) if operand in level.operands]
        child = -1  # the PE array
        final: bool | np.ndarray = False  # whether the outputs leaving the child are complete
        arriving = tiles[0][2]  # the R-tile of the partial sums that reach the child
        for parent in holders:
            # the array keeps no output of its own: its partial sums go to the innermost output memory in any order
            in_band = _in_band(child, band) and (child >= 0 or operand != "O")
            order = "output_resident" if in_band else _NATIVE[core.dataflow]
            if child < 0 and operand == "O" and core.levels[parent].memory.per_pe:
                # an output-stationary PE keeps its output in its own register where the core gives it one, and reads
                # and writes it every step of the reduction (ZigZag's ``tesla_npu_like_mixed``: ``O: rf_4B[K2 C64 FY3
                # FX3]``); under a shared output memory its accumulator is the MAC's (FuseMax)
                order = "weight_resident"
            tile = tiles[child + 1]
            if below_top is not None and parent == top and child >= 0:
                order, tile = below_top
            elif operand == "O" and in_band:
                # the band's output block leaves once per R-tile of its tile (``_band_within_weights``): complete
                # where that spans all of R
                order, final, arriving = "weight_resident", final | (tile[2] >= gemm.full[2]), tile[2]
            elif operand == "O" and child >= 0 and order == "weight_resident":
                if held is not None and child == holders[0]:
                    # the rows held finish the reduction of the innermost weight tile before they leave
                    r_w = tiles[_innermost(core, "W") + 1][2]
                    tile, final, arriving = (tile[0], tile[1], r_w), r_w >= gemm.full[2], r_w
                elif final is False:
                    tile = _held_partial_sums(core.levels[child], gemm, tile, arriving, precision)
                elif not np.all(final):
                    passed = _held_partial_sums(core.levels[child], gemm, tile, arriving, precision)
                    tile = (np.where(final, tile[0], passed[0]), tile[1], np.where(final, tile[2], passed[2]))
            down, up = _boundary_bytes(order, gemm, operand, tile, precision, at_array=child < 0)
            down = down * (_reads_at_the_array(core, gemm, tiles, candidate, operand) if child < 0 else 1.0)
            sides = ((child, up, down), (parent, down, up))
            together = _groups_together(core, gemm, (child, parent), tile, precision)
            for level, read, write in sides if child >= 0 else sides[1:]:
                copies = _copies(core.levels[level], operand, gemm)
                own = np.asarray(copies) > 1
                p_read, p_write = read, write
                if operand == "O" and own.any():
                    # a PE's own copy of an output (``_copies``) is a partial sum until the copies meet in the memory
                    # above, one for each step its PE works in (``_Gemm.own_steps``)
                    p_down, p_up = _boundary_bytes(
                        order, gemm, operand, tile, precision, at_array=child < 0, partial=True, steps=gemm.own_steps[level]
                    )
                    p_read, p_write = (p_up, p_down) if level == child else (p_down, p_up)
                bits = _access_bits(operand, tile, precision, levels.instances[level], copies) * together
                read_bytes, write_bytes = np.where(own, p_read, read), np.where(own, p_write, write)
                levels.move(level, operand, read=read_bytes * copies, write=write_bytes * copies, access_bits=bits)
            child = parent

    latency = np.maximum(compute, levels.cycles())
    stationary = "O" if core.dataflow == "output_stationary" else "W"
    latency += _depth(core) + _first_tile_cycles(core, gemm, precision, stationary)
    reads, writes, level_pj = levels.by_memory()
    energy_pj = mac_pj + sum(level_pj.values())
    return _Inside(tiles, outermost, latency, energy_pj, reads, writes, level_pj)


def _cells_written(core: Core, gemm: _Gemm, cand: _Inside, ext_weights: np.ndarray, external: ExternalPath | None) -> np.ndarray:
    """Cycles of writing the weights into an in-memory array's cells, which it cannot compute beside: a cell holds
    the one weight the array computes with, and the next waits for it (ZigZag: the cells' tile fills them, so they are
    not double-buffered and are updated only between uses; its cycles on ``aimc`` and ``dimc`` are the compute's plus
    the weights' off-chip bytes over the link, or the link's time for all bytes where that is more). The bytes written
    from the memory above go at the cells' write bandwidth (the instances at work); where the cells are the weights'
    outermost memory, those from outside (``ext_weights``) at the external path's too."""
    cells = _innermost(core, "W")
    level = core.levels[cells]
    bandwidth = level.memory.write_bandwidth_bytes_per_cycle[:, None] * _working(level, gemm)
    cycles = cand.write_bytes[level.memory.name] / bandwidth
    if cand.outermost["W"] == cells:
        rate = bandwidth if external is None else np.minimum(bandwidth, external.bandwidth_bytes_per_cycle[:, None])
        cycles = cycles + ext_weights / rate
    return cycles


_NATIVE = {"weight_stationary": "weight_resident", "output_stationary": "output_resident", "simd": "weight_resident"}


@dataclass(frozen=True, slots=True)
class _Traffic:
    """What one mapping above the core moves across its outer boundary, per (configuration, op): ``in_bytes`` per
    operand, ``write_bytes`` out, and whether the mapping's block fits where it stays (``_block_fits``; the
    dataflow's own mapping crosses with the tiles themselves and always can)."""

    in_bytes: dict[str, np.ndarray]
    write_bytes: np.ndarray
    fits: np.ndarray | bool = True


def _external_traffic(
    core: Core,
    gemm: _Gemm,
    tiles: list[_Tile],
    outermost: dict[str, int | None],
    precision: _Precision,
    *,
    band: int,
    mappings: tuple[str, ...],
) -> dict[str, _Traffic]:
    """Per candidate mapping of ``mappings``, the bytes that cross the core's outer boundary (the native mapping
    first, then in the order of ``MAPPINGS``).

    In the native mapping each operand crosses at its outermost holder, with that level's tile, in the
    dataflow's order. Another mapping keeps a block of its resident operand in that operand's outermost
    memory (grown from the tile below it to the room that memory leaves it), and every operand that has a memory
    crosses in that mapping's order around the block: one loop nest above the core, whichever memory each
    operand arrives in. It is tried when its resident operand has a memory. Weights whose outermost holder is in
    the ``band`` with less than the whole reduction come in again for every block of rows the band finishes,
    whatever the mapping: the band runs all of R for each output block, through that tile (an in-memory array's
    weights, whose only memory is its cells)."""
    native = _NATIVE[core.dataflow]
    names = [native, *(name for name in MAPPINGS if name != native and outermost[_RESIDENT[name]] is not None)]
    names = [name for name in names if name in mappings]
    out: dict[str, _Traffic] = {}
    for name in names:
        block, fits = None, True
        if name != native:
            resident = _RESIDENT[name]
            home = outermost[resident]
            block = _resident_tile(core.levels[home], gemm, tiles[home], resident, precision)
            fits = _block_fits(core.levels[home], gemm, tiles[home], resident, precision, block=block)
        ext_in: dict[str, np.ndarray] = {}
        ext_write = np.zeros_like(gemm.macs)
        for operand, holder in outermost.items():
            if holder is None:  # straight into the array
                order, tile = native, tiles[0]
            else:
                order, tile = (native, tiles[holder + 1]) if block is None else (name, block)
            down, up = _boundary_bytes(order, gemm, operand, tile, precision, at_array=holder is None)
            at = tiles[0 if holder is None else holder + 1]
            if operand == "W" and _in_band(-1 if holder is None else holder, band):
                again, _ = _boundary_bytes("output_resident", gemm, "W", at, precision, at_array=holder is None)
                down = np.where(at[2] < gemm.full[2], again, down)
            ext_in[operand] = np.broadcast_to(down, gemm.macs.shape).copy()
            ext_write = ext_write + up
        out[name] = _Traffic(ext_in, ext_write, fits)
    return out


def _best(
    ext_bytes: list[np.ndarray], *, latency: np.ndarray, energy_pj: np.ndarray, external: ExternalPath, objective: str
) -> np.ndarray:
    """Per (configuration, op): the position in ``ext_bytes`` of the best candidate by ``objective``, its
    external bytes fetched over ``external``; ties go to the secondary metric, then to the first candidate.
    ``latency`` and ``energy_pj`` are each candidate's inside the core, stacked like ``ext_bytes``."""
    moved = np.stack(ext_bytes)
    cycles = np.maximum(latency, moved / external.bandwidth_bytes_per_cycle[None, :, None])
    energy = energy_pj + moved * _BITS * external.energy_pj_per_bit[None, :, None]
    primary, secondary = {"latency": (cycles, energy), "energy": (energy, cycles), "edp": (cycles * energy, energy)}[objective]
    tied = primary <= primary.min(axis=0) * (1 + _TIE)
    return np.where(tied, secondary, np.inf).argmin(axis=0)


def _choose(arrays: list[np.ndarray], pick: np.ndarray) -> np.ndarray:
    """Elementwise ``arrays[pick]``."""
    return np.take_along_axis(np.stack(arrays), pick[None], axis=0)[0]


def _resident_tile(level: CoreLevel, gemm: _Gemm, inner: _Tile, operand: str, precision: _Precision) -> _Tile:
    """The tile ``level`` holds when ``operand`` stays resident there, grown from the inner tile: a weight tile to the
    room the level leaves it (``_room``), an input or output block beside what its own rows need (``_input_block``,
    ``_output_block``)."""
    match operand:
        case "W":
            return _grow("weight_stationary", _room(level, gemm, inner, operand, precision), inner, gemm)
        case "O":
            return _output_block(level, gemm, inner, precision)
    return _input_block(level, gemm, inner, precision)


_HALO_ROUNDS = 4  # the sizings of an input block with the halo of the block before (``_input_block``)


def _input_block(level: CoreLevel, gemm: _Gemm, inner: _Tile, precision: _Precision) -> _Tile:
    """The block of inputs ``level`` keeps in the input-resident order above the core: all of R (so the window
    overlap is reused and no partial sums leave), as many rows of M as the level holds at the input elements per row
    the op reads (more a row for fewer rows: a block reads its windows' halo, ``_Gemm.inputs_read``), beside, where
    the level keeps them, the weights of one column tile (R x n_inner) and the partial sums of its own rows over that
    column tile (m x n_inner; none where the tile below finishes the reduction, its outputs pass on final). In a
    double-buffered memory the weight slice (unless all of N) and a block of fewer than all rows take twice their
    size (``_buffers``); a memory that keeps copies of an input in several instances (``_copies``) holds that many
    times fewer."""
    (m_t, n_t, _), (m, _, r) = inner, gemm.full
    capacity = _capacity_bytes(level, gemm) / _copies(level, "I", gemm)
    weights, per_row, partial_sums = _beside_input_rows(level, gemm, inner, precision)
    rows = m
    for _ in range(_HALO_ROUNDS):  # fewer rows read more halo per row: shrink the block until its inputs fit
        fits = (capacity - weights) / (per_row * gemm.halo.factor((rows, n_t, r)) + partial_sums)
        rows = np.minimum(rows, _fitted(gemm, np.clip(np.floor(fits / _buffers(level, fits, m)), m_t, m), m_t, 0))
    return rows, n_t, r


def _beside_input_rows(level: CoreLevel, gemm: _Gemm, inner: _Tile, precision: _Precision) -> tuple[np.ndarray, ...]:
    """What ``_input_block`` sizes a block of input rows by: the bytes of the weight slice beside it (R x n_inner,
    twice in a double-buffered memory unless all of N), the bytes of one row's inputs without halo, and of one row's
    partial sums over the column tile (none where the inner tile finishes the reduction)."""
    (_, n_t, r_t), (m, n, r) = inner, gemm.full
    weights = r * n_t * precision.tile_bytes["W"] * ("W" in level.operands) * _buffers(level, n_t, n)
    partial_sums = n_t * precision.tile_bytes["O"] * ("O" in level.operands) * (r_t < r)
    return weights, gemm.x_unique / m * precision.tile_bytes["I"], partial_sums


def _output_block(level: CoreLevel, gemm: _Gemm, inner: _Tile, precision: _Precision) -> _Tile:
    """The block of outputs ``level`` keeps in the output-resident order above the core: m x n partial sums and, where
    the level keeps them, the inputs of its own m rows and the weights of its own n columns for one step of the
    inner tile's reduction (m x r_inner and r_inner x n; ``_room`` reserves the op's whole extent instead, for tiles
    that every row or column of it streams past). Of a few shapes that fit, the one that brings the fewest bytes
    into the level (each weight once per block of rows, each input of the block's windows once per block of columns,
    ``_Gemm.inputs_read``; the first on a tie; a shape that fits before one that does not):
    the square-ish block (the columns grow as a square block's would, the rows take what is left), and the blocks
    that cut the columns, or the rows, into as many equal parts as the square-ish block needs, one fewer, or one, the
    other side taking what is left (ZigZag's ``O: sram_1MB_A[OY2 OY2 C2 C2]`` on ``ascend_like``'s GPT-2
    ``mlp_proj``: 512 rows x all 768 columns, where the square-ish 535 x 724 brings every input in twice). Where no
    shape fits, not even the inner tile with its slices, the block is the inner tile: the level holds nothing more. A
    double-buffered memory holds a block of the whole output once, any other twice (``_buffers``); a memory that
    keeps copies of a partial sum in several instances (``_copies``) holds that many times fewer."""
    (m_t, n_t, _), (m, n, _) = inner, gemm.full
    per_row, per_column, per_output = _beside_outputs(level, inner, precision)
    weights, inputs = gemm.s_elems * precision.tile_bytes["W"], precision.tile_bytes["I"]

    def fetched(rows: np.ndarray, columns: np.ndarray) -> np.ndarray:
        return weights * np.ceil(m / rows) + gemm.inputs_read((rows, columns, gemm.full[2])) * inputs * np.ceil(n / columns)

    def block(capacity: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        elems = capacity / per_output
        n_square = _fitted(gemm, np.clip(np.floor(np.minimum(np.sqrt(elems), elems / m_t)), n_t, n), n_t, 1)
        m_square = np.floor((capacity - n_square * per_column) / (n_square * per_output + per_row))
        rows, columns = _fitted(gemm, np.clip(m_square, m_t, m), m_t, 0), n_square
        shapes = []  # (rows, columns, whether they fit): the columns cut into equal parts, then the rows
        for parts in (np.ceil(n / n_square), np.ceil(n / n_square) - 1, 1.0):
            n_b = _fitted(gemm, np.clip(np.ceil(n / np.maximum(parts, 1.0)), n_t, n), n_t, 1)
            m_b = np.minimum(np.floor((capacity - n_b * per_column) / (n_b * per_output + per_row)), m)
            shapes.append((_fitted(gemm, np.maximum(m_b, m_t), m_t, 0), n_b, m_b >= m_t))
        for parts in (np.ceil(m / np.maximum(m_square, m_t)), np.ceil(m / np.maximum(m_square, m_t)) - 1, 1.0):
            m_b = _fitted(gemm, np.clip(np.ceil(m / np.maximum(parts, 1.0)), m_t, m), m_t, 0)
            n_b = np.minimum(np.floor((capacity - m_b * per_row) / (m_b * per_output + per_column)), n)
            shapes.append((m_b, _fitted(gemm, np.maximum(n_b, n_t), n_t, 1), n_b >= n_t))
        least = np.where(m_square >= m_t, fetched(rows, columns), np.inf)  # a square-ish block that does not fit loses
        for m_b, n_b, fit in shapes:
            brings = fetched(m_b, n_b)
            better = fit & (brings < least)
            rows, columns, least = np.where(better, m_b, rows), np.where(better, n_b, columns), np.where(better, brings, least)
        # where no shape fits, not even the inner tile's slices, the level holds no block beyond the inner tile
        none_fits = np.isinf(least)
        return np.where(none_fits, m_t, rows), np.where(none_fits, n_t, columns)

    capacity = _capacity_bytes(level, gemm) / _copies(level, "O", gemm)
    rows, columns = block(capacity)
    if level.memory.double_buffered:  # two of everything but a block of the whole output
        halved = block(capacity / 2)
        whole = (rows >= m) & (columns >= n)
        rows, columns = np.where(whole, rows, halved[0]), np.where(whole, columns, halved[1])
    return rows, columns, gemm.full[2]


def _beside_outputs(level: CoreLevel, inner: _Tile, precision: _Precision) -> tuple[np.ndarray, ...]:
    """What ``_output_block`` sizes a block of outputs by: the bytes of one row's inputs and of one column's weights
    for one step of the ``inner`` tile's reduction (where the level keeps them), and of one partial sum."""
    r_t = inner[2]
    per_row = r_t * precision.tile_bytes["I"] * ("I" in level.operands)
    per_column = r_t * precision.tile_bytes["W"] * ("W" in level.operands)
    return per_row, per_column, precision.tile_bytes["O"]


def _block_fits(level: CoreLevel, gemm: _Gemm, inner: _Tile, operand: str, precision: _Precision, *, block: _Tile) -> np.ndarray:
    """Whether ``level`` holds ``block`` of ``operand`` (``_resident_tile``, grown from the ``inner`` tile and never
    smaller than it) beside the slices it keeps for the other operands meanwhile, as the block's sizing counts them:
    where even the inner tile's does not fit, the block that was floored at it does not either (weights above an
    output-stationary core's output block over all columns and all of R: ``tesla_npu_like_mixed``'s GPT-2 ``mlp_proj``,
    2.4 MB against its 1 MB weight SRAM; outputs below the top grown from the weight registers' tile of 64 held rows x
    2,048 columns: ``generic_array_cacti``'s GPT-2 ``qkv``, 16.7 MB of partial sums with their 32 copies against 128 KB
    of per-PE output registers)."""
    (m_b, n_b, r_b), whole = block, _whole(gemm)
    capacity = _capacity_bytes(level, gemm)
    match operand:
        case "W":
            own = n_b * r_b * precision.tile_bytes["W"] * _buffers(level, n_b * r_b, whole["W"]) * _copies(level, "W", gemm)
            held = own + _reserved(level, gemm, inner, "W", precision)
        case "I":
            weights, per_row, partial_sums = _beside_input_rows(level, gemm, inner, precision)
            rows = m_b * (per_row * gemm.halo.factor(block) + partial_sums) * _buffers(level, m_b, gemm.full[0])
            held = (weights + rows) * _copies(level, "I", gemm)
        case _:
            per_row, per_column, per_output = _beside_outputs(level, inner, precision)
            twice = _buffers(level, m_b * n_b, whole["O"])  # a block of the whole output once
            held = (m_b * n_b * per_output + m_b * per_row + n_b * per_column) * twice * _copies(level, "O", gemm)
    return held <= capacity * (1 + _TIE)


def _tiles(core: Core, gemm: _Gemm, precision: _Precision, *, band: int, grow: bool = True, widen: float = 1.0) -> list[_Tile]:
    """The tile at the PE array (``_Gemm.array_tile``), then at each memory level of ``core`` (innermost first). A level in
    the reduction-innermost band (``_in_band``) grows an output block if it keeps outputs (without ``grow``, keeps the
    block below it over all of R), and nothing else."""
    tile = gemm.array_tile
    tiles = [tile]
    top_outputs = _outermost(core, "O")
    for i, level in enumerate(core.levels):
        dataflow = "output_stationary" if _in_band(i, band) else core.dataflow
        stationary = "O" if dataflow == "output_stationary" else "W"
        if core.dataflow == "output_stationary" and i == top_outputs:
            # the block the core's own mapping keeps above the core: of a few shapes, the one bringing the fewest in
            tile = _output_block(level, gemm, tile, precision)
        elif stationary in level.operands and (grow or not _in_band(i, band)):
            tile = _grow(dataflow, _room(level, gemm, tile, stationary, precision), tile, gemm)
        elif stationary in level.operands:  # the output block below, kept over all of R
            tile = (tile[0], tile[1], gemm.full[2])
        tiles.append(tile)
    return _band_within_weights(core, gemm, tiles, precision, band=band, widen=widen)


def _band_within_weights(
    core: Core, gemm: _Gemm, tiles: list[_Tile], precision: _Precision, *, band: int, widen: float = 1.0
) -> list[_Tile]:
    """A band's output blocks finish only as much of the reduction as the first weight memory above the band holds:
    that memory keeps its tile while the rows stream past it (the dataflow's order), so the band runs over that
    tile's R, and its blocks' partial sums leave once per R-tile of it. The tiles up to that memory take its R-tile:
    all of R where it holds the whole reduction of the block's columns, or where no weight memory lies above the band
    (a tile that kept all of R inside a memory holding less would not nest). With ``widen`` > 1 that memory's tile
    spans ``widen`` times the columns of the tile below it (at most all N, and as many as the weight memories above
    it hold, ``_columns_above``) over as many whole steps of the array's R as then fit, where at least one does, and
    every tile from the band up spans those columns: an input memory between the band and the weight memory keeps
    its rows' inputs over all of them."""
    w, r = _weights_above_band(core, band), gemm.full[2]
    if w is None:
        return tiles
    _, n_t, _ = tiles[w]  # the tile below that memory
    room = _room(core.levels[w], gemm, tiles[w], "W", precision)
    r_a = tiles[0][2]
    r_w = np.where(room >= r * n_t, r, _fitted(gemm, np.maximum(np.floor(room / n_t), r_a), r_a, 2))
    columns = np.maximum(_columns_above(core, gemm, tiles, precision, weight=w, r=r_a), n_t)
    n_w = _fitted(gemm, np.minimum(np.minimum(n_t * widen, gemm.full[1]), columns), n_t, 1)
    r_wide = np.minimum(np.floor(room / n_w / r_a) * r_a, r)
    wide = (r_wide >= r_a) & (n_w > n_t)
    r_wide = _fitted(gemm, np.maximum(r_wide, r_a), r_a, 2)
    r_w, n_w = np.where(wide, r_wide, r_w), np.where(wide, n_w, n_t)
    return [
        (m_k, np.where(wide, np.maximum(n_k, n_w), n_k) if k >= band else n_k, np.minimum(r_k, r_w) if k <= w + 1 else r_k)
        for k, (m_k, n_k, r_k) in enumerate(tiles)
    ]


def _array_tile(dims: dict[str, np.ndarray], full: _Tile, kinds: np.ndarray, unroll: dict[str, np.ndarray]) -> _Tile:
    """What one step of the PE array covers: (m, n, r) elements per group, each the product of its unrolled dims."""
    spatial = _per_role(dims, kinds, lambda d: np.minimum(dims[d], unroll[d]))
    return np.minimum(spatial[0], full[0]), np.minimum(spatial[1], full[1]), np.minimum(spatial[2], full[2])


def _array_steps(dims: dict[str, np.ndarray], kinds: np.ndarray, unroll: dict[str, np.ndarray]) -> _Tile:
    """The PE array's steps along M, N and R: the product of each of their loops' steps, ceil(D / unrolled)."""
    return _per_role(dims, kinds, lambda d: np.ceil(dims[d] / unroll[d]))


def _own_steps(
    core: Core, dims: dict[str, np.ndarray], kinds: np.ndarray, unroll: dict[str, np.ndarray]
) -> tuple[np.ndarray, ...]:
    """Per level of ``core``, the partial sums one copy of an output takes over an op's reduction where the level keeps
    a copy in each PE of the axes it does not serve (all of them without ``served_axes``; ``_copies``): a PE
    accumulates only in the steps it works in, so along a loop on such an axis D / its PEs (C 3 on 2: 1.5; ZigZag's
    per-PE ``rf_2B`` on ``tpu_like_mixed``'s ``conv1``, C 3 on 2 beside FX 7 and FY 7 on 3: 1.5 x 7/3 x 7/3 partial
    sums in each of 18 copies, 147 an output, where 18 steps of the array would count 324), along the others one per
    step, ceil(D / its PEs). A loop on some axes the level serves and some it does not counts as its own."""
    out = []
    for level in core.levels:
        own = {axis.dim for axis in core.pe_array if level.served_axes is None or axis.name not in level.served_axes}
        out.append(
            _per_role(
                dims,
                kinds,
                lambda d, own=own: dims[d] / np.minimum(unroll[d], dims[d]) if d in own else np.ceil(dims[d] / unroll[d]),
            )[2]
        )
    return tuple(out)


def _per_role(dims: dict[str, np.ndarray], kinds: np.ndarray, each: Callable[[str], np.ndarray]) -> _Tile:
    """Per role of ``ROLES`` (M, N, R), the product over each op's loop dimensions in that role of ``each(dim)``."""
    out = []
    for which in range(3):
        product = np.ones_like(next(iter(dims.values())))
        for kind, roles in ROLES.items():
            mask = kinds == kind
            for d in roles[which] if mask.any() else ():
                product[:, mask] *= each(d)[:, mask]
        out.append(product)
    return out[0], out[1], out[2]


def _in_band(level: int, band: int) -> bool:
    """Whether the loops directly above ``level``'s tile (-1: the PE array's) keep the reduction innermost: the
    array's when ``band`` >= 1, then the ``band`` - 1 innermost memory levels'."""
    return level + 1 < band


def _grow(dataflow: str, capacity: np.ndarray, tile: _Tile, gemm: _Gemm) -> _Tile:
    """The tile a level of ``capacity`` elements holds for the stationary operand, never smaller than the inner tile
    (each extent ``_fitted``). An output block is square-ish, or, where the op has fewer rows than its side, takes
    every row and as many columns as the room then holds (a classifier's one row of outputs, ResNet-18's ``fc``: all
    of it where the room holds it, where the square root of the room had taken fewer columns and left the rest of
    the room unused)."""
    (m_t, n_t, r_t), (m, n, r) = tile, gemm.full
    if dataflow == "output_stationary":
        columns = np.maximum(np.minimum(np.sqrt(capacity), capacity / m_t), capacity / m)
        n_new = _fitted(gemm, np.clip(np.floor(columns), n_t, n), n_t, 1)
        return _fitted(gemm, np.clip(np.floor(capacity / n_new), m_t, m), m_t, 0), n_new, r
    whole_r = capacity >= r * n_t
    n_new = np.where(whole_r, _fitted(gemm, np.clip(np.floor(capacity / r), n_t, n), n_t, 1), n_t)
    r_new = np.where(whole_r, r, _fitted(gemm, np.clip(np.floor(capacity / n_t), r_t, r), r_t, 2))
    return m_t, n_new, r_new


def _fitted(gemm: _Gemm, size: np.ndarray, inner: np.ndarray, axis: int) -> np.ndarray:
    """A tile's extent along ``axis`` (0, 1, 2: M, N, R) as the core's ``tiling`` allows it, from ``size`` elements
    (at least the ``inner`` tile's, at most the op's): as it is (``any``: the loop's last tile partial), or
    (``divisors``) the array's tile times the largest divisor of the array's steps along the axis (``_Gemm.steps``)
    that is a multiple of the inner tile's steps and fits, as ZigZag's temporal mapping splits each loop into
    factors of its size (ResNet-18's 3,136 rows of ``layer1.0.conv1`` in blocks of 112 where 165 fit, ZigZag's
    ``OX2 OY7 OX2 OX2 OY2`` on ``aimc``; 14 x 14 rows over a 4 x 4 array in 4 x 4 steps, not 13). An inner tile
    that is not a whole number of steps dividing the axis's counts as one step."""
    if not gemm.divisor_tiles:
        return size
    whole, unit, steps = gemm.full[axis], gemm.array_tile[axis], gemm.steps[axis]
    size, inner, whole, unit, steps = np.broadcast_arrays(size, inner, whole, unit, steps)
    base = inner / unit
    base = np.where((base == np.round(base)) & (np.mod(steps, np.maximum(base, 1.0)) == 0), np.maximum(base, 1.0), 1.0)
    limit = np.where(size >= whole, steps / base, np.maximum(np.floor(size / (unit * base)), 1.0))
    tile = np.minimum(unit * base * _largest_divisor(steps / base, limit), whole)
    return np.where(inner >= whole, whole, tile)


def _largest_divisor(n: np.ndarray, limit: np.ndarray) -> np.ndarray:
    """Elementwise the largest divisor of the positive integer ``n`` that is at most ``limit`` (>= 1)."""
    out = np.ones(n.shape)
    for value in np.unique(n):
        at = n == value
        small = np.arange(1, math.isqrt(int(value)) + 1)
        small = small[int(value) % small == 0]
        divisors = np.unique(np.concatenate([small, int(value) // small])).astype(np.float64)
        out[at] = divisors[np.searchsorted(divisors, limit[at], side="right") - 1]
    return out


def _access_bits(
    operand: str, tile: _Tile, precision: _Precision, instances: np.ndarray, copies: np.ndarray | float
) -> np.ndarray:
    """Bits one of a memory's ``instances`` at work moves per step of the child ``tile`` over a boundary:
    ``operand``'s share of the tile (each element in ``copies`` instances, ``_copies``) spread over them, at least one
    element each; outputs in partial-sum precision."""
    m, n, r = tile
    elems = {"W": n * r, "I": m * r, "O": m * n}[operand]
    return np.maximum(elems * copies / instances, 1.0) * _BITS * precision.tile_bytes[operand]


def _groups_together(
    core: Core, gemm: _Gemm, boundary: tuple[int, int], tile: _Tile, precision: _Precision
) -> np.ndarray | float:
    """How many groups of a grouped op (a depthwise convolution's channels) one transfer over ``boundary`` (child,
    parent: level indices, child -1 for the PE array) carries: where the child level's ``tile`` is a whole group's op,
    the loop above it runs over the groups and nothing else, so the tiles of as many groups as it holds (each group's
    weights, unique inputs and partial sums; twice in a double-buffered memory unless it holds them all, ``_buffers``)
    cross together, in accesses as wide as all of them (ZigZag's ``G`` loops inside the memory's tile). Else 1: a
    transfer is one group's tile. (How wide a transfer is matters only where a side has a ``min_access_bits``.)"""
    child = boundary[0]
    widened = any((core.levels[j].memory.min_access_bits > 0).any() for j in boundary if j >= 0)
    if child < 0 or not widened or not (gemm.groups > 1).any():
        return 1.0
    level = core.levels[child]
    (m_t, n_t, r_t), (m, n, r) = tile, gemm.full
    whole = (m_t >= m) & (n_t >= n) & (r_t >= r)
    held = np.floor(_capacity_bytes(level, gemm) / _group_bytes(gemm, precision, level.operands))
    held = np.floor(held / _buffers(level, held, gemm.groups))
    held = np.clip(held, 1.0, gemm.groups)
    if gemm.divisor_tiles:  # as many groups as divide them (``_fitted``)
        held = _largest_divisor(*np.broadcast_arrays(gemm.groups, held))
    return np.where(whole, held, 1.0)


def _copies(level: CoreLevel, operand: str, gemm: _Gemm) -> np.ndarray | float:
    """How many instances of ``level`` hold each element of ``operand`` that one step of the PE array uses: a memory
    with more instances at work (``_working``: at most one per busy PE) than that step's distinct elements keeps a
    copy in every instance whose PE works on the element (an input broadcast over the array's output-channel axis, a
    partial sum of an output whose reduction the array unrolls: each PE keeps its own) and every copy is read and
    written. At least 1 (a memory shared by PEs holds one; a single instance, 1 without arrays). A level with
    ``served_axes`` keeps a copy per busy PE of each axis it does not serve and the operand does not vary along."""
    if not (level.memory.instances > 1).any():
        return 1.0
    if level.served_axes is not None:
        return _unserved_pes(level, gemm, skip=_VARIES_ALONG[operand])
    m, n, r = gemm.array_tile
    distinct = {"W": n * r, "I": m * r, "O": m * n}[operand]
    return np.maximum(_working(level, gemm) / distinct, 1.0)


_VARIES_ALONG = {"W": (1, 2), "I": (0, 2), "O": (0, 1)}  # the roles (M 0, N 1, R 2) an operand's elements vary along


def _boundary_bytes(
    order: str,
    gemm: _Gemm,
    operand: str,
    tile: _Tile,
    precision: _Precision,
    *,
    at_array: bool,
    partial: bool = False,
    steps: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Bytes over one boundary, all groups: ``_traffic``'s elements per group in the operand's precision (outputs all
    as partial sums where ``partial``, ``_Precision.bytes``)."""
    down, up = precision.bytes(operand, *_traffic(order, gemm, operand, tile, at_array=at_array, steps=steps), partial=partial)
    return down * gemm.groups, up * gemm.groups


def _traffic(
    order: str, gemm: _Gemm, operand: str, tile: _Tile, *, at_array: bool, steps: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Elements per group over one boundary in loop order ``order`` (a ``MAPPINGS`` name): (down = parent to
    child, up = child to parent). ``steps``: the partial sums an output takes per array step of the reduction, where
    not the array's steps along R (a PE's own copy, ``_Gemm.own_steps``)."""
    (tm, tn, tr), (m, n, r) = tile, gemm.full
    zero = np.zeros_like(m)
    match operand:
        case "O" if order == "output_resident":
            return zero, gemm.o_elems
        case "O":  # partial sums: written once per R-tile, read back one time fewer
            r_tiles = gemm.tile_count(2, tr, steps=steps)
            # of the GEMM's M x N outputs; the rest of a strided convolution's input gradient, the pixels its windows
            # skip, is written once
            summed = np.minimum(m * n, gemm.o_elems)
            return summed * (r_tiles - 1), summed * (r_tiles - 1) + gemm.o_elems
        case "W" if order == "weight_resident":
            return gemm.s_elems + zero, zero
        case "W":  # once per row tile
            return gemm.s_elems * gemm.tile_count(0, tm), zero
    x_full = gemm.x_streamed  # the streamed operand as the array reads it: its im2col, less a step's overlap
    # a resident tile cuts a convolution into blocks that each read their windows' halo; rows streaming past a weight
    # tile, and a reduction streaming past an output block, slide over the overlap (``_Gemm.inputs_read``)
    blocks = (m, tn, tr) if order == "weight_resident" else (tm, tn, r) if order == "output_resident" else tile
    x = x_full if at_array else np.where(tr >= gemm.window, gemm.inputs_read(blocks), x_full)
    if order == "input_resident":
        return x + zero, zero
    return x * gemm.tile_count(1, tn), zero  # once per column tile


def _depth(core: Core) -> np.ndarray:
    """The PE array's pipeline depth in cycles, per configuration (a column vector): the sum of its axes' sizes."""
    return sum(axis.size for axis in core.pe_array)[:, None]


def _first_tile_cycles(core: Core, gemm: _Gemm, precision: _Precision, operand: str) -> np.ndarray:
    """Cycles to load the first stationary array tile (weight-stationary) or drain the last (output-stationary), over
    the instances at work."""
    tm, tn, tr = gemm.array_tile
    elems = tm * tn if operand == "O" else tn * tr
    for level in core.levels:
        if operand in level.operands:
            bandwidth = (
                level.memory.write_bandwidth_bytes_per_cycle if operand == "O" else level.memory.read_bandwidth_bytes_per_cycle
            )
            element_bytes = precision.final_bytes["O"] if operand == "O" else precision.final_bytes["W"]
            return elems * element_bytes / (bandwidth[:, None] * _working(level, gemm))
    return np.zeros_like(elems)


def simd_cost(core: Core, table: OpTable, index: np.ndarray) -> CoreOpCost:
    """Cost of element-wise, reduction, normalisation, softmax, pooling, layout and optimizer ops."""
    n_cfg = core.count.shape[0]
    shape = (n_cfg, len(index))
    ops = table.elementwise_ops[index][None, :]
    precision = _Precision.of(core)
    in_bytes = np.broadcast_to(table.in_elems[index][None, :] * precision.final_bytes["I"], shape)
    out_bytes = np.broadcast_to(table.o_elems[index][None, :] * precision.final_bytes["O"], shape)
    lanes = core.pes[:, None]
    compute = np.ceil(ops / lanes) * np.ones(shape)
    levels = _Levels(core, shape)
    for operand, moved in (("I", in_bytes), ("O", out_bytes)):
        holders = [i for i, level in enumerate(core.levels) if operand in level.operands]
        for i in holders:
            # inputs are read towards the lanes, outputs written from them; the outermost holder's write of
            # an arriving input and read of a leaving output are the scheduler's (module docstring)
            levels.move(
                i, operand, read=moved * (operand == "I" or i != holders[-1]), write=moved * (operand == "O" or i != holders[-1])
            )
    latency = np.maximum(compute, levels.cycles())
    busy = np.divide(ops, compute * lanes, out=np.zeros(shape), where=compute > 0)
    reads, writes, level_energy = levels.by_memory()
    return CoreOpCost(
        latency_cycles=latency,
        compute_cycles=compute,
        utilization=busy,
        energy_mac_pj=ops * core.mac_energy_pj[:, None] * np.ones(shape),
        energy_level_pj=level_energy,
        ext_in_bytes={"I": in_bytes.copy()},
        ext_write_bytes=out_bytes.copy(),
        core_shares=np.ones(shape),
        mapping=np.full(shape, -1),
        mapping_below_top=np.zeros(shape, dtype=bool),
        band_grown=np.ones(shape, dtype=bool),
        inputs_latched=np.zeros(shape, dtype=bool),
        reduction_chunk=np.full(shape, -1.0),
        widened_columns=np.full(shape, -1.0),
        reduction_levels=np.full(shape, -1),
        held_rows=np.full(shape, -1.0),
        held_columns=np.full(shape, -1.0),
        level_read_bytes=reads,
        level_write_bytes=writes,
    )
