"""Time the layer-fusion solver on ResNet-18 training graphs for every maximum subgraph length.

Prints, per workload and length: nodes, candidates, enumeration and CP-SAT seconds, status and the
number of subgraphs. MONET's bar: ResNet-18 training at length 8 in under 60 s on 2 cores.

    python bench/fusion_speed.py        # builds ResNet-18 CIFAR (batch 1, Adam) and ResNet-18 224 (batch 1, Adam)
    python bench/fusion_speed.py --models mlp     # another zoo model (needs ONNX Runtime Training: the `ort` extra)
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from traincost.cost import op_table
from traincost.frontend.onnx.decompose import decompose
from traincost.frontend.onnx.export import export_model
from traincost.frontend.onnx.lower import lower
from traincost.frontend.onnx.train_graph import build_train_step
from traincost.frontend.shared.optimizer import OptimizerSpec
from traincost.hardware import load_hardware
from traincost.optimize.fusion import FusionProblem, fusion_report, solve_fusion

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--models", nargs="+", default=["resnet18_cifar", "resnet18"], help="zoo models (default: resnet18_cifar resnet18)"
    )
    args = parser.parse_args()
    hardware = load_hardware(REPO / "config/hardware/edge_tpu.yaml")
    rows = []
    for model in args.models:
        graph = build_train_step(export_model(model, batch=1, seed=0), OptimizerSpec(kind="adam", lr=1e-3))
        table = op_table(lower(decompose(graph)))
        problem = FusionProblem.build(table, hardware)
        for length in range(4, 9):
            result = solve_fusion(problem, max_length=length, time_limit_s=60)
            row = fusion_report(result, max_length=length, type_limits=True, objective="subgraphs", nodes=len(table))
            rows.append({"model": model, **row, "total_seconds": result.enumerate_seconds + result.solve_seconds})
    columns = [
        "model",
        "max_length",
        "nodes",
        "candidates",
        "subgraphs",
        "status",
        "enumerate_seconds",
        "solve_seconds",
        "total_seconds",
    ]
    with pd.option_context("display.width", 200, "display.float_format", "{:.2f}".format):
        print(pd.DataFrame(rows)[columns].to_string(index=False))


if __name__ == "__main__":
    main()
