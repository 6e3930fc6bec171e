"""How fast one NSGA-II evaluation of a recompute choice is (rewrite → fusion → schedule), and what
population 50 × 100 generations would take at that rate (MONET's Figure 12 setting; our bar: 5 minutes).

    python bench/checkpoint_nsga_speed.py      # needs results/workloads/resnet18_adam (snakemake)
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd

from traincost.hardware import load_hardware
from traincost.optimize.checkpoint_nsga import run_nsga2
from traincost.optimize.checkpoint_search import CheckpointEvaluator, activation_costs
from traincost.workload import Workload

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    folder = REPO / "results/workloads/resnet18_adam"
    workload = Workload.read(folder / "ops.parquet", folder / "tensors.parquet")
    hardware = load_hardware(REPO / "config/hardware/edge_tpu.yaml")
    costs = activation_costs(workload, word_bytes=hardware.word_bytes)
    rows = []
    for length in (2, 4):
        evaluator = CheckpointEvaluator(workload, hardware, costs, fusion_length=length)
        rng = np.random.default_rng(0)
        began = time.perf_counter()
        for _ in range(10):
            evaluator.evaluate_mask(rng.random(len(costs)) < 0.3)
        per_eval = (time.perf_counter() - began) / 10
        began = time.perf_counter()
        table = run_nsga2(evaluator, population=10, generations=3, seed=0)
        nsga_seconds = time.perf_counter() - began
        rows.append(
            {
                "fusion_length": length,
                "seconds_per_evaluation": per_eval,
                "nsga_10x3_seconds": nsga_seconds,
                "nsga_10x3_evaluations": len(table),
                "projected_50x100_minutes": 50 * 100 * per_eval / 60,
            }
        )
    with pd.option_context("display.width", 200, "display.float_format", "{:.2f}".format):
        print(pd.DataFrame(rows).to_string(index=False))


if __name__ == "__main__":
    main()
