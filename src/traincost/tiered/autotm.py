"""AutoTM's placement as an integer program (Hildebrand et al., ASPLOS'20; TM-Training section 5.1).

AutoTM weighs, for each op, the four combinations of where its inputs are read from and where its
outputs are written (Tier 1 or Tier 2) and picks the combination that runs fastest within Tier 1's
capacity. We write that choice as an integer program (OR-Tools CP-SAT) over op *types*: ops of the same kind,
phase and loop dims (the repeated layers of a transformer) share one choice, which keeps the
program a few hundred variables for PaLM's 7,000 ops.

Variables:

* ``w[c]`` — the tensors of class ``c`` live in Tier 1 (the "out" case of the op type that writes
  them; for persistent tensors, the class of their first reader's input slot);
* ``a[s]`` — op type ``s`` reads its inputs from Tier 1 (the "in" case): inputs living in Tier 2 are
  promoted first (``p ≥ a − w``); otherwise they are read where they live, from Tier 2 directly when
  ``w = 0`` (``d ≥ 1 − a − w``).

Objective: the stall time summed over ops — per op type, ``stall ≥ Tier 2 busy time − prefetch
window`` with the Tier 2 time of direct reads, promotions and Tier 2 writes — plus a thousandth of
the Tier 2 time itself, so that of two equally fast plans the one that uses Tier 2 less wins.
Capacity: at the peaks of live bytes (the largest within every run of ``PEAK_STRIDE`` ops), the
Tier 1 classes' live bytes fit in Tier 1, and a class that alone outgrows Tier 1 stays in Tier 2.
Promoted copies are transient and not counted; the simulator evicts (LRU) if the plan overflows.
After the solve, every class left in Tier 2 that still fits is moved to Tier 1 (which never slows a plan
down), so a plan stopped before it is proved optimal loses nothing there.

CP-SAT runs on one worker with a fixed seed and a limit on deterministic time, so the same trace gives
the same plan on every run. Its coefficients are integers: Tier 2 times in nanoseconds, sizes in bytes.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np
from ortools.sat.python import cp_model

from traincost.errors import ConfigError
from traincost.tiered.system import TieredSystem
from traincost.tiered.trace import Trace

__all__ = ["AutoTMPlan", "plan_autotm", "PEAK_STRIDE"]

PEAK_STRIDE = 32
"""Capacity is enforced at the op of largest live bytes within every run of this many ops."""
_NS_PER_S = 1e9  # CP-SAT needs integers: times in whole nanoseconds, sizes in bytes
_STALL_WEIGHT = 1000  # a nanosecond of stall weighs as much as a microsecond of Tier 2 time (the tie-break)


@dataclass(frozen=True, slots=True)
class AutoTMPlan:
    """Per tensor of the trace: lives in Tier 1; per op: reads its inputs from Tier 1; and the solve."""

    tier1: np.ndarray
    promote: np.ndarray
    status: str
    objective_s: float
    variables: int

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        return self.tier1, self.promote


def plan_autotm(trace: Trace, system: TieredSystem, *, tier1_bytes: float, time_limit_s: float = 30.0) -> AutoTMPlan:
    """Solve AutoTM's placement for one iteration of ``trace`` with ``tier1_bytes`` of Tier 1.

    ``time_limit_s`` bounds CP-SAT's deterministic time (close to seconds on one core): a limit on work,
    not on the clock, so a plan stopped by it is the same on every run and machine.

    Raises:
        ConfigError: the solver finds no feasible plan (cannot happen: all-Tier-2 is feasible).
    """
    producer_class = _tensor_classes(trace)
    classes = sorted(set(producer_class.values()))
    index = {c: i for i, c in enumerate(classes)}
    reads, writes, window, count = _per_op_type(trace, producer_class)
    model = cp_model.CpModel()
    w = [model.new_bool_var(f"w{i}") for i in range(len(classes))]
    a = {s: model.new_bool_var(f"a{s}") for s in sorted(count)}
    tier2 = system.tier2
    objective = []
    for s, a_s in a.items():
        busy = []  # (ns of Tier 2 per op of this type, variable)
        constant_ns = 0
        for c, (read_bytes, size_bytes) in reads[s].items():
            d = model.new_bool_var(f"d{s}_{index[c]}")
            p = model.new_bool_var(f"p{s}_{index[c]}")
            model.add(d + a_s + w[index[c]] >= 1)
            model.add(p + w[index[c]] >= a_s)
            busy += [(_ns(read_bytes / tier2.read_bytes_per_s), d), (_ns(size_bytes / tier2.read_bytes_per_s), p)]
        for c, written in writes[s].items():
            write_ns = _ns(written / tier2.write_bytes_per_s)
            constant_ns += write_ns
            busy.append((-write_ns, w[index[c]]))
        excess_ns = constant_ns - _ns(window[s])
        stall = model.new_int_var(0, max(0, excess_ns + sum(coef for coef, _ in busy if coef > 0)), f"stall{s}")
        model.add(stall >= sum(coef * var for coef, var in busy) + excess_ns)
        objective.append(count[s] * _STALL_WEIGHT * stall)
        objective += [count[s] * coef * var for coef, var in busy]  # the tie-break: Tier 2 time whether or not it stalls
    model.minimize(sum(objective))
    intervals = _class_intervals(trace, producer_class, index)
    rows = _peak_rows(trace, intervals, len(index))
    fits = _class_peaks(trace, intervals, len(index)) <= tier1_bytes  # a class that alone outgrows Tier 1 stays in Tier 2
    for row in rows:
        model.add(sum(bytes_ * w[i] for i, bytes_ in row.items()) <= int(tier1_bytes))
    for i in np.flatnonzero(~fits):
        model.add(w[int(i)] == 0)
    solver = cp_model.CpSolver()
    solver.parameters.max_deterministic_time = time_limit_s
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = 0
    solver.parameters.linearization_level = 2  # the full LP relaxation: proves most plans optimal in seconds
    status = solver.solve(model)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        raise ConfigError(f"AutoTM on {trace.name}: the solver found no plan ({solver.status_name(status)})")
    chosen = _polish(np.array([solver.boolean_value(v) for v in w]), rows, fits, tier1_bytes)
    tier1 = np.array([chosen[index[producer_class[t]]] if t in producer_class else False for t in range(len(trace.size_bytes))])
    promote = np.array([solver.boolean_value(a[int(s)]) for s in trace.signature])
    return AutoTMPlan(
        tier1=tier1,
        promote=promote,
        status="optimal" if status == cp_model.OPTIMAL else "feasible",
        objective_s=float(solver.objective_value) / (_STALL_WEIGHT * _NS_PER_S),
        variables=len(model.proto.variables),
    )


def _ns(seconds: float) -> int:
    return round(seconds * _NS_PER_S)


def _polish(chosen: np.ndarray, rows: list[dict[int, int]], fits: np.ndarray, tier1_bytes: float) -> np.ndarray:
    """Put in Tier 1 every class the solver left out that still fits: no stall or Tier 2 time grows when a
    class moves to Tier 1, so this only removes what the solver's optimality gap let through."""
    matrix = np.zeros((len(rows), len(chosen)))
    for r, row in enumerate(rows):
        for c, size in row.items():
            matrix[r, c] = size
    load = matrix @ chosen
    polished = chosen.copy()
    for c in np.argsort(matrix.max(axis=0) if len(rows) else np.zeros(len(chosen)), kind="stable"):
        if not polished[c] and fits[c] and np.all(load + matrix[:, c] <= tier1_bytes):
            polished[c] = True
            load += matrix[:, c]
    return polished


