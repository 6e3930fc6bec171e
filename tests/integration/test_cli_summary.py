"""`traincost summary` and `traincost report-table` on small hand-made comparison CSVs."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.test_cli import assert_clean_failure, traincost

MONET = """claim,figure,paper_says,check,value,holds,kind,magnitude
rankings_differ,1,inference and training rankings differ,Spearman rho < 0.9,0.95,False,claim,
training_costs_more,1,a training step costs more than inference,share of configurations = 1,1.0,True,claim,
"""

MTRAIN = """claim,kind,model,cluster,bandwidth_gb_per_s,metric,paper,ours,check,agrees,magnitude,source,tie
table3,timing,resnet18,cluster1,3,dfs_s,905.9,3.6,timing: not counted,,,Table III,
table3,claim,resnet18,cluster1,3,dfs_gflops,527,306.7,values side by side,,False,Table III,
dfs_time_over_converting_time,claim,resnet18,cluster1,3,time_ratio,3.6,2.0,DFS slower than Converting (> 1),True,True,,False
step4_vs_step1,invariant,resnet18,cluster1,3,speedup,1.2,1.1,>= 1 by construction,True,,,
speedup_vs_hap,claim,resnet18,cluster2,15,speedup,,0.89,MTrain at least as fast as HAP (>= 1),False,,,False
plain_models_faster,claim,,cluster1,,throughput_ratio,,1.0002,plain models faster (> 1; tie within 1 %),False,,,True
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
    assert f"MONET ({results / 'monet/claims.csv'}): 1 of 2 claims agree in direction, 0 of 0 in magnitude" in out
    # the timing and invariant rows are shown but not counted; their "agrees" never enters the count
    mtrain = (
        f"MTrain ({results / 'mtrain/compare.csv'}): 1 of 3 claims agree in direction (1 tie among them, not agreeing), "
        "1 of 2 in magnitude"
    )
    assert mtrain + " (ours / paper in 0.67-1.5x); not counted: 1 invariant, 1 timing" in out
    assert "TM-Training" not in out
    last = "2 of 5 claims agree in direction (1 tie among them), 1 of 2 in magnitude, over MONET, MTrain"
    assert out.strip().splitlines()[-1] == last
    assert "claim" in out and "paper" in out and "ours" in out and "agrees" in out and "magnitude" in out
    # the rows of one claim are told apart by the context that differs (here the metric)
    assert _row(out, "table3 dfs_s") == ["table3", "dfs_s", "905.9", "3.6", "timing", "-", "-"]
    assert _row(out, "table3 dfs_gflops") == ["table3", "dfs_gflops", "527", "306.7", "claim", "-", "NO"]
    assert _row(out, "step4_vs_step1")[-3:] == ["invariant", "-", "-"]
    assert _row(out, "speedup_vs_hap")[-4:] == ["0.89", "claim", "NO", "-"]
    assert _row(out, "rankings_differ")[-4:] == ["0.95", "claim", "NO", "-"]
    assert _row(out, "plain_models_faster")[-3:] == ["claim", "tie", "-"]  # a tie is shown as one
    assert "inference and training rankings differ" in out


def test_summary_filters_by_study_and_verdict(results: Path) -> None:
    result = traincost("summary", "--results", results, "--study", "mtrain", "--disagreeing")
    assert result.returncode == 0, result.stderr
    assert "MONET" not in result.stdout
    listed = result.stdout.split("\n", 1)[1]
    # disagreeing: a failed direction or a failed magnitude, of a claim
    assert "speedup_vs_hap" in listed and "table3 dfs_gflops" in listed and "plain_models_faster" in listed
    assert "dfs_s" not in listed and "step4_vs_step1" not in listed and "dfs_time_over" not in listed
    last = "1 of 3 claims agree in direction (1 tie among them), 1 of 2 in magnitude, over MTrain"
    assert result.stdout.strip().splitlines()[-1] == last


def test_report_table_colours_every_row(results: Path) -> None:
    out = results / "mtrain/agreement.html"
    result = traincost("report-table", "--study", "mtrain", "--in", results / "mtrain/compare.csv", "--out", out)
    assert result.returncode == 0, result.stderr
    page = out.read_text()
    assert "<b>1 of 3 claims agree in direction (1 tie among them, not agreeing), 1 of 2 in magnitude" in page
    # coloured by the whole verdict: a magnitude that fails is red, though no direction is tested; a tie is amber
    kinds = ("agree", "tie", "disagree", "unchecked")
    assert [page.count(f'<tr class="{kind}">') for kind in kinds] == [1, 1, 2, 2]
    assert "✘ magnitude" in page and "≈ tie" in page
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
    bad.write_text(MTRAIN.replace("(> 1),True,True", "(> 1),maybe,True"))
    assert_clean_failure(traincost("summary", "--results", results), str(bad), "row 4", "'agrees'", "maybe")


