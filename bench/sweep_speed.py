"""How fast the vectorised cost model sweeps the MONET grids, next to ZigZag's time for one layer.

Times the full Edge TPU grid (MONET Table II, 10,000 configurations) for ResNet-18 CIFAR inference and
training, and the full FuseMax grid (Table III, 2,560 configurations) for the small GPT-2, each as
the workflow runs it (same modes and fusion as config/config.yaml), on this machine. If ZigZag is
importable (run with bench/.venv-zigzag/bin/python, see bench/zigzag_crosscheck.py), also times one
ResNet-18 layer in ZigZag and prints layer evaluations per second for both tools.

    python bench/sweep_speed.py            # needs results/workloads/{resnet18_cifar,gpt2_small} (snakemake)
"""

from __future__ import annotations

import importlib.util
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from traincost.cost import mac_cost, op_table
from traincost.hardware import load_hardware
from traincost.schedule import SchedulePlan
from traincost.schedule.evaluate import evaluate_sweep
from traincost.schedule.manual_fusion import read_manual_fusion
from traincost.workload import Workload

REPO = Path(__file__).resolve().parents[1]
TARGET_SECONDS = {"edge_tpu_resnet18": 120.0, "fusemax_gpt2": 60.0}


def workload_of(name: str) -> Workload:
    folder = REPO / "results/workloads" / name
    if not (folder / "ops.parquet").is_file():
        sys.exit(f"{folder}/ops.parquet missing: run `snakemake --cores 2 {folder.relative_to(REPO)}/ops.parquet` first")
    return Workload.read(folder / "ops.parquet", folder / "tensors.parquet")


def time_sweeps() -> pd.DataFrame:
    config = yaml.safe_load((REPO / "config/config.yaml").read_text())
    rows = []
    for name, spec in config["hardware_sweeps"].items():
        workload = workload_of(spec["workload"])
        fused = read_manual_fusion(REPO / spec["fusion"], workload.ops) if "fusion" in spec else ()
        plan = SchedulePlan.from_mode(spec.get("mode", "pipeline_tensor"), fused=fused)
        total = 0.0
        for step in ("inference", "training"):
            began = time.perf_counter()
            table = evaluate_sweep(workload, REPO / spec["hardware"], grid=spec["grid"], step=step, plan=plan)
            seconds = time.perf_counter() - began
            total += seconds
            ops = len(op_table(workload, phases=("forward",) if step == "inference" else ("forward", "backward", "optimizer")))
            rows.append(
                {
                    "sweep": name,
                    "step": step,
                    "configurations": len(table),
                    "ops": ops,
                    "seconds": seconds,
                    "networks_per_s": len(table) / seconds,
                    "op_evaluations_per_s": len(table) * ops / seconds,
                }
            )
        rows.append({"sweep": name, "step": "both", "seconds": total, "target_s": TARGET_SECONDS.get(name, np.nan)})
    return pd.DataFrame(rows)


def time_layers() -> pd.DataFrame:
    """One ResNet-18 3x3 conv layer: our model (grid of 10,000 at once, per layer-configuration) vs ZigZag."""
    sys.path.insert(0, str(Path(__file__).parent))
    from zigzag_crosscheck import HARDWARE, forward_layers, zigzag_core  # noqa: PLC0415

    workload = workload_of("resnet18")
    layers = forward_layers(workload)
    layer = layers[layers["name"].str.contains("stages.0.0/conv1")].iloc[[0]]
    table = op_table(workload, phases=("forward",))
    index = np.array([int(np.flatnonzero(table.op == layer["op"].iloc[0])[0])])
    grid = load_hardware(
        REPO / "config/hardware/edge_tpu.yaml",
        sweep=yaml.safe_load((REPO / "config/config.yaml").read_text())["hardware_sweeps"]["edge_tpu_resnet18"]["grid"],
    )
    began = time.perf_counter()
    mac_cost(grid.cores[0], table, index)
    ours = (time.perf_counter() - began) / grid.n_configs
    rows = [{"tool": "traincost (vectorised over 10,000 configurations)", "seconds_per_layer": ours, "layers_per_s": 1 / ours}]
    if importlib.util.find_spec("zigzag") is not None:
        from zigzag_side import time_one_layer  # noqa: PLC0415

        row = layer.assign(kind="conv")[
            ["name", "kind", "B", "K", "C", "OY", "OX", "FY", "FX", "G", "IY", "IX", "stride", "padding"]
        ]
        with tempfile.TemporaryDirectory() as tmp:
            seconds = time_one_layer(row.iloc[0], zigzag_core(load_hardware(HARDWARE)), workdir=Path(tmp))
        rows.append({"tool": "ZigZag 3.9.1 (LOMA, lpf 6)", "seconds_per_layer": seconds, "layers_per_s": 1 / seconds})
    return pd.DataFrame(rows)


def main() -> None:
    with pd.option_context("display.width", 200, "display.float_format", "{:,.4g}".format):
        print(time_sweeps().to_string(index=False))
        print()
        layers = time_layers()
        print(layers.to_string(index=False))
        if len(layers) == 2:
            print(f"speed-up per layer evaluation: {layers.layers_per_s.iloc[0] / layers.layers_per_s.iloc[1]:,.0f}x")


if __name__ == "__main__":
    main()
