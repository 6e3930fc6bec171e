"""What running a fused group tile by tile adds to the cost of its MAC ops.

A fused group is cut into tiles (:mod:`traincost.schedule.fusion_memory`), and each tile of a MAC op is a
computation node of its own, as Stream costs it (each node is mapped on its core by ZigZag apart from the others).
Against the op run whole, that adds two things, both charged here per op and configuration:

* **the halo, read again.** A convolution cut into row tiles reads, for every tile, the input rows its windows
  touch: ``(b - 1) · SY + (FY - 1) · DY + 1`` for ``b`` output rows. Tiles side by side share
  ``(FY - 1) · DY + 1 - SY`` of them, which the op run whole reads once; the tiles read them again out of the
  core's top memory, where the group keeps them (``fusion_memory``: the halo rows it holds). Extra bytes: the
  input times ``r · span(OY / r) / span(OY) - 1`` for ``r`` row tiles (``optable.window_span``). The reads overlap
  the compute (the streamed operand's port is not the bottleneck of a weight-stationary array), so they cost
  energy, not cycles.
* **the weights, loaded again.** A weight-stationary core keeps an op's weights in the level below its top memory
  while inputs stream past. Where the core's share of the weights fits there it stays across the tiles; where it
  does not, every tile passes through every weight block again: ``tiles - 1`` more loads of the core's share from
  the top memory into that level, at the top's read bandwidth, while the array waits (the array cannot work on
  weights it has not loaded).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from traincost.cost.optable import OpTable, window_span
from traincost.hardware.spec import HardwareSpec

__all__ = ["TileOverhead"]

_BITS = 8.0
_WINDOWED = ("conv", "conv_dgrad")


@dataclass(frozen=True, slots=True)
class TileOverhead:
    """Per (configuration, op): the bytes a tiled op reads again (``halo_bytes``, ``reload_bytes``), the cycles it
    waits for its weights (``cycles``) and the energy of both (``energy_pj``, and per memory ``by_memory``)."""

    halo_bytes: np.ndarray
    reload_bytes: np.ndarray
    cycles: np.ndarray
    energy_pj: np.ndarray
    by_memory: dict[str, np.ndarray]

    @classmethod
    def of(
        cls,
        table: OpTable,
        hardware: HardwareSpec,
        *,
        core_of: np.ndarray,
        split: np.ndarray,
        op_tiles: np.ndarray,
        op_row_tiles: np.ndarray,
    ) -> TileOverhead:
        """The overhead of every op of ``table`` at every configuration of ``hardware``, where each op runs in
        ``op_tiles`` tiles of which ``op_row_tiles`` along rows ((configurations, ops); 1 for an op run whole);
        ``split`` per op: its output channels are split over every instance of its core."""
        shape = op_tiles.shape
        word = hardware.word_bytes
        halo, reload, cycles, energy = (np.zeros(shape) for _ in range(4))
        by_memory = {name: np.zeros(shape) for name in hardware.memories}
        tiled = (op_tiles > 1).any(axis=0) & table.is_mac
        for k, core in enumerate(hardware.cores):
            ops = np.flatnonzero(tiled & (core_of == k))
            if not len(ops):
                continue
            top = core.top
            read_pj = _BITS * top.read_energy_pj_per_bit[:, None]
            halo[:, ops] = _halo_bytes(table, ops, op_row_tiles[:, ops], word)
            below = [level.memory for level in core.levels[:-1] if "W" in level.operands]
            if below:
                inner = below[-1]
                shares = np.where(split[ops][None, :], np.asarray(core.count, dtype=np.float64)[:, None], 1.0)
                share_bytes = table.s_elems[ops] * word / shares
                room = (inner.size_bytes * inner.instances)[:, None]
                again = (op_tiles[:, ops] - 1) * share_bytes * (share_bytes > room)
                reload[:, ops] = again * shares
                cycles[:, ops] = again / top.read_bandwidth_bytes_per_cycle[:, None]
                write_pj = _BITS * inner.write_energy_pj_per_bit[:, None] * reload[:, ops]
                by_memory[inner.name][:, ops] += write_pj
                energy[:, ops] += write_pj
            top_pj = read_pj * (halo[:, ops] + reload[:, ops])
            by_memory[top.name][:, ops] += top_pj
            energy[:, ops] += top_pj
        return cls(halo_bytes=halo, reload_bytes=reload, cycles=cycles, energy_pj=energy, by_memory=by_memory)

    def choosing(self, other: TileOverhead, one: np.ndarray) -> TileOverhead:
        """This overhead where ``one`` ((configurations, ops)) is False, ``other``'s where it is True."""
        return TileOverhead(
            halo_bytes=np.where(one, other.halo_bytes, self.halo_bytes),
            reload_bytes=np.where(one, other.reload_bytes, self.reload_bytes),
            cycles=np.where(one, other.cycles, self.cycles),
            energy_pj=np.where(one, other.energy_pj, self.energy_pj),
            by_memory={name: np.where(one, other.by_memory[name], values) for name, values in self.by_memory.items()},
        )


def _halo_bytes(table: OpTable, ops: np.ndarray, row_tiles: np.ndarray, word: int) -> np.ndarray:
    """(configurations, ops): the input bytes the row tiles of windowed ops ``ops`` read beyond the op run whole."""
    extra = np.zeros(row_tiles.shape)
    for j, i in enumerate(ops.tolist()):
        x = int(table.x_tensor[i])
        if table.kind[i] not in _WINDOWED or x < 0:
            continue
        rows, stride = int(table.dims["OY"][i]), int(table.stride[i][0])
        dilation, taps = int(table.dilation[i][0]), int(table.dims["FY"][i])
        whole = window_span(stride, rows, dilation, taps)
        for r in np.unique(row_tiles[:, j]).astype(int).tolist():
            if r > 1 and rows % r == 0:
                factor = r * window_span(stride, rows // r, dilation, taps) / whole
                extra[row_tiles[:, j] == r, j] = table.tensor_elems[x] * word * (factor - 1.0)
    return extra
