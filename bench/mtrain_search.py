"""MTrain search times beside the paper's (Table III, 3 GB/s P2P): MTrain-Converting and the DFS optimum
over partition ratios, for AlexNet and ResNet-18 on clusters 1 and 2, batch-1 SGD steps from the zoo.

    python bench/mtrain_search.py               # AlexNet and ResNet-18 (a few minutes)
    python bench/mtrain_search.py --models alexnet

The DFS steps the ratio by 2 samples on cluster 1 (33 ratios, as in the paper) and by 1 on cluster 2
(153 ratios; the paper counts 33 there without saying how). Throughputs come from our reconstructed
IP models and are not expected to match the paper's; the search times are the point.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from traincost.fpga.converting import dfs_optimum, mtrain_converting, select_accelerators
from traincost.fpga.devices import load_fpga_catalog
from traincost.fpga.training_dag import training_dag
from traincost.frontend.decompose import decompose
from traincost.frontend.export import export_model
from traincost.frontend.lower import lower
from traincost.frontend.optimizer import OptimizerSpec
from traincost.frontend.train_graph import build_train_step

REPO = Path(__file__).resolve().parents[1]
DFS_STEP = {"cluster1": 2, "cluster2": 1}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["alexnet", "resnet18"])
    args = parser.parse_args()
    catalog = load_fpga_catalog(REPO / "config/hardware/fpga/devices.yaml")
    paper = pd.read_csv(REPO / "data/paper/mtrain_table3.csv").set_index(["model", "cluster"])
    rows = []
    for model in args.models:
        step = lower(decompose(build_train_step(export_model(model, batch=1, seed=0), OptimizerSpec(kind="sgd", lr=0.01))))
        dag = training_dag(step)
        for name, step_size in DFS_STEP.items():
            cluster = catalog.clusters[name]
            accelerators = select_accelerators(dag, cluster)
            converted = mtrain_converting(dag, accelerators, cluster.batch, bandwidth_gb_per_s=3.0)
            dfs = dfs_optimum(dag, accelerators, cluster.batch, bandwidth_gb_per_s=3.0, step=step_size)
            reported = paper.loc[(model, name)]
            rows.append(
                {
                    "model": model,
                    "cluster": name,
                    "ratios": dfs.ratios_tried,
                    "dfs_gflops": dfs.throughput_gflops,
                    "dfs_s": dfs.seconds,
                    "paper_dfs_s": reported["dfs_search_s"],
                    "converting_gflops": converted.throughput_gflops,
                    "converting_ratio": converted.ratio,
                    "converting_s": converted.seconds,
                    "paper_converting_s": reported["converting_search_s"],
                }
            )
    with pd.option_context("display.width", 250, "display.float_format", "{:.1f}".format):
        print(pd.DataFrame(rows).to_string(index=False))


if __name__ == "__main__":
    main()
