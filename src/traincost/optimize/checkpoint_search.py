"""Which activations to recompute: the costs of each, the MILP of MONET equation 6, and the evaluation
of a recompute choice with the full cost model (rewrite → fusion → schedule).

Candidates are the saved activations made by forward ops (batch inputs are never dropped). For each
candidate ``a``: ``m_a`` = its bytes at the accelerator's word size (FP16 on our templates), and
``r_a`` = the FLOPs (2 per MAC plus element-wise operations) of recomputing it alone, every other
activation kept. Equation 6 keeps ``x_a = 1`` to minimise ``Σ r_a (1 - x_a)`` subject to
``Σ m_a x_a <= M``: a linear model that assumes recomputations add up, which the fused-schedule
evaluation does not.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from multiprocessing import get_context
from multiprocessing.pool import Pool
from typing import Literal

import numpy as np
import pandas as pd
from ortools.sat.python import cp_model

from traincost.cost.optable import OpTable
from traincost.errors import ConfigError, GraphError
from traincost.hardware.spec import HardwareSpec
from traincost.optimize.checkpoint import RecomputePlanner, saved_activations, workload_nodes
from traincost.optimize.fusion import FusionParts, FusionProblem, FusionResult, solve_fusion
from traincost.optimize.recompute_table import RecomputeTables, Rewrite
from traincost.schedule import SchedulePlan, schedule
from traincost.schedule.plan import DEFAULT_RESIDENT_FRACTION
from traincost.schedule.scheduler import OpCosts
from traincost.workload import STEP_PHASES, Workload

__all__ = [
    "activation_costs",
    "solve_checkpoint_milp",
    "CheckpointEvaluator",
    "first_feature_maps",
    "additivity_study",
    "milp_sweep",
]


def activation_costs(workload: Workload, *, word_bytes: int) -> pd.DataFrame:
    """One row per candidate activation, in forward order: ``name``, ``bytes`` (m_a), ``recompute_flops`` (r_a),
    ``recompute_ops``. Activations that only a random op (dropout) can rebuild are not candidates."""
    nodes, external = workload_nodes(workload)
    planner = RecomputePlanner(nodes, external=external)
    ops = workload.ops.sort_values("op").reset_index(drop=True)
    flops = (2 * ops["macs"] + ops["elementwise_ops"]).to_numpy()
    elements = workload.tensors.set_index("name")
    rows = []
    for name in saved_activations(nodes):
        if name in external:
            continue
        try:
            plan = planner.plan([name])
        except GraphError:
            continue  # behind a random op (a dropout mask): it stays saved
        chain = [i for group in plan.insertions.values() for i in group]
        size = int(elements.loc[name, "bytes"] // elements.loc[name, "dtype_bytes"]) * word_bytes
        rows.append({"name": name, "bytes": size, "recompute_flops": int(flops[chain].sum()), "recompute_ops": len(chain)})
    return pd.DataFrame(rows)


def solve_checkpoint_milp(costs: pd.DataFrame, *, budget_bytes: float, time_limit_s: float = 30.0) -> list[str]:
    """Equation 6 with OR-Tools CP-SAT: the activations to recompute under a memory budget.

    Raises:
        ConfigError: the budget is not a number, is negative (no choice fits), or the solver finds
            nothing in time.
    """
    if not np.isfinite(budget_bytes):
        raise ConfigError(f"checkpoint budget {budget_bytes:g} bytes: expected a finite number of bytes >= 0")
    if budget_bytes < 0:
        raise ConfigError(
            f"checkpoint budget {budget_bytes:g} bytes: no choice fits a negative budget (smallest: 0, all recomputed)"
        )
    model = cp_model.CpModel()
    keep = [model.new_bool_var(name) for name in costs["name"]]
    model.add(sum(int(m) * x for m, x in zip(costs["bytes"], keep, strict=True)) <= int(budget_bytes))
    model.minimize(sum(int(r) * (1 - x) for r, x in zip(costs["recompute_flops"], keep, strict=True)))
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = time_limit_s
    solver.parameters.num_workers = 1
    status = solver.solve(model)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        raise ConfigError(f"checkpoint MILP at {budget_bytes:g} bytes: {solver.status_name(status)}")
    return [name for name, x in zip(costs["name"], keep, strict=True) if not solver.boolean_value(x)]


FusionScope = Literal["full", "local"]


@dataclass
class CheckpointEvaluator:
    """Latency, energy and activation memory of a recompute choice on one hardware configuration.

    Each evaluation rewrites the workload (``RecomputeTables``: the base table patched), fuses the
    rewritten graph and schedules it with the fused groups. Fusion is re-solved after every rewrite, as
    MONET does, either over the whole graph (``fusion="full"``) or only where the rewrite changed it
    (``"local"``): the recompute clones, and the base graph's groups that hold an op whose inputs or
    readers changed, are covered again by CP-SAT; every other group keeps the base graph's optimal
    fusion, which stays valid (its ops, their memory, tiling and exits are unchanged). The changed
    region is covered part by part (``FusionParts``: parts no candidate spans, each solved once however
    many choices meet it). Results are cached by choice; CP-SAT runs on one worker so the same choice
    always gets the same fusion.
    """

    workload: Workload
    hardware: HardwareSpec
    candidates: pd.DataFrame
    fusion_length: int
    mode: str = "pipeline_tensor"
    fusion: FusionScope = "local"
    resident_fraction: float = DEFAULT_RESIDENT_FRACTION
    fusion_tiling: str = "stream"

    def __post_init__(self) -> None:
        if self.fusion not in ("full", "local"):
            raise ConfigError(f"checkpoint fusion scope {self.fusion!r}: expected 'full' or 'local'")
        self._cache: dict[frozenset[str], dict[str, float]] = {}
        self._tables = RecomputeTables(self.workload, phases=STEP_PHASES["training"])
        self._base_subgraphs = self._solve(self._tables.base).subgraphs if self.fusion == "local" else ()
        self._parts = FusionParts(max_length=self.fusion_length)
        # a recompute clone costs on its core what the op it clones costs: the base table's costs, taken per row
        self._op_costs = OpCosts.of(self._tables.base, self.hardware, self._plan(()))

    def _problem(self, table: OpTable) -> FusionProblem:
        return FusionProblem.build(table, self.hardware, resident_fraction=self.resident_fraction, tiling=self.fusion_tiling)

    def _solve(self, table: OpTable) -> FusionResult:
        return solve_fusion(self._problem(table), max_length=self.fusion_length, time_limit_s=30, workers=1)

    def fused_groups(self, rewrite: Rewrite) -> tuple[tuple[int, ...], ...]:
        """The fused groups (table positions, more than one op each) of a rewritten table."""
        if self.fusion == "full":
            subgraphs = self._solve(rewrite.table).subgraphs
        elif not rewrite.clone.any():  # nothing recomputed: the base table
            subgraphs = self._base_subgraphs
        else:
            clone, inputs = rewrite.clone.tolist(), rewrite.table.inputs
            position = [-1] * len(self._tables.base)  # per base op, its row in the rewritten table
            for row, (source, cloned) in enumerate(zip(rewrite.source.tolist(), clone, strict=True)):
                if not cloned:
                    position[source] = row
            producer = rewrite.table.producers().tolist()
            changed = rewrite.redirected.tolist()
            clones = [row for row, cloned in enumerate(clone) if cloned]
            for row in clones:
                for t in inputs[row]:
                    if producer[t] >= 0:
                        changed[producer[t]] = True  # a new reader: maybe a new exit of its group
            kept, region = [], set(clones)
            for group in self._base_subgraphs:
                rows = [position[op] for op in group]
                if any(changed[r] and not clone[r] for r in rows):
                    region.update(rows)
                else:
                    kept.append(tuple(rows))
            subgraphs = kept + self._parts.solve(self._problem(rewrite.table), sorted(region))
        return tuple(g for g in subgraphs if len(g) > 1)

    def evaluate(self, dropped: Iterable[str]) -> dict[str, float]:
        """Latency, energy, activation bytes and recompute FLOPs with ``dropped`` recomputed."""
        return self.evaluate_many([dropped])[0]

    def evaluate_many(self, choices: Sequence[Iterable[str]], pool: Pool | None = None) -> list[dict[str, float]]:
        """Several choices; those not cached yet are evaluated in ``pool`` (made by ``worker_pool``) if given."""
        keys = [frozenset(choice) for choice in choices]
        todo = [key for key in dict.fromkeys(keys) if key not in self._cache]
        if pool is not None and len(todo) > 1:
            results = pool.map(_evaluate_in_worker, todo, chunksize=1)  # evaluations vary in length: balance them
        else:
            results = [self._compute(key) for key in todo]
        self._cache.update(zip(todo, results, strict=True))
        return [self._cache[key] for key in keys]

    def _compute(self, key: frozenset[str]) -> dict[str, float]:
        rewrite = self._tables.rewrite(sorted(key))
        table = rewrite.table
        op = table.op.tolist()
        groups = tuple(tuple(op[i] for i in g) for g in self.fused_groups(rewrite))
        summary = schedule(table, self.hardware, self._plan(groups), op_costs=self._op_costs.take(rewrite.source)).summary
        return self._objectives(key, float(summary["latency_cycles"].iloc[0]), float(summary["energy_pj"].iloc[0]))

    def _plan(self, fused: tuple[tuple[int, ...], ...]) -> SchedulePlan:
        return SchedulePlan.from_mode(
            self.mode, fused=fused, resident_fraction=self.resident_fraction, fusion_tiling=self.fusion_tiling
        )

    @contextmanager
    def worker_pool(self, workers: int) -> Iterator[Pool | None]:
        """``workers`` processes that each hold a copy of this evaluator (None for one worker: evaluate here)."""
        if workers <= 1:
            yield None
            return
        with get_context("spawn").Pool(workers, initializer=_install_worker, initargs=(self,)) as pool:
            yield pool

    def _objectives(self, key: frozenset[str], latency_cycles: float, energy_pj: float) -> dict[str, float]:
        dropped = np.array([name in key for name in self.candidates["name"].tolist()], dtype=bool)
        return {
            "latency_cycles": latency_cycles,
            "energy_pj": energy_pj,
            "activation_bytes": float(self.candidates["bytes"].to_numpy()[~dropped].sum()),
            "recompute_flops": float(self.candidates["recompute_flops"].to_numpy()[dropped].sum()),
            "recomputed": len(key),
        }

    def evaluated(self) -> list[tuple[tuple[bool, ...], dict[str, float]]]:
        """Every choice evaluated so far, as (mask over the candidates, results)."""
        names = list(self.candidates["name"])
        return [(tuple(n in key for n in names), values) for key, values in self._cache.items()]

    def choice(self, mask: np.ndarray) -> list[str]:
        """The candidates a mask recomputes (``mask[i]`` true: recompute candidate ``i``)."""
        return list(self.candidates["name"][np.asarray(mask, dtype=bool)])

    def evaluate_mask(self, mask: np.ndarray) -> dict[str, float]:
        return self.evaluate(self.choice(mask))


_WORKER: list[CheckpointEvaluator] = []  # the evaluator of a worker process


def _install_worker(evaluator: CheckpointEvaluator) -> None:
    _WORKER[:] = [evaluator]


def _evaluate_in_worker(key: frozenset[str]) -> dict[str, float]:
    return _WORKER[0]._compute(key)


def first_feature_maps(costs: pd.DataFrame, count: int = 2) -> list[str]:
    """The first ``count`` candidates (in forward order) that are feature maps, not per-channel statistics:
    at least 1 % of the largest candidate's bytes."""
    large = costs[costs["bytes"] >= 0.01 * costs["bytes"].max()]
    return list(large["name"][:count])


