"""MTrain search times beside the paper's (Table III, 3 GB/s P2P): MTrain-Converting and the DFS optimum
over partition ratios, batch-1 SGD steps from the zoo re-batched per cluster, with the ratio grid of
the full config (cluster 1 in steps of 2 samples: the paper's 33 ratios; cluster 2 in steps of 1;
cluster 3, whose DFS the paper estimated at 22 days, in steps of 2).

    python bench/mtrain_search.py                               # AlexNet and ResNet-18 on clusters 1-3
    python bench/mtrain_search.py --models resnet18 --clusters cluster3 --workers 2

Throughputs come from our reconstructed IP models and are not expected to match the paper's; the
search times are the point (the issue's bars: Converting under 10 s per Table III cell, the DFS under
2 minutes on clusters 1 and 2 and under 15 minutes on cluster 3, on 2 cores).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd
import yaml

from traincost.fpga.devices import load_fpga_catalog
from traincost.fpga.study import table3_row
from traincost.fpga.training_dag import training_dag
from traincost.frontend.decompose import decompose
from traincost.frontend.export import export_model
from traincost.frontend.lower import lower
from traincost.frontend.optimizer import OptimizerSpec
from traincost.frontend.train_graph import build_train_step

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["alexnet", "resnet18"], help="keys of the config's mtrain.workloads")
    parser.add_argument("--clusters", nargs="+", default=["cluster1", "cluster2", "cluster3"])
    parser.add_argument("--workers", type=int, default=1, help="processes mapping candidate ratios")
    args = parser.parse_args()
    config = yaml.safe_load((REPO / "config/config.yaml").read_text())
    study = config["mtrain"]
    catalog = load_fpga_catalog(REPO / study["devices"])
    paper = pd.read_csv(REPO / "data/paper/mtrain.csv")
    paper = paper[paper["claim"] == "table3"].pivot_table(index=["model", "cluster"], columns="metric", values="value")
    rows = []
    for model in args.models:
        workload = config["workloads"][study["workloads"][model]]
        step = lower(
            decompose(build_train_step(export_model(workload["model"], batch=1, seed=0), OptimizerSpec(kind="sgd", lr=0.01)))
        )
        dag = training_dag(step)
        for name in args.clusters:
            row = table3_row(
                dag, catalog.clusters[name], bandwidth_gb_per_s=3.0, step=study["ratio_step"][name], workers=args.workers
            )
            reported = paper.loc[(model, name)] if (model, name) in paper.index else pd.Series(dtype=float)
            rows.append(
                {
                    "model": model,
                    "cluster": name,
                    "ratios": row["dfs_ratios_mapped"],
                    "feasible": row["ratios_feasible"],
                    "dfs_gflops": row["dfs_gflops"],
                    "dfs_s": row["dfs_s"],
                    "paper_dfs_s": reported.get("dfs_s"),
                    "converting_gflops": row["converting_gflops"],
                    "converting_ratio": row["converting_ratio"],
                    "converting_s": row["converting_s"],
                    "paper_converting_s": reported.get("converting_s"),
                }
            )
    with pd.option_context("display.width", 250, "display.float_format", "{:.1f}".format):
        print(pd.DataFrame(rows).to_string(index=False))


if __name__ == "__main__":
    main()
