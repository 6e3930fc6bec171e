"""Time and memory of a finished reproduction: per rule, the slowest rules and jobs, the critical path of the
DAG, and an estimate of the run's wall time on a quiet machine.

Run after `snakemake --cores 2` (or with the same --configfile as the run):

    .venv/bin/python bench/reproduce.py [targets] [--configfile config/quick.yaml] [--top 5] [--cores 2] [--resources]

It asks Snakemake for the run's jobs (`snakemake -n --forceall`: each job's rule, wildcards, inputs,
outputs, threads, mem_mb and benchmark file; a job comes after every job whose output it reads), reads each
job's benchmark in `results/benchmarks/` (wall seconds `s`, `cpu_time`, `max_rss`), and prints

* per rule: jobs, threads, wall and CPU seconds (total and largest job), peak max_rss (MB) against mem_mb;
* the `--top` slowest rules (summed wall seconds of their jobs) and the `--top` slowest jobs;
* the critical path, by wall seconds and by CPU seconds: the chain of dependent jobs with the largest sum,
  a lower bound on the run's wall time with any number of cores;
* the quiet estimate (below); with `--resources`, each rule's mem_mb and runtime from these benchmarks.

What the numbers are. Snakemake samples a job's process tree every 0.5 s for its first 15 s, then every
30 s, and takes no last sample when the job ends: `max_rss` is the largest *sampled* sum of the tree's
resident memory (a peak between two samples is missed), and `cpu_time` is the tree's CPU seconds at the last
sample. This script scales `cpu_time` by wall / (time of the last sample) to count the unsampled tail at the
rate seen before it (`estimated_cpu_s`); the run's own `/usr/bin/time -v` total (user + system) checks it.

The quiet estimate assumes: (1) every job is CPU-bound, so on a quiet machine it needs its CPU seconds and
nothing else (no waiting for disk or other work); (2) a job runs on at most `min(threads, cores)` cores, at
the parallelism it showed in the measured run (CPU / wall, between 1 and its threads), which under load is
at most its quiet parallelism, so this errs long; (3) a list schedule onto `--cores` cores: whenever cores
are free, start the ready job (every input made) with the longest remaining chain of work after it that
fits in the free cores and in `--mem-mb` (the jobs' declared mem_mb; default the machine's memory), as
Snakemake would with `--resources mem_mb=`; (4) Snakemake's own time (building the DAG at start, about
10-30 s; a fraction of a second between jobs) is not in it. It also prints the optimistic schedule where
every job uses all its threads.

Jobs without a benchmark file (not run yet, or `all`) count as 0 s and are listed. `--only PREFIX` counts only
the jobs whose benchmark path starts with PREFIX and takes the others as cached (0 s, not listed): e.g.
`ablations --only results/benchmarks/ablations/monet/` for the time of MONET's ablations on the study's cached
outputs.
"""

from __future__ import annotations

import argparse
import graphlib
import heapq
import math
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[1]

# Snakemake's benchmark sampling (snakemake/benchmark.py): 31 samples 0.5 s apart, then one every 30 s
SHORT_INTERVAL_S, SHORT_SAMPLES, LONG_INTERVAL_S = 0.5, 31, 30.0
# mem_mb from a benchmark: this factor over the largest max_rss, rounded up to 100 MB (as every rule's comment says)
MEM_MARGIN = 1.5
# runtime (minutes) from a benchmark: this factor over the largest wall time measured under load, plus minutes
# for the job's own Snakemake start on a cluster node, rounded up
RUNTIME_FACTOR, RUNTIME_EXTRA_MIN = 2.0, 5


@dataclass(frozen=True)
class Job:
    """One job of the plan, as the dry run prints it."""

    rule: str
    wildcards: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    benchmark: str | None
    log: str | None
    threads: int
    mem_mb: int | None
    runtime_min: int | None


@dataclass(frozen=True)
class Benchmark:
    """One job's measurement: the largest of its benchmark file's rows."""

    wall_s: float
    cpu_s: float
    max_rss_mb: float

    @property
    def estimated_cpu_s(self) -> float:
        """cpu_s with the tail after Snakemake's last sample counted at the rate seen before it."""
        last = last_sample_s(self.wall_s)
        return self.cpu_s * self.wall_s / last if last > 0 else self.cpu_s


