"""How long the TM-Training study takes: per workload, building the trace, AutoTM's MIP and one simulation
of each policy, at one Tier 1 size (25:1 by default); and the estimated single-core time of the full
study of ``config/config.yaml`` (every workload at every ratio and variant).

    python bench/tiered_speed.py [--ratio 25]

The Snakemake run spreads the study over one job per workload and variant (2 cores: about half the
single-core total); the whole study with its figures is timed by the workflow's log.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import pandas as pd
import yaml

from traincost.models.tm_training_workloads import tm_training_workload
from traincost.tiered.autotm import plan_autotm
from traincost.tiered.engine import simulate, tier1_bytes_for_ratio
from traincost.tiered.policies import POLICIES, make_policy
from traincost.tiered.study import model_bytes_per_chip
from traincost.tiered.system import load_tiered_system
from traincost.tiered.trace import build_trace
from traincost.tiered.walk import Walk

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ratio", type=float, default=25.0, help="Tier 1 : model ratio")
    args = parser.parse_args()
    study = yaml.safe_load((REPO / "config/config.yaml").read_text())["tiered"]
    system = load_tiered_system(REPO / study["hardware"])
    runs_per_workload = len(study["ratios"]) + sum(len(r) for r in study.get("variant_ratios", {}).values())
    rows = []
    for name in study["workloads"]:
        began = time.perf_counter()
        workload = tm_training_workload(name)
        trace = build_trace(workload, system)
        walk = Walk.of(trace)
        row = {"workload": name, "ops": len(trace), "trace_s": time.perf_counter() - began}
        model_bytes = model_bytes_per_chip(workload, word_bytes=system.hardware.word_bytes)
        tier1 = tier1_bytes_for_ratio(args.ratio, model_bytes, system.capacity_bytes)
        began = time.perf_counter()
        plan = plan_autotm(trace, system, tier1_bytes=tier1)
        row["autotm_mip_s"] = time.perf_counter() - began
        for policy in POLICIES:
            began = time.perf_counter()
            simulate(walk, system, make_policy(policy, plan=plan.arrays()), tier1_bytes=tier1)
            row[policy] = time.perf_counter() - began
        per_ratio = row["autotm_mip_s"] + sum(row[p] for p in POLICIES if p != "hbm_only")
        row["study_estimate_s"] = row["trace_s"] + runs_per_workload * per_ratio
        rows.append(row)
    table = pd.DataFrame(rows)
    with pd.option_context("display.width", 250, "display.max_columns", None, "display.float_format", "{:.2f}".format):
        print(f"seconds per step at {args.ratio:g}:1 (simulations: two iterations each)")
        print(table.to_string(index=False))
    print(f"full study, one core: about {table['study_estimate_s'].sum():.0f} s ({runs_per_workload} Tier 1 sizes per workload)")


if __name__ == "__main__":
    main()
