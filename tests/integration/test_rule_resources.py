"""What the jobs of the workflow ask for: on a cluster, the tool's memory and Snakemake's own."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.integration.test_workflow import _config, snakemake

REPO = Path(__file__).resolve().parents[2]


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
