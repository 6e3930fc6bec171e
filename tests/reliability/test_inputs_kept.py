"""No input overwritten, and no run's output taken by another's: an output that is one of the command's inputs is
refused before any work (links followed), and a live run's temporary file is never swept up as a killed run's."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.reliability.conftest import cli, one_error_line
from tests.workloads import conv_relu_workload
from traincost.io import atomic_path

REPO = Path(__file__).resolve().parents[2]
ZIGZAG_TPU = REPO / "tests/fixtures/hardware/zigzag/hardware/tpu_like.yaml"


@pytest.fixture
def tables(tmp_path: Path) -> tuple[Path, Path]:
    ops, tensors = tmp_path / "ops.parquet", tmp_path / "tensors.parquet"
    conv_relu_workload().write(ops, tensors)
    return ops, tensors


def test_an_output_that_is_an_input_table_is_refused_and_the_table_kept(tables: tuple[Path, Path]) -> None:
    ops, tensors = tables
    before = ops.read_bytes()
    result = cli("memory", "--ops", ops, "--tensors", tensors, "--out", ops)
    one_error_line(result, f"--out {ops}", "is the input --ops", "would replace the input")
    assert ops.read_bytes() == before


def test_an_output_that_is_an_input_through_a_link_is_refused(tables: tuple[Path, Path], tmp_path: Path) -> None:
    ops, tensors = tables
    (tmp_path / "linked").mkdir()
    link = tmp_path / "linked" / "memory.parquet"
    link.symlink_to(tensors)
    hard = tmp_path / "hard.parquet"
    os.link(tensors, hard)
    for out in (link, hard, tmp_path / "linked" / ".." / "tensors.parquet"):
        one_error_line(cli("memory", "--ops", ops, "--tensors", tensors, "--out", out), "is the input --tensors")
    assert cli("memory", "--ops", ops, "--tensors", tensors, "--out", tmp_path / "memory.parquet").returncode == 0


def test_an_imported_file_written_over_its_source_is_refused(tmp_path: Path) -> None:
    source = tmp_path / "tpu_like.yaml"
    shutil.copy(ZIGZAG_TPU, source)
    result = cli("hardware", "import", "zigzag", source, "--out", source)
    one_error_line(result, f"--out {source}: is the input {source}")
    assert source.read_bytes() == ZIGZAG_TPU.read_bytes()


def test_a_live_run_s_temporary_is_kept_and_a_dead_run_s_swept_up(tmp_path: Path) -> None:
    """Two runs writing one output: the one that finishes first must not delete the other's temporary (it did, as
    "stale", in 1 of 5 tries); a killed run's is still swept up by the next write."""
    finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True)
    dead = tmp_path / f".table.parquet.{finished.stdout.strip()}.dead.tmp"
    live = tmp_path / f".table.parquet.{os.getpid()}.live.tmp"
    for tmp in (dead, live):
        tmp.write_text("half")
    with atomic_path(tmp_path / "table.parquet") as tmp:
        tmp.write_text("whole")
    assert (tmp_path / "table.parquet").read_text() == "whole"
    assert live.exists() and not dead.exists()


def test_two_runs_writing_one_output_both_succeed_and_one_whole_result_remains(tmp_path: Path) -> None:
    out = tmp_path / "table.txt"
    program = f"""
import sys, time
from traincost.io import atomic_path
with atomic_path({str(out)!r}) as tmp:
    tmp.write_text(sys.argv[1] * 1000)
    time.sleep(0.3)
"""
    runs = [subprocess.Popen([sys.executable, "-c", program, tag]) for tag in "ab"]
    assert [run.wait(timeout=60) for run in runs] == [0, 0]
    assert out.read_text() in ("a" * 1000, "b" * 1000)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["table.txt"]


def test_a_table_cost_writes_into_its_folder_that_is_an_input_is_refused(tmp_path: Path) -> None:
    """``traincost cost`` writes fixed names into --out-dir: an input under one of them would be replaced."""
    out = tmp_path / "out"
    out.mkdir()
    hardware = out / "cost.parquet"  # the hardware file, under the name of the table cost writes
    shutil.copy(REPO / "config/hardware/edge_tpu.yaml", hardware)
    result = cli("cost", "resnet18_cifar", "--hardware", hardware, "--out-dir", out, "--frontend", "torch")
    one_error_line(result, f"--out-dir {out}: its cost.parquet is the input --hardware {hardware}")
    assert hardware.read_text() == (REPO / "config/hardware/edge_tpu.yaml").read_text()
