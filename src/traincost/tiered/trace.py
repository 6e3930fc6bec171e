"""A training iteration as the tiered-memory simulator walks it: per op, compute time, accelerator energy,
and the off-chip bytes it reads and writes per tensor.

Built once per (Workload, system) from the HDA cost model (``traincost.cost``):

* **Compute.** MAC ops are split over the output channels of every MXU core (tensor parallelism over
  the chip's TensorCores), element-wise ops over its vector units; an op's compute time is its
  core-internal latency (MXU array, VMEM and CMEM bandwidth) at the system clock. Accelerator energy
  is MACs plus every on-chip level.
* **Off-chip traffic.** What the cost model leaves at the top of the on-chip hierarchy (CMEM) is the
  op's off-chip traffic: the stationary operand (weights) from each core's share, the streamed operand
  once (CMEM is shared) but once per pass when it does not fit on chip, outputs and partial sums per
  core. Tensors take the accelerator's word size (BF16).
* **On-chip forwarding.** An output read by the very next op and no larger than a quarter of CMEM stays
  on chip for that read (TM-Training section 4.3); if nothing else reads it, it never goes off chip.
* **Storage.** An updated parameter or optimizer state is written over its old value (same storage).

``Trace.repeated(n)`` chains ``n`` iterations: persistent tensors (weights, optimizer states, inputs)
keep their id, every other tensor gets a fresh one per iteration.
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from traincost.cost.core import ExternalPath, mac_cost, simd_cost
from traincost.cost.optable import OpTable, op_table
from traincost.errors import ConfigError
from traincost.hardware.load import HardwareError
from traincost.tiered.system import TieredSystem
from traincost.workload import LOOP_DIMS, Workload

__all__ = ["Trace", "build_trace", "NEVER"]

NEVER = 1 << 60
"""Next-use position of a tensor that is never used again."""

_FORWARD_FRACTION = 0.25  # of CMEM: the largest output kept on chip for the next op


@dataclass(frozen=True, slots=True)
class Trace:
    """Ops in execution order with their tensor traffic.

    Attributes:
        name: the workload.
        compute_s: per op, compute time on the chip.
        accel_energy_pj: per op, MAC and on-chip memory energy.
        signature: per op, an id shared by ops of the same kind, phase and loop dims (the repetition
            TM-Training's request timing monitor exploits).
        phase: per op, forward / backward / optimizer / recompute.
        reads: per op, ``(tensor, off-chip bytes)`` pairs it reads.
        writes: per op, ``(tensor, off-chip bytes)`` pairs it writes.
        size_bytes: per tensor, storage bytes.
        persistent: per tensor, lives across iterations (weights, optimizer states, the batch).
        accesses: per tensor, the sorted op positions that read or write it.
        ops_per_iteration: ops of one iteration (``len(compute_s)`` after ``repeated``).
        samples: samples (sequences) one iteration processes on this chip.
        seq_len: tokens per sample (TM-Training adjusts split ratios in steps of 1 / seq_len).
    """

    name: str
    compute_s: np.ndarray
    accel_energy_pj: np.ndarray
    signature: np.ndarray
    phase: np.ndarray
    reads: tuple[tuple[tuple[int, float], ...], ...]
    writes: tuple[tuple[tuple[int, float], ...], ...]
    size_bytes: np.ndarray
    persistent: np.ndarray
    accesses: tuple[tuple[int, ...], ...]
    ops_per_iteration: int
    samples: float
    seq_len: int

    def __len__(self) -> int:
        return len(self.compute_s)

    def next_use(self, tensor: int, after: int) -> int:
        """The first op position after ``after`` that touches ``tensor``; ``NEVER`` if none."""
        uses = self.accesses[tensor]
        i = bisect.bisect_right(uses, after)
        return uses[i] if i < len(uses) else NEVER

    def last_use(self, tensor: int) -> int:
        uses = self.accesses[tensor]
        return uses[-1] if uses else -1

    def live_intervals(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The tensors any op touches, and the first and last op position each is live at (persistent
        tensors: the whole trace)."""
        n = len(self)
        tensors = np.array([t for t, uses in enumerate(self.accesses) if uses], dtype=np.int64)
        first = np.array([self.accesses[t][0] for t in tensors], dtype=np.int64)
        last = np.array([self.accesses[t][-1] for t in tensors], dtype=np.int64)
        persistent = self.persistent[tensors]
        return tensors, np.where(persistent, 0, first), np.where(persistent, n - 1, last)

    def live_bytes(self) -> np.ndarray:
        """Per op, the bytes of live tensors (persistent tensors always live): what a memory must hold."""
        n = len(self)
        tensors, start, end = self.live_intervals()
        delta = np.zeros(n + 1)
        np.add.at(delta, start, self.size_bytes[tensors])
        np.add.at(delta, end + 1, -self.size_bytes[tensors])
        return np.cumsum(delta[:n])

    def live_peak_bytes(self) -> float:
        """The largest sum of live tensor bytes at any op."""
        return float(self.live_bytes().max()) if len(self) else 0.0

    def repeated(self, iterations: int) -> Trace:
        """``iterations`` copies of this (single-iteration) trace, one after the other."""
        n_tensors = len(self.size_bytes)
        offsets = [i * n_tensors for i in range(iterations)]

        def rename(pairs: tuple[tuple[int, float], ...], offset: int) -> tuple[tuple[int, float], ...]:
            return tuple((t if self.persistent[t] else t + offset, b) for t, b in pairs)

        reads = tuple(rename(p, off) for off in offsets for p in self.reads)
        writes = tuple(rename(p, off) for off in offsets for p in self.writes)
        size = np.tile(self.size_bytes, iterations)
        return Trace(
            name=self.name,
            compute_s=np.tile(self.compute_s, iterations),
            accel_energy_pj=np.tile(self.accel_energy_pj, iterations),
            signature=np.tile(self.signature, iterations),
            phase=np.tile(self.phase, iterations),
            reads=reads,
            writes=writes,
            size_bytes=size,
            # persistent tensors keep the ids of the first copy
            persistent=np.concatenate([self.persistent, np.zeros(n_tensors * (iterations - 1), dtype=bool)]),
            accesses=_accesses(reads, writes, len(size)),
            ops_per_iteration=self.ops_per_iteration,
            samples=self.samples,
            seq_len=self.seq_len,
        )


def build_trace(workload: Workload, system: TieredSystem, *, seq_len: int | None = None) -> Trace:
    """The trace of one training iteration of ``workload`` on ``system``.

    Args:
        workload: a training step (all phases).
        system: the chip and its tiered memory.
        seq_len: tokens per sample; default the workload's ``seq_len`` metadata, else the second
            dimension of its ``input_shape`` (batch × sequence).

    Raises:
        ConfigError: the workload has no ops, or no sequence length is known.
        HardwareError: an op kind that no core of the accelerator runs.
    """
    name = workload.meta.get("model", "workload")
    table = op_table(workload)
    if len(table) == 0:
        raise ConfigError(f"workload {name}: no ops to simulate")
    seq = seq_len if seq_len is not None else _seq_len(workload.meta)
    if seq < 1:
        raise ConfigError(f"workload {name}: no seq_len in its metadata; pass seq_len (tokens per sample)")
    hw = system.hardware
    word = hw.word_bytes
    compute_cycles = np.zeros(len(table))
    energy = np.zeros(len(table))
    traffic = _Traffic(table, word)
    for core in hw.cores:
        index = np.flatnonzero(np.isin(table.kind, core.runs))
        if not len(index):
            continue
        count = float(core.count[0])
        # the core's top memory is written by what arrives and read by what leaves (mac_cost leaves both to us)
        top_pj_per_byte = 8.0 * np.array([core.top.write_energy_pj_per_bit[0], core.top.read_energy_pj_per_bit[0]])
        if core.dataflow == "simd":
            cost = simd_cost(core, table, index)
            compute_cycles[index] = cost.latency_cycles[0] / count
            arriving, leaving = cost.ext_in_bytes["I"][0], cost.ext_write_bytes[0]
            energy[index] = cost.energy_mac_pj[0] + sum(e[0] for e in cost.energy_level_pj.values())
            energy[index] += arriving * top_pj_per_byte[0] + leaving * top_pj_per_byte[1]
            traffic.simd(index, arriving, leaving)
        else:
            cost = mac_cost(core, table, index, split=np.array([count]), external=ExternalPath.of(hw, core), objective="edp")
            compute_cycles[index] = cost.latency_cycles[0]
            busy = cost.core_shares[0]  # the op's work in core shares: fewer than `count` when the split dimension is smaller
            arriving = sum(b[0] for b in cost.ext_in_bytes.values())
            leaving = cost.ext_write_bytes[0]
            energy[index] = busy * (
                cost.energy_mac_pj[0]
                + sum(e[0] for e in cost.energy_level_pj.values())
                + arriving * top_pj_per_byte[0]
                + leaving * top_pj_per_byte[1]
            )
            traffic.mac(index, busy, cost.ext_in_bytes, cost.ext_write_bytes[0])
    unplaced = [str(k) for k in sorted(set(table.kind) - {k for c in hw.cores for k in c.runs})]
    if unplaced:
        raise HardwareError(f"{hw.source}: no core runs op kinds {unplaced} of workload {name}")
    reads, writes = traffic.forward_on_chip(system.onchip_bytes * _FORWARD_FRACTION)
    size = table.tensor_elems.astype(np.float64) * word
    persistent = table.tensor_persistent.copy()
    storage = _storage(workload, len(size))
    reads = tuple(tuple((int(storage[t]), b) for t, b in pairs) for pairs in reads)
    writes = tuple(tuple((int(storage[t]), b) for t, b in pairs) for pairs in writes)
    return Trace(
        name=name,
        compute_s=compute_cycles / system.clock_hz,
        accel_energy_pj=energy,
        signature=_signatures(table),
        phase=table.phase.astype(str),
        reads=reads,
        writes=writes,
        size_bytes=size,
        persistent=persistent,
        accesses=_accesses(reads, writes, len(size)),
        ops_per_iteration=len(table),
        samples=float(workload.meta.get("samples_per_chip", workload.meta.get("batch", 1)) or 1),
        seq_len=seq,
    )


class _Traffic:
    """Per op, off-chip bytes read per input tensor and written per output tensor."""

    def __init__(self, table: OpTable, word: int) -> None:
        self.table = table
        self.word = word
        self.reads: list[dict[int, float]] = [{} for _ in range(len(table))]
        self.writes: list[dict[int, float]] = [{} for _ in range(len(table))]

    def _share(self, i: int, ids: tuple[int, ...], total: float, into: list[dict[int, float]]) -> None:
        """Split ``total`` bytes over ``ids`` in proportion to their sizes."""
        sizes = np.array([self.table.tensor_elems[t] for t in ids], dtype=np.float64)
        if not len(ids) or sizes.sum() <= 0:
            return
        for t, part in zip(ids, total * sizes / sizes.sum(), strict=True):
            into[i][t] = into[i].get(t, 0.0) + float(part)

    def simd(self, index: np.ndarray, in_bytes: np.ndarray, out_bytes: np.ndarray) -> None:
        for j, i in enumerate(index):
            self._share(i, self.table.inputs[i], float(in_bytes[j]), self.reads)
            self._share(i, self.table.outputs[i], float(out_bytes[j]), self.writes)

    def mac(self, index: np.ndarray, cores: np.ndarray, ext_in: dict[str, np.ndarray], ext_write: np.ndarray) -> None:
        """Traffic of MAC ops ``index``, each filling ``cores[j]`` cores' shares."""
        table = self.table
        for j, i in enumerate(index):
            x, s = int(table.x_tensor[i]), int(table.s_tensor[i])
            if s >= 0:
                self.reads[i][s] = self.reads[i].get(s, 0.0) + cores[j] * float(ext_in["W"][0][j])
            if x >= 0:  # CMEM is shared: the streamed operand comes in once for both cores
                self.reads[i][x] = self.reads[i].get(x, 0.0) + float(ext_in["I"][0][j])
            others = tuple(t for t in table.inputs[i] if t not in (x, s))
            for t in others:
                self.reads[i][t] = self.reads[i].get(t, 0.0) + float(table.tensor_elems[t] * self.word)
            # partial sums that went off chip come back from the output's tier: count them as output traffic
            written = cores[j] * (float(ext_write[j]) + float(ext_in.get("O", np.zeros((1, len(index))))[0][j]))
            self._share(i, table.outputs[i], written, self.writes)

    def forward_on_chip(self, limit_bytes: float) -> tuple[tuple[tuple[tuple[int, float], ...], ...], ...]:
        """Reads and writes after keeping small outputs on chip for the next op."""
        table = self.table
        reads = [dict(r) for r in self.reads]
        writes = [dict(w) for w in self.writes]
        readers: dict[int, list[int]] = {}
        for i, ids in enumerate(table.inputs):
            for t in ids:
                readers.setdefault(t, []).append(i)
        for i, ids in enumerate(table.outputs):
            for t in ids:
                users = readers.get(t, [])
                if not users or users[0] != i + 1 or table.tensor_elems[t] * self.word > limit_bytes:
                    continue
                reads[i + 1].pop(t, None)
                if len(users) == 1 and not table.tensor_step_output[t] and not table.tensor_persistent[t]:
                    writes[i].pop(t, None)
        return (
            tuple(tuple((t, b) for t, b in r.items() if b > 0) for r in reads),
            tuple(tuple((t, b) for t, b in w.items() if b > 0) for w in writes),
        )


def _seq_len(meta: Mapping[str, str]) -> int:
    if meta.get("seq_len"):
        return int(meta["seq_len"])
    shape = json.loads(meta.get("input_shape", "[]") or "[]")
    return int(shape[1]) if len(shape) == 2 else 0


def _storage(workload: Workload, n_tensors: int) -> np.ndarray:
    """Per tensor id, the tensor whose storage it uses: an update is written over the tensor it updates."""
    storage = np.arange(n_tensors)
    tensors = workload.tensors
    updated = tensors[tensors["updates"] >= 0]
    storage[updated["tensor"].to_numpy()] = updated["updates"].to_numpy()
    return storage


def _signatures(table: OpTable) -> np.ndarray:
    keys = list(zip(table.kind, table.phase, *(table.dims[d] for d in LOOP_DIMS), table.o_elems, strict=True))
    ids: dict[tuple, int] = {}
    return np.array([ids.setdefault(key, len(ids)) for key in keys], dtype=np.int64)


def _accesses(
    reads: tuple[tuple[tuple[int, float], ...], ...], writes: tuple[tuple[tuple[int, float], ...], ...], n_tensors: int
) -> tuple[tuple[int, ...], ...]:
    uses: list[list[int]] = [[] for _ in range(n_tensors)]
    for i, (r, w) in enumerate(zip(reads, writes, strict=True)):
        for t, _ in r:
            uses[t].append(i)
        for t, _ in w:
            if not uses[t] or uses[t][-1] != i:
                uses[t].append(i)
    return tuple(tuple(u) for u in uses)
