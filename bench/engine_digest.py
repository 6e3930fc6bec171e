"""A fingerprint of every number the single-core cost engine gives, to show a refactor changes none of them.

Costs the MAC and element-wise ops of each workload found under ``--results`` (``results/workloads/*``, as the
workflow writes them) on every core of every hardware file: the study machines in ``config/hardware``, ``tiny.yaml``
and each ZigZag architecture bundled in ``tests/fixtures/hardware/zigzag`` (imported with its own mapping, and the
five mixed mappings). Each MAC op is costed with each mapping objective over the off-chip path, once without it
(the dataflow's own mapping), and split over four cores by output channels and by output rows. Every array of
every cost is hashed; the digest is written as JSON, one hash per (hardware, core, workload, setting).

    python bench/engine_digest.py --results results --out /tmp/before.json
    python bench/engine_digest.py --results results --out /tmp/after.json --compare /tmp/before.json
    python bench/engine_digest.py --results results --workloads resnet18_cifar --hardware edge_tpu tpu_like --out d.json

With ``--compare`` it prints the settings whose costs differ and exits 1 if any does (give both runs the same
``--workloads`` and ``--hardware``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import time
from dataclasses import fields
from pathlib import Path

import numpy as np

from traincost.cost import OpTable, mac_cost, op_table, simd_cost
from traincost.cost.core import OBJECTIVES, CoreOpCost, ExternalPath
from traincost.hardware import HardwareSpec, load_hardware
from traincost.hardware.import_zigzag import bundled_mapping, hardware_yaml_text, parse_unroll, zigzag_hardware
from traincost.workload import Workload

REPO = Path(__file__).resolve().parents[1]
ZIGZAG = REPO / "tests/fixtures/hardware/zigzag"
MIXED = ("tpu_like", "edge_tpu_like", "ascend_like", "meta_prototype_like", "tesla_npu_like")
SPLIT_CORES = 4.0
# the GEMM cores' bundled mappings unroll ZigZag's GEMM loops: the same unrolling in the networks' loops
UNROLL = {"gemm_l1": "D1=OY,D2=K,D3=C", "gemm_l1_l3": "D1=OY,D2=K,D3=C"}


def hardware_files(folder: Path, names: list[str] | None = None) -> dict[str, Path]:
    """Every hardware file the digest costs on (those of ``names`` only, if given), by name; the ZigZag ones imported
    into ``folder``."""
    files = {path.stem: path for path in sorted((REPO / "config/hardware").glob("*.yaml"))}
    files["tiny"] = REPO / "tests/fixtures/hardware/tiny.yaml"
    machines = sorted(ZIGZAG.glob("hardware/*.yaml"))
    imports = [(path, bundled_mapping(path, imc=path.stem in ("aimc", "dimc"))) for path in machines]
    for stem in MIXED:
        machine = stem.removesuffix("_like") if stem.startswith("meta") else stem
        imports.append((ZIGZAG / f"hardware/{machine}.yaml", ZIGZAG / f"mapping/{stem}_mixed.yaml"))
    for path, mapping in imports:
        name = path.stem if mapping is None or "mixed" not in mapping.stem else mapping.stem
        if names is not None and name not in names:
            continue
        unroll = parse_unroll(UNROLL[name]) if name in UNROLL else None
        out = folder / f"{name}.yaml"
        out.write_text(hardware_yaml_text(zigzag_hardware(path, mapping=mapping, unroll=unroll), header=name))
        files[name] = out
    return files if names is None else {name: path for name, path in files.items() if name in names}


def workloads(results: Path, names: list[str] | None) -> dict[str, Workload]:
    """Each workload the workflow wrote under ``results/workloads`` (those of ``names`` only, if given)."""
    found = {}
    for folder in sorted((results / "workloads").iterdir()):
        ops, tensors = folder / "ops.parquet", folder / "tensors.parquet"
        if ops.is_file() and tensors.is_file() and (names is None or folder.name in names):
            found[folder.name] = Workload.read(ops, tensors)
    return found


def fingerprint(cost: CoreOpCost) -> str:
    """A hash of every array of ``cost``, each memory's and operand's by name."""
    digest = hashlib.sha256()
    for field in fields(CoreOpCost):
        value = getattr(cost, field.name)
        items = sorted(value.items()) if isinstance(value, dict) else [("", value)]
        for key, array in items:
            digest.update(f"{field.name}/{key}".encode())
            digest.update(np.ascontiguousarray(np.asarray(array, dtype=np.float64)).tobytes())
    return digest.hexdigest()


def costs(hardware: HardwareSpec, table: OpTable, name: str, workload: str) -> dict[str, str]:
    """The fingerprints of one workload's ops on every core of ``hardware``."""
    out = {}
    for core in hardware.cores:
        runs = np.isin(table.kind, list(core.runs))
        mac = np.flatnonzero(runs & (table.macs > 0))
        other = np.flatnonzero(runs & (table.macs == 0))
        key = f"{name}/{core.name}/{workload}"
        if len(other) and core.dataflow == "simd":
            out[f"{key}/simd"] = fingerprint(simd_cost(core, table, other))
        if not len(mac):
            continue
        external = ExternalPath.of(hardware, core)
        out[f"{key}/native"] = fingerprint(mac_cost(core, table, mac))
        for objective in OBJECTIVES:
            out[f"{key}/{objective}"] = fingerprint(mac_cost(core, table, mac, external=external, objective=objective))
        split = np.full(core.count.shape, SPLIT_CORES)
        for rows in (False, True):
            cost = mac_cost(core, table, mac, split=split, split_rows=rows, external=external, objective="edp")
            out[f"{key}/split{'_rows' if rows else ''}"] = fingerprint(cost)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=REPO / "results", help="a workflow's results folder")
    parser.add_argument("--workloads", nargs="+", help="the workloads to cost (default: every one found)")
    parser.add_argument("--hardware", nargs="+", help="the hardware to cost on, by name (default: every one)")
    parser.add_argument("--out", type=Path, required=True, help="the digest to write (JSON)")
    parser.add_argument("--compare", type=Path, help="a digest to compare with")
    args = parser.parse_args()
    start = time.perf_counter()
    digest: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        tables = {name: op_table(workload) for name, workload in workloads(args.results, args.workloads).items()}
        files = hardware_files(Path(tmp), args.hardware)
        if args.hardware and (unknown := sorted(set(args.hardware) - set(files))):
            sys.exit(f"--hardware: no hardware file named {unknown}")
        for name, path in files.items():
            hardware = load_hardware(path)
            for workload, table in tables.items():
                digest |= costs(hardware, table, name, workload)
    args.out.write_text(json.dumps(digest, indent=1, sort_keys=True) + "\n")
    print(f"{len(digest)} costs in {time.perf_counter() - start:.0f} s -> {args.out}")
    if args.compare is None:
        return
    before = json.loads(args.compare.read_text())
    differ = sorted(key for key in before.keys() | digest.keys() if before.get(key) != digest.get(key))
    for key in differ:
        print(f"differs: {key}")
    print(f"{len(differ)} of {len(digest)} differ from {args.compare}")
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
