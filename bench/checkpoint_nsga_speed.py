"""How fast NSGA-II over recompute choices is: one evaluation (rewrite → fusion → schedule) with fusion
re-solved over the whole graph or only where the rewrite changed it, and the full MONET Figure 12
setting, population 50 × 100 generations, on 2 worker processes (our bar: 5 minutes on 2 cores).

    python bench/checkpoint_nsga_speed.py      # needs results/workloads/resnet18_adam (snakemake)
    python bench/checkpoint_nsga_speed.py --quick   # skip the 50 × 100 run
    python bench/checkpoint_nsga_speed.py --generations 10   # the same run, shorter
    python bench/checkpoint_nsga_speed.py --workload results/workloads/resnet18_cifar --quick   # another workload

Where the time goes (cProfile, 50 × 5 on one process, 250 evaluations): about two thirds in the
scheduler's per-op loop (one configuration on ``edge_tpu.yaml``, so each op is a few dozen numpy calls on
length-1 arrays), a fifth in the local fusion re-solve (candidate enumeration, ``FusionProblem.build`` over
the whole rewritten table, CP-SAT itself 3 %) and a tenth in ``RecomputeTables.rewrite``.

Each row gives wall and CPU seconds (the NSGA-II run's CPU seconds include its workers') and the load average:
on a shared machine contention inflates CPU seconds too, so compare two versions back to back on a quiet one. An
evaluation re-solves fusion only where the rewrite changed the graph, which is what keeps the 50 × 100 run within
its bar; the full re-solve is timed beside it to show the difference.
"""

from __future__ import annotations

import argparse
import os
import resource
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


def cpu_seconds() -> float:
    """User + system seconds of this process and of its finished children (the worker processes)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="only time single evaluations")
    parser.add_argument("--generations", type=int, default=100, help="generations of the NSGA-II run (paper: 100)")
    parser.add_argument(
        "--workload",
        type=Path,
        default=REPO / "results/workloads/resnet18_adam",
        help="a training step's folder, ops.parquet and tensors.parquet (default: results/workloads/resnet18_adam)",
    )
    args = parser.parse_args()
    folder = args.workload
    workload = Workload.read(folder / "ops.parquet", folder / "tensors.parquet")
    hardware = load_hardware(REPO / "config/hardware/edge_tpu.yaml")
    costs = activation_costs(workload, word_bytes=hardware.word_bytes)
    rows = []
    for fusion, samples in (("full", 5), ("local", 40)):
        evaluator = CheckpointEvaluator(workload, hardware, costs, fusion_length=FUSION_LENGTH, fusion=fusion)
        rng = np.random.default_rng(0)
        masks = [rng.random(len(costs)) < rng.random() for _ in range(samples)]
        began, cpu = time.perf_counter(), cpu_seconds()
        for mask in masks:
            evaluator.evaluate_mask(mask)
        rows.append(
            {
                "run": f"one evaluation, {fusion} fusion",
                "seconds": (time.perf_counter() - began) / samples,
                "cpu_seconds": (cpu_seconds() - cpu) / samples,
                "load_average": os.getloadavg()[0],
            }
        )
    if not args.quick:
        evaluator = CheckpointEvaluator(workload, hardware, costs, fusion_length=FUSION_LENGTH)
        began, cpu = time.perf_counter(), cpu_seconds()
        table = run_nsga2(evaluator, population=50, generations=args.generations, seed=0, workers=2)
        rows.append(
            {
                "run": f"NSGA-II 50 x {args.generations}, 2 workers ({len(table)} evaluations)",
                "seconds": time.perf_counter() - began,
                "cpu_seconds": cpu_seconds() - cpu,  # the workers' too: the pool has ended
                "load_average": os.getloadavg()[0],
            }
        )
        if args.generations == 100:
            rows.append({"run": "bar: 50 x 100 in", "seconds": 300.0})
    with pd.option_context("display.width", 200, "display.float_format", "{:.3f}".format):
        print(pd.DataFrame(rows).to_string(index=False))


if __name__ == "__main__":
    main()
