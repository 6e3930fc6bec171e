"""MTrain's training IPs: their sourced constants, EF-Train's own model, the design search and the clock calibration."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.unit.test_mtrain import DEVICES, IPS, SPECS, plain_costs, two_layer_dag
from traincost.analysis.mtrain_compare import calibration_rows
from traincost.errors import ConfigError
from traincost.fpga.calibration import apply_calibration, calibration_table, fit_clock, published_gflops
from traincost.fpga.converting import select_accelerators
from traincost.fpga.devices import load_fpga_catalog
from traincost.fpga.ip_models import TrainingIp, design_space, ef_train_cycles, size_ip
from traincost.fpga.ip_specs import load_ip_specs
from traincost.fpga.training_dag import training_dag

PAPER_IPS = Path(__file__).resolve().parents[2] / "data/paper/mtrain_ips.csv"
ZCU102 = load_fpga_catalog(DEVICES).devices["ZCU102"]
EF_TRAIN = SPECS["EF-Train"]

# EF-Train's finetune2.py: VGG-16's 13 convolutions at 224 x 224 (M, N, C, R, K, S, state), FP, then BP (no BP of
# the first layer), then WU
_VGG = [(64, 3, 224), (64, 64, 224), (128, 64, 112), (128, 128, 112), (256, 128, 56), (256, 256, 56), (256, 256, 56)]
_VGG += [(512, 256, 28), (512, 512, 28), (512, 512, 28), (512, 512, 14), (512, 512, 14), (512, 512, 14)]


def vgg16_rows() -> np.ndarray:
    """The script's 38 layer rows as our geometry (M, N, R, C, K, S, state, G)."""
    forward = [(m, n, s, s, 3, 1, 1, 1) for m, n, s in _VGG]
    backward = [(n, m, s, s, 3, 1, 2, 1) for m, n, s in reversed(_VGG[1:])]
    update = [(m, n, s, s, 3, 1, 3, 1) for m, n, s in reversed(_VGG)]
    return np.array(forward + backward + update, dtype=np.float64)


def test_ef_train_port_gives_the_cycles_its_own_model_prints() -> None:
    # finetune2.py run as published (Tm = Tn = 24) and with the HLS design's Tm = Tn = 16, B = 16, 100 MHz:
    # "all Convs for Vgg 16.43451824 s 89.476... GFLOPS" and "30.64164824 s 47.990... GFLOPS"
    rows = vgg16_rows()
    for lanes, seconds in ((24, 16.43451824), (16, 30.64164824)):
        cycles = ef_train_cycles(rows, np.array([[lanes]], float), np.array([[lanes]], float), 16, EF_TRAIN.model)
        assert cycles.shape == (1, 38)
        assert cycles.sum() / 100e6 == pytest.approx(seconds, rel=1e-12)


def test_a_grouped_convolution_runs_the_model_once_per_group() -> None:
    # EF-Train's model has no groups: a depthwise 3 x 3 conv over 32 channels is 32 one-channel convolutions
    one = np.array([[1, 1, 24, 24, 3, 1, 1, 1]], dtype=np.float64)
    depthwise = one.copy()
    depthwise[0, 7] = 32
    design = (np.array([[16.0]]), np.array([[16.0]]))
    single = ef_train_cycles(one, *design, 4, EF_TRAIN.model)
    assert ef_train_cycles(depthwise, *design, 4, EF_TRAIN.model) == pytest.approx(32 * single)
    costs = plain_costs(macs=np.full(1, 32 * 24 * 24 * 9.0), geometry=depthwise)
    assert costs.shard(0.5).geometry[0].tolist() == [1, 1, 24, 24, 3, 1, 1, 16]  # tensor parallelism splits the groups