NOT_RUN = Benchmark(wall_s=0.0, cpu_s=0.0, max_rss_mb=float("nan"))
# A job left out by --only: done before the run (its outputs cached), so it takes no time.
CACHED = Benchmark(wall_s=0.0, cpu_s=0.0, max_rss_mb=float("nan"))


def last_sample_s(wall_s: float) -> float:
    """When Snakemake last sampled a job that ran wall_s seconds (0 if it never did after the start)."""
    short_end = SHORT_INTERVAL_S * (SHORT_SAMPLES - 1)
    if wall_s <= short_end:
        return math.floor(wall_s / SHORT_INTERVAL_S) * SHORT_INTERVAL_S if wall_s > SHORT_INTERVAL_S else 0.0
    return short_end + math.floor((wall_s - short_end) / LONG_INTERVAL_S) * LONG_INTERVAL_S


def _field(block: str, name: str) -> str | None:
    found = re.search(rf"^\s+{name}: (.*)$", block, flags=re.M)
    return found.group(1).strip() if found else None


def _paths(text: str | None) -> tuple[str, ...]:
    return tuple(path for path in (text or "").split(", ") if path)


def parse_plan(text: str) -> list[Job]:
    """Every job of a `snakemake -n` listing (stdout), in its order."""
    jobs = []
    for block in re.split(r"\n(?=(?:local)?rule \w+:)", text)[1:]:
        rule = re.match(r"(?:local)?rule (\w+):", block).group(1)
        resources = _field(block, "resources") or ""
        memory = re.search(r"\bmem_mb=(\d+)", resources)
        runtime = re.search(r"\bruntime=(\d+)", resources)
        jobs.append(
            Job(
                rule=rule,
                wildcards=_field(block, "wildcards") or "",
                inputs=_paths(_field(block, "input")),
                outputs=_paths(_field(block, "output")),
                benchmark=_field(block, "benchmark"),
                log=_field(block, "log"),
                threads=int(_field(block, "threads") or 1),
                mem_mb=int(memory.group(1)) if memory else None,
                runtime_min=int(runtime.group(1)) if runtime else None,
            )
        )
    return jobs


def dependencies(jobs: list[Job]) -> list[list[int]]:
    """For each job, the jobs whose outputs it reads."""
    made_by = {path: index for index, job in enumerate(jobs) for path in job.outputs}
    return [sorted({made_by[path] for path in job.inputs if path in made_by}) for job in jobs]


def planned_jobs(configfile: str | None, targets: list[str]) -> list[Job]:
    """Every job of the targets (default: all) as `snakemake -n --forceall` lists it."""
    command = [sys.executable, "-m", "snakemake", *targets, "-n", "--forceall", "--nolock", "--cores", "2"]
    if configfile:
        command += ["--configfile", configfile]
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, env=env, check=False)
    if result.returncode:
        sys.exit(f"snakemake -n failed:\n{result.stderr[-2000:]}")
    return parse_plan(result.stdout)


def read_benchmark(path: Path) -> Benchmark:
    """The largest wall, CPU and max_rss over a benchmark file's rows (NA, for a job too short to sample: NaN)."""
    table = pd.read_csv(path, sep="\t", na_values=["NA", "-"])
    for column in ("s", "cpu_time", "max_rss"):
        if column not in table.columns:
            sys.exit(f"traincost: {path}: no column {column!r} (expected a Snakemake benchmark file)")
    return Benchmark(
        wall_s=float(table["s"].max()),
        cpu_s=float(pd.to_numeric(table["cpu_time"], errors="coerce").fillna(0.0).max()),
        max_rss_mb=float(pd.to_numeric(table["max_rss"], errors="coerce").max()),
    )


def read_benchmarks(jobs: list[Job], root: Path) -> list[Benchmark]:
    """Each job's benchmark under root (NOT_RUN where the job has no benchmark file)."""
    return [
        read_benchmark(root / job.benchmark) if job.benchmark and (root / job.benchmark).is_file() else NOT_RUN for job in jobs
    ]


