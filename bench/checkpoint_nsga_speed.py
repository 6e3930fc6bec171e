"""How fast NSGA-II over recompute choices is: one evaluation (rewrite → fusion → schedule) with fusion
re-solved over the whole graph or only where the rewrite changed it, and the full MONET Figure 12
setting, population 50 × 100 generations, on 2 worker processes (our bar: 5 minutes on 2 cores).

    python bench/checkpoint_nsga_speed.py      # needs results/workloads/resnet18_adam (snakemake)
    python bench/checkpoint_nsga_speed.py --quick   # skip the 50 × 100 run
    python bench/checkpoint_nsga_speed.py --generations 10   # the same run, shorter

Where the time goes (cProfile, 50 × 5 on one process, 250 evaluations): about two thirds in the
scheduler's per-op loop (one configuration on ``edge_tpu.yaml``, so each op is a few dozen numpy calls on
length-1 arrays), a fifth in the local fusion re-solve (candidate enumeration, ``FusionProblem.build`` over
the whole rewritten table, CP-SAT itself 3 %) and a tenth in ``RecomputeTables.rewrite``.

Before/after, the scheduler's release and input path skipping tensors that are off chip in every
configuration (commit f0f5eb9; same NSGA-II table, ``assert_frame_equal`` exact at 50 × 5, seed 0), all
timed on this 2-core machine shared with three other sessions (load average 1.5–4.5):

- ``schedule()`` of five random recompute choices, CPU s per evaluation, best of three interleaved runs:
  0.167 → 0.142 (−15 %).
- 50 × 5 on one process, after: 73 s wall, 70.5 CPU s (load average about 3; no unprofiled run before).
- 50 × 100 on 2 workers: 283 s wall and 1,201 CPU s before (an earlier run, timed alone); after, with
  three other sessions' jobs on the machine (load average 4–5.4, the run got one core's worth): 1,290 s
  wall, 1,334 CPU s, 4,991 evaluations, one evaluation 0.26 s (local fusion) and 0.44 s (full). Contention
  inflates CPU seconds too, so this run neither shows nor refutes the 15 %; it needs a quiet machine.

After the scheduler's lanes, separable op costs, the RecomputePlanner and the faster FusionProblem.build
(branch s25-nsga, 26 November 2026, ``--quick``, load average 2.7-2.9): one evaluation 0.100 CPU s with local
fusion, 0.289 with full fusion (0.26 and 0.44 above, under heavier load). The rows now give CPU seconds
(the NSGA-II run's include its workers') and the load average beside wall seconds.
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
