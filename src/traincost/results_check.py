"""Which files of a results folder are damaged: each read as the next rule would read it, so that a result that was
truncated, or replaced by other bytes, is found without rerunning anything.

Snakemake rebuilds an output that is missing or older than its inputs, not one whose bytes were damaged after it
was written (a disk error, a copy cut short, an editor). ``damaged_files`` lists those; removing them (``traincost
check-results --remove``) makes the next ``snakemake`` run rebuild exactly them and what depends on them.

What is checked, by suffix: Parquet (its footer and every column read), ONNX (parsed; its external data stays
unread), CSV (parsed by pandas), JSON (parsed), PNG and PDF (their signature and, for PDF, its end-of-file
marker), HTML (UTF-8 text ending in its closing tag). Logs, benchmarks and other files are not checked.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq

__all__ = ["Damage", "damaged_files", "CHECKED_SUFFIXES"]


@dataclass(frozen=True, slots=True)
class Damage:
    """A damaged file and what reading it found."""

    path: Path
    reason: str


def _parquet(path: Path) -> None:
    pq.read_table(path)


def _onnx(path: Path) -> None:
    import onnx  # noqa: PLC0415 (ONNX only where a results folder holds graphs)

    onnx.load(str(path), load_external_data=False)


def _csv(path: Path) -> None:
    pd.read_csv(path)


def _json(path: Path) -> None:
    json.loads(path.read_text(encoding="utf-8"))


def _png(path: Path) -> None:
    with path.open("rb") as handle:
        if handle.read(8) != b"\x89PNG\r\n\x1a\n":
            raise ValueError("no PNG signature")
        handle.seek(-12, os.SEEK_END)
        if handle.read(12)[4:8] != b"IEND":
            raise ValueError("no IEND chunk at its end (cut short)")


def _pdf(path: Path) -> None:
    with path.open("rb") as handle:
        if handle.read(5) != b"%PDF-":
            raise ValueError("no PDF signature")
        handle.seek(max(path.stat().st_size - 1024, 0))
        if b"%%EOF" not in handle.read():
            raise ValueError("no %%EOF marker at its end (cut short)")


def _html(path: Path) -> None:
    if not path.read_text(encoding="utf-8").rstrip().lower().endswith("</html>"):
        raise ValueError("does not end in </html> (cut short)")


_CHECKS: dict[str, Callable[[Path], None]] = {
    ".parquet": _parquet,
    ".onnx": _onnx,
    ".csv": _csv,
    ".json": _json,
    ".png": _png,
    ".pdf": _pdf,
    ".html": _html,
}
CHECKED_SUFFIXES = tuple(_CHECKS)
_SKIPPED_FOLDERS = {"logs", "benchmarks"}


def _files(root: Path) -> Iterator[Path]:
    for folder, folders, files in os.walk(root):
        folders[:] = sorted(name for name in folders if name not in _SKIPPED_FOLDERS and not name.startswith("."))
        for name in sorted(files):
            path = Path(folder, name)
            if path.suffix in _CHECKS and not name.startswith("."):
                yield path


def damaged_files(root: str | os.PathLike[str]) -> tuple[list[Damage], int]:
    """The damaged files under ``root`` and how many files were checked."""
    damaged, checked = [], 0
    for path in _files(Path(root)):
        checked += 1
        if path.stat().st_size == 0:
            damaged.append(Damage(path, "empty"))
            continue
        try:
            _CHECKS[path.suffix](path)
        except Exception as err:  # noqa: BLE001 (other bytes make each reader fail its own way; any failure is damage)
            damaged.append(Damage(path, " ".join(f"{type(err).__name__}: {err}".split())[:200]))
    return damaged, checked
