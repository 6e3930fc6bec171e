"""Wall time of a finished reproduction: per rule, the slowest jobs, and the critical path of the DAG.

Run after `snakemake --cores 2` (or with the same --configfile as the run):

    .venv/bin/python bench/reproduce.py [--configfile config/quick.yaml] [--top 5]

It asks Snakemake for the run's jobs (`snakemake -n --forceall`: each job's rule, wildcards,
inputs, outputs and benchmark file), reads every job's wall seconds (`s`) from its benchmark in
`results/benchmarks/`, and prints

* per rule: jobs, total and largest seconds, peak max_rss (MB) against the rule's mem_mb;
* the `--top` slowest jobs;
* the critical path: the chain of dependent jobs with the largest summed seconds, a lower bound on
  the wall time with any number of cores; the total divided by the cores bounds it from below too.

Jobs without a benchmark file (not run yet, or `all`) count as 0 s and are listed.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[1]


@dataclass
class Job:
    rule: str
    wildcards: str
    inputs: list[str]
    outputs: list[str]
    benchmark: str | None
    mem_mb: int | None
    seconds: float = 0.0
    max_rss_mb: float = float("nan")
    after: list[int] = field(default_factory=list)  # jobs this one reads outputs of


def _field(block: str, name: str) -> str | None:
    found = re.search(rf"^\s+{name}: (.*)$", block, flags=re.M)
    return found.group(1).strip() if found else None


def planned_jobs(configfile: str | None) -> list[Job]:
    """Every job of the workflow as `snakemake -n --forceall` lists it."""
    command = [sys.executable, "-m", "snakemake", "-n", "--forceall", "--cores", "2"]
    if configfile:
        command += ["--configfile", configfile]
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, env=env, check=False)
    if result.returncode:
        sys.exit(f"snakemake -n failed:\n{result.stderr[-2000:]}")
    jobs = []
    for block in re.split(r"\n(?=(?:local)?rule \w+:)", result.stdout)[1:]:
        rule = re.match(r"(?:local)?rule (\w+):", block).group(1)
        memory = re.search(r"\bmem_mb=(\d+)", block)
        jobs.append(
            Job(
                rule=rule,
                wildcards=_field(block, "wildcards") or "",
                inputs=(_field(block, "input") or "").split(", "),
                outputs=(_field(block, "output") or "").split(", "),
                benchmark=_field(block, "benchmark"),
                mem_mb=int(memory.group(1)) if memory else None,
            )
        )
    made_by = {path: index for index, job in enumerate(jobs) for path in job.outputs if path}
    for job in jobs:
        job.after = sorted({made_by[path] for path in job.inputs if path in made_by})
    return jobs


def read_benchmarks(jobs: list[Job]) -> list[Job]:
    """Fill in each job's seconds and max_rss; return the jobs that have no benchmark file."""
    missing = []
    for job in jobs:
        path = REPO / job.benchmark if job.benchmark else None
        if path is None or not path.is_file():
            missing.append(job)
            continue
        table = pd.read_csv(path, sep="\t")
        job.seconds = float(table["s"].max())
        job.max_rss_mb = float(pd.to_numeric(table["max_rss"], errors="coerce").max())
    return missing


def critical_path(jobs: list[Job]) -> tuple[float, list[int]]:
    """The dependent chain of jobs with the largest summed seconds (jobs are a DAG)."""
    order, seen = [], set()

    def visit(index: int) -> None:  # depth-first: a job after every job it reads
        if index in seen:
            return
        seen.add(index)
        for before in jobs[index].after:
            visit(before)
        order.append(index)

    sys.setrecursionlimit(max(1000, 4 * len(jobs)))
    for index in range(len(jobs)):
        visit(index)
    finish, previous = {}, {}
    for index in order:
        best = max(jobs[index].after, key=lambda b: finish[b], default=None)
        finish[index] = jobs[index].seconds + (finish[best] if best is not None else 0.0)
        previous[index] = best
    last = max(finish, key=finish.get)
    chain = [last]
    while previous[chain[-1]] is not None:
        chain.append(previous[chain[-1]])
    return finish[last], chain[::-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configfile", help="the config of the run (default: config/config.yaml)")
    parser.add_argument("--top", type=int, default=5, help="slowest jobs to list")
    parser.add_argument("--cores", type=int, default=2, help="cores of the run, for the total / cores bound")
    args = parser.parse_args()
    jobs = planned_jobs(args.configfile)
    missing = read_benchmarks(jobs)
    table = pd.DataFrame(
        [{"rule": j.rule, "seconds": j.seconds, "max_rss_mb": j.max_rss_mb, "mem_mb": j.mem_mb} for j in jobs]
    )
    per_rule = table.groupby("rule").agg(
        jobs=("seconds", "size"),
        total_s=("seconds", "sum"),
        largest_s=("seconds", "max"),
        peak_rss_mb=("max_rss_mb", "max"),
        mem_mb=("mem_mb", "max"),
    )
    print(per_rule.sort_values("total_s", ascending=False).to_string(float_format="%.1f"))
    print(f"\nthe {args.top} slowest jobs:")
    for job in sorted(jobs, key=lambda j: j.seconds, reverse=True)[: args.top]:
        print(f"  {job.seconds:8.1f} s  {job.rule} {job.wildcards}")
    total = table["seconds"].sum()
    length, chain = critical_path(jobs)
    print(f"\nall jobs: {total:.0f} s; / {args.cores} cores: {total / args.cores:.0f} s; critical path: {length:.0f} s")
    for index in chain:
        print(f"  {jobs[index].seconds:8.1f} s  {jobs[index].rule} {jobs[index].wildcards}")
    over = table[table["max_rss_mb"] > table["mem_mb"]]
    if len(over):
        print(f"\n{len(over)} jobs used more memory than their rule's mem_mb:\n{over.to_string()}")
    if missing:
        print(f"\n{len(missing)} jobs have no benchmark file (not run): {sorted({j.rule for j in missing})}")


if __name__ == "__main__":
    main()