def test_a_bad_kind_names_the_row_and_the_kinds(results: Path) -> None:
    bad = results / "mtrain/compare.csv"
    bad.write_text(MTRAIN.replace("step4_vs_step1,invariant", "step4_vs_step1,obvious"))
    assert_clean_failure(traincost("summary", "--results", results), str(bad), "row 5", "'kind'", "claim, invariant", "obvious")


def test_ablations_then_summary_show_why_and_the_counts_before_calibration(results: Path) -> None:
    # an ablation run in which MTrain beats HAP, and an uncalibrated run in which the GFLOPS magnitude holds too
    flipped = MTRAIN.replace("0.89,MTrain at least as fast as HAP (>= 1),False", "1.1,MTrain at least as fast as HAP (>= 1),True")
    (results / "run.csv").write_text(flipped)
    before = results / "ablations/mtrain/calibrated/false/compare.csv"
    before.parent.mkdir(parents=True)
    before.write_text(MTRAIN.replace("306.7,values side by side,,False", "500,values side by side,,True"))
    outputs = [results / "mtrain/ablations.parquet", results / "mtrain/compare_why.csv", results / "mtrain/ablations.png"]
    args = ["--study", "mtrain", "--baseline", results / "mtrain/compare.csv", "--run", "dfs_ratio_rule", "positive"]
    args += [results / "run.csv", "--run", "calibrated", "false", before]
    result = traincost("ablations", *args, "--out", outputs[0], "--why", outputs[1], "--heatmap", outputs[2])
    assert result.returncode == 0, result.stderr
    assert "2 ablation runs, 4 judged checks, 2 flips" in result.stdout
    counts, page = results / "counts.csv", results / "fidelity.md"
    args = ["--study", "mtrain", "--disagreeing", "--counts-out", counts, "--markdown", page]
    result = traincost("summary", "--results", results, *args)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert f"MTrain ({results / 'mtrain/compare_why.csv'})" in out
    # the why names the change, and says when it is a rule of the check rather than of the model
    assert " ".join(_row(out, "speedup_vs_hap")[-10:]) == "dfs_ratio_rule=positive (a rule of the check, not of the model)"
    assert _row(out, "table3 dfs_gflops")[-1] == "calibrated=false"
    tie = "(1 tie among them, not agreeing)"
    assert f"before calibration ({before}): 1 of 3 claims agree in direction {tie}, 2 of 2 in magnitude" in out
    table = counts.read_text().splitlines()
    head = "study,calibration,table,agree,checked,ties,magnitude_agree,magnitude_checked,rows,"
    assert table[0] == head + "invariant,timing,calibrated,extension,superseded,informational,unchecked"
    assert [line.split(",")[:2] + line.split(",")[3:6] for line in table[1:]] == [
        ["mtrain", "after", "1", "3", "1"],
        ["mtrain", "before", "1", "3", "1"],
    ]
    # the page: both counts, and each disagreeing check with the change that flips it
    text = page.read_text()
    assert "| after | 1 of 3 | 1 | 1 of 2 | 1 invariant, 1 timing |" in text
    assert "| before | 1 of 3 | 1 | 2 of 2 | 1 invariant, 1 timing |" in text
    assert "| plain_models_faster |  | 1 | **tie** | – |" in text
    why = "dfs_ratio_rule=positive (a rule of the check, not of the model)"
    assert f"| speedup_vs_hap |  | 0.89 | **differs** | – | {why} |" in text
    assert "| table3 dfs_gflops | 527 | 306.7 | – | **differs** | calibrated=false |" in text


def test_ablations_refuses_an_unknown_assumption_in_one_line(results: Path) -> None:
    out = results / "mtrain/ablations.parquet"
    result = traincost(
        "ablations",
        "--study",
        "mtrain",
        "--baseline",
        results / "mtrain/compare.csv",
        "--run",
        "ip_speed",
        "2",
        results / "mtrain/compare.csv",
        "--out",
        out,
        "--why",
        results / "w.csv",
        "--heatmap",
        results / "h.png",
    )
    known = "calibrated, dfs_ratio_rule, fp32_mac_dsp, fabric_clock_mhz, vgg16_input, darkfpga_sized_for, darkfpga_batch_lanes, "
    known += "ip_dram_efficiency"
    assert_clean_failure(result, f"unknown mtrain assumption 'ip_speed' (known: {known})")
    assert not out.exists()
