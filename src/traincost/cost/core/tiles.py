"""The tile each memory level holds in a loop order, and the blocks a mapping keeps resident.

Going outwards from the PE array's tile, a level that keeps the order's stationary operand (S for weight-stationary,
O for output-stationary) grows the tile to fill the room the level leaves it (``grown_tile``,
``memory.free_room_elems``): weight-stationary first takes all of R (so no partial sums), then as much of N as
fits; output-stationary takes a square-ish M×N block (all M rows where they are fewer than its side, and the
columns the room then holds), but in its outermost output memory the block that brings the fewest bytes in
(``output_block``, as the output-resident mapping above any core). A band of reduction-innermost levels finishes
only as much of the reduction as the first weight memory above it holds (``band_within_weights``), and may have that
memory's tile cut in R to serve more columns (``columns_above``).

A mapping above the core keeps a block of its resident operand in that operand's outermost memory
(``resident_block``): a weight tile grown to its room, an input block of all of R beside only what its own rows
need (``input_block``, its windows' halo counted), an output block of the few shapes that fit the one that brings
the fewest weights and inputs in (``output_block``). A block never shrinks below the tile under it, so a mapping is
weighed only where its memory holds its block beside the slices it keeps for the others (``block_fits``).
"""

from __future__ import annotations

import numpy as np

from traincost.cost.core.gemm import Gemm, fitted_extent, group_bytes, whole_elems
from traincost.cost.core.memory import buffer_copies, capacity_bytes, copies_per_element, free_room_elems, reserved_bytes
from traincost.cost.core.vocabulary import TIE, Precision, Tile, is_in_band, outermost_level
from traincost.hardware.spec import Core, CoreLevel

__all__ = [
    "weights_above_band",
    "inputs_below_weights",
    "columns_above",
    "holds_the_whole_op",
    "resident_block",
    "input_block",
    "beside_input_rows",
    "output_block",
    "beside_outputs",
    "block_fits",
    "level_tiles",
    "band_within_weights",
    "grown_tile",
]


def weights_above_band(core: Core, band: int) -> int | None:
    """The position in ``core.levels`` of the first weight memory above a ``band`` >= 1 (None: band 0, or none)."""
    above = [i for i, level in enumerate(core.levels) if "W" in level.operands and not is_in_band(i, band)]
    return above[0] if band > 0 and above else None


def inputs_below_weights(core: Core, band: int) -> bool:
    """Whether, above a ``band`` >= 1, a memory keeps inputs (and no outputs lie) below the first weight memory."""
    w = weights_above_band(core, band)
    if w is None:
        return False
    between = [core.levels[i].operands for i in range(band - 1, w)]
    return any("I" in operands for operands in between) and not any("O" in operands for operands in between)


def columns_above(
    core: Core, gemm: Gemm, tiles: list[Tile], precision: Precision, *, weight: int, r: np.ndarray
) -> np.ndarray | float:
    """The most columns a weight tile at level ``weight`` may span so that every weight memory above it (below the
    top, whose block the mapping above the core sizes) still holds its own tile, which takes as many columns over
    its R-tile, or ``r`` where that is longer (``tiles``: the order's tiles before the widening): ZigZag's
    ``eyeriss_like`` on GPT-2's ``qkv``, 96 of R x 112 columns in the 64 B weight registers would need 112 x 768
    weights of its 64 KB SRAM, which holds 85 columns. inf where no weight memory lies there."""
    columns: np.ndarray | float = np.inf
    for k in range(weight + 1, len(core.levels) - 1):
        if "W" in core.levels[k].operands:
            room = free_room_elems(core.levels[k], gemm, tiles[k], "W", precision)
            columns = np.minimum(columns, np.floor(room / np.maximum(tiles[k + 1][2], r)))
    return columns


