"""NSGA-II (pymoo) over which activations to recompute: latency, energy and activation memory together.

Each individual is a binary vector over the candidate activations (1 = recompute). Its objectives
come from ``CheckpointEvaluator``: the workload rewritten, fused again, and scheduled on the
hardware; activation memory is the bytes of the activations still saved. The result keeps every
evaluated choice with a flag for the final non-dominated front; the same seed gives the same front.
"""

from __future__ import annotations

from multiprocessing.pool import Pool

import numpy as np
import pandas as pd
from pymoo.algorithms.moo.nsga2 import NSGA2
from pymoo.core.problem import Problem
from pymoo.operators.crossover.pntx import TwoPointCrossover
from pymoo.operators.mutation.bitflip import BitflipMutation
from pymoo.operators.sampling.rnd import BinaryRandomSampling
from pymoo.optimize import minimize

from traincost.errors import ConfigError
from traincost.optimize.checkpoint_search import CheckpointEvaluator
from traincost.progress import progress_bar

__all__ = ["CheckpointProblem", "run_nsga2", "largest_saving"]

OBJECTIVES = ("latency_cycles", "energy_pj", "activation_bytes")


class CheckpointProblem(Problem):
    """One binary variable per candidate activation; minimise latency, energy and saved bytes. A generation's
    new choices are evaluated together (in the worker pool, if any)."""

    def __init__(self, evaluator: CheckpointEvaluator, pool: Pool | None = None) -> None:
        super().__init__(n_var=len(evaluator.candidates), n_obj=len(OBJECTIVES), xl=0, xu=1, vtype=bool)
        self.evaluator = evaluator
        self.pool = pool

    def _evaluate(self, x: np.ndarray, out: dict, *args: object, **kwargs: object) -> None:
        results = self.evaluator.evaluate_many([self.evaluator.choice(mask) for mask in x], pool=self.pool)
        out["F"] = np.array([[result[name] for name in OBJECTIVES] for result in results])


def run_nsga2(evaluator: CheckpointEvaluator, *, population: int, generations: int, seed: int, workers: int = 1) -> pd.DataFrame:
    """Every choice NSGA-II evaluated, with its objectives, the recomputed names and ``pareto`` (on the final front).
    ``workers`` processes evaluate each generation; the result does not depend on their number.

    Raises:
        ConfigError: a population below 4, fewer than 1 generation or fewer than 1 worker.
    """
    if population < 4 or generations < 1 or workers < 1:
        raise ConfigError(
            f"NSGA-II: population {population} (at least 4), generations {generations} (at least 1), "
            f"workers {workers} (at least 1)"
        )
    algorithm = NSGA2(
        pop_size=population,
        sampling=BinaryRandomSampling(),
        crossover=TwoPointCrossover(),
        mutation=BitflipMutation(),
        eliminate_duplicates=True,
    )
    with evaluator.worker_pool(workers) as pool, progress_bar(total=generations, desc="NSGA-II", unit="generation") as bar:
        problem = CheckpointProblem(evaluator, pool)
        result = minimize(problem, algorithm, ("n_gen", generations), seed=seed, verbose=False, callback=lambda _: bar.update(1))
    names = evaluator.candidates["name"].to_numpy()
    front = {tuple(np.asarray(x, dtype=bool)) for x in np.atleast_2d(result.X)}
    rows = []
    for mask, values in evaluator.evaluated():
        rows.append({**values, "recompute": "|".join(names[list(mask)]), "pareto": tuple(mask) in front})
    table = pd.DataFrame(rows).sort_values(["activation_bytes", "latency_cycles"]).reset_index(drop=True)
    return table


def largest_saving(table: pd.DataFrame, baseline: dict[str, float], *, tolerance: float = 0.04) -> dict[str, float]:
    """The largest activation-memory saving among choices within ``tolerance`` of the baseline's latency and energy."""
    within = table[
        (table["latency_cycles"] <= (1 + tolerance) * baseline["latency_cycles"])
        & (table["energy_pj"] <= (1 + tolerance) * baseline["energy_pj"])
    ]
    best = within.loc[within["activation_bytes"].idxmin()]
    return {
        "tolerance": tolerance,
        "saved_bytes": baseline["activation_bytes"] - float(best["activation_bytes"]),
        "saved_fraction": 1 - float(best["activation_bytes"]) / baseline["activation_bytes"],
        "latency_change": float(best["latency_cycles"]) / baseline["latency_cycles"] - 1,
        "energy_change": float(best["energy_pj"]) / baseline["energy_pj"] - 1,
        "recomputed": float(best["recomputed"]),
    }
