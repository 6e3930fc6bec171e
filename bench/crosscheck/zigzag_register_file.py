"""The Edge TPU's register file size as ZigZag and we cost it: ResNet-18 (CIFAR) layers on one PE core at two sizes.

MONET Table II sweeps ``register_file_kb`` (8 ... 128 KB). In our engine the register file keeps a core's weights
(``config/hardware/edge_tpu.yaml``): its size decides which weight tiles stay while the inputs stream past, so it moves
how often the local memory is read for weights, and its energy per access grows with the square root of its size.
This script gives ZigZag 3.9.1 (LOMA, lpf 6, ``bench/crosscheck/zigzag_side.py``) the same PE core at 8 and 128 KB, the other
parameters at Table II's baseline (U = 64, L = 4, 2 MB), and prints per size and in total the latency and energy
both tools give the forward convolutions of ResNet-18 (CIFAR, batch 8, FP16), with each memory's share, and how each
total moves from 8 to 128 KB. Both sides minimise the energy-delay product per layer, as the sweep's mapping
objective does.

    bench/.venv-zigzag/bin/python bench/crosscheck/zigzag_register_file.py  # needs results/workloads/resnet18_cifar
    bench/.venv-zigzag/bin/python bench/crosscheck/zigzag_register_file.py OTHER_RUN/results/workloads/resnet18_cifar/inference
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from zigzag_crosscheck import ours  # noqa: E402
from zigzag_side import run_zigzag  # noqa: E402

from traincost.cost import op_table  # noqa: E402
from traincost.hardware import load_hardware  # noqa: E402
from traincost.workload import Workload  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
EDGE_TPU = REPO / "config/hardware/edge_tpu.yaml"
WORKLOAD = REPO / "results/workloads/resnet18_cifar/inference"
SIZES_KB = (8, 128)


def layers(folder: Path) -> pd.DataFrame:
    """The forward convolutions of the inference step in ``folder``, in both tools' layer columns."""
    table = op_table(Workload.read(folder / "ops.parquet", folder / "tensors.parquet"), phases=("forward",))
    rows = []
    for i in np.flatnonzero(table.kind == "conv").tolist():
        dims = {d: int(table.dims[d][i]) for d in ("B", "K", "C", "OY", "OX", "FY", "FX", "G")}
        stride = int(table.stride[i][0])
        x = int(table.x_tensor[i])
        rows.append(
            {"name": f"conv{i}", "layer": f"conv{i}", "kind": "conv", **dims}
            | {"IY": int(table.tensor_rows[x]), "IX": int(table.tensor_rows[x]), "stride": stride, "padding": dims["FY"] // 2}
            | {"stride_y": stride, "stride_x": stride, "dilation_y": 1, "dilation_x": 1, "macs": int(table.macs[i])}
        )
    return pd.DataFrame(rows)


def one_core(register_file_kb: int, folder: Path) -> Path:
    """The Edge TPU template with its PE core alone, at ``register_file_kb`` and the rest at Table II's baseline; its
    bus free, as ZigZag's core (``zigzag_core``) reads and writes DRAM without one."""
    data = yaml.safe_load(EDGE_TPU.read_text())
    data["cores"] = [c for c in data["cores"] if c["name"] == "pe"]
    data["cores"][0]["count"] = 1
    data["bus"]["energy_pj_per_bit"] = 0
    data["memories"] = {name: data["memories"][name] for name in ("register_file", "local_memory")}
    data["parameters"]["register_file_kb"]["default"] = register_file_kb
    path = folder / f"edge_tpu_pe_rf{register_file_kb}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def zigzag_core(register_file_kb: int) -> dict:
    """The same PE core as ``bench/crosscheck/zigzag_side.py`` takes it (one register file broadcast to the whole array)."""
    rf_pj = 0.156 * np.sqrt(register_file_kb / 8)
    return {
        "pe_array": {"K": 64, "C": 4, "OX": 4},
        "mac_energy_pj": 1.5,
        "word_bits": 16,
        "levels": [
            {"name": "register_file", "size_bytes": register_file_kb * 1024, "operands": ["W"]}
            | {"read_bw_bytes_per_cycle": 512, "read_energy_pj_per_bit": rf_pj},
            {"name": "local_memory", "size_bytes": 2 * 1024 * 1024, "operands": ["W", "I", "O"]}
            | {"read_bw_bytes_per_cycle": 256, "read_energy_pj_per_bit": 0.2032, "write_energy_pj_per_bit": 0.1848},
        ],
        "offchip": {"bandwidth_bytes_per_cycle": 32, "energy_pj_per_bit": 15.625},
    }


def main(folder: Path) -> None:
    shapes = layers(folder)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for kb in SIZES_KB:
            mine = ours(shapes, load_hardware(one_core(kb, folder)), "edp")
            theirs = run_zigzag(shapes, zigzag_core(kb), workdir=folder / f"zz{kb}", optimise="EDP")
            rows.append(
                {
                    "register_file_kb": kb,
                    "zigzag_cycles": theirs["latency_cycles"].sum(),
                    "ours_cycles": mine["ours_cycles"].sum(),
                    "zigzag_pj": theirs["energy_pj"].sum(),
                    "ours_pj": mine["ours_pj"].sum(),
                    "zigzag_rf_pj": theirs["energy_register_file_pj"].sum(),
                    "ours_rf_pj": mine["ours_pj_register_file"].sum(),
                    "zigzag_local_pj": theirs["energy_local_memory_pj"].sum(),
                    "ours_local_pj": mine["ours_pj_local_memory"].sum(),
                }
            )
    table = pd.DataFrame(rows).set_index("register_file_kb")
    moved = table.loc[SIZES_KB[-1]] / table.loc[SIZES_KB[0]]
    with pd.option_context("display.width", 200, "display.float_format", "{:.4g}".format):
        print(table.T.assign(**{f"{SIZES_KB[-1]} / {SIZES_KB[0]} KB": moved}).to_string())
        print("\nours / ZigZag:")
        for kb in SIZES_KB:
            row = table.loc[kb]
            ratios = {
                "latency": row.ours_cycles / row.zigzag_cycles,
                "energy": row.ours_pj / row.zigzag_pj,
                "register file": row.ours_rf_pj / row.zigzag_rf_pj,
                "local memory": row.ours_local_pj / row.zigzag_local_pj,
            }
            print(f"  {kb:>4} KB: " + ", ".join(f"{name} {value:.3f}" for name, value in ratios.items()))


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else WORKLOAD)
