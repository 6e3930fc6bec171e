"""Compare the Parquet results of two workflow runs, timing columns aside.

Two runs of the same config (for example one through SLURM, one local) must give the same tables. For
every `*.parquet` under either directory's `results/` (or the directory itself if it has none), in the
other at the same relative path: byte-identical files are equal; otherwise both are read and compared
column by column, values exactly (NaN equal to NaN), after dropping timing columns, those whose name
contains `seconds` or `time` or ends in `_s` (wall times differ from run to run), except the model's
results `*_per_s` (rates) and `latency_s`. Prints each difference
(a file on one side only, other columns, a column whose values differ with its first differing row) and
a summary line.

    python bench/compare_runs.py /tmp/slurmrun /tmp/localrun

Exit status: 0 if every table matches, 1 if any differs, 2 if a directory is missing or holds no Parquet.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

# columns ending in _s that are model results, not wall times: rates (samples_per_s, bandwidth_gb_per_s)
# and a modelled latency
_RESULT_SUFFIXES = ("_per_s", "latency_s")


def is_timing_column(name: str) -> bool:
    """Whether a column holds a measured wall time (search_s, solve_seconds, ...), which differs between runs."""
    lowered = name.lower()
    if lowered.endswith(_RESULT_SUFFIXES):
        return False
    return "seconds" in lowered or "time" in lowered or lowered.endswith("_s")


def parquet_files(run_dir: Path) -> dict[str, Path]:
    """Every Parquet file of a run, keyed by its path relative to the run's results folder."""
    root = run_dir / "results" if (run_dir / "results").is_dir() else run_dir
    return {str(path.relative_to(root)): path for path in sorted(root.rglob("*.parquet"))}


def column_difference(name: str, a: pd.Series, b: pd.Series) -> str | None:
    """How column `name` differs between two tables of equal length, or None if every value is equal."""
    if a.dtype != b.dtype:
        return f"column {name}: dtype {a.dtype} vs {b.dtype}"
    left, right = a.reset_index(drop=True), b.reset_index(drop=True)
    if left.equals(right):
        return None
    try:
        differs = (left != right) & ~(left.isna() & right.isna())
    except (TypeError, ValueError):  # nested values (lists, arrays): compare their text
        differs = left.astype(str) != right.astype(str)
    rows = differs[differs].index
    if len(rows) == 0:
        return None
    row = rows[0]
    first_a, first_b = (value.item() if hasattr(value, "item") else value for value in (left[row], right[row]))
    return f"column {name}: {len(rows)} of {len(left)} rows differ, first row {row}: {first_a!r} vs {first_b!r}"


def table_differences(path_a: Path, path_b: Path) -> list[str]:
    """The differences between two Parquet files, timing columns aside; empty if they match."""
    if path_a.read_bytes() == path_b.read_bytes():
        return []
    a, b = pd.read_parquet(path_a), pd.read_parquet(path_b)
    kept_a = [c for c in a.columns if not is_timing_column(str(c))]
    kept_b = [c for c in b.columns if not is_timing_column(str(c))]
    if kept_a != kept_b:
        return [f"columns {kept_a} vs {kept_b}"]
    if len(a) != len(b):
        return [f"{len(a)} rows vs {len(b)}"]
    found = (column_difference(str(c), a[c], b[c]) for c in kept_a)
    return [d for d in found if d is not None]


def main(argv: list[str] | None = None) -> int:
    """Compare two run directories and print what differs; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir_a", type=Path, help="a run's directory (holding results/) or a results folder")
    parser.add_argument("dir_b", type=Path, help="the other run's directory")
    args = parser.parse_args(argv)
    for folder in (args.dir_a, args.dir_b):
        if not folder.is_dir():
            print(f"compare_runs: {folder} is not a directory (expected a workflow run's directory)", file=sys.stderr)
            return 2
    files_a, files_b = parquet_files(args.dir_a), parquet_files(args.dir_b)
    if not files_a and not files_b:
        print(f"compare_runs: no Parquet file under {args.dir_a} or {args.dir_b} (expected a finished run)", file=sys.stderr)
        return 2
    differing = byte_identical = 0
    for name in sorted(files_a.keys() | files_b.keys()):
        if name not in files_b or name not in files_a:
            side = args.dir_a if name in files_a else args.dir_b
            print(f"{name}: only in {side}")
            differing += 1
            continue
        if files_a[name].read_bytes() == files_b[name].read_bytes():
            byte_identical += 1
            continue
        differences = table_differences(files_a[name], files_b[name])
        for difference in differences:
            print(f"{name}: {difference}")
        differing += bool(differences)
    total = len(files_a.keys() | files_b.keys())
    print(
        f"{total - differing} of {total} Parquet files match ({byte_identical} byte for byte, the others "
        f"value for value with timing columns aside), {differing} differ"
    )
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
