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


@pytest.fixture
def ip_constants(monkeypatch: pytest.MonkeyPatch) -> None:
    """Restore the IP constants a test changes."""
    monkeypatch.setattr(ip_models, "FP32_MAC_DSP", ip_models.FP32_MAC_DSP)
    monkeypatch.setattr(ip_models, "DRAM_EFFICIENCY", ip_models.DRAM_EFFICIENCY)


def test_the_ip_constants_switch_resizes_the_array_and_slows_the_dram(ip_constants) -> None:
    board = load_fpga_catalog(DEVICES).devices["ZCU102"]
    base = ip_models.size_ip("DarkFPGA", board)
    # DarkFPGA: 8 batch lanes x Tm, Tm = 0.8 x DSPs // 5 // 8 by hand
    assert (base.tn, base.tm) == (8, int(0.8 * board.dsp // 5) // 8)
    ip_models.set_ip_constants(fp32_mac_dsp=3, dram_efficiency=0.5)
    fewer_dsp = ip_models.size_ip("DarkFPGA", board)
    assert fewer_dsp.tm == int(0.8 * board.dsp // 3) // 8 and fewer_dsp.dram_efficiency == 0.5
    # one op with no compute and 1 GB to move: DRAM time only, doubled at half the bandwidth
    costs = ip_models.OpCosts(
        macs=np.zeros(1),
        elementwise=np.zeros(1),
        n=np.ones(1),
        r=np.ones(1),
        sample_bytes=np.zeros(1),
        fixed_bytes=np.full(1, 1e9),
    )
    assert costs.seconds(base, 1) == pytest.approx(1 / board.dram_bandwidth_gb_per_s)
    assert costs.seconds(fewer_dsp, 1) == pytest.approx(2 / board.dram_bandwidth_gb_per_s)
    with pytest.raises(ConfigError, match=r"ip_dram_efficiency: 1.5, expected a share in \(0, 1\]"):
        ip_models.set_ip_constants(fp32_mac_dsp=5, dram_efficiency=1.5)
