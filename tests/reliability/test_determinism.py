"""The same stage run twice gives byte-identical Parquet: fixed seeds, sorted rows, no timestamps.

Each stage runs as two real ``traincost`` processes at once, with different string-hash seeds
(``PYTHONHASHSEED``), so an output that depends on set or dict order of strings shows up too.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from tests.reliability.conftest import FPGA_DEVICES, FPGA_IPS, FUSEMAX, TPUV4_TIERED, console

pytestmark = pytest.mark.ort  # the ONNX front end throughout (tests/conftest.py: pytest_ignore_collect)


def run_twice(tmp_path: Path, args: Callable[[Path], tuple[object, ...]]) -> tuple[Path, Path]:
    """Run ``traincost *args(out)`` twice concurrently (hash seeds 1 and 2); return both outputs."""
    outputs = (tmp_path / "first/out.parquet", tmp_path / "second/out.parquet")
    processes = [console(*args(out), hash_seed=seed) for seed, out in enumerate(outputs, start=1)]
    for process in processes:
        _, stderr = process.communicate(timeout=120)
        assert process.returncode == 0, stderr
    return outputs


def assert_identical(first: Path, second: Path) -> None:
    assert len(pd.read_parquet(first)) > 0
    assert first.read_bytes() == second.read_bytes(), pd.read_parquet(first).compare(pd.read_parquet(second))


def test_monet_sweep_shard(tiny_tables: tuple[Path, Path], tmp_path: Path) -> None:
    ops, tensors = tiny_tables
    grid = json.dumps({"buffer_bandwidth": [8192, 16384]})
    first, second = run_twice(
        tmp_path,
        lambda out: (
            "sweep", "--ops", ops, "--tensors", tensors, "--hardware", FUSEMAX, "--grid", grid, "--step", "training",
            "--shard", "0/1", "--out", out,
        ),
    )  # fmt: skip
    assert_identical(first, second)
    assert len(pd.read_parquet(first)) == 2


def test_mtrain_study(tiny_tables: tuple[Path, Path], tmp_path: Path) -> None:
    """MTrain's mapping search, Alpa's and HAP's solvers and the single-FPGA baselines, twice."""
    ops, tensors = tiny_tables
    first, second = run_twice(
        tmp_path,
        lambda out: (
            "mtrain-study", "--ops", ops, "--tensors", tensors, "--devices", FPGA_DEVICES, "--ips", FPGA_IPS,
            "--cluster", "cluster1", "--batch", 4, "--bandwidths", 0.5, 15, "--out", out,
        ),
    )  # fmt: skip
    assert_identical(first, second)


@pytest.mark.parametrize("policies", [("sentinel", "autotm", "deeptm", "tm_training")])
def test_tiered_study(bert_large: tuple[Path, Path], tmp_path: Path, policies: tuple[str, ...]) -> None:
    """The heuristic policies and the two that follow AutoTM's CP-SAT plan."""
    ops, tensors = bert_large
    first, second = run_twice(
        tmp_path,
        lambda out: (
            "tiered-study", "--ops", ops, "--tensors", tensors, "--hardware", TPUV4_TIERED, "--ratios", 25,
            "--policies", *policies, "--out", out,
        ),
    )  # fmt: skip
    assert_identical(first, second)
    assert set(pd.read_parquet(first)["policy"]) == {"hbm_only", "ideal", *policies}