def additivity_study(evaluator: CheckpointEvaluator, first: str, second: str) -> pd.DataFrame:
    """MONET Figure 11: recompute neither (AC00), the first (AC10), the second (AC01), both (AC11), and
    what a linear model predicts for both (AC10 + AC01 - AC00); values relative to AC00."""
    runs = {"AC00": [], "AC10": [first], "AC01": [second], "AC11": [first, second]}
    rows = [{"scenario": name, **evaluator.evaluate(dropped)} for name, dropped in runs.items()]
    table = pd.DataFrame(rows).set_index("scenario")
    metrics = ["latency_cycles", "energy_pj", "activation_bytes"]
    linear = table.loc["AC10", metrics] + table.loc["AC01", metrics] - table.loc["AC00", metrics]
    table.loc["AC11 linear", metrics] = linear
    for metric in metrics:
        table[f"relative_{metric}"] = table[metric] / table.loc["AC00", metric]
    return table.reset_index().assign(first=first, second=second)


def milp_sweep(evaluator: CheckpointEvaluator, fractions: Sequence[float]) -> pd.DataFrame:
    """Equation 6 at budgets = fractions of all candidates' bytes, each solution evaluated by the full model;
    ``dropped`` lists the activations each recomputes."""
    total = float(evaluator.candidates["bytes"].sum())
    rows = []
    for fraction in fractions:
        dropped = solve_checkpoint_milp(evaluator.candidates, budget_bytes=fraction * total)
        rows.append(
            {"budget_fraction": fraction, "budget_bytes": fraction * total, **evaluator.evaluate(dropped), "dropped": dropped}
        )
    return pd.DataFrame(rows)
