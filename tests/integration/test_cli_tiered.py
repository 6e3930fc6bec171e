"""The tiered-memory study through the CLI: workload → study → report → figure, and clear errors."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml

from tests.integration.test_cli import assert_clean_failure, traincost

HARDWARE = Path("config/hardware/tpuv4_tiered.yaml")


@pytest.fixture(scope="module")
def bert(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("tiered")
    result = traincost(
        "tiered-workload", "--workload", "bert_large", "--ops", out / "ops.parquet", "--tensors", out / "tensors.parquet"
    )
    assert result.returncode == 0, result.stderr
    return out


@pytest.mark.slow  # the study, its report and a figure end to end (27 s)
def test_study_report_and_figure(bert: Path, tmp_path: Path) -> None:
    study, record = tmp_path / "study.parquet", tmp_path / "record.parquet"
    common = (
        "--ops", bert / "ops.parquet", "--tensors", bert / "tensors.parquet", "--hardware", HARDWARE,
        "--ratios", 25, "--policies", "sentinel", "autotm", "deeptm", "tm_training",
    )  # fmt: skip
    result = traincost("tiered-study", *common, "--out", study, "--record-out", record)
    assert result.returncode == 0, result.stderr
    # an ablation on the study's record: the table of running it again (which simulates everything)
    ablation = ("--assume", "deeptm_eviction_costs_time=true", "--policies", "deeptm")
    for name, reuse in (("again.parquet", ()), ("reused.parquet", ("--record", record))):
        result = traincost("tiered-study", *common, *ablation, *reuse, "--out", tmp_path / name)
        assert result.returncode == 0, result.stderr
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "reused.parquet"), pd.read_parquet(tmp_path / "again.parquet"))
    out = tmp_path / "other.parquet"
    result = traincost("tiered-study", *common, "--tier1-share-per-ratio", 0.001, *ablation, "--record", record, "--out", out)
    assert_clean_failure(result, str(record), "run at", left=out)
    table = pd.read_parquet(study)
    assert sorted(table["policy"]) == sorted(["hbm_only", "sentinel", "autotm", "deeptm", "tm_training", "ideal"])
    baseline = table[table["policy"] == "hbm_only"].iloc[0]
    assert baseline["energy_efficiency_vs_hbm"] == 1.0 and baseline["migrated_bytes"] == 0.0
    assert (table["energy_j"] > 0).all() and (table["iteration_s"] > 0).all()

    names = ("all.parquet", "compare.csv", "table3.csv", "ordering.csv", "placement.csv", "tier2_reads.csv")
    paths = {name: tmp_path / name for name in names}
    result = traincost(
        "tiered-report", "--study", study,
        "--paper", "data/paper/tm_training.csv", "--table3", "data/paper/tm_training_table3.csv",
        "--study-out", paths["all.parquet"], "--compare", paths["compare.csv"], "--data-size", paths["table3.csv"],
        "--ordering", paths["ordering.csv"], "--placement", paths["placement.csv"],
        "--tier2-reads", paths["tier2_reads.csv"],
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "claims agree in direction" in result.stdout and "in magnitude" in result.stdout
    compare = pd.read_csv(paths["compare.csv"])
    assert {"paper", "ours", "agrees", "kind", "magnitude"} <= set(compare.columns)
    table3 = pd.read_csv(paths["table3.csv"])
    assert list(table3["workload"]) == ["bert_large"] and table3["layout_matches_table3"].all()
    ordering = pd.read_csv(paths["ordering.csv"])
    assert list(ordering["workload"]) == ["bert_large"] and "agrees" in ordering.columns
    placement = pd.read_csv(paths["placement.csv"]).set_index("policy")
    assert placement.loc["sentinel", "tier2_direct_read_gb"] == 0.0  # Sentinel reads only from Tier 1
    tm = placement.loc["tm_training"]
    assert tm["split_ratio_count"] > 0 and 0.0 <= tm["split_ratio_min"] <= tm["split_ratio_median"] <= tm["split_ratio_max"] <= 1
    assert placement.loc["hbm_only", "split_ratio_count"] == 0 and pd.isna(placement.loc["hbm_only", "split_ratio_median"])
    reads = pd.read_csv(paths["tier2_reads.csv"]).set_index("policy")
    # free re-reads never cost energy: once per store is at least as efficient, HBM-only (no Tier 2) the same
    assert (reads["efficiency_vs_hbm_once_per_store"] >= reads["efficiency_vs_hbm_per_access"] * (1 - 1e-12)).all()
    assert reads.loc["hbm_only", "efficiency_vs_hbm_once_per_store"] == 1.0
    assert ((reads["tier2_reread_share"] >= 0) & (reads["tier2_reread_share"] < 1)).all()

    result = traincost(
        "plot-tiered", "--figure", "fig8", "--in", paths["all.parquet"], "--out", tmp_path / "f.png", tmp_path / "f.pdf"
    )
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "f.png").stat().st_size > 0 and (tmp_path / "f.pdf").stat().st_size > 0


def test_a_workload_larger_than_the_chip_fails_naming_it(bert: Path, tmp_path: Path) -> None:
    data = yaml.safe_load(HARDWARE.read_text())
    data["tiered_memory"]["capacity_per_chip_gib"] = 4
    small = tmp_path / "small.yaml"
    small.write_text(yaml.safe_dump(data))
    out = tmp_path / "study.parquet"
    result = traincost(
        "tiered-study", "--ops", bert / "ops.parquet", "--tensors", bert / "tensors.parquet", "--hardware", small,
        "--ratios", 25, "--out", out,
    )  # fmt: skip
    assert_clean_failure(result, "workload bert_large", "does not fit in 4 GiB", left=out)


@pytest.mark.slow  # end to end: PaLM 540B laid out both ways, and two bad layouts, four processes (10 s)
def test_a_user_lays_palm_out_as_tensor_parallel_chips_or_as_pipeline_stages(tmp_path: Path) -> None:
    # the preset: 12 pipeline stages, a middle one; the same 12 chips as tensor-parallel chips with sequence parallelism
    # (PaLM's own setup): every block on the chip, a twelfth of each
    paths = {name: (tmp_path / f"{name}_ops.parquet", tmp_path / f"{name}_tensors.parquet") for name in ("pp", "tp")}
    layouts = {"pp": [], "tp": ["--model-parallel", 12, "--pipeline-stages", 1, "--micro-batches", 1, "--sequence-parallel"]}
    for name, (ops, tensors) in paths.items():
        result = traincost("tiered-workload", "--workload", "palm_540b", *layouts[name], "--ops", ops, "--tensors", tensors)
        assert result.returncode == 0, result.stderr
    pipeline, tensor = (pd.read_parquet(paths[name][0]) for name in ("pp", "tp"))
    assert set(pipeline["layer"].str.extract(r"^blocks\.(\d+)\.")[0].dropna().astype(int)) == set(range(59, 68))
    assert set(tensor["layer"].str.extract(r"^blocks\.(\d+)\.")[0].dropna().astype(int)) == set(range(118))
    assert (pipeline["op_type"] == "Recv").sum() == 8 and not (tensor["op_type"] == "Recv").any()
    out = tmp_path / "bad.parquet"
    result = traincost(
        "tiered-workload", "--workload", "palm_540b", "--micro-batches", 3, "--ops", out, "--tensors", tmp_path / "t.parquet"
    )
    assert_clean_failure(result, "'micro_batches' (3) must divide the 4 sequences", left=out)
    result = traincost(
        "tiered-workload", "--workload", "palm_540b", "--pipeline-stage", 12, "--ops", out, "--tensors", tmp_path / "t.parquet"
    )
    assert_clean_failure(result, "'pipeline_stage' must be an int in [0, pipeline_stages) = [0, 12)", left=out)


def test_errors_name_what_is_wrong(bert: Path, tmp_path: Path) -> None:
    out = tmp_path / "x.parquet"
    result = traincost("tiered-workload", "--workload", "gpt5", "--ops", out, "--tensors", tmp_path / "t.parquet")
    assert_clean_failure(result, "gpt5", "palm_540b", left=out)
    common = ["--ops", bert / "ops.parquet", "--tensors", bert / "tensors.parquet", "--ratios", 25, "--out", out]
    result = traincost("tiered-study", "--hardware", "config/hardware/edge_tpu.yaml", *common)
    assert_clean_failure(result, "edge_tpu.yaml", "tiered_memory", left=out)
    result = traincost("tiered-study", "--hardware", HARDWARE, "--variant", "double_batch", *common)
    assert_clean_failure(result, "batch factor 1", "double_batch", left=out)
    result = traincost("tiered-study", "--hardware", HARDWARE, "--policies", "lfu", *common)
    assert_clean_failure(result, "lfu", left=out)
    result = traincost("tiered-study", "--hardware", HARDWARE, "--variant", "half", *common)
    assert_clean_failure(result, "--variant 'half'", left=out)


@pytest.mark.slow  # end to end: calibration twice, then the study and its report on BERT with and without it (15 s)
def test_calibrate_fits_the_offchip_share_and_the_study_and_report_use_it(bert: Path, tmp_path: Path) -> None:
    workload = ("--ops", bert / "ops.parquet", "--tensors", bert / "tensors.parquet", "--hardware", HARDWARE)
    target = ("--paper", "data/paper/tm_training.csv", "--target", "sec2_offchip_energy_share_hbm_only")
    pins = ("--also-pins", "sec2_accelerator_vs_offchip_energy_hbm_only")
    fitted, kept = tmp_path / "fitted.parquet", tmp_path / "kept.parquet"
    result = traincost("calibrate", *workload, *target, *pins, "--out", fitted)
    assert result.returncode == 0, result.stderr
    row = pd.read_parquet(fitted).iloc[0]
    assert row["fitted"] and row["target"] == 0.276 and row["achieved"] == pytest.approx(0.276, abs=1e-9)
    assert row["value"] != 1.0 and row["uncalibrated"] != pytest.approx(0.276, abs=1e-3)
    result = traincost("calibrate", *workload, *target, "--no-calibrate", "--out", kept)
    assert result.returncode == 0, result.stderr
    row_kept = pd.read_parquet(kept).iloc[0]
    assert not row_kept["fitted"] and row_kept["value"] == 1.0 and row_kept["achieved"] == row["uncalibrated"]

    # the study run at the fitted scale gives HBM-only the target share on this one workload
    paths = {name: tmp_path / name for name in ("all.parquet", "compare.csv", "table3.csv", "ordering.csv")}

    def study_and_report(study: Path, *calibration: object) -> tuple[float, pd.DataFrame, str]:
        """HBM-only's off-chip energy share in a study run with ``calibration``, and the report's compare table."""
        result = traincost("tiered-study", *workload, "--ratios", 25, "--policies", "ideal", *calibration, "--out", study)
        assert result.returncode == 0, result.stderr
        hbm = pd.read_parquet(study).query("policy == 'hbm_only'").iloc[0]
        offchip = hbm["energy_tier_sram_j"] + hbm["energy_migration_j"] + hbm["energy_static_j"]
        result = traincost(
            "tiered-report", "--study", study, *calibration,
            "--paper", "data/paper/tm_training.csv", "--table3", "data/paper/tm_training_table3.csv",
            "--study-out", paths["all.parquet"], "--compare", paths["compare.csv"], "--data-size", paths["table3.csv"],
            "--ordering", paths["ordering.csv"],
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        return offchip / hbm["energy_j"], pd.read_csv(paths["compare.csv"]).set_index("claim"), result.stdout

    share, compare, stdout = study_and_report(tmp_path / "study.parquet", "--calibration", fitted)
    assert share == pytest.approx(0.276, rel=1e-6)
    # PaLM's per-layer footprint chose its layout (pipeline stages): calibrated too, whatever the energy scale
    assert set(compare.index[compare["kind"] == "calibrated"]) == {
        "sec2_offchip_energy_share_hbm_only",
        "sec2_accelerator_vs_offchip_energy_hbm_only",
        "palm_layer_footprint",
    }
    assert "4 calibrated" in stdout  # shown, not counted

    # --assume calibrated=false (the ablation that gives the counts before calibration): the hardware file's
    # energies, and the two targets judged as claims
    share, compare, _ = study_and_report(tmp_path / "before.parquet", "--calibration", fitted, "--assume", "calibrated=false")
    assert share == pytest.approx(row["uncalibrated"], rel=1e-6)
    assert set(compare.index[compare["kind"] == "calibrated"]) == {"palm_layer_footprint"}
    assert compare.loc["sec2_offchip_energy_share_hbm_only", "kind"] == "claim"

    assert_clean_failure(traincost("calibrate", *workload, "--paper", "data/paper/tm_training.csv", "--target", "nope",
                                   "--out", tmp_path / "x.parquet"), "nope", left=tmp_path / "x.parquet")  # fmt: skip