def longest_chain(durations: list[float], after: list[list[int]]) -> tuple[float, list[int]]:
    """The chain of dependent jobs with the largest summed duration: its length and its jobs, first to last."""
    finish: dict[int, float] = {}
    previous: dict[int, int | None] = {}
    for index in _topological(after):  # a job after every job it reads
        best = max(after[index], key=finish.__getitem__, default=None)
        finish[index] = durations[index] + (finish[best] if best is not None else 0.0)
        previous[index] = best
    if not finish:
        return 0.0, []
    last = max(finish, key=finish.__getitem__)
    chain = [last]
    while previous[chain[-1]] is not None:
        chain.append(previous[chain[-1]])
    return finish[last], chain[::-1]


def remaining_work(durations: list[float], after: list[list[int]]) -> list[float]:
    """Each job's duration plus the longest chain of jobs that need it (the list schedule's priority)."""
    needed_by = _needed_by(after)
    tail = [0.0] * len(durations)
    for index in reversed(_topological(after)):
        tail[index] = durations[index] + max((tail[n] for n in needed_by[index]), default=0.0)
    return tail


def _needed_by(after: list[list[int]]) -> list[list[int]]:
    needed_by: list[list[int]] = [[] for _ in after]
    for index, befores in enumerate(after):
        for before in befores:
            needed_by[before].append(index)
    return needed_by


def _topological(after: list[list[int]]) -> list[int]:
    """Every job after the jobs it reads."""
    return list(graphlib.TopologicalSorter(dict(enumerate(after))).static_order())


def list_schedule(
    durations: list[float], threads: list[int], mem_mb: list[int], after: list[list[int]], *, cores: int, memory_mb: int
) -> float:
    """Makespan (s) of a greedy list schedule: at each event, start ready jobs by longest remaining work first,
    each taking min(threads, cores) cores and its mem_mb, while they fit."""
    priority = remaining_work(durations, after)
    waiting = [len(befores) for befores in after]
    needed_by = _needed_by(after)
    ready = {index for index, count in enumerate(waiting) if count == 0}
    running: list[tuple[float, int]] = []
    now, free_cores, free_mb = 0.0, cores, memory_mb
    while ready or running:
        for index in sorted(ready, key=lambda i: (-priority[i], i)):
            need = min(threads[index], cores)
            if need <= free_cores and mem_mb[index] <= free_mb:
                ready.discard(index)
                free_cores -= need
                free_mb -= mem_mb[index]
                heapq.heappush(running, (now + durations[index], index))
        if not running:
            raise ValueError("a ready job needs more memory than --mem-mb allows")
        now, index = heapq.heappop(running)
        finished = [index]
        while running and running[0][0] <= now:
            finished.append(heapq.heappop(running)[1])
        for index in finished:
            free_cores += min(threads[index], cores)
            free_mb += mem_mb[index]
            for later in needed_by[index]:
                waiting[later] -= 1
                if waiting[later] == 0:
                    ready.add(later)
    return now


def quiet_durations(jobs: list[Job], benchmarks: list[Benchmark], cores: int, *, optimistic: bool) -> list[float]:
    """Each job's estimated wall seconds on a quiet machine (see the module docstring)."""
    durations = []
    for job, bench in zip(jobs, benchmarks, strict=True):
        cpu_s, usable = bench.estimated_cpu_s, min(job.threads, cores)
        shown = cpu_s / bench.wall_s if bench.wall_s > 0 else 1.0
        durations.append(cpu_s / (usable if optimistic else min(usable, max(1.0, shown))))
    return durations


def machine_memory_mb() -> int:
    with open("/proc/meminfo") as meminfo:
        return int(next(line for line in meminfo if line.startswith("MemTotal")).split()[1]) // 1024


