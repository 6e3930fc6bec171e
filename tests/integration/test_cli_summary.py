"""`traincost summary` and `traincost report-table` on small hand-made comparison CSVs."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.test_cli import assert_clean_failure, traincost

MONET = """claim,figure,paper_says,check,value,holds
rankings_differ,1,inference and training rankings differ,Spearman rho < 0.9,0.95,False
training_costs_more,1,a training step costs more than inference,share of configurations = 1,1.0,True
"""

MTRAIN = """claim,model,cluster,bandwidth_gb_per_s,metric,paper,ours,check,agrees,source
table3,resnet18,cluster1,3,dfs_s,905.9,3.6,ours faster than the paper's,True,Table III
table3,resnet18,cluster1,3,dfs_gflops,527,306.7,values side by side,,Table III
speedup_vs_hap,resnet18,cluster2,15,speedup,,0.89,MTrain at least as fast as HAP (>= 1),False,
"""


@pytest.fixture
def results(tmp_path: Path) -> Path:
    """A results folder with MONET's and MTrain's tables (no TM-Training)."""
    (tmp_path / "monet").mkdir()
    (tmp_path / "monet/claims.csv").write_text(MONET)
    (tmp_path / "mtrain").mkdir()
    (tmp_path / "mtrain/compare.csv").write_text(MTRAIN)
    return tmp_path


def _row(stdout: str, claim: str) -> list[str]:
    line = next(line for line in stdout.splitlines() if line.startswith(claim))
    return line.split()


def test_summary_counts_and_lists_every_check(results: Path) -> None:
    result = traincost("summary", "--results", results)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert f"MONET ({results / 'monet/claims.csv'}): 1 of 2 checks agree" in out
    assert f"MTrain ({results / 'mtrain/compare.csv'}): 1 of 2 checks agree, 1 row(s) without a check" in out
    assert "TM-Training" not in out
    assert out.strip().splitlines()[-1] == "2 of 4 checks agree over MONET, MTrain"
    assert "claim" in out and "paper" in out and "ours" in out and "agrees" in out
    # the rows of one claim are told apart by the context that differs (here the metric)
    assert _row(out, "table3 dfs_s") == ["table3", "dfs_s", "905.9", "3.6", "yes"]
    assert _row(out, "table3 dfs_gflops") == ["table3", "dfs_gflops", "527", "306.7", "-"]
    assert _row(out, "speedup_vs_hap")[-2:] == ["0.89", "NO"]
    assert _row(out, "rankings_differ")[-2:] == ["0.95", "NO"]
    assert "inference and training rankings differ" in out


def test_summary_filters_by_study_and_verdict(results: Path) -> None:
    result = traincost("summary", "--results", results, "--study", "mtrain", "--disagreeing")
    assert result.returncode == 0, result.stderr
    assert "MONET" not in result.stdout
    assert "speedup_vs_hap" in result.stdout and "table3" not in result.stdout.split("\n", 1)[1]
    assert result.stdout.strip().splitlines()[-1] == "1 of 2 checks agree over MTrain"


def test_report_table_colours_every_row(results: Path) -> None:
    out = results / "mtrain/agreement.html"
    result = traincost("report-table", "--study", "mtrain", "--in", results / "mtrain/compare.csv", "--out", out)
    assert result.returncode == 0, result.stderr
    page = out.read_text()
    assert "<b>1 of 2 checks agree</b>" in page
    assert [page.count(f'<tr class="{kind}">') for kind in ("agree", "disagree", "unchecked")] == [1, 1, 1]
    assert "MTrain at least as fast as HAP (&gt;= 1)" in page  # escaped


def test_no_results_folder_or_no_table_is_named(tmp_path: Path) -> None:
    assert_clean_failure(traincost("summary", "--results", tmp_path / "missing"), str(tmp_path / "missing"), "no such")
    assert_clean_failure(
        traincost("summary", "--results", tmp_path), "no paper-vs-ours table", "monet/claims.csv", "tiered/compare.csv"
    )


def test_a_missing_column_names_the_file_and_column(results: Path) -> None:
    bad = results / "monet/claims.csv"
    bad.write_text(MONET.replace("holds", "verdict"))
    assert_clean_failure(traincost("summary", "--results", results), str(bad), "holds")
    out = results / "monet.html"
    result = traincost("report-table", "--study", "monet", "--in", bad, "--out", out)
    assert_clean_failure(result, str(bad), "holds", left=out)


def test_a_bad_agreement_value_names_the_row(results: Path) -> None:
    bad = results / "mtrain/compare.csv"
    bad.write_text(MTRAIN.replace(",True,Table III", ",maybe,Table III"))
    assert_clean_failure(traincost("summary", "--results", results), str(bad), "row 2", "'agrees'", "maybe")
