"""Cross-check of our cost model against ZigZag, networks x hardware, layer by layer.

Networks: ResNet-18 and MobileNetV2 (ImageNet, 224x224, batch 1: the shape-only ONNX files bundled with
zigzag-dse 3.9.1) and the GEMMs of one GPT-2 (124M) block at 1,024 tokens (QKV, one head's QK^T and AV
counted 12 times, the attention projection, the two MLP GEMMs). Hardware: ZigZag's bundled
``tpu_like``, ``edge_tpu_like`` and ``ascend_like`` with their bundled mappings, given to ZigZag as
they are and to us through ``traincost hardware import zigzag`` (``traincost.hardware.import_zigzag``).

ZigZag parses each network itself (its Conv and Gemm layers; Add, ReLU and pooling are not costed)
and searches each layer's temporal mapping (LOMA, ``--lpf-limit``; ``opt`` = ``--zigzag-opt``). Our
side costs the same layers, with the dimensions, strides and input sizes ZigZag parsed, with
``traincost.cost.mac_cost`` on the imported core (loop order at the top memory chosen by
``--objective``), plus what ZigZag also counts: each layer's inputs read from DRAM and written into
the top memory, and its output read out of the top memory and written to DRAM (the off-chip link's
read and write energies per bit: ZigZag's DRAM ``r_cost``/``w_cost``). Our latency is max(core
latency, off-chip bytes / off-chip bandwidth), as the scheduler times an op.

Results (``--lpf-limit 3``, latency objective on both sides; ours / ZigZag, whole network):

============  =============  =======  ======  ==========================
network       hardware       latency  energy  worst layer (lat., energy)
============  =============  =======  ======  ==========================
ResNet-18     tpu_like       0.95     0.87    0.69, 0.73
ResNet-18     edge_tpu_like  1.09     1.74    1.34, 2.38
ResNet-18     ascend_like    1.01     1.07    1.30, 1.16
MobileNetV2   tpu_like       0.98     0.85    1.28, 0.63
MobileNetV2   edge_tpu_like  0.89     1.11    0.59, 1.47
MobileNetV2   ascend_like    1.01     0.95    1.35, 0.68
GPT-2 block   tpu_like       0.93     0.82    0.75, 0.57
GPT-2 block   edge_tpu_like  0.95     1.51    0.67, 2.16
GPT-2 block   ascend_like    0.55     0.34    0.25, 0.13
============  =============  =======  ======  ==========================

(Before the per-op loop-order choice and the stride-aware footprints, with the engine's single
weight-stationary order, ResNet-18 on ``edge_tpu_like`` was 1.31 / 1.96 and on ``ascend_like``
1.65 / 1.96, the GPT-2 block 1.53 / 4.63 and 2.18 / 2.16.) The differences that remain, and which
model difference causes each (the ``hint`` column says which applies per layer where it can be
measured):

* ``edge_tpu_like`` energy: DRAM energy agrees layer by layer (identical on ResNet-18's layers), but
  our on-chip energy is 2.6-4x ZigZag's on every layer that is not depthwise, 1x1 as much as 3x3 or
  7x7 (depthwise layers agree, 0.74-0.94). The likely cause: inside a core our loop order is the
  dataflow's (weight-stationary) at every level, so with a 1-byte weight register per PE the
  partial sums go back to the 2 MB SRAM once per reduction tile of the weight register; ZigZag's
  search keeps the reduction loops innermost under its per-PE output registers. A loop-order
  choice per memory level, not only above the core, would test it.
* ZigZag loads the first tile and stores the last one serially around the compute (its
  on/off-loading cycles, up to half a small layer's cycles); we overlap them but for one fill.
* GPT-2's ``mlp_proj`` on ``ascend_like`` (reduction 3,072): we keep an output block resident and
  read weights and inputs from DRAM about once; ZigZag's search at ``--lpf-limit 3`` streams
  partial sums off chip (its DRAM traffic is 12x ours). A larger ``--lpf-limit`` is the test.
* ``min_access_bits`` (ZigZag's ``bandwidth_min``) is loaded but not yet charged by the engine.

ZigZag's per-layer results are cached in ``bench/results/zigzag_<network>_<hardware>_lpf<N>.parquet``
(delete them to re-run ZigZag), so re-running our side after a change to the engine takes seconds.
The per-layer table goes to ``bench/results/zigzag_crosscheck.parquet`` (not committed).

Install (a venv of its own; the project first, then ZigZag: ``bench/requirements-zigzag.txt``)::

    python3 -m venv bench/.venv-zigzag
    bench/.venv-zigzag/bin/pip install -e .
    bench/.venv-zigzag/bin/pip install -r bench/requirements-zigzag.txt
    bench/.venv-zigzag/bin/python bench/zigzag_crosscheck.py --networks resnet18 --hardware tpu_like

Measured on this project's 2-core machine, from a fresh venv, the three commands above up to the
run: 30 min 41 s wall, 1 min 56 s of user CPU, with the machine's load average at about 20 (other
jobs); an earlier fresh install of the same packages at a load near 10 took 8 min 27 s wall, 1 min 42
s user. ``pip check`` is clean; pip keeps the project's protobuf 6.33.6, ortools 9.15.6755 and onnx
1.23.2. ZigZag on ResNet-18 / ``tpu_like`` at ``--lpf-limit 4``: 75 s of CPU (332 s wall on the busy
machine); the whole table at ``--lpf-limit 3`` needs tens of minutes of CPU (``--jobs``, and the
cache, help).
"""

