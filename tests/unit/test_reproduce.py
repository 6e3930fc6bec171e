"""bench/reproduce.py on a hand-made plan and benchmark directory: parsing, critical paths, the quiet estimate."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from tests.bench_script import bench_script

# a `snakemake -n` listing: prepare (2 threads) feeds slow and quick, which feed all (no benchmark)
PLAN = """Building DAG of jobs...
Job stats:
job        count
-------  -------
all            1
total          4

[Wed Nov 25 00:17:34 2026]
rule prepare:
    output: results/a.parquet
    log: results/logs/prepare.log
    jobid: 1
    benchmark: results/benchmarks/prepare.tsv
    reason: Forced execution
    threads: 2
    resources: tmpdir=/tmp, mem_mb=400, mem=400 MB, mem_mib=382, runtime=7

[Wed Nov 25 00:17:34 2026]
rule slow:
    input: results/a.parquet
    output: results/b.parquet
    benchmark: results/benchmarks/slow/x.tsv
    wildcards: name=x
    resources: tmpdir=/tmp, mem_mb=300, mem=300 MB, mem_mib=287

[Wed Nov 25 00:17:34 2026]
rule quick:
    input: results/a.parquet, config/hardware.yaml
    output: results/c.parquet, results/c.csv
    benchmark: results/benchmarks/quick.tsv
    resources: tmpdir=/tmp, mem_mb=300, mem=300 MB, mem_mib=287

[Wed Nov 25 00:17:34 2026]
localrule all:
    input: results/b.parquet, results/c.csv
    jobid: 0
    resources: tmpdir=/tmp
Job stats:
"""
HEADER = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"


@pytest.fixture(scope="module")
def reproduce():
    return bench_script("reproduce.py")


@pytest.fixture
def run(tmp_path: Path) -> Path:
    rows = {
        "prepare.tsv": "10.0\t0:00:10\t500\t900\t400\t450\t0\t0\t160\t16.0\n",
        "slow/x.tsv": "40.0\t0:00:40\t200\t900\t150\t160\t0\t0\t37\t15.0\n",
        "quick.tsv": "5.0\t0:00:05\tNA\tNA\tNA\tNA\tNA\tNA\tNA\t4.0\n",
    }
    for name, row in rows.items():
        path = tmp_path / "results/benchmarks" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(HEADER + row)
    return tmp_path


def test_the_plan_gives_each_job_its_threads_memory_runtime_and_dependencies(reproduce):
    jobs = reproduce.parse_plan(PLAN)
    assert [job.rule for job in jobs] == ["prepare", "slow", "quick", "all"]
    assert [job.threads for job in jobs] == [2, 1, 1, 1]
    assert [job.mem_mb for job in jobs] == [400, 300, 300, None]
    assert [job.runtime_min for job in jobs] == [7, None, None, None]
    assert jobs[1].wildcards == "name=x"
    assert jobs[2].outputs == ("results/c.parquet", "results/c.csv")
    assert jobs[3].benchmark is None
    assert reproduce.dependencies(jobs) == [[], [0], [0], [1, 2]]


def test_snakemake_samples_at_half_seconds_then_every_30_s(reproduce):
    assert [reproduce.last_sample_s(s) for s in (0.3, 10.2, 15.0, 40.0, 46.0)] == [0.0, 10.0, 15.0, 15.0, 45.0]


def test_benchmarks_are_read_and_the_cpu_tail_after_the_last_sample_is_counted(reproduce, run):
    jobs = reproduce.parse_plan(PLAN)
    prepare, slow, quick, done = reproduce.read_benchmarks(jobs, run)
    assert (prepare.wall_s, prepare.cpu_s, prepare.max_rss_mb) == (10.0, 16.0, 500.0)
    assert prepare.estimated_cpu_s == 16.0  # sampled up to its end
    assert slow.estimated_cpu_s == pytest.approx(15.0 * 40 / 15)  # last sampled at 15 s of 40
    assert math.isnan(quick.max_rss_mb)  # too short to sample: NA
    assert done is reproduce.NOT_RUN


def test_critical_paths_by_wall_and_cpu(reproduce, run):
    jobs = reproduce.parse_plan(PLAN)
    benchmarks = reproduce.read_benchmarks(jobs, run)
    after = reproduce.dependencies(jobs)
    assert reproduce.longest_chain([b.wall_s for b in benchmarks], after) == (50.0, [0, 1])
    length, chain = reproduce.longest_chain([b.estimated_cpu_s for b in benchmarks], after)
    assert (length, chain) == (pytest.approx(16 + 40), [0, 1])


def test_the_quiet_estimate_is_a_list_schedule_within_cores_and_memory(reproduce, run):
    jobs = reproduce.parse_plan(PLAN)
    benchmarks = reproduce.read_benchmarks(jobs, run)
    after = reproduce.dependencies(jobs)
    durations = reproduce.quiet_durations(jobs, benchmarks, 2, optimistic=False)
    # prepare showed 16 CPU s in 10 s (parallelism 1.6 of its 2 threads); slow 40 CPU s, quick 4, all 0
    assert durations == pytest.approx([10.0, 40.0, 4.0, 0.0])
    assert reproduce.quiet_durations(jobs, benchmarks, 2, optimistic=True)[0] == pytest.approx(8.0)
    threads, mem = [j.threads for j in jobs], [j.mem_mb or 0 for j in jobs]
    # 2 cores: prepare, then slow and quick side by side
    assert reproduce.list_schedule(durations, threads, mem, after, cores=2, memory_mb=4000) == pytest.approx(50.0)
    # room for one 300 MB job at a time: slow (the longer chain) first, then quick
    assert reproduce.list_schedule(durations, threads, mem, after, cores=2, memory_mb=500) == pytest.approx(54.0)
    one_core = reproduce.quiet_durations(jobs, benchmarks, 1, optimistic=True)
    assert reproduce.list_schedule(one_core, threads, mem, after, cores=1, memory_mb=4000) == pytest.approx(16 + 40 + 4)
    with pytest.raises(ValueError, match="more memory"):
        reproduce.list_schedule(durations, threads, mem, after, cores=2, memory_mb=350)


def test_resources_from_benchmarks_carry_the_stated_margins(reproduce, run):
    jobs = reproduce.parse_plan(PLAN)
    table = reproduce.suggested_resources(reproduce.rule_table(jobs, reproduce.read_benchmarks(jobs, run)))
    assert table.loc["prepare", "mem_mb"] == 800  # 1.5 x 500 MB, rounded up to 100 MB
    assert table.loc["slow", "runtime"] == 7  # 2 x 40 s + 5 min, rounded up
    assert math.isnan(table.loc["quick", "mem_mb"])


def test_the_report_names_the_slowest_rules_and_a_job_over_its_mem_mb(reproduce, run):
    jobs = reproduce.parse_plan(PLAN)
    text = reproduce.report(jobs, reproduce.read_benchmarks(jobs, run), top=2, cores=2, memory_mb=4000)
    assert "the 2 slowest rules" in text
    assert text.index("slow (1 jobs)") < text.index("prepare (1 jobs)")
    assert "critical path by wall seconds: 50 s" in text
    assert "quiet estimate: 50 s" in text
    assert "prepare: max_rss 500 MB > mem_mb 400" in text


def test_a_file_that_is_not_a_benchmark_names_itself(reproduce, tmp_path):
    path = tmp_path / "bad.tsv"
    path.write_text("s\tmax_rss\n1.0\t20\n")
    with pytest.raises(SystemExit, match=r"bad\.tsv: no column 'cpu_time'"):
        reproduce.read_benchmark(path)
