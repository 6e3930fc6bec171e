"""MTrain calibration: an IP's DSP share fitted to its own published throughput, and put in place for a run."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.unit.test_mtrain import DEVICES, two_layer_dag
from traincost.analysis.mtrain_compare import calibration_rows
from traincost.errors import ConfigError
from traincost.fpga import ip_models
from traincost.fpga.calibration import apply_dsp_shares, fit_dsp_share, single_ip_gflops
from traincost.fpga.devices import load_fpga_catalog

PAPER_IPS = Path(__file__).resolve().parents[2] / "data/paper/mtrain_ips.csv"


@pytest.fixture
def wide_dag():
    """Two 4096 x 4096 GEMM-like layers: every lane of the array is used, so throughput follows the DSP share."""
    dag = two_layer_dag()
    return replace(dag, costs=replace(dag.costs, n=np.full(2, 4096.0), r=np.full(2, 4096.0)))


@pytest.fixture
def shares(monkeypatch: pytest.MonkeyPatch) -> dict[str, float]:
    saved = dict(ip_models.DSP_SHARE)
    monkeypatch.setattr(ip_models, "DSP_SHARE", saved)
    return saved


def test_fitted_share_is_the_smallest_that_reaches_the_target(wide_dag, shares) -> None:
    board = load_fpga_catalog(DEVICES).devices["ZCU102"]
    today = single_ip_gflops(wide_dag, "EF-Train", board, 8, dsp_share=shares["EF-Train"])
    target = 0.3 * today
    share, achieved = fit_dsp_share(wide_dag, "EF-Train", board, 8, target)
    assert achieved >= target
    assert achieved == pytest.approx(target, rel=0.02)  # whole lanes: within a lane of the target
    assert single_ip_gflops(wide_dag, "EF-Train", board, 8, dsp_share=share * 0.99) < target
    assert shares["EF-Train"] == 0.8  # the fit leaves the constant as it found it
    with pytest.raises(ConfigError, match="out of reach"):
        fit_dsp_share(wide_dag, "EF-Train", board, 8, 10 * today / 0.8)


def test_calibration_table_puts_its_shares_in_place_and_refuses_nonsense(shares) -> None:
    table = pd.DataFrame({"constant": ["dsp_share"], "ip": ["EF-Train"], "value": [0.25]})
    assert apply_dsp_shares(table) == {"EF-Train": 0.25}
    assert ip_models.DSP_SHARE == {"EF-Train": 0.25, "DarkFPGA": 0.8}
    assert apply_dsp_shares(None) == {}
    with pytest.raises(ConfigError, match="dsp_share of 'EF-Train' = 1.5"):
        apply_dsp_shares(table.assign(value=1.5))


def test_fitted_targets_are_calibrated_rows_never_counted() -> None:
    targets = pd.read_csv(PAPER_IPS)
    assert targets.loc[targets["ip"] == "EF-Train", "value"].item() == 46.99
    calibration = pd.DataFrame(
        [
            {"ip": "EF-Train", "board": "ZCU102", "target": 46.99, "achieved": 47.1, "workload": "resnet18"}
            | {"status": "fitted", "source": "EF-Train abstract"},
            {"ip": "DarkFPGA", "board": "MAX5", "target": np.nan, "achieved": np.nan, "workload": "resnet18"}
            | {"status": "no FP32 training throughput", "source": "DarkFPGA"},
        ]
    )
    rows = pd.DataFrame(calibration_rows(calibration))
    assert list(rows["claim"]) == ["ip_own_board_gflops"]  # DarkFPGA's constant was not fitted: no row
    assert list(rows["kind"]) == ["calibrated"] and rows["paper"].item() == 46.99 and rows["ours"].item() == 47.1
    assert rows["agrees"].isna().all()
    assert calibration_rows(None) == []