def holds_the_whole_op(core: Core, gemm: Gemm, precision: Precision) -> np.ndarray:
    """Whether the core's top memory keeps all three operands and holds the whole op at once: its weights, the input
    pixels it reads and its outputs in partial-sum precision, per (configuration, op)."""
    level = core.levels[-1]
    if level.operands != {"W", "I", "O"}:
        return np.zeros(gemm.macs.shape, dtype=bool)
    return group_bytes(gemm, precision, level.operands) * gemm.groups <= capacity_bytes(level, gemm)


def resident_block(level: CoreLevel, gemm: Gemm, inner: Tile, operand: str, precision: Precision) -> Tile:
    """The tile ``level`` holds when ``operand`` stays resident there, grown from the inner tile: a weight tile to the
    room the level leaves it (``free_room_elems``), an input or output block beside what its own rows need (``input_block``,
    ``output_block``)."""
    match operand:
        case "W":
            return grown_tile("weight_stationary", free_room_elems(level, gemm, inner, operand, precision), inner, gemm)
        case "O":
            return output_block(level, gemm, inner, precision)
    return input_block(level, gemm, inner, precision)


_HALO_ROUNDS = 4  # the sizings of an input block with the halo of the block before (``input_block``)


def input_block(level: CoreLevel, gemm: Gemm, inner: Tile, precision: Precision) -> Tile:
    """The block of inputs ``level`` keeps in the input-resident order above the core: all of R (so the window
    overlap is reused and no partial sums leave), as many rows of M as the level holds at the input elements per row
    the op reads (more a row for fewer rows: a block reads its windows' halo, ``Gemm.inputs_read``), beside, where
    the level keeps them, the weights of one column tile (R x n_inner) and the partial sums of its own rows over that
    column tile (m x n_inner; none where the tile below finishes the reduction, its outputs pass on final). In a
    double-buffered memory the weight slice (unless all of N) and a block of fewer than all rows take twice their
    size (``buffer_copies``); a memory that keeps copies of an input in several instances (``copies_per_element``) holds that many
    times fewer."""
    (m_t, n_t, _), (m, _, r) = inner, gemm.full
    capacity = capacity_bytes(level, gemm) / copies_per_element(level, "I", gemm)
    weights, per_row, partial_sums = beside_input_rows(level, gemm, inner, precision)
    rows = m
    for _ in range(_HALO_ROUNDS):  # fewer rows read more halo per row: shrink the block until its inputs fit
        fits = (capacity - weights) / (per_row * gemm.halo.factor((rows, n_t, r)) + partial_sums)
        rows = np.minimum(rows, fitted_extent(gemm, np.clip(np.floor(fits / buffer_copies(level, fits, m)), m_t, m), m_t, 0))
    return rows, n_t, r


def beside_input_rows(level: CoreLevel, gemm: Gemm, inner: Tile, precision: Precision) -> tuple[np.ndarray, ...]:
    """What ``input_block`` sizes a block of input rows by: the bytes of the weight slice beside it (R x n_inner,
    twice in a double-buffered memory unless all of N), the bytes of one row's inputs without halo, and of one row's
    partial sums over the column tile (none where the inner tile finishes the reduction)."""
    (_, n_t, r_t), (m, n, r) = inner, gemm.full
    weights = r * n_t * precision.tile_bytes["W"] * ("W" in level.operands) * buffer_copies(level, n_t, n)
    partial_sums = n_t * precision.tile_bytes["O"] * ("O" in level.operands) * (r_t < r)
    return weights, gemm.x_unique / m * precision.tile_bytes["I"], partial_sums