def _per_op_type(
    trace: Trace, classes: dict[int, tuple[int, ...]]
) -> tuple[
    dict[int, dict[tuple[int, ...], tuple[float, float]]],
    dict[int, dict[tuple[int, ...], float]],
    dict[int, float],
    dict[int, int],
]:
    """Per op type, averaged over its ops: bytes read (and tensor bytes) per input class, bytes written per
    output class, the prefetch window; and how many ops it has."""
    count: dict[int, int] = defaultdict(int)
    reads: dict[int, dict[tuple[int, ...], list[float]]] = defaultdict(lambda: defaultdict(lambda: [0.0, 0.0]))
    writes: dict[int, dict[tuple[int, ...], float]] = defaultdict(lambda: defaultdict(float))
    window: dict[int, float] = defaultdict(float)
    for k in range(len(trace)):
        s = int(trace.signature[k])
        count[s] += 1
        window[s] += float(trace.compute_s[k - 1]) if k else 0.0
        for t, b in trace.reads[k]:
            reads[s][classes[t]][0] += b
            reads[s][classes[t]][1] += float(trace.size_bytes[t])
        for t, b in trace.writes[k]:
            writes[s][classes[t]] += b
    return (
        {s: {c: (v[0] / count[s], v[1] / count[s]) for c, v in per.items()} for s, per in reads.items()}
        | {s: {} for s in count if s not in reads},
        {s: {c: v / count[s] for c, v in per.items()} for s, per in writes.items()} | {s: {} for s in count if s not in writes},
        {s: window[s] / count[s] for s in count},
        dict(count),
    )