from __future__ import annotations

import argparse
import logging
import re
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from traincost.cost import mac_cost, op_table
from traincost.cost.core_cost import MAPPINGS, ExternalPath
from traincost.hardware import HardwareSpec, load_hardware
from traincost.hardware.import_zigzag import hardware_yaml_text, zigzag_hardware
from traincost.workload import LOOP_DIMS, Workload

sys.path.insert(0, str(Path(__file__).parent))
from zigzag_side import _quiet_zigzag, workload_entry  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench/results"
FIXTURES = REPO / "tests/fixtures/hardware/zigzag"
NETWORKS = ("resnet18", "mobilenetv2", "gpt2_block")
HARDWARE = ("tpu_like", "edge_tpu_like", "ascend_like")
# ZigZag's ONNX reader: 8-bit inputs, weights and final outputs, partial sums in twice the input bits
ZIGZAG_PRECISION = {"W": 8, "I": 8, "O": 16, "O_final": 8}
# one GPT-2 (124M) block at 1,024 tokens: (name, M, C (reduction), K (outputs), times)
GPT2_BLOCK = (
    ("qkv", 1024, 768, 2304, 1),
    ("attn_qk_per_head", 1024, 64, 1024, 12),
    ("attn_av_per_head", 1024, 1024, 64, 12),
    ("attn_proj", 1024, 768, 768, 1),
    ("mlp_fc", 1024, 768, 3072, 1),
    ("mlp_proj", 1024, 3072, 768, 1),
)
_RELATION = re.compile(r"I([XY])\s*=\s*(\d+)\s*\*\s*O[XY]\s*\+\s*(\d+)\s*\*\s*F[XY]")


def zigzag_inputs() -> Path:
    """ZigZag's bundled ``inputs`` folder (hardware, mapping, workload); without ZigZag installed, the copies of its
    hardware and mapping files in ``tests/fixtures/hardware/zigzag`` (enough to re-run our side on cached layers)."""
    try:
        import zigzag  # noqa: PLC0415
    except ImportError:
        return FIXTURES
    return Path(zigzag.__file__).parent / "inputs"


def _workload(network: str, inputs: Path) -> str | list[dict[str, Any]]:
    if network == "gpt2_block":
        layers = [
            {"name": name, "kind": "gemm", "B": 1, "K": k, "C": c, "OY": m, "OX": 1, "FY": 1, "FX": 1, "G": 1}
            for name, m, c, k, _ in GPT2_BLOCK
        ]
        return [workload_entry(layer, i, ZIGZAG_PRECISION) for i, layer in enumerate(layers)]
    return str(inputs / f"workload/{network}.onnx")