def output_block(level: CoreLevel, gemm: Gemm, inner: Tile, precision: Precision) -> Tile:
    """The block of outputs ``level`` keeps in the output-resident order above the core: m x n partial sums and, where
    the level keeps them, the inputs of its own m rows and the weights of its own n columns for one step of the
    inner tile's reduction (m x r_inner and r_inner x n; ``free_room_elems`` reserves the op's whole extent instead, for tiles
    that every row or column of it streams past). Of a few shapes that fit, the one that brings the fewest bytes
    into the level (each weight once per block of rows, each input of the block's windows once per block of columns,
    ``Gemm.inputs_read``; the first on a tie; a shape that fits before one that does not):
    the square-ish block (the columns grow as a square block's would, the rows take what is left), and the blocks
    that cut the columns, or the rows, into as many equal parts as the square-ish block needs, one fewer, or one, the
    other side taking what is left (ZigZag's ``O: sram_1MB_A[OY2 OY2 C2 C2]`` on ``ascend_like``'s GPT-2
    ``mlp_proj``: 512 rows x all 768 columns, where the square-ish 535 x 724 brings every input in twice). Where no
    shape fits, not even the inner tile with its slices, the block is the inner tile: the level holds nothing more. A
    double-buffered memory holds a block of the whole output once, any other twice (``buffer_copies``); a memory that
    keeps copies of a partial sum in several instances (``copies_per_element``) holds that many times fewer."""
    (m_t, n_t, _), (m, n, _) = inner, gemm.full
    per_row, per_column, per_output = beside_outputs(level, inner, precision)
    weights, inputs = gemm.s_elems * precision.tile_bytes["W"], precision.tile_bytes["I"]

    def fetched(rows: np.ndarray, columns: np.ndarray) -> np.ndarray:
        return weights * np.ceil(m / rows) + gemm.inputs_read((rows, columns, gemm.full[2])) * inputs * np.ceil(n / columns)

    def block(capacity: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        elems = capacity / per_output
        n_square = fitted_extent(gemm, np.clip(np.floor(np.minimum(np.sqrt(elems), elems / m_t)), n_t, n), n_t, 1)
        m_square = np.floor((capacity - n_square * per_column) / (n_square * per_output + per_row))
        rows, columns = fitted_extent(gemm, np.clip(m_square, m_t, m), m_t, 0), n_square
        shapes = []  # (rows, columns, whether they fit): the columns cut into equal parts, then the rows
        for parts in (np.ceil(n / n_square), np.ceil(n / n_square) - 1, 1.0):
            n_b = fitted_extent(gemm, np.clip(np.ceil(n / np.maximum(parts, 1.0)), n_t, n), n_t, 1)
            m_b = np.minimum(np.floor((capacity - n_b * per_column) / (n_b * per_output + per_row)), m)
            shapes.append((fitted_extent(gemm, np.maximum(m_b, m_t), m_t, 0), n_b, m_b >= m_t))
        for parts in (np.ceil(m / np.maximum(m_square, m_t)), np.ceil(m / np.maximum(m_square, m_t)) - 1, 1.0):
            m_b = fitted_extent(gemm, np.clip(np.ceil(m / np.maximum(parts, 1.0)), m_t, m), m_t, 0)
            n_b = np.minimum(np.floor((capacity - m_b * per_row) / (m_b * per_output + per_column)), n)
            shapes.append((m_b, fitted_extent(gemm, np.maximum(n_b, n_t), n_t, 1), n_b >= n_t))
        least = np.where(m_square >= m_t, fetched(rows, columns), np.inf)  # a square-ish block that does not fit loses
        for m_b, n_b, fit in shapes:
            brings = fetched(m_b, n_b)
            better = fit & (brings < least)
            rows, columns, least = np.where(better, m_b, rows), np.where(better, n_b, columns), np.where(better, brings, least)
        # where no shape fits, not even the inner tile's slices, the level holds no block beyond the inner tile
        none_fits = np.isinf(least)
        return np.where(none_fits, m_t, rows), np.where(none_fits, n_t, columns)

    capacity = capacity_bytes(level, gemm) / copies_per_element(level, "O", gemm)
    rows, columns = block(capacity)
    if level.memory.double_buffered:  # two of everything but a block of the whole output
        halved = block(capacity / 2)
        whole = (rows >= m) & (columns >= n)
        rows, columns = np.where(whole, rows, halved[0]), np.where(whole, columns, halved[1])
    return rows, columns, gemm.full[2]


def beside_outputs(level: CoreLevel, inner: Tile, precision: Precision) -> tuple[np.ndarray, ...]:
    """What ``output_block`` sizes a block of outputs by: the bytes of one row's inputs and of one column's weights
    for one step of the ``inner`` tile's reduction (where the level keeps them), and of one partial sum."""
    r_t = inner[2]
    per_row = r_t * precision.tile_bytes["I"] * ("I" in level.operands)
    per_column = r_t * precision.tile_bytes["W"] * ("W" in level.operands)
    return per_row, per_column, precision.tile_bytes["O"]


def block_fits(level: CoreLevel, gemm: Gemm, inner: Tile, operand: str, precision: Precision, *, block: Tile) -> np.ndarray:
    """Whether ``level`` holds ``block`` of ``operand`` (``resident_block``, grown from the ``inner`` tile and never
    smaller than it) beside the slices it keeps for the other operands meanwhile, as the block's sizing counts them:
    where even the inner tile's does not fit, the block that was floored at it does not either (weights above an
    output-stationary core's output block over all columns and all of R: ``tesla_npu_like_mixed``'s GPT-2 ``mlp_proj``,
    2.4 MB against its 1 MB weight SRAM; outputs below the top grown from the weight registers' tile of 64 held rows x
    2,048 columns: ``generic_array_cacti``'s GPT-2 ``qkv``, 16.7 MB of partial sums with their 32 copies against 128 KB
    of per-PE output registers)."""
    (m_b, n_b, r_b), whole = block, whole_elems(gemm)
    capacity = capacity_bytes(level, gemm)
    match operand:
        case "W":
            own = (
                n_b
                * r_b
                * precision.tile_bytes["W"]
                * buffer_copies(level, n_b * r_b, whole["W"])
                * copies_per_element(level, "W", gemm)
            )
            held = own + reserved_bytes(level, gemm, inner, "W", precision)
        case "I":
            weights, per_row, partial_sums = beside_input_rows(level, gemm, inner, precision)
            rows = m_b * (per_row * gemm.halo.factor(block) + partial_sums) * buffer_copies(level, m_b, gemm.full[0])
            held = (weights + rows) * copies_per_element(level, "I", gemm)
        case _:
            per_row, per_column, per_output = beside_outputs(level, inner, precision)
            twice = buffer_copies(level, m_b * n_b, whole["O"])  # a block of the whole output once
            held = (m_b * n_b * per_output + m_b * per_row + n_b * per_column) * twice * copies_per_element(level, "O", gemm)
    return held <= capacity * (1 + TIE)


def level_tiles(core: Core, gemm: Gemm, precision: Precision, *, band: int, grow: bool = True, widen: float = 1.0) -> list[Tile]:
    """The tile at the PE array (``Gemm.array_tile``), then at each memory level of ``core`` (innermost first). A level in
    the reduction-innermost band (``is_in_band``) grows an output block if it keeps outputs (without ``grow``, keeps the
    block below it over all of R), and nothing else."""
    tile = gemm.array_tile
    tiles = [tile]
    top_outputs = outermost_level(core, "O")
    for i, level in enumerate(core.levels):
        dataflow = "output_stationary" if is_in_band(i, band) else core.dataflow
        stationary = "O" if dataflow == "output_stationary" else "W"
        if core.dataflow == "output_stationary" and i == top_outputs:
            # the block the core's own mapping keeps above the core: of a few shapes, the one bringing the fewest in
            tile = output_block(level, gemm, tile, precision)
        elif stationary in level.operands and (grow or not is_in_band(i, band)):
            tile = grown_tile(dataflow, free_room_elems(level, gemm, tile, stationary, precision), tile, gemm)
        elif stationary in level.operands:  # the output block below, kept over all of R
            tile = (tile[0], tile[1], gemm.full[2])
        tiles.append(tile)
    return band_within_weights(core, gemm, tiles, precision, band=band, widen=widen)


def band_within_weights(
    core: Core, gemm: Gemm, tiles: list[Tile], precision: Precision, *, band: int, widen: float = 1.0
) -> list[Tile]:
    """A band's output blocks finish only as much of the reduction as the first weight memory above the band holds:
    that memory keeps its tile while the rows stream past it (the dataflow's order), so the band runs over that
    tile's R, and its blocks' partial sums leave once per R-tile of it. The tiles up to that memory take its R-tile:
    all of R where it holds the whole reduction of the block's columns, or where no weight memory lies above the band
    (a tile that kept all of R inside a memory holding less would not nest). With ``widen`` > 1 that memory's tile
    spans ``widen`` times the columns of the tile below it (at most all N, and as many as the weight memories above
    it hold, ``columns_above``) over as many whole steps of the array's R as then fit, where at least one does, and
    every tile from the band up spans those columns: an input memory between the band and the weight memory keeps
    its rows' inputs over all of them."""
    w, r = weights_above_band(core, band), gemm.full[2]
    if w is None:
        return tiles
    _, n_t, _ = tiles[w]  # the tile below that memory
    room = free_room_elems(core.levels[w], gemm, tiles[w], "W", precision)
    r_a = tiles[0][2]
    r_w = np.where(room >= r * n_t, r, fitted_extent(gemm, np.maximum(np.floor(room / n_t), r_a), r_a, 2))
    columns = np.maximum(columns_above(core, gemm, tiles, precision, weight=w, r=r_a), n_t)
    n_w = fitted_extent(gemm, np.minimum(np.minimum(n_t * widen, gemm.full[1]), columns), n_t, 1)
    r_wide = np.minimum(np.floor(room / n_w / r_a) * r_a, r)
    wide = (r_wide >= r_a) & (n_w > n_t)
    r_wide = fitted_extent(gemm, np.maximum(r_wide, r_a), r_a, 2)
    r_w, n_w = np.where(wide, r_wide, r_w), np.where(wide, n_w, n_t)
    return [
        (m_k, np.where(wide, np.maximum(n_k, n_w), n_k) if k >= band else n_k, np.minimum(r_k, r_w) if k <= w + 1 else r_k)
        for k, (m_k, n_k, r_k) in enumerate(tiles)
    ]


def grown_tile(dataflow: str, capacity: np.ndarray, tile: Tile, gemm: Gemm) -> Tile:
    """The tile a level of ``capacity`` elements holds for the stationary operand, never smaller than the inner tile
    (each extent ``fitted_extent``). An output block is square-ish, or, where the op has fewer rows than its side,
    takes every row and as many columns as the room then holds (a classifier's one row of outputs, ResNet-18's ``fc``:
    all of it where the room holds it; a square block would take fewer columns and leave the rest of the room
    unused)."""
    (m_t, n_t, r_t), (m, n, r) = tile, gemm.full
    if dataflow == "output_stationary":
        columns = np.maximum(np.minimum(np.sqrt(capacity), capacity / m_t), capacity / m)
        n_new = fitted_extent(gemm, np.clip(np.floor(columns), n_t, n), n_t, 1)
        return fitted_extent(gemm, np.clip(np.floor(capacity / n_new), m_t, m), m_t, 0), n_new, r
    whole_r = capacity >= r * n_t
    n_new = np.where(whole_r, fitted_extent(gemm, np.clip(np.floor(capacity / r), n_t, n), n_t, 1), n_t)
    r_new = np.where(whole_r, r, fitted_extent(gemm, np.clip(np.floor(capacity / n_t), r_t, r), r_t, 2))
    return m_t, n_new, r_new