def rule_table(jobs: list[Job], benchmarks: list[Benchmark]) -> pd.DataFrame:
    """Per rule: jobs, threads, wall and CPU seconds (sum, largest), peak max_rss, declared mem_mb and runtime."""
    table = pd.DataFrame(
        [
            {
                "rule": job.rule,
                "threads": job.threads,
                "wall_s": bench.wall_s,
                "cpu_s": bench.estimated_cpu_s,
                "max_rss_mb": bench.max_rss_mb,
                "mem_mb": job.mem_mb,
                "runtime_min": job.runtime_min,
            }
            for job, bench in zip(jobs, benchmarks, strict=True)
        ]
    )
    return table.groupby("rule").agg(
        jobs=("wall_s", "size"),
        threads=("threads", "max"),
        wall_s=("wall_s", "sum"),
        largest_wall_s=("wall_s", "max"),
        cpu_s=("cpu_s", "sum"),
        largest_cpu_s=("cpu_s", "max"),
        peak_rss_mb=("max_rss_mb", "max"),
        mem_mb=("mem_mb", "max"),
        runtime_min=("runtime_min", "max"),
    )


def suggested_resources(per_rule: pd.DataFrame) -> pd.DataFrame:
    """mem_mb = MEM_MARGIN x the largest max_rss, rounded up to 100 MB; runtime (minutes) = RUNTIME_FACTOR x the
    largest wall time plus RUNTIME_EXTRA_MIN, rounded up."""
    return pd.DataFrame(
        {
            "peak_rss_mb": per_rule["peak_rss_mb"],
            "mem_mb": [
                math.ceil(MEM_MARGIN * rss / 100) * 100 if not math.isnan(rss) else None for rss in per_rule["peak_rss_mb"]
            ],
            "largest_wall_s": per_rule["largest_wall_s"],
            "runtime": [math.ceil(RUNTIME_FACTOR * s / 60 + RUNTIME_EXTRA_MIN) for s in per_rule["largest_wall_s"]],
        }
    )


def _label(job: Job) -> str:
    return f"{job.rule} {job.wildcards}" if job.wildcards else job.rule


def _chain_lines(jobs: list[Job], values: list[float], chain: list[int]) -> list[str]:
    return [f"  {values[index]:8.1f} s  {_label(jobs[index])}" for index in chain]


