"""bench/compare_runs.py: two runs' Parquet tables match when only their timing columns differ."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from tests.bench_script import bench_script


@pytest.fixture(scope="module")
def compare_runs():
    return bench_script("compare_runs.py")


def write_run(root: Path, tables: dict[str, pd.DataFrame]) -> Path:
    for name, table in tables.items():
        path = root / "results" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        table.to_parquet(path)
    return root


def table(energy_pj: list[float], wall_seconds: list[float]) -> pd.DataFrame:
    return pd.DataFrame({"op": ["conv", "relu"], "energy_pj": energy_pj, "wall_seconds": wall_seconds, "solve_time": [1, 2]})


def test_timing_columns_are_wall_times_not_modelled_latencies_or_rates(compare_runs):
    names = ["wall_seconds", "solve_time", "elapsed_s", "energy_pj", "stages", "latency_s", "samples_per_s"]
    timing = [c for c in names if compare_runs.is_timing_column(c)]
    assert timing == ["wall_seconds", "solve_time", "elapsed_s"]


def test_runs_differing_only_in_timing_columns_match(compare_runs, tmp_path, capsys):
    a = write_run(tmp_path / "a", {"w/ops.parquet": table([1.0, float("nan")], [0.5, 0.7])})
    b = write_run(tmp_path / "b", {"w/ops.parquet": table([1.0, float("nan")], [9.0, 9.5])})
    assert compare_runs.main([str(a), str(b)]) == 0
    assert "1 of 1 Parquet files match (0 byte for byte," in capsys.readouterr().out


def test_a_differing_value_and_a_missing_file_are_reported(compare_runs, tmp_path, capsys):
    a = write_run(tmp_path / "a", {"w/ops.parquet": table([1.0, 2.0], [0.5, 0.7]), "only_a.parquet": table([1.0, 2.0], [0, 0])})
    b = write_run(tmp_path / "b", {"w/ops.parquet": table([1.0, 2.5], [0.5, 0.7])})
    assert compare_runs.main([str(a), str(b)]) == 1
    out = capsys.readouterr().out
    assert "w/ops.parquet: column energy_pj: 1 of 2 rows differ, first row 1: 2.0 vs 2.5" in out
    assert f"only_a.parquet: only in {a}" in out
    assert "0 of 2 Parquet files match" in out


def test_a_missing_directory_is_one_error_line(compare_runs, tmp_path, capsys):
    assert compare_runs.main([str(tmp_path / "nowhere"), str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip().count("\n") == 0
