"""Stream's side of the cross-check: run Stream 2.1.1 on one network built by its own workload builders, on one of its
bundled multi-core accelerators, layer-fused or layer by layer, and print what it found as one JSON object.

Runs in Stream's own venv (Python 3.12, ``bench/crosscheck/requirements-stream.txt``; ``bench/crosscheck/stream.py`` builds it
and calls this script). It imports nothing of traincost.

What is read from Stream (all of ``stream.api.evaluate_mapping``'s context, 2.1.1):

* ``latency_cycles``: ``MappingEstimate.cycles``, the groups' allocation latencies and the dispatch overhead.
* per group (``group_allocations``): its layers, its latency and ``fusion_splits``, the tiles each layer of the group
  is cut into (their product);
* per layer and core (``group_<i>/core_cost_lut.yaml``, written with the artifacts): ZigZag's latency and energy of one
  tile on that core; a layer's cycles are its slowest core's tile latency times the tiles, its energy the sum over its
  cores of the tile energy times the tiles;
* off chip (``group_memory_accesses``, the off-chip core's accesses of its port width): bytes read and written, and
  their energy at the off-chip memory's ``r_cost`` / ``w_cost`` per access. Stream 2.1.1 reports no whole-network
  energy; the cross-check's is the layers' energy plus this (its links cost 0 pJ in every bundled example).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import onnx
import yaml
from onnx import TensorProto
from stream.api import SolveOptions, evaluate_mapping
from stream.inputs.testing.workload import make_resnet_subgraph as builders

NETWORKS = ("residual_blocks", "stride2_block", "resnet18_stage1", "resnet18_stage2_downsample")


def build_network(name: str, out_dir: Path) -> Path:
    """The network's ONNX file, made by Stream's ``make_resnet_subgraph`` builders (int8, batch 1)."""
    int8 = TensorProto.INT8
    match name:
        case "residual_blocks":  # two residual blocks at 64 channels, 32 x 32 (the builder's DUAL_RESIDUAL)
            model = builders._build_dual_residual(1, 64, 32, 32, int8, int8)
        case "stride2_block":  # a stride-2 downsampling block, 64 -> 128 channels, 32 x 32 in
            model = builders._build_stride2_downsample(1, 64, 32, 32, 128, int8, int8)
        case "resnet18_stage1":  # ResNet-18's first stage: two residual blocks at 64 channels, 56 x 56
            model = builders._build_dual_residual(1, 64, 56, 56, int8, int8)
        case "resnet18_stage2_downsample":  # ResNet-18's second stage's first block: 64 -> 128 channels, 56 x 56 in
            model = builders._build_stride2_downsample(1, 64, 56, 56, 128, int8, int8)
        case _:
            raise SystemExit(f"stream_side: network {name!r}: expected one of {', '.join(NETWORKS)}")
    path = out_dir / f"{name}.onnx"
    onnx.save(onnx.shape_inference.infer_shapes(model), path)
    return path


def run(network: str, hardware: Path, mode: str, out_dir: Path) -> dict:
    out_dir.mkdir(parents=True, exist_ok=True)
    onnx_path = build_network(network, out_dir)
    stage_options = {"fusion_cut_points": "per-layer"} if mode == "layer_by_layer" else {}
    began = time.perf_counter()
    estimate = evaluate_mapping(
        str(hardware), str(onnx_path), str(out_dir / mode), options=SolveOptions(artifacts=True, stage_options=stage_options)
    )
    seconds = time.perf_counter() - began
    context = estimate.context
    layers = []
    for group, allocation in sorted(context.get("group_allocations").items()):
        tiles = math.prod(int(v) for v in allocation["fusion_splits"].values()) or 1
        lut = yaml.safe_load((out_dir / mode / f"group_{group}" / "core_cost_lut.yaml").read_text())
        for entry in lut["nodes"]:
            cores = entry["cores"]
            layers.append(
                {
                    "layer": entry["node"],
                    "group": group,
                    "group_latency_cycles": allocation["latency"]["total"],
                    "cores": [c["core_id"] for c in cores],
                    "tiles": tiles,
                    "tile_cycles": max(c["latency_cycles"] for c in cores),
                    "cycles": tiles * max(c["latency_cycles"] for c in cores),
                    "energy_pj": tiles * sum(c["energy_pj"] for c in cores),
                }
            )
    return {
        "network": network,
        "hardware": hardware.stem,
        "mode": mode,
        "onnx": str(onnx_path),
        "latency_cycles": estimate.cycles,
        "seconds": seconds,
        "layers": layers,
        "offchip": _offchip(context, hardware),
    }


def _offchip(context: object, hardware: Path) -> dict:
    """Bytes read and written at the off-chip core and their energy (its accesses are of its port's width)."""
    accelerator = yaml.safe_load(hardware.read_text())
    listed = str(accelerator["cores"][accelerator["offchip_core_id"]])
    core_file = hardware.parent / listed  # as Stream finds a core file: beside the accelerator, else in its cores folder
    if not core_file.is_file():
        core_file = hardware.parent / "cores" / listed
    (memory,) = yaml.safe_load(core_file.read_text())["memories"].values()
    width_bits = max(port["bandwidth_max"] for port in memory["ports"])
    reads = writes = 0
    for accesses in context.get("group_memory_accesses").values():
        for core in accesses["cores"]:
            if core["is_offchip"]:
                reads += core["read"]
                writes += core["write"]
    return {
        "read_bytes": reads * width_bits / 8,
        "write_bytes": writes * width_bits / 8,
        "energy_pj": reads * float(memory["r_cost"]) + writes * float(memory["w_cost"]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--network", required=True, choices=NETWORKS)
    parser.add_argument("--hardware", type=Path, required=True, help="one of Stream's accelerator YAML files")
    parser.add_argument("--mode", required=True, choices=["layer_fused", "layer_by_layer"])
    parser.add_argument("--out-dir", type=Path, required=True, help="where Stream writes its artifacts and the ONNX file")
    args = parser.parse_args()
    json.dump(run(args.network, args.hardware.resolve(), args.mode, args.out_dir), sys.stdout)


if __name__ == "__main__":
    main()
