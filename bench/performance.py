"""The README's Performance table: every dated measurement of what a run takes, written from one file.

    .venv/bin/python bench/performance.py                  write the table into README.md from bench/performance.csv
    .venv/bin/python bench/performance.py --check          exit 1 if README.md's table is not what the file gives
    .venv/bin/python bench/performance.py run quick -- snakemake --cores 2 --configfile config/quick.yaml
    .venv/bin/python bench/performance.py disk             measure results/ and .venv
    .venv/bin/python bench/performance.py [--conditions TEXT] record ID VALUE

``bench/performance.csv`` holds one row per measurement: ``id``, ``what`` was measured (the command, the config),
its ``value``, the ``date`` it was measured and the ``conditions`` (cores, what ran beside it). The README shows the
rows in the file's order between the markers ``<!-- performance:begin -->`` and ``<!-- performance:end -->``; a test
checks that the two agree, so a number changes in the file, never by hand in the README.

``run NAME -- COMMAND`` runs the command and records ``NAME_time`` (its wall time) and ``NAME_peak_memory`` (the
largest resident memory of its whole process tree, every job of a Snakemake run together, sampled every 0.5 s, so a
peak shorter than that can be missed; ``bench/job_peaks.py`` gives each job's own). ``disk`` records the size of the
files under ``results/`` (as ``--results-id``, by default ``quick_results_disk``) and under the venv (``--venv-id``).
Each writes today's date and then the README's table. Run the command on a clean clone after the install, on 2 cores
with nothing beside it, or say what ran beside it with ``--conditions``.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import shlex
import subprocess
import sys
import time
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[1]
MEASUREMENTS = REPO / "bench" / "performance.csv"
README = REPO / "README.md"
BEGIN, END = "<!-- performance:begin -->", "<!-- performance:end -->"
FIELDS = ("id", "what", "value", "date", "conditions")
SAMPLE_S = 0.5


def read_rows(path: Path = MEASUREMENTS) -> list[dict[str, str]]:
    """The measurements, in the file's order."""
    with path.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    if rows and tuple(rows[0]) != FIELDS:
        raise SystemExit(f"{path}: columns {', '.join(rows[0])}; expected {', '.join(FIELDS)}")
    return rows


def write_rows(rows: list[dict[str, str]], path: Path = MEASUREMENTS) -> None:
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=FIELDS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def table(rows: list[dict[str, str]]) -> str:
    """The Markdown table of the measurements, a row each."""
    lines = ["| measured | value | when | conditions |", "|---|---|---|---|"]
    for row in rows:
        day = datetime.date.fromisoformat(row["date"])
        when = f"{day.day} {day:%B %Y}"
        lines.append(f"| {row['what']} | {row['value']} | {when} | {row['conditions']} |")
    return "\n".join(lines)


def with_table(text: str, rows: list[dict[str, str]]) -> str:
    """``text`` (the README) with the table between its markers replaced by the measurements'."""
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        raise SystemExit(f"README.md: no {BEGIN} … {END} block for the table")
    return text[: start + len(BEGIN)] + "\n" + table(rows) + "\n" + text[end:]


def record(
    rows: list[dict[str, str]], row_id: str, value: str, *, what: str | None = None, conditions: str | None = None
) -> None:
    """Set measurement ``row_id`` to ``value``, dated today (a new row if there is none; ``what`` names it then)."""
    today = datetime.date.today().isoformat()
    for row in rows:
        if row["id"] == row_id:
            row.update(value=value, date=today, **({"conditions": conditions} if conditions is not None else {}))
            return
    rows.append({"id": row_id, "what": what or row_id, "value": value, "date": today, "conditions": conditions or ""})


def size_bytes(path: Path) -> int:
    """The bytes of every regular file under ``path`` (links not followed)."""
    return sum(p.lstat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def human_bytes(count: float) -> str:
    return f"{count / 1e9:.1f} GB" if count >= 1e8 else f"{count / 1e6:.0f} MB"


def human_seconds(seconds: float) -> str:
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest:02d} s" if minutes else f"{rest} s"


def tree_rss_bytes(process: psutil.Process) -> int:
    """Resident memory of ``process`` and everything under it now."""
    total = 0
    for member in (process, *process.children(recursive=True)):
        try:
            total += member.memory_info().rss
        except psutil.Error:
            continue
    return total


def run_measured(command: list[str]) -> tuple[int, float, int]:
    """Run ``command``; its exit status, wall seconds and the peak resident memory of its process tree."""
    began = time.monotonic()
    child = subprocess.Popen(command)
    process, peak = psutil.Process(child.pid), 0
    while child.poll() is None:
        try:
            peak = max(peak, tree_rss_bytes(process))
        except psutil.Error:
            pass
        time.sleep(SAMPLE_S)
    return child.returncode, time.monotonic() - began, peak


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if README.md's table differs from the file's")
    parser.add_argument("--conditions", help="what the measurement ran on and beside (recorded with it)")
    commands = parser.add_subparsers(dest="command")
    run = commands.add_parser("run", help="run a command; record NAME_time and NAME_peak_memory")
    run.add_argument("name")
    run.add_argument("cmd", nargs=argparse.REMAINDER, help="-- then the command")
    disk = commands.add_parser("disk", help="record the size of results/ and of the venv")
    disk.add_argument("--results", type=Path, default=REPO / "results")
    disk.add_argument("--results-id", default="quick_results_disk")
    disk.add_argument("--venv", type=Path, default=REPO / ".venv")
    disk.add_argument("--venv-id", default="venv_311_disk")
    one = commands.add_parser("record", help="set one measurement's value, dated today")
    one.add_argument("id")
    one.add_argument("value")
    args = parser.parse_args(argv)
    if args.check and args.command is not None:
        parser.error("--check only compares the README with the file; give it alone")

    rows = read_rows()
    match args.command:
        case "run":
            command = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
            if not command:
                parser.error("run: give the command after --")
            status, seconds, peak = run_measured(command)
            if status != 0:
                print(f"performance: {' '.join(command)} exited with {status}; nothing recorded", file=sys.stderr)
                return status
            shown = shlex.join(command)
            record(rows, f"{args.name}_time", human_seconds(seconds), what=f"`{shown}`", conditions=args.conditions)
            record(
                rows, f"{args.name}_peak_memory", human_bytes(peak), what=f"Peak memory of `{shown}`", conditions=args.conditions
            )
        case "disk":
            record(rows, args.results_id, human_bytes(size_bytes(args.results)), conditions=args.conditions)
            record(rows, args.venv_id, human_bytes(size_bytes(args.venv)), conditions=args.conditions)
        case "record":
            record(rows, args.id, args.value, conditions=args.conditions)
    text = README.read_text()
    wanted = with_table(text, rows)
    if args.check:
        if wanted != text:
            print("performance: README.md's table differs from bench/performance.csv: run bench/performance.py", file=sys.stderr)
            return 1
        return 0
    if args.command is not None:
        write_rows(rows)
    README.write_text(wanted)
    return 0


if __name__ == "__main__":
    sys.exit(main())
