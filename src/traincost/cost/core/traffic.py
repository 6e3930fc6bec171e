"""The elements that cross each boundary (child tile → parent) in a loop order, and the bytes that cross the core's
outer boundary under each mapping above it.

In elements per group (``boundary_elems``): with S resident, S once, X once per N-tile, O written once per R-tile and
read back (partial sums) one time fewer (the GEMM's M x N outputs: the pixels of a strided convolution's data
gradient that no window reaches are written once); with X resident, X once, S once per M-tile, O as before; with O
resident, O once, S once per M-tile, X once per N-tile. In the S-resident order every row of M streams past a weight
tile, so an output memory that cannot hold M x N-tile partial sums passes them on as they arrive, once per R-tile of
the array (of the weight memory, below rows held in the PEs; ``held_partial_sums``), unless an output memory in the
band below it has finished them. Weights whose only memories lie in the band come in again for every block of rows
it finishes, in any order above (an in-memory array's cells).

The streamed operand is counted as its im2col (M·R) at the PE array, less where one step unrolls a convolution's
outputs and its filter taps along the same axis and one memory instance feeds those PEs: the step's windows overlap
and it reads each pixel once (``step_windows``; ZigZag's ``edge_tpu_like_mixed``, OX 4 x FX 2 reading 5 input
columns); above the array, as the input pixels its windows touch (a tile that holds the whole filter window reuses
the overlap; a strided window skips pixels, ``optable.window_span``). A tile that stays resident cuts a convolution
into blocks of outputs, and each block reads the pixels its own windows touch: the halo it shares with its
neighbours comes in once per block (``halo``; ZigZag's ``aimc`` ResNet-18 ``layer1.0.conv1``, 28 blocks of 14 x 8
outputs reading 16 x 10 pixels each). Rows that stream past a weight tile, and a reduction past an output block,
slide over the overlap.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from traincost.cost.core.gemm import Gemm
from traincost.cost.core.memory import equal_share_elems
from traincost.cost.core.tiles import block_fits, resident_block
from traincost.cost.core.vocabulary import MAPPINGS, NATIVE, RESIDENT, Precision, Tile, is_in_band
from traincost.hardware.spec import Core, CoreLevel

__all__ = ["held_partial_sums", "ExternalTraffic", "external_traffic", "boundary_bytes", "boundary_elems"]


def held_partial_sums(level: CoreLevel, gemm: Gemm, tile: Tile, arriving: np.ndarray, precision: Precision) -> Tile:
    """The tile whose partial sums leave an output memory in the weight-resident order: every row of M streams
    past a weight tile, so the memory must hold M x N-tile partial sums to finish the tile's R-tiles; one that
    cannot passes them on as they arrive, once per ``arriving`` R-tile (the array's, or the weight memory's
    below an output memory that holds a block, ``held_blocks``). (Outputs an output memory in the band has finished
    are not partial sums: the caller does not ask.)"""
    m_t, n_t, r_t = tile
    fits = equal_share_elems(level, gemm, precision.partial_sum_bytes) >= gemm.full[0] * n_t
    return m_t, n_t, np.where(fits, r_t, np.minimum(r_t, arriving))


@dataclass(frozen=True, slots=True)
class ExternalTraffic:
    """What one mapping above the core moves across its outer boundary, per (configuration, op): ``in_bytes`` per
    operand, ``write_bytes`` out, and whether the mapping's block fits where it stays (``block_fits``; the
    dataflow's own mapping crosses with the tiles themselves and always can)."""

    in_bytes: dict[str, np.ndarray]
    write_bytes: np.ndarray
    fits: np.ndarray | bool = True


def external_traffic(
    core: Core,
    gemm: Gemm,
    tiles: list[Tile],
    outermost: dict[str, int | None],
    precision: Precision,
    *,
    band: int,
    mappings: tuple[str, ...],
) -> dict[str, ExternalTraffic]:
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
    native = NATIVE[core.dataflow]
    names = [native, *(name for name in MAPPINGS if name != native and outermost[RESIDENT[name]] is not None)]
    names = [name for name in names if name in mappings]
    out: dict[str, ExternalTraffic] = {}
    for name in names:
        block, fits = None, True
        if name != native:
            resident = RESIDENT[name]
            home = outermost[resident]
            block = resident_block(core.levels[home], gemm, tiles[home], resident, precision)
            fits = block_fits(core.levels[home], gemm, tiles[home], resident, precision, block=block)
        ext_in: dict[str, np.ndarray] = {}
        ext_write = np.zeros_like(gemm.macs)
        for operand, holder in outermost.items():
            if holder is None:  # straight into the array
                order, tile = native, tiles[0]
            else:
                order, tile = (native, tiles[holder + 1]) if block is None else (name, block)
            down, up = boundary_bytes(order, gemm, operand, tile, precision, at_array=holder is None)
            at = tiles[0 if holder is None else holder + 1]
            if operand == "W" and is_in_band(-1 if holder is None else holder, band):
                again, _ = boundary_bytes("output_resident", gemm, "W", at, precision, at_array=holder is None)
                down = np.where(at[2] < gemm.full[2], again, down)
            ext_in[operand] = np.broadcast_to(down, gemm.macs.shape).copy()
            ext_write = ext_write + up
        out[name] = ExternalTraffic(ext_in, ext_write, fits)
    return out


def boundary_bytes(
    order: str,
    gemm: Gemm,
    operand: str,
    tile: Tile,
    precision: Precision,
    *,
    at_array: bool,
    partial: bool = False,
    steps: np.ndarray | None = None,
    own_block: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Bytes over one boundary, all groups: ``boundary_elems``'s elements per group in the operand's precision (outputs
    all as partial sums where ``partial``, ``Precision.bytes``)."""
    elems = boundary_elems(order, gemm, operand, tile, at_array=at_array, steps=steps, own_block=own_block)
    down, up = precision.bytes(operand, *elems, partial=partial)
    return down * gemm.groups, up * gemm.groups


def boundary_elems(
    order: str,
    gemm: Gemm,
    operand: str,
    tile: Tile,
    *,
    at_array: bool,
    steps: np.ndarray | None = None,
    own_block: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Elements per group over one boundary in loop order ``order`` (a ``MAPPINGS`` name): (down = parent to
    child, up = child to parent). ``steps``: the partial sums an output takes per array step of the reduction, where
    not the array's steps along R (a PE's own copy, ``Gemm.own_steps``). ``own_block``: the child keeps the inputs of
    its tile's rows alone (a block held in the PEs, ``orders.held_blocks``), so each block of them reads its own halo
    where rows streaming past would slide over the overlap."""
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
    # tile, and a reduction streaming past an output block, slide over the overlap (``Gemm.inputs_read``)
    blocks = (
        tile if own_block else (m, tn, tr) if order == "weight_resident" else (tm, tn, r) if order == "output_resident" else tile
    )
    x = x_full if at_array else np.where(tr >= gemm.window, gemm.inputs_read(blocks), x_full)
    if order == "input_resident":
        return x + zero, zero
    return x * gemm.tile_count(1, tn), zero  # once per column tile
