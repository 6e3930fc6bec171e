"""A trace as the simulator walks it: repeated for the warm-up iteration, with the per-op and per-tensor
facts every simulation of it reads, computed once and shared by all of them.

A study simulates one trace some sixty times (every policy at every Tier 1 size). What depends only on
the trace — its repetition, which tensors each op touches and releases, the live and written bytes the
TM-Training policies look ahead with, the order persistent tensors are placed in — is built here once,
the first time a simulation asks for it, instead of once per simulation. Per-tensor and per-op numbers
the simulator reads one at a time are plain Python lists (an element of a NumPy array is slower to
read and to compute with; the float64 values are the same).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from traincost.tiered.trace import Trace

__all__ = ["Walk"]


@dataclass(frozen=True, eq=False)
class Walk:
    """``iterations`` back-to-back iterations of a one-iteration trace, ready to simulate.

    Attributes:
        base: the one-iteration trace.
        trace: ``base.repeated(iterations)``.
        size_bytes: per tensor of ``trace``, storage bytes.
        persistent: per tensor, lives across iterations.
        compute_s: per op of ``trace``, compute time.
        accel_energy_pj: per op, MAC and on-chip memory energy.
        touched: per op, the tensors it reads or writes (none of them may be evicted while it runs).
        released: per op, the non-persistent tensors it uses for the last time, in the order they leave memory.
    """

    base: Trace
    trace: Trace
    size_bytes: list[float]
    persistent: list[bool]
    compute_s: list[float]
    accel_energy_pj: list[float]
    touched: tuple[frozenset[int], ...]
    released: tuple[tuple[int, ...], ...]

    @classmethod
    def of(cls, base: Trace, iterations: int = 2) -> Walk:
        """Walk ``iterations`` iterations of ``base`` (the last one is the steady one the simulator reports)."""
        trace = base.repeated(iterations)
        persistent = trace.persistent.tolist()
        touched, released = [], []
        for k, (reads, writes) in enumerate(zip(trace.reads, trace.writes, strict=True)):
            touched.append(frozenset(t for t, _ in reads) | frozenset(t for t, _ in writes))
            used = {t for t, _ in reads} | {t for t, _ in writes}
            released.append(tuple(t for t in used if not persistent[t] and trace.accesses[t][-1] == k))
        return cls(
            base=base,
            trace=trace,
            size_bytes=trace.size_bytes.tolist(),
            persistent=persistent,
            compute_s=trace.compute_s.tolist(),
            accel_energy_pj=trace.accel_energy_pj.tolist(),
            touched=tuple(touched),
            released=tuple(released),
        )

    @cached_property
    def live_peak_bytes(self) -> float:
        """The base trace's largest sum of live tensor bytes (``Trace.live_peak_bytes``)."""
        return self.base.live_peak_bytes()

    @cached_property
    def live_bytes(self) -> np.ndarray:
        """Per op of ``trace``, the bytes of live tensors (``Trace.live_bytes``)."""
        return self.trace.live_bytes()

    @cached_property
    def written_bytes(self) -> np.ndarray:
        """Bytes written before each op of ``trace`` (tensor sizes; one more entry than ops)."""
        sizes = self.trace.size_bytes
        return np.concatenate([[0.0], np.cumsum([sum(sizes[t] for t, _ in pairs) for pairs in self.trace.writes])])

    @cached_property
    def requested_bytes(self) -> list[float]:
        """Per op of ``trace``, the off-chip bytes requested while it computes: its writes and the next op's reads (the
        next op's prefetch window is this op's compute)."""
        written = [sum(b for _, b in pairs) for pairs in self.trace.writes]
        read = [sum(b for _, b in pairs) for pairs in self.trace.reads]
        return [w + (read[k + 1] if k + 1 < len(read) else 0.0) for k, w in enumerate(written)]

    @cached_property
    def reads_from(self) -> dict[int, tuple[list[int], np.ndarray]]:
        """Per tensor read in ``trace``: the ops that read it, and the bytes still to be read from each of those reads on."""
        readers: dict[int, list[tuple[int, float]]] = {}
        for k, pairs in enumerate(self.trace.reads):
            for t, b in pairs:
                readers.setdefault(t, []).append((k, b))
        return {t: ([k for k, _ in r], np.cumsum([b for _, b in r][::-1])[::-1]) for t, r in readers.items()}

    @cached_property
    def reads_in_order(self) -> tuple[list[tuple[int, int, float]], list[int]]:
        """Every read of ``trace`` as (op, tensor, bytes), op by op; and per op (and one past the last) where its reads start."""
        reads: list[tuple[int, int, float]] = []
        first = []
        for k, pairs in enumerate(self.trace.reads):
            first.append(len(reads))
            reads += [(k, t, b) for t, b in pairs]
        first.append(len(reads))
        return reads, first

    @cached_property
    def signature(self) -> list[int]:
        """Per op of ``trace``, its signature (``Trace.signature``)."""
        return self.trace.signature.tolist()

    @cached_property
    def persistent_by_first_use(self) -> tuple[int, ...]:
        """The persistent tensors, those used first first (ties by id)."""
        trace = self.trace
        return tuple(int(t) for t in sorted(np.flatnonzero(trace.persistent), key=lambda t: trace.next_use(int(t), -1)))
