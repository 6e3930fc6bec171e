"""Every row of the three paper-vs-ours tables of two runs side by side: kind, verdict and value before and after.

Reads each study's comparison (``monet/claims.csv``, ``mtrain/compare.csv``, ``tiered/compare.csv``) under two results
folders through ``traincost.analysis.agreement.read_comparison`` (a table written before the one verdict rule has no
``tie`` column: its verdict is then its direction and magnitude as they were), matches rows by claim and context, and
prints Markdown: per study the counts before and after (direction, ties, magnitude, rows not counted by kind), then
every row with its kind, verdict and our value in each run (a row only one run has shows ``–`` on the other side).

    python bench/verdicts_before_after.py BEFORE/results AFTER/results > before_after.md

Exit status 0; 2 if a folder holds none of the three tables.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import pandas as pd

from traincost.analysis.ablations import row_keys
from traincost.analysis.agreement import STUDIES, Study, count_agreement, read_comparison


def _value(value: object) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return f"{value:.4g}" if isinstance(value, float) else str(value)[:40]


def _counts(frame: pd.DataFrame | None) -> str:
    if frame is None:
        return "–"
    count = count_agreement(frame)
    others = ", ".join(f"{n} {kind}" for kind, n in count.not_counted if n) or "none"
    return (
        f"{count.agree} of {count.checked} in direction ({count.ties} ties), "
        f"{count.magnitude_agree} of {count.magnitude_checked} in magnitude; not counted: {others}"
    )


def _verdict(row: pd.Series) -> str:
    return row["verdict"] or f"({row['kind']})"


def study_markdown(study: Study, before: pd.DataFrame | None, after: pd.DataFrame | None) -> list[str]:
    """One study's section: its counts, then every row of either run."""
    lines = [f"## {study.title}", "", "| run | counts |", "|---|---|"]
    lines += [f"| before | {_counts(before)} |", f"| after | {_counts(after)} |", ""]
    frames = {}
    for side, frame in (("before", before), ("after", after)):
        if frame is not None:
            frames[side] = frame.assign(key=row_keys(frame, study)).drop_duplicates("key").set_index("key")
    keys = list(dict.fromkeys([k for f in frames.values() for k in f.index]))
    lines += ["| check | kind before → after | verdict before → after | ours before → after |", "|---|---|---|---|"]
    for key in keys:
        cells = {}
        for side in ("before", "after"):
            frame = frames.get(side)
            row = frame.loc[key] if frame is not None and key in frame.index else None
            cells[side] = ("–", "–", "–") if row is None else (row["kind"], _verdict(row), _value(row["ours"]))
        label = key.replace(" | ", " ").replace("|", "\\|").strip()
        moved = [
            f"{cells['before'][i]} → {cells['after'][i]}" if cells["before"][i] != cells["after"][i] else cells["after"][i]
            for i in range(3)
        ]
        lines.append(f"| {label} | {moved[0]} | {moved[1]} | {moved[2]} |")
    return [*lines, ""]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", type=Path, help="the results folder of the earlier run")
    parser.add_argument("after", type=Path, help="the results folder of the later run")
    args = parser.parse_args(argv)
    sections, found = [], 0
    for study in STUDIES.values():
        tables = []
        for root in (args.before, args.after):
            path = root / study.path
            tables.append(read_comparison(path, study) if path.is_file() else None)
        found += sum(t is not None for t in tables)
        if any(t is not None for t in tables):
            sections += study_markdown(study, *tables)
    if not found:
        print(f"{args.before}, {args.after}: no paper-vs-ours table", file=sys.stderr)
        return 2
    print("\n".join(["# Every row of the paper-vs-ours tables, before and after", "", *sections]).rstrip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