def _layer_row(cme: Any, times: int) -> dict[str, Any]:
    """One ZigZag layer: its name, dimensions in our loop names, window geometry and ZigZag's results."""
    layer = cme.layer
    sizes = {str(dim): int(size) for dim, size in layer.layer_dim_sizes.items()}
    if "D" in sizes:  # ZigZag's Gemm: O[d][k] += I[d][c] * W[c][k]
        sizes["OY"] = sizes.pop("D")
    dims = {dim: sizes.get(dim, 1) for dim in LOOP_DIMS}
    window = {"stride_y": 1, "stride_x": 1, "dilation_y": 1, "dilation_x": 1}
    for relation in layer.dimension_relations:
        match = _RELATION.search(str(relation))
        if match:
            axis = match.group(1).lower()
            window |= {f"stride_{axis}": int(match.group(2)), f"dilation_{axis}": int(match.group(3))}
    extent = {str(dim): int(size) for dim, size in (layer.pr_layer_dim_sizes or {}).items()}
    zz = cme.accelerator.memory_hierarchy
    dram = 0.0
    for layer_op, energies in cme.mem_energy_breakdown.items():
        levels = zz.get_memory_levels(cme.memory_operand_links.layer_to_mem_op(layer_op))
        dram += sum(float(e) for lv, e in zip(levels, energies, strict=False) if lv.name == "dram")
    return {
        "layer": str(layer.name).removeprefix("/").replace("/Conv", "").replace("/Gemm", ""),
        "kind": "conv" if str(layer.type) == "Conv" else "gemm",
        **dims,
        **window,
        "IY": extent.get("IY", dims["OY"]),
        "IX": extent.get("IX", dims["OX"]),
        "times": times,
        "macs": int(layer.total_mac_count),
        "zigzag_cycles": float(cme.latency_total2),
        "zigzag_pj": float(cme.energy_total),
        "zigzag_dram_pj": dram,
        "zigzag_onloading_cycles": float(cme.data_onloading_cycle),
        "zigzag_offloading_cycles": float(cme.data_offloading_cycle),
        "zigzag_spatial_utilization": float(cme.mac_spatial_utilization),
    }


def run_zigzag(network: str, hardware: str, lpf_limit: int, opt: str) -> pd.DataFrame:
    """ZigZag's per-layer results for one pair (cached under bench/results)."""
    cache = RESULTS / f"zigzag_{network}_{hardware}_lpf{lpf_limit}_{opt}.parquet"
    if cache.is_file():
        return pd.read_parquet(cache)
    from zigzag.api import get_hardware_performance_zigzag  # noqa: PLC0415

    inputs = zigzag_inputs()
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp, _quiet_zigzag(logging.ERROR):
        _, _, cmes = get_hardware_performance_zigzag(
            _workload(network, inputs),
            str(inputs / f"hardware/{hardware}.yaml"),
            str(inputs / f"mapping/{hardware}.yaml"),
            opt=opt,
            dump_folder=tmp,
            lpf_limit=lpf_limit,
            loma_show_progress_bar=False,
        )
    times = {name: n for name, *_, n in GPT2_BLOCK}
    rows = [
        _layer_row(cme, times.get(re.sub(r"^L\d+_", "", str(cme.layer.name)), 1))
        for cme, _ in cmes[0][1]
        if str(cme.layer.type) in ("Conv", "Gemm", "MatMul")
    ]
    table = pd.DataFrame(rows).assign(network=network, hardware=hardware, zigzag_seconds=time.perf_counter() - start)
    RESULTS.mkdir(parents=True, exist_ok=True)
    table.to_parquet(cache)
    return table


def imported(hardware: str, folder: Path) -> HardwareSpec:
    """ZigZag's bundled hardware through ``traincost hardware import zigzag``, loaded."""
    path = folder / f"{hardware}.yaml"
    data = zigzag_hardware(zigzag_inputs() / f"hardware/{hardware}.yaml")
    path.write_text(hardware_yaml_text(data, header=f"ZigZag {hardware}, imported by bench/zigzag_crosscheck.py"))
    return load_hardware(path)


def as_workload(layers: pd.DataFrame) -> Workload:
    """ZigZag's layers as independent ops of one Workload: each its own input, weight and output tensor."""
    ops, tensors = [], []
    for i, row in enumerate(layers.itertuples()):
        dims = {dim: int(getattr(row, dim)) for dim in LOOP_DIMS}
        shapes = {
            "input": [dims["B"], dims["C"] * dims["G"], int(row.IY), int(row.IX)],
            "weight": [dims["K"] * dims["G"], dims["C"], dims["FY"], dims["FX"]],
            "output": [dims["B"], dims["K"] * dims["G"], dims["OY"], dims["OX"]],
        }
        ids = {kind: 3 * i + j for j, kind in enumerate(shapes)}
        ops.append(
            {"op": i, "name": row.layer, "op_type": "Conv" if row.kind == "conv" else "Gemm", "kind": row.kind}
            | {"phase": "forward", "layer": row.layer}
            | dims
            | {key: int(getattr(row, key)) for key in ("stride_y", "stride_x", "dilation_y", "dilation_x")}
            | {"macs": int(row.macs), "elementwise_ops": 0, "inputs": [ids["input"], ids["weight"]], "outputs": [ids["output"]]}
        )
        for kind, shape in shapes.items():
            tensors.append(
                {
                    "tensor": ids[kind],
                    "name": f"{row.layer}.{kind}",
                    "kind": kind,
                    "shape": shape,
                    "bytes": int(np.prod(shape)),
                    "producer": i if kind == "output" else -1,
                    "consumers": [] if kind == "output" else [i],
                }
            )
    frame = pd.DataFrame(tensors).assign(dtype_bytes=1, saved_for_backward=False, updates=-1)
    return Workload(ops=pd.DataFrame(ops), tensors=frame, meta={"model": "zigzag_layers"})