def _tensor_classes(trace: Trace) -> dict[int, tuple[int, ...]]:
    """Per tensor, its class: (op type of its writer, output slot); for persistent tensors
    (-1, op type of its first reader, input slot), or (-2, op type of its first access)."""
    classes: dict[int, tuple[int, ...]] = {}
    for k in range(len(trace)):
        s = int(trace.signature[k])
        for slot, (t, _) in enumerate(trace.writes[k]):
            if not trace.persistent[t]:
                classes.setdefault(t, (s, slot))
        for slot, (t, _) in enumerate(trace.reads[k]):
            classes.setdefault(t, (-1, s, slot))
    for t in range(len(trace.size_bytes)):
        if t not in classes and trace.accesses[t]:
            classes[t] = (-2, int(trace.signature[trace.accesses[t][0]]))
    return classes


_Intervals = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]  # class index, bytes, first and last live op


def _class_intervals(trace: Trace, classes: dict[int, tuple[int, ...]], index: dict[tuple[int, ...], int]) -> _Intervals:
    """Of every classed tensor: its class index, size and first and last live op (``Trace.live_intervals``)."""
    tensors, start, end = trace.live_intervals()
    keep = np.array([int(t) in classes for t in tensors], dtype=bool)
    tensors, start, end = tensors[keep], start[keep], end[keep]
    cls = np.array([index[classes[int(t)]] for t in tensors], dtype=np.int64)
    return cls, trace.size_bytes[tensors], start, end


def _class_peaks(trace: Trace, intervals: _Intervals, n_classes: int) -> np.ndarray:
    """Per class, the most bytes of it ever live at once."""
    cls, size, start, end = intervals
    delta = np.zeros((n_classes, len(trace) + 1))
    np.add.at(delta, (cls, start), size)
    np.add.at(delta, (cls, end + 1), -size)
    return np.cumsum(delta, axis=1).max(axis=1)


def _peak_rows(trace: Trace, intervals: _Intervals, n_classes: int) -> list[dict[int, int]]:
    """Live bytes per class at the peak op of every run of ``PEAK_STRIDE`` ops."""
    n = len(trace)
    cls, size, start, end = intervals
    live = trace.live_bytes()
    rows = []
    for begin in range(0, n, PEAK_STRIDE):
        k = begin + int(np.argmax(live[begin : begin + PEAK_STRIDE]))
        mask = (start <= k) & (end >= k)
        per_class = np.bincount(cls[mask], weights=size[mask], minlength=n_classes)
        rows.append({int(c): int(per_class[c]) for c in np.flatnonzero(per_class)})
    return rows
