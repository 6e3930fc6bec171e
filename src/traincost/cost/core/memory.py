"""What a memory level holds for an op.

A memory's instances beside PEs the op leaves idle hold, move and add nothing (``working_instances``): capacities,
bandwidths and copies count the instances at work. A memory with an instance per PE keeps its own copy of what its
PE works on (``copies_per_element``): an input broadcast over the output channels the array unrolls is in each PE's
register, and under a reduction the array unrolls each PE accumulates its own partial sum of an output (ZigZag's
``tpu_like``, ``eyeriss_like``); the copies meet (added up, or fetched once) at the shared memory above. A level with
``served_axes`` (ZigZag's ``served_dimensions``) has an instance per busy PE of the other axes, holding side by side
what varies along the served ones (``gemm_l1_l3``'s output register: two output channels' partial sums in one
32-bit access), and copies along the others. A double-buffered memory (``MemoryLevel.double_buffered``, ZigZag's
``force_double_buffering``) keeps two of each tile or slice that is less than its whole operand
(``buffer_copies``). A tile that stays in a level has the room the level leaves it (``free_room_elems``): its
capacity less the slices the other operands it keeps need meanwhile, as ZigZag fills a shared memory with the sum
of the operands' tiles.
"""

from __future__ import annotations

import numpy as np

from traincost.cost.core.gemm import Gemm, whole_elems
from traincost.cost.core.vocabulary import Precision, Tile
from traincost.hardware.spec import CoreLevel

__all__ = [
    "working_instances",
    "unserved_pes",
    "capacity_bytes",
    "equal_share_elems",
    "buffer_copies",
    "free_room_elems",
    "reserved_bytes",
    "copies_per_element",
    "VARIES_ALONG",
]


def working_instances(level: CoreLevel, gemm: Gemm) -> np.ndarray:
    """Instances of ``level``'s memory at work on each op: at most one per PE the op keeps busy (the MACs of one step
    of the array); for a level with ``served_axes``, one per busy PE of the other axes. A memory with one instance per
    PE has the rest beside idle PEs (an array unrolling a loop the op does not fill, or an imported array that unrolls
    fewer PEs than it has: ZigZag's ``generic_array_cacti``, 65,536 register files and 1,024 PEs at work); they hold
    nothing, move nothing and add no bandwidth."""
    instances = level.memory.instances[:, None]
    if level.served_axes is None:
        return np.minimum(instances, gemm.pes_at_work)
    return np.minimum(instances, unserved_pes(level, gemm))


def unserved_pes(level: CoreLevel, gemm: Gemm, *, skip: tuple[int, ...] = ()) -> np.ndarray:
    """The busy PEs along the axes ``level`` does not serve (a level with ``served_axes``), but for those whose loop
    plays a role in ``skip`` (of ``ROLES``: 0 M, 1 N, 2 R) in an op."""
    busy = np.ones_like(gemm.macs)
    for axis in gemm.axes:
        if axis.name not in level.served_axes:
            skipped = np.zeros(np.shape(axis.role), dtype=bool)
            for role in skip:  # np.isin(axis.role, skip), without its sorting: a few roles, called per candidate
                skipped |= axis.role == role
            busy = busy * np.where(skipped, 1.0, axis.used)
    return busy


def capacity_bytes(level: CoreLevel, gemm: Gemm) -> np.ndarray:
    """Bytes a level holds for each op: its size over the instances at work (``working_instances``)."""
    return level.memory.size_bytes[:, None] * working_instances(level, gemm)


def equal_share_elems(level: CoreLevel, gemm: Gemm, element_bytes: np.ndarray) -> np.ndarray:
    """Elements of one operand a level holds: its capacity over the instances at work, shared by the operands it
    keeps (a share is a slice: half of it in a double-buffered memory, ``buffer_copies``)."""
    halves = 2.0 if level.memory.double_buffered else 1.0
    return capacity_bytes(level, gemm) / len(level.operands) / element_bytes / halves


def buffer_copies(level: CoreLevel, elems: np.ndarray, whole: np.ndarray) -> np.ndarray | float:
    """How many copies of a tile of ``elems`` elements ``level`` keeps: two in a double-buffered memory where the tile
    is less than its whole operand (``whole`` elements: the next tile loads while the array works on this one, as
    ZigZag sizes a tile in a memory with ``force_double_buffering``), else one."""
    if not level.memory.double_buffered:
        return 1.0
    return np.where(elems < whole, 2.0, 1.0)