def test_design_space_counts_dsps_and_bram_banks_by_hand() -> None:
    tm, tn = design_space(EF_TRAIN, ZCU102, 16)
    shapes = set(zip(tm.tolist(), tn.tolist(), strict=True))
    # BRAM36 blocks: 2 per weight bank pair (576 words, double-buffered), 6 per Tn, 4 per Tm, 60 fixed; ZCU102 has 912
    assert (16, 16) in shapes  # 512 + 96 + 64 + 60 = 732
    assert (21, 16) in shapes and (22, 16) not in shapes  # 756 // 36 = 21 weight rows fit beside 16 input banks
    assert (20, 20) not in shapes  # 800 + 120 + 80 + 60 = 1060 blocks
    assert max(t * n for t, n in shapes) <= 0.8 * ZCU102.dsp // 5  # 5 DSP slices per FP32 lane, 80 % of them
    dark_tm, dark_tn = design_space(SPECS["DarkFPGA"], ZCU102, 8)
    assert dark_tn.max() == 8  # batch lanes beyond the batch never fill
    capped = replace(SPECS["DarkFPGA"], model=replace(SPECS["DarkFPGA"].model, max_batch_lanes=4))  # the ablation
    assert design_space(SPECS["DarkFPGA"], ZCU102, 64)[1].max() == 64 and design_space(capped, ZCU102, 64)[1].max() == 4
    assert dark_tm[dark_tn == 8].item() == int(0.8 * ZCU102.dsp // 5) // 8  # DSP-bound, its tiles fit the BRAM bytes
    # the fp32_mac_dsp=3 ablation: more lanes where DSPs bind (DarkFPGA); EF-Train on ZCU102 is bound by its BRAM
    fewer = design_space(replace(SPECS["DarkFPGA"], mac_dsp=3), ZCU102, 8)
    assert fewer[0][fewer[1] == 8].item() == int(0.8 * ZCU102.dsp // 3) // 8
    more_tm, more_tn = design_space(replace(EF_TRAIN, mac_dsp=3), ZCU102, 16)
    assert (more_tm * more_tn).max() == (tm * tn).max() == 336


def test_the_search_keeps_the_fastest_design_of_the_whole_space(chain) -> None:
    dag = training_dag(chain("resnet18_cifar", 1, "sgd").workload)
    device = load_fpga_catalog(DEVICES).devices["XC7Z045"]
    for spec in SPECS.values():
        chosen = size_ip(spec, device, dag.costs, 16)
        tm, tn = design_space(spec, device, 16)
        every = [dag.costs.seconds(TrainingIp(spec, device, int(a), int(b)), 16) for a, b in zip(tm, tn, strict=True)]
        assert dag.costs.seconds(chosen, 16) == pytest.approx(min(every), rel=1e-12)
    with pytest.raises(ConfigError, match="too small for a EF-Train instance"):
        size_ip(EF_TRAIN, replace(device, dsp=4), dag.costs, 16)


def test_each_ip_runs_element_wise_work_as_its_code_or_our_reading_says() -> None:
    # one op of each: plain element-wise, ReLU, layout, optimizer update; 1e6 elements each, no DRAM traffic
    costs = plain_costs(
        macs=np.zeros(4),
        elementwise=np.full(4, 1e6),
        activation=np.array([False, True, False, False]),
        layout=np.array([False, False, True, False]),
        update=np.array([False, False, False, True]),
    )
    ef_train = TrainingIp(EF_TRAIN, ZCU102, 16, 16)
    # EF-Train: ReLU and the update ride on other passes, layouts move nothing; 4 words per cycle at 100 MHz
    assert costs.seconds(ef_train, 2) == pytest.approx(2 * 1e6 / 4 / 100e6)
    dark = TrainingIp(SPECS["DarkFPGA"], ZCU102, 10, 2)
    # DarkFPGA: every op but the layout on its 10 x 2 lanes at the device's 200 MHz, one round of 2 samples
    assert costs.seconds(dark, 2) == pytest.approx(3 * 1e6 / 10 / 200e6)
    # a DRAM-only op at half the bandwidth (the ip_dram_efficiency=0.5 ablation) takes twice as long
    moving = plain_costs(macs=np.zeros(1), fixed_bytes=np.full(1, 1e9))
    slow = TrainingIp(replace(SPECS["DarkFPGA"], dram_efficiency=0.5), ZCU102, 10, 2)
    assert moving.seconds(slow, 1) == pytest.approx(2 * moving.seconds(dark, 1)) == pytest.approx(2 / 19.2)


def conv_dag():
    """One 16 x 16 channel 3 x 3 convolution over 8 x 8 outputs (a compute-bound step)."""
    dag = two_layer_dag()
    geometry = np.array([[16, 16, 8, 8, 3, 1, 1, 1], [16, 16, 8, 8, 3, 1, 3, 1]], dtype=np.float64)
    costs = replace(dag.costs, macs=np.full(2, 16 * 16 * 64 * 9.0), geometry=geometry, conv=np.ones(2, dtype=bool))
    return replace(dag, costs=costs)


def test_the_clock_fit_reaches_the_target_and_scales_compute_by_hand() -> None:
    dag = conv_dag()
    at_100 = published_gflops(dag, EF_TRAIN, ZCU102, clock_mhz=100.0)
    assert published_gflops(dag, EF_TRAIN, ZCU102, clock_mhz=50.0) == pytest.approx(at_100 / 2)  # no DRAM: compute only
    clock, achieved = fit_clock(dag, EF_TRAIN, ZCU102, 0.25 * at_100)
    assert clock == pytest.approx(25.0, rel=1e-9) and achieved == pytest.approx(0.25 * at_100, rel=1e-9)
    with pytest.raises(ConfigError, match="out of reach"):
        fit_clock(replace(dag, costs=replace(dag.costs, fixed_bytes=np.full(2, 1e12))), EF_TRAIN, ZCU102, at_100)
    with pytest.raises(ConfigError, match="expected a finite number > 0"):
        fit_clock(dag, EF_TRAIN, ZCU102, float("nan"))


def test_the_clock_is_fitted_only_on_the_network_the_ip_published() -> None:
    targets = pd.read_csv(PAPER_IPS)
    catalog = load_fpga_catalog(DEVICES)
    with pytest.raises(ConfigError, match="the workload 'mine' is the model 'resnet18', not its published network 'vgg16'"):
        calibration_table(conv_dag(), SPECS, catalog, targets, label="mine", network="resnet18", calibrate=True)


def test_a_calibration_table_sets_only_fitted_clocks_and_refuses_nonsense() -> None:
    table = pd.DataFrame(
        {"constant": ["clock_mhz"] * 2, "ip": ["EF-Train", "DarkFPGA"], "value": [97.9, np.nan]}
        | {"status": ["fitted", "not fitted: no FP32 throughput"]}
    )
    specs = apply_calibration(table, SPECS)
    assert specs["EF-Train"].clock_mhz == 97.9 and specs["DarkFPGA"] == SPECS["DarkFPGA"]
    assert apply_calibration(None, SPECS) == SPECS
    with pytest.raises(ConfigError, match="clock_mhz of 'EF-Train' = -1.0"):
        apply_calibration(table.assign(value=[-1.0, np.nan]), SPECS)


def test_fitted_targets_are_calibrated_rows_never_counted() -> None:
    targets = pd.read_csv(PAPER_IPS)
    assert targets.loc[targets["ip"] == "EF-Train", "value"].item() == 46.99
    calibration = pd.DataFrame(
        [
            {"constant": "clock_mhz", "ip": "EF-Train", "board": "ZCU102", "design": "16x16", "target": 46.99}
            | {"achieved": 46.99, "workload": "vgg16", "status": "fitted", "source": "EF-Train abstract"},
            {"constant": "clock_mhz", "ip": "DarkFPGA", "board": "MAX5", "design": np.nan, "target": np.nan}
            | {"achieved": np.nan, "workload": "vgg16", "status": "not fitted", "source": "DarkFPGA"},
        ]
    )
    rows = pd.DataFrame(calibration_rows(calibration))
    assert list(rows["claim"]) == ["ip_own_board_gflops"]  # nothing of DarkFPGA was fitted: no row
    assert list(rows["kind"]) == ["calibrated"] and rows["paper"].item() == 46.99 and "16x16" in rows["check"].item()
    assert rows["agrees"].isna().all()
    assert calibration_rows(None) == []


def test_every_ip_constant_needs_its_source_and_a_sane_value(tmp_path: Path) -> None:
    bad = tmp_path / "ips.yaml"
    text = IPS.read_text()
    share = '    value: 0.8\n    source: "our choice: nothing'
    bad.write_text(text.replace(share, share.replace("0.8", "1.5")))
    with pytest.raises(ConfigError, match=r"EF-Train.dsp_share: 1.5, expected a share in \(0, 1\]"):
        load_ip_specs(bad)
    bad.write_text(text.replace('    source: "finetune2.py tstart=400"\n', ""))
    with pytest.raises(ConfigError, match=r"EF-Train.dma_start_cycles: expected \{value: ..., source: ...\}"):
        load_ip_specs(bad)
    bad.write_text(text + "Venkataramanaiah:\n  array: {value: channels, source: ICCAD 2020}\n")
    with pytest.raises(ConfigError, match="Venkataramanaiah: unknown IP"):
        load_ip_specs(bad)


def test_two_ip_configurations_in_one_process_each_give_their_own_designs(chain) -> None:
    """The IP constants are values passed in, not module state: an ablation's constants in between leave the
    baseline's result as it was."""
    dag = training_dag(chain("resnet18_cifar", 1, "sgd").workload)
    cluster = load_fpga_catalog(DEVICES).clusters["cluster2"]
    baseline = select_accelerators(dag, cluster, SPECS)
    three_dsp = select_accelerators(dag, cluster, {name: replace(spec, mac_dsp=3) for name, spec in SPECS.items()})
    assert [ip.tm * ip.tn for ip in three_dsp] != [ip.tm * ip.tn for ip in baseline]
    assert select_accelerators(dag, cluster, SPECS) == baseline
