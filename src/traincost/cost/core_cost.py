"""Per-op cost on one core, as arrays over (configurations × ops): the ZigZag-style analytical model.

MAC ops (``mac_cost``) follow a recipe in the spirit of ZigZag's cost model evaluation:

1. **Spatial unrolling.** Each PE-array axis unrolls one loop dimension. Compute cycles are
   ``Π_d ceil(D_d / u_d)`` over the loop dims, so a layer narrower than the array wastes PEs
   (the ceil effect); spatial utilisation = MACs / (cycles · PEs).
2. **Tiles per memory level.** Each op is ``g`` GEMMs ``O[M×N] = X[M×R]·S[R×N]``. At the PE array
   the tile is what the array unrolls. Going outwards, a level that keeps the dataflow's stationary
   operand (S for weight-stationary, O for output-stationary) grows the tile to fill its share of
   the level (capacity / operands kept there): weight-stationary first takes all of R (so no partial
   sums), then as much of N as fits; output-stationary takes a square-ish M×N block.
3. **Traffic at each boundary** (child tile → parent), in elements per group:
   weight-stationary: S once; X once per N-tile; O written once per R-tile and read back (partial
   sums) one time fewer. Output-stationary: O once; S once per M-tile; X once per N-tile. The
   streamed operand is counted as its im2col (M·R) at the PE array and as the unique tensor above
   it (a tile that holds the whole filter window reuses the overlap).
4. **Energy** = MACs · e_mac + Σ levels (bits read · e_read + bits written · e_write).
5. **Latency** = max(compute cycles, each level's read and write cycles) + fill/drain (array
   pipeline depth plus the first stationary tile load).

The outermost boundary (core ↔ bus/off-chip, or a tensor already resident in the core) is returned
as traffic, not costed: where the data comes from is the scheduler's business.

Element-wise ops on a SIMD core (``simd_cost``): ``ceil(elementwise_ops / lanes)`` cycles, every
input and output element passes each level that keeps it once (no reuse), ``e_op`` per operation.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from traincost.cost.optable import ROLES, SPLIT_DIM, OpTable
from traincost.hardware.spec import Core

__all__ = ["CoreOpCost", "mac_cost", "simd_cost"]

_BITS = 8.0


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


class _Levels:
    """Accumulates reads and writes per memory level of a core."""

    def __init__(self, core: Core, shape: tuple[int, int]) -> None:
        self.core = core
        self.reads = [np.zeros(shape) for _ in core.levels]
        self.writes = [np.zeros(shape) for _ in core.levels]

    def energy_pj(self) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for level, rd, wr in zip(self.core.levels, self.reads, self.writes, strict=True):
            mem = level.memory
            e = rd * _BITS * mem.read_energy_pj_per_bit[:, None] + wr * _BITS * mem.write_energy_pj_per_bit[:, None]
            out[mem.name] = out.get(mem.name, 0) + e
        return out

    def cycles(self) -> np.ndarray:
        worst = np.zeros_like(self.reads[0])
        for level, rd, wr in zip(self.core.levels, self.reads, self.writes, strict=True):
            mem = level.memory
            worst = np.maximum(worst, rd / mem.read_bandwidth_bytes_per_cycle[:, None])
            worst = np.maximum(worst, wr / mem.write_bandwidth_bytes_per_cycle[:, None])
        return worst


_Tile = tuple[np.ndarray, np.ndarray, np.ndarray]  # (m, n, r) elements per group


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

    @classmethod
    def of(cls, table: OpTable, index: np.ndarray, split: np.ndarray) -> _Gemm:
        shape = (split.shape[0], len(index))
        kinds = table.kind[index]
        dims = {d: np.broadcast_to(table.dims[d][index].astype(np.float64), shape).copy() for d in table.dims}
        share = np.ones(shape)  # each core takes ceil(D/split) of the output-channel dim
        for kind, dim in SPLIT_DIM.items():
            mask = kinds == kind
            if mask.any():
                part = np.ceil(dims[dim][:, mask] / split[:, None])
                share[:, mask] = part / dims[dim][:, mask]
                dims[dim][:, mask] = part
        groups = table.groups[index][None, :]
        full = (
            table.m[index][None, :] * np.ones(shape),
            table.n[index][None, :] * share,
            table.r[index][None, :] * np.ones(shape),
        )
        return cls(
            dims=dims,
            full=full,
            groups=groups,
            macs=table.macs[index][None, :] * share,
            s_elems=table.s_elems[index][None, :] * share / groups,
            o_elems=table.o_elems[index][None, :] * share / groups,
            x_unique=table.x_elems[index][None, :] / groups,
            window=table.window[index][None, :],
            core_shares=1 / share,
        )


def mac_cost(core: Core, table: OpTable, index: np.ndarray, *, word_bytes: int, split: np.ndarray | None = None) -> CoreOpCost:
    """Cost of the MAC ops ``index`` of ``table`` on one instance of ``core``.

    Args:
        core: a core whose ``runs`` include these ops' kinds.
        table: the workload's op table.
        index: positions in ``table`` of MAC ops.
        word_bytes: bytes per tensor element.
        split: per configuration, the number of cores the op's output channels are split over
            (tensor parallelism); the cost is that of one of those cores (the largest share), and
            ``core_shares`` says how many such shares the op's work fills (D / ceil(D / split): fewer
            than ``split`` when D is smaller, fractional when it does not divide evenly). Default 1.
    """
    n_cfg = core.count.shape[0]
    split = np.ones(n_cfg) if split is None else np.asarray(split, dtype=np.float64)
    gemm = _Gemm.of(table, index, split)
    unroll = {d: core.unroll(d)[:, None] for d in gemm.dims}
    compute = np.ones_like(gemm.macs)
    for d, size in gemm.dims.items():
        compute = compute * np.ceil(size / unroll[d])

    tiles = _tiles(core, gemm, table.kind[index], unroll, word_bytes)
    levels = _Levels(core, compute.shape)
    ext_in: dict[str, np.ndarray] = {}
    ext_write = np.zeros_like(compute)
    for operand in ("W", "I", "O"):
        holders = [i for i, level in enumerate(core.levels) if operand in level.operands]
        child = None  # None = the PE array
        for parent in [*holders, None]:
            tile = tiles[0 if child is None else child + 1]
            down, up = (
                v * gemm.groups * word_bytes for v in _traffic(core.dataflow, gemm, operand, tile, at_array=child is None)
            )
            if child is not None:
                levels.writes[child] += down
                levels.reads[child] += up
            if parent is None:
                ext_in[operand] = np.broadcast_to(down, compute.shape).copy()
                ext_write += up
            else:
                levels.reads[parent] += down
                levels.writes[parent] += up
            child = parent
    stationary = "O" if core.dataflow == "output_stationary" else "W"
    fill = sum(axis.size for axis in core.pe_array)[:, None] + _first_tile_cycles(core, tiles[0], word_bytes, stationary)
    return CoreOpCost(
        latency_cycles=np.maximum(compute, levels.cycles()) + fill,
        compute_cycles=compute,
        utilization=gemm.macs / (compute * core.pes[:, None]),
        energy_mac_pj=gemm.macs * core.mac_energy_pj[:, None],
        energy_level_pj=levels.energy_pj(),
        ext_in_bytes=ext_in,
        ext_write_bytes=ext_write,
        core_shares=gemm.core_shares,
    )


def _tiles(core: Core, gemm: _Gemm, kinds: np.ndarray, unroll: dict[str, np.ndarray], word_bytes: int) -> list[_Tile]:
    """The tile at the PE array, then at each memory level of ``core`` (innermost first)."""
    spatial = []
    for which in range(3):
        out = np.ones_like(gemm.macs)
        for kind, roles in ROLES.items():
            mask = kinds == kind
            for d in roles[which] if mask.any() else ():
                out[:, mask] *= np.minimum(gemm.dims[d][:, mask], unroll[d])
        spatial.append(np.minimum(out, gemm.full[which]))
    tile: _Tile = (spatial[0], spatial[1], spatial[2])
    tiles = [tile]
    stationary = "O" if core.dataflow == "output_stationary" else "W"
    for level in core.levels:
        if stationary in level.operands:
            capacity = level.memory.size_bytes[:, None] / len(level.operands) / word_bytes
            tile = _grow(core.dataflow, capacity, tile, gemm.full)
        tiles.append(tile)
    return tiles


def _grow(dataflow: str, capacity: np.ndarray, tile: _Tile, full: _Tile) -> _Tile:
    """The tile a level of ``capacity`` elements holds for the stationary operand, never smaller than the inner tile."""
    (m_t, n_t, r_t), (m, n, r) = tile, full
    if dataflow == "output_stationary":
        n_new = np.clip(np.floor(np.sqrt(capacity)), n_t, n)
        return np.clip(np.floor(capacity / n_new), m_t, m), n_new, r
    whole_r = capacity >= r * n_t
    n_new = np.where(whole_r, np.clip(np.floor(capacity / r), n_t, n), n_t)
    r_new = np.where(whole_r, r, np.clip(np.floor(capacity / n_t), r_t, r))
    return m_t, n_new, r_new


def _traffic(dataflow: str, gemm: _Gemm, operand: str, tile: _Tile, *, at_array: bool) -> tuple[np.ndarray, np.ndarray]:
    """Elements per group over one boundary: (down = parent to child, up = child to parent)."""
    (tm, tn, tr), (m, n, r) = tile, gemm.full
    x_full = m * r  # the streamed operand as its im2col
    x = x_full if at_array else np.where(tr >= gemm.window, gemm.x_unique, x_full)
    zero = np.zeros_like(m)
    if dataflow == "output_stationary":
        return {"W": (gemm.s_elems * np.ceil(m / tm), zero), "I": (x * np.ceil(n / tn), zero), "O": (zero, gemm.o_elems)}[operand]
    r_tiles = np.ceil(r / tr)
    return {
        "W": (gemm.s_elems + zero, zero),
        "I": (x * np.ceil(n / tn), zero),
        "O": (gemm.o_elems * (r_tiles - 1), gemm.o_elems * r_tiles),
    }[operand]


def _first_tile_cycles(core: Core, tile: _Tile, word_bytes: int, operand: str) -> np.ndarray:
    """Cycles to load the first stationary array tile (weight-stationary) or drain the last (output-stationary)."""
    tm, tn, tr = tile
    elems = tm * tn if operand == "O" else tn * tr
    for level in core.levels:
        if operand in level.operands:
            bandwidth = (
                level.memory.write_bandwidth_bytes_per_cycle if operand == "O" else level.memory.read_bandwidth_bytes_per_cycle
            )
            return elems * word_bytes / bandwidth[:, None]
    return np.zeros_like(elems)


def simd_cost(core: Core, table: OpTable, index: np.ndarray, *, word_bytes: int) -> CoreOpCost:
    """Cost of element-wise, reduction, normalisation, softmax, pooling, layout and optimizer ops."""
    n_cfg = core.count.shape[0]
    shape = (n_cfg, len(index))
    ops = table.elementwise_ops[index][None, :]
    in_bytes = np.broadcast_to(table.in_elems[index][None, :] * word_bytes, shape)
    out_bytes = np.broadcast_to(table.o_elems[index][None, :] * word_bytes, shape)
    lanes = core.pes[:, None]
    compute = np.ceil(ops / lanes) * np.ones(shape)
    levels = _Levels(core, shape)
    for operand, moved in (("I", in_bytes), ("O", out_bytes)):
        holders = [i for i, level in enumerate(core.levels) if operand in level.operands]
        for i in holders:
            levels.reads[i] += moved
            levels.writes[i] += moved
    latency = np.maximum(compute, levels.cycles())
    busy = np.divide(ops, compute * lanes, out=np.zeros(shape), where=compute > 0)
    return CoreOpCost(
        latency_cycles=latency,
        compute_cycles=compute,
        utilization=busy,
        energy_mac_pj=ops * core.mac_energy_pj[:, None] * np.ones(shape),
        energy_level_pj=levels.energy_pj(),
        ext_in_bytes={"I": in_bytes.copy()},
        ext_write_bytes=out_bytes.copy(),
        core_shares=np.ones(shape),
    )
