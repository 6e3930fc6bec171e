"""The TM-Training calibration: the accelerator energy scale that gives HBM-only the paper's off-chip share."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from traincost.errors import ConfigError
from traincost.tiered.calibration import (
    CALIBRATION_COLUMNS,
    calibrated_claims,
    calibration_table,
    fit_accelerator_energy_scale,
    offchip_share,
    read_accelerator_energy_scale,
)
from traincost.tiered.study import study_variant
from traincost.tiered.system import load_tiered_system
from traincost.workload import Workload, write_table

HARDWARE = "config/hardware/tpuv4_tiered.yaml"


def test_accelerator_energy_scale_solved_by_hand() -> None:
    # shares 1 / (1 + 3k) and 1 / (1 + k): mean 0.375 at k = 1, 0.625 at k = 1/3
    parts = pd.DataFrame({"offchip_j": [1.0, 1.0], "dynamic_j": [3.0, 1.0], "accelerator_static_j": [0.0, 0.0]})
    assert offchip_share(parts, [1.0, 1 / 3]) == pytest.approx([0.375, 0.625])
    assert fit_accelerator_energy_scale(parts, 0.375) == pytest.approx(1.0, rel=1e-9)
    assert fit_accelerator_energy_scale(parts, 0.625) == pytest.approx(1 / 3, rel=1e-9)
    with pytest.raises(ConfigError, match="out of reach"):  # static energy alone keeps the share below 0.5
        fit_accelerator_energy_scale(parts.assign(accelerator_static_j=1.0), 0.6)


def test_the_calibration_table_fits_the_papers_share_and_reads_back(tiny_transformer: Workload, tmp_path: Path) -> None:
    paper = tmp_path / "paper.csv"
    paper.write_text("claim,value,source\nshare,0.3,Section 2.1\nratio,2.62,Section 2.1\n")
    system = load_tiered_system(HARDWARE)
    table = calibration_table([("tiny", tiny_transformer)], system, paper, target="share", also_pins=["ratio"])
    assert list(table.columns) == list(CALIBRATION_COLUMNS) and len(table) == 1
    row = table.iloc[0]
    assert row["achieved"] == pytest.approx(0.3, rel=1e-6) and row["target"] == 0.3 and row["over"] == "tiny"
    unfitted = calibration_table([("tiny", tiny_transformer)], system, paper, target="share", fit=False).iloc[0]
    assert unfitted["value"] == 1.0 and unfitted["achieved"] == unfitted["uncalibrated"] == row["uncalibrated"]
    write_table(table, tmp_path / "calibration.parquet")
    assert read_accelerator_energy_scale(tmp_path / "calibration.parquet") == row["value"]
    assert calibrated_claims(tmp_path / "calibration.parquet") == {"share", "ratio"}
    assert read_accelerator_energy_scale(None) == 1.0 and calibrated_claims(None) == set()
    with pytest.raises(ConfigError, match=r"paper.csv: no claim 'other' to calibrate to"):
        calibration_table([("tiny", tiny_transformer)], system, paper, target="other")
    with pytest.raises(ConfigError, match=r"paper.csv: also_pins \['other'\]: no such claims"):
        calibration_table([("tiny", tiny_transformer)], system, paper, target="share", also_pins=["other"])


def test_a_variant_needs_a_workload_at_its_batch(tiny_transformer: Workload) -> None:
    assert study_variant("base", tiny_transformer).name == "base"
    with pytest.raises(ConfigError, match="a workload at batch factor 1, but variant double_batch needs 2"):
        study_variant("double_batch", tiny_transformer)
    with pytest.raises(ConfigError, match="variant 'triple': expected one of base, double_batch"):
        study_variant("triple", tiny_transformer)