def report(jobs: list[Job], benchmarks: list[Benchmark], *, top: int, cores: int, memory_mb: int) -> str:
    """The printed summary of a run."""
    after = dependencies(jobs)
    per_rule = rule_table(jobs, benchmarks)
    lines = [per_rule.sort_values("wall_s", ascending=False).to_string(float_format="%.1f")]
    lines.append(f"\nthe {top} slowest rules (summed wall seconds of their jobs, under the run's load):")
    for rule, row in per_rule.sort_values("wall_s", ascending=False).head(top).iterrows():
        lines.append(f"  {row.wall_s:8.1f} s wall  {row.cpu_s:8.1f} s CPU  {rule} ({row.jobs:.0f} jobs)")
    lines.append(f"\nthe {top} slowest jobs:")
    order = sorted(range(len(jobs)), key=lambda i: benchmarks[i].wall_s, reverse=True)[:top]
    lines += [
        f"  {benchmarks[i].wall_s:8.1f} s wall  {benchmarks[i].estimated_cpu_s:8.1f} s CPU  {_label(jobs[i])}" for i in order
    ]
    wall = [b.wall_s for b in benchmarks]
    cpu = [b.estimated_cpu_s for b in benchmarks]
    for name, values in (("wall", wall), ("CPU", cpu)):
        length, chain = longest_chain(values, after)
        lines.append(f"\ncritical path by {name} seconds: {length:.0f} s")
        lines += _chain_lines(jobs, values, chain)
    sampled = sum(b.cpu_s for b in benchmarks)
    lines.append(
        f"\nall jobs: {sum(wall):.0f} s wall, {sum(cpu):.0f} s CPU ({sampled:.0f} s sampled by Snakemake, "
        f"the rest its unsampled tails); CPU / {cores} cores: {sum(cpu) / cores:.0f} s"
    )
    mem = [job.mem_mb or 0 for job in jobs]
    threads = [job.threads for job in jobs]
    for label, optimistic in (("quiet estimate", False), ("optimistic (every job uses all its threads)", True)):
        durations = quiet_durations(jobs, benchmarks, cores, optimistic=optimistic)
        makespan = list_schedule(durations, threads, mem, after, cores=cores, memory_mb=memory_mb)
        critical, _ = longest_chain(durations, after)
        lines.append(
            f"{label}: {makespan:.0f} s ({makespan / 60:.1f} min) on {cores} cores and {memory_mb} MB; "
            f"its critical path {critical:.0f} s"
        )
    over = [
        (job, bench)
        for job, bench in zip(jobs, benchmarks, strict=True)
        if job.mem_mb is not None and bench.max_rss_mb > job.mem_mb
    ]
    if over:
        lines.append(f"\n{len(over)} jobs used more memory than their rule's mem_mb:")
        lines += [f"  {_label(job)}: max_rss {bench.max_rss_mb:.0f} MB > mem_mb {job.mem_mb}" for job, bench in over]
    missing = sorted({job.rule for job, bench in zip(jobs, benchmarks, strict=True) if bench is NOT_RUN})
    if missing:
        lines.append(f"\njobs with no benchmark file (not run, or no benchmark): {missing}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("targets", nargs="*", help="the run's targets (default: all), e.g. all ablations")
    parser.add_argument("--configfile", help="the config of the run (default: config/config.yaml)")
    parser.add_argument("--top", type=int, default=5, help="slowest rules and jobs to list")
    parser.add_argument("--cores", type=int, default=2, help="cores of the quiet estimate")
    parser.add_argument("--mem-mb", type=int, default=None, help="memory of the quiet estimate (default: this machine's)")
    parser.add_argument("--resources", action="store_true", help="also print each rule's mem_mb and runtime from the benchmarks")
    parser.add_argument(
        "--table",
        help="also write each job's benchmark (rule, wildcards, benchmark, threads, wall_s, cpu_s, max_rss_mb) to this CSV",
    )
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        help="count only the jobs whose benchmark path starts with this (repeatable), the others as cached: "
        "e.g. results/benchmarks/ablations/monet/ for one study's ablations",
    )
    parser.add_argument(
        "--peaks",
        action="append",
        default=[],
        help="bench/job_peaks.py CSV of the run (repeatable): adds each job's peak_rss_mb_0_5s to --table, by its log",
    )
    args = parser.parse_args()
    jobs = planned_jobs(args.configfile, args.targets)
    benchmarks = read_benchmarks(jobs, REPO)
    if args.only:
        benchmarks = [
            bench if job.benchmark and job.benchmark.startswith(tuple(args.only)) else CACHED
            for job, bench in zip(jobs, benchmarks, strict=True)
        ]
    print(report(jobs, benchmarks, top=args.top, cores=args.cores, memory_mb=args.mem_mb or machine_memory_mb()))
    if args.resources:
        margin = f"mem_mb = {MEM_MARGIN} x peak max_rss; runtime = {RUNTIME_FACTOR} x largest wall + {RUNTIME_EXTRA_MIN} min"
        print(f"\nresources ({margin}):")
        print(suggested_resources(rule_table(jobs, benchmarks)).to_string(float_format="%.1f"))
    if args.table:
        peaks = pd.concat(map(pd.read_csv, args.peaks)).groupby("log")["peak_rss_mb"].max().to_dict() if args.peaks else {}
        rows = [
            {
                "rule": job.rule,
                "wildcards": job.wildcards,
                "benchmark": job.benchmark,
                "threads": job.threads,
                "wall_s": round(bench.wall_s, 2),
                "cpu_s": round(bench.cpu_s, 2),
                "max_rss_mb": round(bench.max_rss_mb, 1),
            }
            | ({"peak_rss_mb_0_5s": peaks.get(job.log, float("nan"))} if args.peaks else {})
            for job, bench in zip(jobs, benchmarks, strict=True)
            if bench is not NOT_RUN and bench is not CACHED
        ]
        pd.DataFrame(rows).sort_values("benchmark").to_csv(args.table, index=False)


if __name__ == "__main__":
    main()
