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

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from ortools.sat.python import cp_model

from traincost.cost.evaluate import STEP_PHASES
from traincost.cost.optable import op_table
from traincost.errors import ConfigError, GraphError
from traincost.hardware.spec import HardwareSpec
from traincost.optimize.checkpoint import plan_recompute, recompute_workload, saved_activations, workload_nodes
from traincost.optimize.fusion import FusionProblem, solve_fusion
from traincost.schedule import SchedulePlan, schedule
from traincost.workload import Workload

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
    ops = workload.ops.sort_values("op").reset_index(drop=True)
    flops = (2 * ops["macs"] + ops["elementwise_ops"]).to_numpy()
    elements = workload.tensors.set_index("name")
    rows = []
    for name in saved_activations(nodes):
        if name in external:
            continue
        try:
            plan = plan_recompute(nodes, [name], external=external)
        except GraphError:
            continue  # behind a random op (a dropout mask): it stays saved
        chain = [i for group in plan.insertions.values() for i in group]
        size = int(elements.loc[name, "bytes"] // elements.loc[name, "dtype_bytes"]) * word_bytes
        rows.append({"name": name, "bytes": size, "recompute_flops": int(flops[chain].sum()), "recompute_ops": len(chain)})
    return pd.DataFrame(rows)


def solve_checkpoint_milp(costs: pd.DataFrame, *, budget_bytes: float, time_limit_s: float = 30.0) -> list[str]:
    """Equation 6 with OR-Tools CP-SAT: the activations to recompute under a memory budget.

    Raises:
        ConfigError: the budget is negative (no choice fits), or the solver finds nothing in time.
    """
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


@dataclass
class CheckpointEvaluator:
    """Latency, energy and activation memory of a recompute choice on one hardware configuration.

    Each evaluation rewrites the workload, re-solves layer fusion on the rewritten graph (as MONET does
    after every rewrite) and schedules it with the fused groups. Results are cached by choice.
    """

    workload: Workload
    hardware: HardwareSpec
    candidates: pd.DataFrame
    fusion_length: int
    mode: str = "pipeline_tensor"

    def __post_init__(self) -> None:
        self._cache: dict[frozenset[str], dict[str, float]] = {}

    def evaluate(self, dropped: Sequence[str]) -> dict[str, float]:
        key = frozenset(dropped)
        if key not in self._cache:
            rewritten = recompute_workload(self.workload, sorted(key)) if key else self.workload
            table = op_table(rewritten, phases=STEP_PHASES["training"])
            fusion = solve_fusion(FusionProblem.build(table, self.hardware), max_length=self.fusion_length, time_limit_s=30)
            groups = tuple(tuple(int(table.op[i]) for i in g) for g in fusion.subgraphs if len(g) > 1)
            row = schedule(table, self.hardware, SchedulePlan.from_mode(self.mode, fused=groups)).summary.iloc[0]
            kept = self.candidates[~self.candidates["name"].isin(key)]
            self._cache[key] = {
                "latency_cycles": float(row["latency_cycles"]),
                "energy_pj": float(row["energy_pj"]),
                "activation_bytes": float(kept["bytes"].sum()),
                "recompute_flops": float(self.candidates.loc[self.candidates["name"].isin(key), "recompute_flops"].sum()),
                "recomputed": len(key),
            }
        return self._cache[key]

    def evaluated(self) -> list[tuple[tuple[bool, ...], dict[str, float]]]:
        """Every choice evaluated so far, as (mask over the candidates, results)."""
        names = list(self.candidates["name"])
        return [(tuple(n in key for n in names), values) for key, values in self._cache.items()]

    def evaluate_mask(self, mask: np.ndarray) -> dict[str, float]:
        """``mask[i]`` true: recompute candidate ``i``."""
        return self.evaluate(list(self.candidates["name"][np.asarray(mask, dtype=bool)]))


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
    """Equation 6 at budgets = fractions of all candidates' bytes, each solution evaluated by the full model."""
    total = float(evaluator.candidates["bytes"].sum())
    rows = []
    for fraction in fractions:
        dropped = solve_checkpoint_milp(evaluator.candidates, budget_bytes=fraction * total)
        rows.append({"budget_fraction": fraction, "budget_bytes": fraction * total, **evaluator.evaluate(dropped)})
    return pd.DataFrame(rows)
