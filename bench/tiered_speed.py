"""How long the TM-Training study takes: its ``tiered_study`` jobs (one per workload and variant) and, with
``--ablations``, the ``tiered_ablation_study`` jobs of ``snakemake ablations``, each run as its rule runs it, one
after the other; per job CPU seconds (user + sys of the job's process), wall seconds and the load average.

    python bench/tiered_speed.py [--config config/config.yaml] [--ablations] [--plain] [--scratch DIR]

It reads the workloads and calibration a run of the workflow made (``results/tiered/workloads``,
``results/tiered/calibration.parquet``: ``snakemake --cores 2 results/tiered/calibration.parquet`` makes them).
``--plain`` runs the jobs without a record (no ``--record-out``), so every ablation job solves and simulates
everything again: the time a study's record saves its ablations, which only re-price it or re-simulate the policies
their assumption reaches. Another version of the code, put first on PYTHONPATH, is timed the same way. The tables
are written under ``--scratch`` (compare two runs with bench/compare_runs.py).

Runs compare only back to back on one machine state: CPU seconds are inflated by other work on a shared
2-core machine, and wall seconds, one job at a time, say little under load. The full run's and the ablations' totals
are in the README's Performance table; ``bench/reproduce.py`` gives them per rule from ``results/benchmarks/``.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import yaml

REPO = Path(__file__).resolve().parents[1]
BATCH = {"base": 1, "double_batch": 2, "half_tier2_bandwidth": 1}


def _value(value: object) -> str:
    """A config value as ``--assume`` text (as the workflow's _ablation_value writes it)."""
    if isinstance(value, bool):
        return str(value).lower()
    return f"{value:g}" if isinstance(value, float) else str(value)


def _timed(command: list[str], log: Path) -> dict[str, float]:
    """Run ``command`` (its output to ``log``); its CPU seconds, wall seconds and the 1-minute load before it."""
    load = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    with log.open("w") as out:
        done = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, check=False)
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} failed, see {log}")
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return {"cpu_s": cpu, "wall_s": wall, "load": load}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=REPO / "config/config.yaml", help="the workflow config")
    parser.add_argument("--results", type=Path, default=REPO / "results", help="the workflow's results folder")
    parser.add_argument("--ablations", action="store_true", help="also the tiered ablation jobs")
    parser.add_argument("--plain", action="store_true", help="no record: every job solves and simulates everything")
    parser.add_argument("--scratch", type=Path, help="where the tables go (default: a new temporary folder)")
    args = parser.parse_args()
    config = yaml.safe_load(args.config.read_text())
    study = config["tiered"]
    variants = {"base": study["ratios"], **study.get("variant_ratios", {})}
    policies = study.get("policies", [])
    calibration = args.results / "tiered/calibration.parquet"
    if not calibration.is_file():
        sys.exit(f"{calibration}: no such file; run `snakemake --cores 2 {calibration.relative_to(REPO)}` first")
    scratch = args.scratch or Path(tempfile.mkdtemp(prefix="tiered_speed."))
    runs = [("study", "")]
    if args.ablations:
        runs += [(f"{a}={_value(v)}", f"{a}={_value(v)}") for a, values in config["ablations"]["tiered"].items() for v in values]
    rows = []
    for name, assume in runs:
        for workload in study["workloads"]:
            for variant, ratios in variants.items():
                tables = args.results / f"tiered/workloads/{workload}/batch{BATCH[variant]}"
                out = scratch / name / workload / variant
                out.mkdir(parents=True, exist_ok=True)
                command = [
                    "traincost", "tiered-study", "--ops", str(tables / "ops.parquet"),
                    "--tensors", str(tables / "tensors.parquet"), "--hardware", str(REPO / study["hardware"]),
                    "--variant", variant, "--ratios", *map(str, ratios), "--calibration", str(calibration),
                    "--out", str(out / "table.parquet"),
                ]  # fmt: skip
                share = study.get("tier1_share_per_ratio")
                command += ["--tier1-share-per-ratio", str(share)] if share is not None else []
                command += ["--policies", *policies] if policies else []
                record = scratch / "study" / workload / variant / "record.parquet"
                if assume:
                    command += ["--assume", assume] + ([] if args.plain else ["--record", str(record)])
                elif not args.plain:
                    command += ["--record-out", str(record)]
                row = {"run": name, "workload": workload, "variant": variant} | _timed(command, out / "log.txt")
                print(" ".join(f"{v:.1f}" if isinstance(v, float) else str(v) for v in row.values()), flush=True)
                rows.append(row)
    table = pd.DataFrame(rows)
    totals = table.groupby("run", sort=False).agg(cpu_s=("cpu_s", "sum"), wall_s=("wall_s", "sum"), load=("load", "mean"))
    with pd.option_context("display.width", 200, "display.float_format", "{:.1f}".format):
        print(table.to_string(index=False))
        print(totals.to_string())
    ablations = totals.drop(index="study")
    if len(ablations):
        print(f"ablations: {ablations['cpu_s'].sum():.0f} CPU s, {ablations['wall_s'].sum():.0f} s wall one job at a time")
    print(f"tables under {scratch}")


if __name__ == "__main__":
    main()
