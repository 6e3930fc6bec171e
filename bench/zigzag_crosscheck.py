"""Layer-by-layer cross-check of our analytical cost model against ZigZag on ResNet-18's forward layers.

Runs every conv and GEMM of ResNet-18 (224x224, batch 1, forward) on one weight-stationary core
(``bench/hardware/single_core_ws.yaml``), once with ``traincost.cost.mac_cost`` and once with ZigZag
(zigzag-dse, via ``bench/zigzag_side.py``) on the same hardware translated field by field, and prints
per layer both latencies and energies and their ratio (ours / ZigZag).

Both sides count the same things: MACs, every on-chip level, and the layer's inputs read from and
its output written to off-chip memory (ZigZag's DRAM level; for us the core's outside traffic at the
off-chip energy, as the scheduler charges it when nothing is resident). Latency on our side is
max(core latency, off-chip bytes / off-chip bandwidth), as the scheduler computes an op's duration.

Run (ZigZag and traincost in the bench venv)::

    python3 -m venv bench/.venv-zigzag
    bench/.venv-zigzag/bin/pip install -e . -r bench/requirements-zigzag.txt
    snakemake --cores 2 results/workloads/resnet18/ops.parquet     # or any full run
    bench/.venv-zigzag/bin/python bench/zigzag_crosscheck.py
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from traincost.cost import mac_cost, op_table
from traincost.hardware import HardwareSpec, load_hardware
from traincost.workload import Workload

sys.path.insert(0, str(Path(__file__).parent))
from zigzag_side import run_zigzag  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
HARDWARE = REPO / "bench/hardware/single_core_ws.yaml"
_BITS = 8


def zigzag_core(hw: HardwareSpec) -> dict:
    """Our single-core hardware as the core dict of ``zigzag_side`` (same numbers, field by field)."""
    (core,) = hw.cores
    return {
        "pe_array": {axis.dim: int(axis.size[0]) for axis in core.pe_array},
        "mac_energy_pj": float(core.mac_energy_pj[0]),
        "word_bits": 8 * hw.word_bytes,
        "levels": [
            {
                "name": level.memory.name,
                "size_bytes": int(level.memory.size_bytes[0]),
                "operands": sorted(level.operands),
                "read_bw_bytes_per_cycle": float(level.memory.read_bandwidth_bytes_per_cycle[0]),
                "write_bw_bytes_per_cycle": float(level.memory.write_bandwidth_bytes_per_cycle[0]),
                "read_energy_pj_per_bit": float(level.memory.read_energy_pj_per_bit[0]),
                "write_energy_pj_per_bit": float(level.memory.write_energy_pj_per_bit[0]),
            }
            for level in core.levels
        ],
        "offchip": {
            "bandwidth_bytes_per_cycle": float(hw.offchip.bandwidth_bytes_per_cycle[0]),
            "energy_pj_per_bit": float(hw.offchip.energy_pj_per_bit[0]),
        },
    }


def forward_layers(workload: Workload) -> pd.DataFrame:
    """Forward convs and GEMMs with the input extent and stride ZigZag needs."""
    ops = workload.ops[(workload.ops["phase"] == "forward") & workload.ops["kind"].isin(["conv", "gemm"])].copy()
    shapes = workload.tensors.set_index("tensor")["shape"]
    rows = []
    for op in ops.itertuples():
        if op.kind == "conv":
            height, width = list(shapes[op.inputs[0]])[2:]
            stride = max(1, round(height / op.OY))
            rows.append({"IY": height, "IX": width, "stride": stride, "padding": op.FY // 2, "zz_kind": "conv"})
        else:
            rows.append({"IY": op.OY, "IX": 1, "stride": 1, "padding": 0, "zz_kind": "gemm"})
    extra = pd.DataFrame(rows, index=ops.index)
    return pd.concat([ops, extra], axis=1)


def ours(layers: pd.DataFrame, workload: Workload, hw: HardwareSpec) -> pd.DataFrame:
    """Our latency and energy per layer, with inputs from and the output to off-chip memory."""
    table = op_table(workload, phases=("forward",))
    index = np.array([int(np.flatnonzero(table.op == op)[0]) for op in layers["op"]])
    (core,) = hw.cores
    cost = mac_cost(core, table, index, word_bytes=hw.word_bytes)
    inside = cost.energy_mac_pj + sum(cost.energy_level_pj.values())
    fetched = sum(cost.ext_in_bytes.values())
    written = cost.ext_write_bytes
    top = core.top
    moved_pj = fetched * _BITS * (hw.offchip.energy_pj_per_bit + top.write_energy_pj_per_bit)[:, None]
    moved_pj += written * _BITS * (hw.offchip.energy_pj_per_bit + top.read_energy_pj_per_bit)[:, None]
    offchip_cycles = (fetched + written) / hw.offchip.bandwidth_bytes_per_cycle[:, None]
    return pd.DataFrame(
        {
            "ours_latency_cycles": np.maximum(cost.latency_cycles, offchip_cycles)[0],
            "ours_energy_pj": (inside + moved_pj)[0],
            "ours_utilization": cost.utilization[0],
        },
        index=layers.index,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=Path, default=REPO / "results/workloads/resnet18/ops.parquet")
    parser.add_argument("--tensors", type=Path, default=REPO / "results/workloads/resnet18/tensors.parquet")
    parser.add_argument("--lpf-limit", type=int, default=6, help="ZigZag LOMA loop-prime-factor limit")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    if not args.ops.is_file():
        sys.exit(f"{args.ops}: missing; run `snakemake --cores 2 {args.ops.relative_to(REPO)}` first")
    workload = Workload.read(args.ops, args.tensors)
    hw = load_hardware(HARDWARE)
    layers = forward_layers(workload)
    mine = ours(layers, workload, hw)
    zz_input = layers.assign(kind=layers["zz_kind"], name=layers["name"])[
        ["name", "kind", "B", "K", "C", "OY", "OX", "FY", "FX", "G", "IY", "IX", "stride", "padding"]
    ].reset_index(drop=True)
    with tempfile.TemporaryDirectory() as tmp:
        theirs = run_zigzag(zz_input, zigzag_core(hw), workdir=Path(tmp), lpf_limit=args.lpf_limit)
    table = pd.DataFrame(
        {
            "layer": [n.removeprefix("/").replace("/Conv", "") for n in layers["name"]],
            "macs": layers["macs"].to_numpy(),
            "ours_cycles": mine["ours_latency_cycles"].to_numpy(),
            "zigzag_cycles": theirs["latency_cycles"].to_numpy(),
            "ours_pj": mine["ours_energy_pj"].to_numpy(),
            "zigzag_pj": theirs["energy_pj"].to_numpy(),
        }
    )
    table["latency_ratio"] = table["ours_cycles"] / table["zigzag_cycles"]
    table["energy_ratio"] = table["ours_pj"] / table["zigzag_pj"]
    with pd.option_context("display.width", 200, "display.float_format", "{:.4g}".format):
        print(table.to_string(index=False))
    for what in ("latency_ratio", "energy_ratio"):
        ratio = table[what]
        worst = float(np.exp(np.abs(np.log(ratio))).max())
        median = float(np.exp(np.abs(np.log(ratio.median()))))
        verdict = "meets" if median <= 1.5 and worst <= 3 else "misses"
        print(f"{what}: median {ratio.median():.3f}, worst factor {worst:.2f} -> {verdict} the target (median 1.5x, all 3x)")


if __name__ == "__main__":
    main()
