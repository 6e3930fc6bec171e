"""Writing outputs: the mode a plain open gives, the output named in an OS error, no empty folder left by a failure."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import pytest

from traincost.io import atomic_path, output_directory


@pytest.mark.parametrize("umask", [0o022, 0o002, 0o077])
def test_a_written_file_has_the_mode_open_would_give(tmp_path: Path, umask: int) -> None:
    previous = os.umask(umask)
    try:
        with atomic_path(tmp_path / "atomic.txt") as tmp:
            tmp.write_text("x")
        (tmp_path / "plain.txt").write_text("x")
    finally:
        os.umask(previous)
    assert stat.S_IMODE((tmp_path / "atomic.txt").stat().st_mode) == stat.S_IMODE((tmp_path / "plain.txt").stat().st_mode)


def test_an_os_error_that_names_no_file_names_the_output(tmp_path: Path) -> None:
    out = tmp_path / "table.parquet"
    with pytest.raises(OSError) as info, atomic_path(out):
        raise OSError(errno.ENOSPC, "Error writing bytes to file. Detail: [errno 28] No space left on device")
    assert info.value.filename == str(out) and info.value.errno == errno.ENOSPC
    assert list(tmp_path.iterdir()) == []


def test_a_failed_block_removes_the_folders_it_created_and_only_those(tmp_path: Path) -> None:
    existing = tmp_path / "existing"
    existing.mkdir()
    with pytest.raises(RuntimeError), output_directory(existing / "a" / "b"):
        raise RuntimeError("failed before writing")
    assert list(existing.iterdir()) == []
    with pytest.raises(RuntimeError), output_directory(existing):
        raise RuntimeError("failed before writing")
    assert existing.is_dir()


def test_a_folder_with_something_written_in_it_stays(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with pytest.raises(RuntimeError), output_directory(out):
        (out / "ops.parquet").write_text("whole")
        raise RuntimeError("failed after writing")
    assert (out / "ops.parquet").read_text() == "whole"
