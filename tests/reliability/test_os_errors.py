"""Operating-system trouble: unwritable outputs refused before any work, OS errors as one line, SIGTERM
and killed runs leave no temporary files behind."""

from __future__ import annotations

import errno
import os
import signal
import stat
import subprocess
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from matplotlib.figure import Figure

from tests.reliability.conftest import EDGE_TPU, cli, one_error_line, slow_export
from traincost.errors import ConfigError
from traincost.io import atomic_path
from traincost.plots.hardware_sweeps import save_figure

pytestmark = pytest.mark.ort  # the ONNX front end throughout (tests/conftest.py: pytest_ignore_collect)


def _sweep(tiny_tables: tuple[Path, Path], out: Path) -> subprocess.CompletedProcess[str]:
    ops, tensors = tiny_tables
    return cli("sweep", "--ops", ops, "--tensors", tensors, "--hardware", EDGE_TPU, "--step", "training", "--out", out)


def test_an_output_that_is_a_directory_is_refused(tiny_tables: tuple[Path, Path], tmp_path: Path) -> None:
    one_error_line(_sweep(tiny_tables, tmp_path), "--out", str(tmp_path), "is a directory")


def test_an_output_under_a_file_is_refused_before_any_work(tiny_tables: tuple[Path, Path], tmp_path: Path) -> None:
    blocker = tmp_path / "not_a_folder"
    blocker.write_text("")
    one_error_line(_sweep(tiny_tables, blocker / "sweep.parquet"), "--out", "cannot write in", str(blocker))


@pytest.mark.parametrize("names", ["no file", "the temporary file"])
def test_a_full_disk_is_one_line_naming_the_file(
    tiny_tables: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, names: str
) -> None:
    """pyarrow's disk-full error names no file (``OSError(28, 'Error writing bytes to file. Detail: ...')``, as it
    raises writing to /dev/full); an OS error may name the temporary file: either way the line names the output."""

    def full(_table: object, where: object, *_: object, **__: object) -> None:
        Path(where).write_bytes(b"PAR1")  # a partial file, as a real short write leaves
        detail = f"Error writing bytes to file. Detail: [errno {errno.ENOSPC}] {os.strerror(errno.ENOSPC)}"
        raise OSError(errno.ENOSPC, detail, *([str(where)] if names == "the temporary file" else []))

    monkeypatch.setattr(pq, "write_table", full)
    out = tmp_path / "sweep.parquet"
    one_error_line(_sweep(tiny_tables, out), f"{out}: ", "No space left on device")
    assert not out.exists() and not list(tmp_path.glob(".sweep.parquet.*")), list(tmp_path.iterdir())


@pytest.mark.parametrize("umask", [0o022, 0o027, 0o077])
def test_outputs_and_their_folders_honour_the_umask(tiny_tables: tuple[Path, Path], tmp_path: Path, umask: int) -> None:
    """A shared cluster filesystem: with umask 022 the group reads the results (a temporary file made by
    ``tempfile.mkstemp`` would be 0600 whatever the umask)."""
    out = tmp_path / "results" / "sweep.parquet"
    previous = os.umask(umask)
    try:
        result = _sweep(tiny_tables, out)
    finally:
        os.umask(previous)
    assert result.returncode == 0, result.stderr
    assert stat.S_IMODE(out.stat().st_mode) == 0o666 & ~umask
    assert stat.S_IMODE(out.parent.stat().st_mode) == 0o777 & ~umask


def test_an_unknown_figure_format_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"figure\.xyz: \.xyz is not a figure format"):
        save_figure(Figure(), [tmp_path / "figure.png", tmp_path / "figure.xyz"])
    assert not list(tmp_path.iterdir())


def test_sigterm_removes_the_temporary_file_of_an_output_being_written(tmp_path: Path) -> None:
    """What `timeout`, SLURM and Snakemake send: the command exits 143 and leaves neither output nor temporary."""
    out = tmp_path / "model.onnx"
    process = slow_export(out)
    try:
        assert process.stdout.readline().strip() == "writing", process.stderr.read()
        assert list(tmp_path.glob(".model.onnx.*.tmp"))
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 128 + signal.SIGTERM
    finally:
        process.kill()
        process.wait()
    assert not out.exists() and not list(tmp_path.iterdir()), list(tmp_path.iterdir())


def test_a_stale_temporary_of_the_same_output_is_removed_on_the_next_write(tmp_path: Path) -> None:
    """SIGKILL runs no clean-up: the next write of the same output sweeps up what the killed one left."""
    stale = tmp_path / ".table.parquet.k1ll3d.tmp"
    stale.write_text("half")
    other = tmp_path / ".other.parquet.abc.tmp"
    other.write_text("another output's")
    with atomic_path(tmp_path / "table.parquet") as tmp:
        tmp.write_text("whole")
    assert (tmp_path / "table.parquet").read_text() == "whole"
    assert not stale.exists() and other.exists()
