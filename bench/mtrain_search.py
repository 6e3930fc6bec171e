"""MTrain search times beside the paper's (Table III, 3 GB/s P2P): MTrain-Converting and the DFS optimum
over partition ratios, batch-1 SGD steps from the zoo re-batched per cluster, with the ratio grid of
the full config (cluster 1 in steps of 2 samples: the paper's 33 ratios; cluster 2 in steps of 1;
cluster 3, whose DFS the paper estimated at 22 days, in steps of 2).

    python bench/mtrain_search.py                               # AlexNet and ResNet-18 on clusters 1-3
    python bench/mtrain_search.py --models resnet18 --clusters cluster3 --workers 2
    python bench/mtrain_search.py --pairs 4 --workers 2          # Figure 12's job for 4 pairs of FPGAs
    python bench/mtrain_search.py --designs                     # each IP's design search on every FPGA
    python bench/mtrain_search.py --config config/quick.yaml     # the workloads and grids of another config

Throughputs come from our reconstructed IP models and are not expected to match the paper's; the
search times are the point (the issue's bars: Converting under 10 s per Table III cell, the DFS under
60 s per cell, and each Figure 12 job, one per cluster size, under 2 minutes, on 2 cores). ``--pairs``
runs Figure 12's jobs instead (the config's scaling model, cluster, bandwidths and ratio step), one per
cluster size, and prints the search time per bandwidth and the job's wall time. ``--designs`` times each IP's
design search (every array shape that fits, costed on the whole step at the cluster's batch, vectorised over
the shapes) on every FPGA of the clusters, with the shapes that fit and the one chosen.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import pandas as pd
import yaml

from traincost.fpga.devices import FpgaCatalog, load_fpga_catalog
from traincost.fpga.ip_models import design_space, size_ip
from traincost.fpga.ip_specs import IpSpec, load_ip_specs
from traincost.fpga.study import scaling_rows, table3_row
from traincost.fpga.training_dag import TrainingDag, training_dag
from traincost.frontend.onnx.decompose import decompose
from traincost.frontend.onnx.export import export_model
from traincost.frontend.onnx.lower import lower
from traincost.frontend.onnx.train_graph import build_train_step
from traincost.frontend.shared.optimizer import OptimizerSpec

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["alexnet", "resnet18"], help="keys of the config's mtrain.workloads")
    parser.add_argument("--clusters", nargs="+", default=["cluster1", "cluster2", "cluster3"])
    parser.add_argument("--workers", type=int, default=1, help="processes mapping candidate ratios")
    parser.add_argument("--pairs", type=int, nargs="+", help="Figure 12's jobs for these cluster sizes instead of Table III")
    parser.add_argument("--designs", action="store_true", help="time each IP's design search instead of Table III")
    parser.add_argument("--config", type=Path, default=REPO / "config/config.yaml", help="the workflow config")
    args = parser.parse_args()
    config = yaml.safe_load(args.config.read_text())
    study = config["mtrain"]
    catalog = load_fpga_catalog(REPO / study["devices"])
    specs = load_ip_specs(REPO / study["ips"])
    if args.designs:
        designs(config, catalog, specs, args.models, args.clusters)
        return
    if args.pairs:
        scaling(config, catalog, specs, args.pairs, args.workers)
        return
    paper = pd.read_csv(REPO / "data/paper/mtrain.csv")
    paper = paper[paper["claim"] == "table3"].pivot_table(index=["model", "cluster"], columns="metric", values="value")
    rows = []
    for model in args.models:
        dag = _dag(config, model)
        for name in args.clusters:
            row = table3_row(
                dag, catalog.clusters[name], specs, bandwidth_gb_per_s=3.0, step=study["ratio_step"][name], workers=args.workers
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


def _dag(config: dict, model: str) -> TrainingDag:
    """The batch-1 SGD training step of the config's MTrain workload ``model``."""
    workload = config["workloads"][config["mtrain"]["workloads"][model]]
    model_ir = export_model(workload["model"], batch=1, seed=0)
    return training_dag(lower(decompose(build_train_step(model_ir, OptimizerSpec(kind="sgd", lr=0.01)))))


def designs(config: dict, catalog: FpgaCatalog, specs: dict[str, IpSpec], models: list[str], clusters: list[str]) -> None:
    """Each IP's design search on every FPGA of ``clusters``, at the cluster's batch, for each model."""
    rows = []
    for model in models:
        dag = _dag(config, model)
        for name in clusters:
            cluster = catalog.clusters[name]
            for device in cluster.devices:
                for spec in specs.values():
                    began = time.perf_counter()
                    ip = size_ip(spec, device, dag.costs, cluster.batch)
                    seconds = time.perf_counter() - began
                    gflops = dag.flops(cluster.batch) / dag.costs.seconds(ip, cluster.batch) / 1e9
                    rows.append(
                        {"model": model, "cluster": name, "device": device.name, "ip": spec.name}
                        | {"shapes": len(design_space(spec, device, cluster.batch)[0]), "chosen": f"{ip.tm}x{ip.tn}"}
                        | {"gflops": gflops, "search_s": seconds}
                    )
    with pd.option_context("display.width", 250, "display.float_format", "{:.2f}".format):
        print(pd.DataFrame(rows).to_string(index=False))


def scaling(config: dict, catalog: FpgaCatalog, specs: dict[str, IpSpec], pairs: list[int], workers: int) -> None:
    """Figure 12's job per cluster size, as `traincost mtrain-scaling` runs it in workflow/rules/mtrain.smk: each size
    built on the one timed before it."""
    spec = config["mtrain"]["scaling"]
    dag = _dag(config, spec["model"])
    step = spec.get("ratio_step", config["mtrain"]["ratio_step"][spec["cluster"]])
    table = None
    for n in sorted(pairs):
        began = time.perf_counter()
        table = scaling_rows(
            dag,
            catalog.clusters[spec["cluster"]],
            [n],
            spec["bandwidths_gb_per_s"],
            specs,
            step=step,
            workers=workers,
            fewer_fpgas=table,
        )
        columns = ["fpgas", "bandwidth_gb_per_s", "ratio", "throughput_gflops", "busy_fpgas", "kept", "search_s"]
        with pd.option_context("display.width", 250, "display.float_format", "{:.2f}".format):
            print(table[columns].to_string(index=False))
        print(f"{n} pairs: job {time.perf_counter() - began:.1f} s")


if __name__ == "__main__":
    main()