def ours(layers: pd.DataFrame, hw: HardwareSpec, objective: str) -> pd.DataFrame:
    """Our latency and energy per layer, with the inputs from and the output to off-chip memory."""
    table = op_table(as_workload(layers), phases=("forward",))
    (core,) = hw.cores
    index = np.arange(len(layers))
    external = ExternalPath.of(hw, core)
    cost = mac_cost(core, table, index, external=external, objective=objective)
    overlapped = mac_cost(replace(core, tile_io="overlapped"), table, index, external=external, objective=objective)
    inside = cost.energy_mac_pj + sum(cost.energy_level_pj.values())
    fetched = sum(cost.ext_in_bytes.values())
    written = cost.ext_write_bytes
    top, offchip = core.top, hw.offchip
    moved_pj = fetched * 8 * (offchip.read_energy_pj_per_bit + top.write_energy_pj_per_bit)[:, None]
    moved_pj += written * 8 * (offchip.write_energy_pj_per_bit + top.read_energy_pj_per_bit)[:, None]
    offchip_cycles = (fetched + written) / offchip.bandwidth_bytes_per_cycle[:, None]
    return pd.DataFrame(
        {
            "ours_cycles": np.maximum(cost.latency_cycles, offchip_cycles)[0],
            "ours_pj": (inside + moved_pj)[0],
            "ours_dram_pj": (
                fetched * 8 * offchip.read_energy_pj_per_bit[:, None] + written * 8 * offchip.write_energy_pj_per_bit[:, None]
            )[0],
            "ours_utilization": cost.utilization[0],
            "ours_serial_cycles": (cost.latency_cycles - overlapped.latency_cycles)[0],
            "ours_offchip_cycles": offchip_cycles[0],
            "ours_mapping": [MAPPINGS[m] if m >= 0 else "" for m in cost.mapping[0]],
            "ours_reduction_levels": cost.reduction_levels[0],
        },
        index=layers.index,
    )


def hints(table: pd.DataFrame, *, band: float = 1.3) -> pd.Series:
    """For a layer outside ``band`` on latency or energy, the measured differences that point at the cause (the
    module docstring says, from ZigZag's per-level accesses, what lies behind each)."""

    def outside(ratio: float) -> bool:
        return bool(abs(np.log(ratio)) > np.log(band))

    def one(row: pd.Series) -> str:
        if not (outside(row.latency_ratio) or outside(row.energy_ratio)):
            return ""
        found = []
        if row.G > 1:
            found.append("depthwise/grouped")
        dram = row.ours_dram_pj / row.zigzag_dram_pj if row.zigzag_dram_pj > 0 else np.inf
        if outside(dram):
            found.append(f"off-chip traffic ours/ZigZag {dram:.2f}")
        if outside(row.energy_ratio):
            onchip = (row.ours_pj - row.ours_dram_pj) / max(row.zigzag_pj - row.zigzag_dram_pj, 1e-30)
            if outside(onchip):
                found.append(f"on-chip energy ours/ZigZag {onchip:.2f}")
        if outside(row.latency_ratio):
            # ZigZag's off-chip bytes, estimated as ours scaled by the two off-chip energies, over the same link
            bound = row.ours_offchip_cycles * row.zigzag_dram_pj / max(row.ours_dram_pj, 1e-30)
            if row.zigzag_cycles < 0.9 * bound:
                found.append(
                    f"ZigZag's cycles are {row.zigzag_cycles / bound:.0%} of its own off-chip bytes over the link's "
                    "bandwidth (ours are at least that)"
                )
            theirs = row.zigzag_onloading_cycles + row.zigzag_offloading_cycles
            if abs(theirs - row.ours_serial_cycles) > 0.1 * row.zigzag_cycles:
                found.append(
                    f"serial load + store: ZigZag {theirs / row.zigzag_cycles:.0%} of its cycles, "
                    f"ours {row.ours_serial_cycles / row.zigzag_cycles:.0%}"
                )
            if row.zigzag_spatial_utilization < 0.9 * row.ours_utilization:
                found.append(
                    f"ZigZag unrolls less (spatial utilisation {row.zigzag_spatial_utilization:.2f} "
                    f"vs ours {row.ours_utilization:.2f})"
                )
        return "; ".join(found) or "none of the measured differences"

    return table.apply(one, axis=1)


def summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per pair: median and worst layer ratio (worst as a factor either way) and the whole network's ratio."""
    rows = []
    for (network, hardware), group in table.groupby(["network", "hardware"], sort=False):
        row = {"network": network, "hardware": hardware, "layers": len(group)}
        for what, ours_col, zz_col in (("latency", "ours_cycles", "zigzag_cycles"), ("energy", "ours_pj", "zigzag_pj")):
            ratio = group[f"{what}_ratio"]
            worst = int(np.argmax(np.abs(np.log(ratio.to_numpy()))))
            row[f"{what}_median"] = float(ratio.median())
            row[f"{what}_worst"] = float(ratio.iloc[worst])
            row[f"{what}_worst_layer"] = str(group["layer"].iloc[worst])
            row[f"{what}_network"] = float((group[ours_col] * group["times"]).sum() / (group[zz_col] * group["times"]).sum())
        rows.append(row)
    return pd.DataFrame(rows)


def _pair(job: tuple[str, str, int, str]) -> pd.DataFrame:
    return run_zigzag(*job)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--networks", default=",".join(NETWORKS), help=f"comma-separated subset of {','.join(NETWORKS)}")
    parser.add_argument(
        "--hardware", default=",".join(HARDWARE), help=f"comma-separated ZigZag hardware, e.g. {','.join(HARDWARE)}"
    )
    parser.add_argument(
        "--lpf-limit", type=int, default=4, help="ZigZag LOMA loop-prime-factor limit (search grows as its factorial)"
    )
    parser.add_argument(
        "--zigzag-opt", default="latency", choices=["latency", "energy", "EDP"], help="what ZigZag's search minimises"
    )
    parser.add_argument(
        "--objective", default="latency", choices=["latency", "energy", "edp"], help="what our mapping choice minimises"
    )
    parser.add_argument("--jobs", type=int, default=1, help="ZigZag runs in parallel (one per network x hardware pair)")
    parser.add_argument("--out", type=Path, default=RESULTS / "zigzag_crosscheck.parquet", help="per-layer table (Parquet)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    networks = [n for n in args.networks.split(",") if n]
    unknown = [n for n in networks if n not in NETWORKS]
    if unknown:
        sys.exit(f"--networks: unknown {unknown}; expected some of {NETWORKS}")
    hardware = [h for h in args.hardware.split(",") if h]
    jobs = [(n, h, args.lpf_limit, args.zigzag_opt) for n in networks for h in hardware]
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        theirs = list(pool.map(_pair, jobs))
    parts = []
    with tempfile.TemporaryDirectory() as tmp:
        for (_, hw_name, _, _), layers in zip(jobs, theirs, strict=True):
            hw = imported(hw_name, Path(tmp))
            parts.append(pd.concat([layers, ours(layers, hw, args.objective)], axis=1))
    table = pd.concat(parts, ignore_index=True)
    table["latency_ratio"] = table["ours_cycles"] / table["zigzag_cycles"]
    table["energy_ratio"] = table["ours_pj"] / table["zigzag_pj"]
    table["hint"] = hints(table)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    table.to_parquet(args.out)
    columns = [
        "network",
        "hardware",
        "layer",
        "macs",
        "latency_ratio",
        "energy_ratio",
        "ours_mapping",
        "ours_reduction_levels",
        "hint",
    ]
    with pd.option_context("display.width", 220, "display.max_rows", 500, "display.float_format", "{:.3g}".format):
        print(table[columns].to_string(index=False))
        print()
        print(summary(table).to_string(index=False))
    print(f"\nper-layer table: {args.out}")


if __name__ == "__main__":
    main()
