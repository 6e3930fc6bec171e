"""A sharded sweep killed half-way resumes: finished shards are kept, no file is half-written.

The workflow runs one sweep of 4 shards on one core. Its inputs (the tiny GPT-2's Workload tables
and the graphs before them) are copied in beforehand, so the only jobs are the shards and the merge.
Once one shard is written and Snakemake has moved on to the next job, the whole process group gets
SIGKILL (as from the OOM killer or a lost node): no clean-up code runs anywhere.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
import yaml

from tests.integration.test_workflow import REPO, _config
from tests.reliability.conftest import CHAIN_FILES, EDGE_TPU, run_ok

pytestmark = pytest.mark.ort  # the ONNX front end throughout (tests/conftest.py: pytest_ignore_collect)

SWEEP = "results/monet/sweeps/edge/training"
MERGED = Path(f"{SWEEP}.parquet")
SHARDS = [Path(f"{SWEEP}/shard{i}-of-4.parquet") for i in range(4)]
LOGS = Path("results/logs/hardware_sweep/edge/training")


def _command(workdir: Path, *args: str) -> tuple[list[str], dict[str, str]]:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    command = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory", str(workdir)]
    return [*command, "--configfile", str(workdir / "config.yaml"), "--cores", "1", *args], env


def _snakemake(workdir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command, env = _command(workdir, *args)
    return subprocess.run(command, capture_output=True, text=True, env=env, check=False)


def _wait_for(condition: Callable[[], bool], what: str, process: subprocess.Popen, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert process.poll() is None, f"Snakemake ended before {what}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


@pytest.mark.slow  # a Snakemake run killed and resumed: 27 s
def test_a_killed_sharded_sweep_resumes_without_recomputing_finished_shards(tiny_gpt2: Path, tmp_path: Path) -> None:
    for name in CHAIN_FILES:  # copy2 keeps the mtimes, so the chain stays up to date
        target = tmp_path / "results" / name.format(w="first")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(tiny_gpt2 / name.format(w="first"), target)
    config = _config()
    config["hardware_sweeps"]["edge"].update(shards=4, grid={"x_pes": [1, 2], "lanes": [1, 4]})
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))

    command, env = _command(tmp_path, str(MERGED))
    with (tmp_path / "first_run.log").open("w") as log:
        run = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        # one shard written, and the next job started (so Snakemake has recorded the first as complete)
        _wait_for(
            lambda: any((tmp_path / s).exists() for s in SHARDS) and len(list((tmp_path / LOGS).glob("shard*.log"))) >= 2,
            "a shard to finish",
            run,
        )
    finally:
        os.killpg(run.pid, signal.SIGKILL)
        run.wait()

    finished = [s for s in SHARDS if (tmp_path / s).exists()]
    assert 1 <= len(finished) < 4 and not (tmp_path / MERGED).exists()
    for shard in finished:
        assert pq.read_table(tmp_path / shard).num_rows == 1  # whole: 4 configurations over 4 shards
    leftovers = [p.name for p in (tmp_path / SWEEP).iterdir() if p.name.startswith(".")]
    assert not leftovers, f"temporary files left behind: {leftovers}"
    before = {shard: (tmp_path / shard).stat().st_mtime_ns for shard in finished}

    unlock = _snakemake(tmp_path, "--unlock")  # what Snakemake asks for after a kill
    assert unlock.returncode == 0, unlock.stderr[-2000:]
    again = _snakemake(tmp_path, str(MERGED), "--rerun-incomplete")
    assert again.returncode == 0, again.stderr[-3000:]

    assert {shard: (tmp_path / shard).stat().st_mtime_ns for shard in finished} == before, "a finished shard was recomputed"
    assert all((tmp_path / s).is_file() for s in SHARDS)
    merged = pd.read_parquet(tmp_path / MERGED)
    pieces = pd.concat([pd.read_parquet(tmp_path / s) for s in SHARDS], ignore_index=True)
    pd.testing.assert_frame_equal(merged, pieces)
    ops, tensors = (tmp_path / "results" / name.format(w="first") for name in CHAIN_FILES[-2:])
    whole = tmp_path / "whole.parquet"
    run_ok(
        "sweep", "--ops", ops, "--tensors", tensors, "--hardware", EDGE_TPU, "--grid", '{"lanes": [1, 4], "x_pes": [1, 2]}',
        "--step", "training", "--mode", "pipeline_tensor", "--out", whole,
    )  # fmt: skip
    pd.testing.assert_frame_equal(merged, pd.read_parquet(whole))
