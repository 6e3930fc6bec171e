"""The loop orders tried inside a core (``loop_orders``), each a ``LoopOrder``.

- **A band of reduction-innermost levels** (``bands``): below the top memory, the array and the ``band`` - 1
  innermost levels keep the reduction loops innermost (an output tile stays until all of R the first weight memory
  above the band holds is done, ``tiles.band_within_weights``); above the band the order is the core's dataflow.
  Band 0 is the dataflow's order everywhere; an output-stationary core has only band 0. A band's output memories
  grow their block to their room, or keep the array's (``LoopOrder.grow``). Where a memory keeps inputs between the
  band and that weight memory, the weight tile is also tried cut in R to ``WIDER`` times the columns (ZigZag's
  ``ascend_like`` GPT-2 ``mlp_fc``: ``I: rf_64KB_I[C2 C2 C2 OY2 K2 OY2 OY2 OY2 OY2 K2]``).
- **A block of outputs held in the PEs** (``held_blocks``, row-stationary-like reuse): where a weight memory lies
  below the innermost output memory, the array runs the whole reduction of the weight memory's tile over a block of
  rows (or of columns) whose partial sums that output memory holds, and only then moves on (ZigZag's
  ``eyeriss_like``); once more with the weight tile cut to the reduction whose inputs of the block's rows the input
  memory holds (``weights_for_the_block``, ZigZag's ``I: rf_64B_A[OY8 C8 K5]``). ZigZag counts a word the array
  uses in consecutive cycles as one read, so of all the blocks the output memory holds only the two extremes are
  worth trying: rows innermost reuse weights over the rows, columns innermost reuse inputs over the columns.
- **Inputs latched at the array's port** over the column tiles of a step of rows, the weights read every step
  (ZigZag's ``gemm_l1``, ``I: l1[K64 ...]``; ``latched_column_tiles``), or on an output-stationary core whose
  innermost output memory lies below its innermost input memory, over that memory's block of columns.

Each order may run over a chunk of the reduction (``LoopOrder.chunk``): with an output block kept above the core
across the chunks (``chunked_view``, ZigZag's ``tpu_like`` GPT-2 ``mlp_proj``: its 2 MB SRAM keeps all 1,024 x 768
partial sums over six chunks of R), or below a top memory that holds the whole op, over 2, 4 and 8 chunks
(``reduction_parts``). Where the top memory holds the whole op, each mapping's block is kept right below it
(``below_top_blocks``: ZigZag's loop order between ``l1`` and ``l3`` on ``gemm_l1_l3``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from traincost.cost.core.gemm import Gemm, cut_to_chunk, fitted_extent
from traincost.cost.core.memory import buffer_copies, capacity_bytes, copies_per_element, equal_share_elems, free_room_elems
from traincost.cost.core.tiles import (
    block_fits,
    columns_above,
    inputs_below_weights,
    level_tiles,
    resident_block,
)
from traincost.cost.core.vocabulary import MAPPINGS, NATIVE, RESIDENT, TIE, Precision, Tile, innermost_level, is_in_band
from traincost.hardware.spec import Core

__all__ = [
    "LoopOrder",
    "loop_orders",
    "WIDER",
    "chunked_view",
    "HeldBlock",
    "held_blocks",
    "weights_for_the_block",
    "order_tiles",
    "latched_column_tiles",
    "latches_over_weights",
    "latched_fits",
    "PARTS",
    "reduction_parts",
    "memories_below_top",
    "below_top_blocks",
    "held_block_tiles",
    "reads_at_the_array",
    "bands",
]


@dataclass(frozen=True, slots=True)
class LoopOrder:
    """One candidate order inside a core (``loop_orders``): a ``band`` of reduction-innermost levels whose output memories
    grow their block to their room (``grow``) or keep the array's, or a block of outputs ``held`` in the PEs (band
    0); with ``below_top``, a ``MAPPINGS`` name and its block right below the top memory (``below_top_blocks``); or the
    inputs ``latched`` at the array's port (``loop_orders``). With ``chunk``, the op as its tiles see it, its R cut to a
    chunk of the reduction (``chunked_view``)."""

    band: int
    held: HeldBlock | None = None
    grow: bool = True
    below_top: tuple[str, Tile] | None = None
    latched: bool = False
    chunk: Gemm | None = None
    widen: float = 1.0


def loop_orders(core: Core, gemm: Gemm, precision: Precision) -> list[LoopOrder]:
    """The candidate orders inside a core: each band (``bands``); again with the array's block of outputs where a level
    in the band keeps outputs (whose block would grow: a block as wide as the array's leaves the weight slice above it
    narrow, ZigZag's ``O: reg_O[C16 FY3 FX3]`` on ``gemm_l1_l3``); each block held in the PEs (``held_blocks``); and,
    on a weight-stationary core whose weights have no memory below the top (the array takes them straight from it, as
    ZigZag's ``gemm_l1``), the inputs latched: each step of rows runs over all the array's column tiles, each input
    staying at the port while the weights change every step, and the partial sums of the row step's outputs leave the
    array every reduction step (ZigZag's ``access_same_data_considered_as_no_access`` with the output channels
    innermost, ``I: l1[K64 ...]``; a weight held in the array is the dataflow's own latch), or whose weights' innermost
    memory is a register in each PE that holds the weights of every column for a step of the array's R
    (``latched_column_tiles``, ``latches_over_weights``). On an output-stationary
    core whose innermost output memory lies below its innermost input memory, the inputs latched too: the array runs
    the column tiles of that memory's block innermost, each input staying at its port while they pass and the weights
    changing every step as in the dataflow's order (ZigZag's ``tesla_npu_like_mixed``: ``I: sram_1KB_I[K2]``, two
    output-channel tiles' partial sums in each 4-byte output register, ``O: rf_4B[K2 C64 FY3 FX3]``). And each band whose weight
    memory above it has an input memory below it (``inputs_below_weights``) again with that memory's tile cut in R to
    ``WIDER`` times the columns (``band_within_weights``)."""
    orders = [LoopOrder(band) for band in bands(core)]
    orders += [
        LoopOrder(band, grow=False) for band in bands(core) if any("O" in core.levels[i].operands for i in range(band - 1))
    ]
    orders += [LoopOrder(band, widen=widen) for band in bands(core) if inputs_below_weights(core, band) for widen in WIDER]
    orders += [LoopOrder(0, held=held) for held in held_blocks(core, gemm, precision)]
    if core.dataflow == "weight_stationary" and latches_over_weights(core):
        orders.append(LoopOrder(0, latched=True))
    if core.dataflow == "output_stationary" and 0 <= innermost_level(core, "O") < innermost_level(core, "I"):
        orders.append(LoopOrder(0, latched=True))
    return orders


WIDER = (2.0, 4.0, 8.0)  # the columns a band's weight tile is tried at, in units of the tile below it


def chunked_view(core: Core, gemm: Gemm, precision: Precision) -> Gemm | None:
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
    capacity = capacity_bytes(level, gemm) / copies_per_element(level, "O", gemm)
    chunk = np.zeros_like(r)
    for parts in (4.0, 2.0, 1.0):  # the most rows last, to be kept where they fit
        rows = fitted_extent(gemm, np.ceil(m / parts), gemm.array_tile[0], 0)
        per_r = sum(
            extent * precision.tile_bytes[operand] * buffer_copies(level, extent * r_a, extent * r)
            for operand, extent in (("I", rows), ("W", n))
            if operand in level.operands
        )
        left = capacity - rows * n * precision.tile_bytes["O"]
        fitted = np.floor(np.maximum(left, 0.0) / per_r / r_a) * r_a
        chunk = np.where(fitted >= r_a, fitted_extent(gemm, np.minimum(fitted, r), r_a, 2), chunk)
    fits = (chunk >= r_a) & (chunk < r)
    if not fits.any():
        return None
    return cut_to_chunk(gemm, np.where(fits, chunk, r))


@dataclass(frozen=True, slots=True)
class HeldBlock:
    """A block of outputs whose partial sums the innermost output memory keeps across the reduction of the innermost
    weight memory's tile (``held_blocks``): ``rows`` x ``columns`` elements per group, the ``innermost`` of the two
    looped over fastest (its reuse: each weight read once per block of rows, or each input once per block of
    columns). ``weights``: the innermost weight memory's tile cut to the reduction whose inputs of the block's rows
    the input memory in the PEs holds (None: the tile it grows to, ``level_tiles``)."""

    rows: np.ndarray
    columns: np.ndarray
    innermost: str  # "rows" or "columns"
    weights: Tile | None = None


def held_blocks(core: Core, gemm: Gemm, precision: Precision) -> list[HeldBlock]:
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
    weight = innermost_level(core, "W")
    if core.dataflow != "weight_stationary" or len(outputs) < 2 or not 0 <= weight < outputs[0]:
        return []
    level = core.levels[outputs[0]]
    m_a, n_a, _ = gemm.array_tile
    tiles = level_tiles(core, gemm, precision, band=0)
    m, n_w = gemm.full[0], tiles[weight + 1][1]
    held = equal_share_elems(level, gemm, precision.partial_sum_bytes) / copies_per_element(level, "O", gemm)
    steps = np.floor(held / (m_a * n_a))
    rows = HeldBlock(rows=fitted_extent(gemm, np.clip(steps * m_a, m_a, m), m_a, 0), columns=n_a, innermost="rows")
    columns = fitted_extent(gemm, np.clip(steps * n_a, n_a, np.maximum(n_w, n_a)), n_a, 1)
    blocks = [rows, HeldBlock(rows=m_a, columns=columns, innermost="columns")]
    inputs = [i for i, level in enumerate(core.levels[: outputs[0] + 1]) if "I" in level.operands]
    if inputs:
        weights = weights_for_the_block(core, gemm, tiles, precision, rows=rows.rows, inputs=inputs[0])
        blocks.append(replace(rows, weights=weights))
    return blocks


def weights_for_the_block(
    core: Core, gemm: Gemm, tiles: list[Tile], precision: Precision, *, rows: np.ndarray, inputs: int
) -> Tile:
    """The innermost weight memory's tile for a block of ``rows`` held in the PEs, cut to the reduction whose inputs of
    those rows the input memory at ``inputs`` holds (the pixels their windows touch, ``Gemm.block_input_elems``; whole
    steps of the array's, at least one) and as wide as the weight memory, and the weight memories above it
    (``columns_above``), then hold: the block's inputs stay in the PEs over the whole tile, its columns too (an
    Eyeriss-like row-stationary order, ZigZag's ``I: rf_64B_A[OY8 C8 K5]``, ``W: rf_64B_W[OY8 C8 K5 OY4]``: 8 rows of
    inputs in the 64-byte input registers over 8 of the reduction and 5 output channels)."""
    (_, n, r), (_, n_a, r_a) = gemm.full, gemm.array_tile
    weight = innermost_level(core, "W")
    level = core.levels[inputs]
    room = equal_share_elems(level, gemm, precision.final_bytes["I"]) / copies_per_element(level, "I", gemm)
    per_reduction = gemm.block_input_elems(rows, r_a) / r_a  # the block's inputs per element of R, its halo counted
    steps = np.floor(room / per_reduction / r_a * (1 + TIE))  # a block that fills the memory exactly fits
    r_b = fitted_extent(gemm, np.clip(steps * r_a, r_a, r), r_a, 2)
    m_w, n_w, r_w = tiles[weight + 1]
    r_b = np.minimum(r_b, r_w)
    space = free_room_elems(core.levels[weight], gemm, tiles[weight], "W", precision)
    columns = np.minimum(space / r_b, columns_above(core, gemm, tiles, precision, weight=weight, r=r_b))
    n_b = fitted_extent(gemm, np.clip(np.floor(columns / n_a) * n_a, n_w, n), n_w, 1)
    return m_w, n_b, r_b


def order_tiles(core: Core, shaped: Gemm, precision: Precision, candidate: LoopOrder) -> list[Tile]:
    """The tiles of ``candidate`` (``level_tiles``, with a held block ``held_block_tiles``, or the columns a weight memory
    keeps for inputs latched over them, ``latched_column_tiles``) on the op as they see it."""
    tiles = level_tiles(core, shaped, precision, band=candidate.band, grow=candidate.grow, widen=candidate.widen)
    if candidate.latched and core.dataflow == "weight_stationary":
        return latched_column_tiles(core, shaped, tiles, precision)
    return tiles if candidate.held is None else held_block_tiles(core, shaped, tiles, candidate.held, precision)


def latched_column_tiles(core: Core, gemm: Gemm, tiles: list[Tile], precision: Precision) -> list[Tile]:
    """The tiles of a weight-stationary core whose inputs stay latched at the array's port over every column of the op
    (``loop_orders``) where a weight memory lies below the top: that memory (a register in each PE) keeps the weights of all N
    columns over as much of the reduction as it holds, whole steps of the array's R, so each input is read once while
    the columns pass and each weight tile is loaded once and reused by every row (ZigZag's ``tpu_like`` under Stream's
    inter-core split, output columns x input channels on the array: ``I2: rf_128B[K16 ...]``, the 16 output channels
    of a core's share innermost, the partial sums to the 2 MB SRAM every step). Every tile above it spans all N. Where
    it does not hold all N columns for one step of the array's R, the order is not possible (``latched_fits``)."""
    w, (_, n, r), r_a = innermost_level(core, "W"), gemm.full, gemm.array_tile[2]
    if w == len(core.levels) - 1:  # the weights come straight from the top memory: every tile as the dataflow's
        return tiles
    room = free_room_elems(core.levels[w], gemm, tiles[w], "W", precision)
    r_w = fitted_extent(gemm, np.clip(np.floor(room / n / r_a) * r_a, r_a, r), r_a, 2)
    return [
        (m_k, np.maximum(n_k, n), np.minimum(r_k, r_w) if k <= w + 1 else np.maximum(r_k, r_w)) if k > w else (m_k, n_k, r_k)
        for k, (m_k, n_k, r_k) in enumerate(tiles)
    ]


def latches_over_weights(core: Core) -> bool:
    """Whether a weight-stationary core may latch its inputs over the columns: its weights come straight from the top
    memory, or their innermost memory is a register in each PE (``tpu_like``'s ``rf_128B``, where ZigZag's mapping
    under Stream runs the output channels innermost). A weight memory shared by the array (the Edge TPU study's
    register file) is not offered the order."""
    w = innermost_level(core, "W")
    return w == len(core.levels) - 1 or (w >= 0 and core.levels[w].memory.per_pe)


def latched_fits(core: Core, order: LoopOrder, tiles: list[Tile], gemm: Gemm, precision: Precision) -> np.ndarray | bool:
    """Whether ``order`` is possible as far as latching goes: where it latches the inputs over the columns of a
    weight-stationary core (``latched_column_tiles``, whose ``tiles`` these are), the innermost weight memory below the top
    holds all N columns of the op (``order.chunk``, else ``gemm``) for one step of the array's R; True for any other
    order and where the weights have no memory below the top."""
    w = innermost_level(core, "W")
    if not order.latched or core.dataflow != "weight_stationary" or w == len(core.levels) - 1:
        return True
    shaped = order.chunk or gemm
    return free_room_elems(core.levels[w], shaped, tiles[w], "W", precision) >= shaped.full[1] * shaped.array_tile[2]


PARTS = (2.0, 4.0, 8.0)  # the chunks of the reduction an order below the top memory is tried over


def reduction_parts(gemm: Gemm) -> list[Gemm]:
    """The op as tiles below the top memory see it when its R is cut into ``PARTS`` chunks, whole steps of the
    array's R (ZigZag's ``gemm_l1_l3`` GPT-2 ``mlp_proj``: ``I: l1[C2 C2 C3 C2 C2 ...]``, 128 rows' inputs of 384 of
    R in ``l1`` while all the columns pass, the partial sums back to ``l3`` once per chunk), where some op of some
    configuration has a chunk shorter than its R."""
    r, r_a = gemm.full[2], gemm.array_tile[2]
    parts = []
    for count in PARTS:
        chunk = fitted_extent(gemm, np.minimum(np.ceil(r / count / r_a) * r_a, r), r_a, 2)
        if (chunk < r).any():
            parts.append(cut_to_chunk(gemm, chunk))
    return parts


def memories_below_top(core: Core) -> bool:
    """Whether every operand has a memory below the core's top one (where a loop order below the top may be chosen)."""
    return all(any(operand in level.operands for level in core.levels[:-1]) for operand in "WIO")


def below_top_blocks(
    core: Core, gemm: Gemm, tiles: list[Tile], precision: Precision, *, band: int
) -> dict[str, tuple[Tile, np.ndarray]]:
    """The mappings other than the dataflow's for the loop order right below the top memory, each with its block
    (``resident_block``) in the resident operand's outermost memory below the top, grown from the tile below that
    memory, and whether the block fits there (``block_fits``): as ``MAPPINGS`` above the core, one loop nest around
    the block whichever memory each operand arrives in (ZigZag's loop order between ``l1`` and ``l3`` on its
    ``gemm_l1_l3``, whose 1.25 GB ``l3`` holds every layer). None where an operand has no memory below the top (it
    would cross into the array straight from the top) or its boundary into the top lies in the reduction-innermost
    ``band`` (whose order is set there). An input block runs all of R below the top: where the outputs' memory below
    the top is another than the inputs', the block takes no more rows than that memory holds partial sums for over
    its column tile (a copy in each instance that works on an output, ``copies_per_element``, as ``held_blocks`` counts them:
    ZigZag's ``generic_array_cacti``, per-PE registers for each operand under a 32 MB SRAM), and fits only where that
    memory holds them for the rows of the tile below."""
    below = {operand: [i for i, level in enumerate(core.levels[:-1]) if operand in level.operands] for operand in "WIO"}
    if not all(below.values()) or any(is_in_band(holders[-1], band) for holders in below.values()):
        return {}
    native = NATIVE[core.dataflow]
    blocks = {}
    for name in (name for name in MAPPINGS if name != native):
        resident = RESIDENT[name]
        home = below[resident][-1]
        block = resident_block(core.levels[home], gemm, tiles[home], resident, precision)
        partial_sums_fit: np.ndarray | bool = True
        if resident == "I" and below["O"][-1] != home:
            level, (m_b, n_b, r_b) = core.levels[below["O"][-1]], block
            held = equal_share_elems(level, gemm, precision.partial_sum_bytes) / copies_per_element(level, "O", gemm)
            inner = tiles[home][0]
            block = (fitted_extent(gemm, np.clip(np.floor(held / n_b), inner, m_b), inner, 0), n_b, r_b)
            partial_sums_fit = block[0] * n_b <= held * (1 + TIE)
        fits = block_fits(core.levels[home], gemm, tiles[home], resident, precision, block=block)
        blocks[name] = (block, fits & partial_sums_fit)
    return blocks


def held_block_tiles(core: Core, gemm: Gemm, tiles: list[Tile], held: HeldBlock, precision: Precision) -> list[Tile]:
    """The tiles of a held-block order (``held_blocks``): up to the innermost output memory, each level that keeps
    inputs keeps them across the block. Its tile spans the block's rows (their inputs of one R-step of the array move
    together, in accesses as wide as the block; the traffic is the same) where its inputs fit (per copy,
    ``copies_per_element``), and the block's columns (each input stays while they pass: loaded once per block of
    columns). Where it also holds the inputs of the block's rows over the innermost weight memory's whole R-tile (the
    pixels their windows touch, ``Gemm.block_input_elems``), it keeps them over that R-tile: a window's overlap is
    loaded once (ZigZag's input register holding a depthwise layer's ``OY FX FY OX``); a block of rows keeps them over
    the tile's columns too, loaded once per weight tile. With ``held.weights`` the weight memory's tile is that one
    (``weights_for_the_block``)."""
    if held.weights is not None:  # the weight memory's tile cut for the block, the tiles above it at least as large
        w = innermost_level(core, "W") + 1
        tiles = [*tiles[:w], held.weights, *(tuple(map(np.maximum, tile, held.weights)) for tile in tiles[w + 1 :])]
    out = [tiles[0]]
    top = innermost_level(core, "O")
    _, n_w, r_w = tiles[innermost_level(core, "W") + 1]
    for i, (m_t, n_t, r_t) in enumerate(tiles[1:]):
        level, m_new = core.levels[i], np.maximum(m_t, out[-1][0])
        n_new, r_new = n_t, r_t
        if i <= top and "I" in level.operands:
            room = equal_share_elems(level, gemm, precision.final_bytes["I"]) / copies_per_element(level, "I", gemm)
            m_new = np.where(room >= held.rows * tiles[0][2], np.maximum(m_new, held.rows), m_new)
            whole_r = room * (1 + TIE) >= gemm.block_input_elems(held.rows, r_w)  # a block that fills it exactly fits
            across = np.maximum(held.columns, n_w) if held.innermost == "rows" else held.columns
            n_new = np.maximum(n_t, np.where(whole_r, across, held.columns))
            r_new = np.where(whole_r, np.maximum(r_t, r_w), r_t)
        out.append((m_new if i <= top else m_t, n_new, r_new))
    return out


def reads_at_the_array(core: Core, gemm: Gemm, tiles: list[Tile], candidate: LoopOrder, operand: str) -> np.ndarray | float:
    """How many times more often the array reads ``operand`` in the ``candidate`` order than in the dataflow's: in a
    held-block order (``held_blocks``) the weights again per block of rows, the inputs once per block of columns;
    with the inputs ``latched``, the weights every step and each input once, or, on an output-stationary core, each
    input once per block of columns of the innermost output memory (1 in any other order)."""
    n_a, rows, columns = gemm.array_tile[1], gemm.steps[0], gemm.steps[1]
    if candidate.latched and core.dataflow == "output_stationary":
        n_o = tiles[innermost_level(core, "O") + 1][1]
        return gemm.tile_count(1, np.maximum(n_o, n_a)) / columns if operand == "I" else 1.0
    if candidate.latched and operand != "O":
        return rows if operand == "W" else 1 / columns
    if candidate.held is None or operand == "O":
        return 1.0
    held = candidate.held
    return gemm.tile_count(0, held.rows) if operand == "W" else gemm.tile_count(1, held.columns) / columns


def bands(core: Core) -> range:
    """The candidate bands of reduction-innermost levels: 0 (the dataflow's order at every level) up to every level
    below the top. An output-stationary core keeps its reduction innermost already: only 0."""
    return range(1 if core.dataflow == "output_stationary" else len(core.levels) + 1)
