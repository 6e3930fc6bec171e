"""bench/performance.py: the README's Performance table is the measurements file's, and a measurement is recorded
dated today."""

from __future__ import annotations

import datetime
import sys
from pathlib import Path

import pytest

from tests.bench_script import bench_script


@pytest.fixture(scope="module")
def performance():
    return bench_script("performance.py")


def test_the_readmes_table_is_the_measurements_file(performance) -> None:
    assert performance.main(["--check"]) == 0, "run bench/performance.py to write README.md's table"


def test_every_measurement_is_dated_and_named(performance) -> None:
    rows = performance.read_rows()
    assert len({row["id"] for row in rows}) == len(rows)
    for row in rows:
        assert row["what"] and row["value"], row
        assert datetime.date.fromisoformat(row["date"]) <= datetime.date.today(), row


def test_a_recorded_value_is_dated_today_and_a_new_one_is_added(performance, tmp_path: Path) -> None:
    rows = [{"id": "quick_time", "what": "Quick config", "value": "2 min", "date": "2026-01-01", "conditions": "quiet"}]
    performance.record(rows, "quick_time", "3 min")
    assert rows[0] == {**rows[0], "value": "3 min", "date": datetime.date.today().isoformat(), "conditions": "quiet"}
    performance.record(rows, "quick_peak_memory", "6.6 GB", what="Peak memory", conditions="2 cores")
    assert [row["id"] for row in rows] == ["quick_time", "quick_peak_memory"]
    performance.write_rows(rows, tmp_path / "m.csv")
    assert performance.read_rows(tmp_path / "m.csv") == rows
    text = f"# x\n{performance.BEGIN}\nold\n{performance.END}\nafter\n"
    table = performance.with_table(text, rows)
    assert "old" not in table and table.endswith(f"{performance.END}\nafter\n") and "| Peak memory | 6.6 GB |" in table


def test_a_command_is_timed_with_its_whole_process_trees_peak(performance) -> None:
    # a child that holds 200 MB for a second, under a parent that holds little
    child = "import time; b = bytearray(200 * 2**20); time.sleep(1.5)"
    parent = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {child!r}], check=True)"
    status, seconds, peak = performance.run_measured([sys.executable, "-c", parent])
    assert status == 0 and seconds >= 1.5 and peak > 200 * 2**20
    assert performance.human_bytes(6.6e9) == "6.6 GB" and performance.human_seconds(749) == "12 min 29 s"
