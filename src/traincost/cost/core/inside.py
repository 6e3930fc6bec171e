"""One loop order's latency and energy inside a core (``cost_inside``).

Each operand crosses each boundary from the PE array out to its outermost memory in the order's loop order there
(``traffic``), each side charged per copy (``memory.copies_per_element``) in accesses of its width
(``level_traffic``). An output-stationary PE accumulates in a register of its own where the core gives it one,
reading and writing its partial sum every step of the reduction (ZigZag's ``tesla_npu_like_mixed``, two accesses of
``rf_4B`` a MAC); under an output memory the PEs share, its accumulator is the MAC's (FuseMax). On an
in-memory-computing core (``Core.in_memory``) the MACs' energy is that of the macro activations the op takes, and
each step of the array takes ``cycles_per_mac`` compute cycles.

Latency = max(compute cycles, each level's read and write cycles) + fill/drain (the array's pipeline depth plus
the first stationary tile's load); on a core with ``tile_io: serial`` also ZigZag's on- and off-loading
(``serial_tile_io_cycles``). An in-memory array computes only between writes of its cells: its latency is at least
the compute's plus the cycles of writing them (``cells_written_cycles``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from traincost.cost.core.gemm import Gemm
from traincost.cost.core.level_traffic import LevelTraffic, bits_per_access, groups_together
from traincost.cost.core.memory import copies_per_element, free_room_elems, working_instances
from traincost.cost.core.orders import LoopOrder, order_tiles, reads_at_the_array
from traincost.cost.core.traffic import boundary_bytes, held_partial_sums
from traincost.cost.core.vocabulary import (
    NATIVE,
    ExternalPath,
    Precision,
    Tile,
    innermost_level,
    is_in_band,
    outermost_level,
)
from traincost.hardware.spec import Core

__all__ = ["serial_tile_io_cycles", "InsideCost", "cost_inside", "cells_written_cycles", "pipeline_depth", "first_tile_cycles"]


def serial_tile_io_cycles(core: Core, gemm: Gemm, precision: Precision, external: ExternalPath | None) -> np.ndarray:
    """ZigZag's on- and off-loading cycles (``tile_io: serial``). An input operand whose only memory in the core
    holds all of it (in the room that memory leaves it, ``free_room_elems``) is loaded once, before the compute (ZigZag's
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
            fits = whole <= free_room_elems(holders[0], gemm, gemm.array_tile, operand, precision)
            first = np.maximum(first, np.where(fits, whole * precision.final_bytes[operand], 0.0))
    m_t, n_t, _ = gemm.array_tile
    return (first + m_t * n_t * precision.final_bytes["O"]) / bandwidth


@dataclass(frozen=True, slots=True)
class InsideCost:
    """One candidate order inside a core: its tiles, each operand's outermost holder (None: straight into the array),
    latency, MAC + level energy, and bytes read, bytes written and energy per memory, arrays (configs, ops)."""

    tiles: list[Tile]
    outermost: dict[str, int | None]
    latency: np.ndarray
    energy_pj: np.ndarray
    read_bytes: dict[str, np.ndarray]
    write_bytes: dict[str, np.ndarray]
    level_pj: dict[str, np.ndarray]


def cost_inside(
    core: Core, gemm: Gemm, precision: Precision, *, compute: np.ndarray, mac_pj: np.ndarray, candidate: LoopOrder
) -> InsideCost:
    """Inside the core in the ``candidate`` order: with the reduction loops innermost over the PE array and the
    ``band`` - 1 innermost levels (``is_in_band``) and the dataflow's order above them; or, with ``held``
    (``held_blocks``), the dataflow's order except inside the innermost weight memory's tile, where the reduction
    runs innermost over blocks of outputs whose partial sums stay in the innermost output memory. With ``below_top``
    (a ``MAPPINGS`` name and its block, ``below_top_blocks``), every operand crosses into the top memory in that loop
    order around the block."""
    band, held, below_top = candidate.band, candidate.held, candidate.below_top
    tiles = order_tiles(core, gemm if candidate.chunk is None else candidate.chunk, precision, candidate)
    top = len(core.levels) - 1
    levels = LevelTraffic(core, compute.shape, [working_instances(level, gemm) for level in core.levels])
    outermost = {operand: outermost_level(core, operand) for operand in ("W", "I", "O")}
    for operand in ("W", "I", "O"):
        holders = [i for i, level in enumerate(core.levels) if operand in level.operands]
        child = -1  # the PE array
        final: bool | np.ndarray = False  # whether the outputs leaving the child are complete
        arriving = tiles[0][2]  # the R-tile of the partial sums that reach the child
        for parent in holders:
            # the array keeps no output of its own: its partial sums go to the innermost output memory in any order
            in_band = is_in_band(child, band) and (child >= 0 or operand != "O")
            order = "output_resident" if in_band else NATIVE[core.dataflow]
            if child < 0 and operand == "O" and core.levels[parent].memory.per_pe:
                # an output-stationary PE keeps its output in its own register where the core gives it one, and reads
                # and writes it every step of the reduction (ZigZag's ``tesla_npu_like_mixed``: ``O: rf_4B[K2 C64 FY3
                # FX3]``); under a shared output memory its accumulator is the MAC's (FuseMax)
                order = "weight_resident"
            tile = tiles[child + 1]
            if below_top is not None and parent == top and child >= 0:
                order, tile = below_top
            elif operand == "O" and in_band:
                # the band's output block leaves once per R-tile of its tile (``band_within_weights``): complete
                # where that spans all of R
                order, final, arriving = "weight_resident", final | (tile[2] >= gemm.full[2]), tile[2]
            elif operand == "O" and child >= 0 and order == "weight_resident":
                if held is not None and child == holders[0]:
                    # the rows held finish the reduction of the innermost weight tile before they leave
                    r_w = tiles[innermost_level(core, "W") + 1][2]
                    tile, final, arriving = (tile[0], tile[1], r_w), r_w >= gemm.full[2], r_w
                elif final is False:
                    tile = held_partial_sums(core.levels[child], gemm, tile, arriving, precision)
                elif not np.all(final):
                    passed = held_partial_sums(core.levels[child], gemm, tile, arriving, precision)
                    tile = (np.where(final, tile[0], passed[0]), tile[1], np.where(final, tile[2], passed[2]))
            # a memory in the PEs that keeps a held block's inputs keeps those of its rows alone: each block brings its
            # own halo, the rows do not slide past it
            own_block = held is not None and operand == "I" and 0 <= child <= innermost_level(core, "O")
            down, up = boundary_bytes(order, gemm, operand, tile, precision, at_array=child < 0, own_block=own_block)
            down = down * (reads_at_the_array(core, gemm, tiles, candidate, operand) if child < 0 else 1.0)
            sides = ((child, up, down), (parent, down, up))
            together = groups_together(core, gemm, (child, parent), tile, precision)
            for level, read, write in sides if child >= 0 else sides[1:]:
                copies = copies_per_element(core.levels[level], operand, gemm)
                own = np.asarray(copies) > 1
                p_read, p_write = read, write
                if operand == "O" and own.any():
                    # a PE's own copy of an output (``copies_per_element``) is a partial sum until the copies meet in the memory
                    # above, one for each step its PE works in (``Gemm.own_steps``)
                    p_down, p_up = boundary_bytes(
                        order, gemm, operand, tile, precision, at_array=child < 0, partial=True, steps=gemm.own_steps[level]
                    )
                    p_read, p_write = (p_up, p_down) if level == child else (p_down, p_up)
                bits = bits_per_access(operand, tile, precision, levels.instances[level], copies) * together
                read_bytes, write_bytes = np.where(own, p_read, read), np.where(own, p_write, write)
                levels.move(level, operand, read=read_bytes * copies, write=write_bytes * copies, access_bits=bits)
            child = parent

    latency = np.maximum(compute, levels.cycles())
    stationary = "O" if core.dataflow == "output_stationary" else "W"
    latency += pipeline_depth(core) + first_tile_cycles(core, gemm, precision, stationary)
    reads, writes, level_pj = levels.by_memory()
    energy_pj = mac_pj + sum(level_pj.values())
    return InsideCost(tiles, outermost, latency, energy_pj, reads, writes, level_pj)


def cells_written_cycles(
    core: Core, gemm: Gemm, cand: InsideCost, ext_weights: np.ndarray, external: ExternalPath | None
) -> np.ndarray:
    """Cycles of writing the weights into an in-memory array's cells, which it cannot compute beside: a cell holds
    the one weight the array computes with, and the next waits for it (ZigZag: the cells' tile fills them, so they are
    not double-buffered and are updated only between uses; its cycles on ``aimc`` and ``dimc`` are the compute's plus
    the weights' off-chip bytes over the link, or the link's time for all bytes where that is more). The bytes written
    from the memory above go at the cells' write bandwidth (the instances at work); where the cells are the weights'
    outermost memory, those from outside (``ext_weights``) at the external path's too."""
    cells = innermost_level(core, "W")
    level = core.levels[cells]
    bandwidth = level.memory.write_bandwidth_bytes_per_cycle[:, None] * working_instances(level, gemm)
    cycles = cand.write_bytes[level.memory.name] / bandwidth
    if cand.outermost["W"] == cells:
        rate = bandwidth if external is None else np.minimum(bandwidth, external.bandwidth_bytes_per_cycle[:, None])
        cycles = cycles + ext_weights / rate
    return cycles


def pipeline_depth(core: Core) -> np.ndarray:
    """The PE array's pipeline depth in cycles, per configuration (a column vector): the sum of its axes' sizes."""
    return sum(axis.size for axis in core.pe_array)[:, None]


def first_tile_cycles(core: Core, gemm: Gemm, precision: Precision, operand: str) -> np.ndarray:
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
            return elems * element_bytes / (bandwidth[:, None] * working_instances(level, gemm))
    return np.zeros_like(elems)
