"""How fast the vectorised cost model sweeps the MONET grids, next to ZigZag's time for one layer.

Times the full Edge TPU grid (MONET Table II, 10,000 configurations) for ResNet-18 CIFAR inference and training, and
the full FuseMax grid (Table III, 2,560 configurations) for the small GPT-2, each as the workflow runs it (the mode,
fusion, resident fraction, mapping objective and allocation of config/config.yaml), on this machine; then ``mac_cost``
on the MAC ops of a ResNet-18 CIFAR training step at 10,000 configurations of ZigZag's ``eyeriss_like`` (imported; the
sizes of its weight and output register files and of its two SRAMs swept), with the engine's own tiles (``any``) and
with ``tiling: divisors`` (every tile a divisor of its loop, ``Core.tiling``). That grid exercises what the study
hardware does not: the orders that hold partial sums in the PEs, bands that keep outputs tried with the array's block,
ports timed per port, registers serving some axes, groups moved together, and each conv gradient costed on its own
loops (``OWN_LOOPS``), so it shows what those candidates cost where they apply. Compare two versions by running them
alternately on one machine state: on a shared 2-core machine the load moves wall and CPU seconds alike by tens of
percent. If the ZigZag cross-check has run (``bench/crosscheck/zigzag_crosscheck.py``, whose per-layer ZigZag tables
are cached in ``bench/results``), prints ZigZag's seconds per layer search beside ours per layer and configuration.

    python bench/sweep_speed.py            # needs results/workloads/{resnet18_cifar,gpt2_small} (snakemake)
    python bench/sweep_speed.py --config CONFIG --results RESULTS   # another config's sweeps, another run's workloads
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import yaml
from snakemake.utils import validate

from traincost.cost import mac_cost, op_table
from traincost.hardware import load_hardware
from traincost.hardware.import_zigzag import hardware_yaml_text, zigzag_hardware
from traincost.hardware.spec import TILINGS
from traincost.schedule import SchedulePlan
from traincost.schedule.evaluate import evaluate_sweep
from traincost.schedule.manual_fusion import read_manual_fusion
from traincost.workflow.plan import Plan
from traincost.workload import Workload

REPO = Path(__file__).resolve().parents[1]
# the bars, inference and training together: the Edge TPU grid's of the speed issue (on 2 cores), FuseMax's the first one
TARGET_SECONDS = {"edge_tpu_resnet18": 5.0, "fusemax_gpt2": 60.0}
EYERISS = REPO / "tests/fixtures/hardware/zigzag/hardware/eyeriss_like.yaml"
# the eyeriss_like grid: ten sizes of each memory, bytes
EYERISS_GRID = {
    "rf_64B_W": [16, 32, 48, 64, 96, 128, 192, 256, 384, 512],
    "rf_16B": [4, 8, 12, 16, 24, 32, 48, 64, 96, 128],
    "sram_8KB": [2048 * k for k in range(1, 11)],
    "sram_1M": [2**17 * k for k in range(1, 11)],
}


def workload_of(results: Path, name: str) -> Workload:
    folder = results / "workloads" / name
    if not (folder / "ops.parquet").is_file():
        sys.exit(f"{folder}/ops.parquet missing: run `snakemake --cores 2 results/workloads/{name}/ops.parquet` first")
    return Workload.read(folder / "ops.parquet", folder / "tensors.parquet")


def time_sweeps(config: dict, results: Path) -> pd.DataFrame:
    rows = []
    for name, spec in config["hardware_sweeps"].items():
        workload = workload_of(results, spec["workload"])
        fused = read_manual_fusion(REPO / spec["fusion"], workload.ops) if "fusion" in spec else ()
        plan = SchedulePlan.from_mode(
            spec["mode"],
            fused=fused,
            resident_fraction=Plan.sweep_resident(spec),
            mapping_objective=spec["mapping_objective"],
            allocation=spec["allocation"],
        )
        designs = len(load_hardware(REPO / spec["hardware"], sweep=spec["grid"]).distinct_configs()[0])
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
                    "designs": designs,  # configurations whose numbers all differ, each scheduled once
                    "ops": ops,
                    "seconds": seconds,
                    "networks_per_s": len(table) / seconds,
                    "op_evaluations_per_s": len(table) * ops / seconds,
                }
            )
        rows.append({"sweep": name, "step": "both", "seconds": total, "target_s": TARGET_SECONDS.get(name, np.nan)})
    return pd.DataFrame(rows)


def time_per_pe_grid(folder: Path, results: Path) -> pd.DataFrame:
    """``mac_cost`` on a ResNet-18 CIFAR training step's MAC ops at the 10,000 configurations of ``EYERISS_GRID``,
    with the engine's own tiles and with ``tiling: divisors``."""
    data = zigzag_hardware(EYERISS)
    for memory, sizes in EYERISS_GRID.items():
        data["parameters"][f"{memory}_bytes"] = {"default": sizes[0], "description": f"{memory} size, bytes"}
        data["memories"][memory]["size_bytes"] = f"{memory}_bytes"
    path = folder / "eyeriss_like_grid.yaml"
    path.write_text(hardware_yaml_text(data, header="bench/sweep_speed.py: eyeriss_like with its memory sizes swept"))
    grid = load_hardware(path, sweep={f"{memory}_bytes": sizes for memory, sizes in EYERISS_GRID.items()})
    table = op_table(workload_of(results, "resnet18_cifar"))
    index = np.flatnonzero(table.is_mac)
    rows = []
    for tiling in TILINGS:
        began, cpu = time.perf_counter(), time.process_time()
        mac_cost(replace(grid.cores[0], tiling=tiling), table, index)
        row = {"sweep": "eyeriss_like_resnet18", "tiling": tiling, "step": "training MAC ops", "configurations": grid.n_configs}
        rows.append(row | {"ops": len(index), "seconds": time.perf_counter() - began, "cpu_s": time.process_time() - cpu})
    return pd.DataFrame(rows)


