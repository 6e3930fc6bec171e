"""How fast NSGA-II over recompute choices is: one evaluation (rewrite → fusion → schedule) with fusion
re-solved over the whole graph or only where the rewrite changed it, and the full MONET Figure 12
setting, population 50 × 100 generations, on 2 worker processes (our bar: 5 minutes on 2 cores).

    python bench/checkpoint_nsga_speed.py      # needs results/workloads/resnet18_adam (snakemake)
    python bench/checkpoint_nsga_speed.py --quick   # skip the 50 × 100 run
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd

from traincost.hardware import load_hardware
from traincost.optimize.checkpoint_nsga import run_nsga2
from traincost.optimize.checkpoint_search import CheckpointEvaluator, activation_costs
from traincost.workload import Workload

REPO = Path(__file__).resolve().parents[1]
FUSION_LENGTH = 4  # config/config.yaml monet_checkpoint.fusion_length


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="only time single evaluations")
    args = parser.parse_args()
    folder = REPO / "results/workloads/resnet18_adam"
    workload = Workload.read(folder / "ops.parquet", folder / "tensors.parquet")
    hardware = load_hardware(REPO / "config/hardware/edge_tpu.yaml")
    costs = activation_costs(workload, word_bytes=hardware.word_bytes)
    rows = []
    for fusion, samples in (("full", 5), ("local", 40)):
        evaluator = CheckpointEvaluator(workload, hardware, costs, fusion_length=FUSION_LENGTH, fusion=fusion)
        rng = np.random.default_rng(0)
        masks = [rng.random(len(costs)) < rng.random() for _ in range(samples)]
        began = time.perf_counter()
        for mask in masks:
            evaluator.evaluate_mask(mask)
        rows.append({"run": f"one evaluation, {fusion} fusion", "seconds": (time.perf_counter() - began) / samples})
    if not args.quick:
        evaluator = CheckpointEvaluator(workload, hardware, costs, fusion_length=FUSION_LENGTH)
        began = time.perf_counter()
        table = run_nsga2(evaluator, population=50, generations=100, seed=0, workers=2)
        seconds = time.perf_counter() - began
        rows.append({"run": f"NSGA-II 50 x 100, 2 workers ({len(table)} evaluations)", "seconds": seconds})
        rows.append({"run": "bar: 50 x 100 in", "seconds": 300.0})
    with pd.option_context("display.width", 200, "display.float_format", "{:.3f}".format):
        print(pd.DataFrame(rows).to_string(index=False))


if __name__ == "__main__":
    main()