def free_room_elems(level: CoreLevel, gemm: Gemm, inner: Tile, operand: str, precision: Precision) -> np.ndarray:
    """Elements of ``operand`` a level holds when its tile stays there: the level's capacity over the instances at work
    (``working_instances``) less,
    for each other operand the level keeps, the slice that operand needs there meanwhile (ZigZag fills a memory
    with the sum of its operands' tiles; an equal share each would leave most of it unused). While a tile stays,
    the others pass it one step of the ``inner`` tile at a time: beside a weight tile the rows streaming past it
    (inputs m_inner x R as im2col, partial sums m_inner x N), beside an input block a weight slice R x n_inner and
    outputs M x n_inner, beside an output block an input slice M x r_inner and a weight slice r_inner x N. Each
    slice spans the op's whole extent in the tile's dimensions, so the room does not depend on how far it grows.
    In a double-buffered memory a slice, and the tile unless it is its whole operand, take twice their size
    (``buffer_copies``). A memory with a copy of an element in each instance that works on it
    (``copies_per_element``: a partial sum of an output whose reduction the array unrolls, an input broadcast over the
    output channels) holds that many
    times fewer, the tile's elements and the slices' alike (ZigZag's ``eyeriss_like``: 16 B output registers in 168
    PEs, 12 of them on each output, hold 112 outputs, not 1,344)."""
    room = np.maximum(capacity_bytes(level, gemm) - reserved_bytes(level, gemm, inner, operand, precision), 0.0)
    room = room / precision.tile_bytes[operand] / copies_per_element(level, operand, gemm)
    return room / buffer_copies(level, room, whole_elems(gemm)[operand])


def reserved_bytes(level: CoreLevel, gemm: Gemm, inner: Tile, operand: str, precision: Precision) -> np.ndarray | float:
    """Bytes ``level`` keeps for the slices of its other operands while a tile of ``operand`` stays (``free_room_elems``), each
    element in each of its copies (``copies_per_element``)."""
    (m, n, r), (m_i, n_i, r_i) = gemm.full, inner
    whole = whole_elems(gemm)
    beside = {"W": {"I": m_i * r, "O": m_i * n}, "I": {"W": r * n_i, "O": m * n_i}, "O": {"I": m * r_i, "W": r_i * n}}[operand]
    return sum(
        beside[other]
        * precision.tile_bytes[other]
        * buffer_copies(level, beside[other], whole[other])
        * copies_per_element(level, other, gemm)
        for other in level.operands
        if other != operand
    )


def copies_per_element(level: CoreLevel, operand: str, gemm: Gemm) -> np.ndarray | float:
    """How many instances of ``level`` hold each element of ``operand`` that one step of the PE array uses: a memory
    with more instances at work (``working_instances``: at most one per busy PE) than that step's distinct elements keeps a
    copy in every instance whose PE works on the element (an input broadcast over the array's output-channel axis, a
    partial sum of an output whose reduction the array unrolls: each PE keeps its own) and every copy is read and
    written. At least 1 (a memory shared by PEs holds one; a single instance, 1 without arrays). A level with
    ``served_axes`` keeps a copy per busy PE of each axis it does not serve and the operand does not vary along."""
    key = (level.memory.name, level.served_axes, operand)
    if key not in gemm.copies:
        gemm.copies[key] = _copies_per_element(level, operand, gemm)
    return gemm.copies[key]


def _copies_per_element(level: CoreLevel, operand: str, gemm: Gemm) -> np.ndarray | float:
    if not (level.memory.instances > 1).any():
        return 1.0
    if level.served_axes is not None:
        return unserved_pes(level, gemm, skip=VARIES_ALONG[operand])
    m, n, r = gemm.array_tile
    distinct = {"W": n * r, "I": m * r, "O": m * n}[operand]
    return np.maximum(working_instances(level, gemm) / distinct, 1.0)


VARIES_ALONG = {"W": (1, 2), "I": (0, 2), "O": (0, 1)}  # the roles (M 0, N 1, R 2) an operand's elements vary along