def time_layers(config: dict, results: Path) -> pd.DataFrame:
    """ResNet-18 CIFAR's forward convolutions: our model (the 10,000-configuration grid at once) vs ZigZag.

    ZigZag's seconds per layer are those its own runs took in ``bench/crosscheck/zigzag_crosscheck.py`` (the cached
    per-layer tables in ``bench/results``, ZigZag's ResNet-18 at 224x224 on its bundled hardware), so
    ZigZag need not be installed here; without that cache only our side is printed.
    """
    workload = workload_of(results, "resnet18_cifar")
    table = op_table(workload, phases=("forward",))
    index = np.flatnonzero(table.kind == "conv")
    grid = load_hardware(REPO / "config/hardware/edge_tpu.yaml", sweep=config["hardware_sweeps"]["edge_tpu_resnet18"]["grid"])
    began = time.perf_counter()
    mac_cost(grid.cores[0], table, index)
    ours = (time.perf_counter() - began) / (grid.n_configs * len(index))
    rows = [{"tool": f"traincost ({len(index)} layers x {grid.n_configs:,} configurations at once)", "seconds_per_layer": ours}]
    runs = [pd.read_parquet(path) for path in sorted((REPO / "bench/results").glob("zigzag_resnet18_*.parquet"))]
    if runs:  # each run's wall seconds (one number per run, on every row) over its layer searches
        per_layer = [run["zigzag_seconds"].iloc[0] / len(run) for run in runs]
        tool = f"ZigZag 3.9.1 (wall seconds per layer search, median of {len(runs)} ResNet-18 runs in bench/results)"
        rows.append({"tool": tool, "seconds_per_layer": float(np.median(per_layer))})
    return pd.DataFrame(rows).assign(layers_per_s=lambda t: 1 / t["seconds_per_layer"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=REPO / "config/config.yaml", help="the workflow config")
    parser.add_argument("--results", type=Path, default=REPO / "results", help="the workflow's results folder")
    args = parser.parse_args()
    config = yaml.safe_load(args.config.read_text())
    validate(config, REPO / "workflow/schemas/config.schema.yaml")  # the schema's defaults, as the workflow reads them
    with pd.option_context("display.width", 200, "display.float_format", "{:,.4g}".format):
        print(time_sweeps(config, args.results).to_string(index=False))
        print()
        with tempfile.TemporaryDirectory() as tmp:
            print(time_per_pe_grid(Path(tmp), args.results).to_string(index=False))
        print()
        layers = time_layers(config, args.results)
        print(layers.to_string(index=False))
        if len(layers) == 2:
            ratio = layers.layers_per_s.iloc[0] / layers.layers_per_s.iloc[1]
            print(f"layer evaluations per second, ours / ZigZag's: {ratio:,.0f}x")


if __name__ == "__main__":
    main()
