"""Every rule's mem_mb and runtime hold what its jobs took in a full run.

tests/fixtures/benchmarks/full_run.csv is each job's Snakemake benchmark of a full run on a quiet 2-core machine
(config/config.yaml, 26 November 2026: `snakemake --cores 2`, 243 jobs, then `snakemake --cores 2 ablations`, 258
jobs, both at commit ea899ab; `bench/reproduce.py all ablations --table --peaks`): wall and CPU seconds,
max_rss (MB), and peak_rss_mb_0_5s, the job's process tree sampled every 0.5 s by bench/job_peaks.py (the `all`
run's jobs; empty for the ablations). The 13 jobs of the bn_epilogue ablation's inference step are not in it: since
7 December 2026 that step is the study's own (its files and flags are the study's: ``Plan.monet_root``). A dry run of
the same config gives each job's mem_mb and runtime as the rules declare them now. The last six rows, the front end
of mtrain_vgg16_224 (a workload added since), are from a full run of 7 December 2026 (`snakemake --cores 2` at
commit 20b2cbc), whose benchmarks found four of them over their rules' defaults. On a cluster every job asks for
400 MB more (test below).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from tests.bench_script import bench_script
from tests.integration.test_workflow import _config, snakemake

pytestmark = pytest.mark.ort  # the ONNX front end throughout (tests/conftest.py: pytest_ignore_collect)

REPO = Path(__file__).resolve().parents[2]
FULL_RUN = REPO / "tests/fixtures/benchmarks/full_run.csv"


@pytest.fixture(scope="module")
def reproduce():
    return bench_script("reproduce.py")


@pytest.fixture(scope="module")
def plan() -> str:
    """The listing of a dry run of the full config (`snakemake -n`)."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    command = [sys.executable, "-m", "snakemake", "-n", "--forceall", "--nolock", "--cores", "2", "all", "ablations"]
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, env=env, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


@pytest.fixture(scope="module")
def declared(reproduce, plan) -> dict[str, object]:
    """Benchmark file -> its job in a dry run of the full config."""
    return {job.benchmark: job for job in reproduce.parse_plan(plan) if job.benchmark}


def test_the_checkpoint_studys_nsga_and_its_workloads_front_end_come_first(plan):
    """NSGA-II is the longest job of one thread (about 9 minutes); it starts minutes into the full run only if
    Snakemake runs its workload's front end first. Those jobs have priority, and no others."""
    workload = yaml.safe_load((REPO / "config/config.yaml").read_text())["monet_checkpoint"]["workload"]
    first, exported = set(), None
    for block in re.split(r"\n(?=(?:local)?rule \w+:)", plan)[1:]:
        wildcards = re.search(r"^\s+wildcards: (.*)$", block, re.MULTILINE)
        rule = re.match(r"(?:local)?rule (\w+):", block).group(1)
        if rule == "train_graph" and wildcards.group(1) == f"workload={workload}":  # the export it trains on
            exported = re.search(r"^\s+input: results/graphs/(\w+)/model.onnx$", block, re.MULTILINE).group(1)
        if re.search(r"^\s+priority: [1-9]", block, re.MULTILINE):
            first.add(rule if rule.endswith("checkpoint_nsga") else f"{rule} {wildcards.group(1) if wildcards else ''}")
    front_end = {f"{rule} workload={workload}" for rule in ("train_graph", "decompose", "lower")}
    front_end.add(f"export workload={exported}")
    assert first == front_end | {"checkpoint_nsga", "monet_ablation_checkpoint_nsga"}, sorted(first)


@pytest.fixture(scope="module")
def measured() -> pd.DataFrame:
    return pd.read_csv(FULL_RUN)


def test_no_job_used_more_memory_than_its_rule_declares(declared, measured):
    over = []
    for row in measured.itertuples():
        job = declared.get(row.benchmark)
        assert job is not None, f"{row.benchmark}: no such job in the full config's plan"
        assert job.mem_mb is not None, f"{row.benchmark}: the job declares no mem_mb"
        for column in ("max_rss_mb", "peak_rss_mb_0_5s"):  # NaN where not sampled: never over
            if getattr(row, column) > job.mem_mb:
                over.append(f"{row.benchmark}: {column} {getattr(row, column):.0f} MB > mem_mb {job.mem_mb}")
    assert not over, "\n".join(over)


def test_no_job_took_longer_than_its_rule_declares(declared, measured):
    over = []
    for row in measured.itertuples():
        job = declared[row.benchmark]
        assert job.runtime_min is not None, f"{row.benchmark}: the job declares no runtime"
        if row.wall_s > 60 * job.runtime_min:
            over.append(f"{row.benchmark}: {row.wall_s:.0f} s > runtime {job.runtime_min} min")
    assert not over, "\n".join(over)


@pytest.mark.slow  # one job through the cluster-generic executor: about 80 s
def test_a_cluster_job_asks_for_snakemakes_own_memory_beside_the_tools(tmp_path):
    pytest.importorskip("snakemake_executor_plugin_cluster_generic")
    target = "results/graphs/first/model.onnx"
    plan = snakemake(tmp_path, _config(), "-n", target)
    assert plan.returncode == 0, plan.stderr[-3000:]
    local_mb = int(re.search(r"\bmem_mb=(\d+)", plan.stdout).group(1))
    asked, job_log = tmp_path / "asked.txt", tmp_path / "job.log"
    # the submit command records what the job asks for, then runs the job script in the background
    submit = f"sh -c 'echo {{resources.mem_mb}} >> {asked}; sh \"$0\" > {job_log} 2>&1 & echo 1'"
    result = snakemake(
        tmp_path, _config(), "--executor", "cluster-generic", "--cluster-generic-submit-cmd", submit, "--jobs", "1", target
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert (tmp_path / target).is_file()
    assert asked.read_text().split() == [str(local_mb + 400)]
