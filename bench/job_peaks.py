"""Peak resident memory of each job of a running Snakemake, sampled every 0.5 s for the whole job.

    .venv/bin/python bench/job_peaks.py <snakemake pid> peaks.csv      (psutil comes with Snakemake)

The pid may be a wrapper's that runs Snakemake (``/usr/bin/time -v snakemake …``): the Snakemake under it is watched.

Snakemake's benchmark samples a job every 0.5 s for its first 15 s and then every 30 s, so it can miss a long
job's peak (it caught 2.6 GB of VGG-16's 6.2 GB training-graph peak). This watcher sums the resident memory of
each job's process tree (the job's shell and everything under it, as the benchmark does) every 0.5 s and
writes, every 10 s and at the end, one row per job: its log file (from the shell command's `> results/logs/…`),
the peak in MB, and the first and last time it was seen (Unix seconds). It stops when Snakemake exits.
"""

from __future__ import annotations

import re
import sys
import time

import psutil

SAMPLE_S = 0.5


def job_rss_mb(job: psutil.Process) -> tuple[str, float]:
    """The job's log path (or its command) and its process tree's resident memory now."""
    command = " ".join(job.cmdline())
    found = re.search(r"> (results/logs/\S+)", command)
    rss = job.memory_info().rss
    for child in job.children(recursive=True):
        try:
            rss += child.memory_info().rss
        except psutil.Error:
            continue
    return (found.group(1) if found else command[:80]), rss / 2**20


def write(path: str, peaks: dict[str, float], first: dict[str, float], last: dict[str, float]) -> None:
    with open(path, "w") as out:
        out.write("log,peak_rss_mb,first,last\n")
        for key in sorted(peaks):
            out.write(f"{key},{peaks[key]:.1f},{first[key]:.0f},{last[key]:.0f}\n")


def snakemake_process(pid: int) -> psutil.Process:
    """Snakemake's process: ``pid`` itself, or the Snakemake under a wrapper it runs (``/usr/bin/time -v snakemake``,
    whose own children would be one "job" holding the whole run)."""
    process = psutil.Process(pid)
    for candidate in (process, *process.children(recursive=True)):
        if any("snakemake" in part for part in candidate.cmdline()[:2]):
            return candidate
    sys.exit(f"job_peaks: process {pid} ({' '.join(process.cmdline())[:80]}) is not Snakemake and runs none")


def main() -> None:
    root, path = snakemake_process(int(sys.argv[1])), sys.argv[2]
    peaks: dict[str, float] = {}
    first: dict[str, float] = {}
    last: dict[str, float] = {}
    samples = 0
    while root.is_running():
        try:
            jobs = root.children()
        except psutil.Error:
            break
        now = time.time()
        for job in jobs:
            try:
                key, mb = job_rss_mb(job)
            except psutil.Error:
                continue
            peaks[key] = max(peaks.get(key, 0.0), mb)
            first.setdefault(key, now)
            last[key] = now
        samples += 1
        if samples % 20 == 0:
            write(path, peaks, first, last)
        time.sleep(SAMPLE_S)
    write(path, peaks, first, last)


if __name__ == "__main__":
    main()
