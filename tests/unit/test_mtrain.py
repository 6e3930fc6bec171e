"""MTrain: devices, the sub-operation graph, a two-device example solved by hand, and the search on a real step."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from traincost.errors import ConfigError
from traincost.fpga.converting import dfs_optimum, initial_ratio, map_ratio, mtrain_converting, ratios, select_accelerators
from traincost.fpga.devices import Device, load_fpga_catalog
from traincost.fpga.ip_models import OpCosts, TrainingIp
from traincost.fpga.training_dag import TrainingDag, training_dag

DEVICES = Path(__file__).resolve().parents[2] / "config/hardware/fpga/devices.yaml"
SLOW = Device("slow", dsp=10, bram_36kb=10, uram_288kb=0, luts_k=1, dram_gb=1, dram_bandwidth_gb_per_s=1e6, clock_mhz=1)
FAST = replace(SLOW, name="fast", clock_mhz=2)


def two_layer_dag(*, state_bytes: float = 0.0) -> TrainingDag:
    """l1 -> l2, both split along the batch; 1e6 MACs per sample each, 1 MB per sample between them."""
    costs = OpCosts(
        macs=np.array([1e6, 1e6]),
        elementwise=np.zeros(2),
        n=np.ones(2),
        r=np.ones(2),
        sample_bytes=np.zeros(2),
        fixed_bytes=np.zeros(2),
    )
    return TrainingDag(
        layer=("l1", "l2"),
        phase=("FP", "FP"),
        splittable=np.array([True, True]),
        ops=(np.array([0]), np.array([1])),
        costs=costs,
        edges=((0, 1, 1e6, True),),
        state_bytes=np.array([state_bytes, state_bytes]),
        out_bytes=np.array([[1e6, 0.0], [0.0, 0.0]]),
        flops_per_sample=4e6,
        fixed_flops=0.0,
    )


def test_two_devices_two_layers_by_hand() -> None:
    # per sample and layer: 1 s on the 1 MHz 1x1 array, 0.5 s on the 2 MHz one; batch 3.
    # ratio (1, 2): branch 0 on slow (1 + 1 s), branch 1 on fast (2 x 0.5 + 2 x 0.5 s) -> 2 s, no transfer;
    # (0, 3) -> 3 s, (2, 1) -> 4 s, (3, 0) -> 6 s. Crossing devices costs 1 s per sample at 1 MB/s.
    accelerators = (TrainingIp("EF-Train", SLOW, 1, 1), TrainingIp("EF-Train", FAST, 1, 1))
    dag = two_layer_dag()
    best = map_ratio(dag, accelerators, (1, 2), bandwidth_gb_per_s=1e-3)
    assert best.schedule.latency_s == pytest.approx(2.0)
    assert list(best.assign) == [0, 1, 0, 1]  # l1 branch 0, l1 branch 1, l2 branch 0, l2 branch 1
    assert map_ratio(dag, accelerators, (0, 3), bandwidth_gb_per_s=1e-3).schedule.latency_s == pytest.approx(3.0)
    assert initial_ratio(accelerators, 3) == (2, 1)  # equal PEs: the remainder goes to the first
    dfs = dfs_optimum(dag, accelerators, 3, bandwidth_gb_per_s=1e-3)
    assert dfs.ratio == (1, 2) and dfs.throughput_gflops == pytest.approx(3 * 4e6 / 2.0 / 1e9)
    assert dfs.ratios_tried == 4
    # from (2, 1) the mapping already reaches 2 s by running branch 0 (two samples) on the fast device
    converted = mtrain_converting(dag, accelerators, 3, bandwidth_gb_per_s=1e-3)
    assert converted.ratio == (2, 1) and converted.throughput_gflops == pytest.approx(dfs.throughput_gflops)
    assert list(converted.mapping.assign) == [1, 0, 1, 0]


def test_a_cluster_too_small_for_the_model_names_the_device_and_shortfall() -> None:
    accelerators = (TrainingIp("EF-Train", SLOW, 1, 1), TrainingIp("EF-Train", FAST, 1, 1))
    with pytest.raises(ConfigError, match=r"DRAM cannot hold .* (slow|fast).* MiB short"):
        map_ratio(two_layer_dag(state_bytes=3 * 2**30), accelerators, (1, 2), bandwidth_gb_per_s=1.0)


def test_ratios_enumerate_every_split() -> None:
    assert len(ratios(64, 2, 2)) == 33  # Table III: cluster 1
    assert ratios(4, 2, 1) == [(0, 4), (1, 3), (2, 2), (3, 1), (4, 0)]
    assert all(sum(r) == 16 for r in ratios(16, 3, 3))


def test_catalog_and_its_errors(tmp_path: Path) -> None:
    catalog = load_fpga_catalog(DEVICES)
    assert [d.name for d in catalog.clusters["cluster2"].devices] == ["XCZU9EG", "XC7Z045", "XC7Z015"]
    assert catalog.clusters["cluster1"].batch == 64 and catalog.devices["VCU128"].dsp == 9024
    bad = tmp_path / "devices.yaml"
    bad.write_text(DEVICES.read_text().replace("dsp: 900", "dsp: -900").replace("[U50LV, U30]", "[U50LV, U31]"))
    with pytest.raises(
        ConfigError, match=r"devices.XC7Z045.dsp: -900 must be > 0.*clusters.cluster1.devices: unknown device 'U31'"
    ):
        load_fpga_catalog(bad)


def test_search_on_a_real_training_step(chain) -> None:
    dag = training_dag(chain("resnet18_cifar", 1, "sgd").workload)
    assert {"FP", "BP", "WU", "UPD"} == set(dag.phase)
    assert dag.flops_per_sample == pytest.approx(3 * 2 * 0.556e9, rel=0.05)  # ~3x the forward MACs of CIFAR ResNet-18
    cluster = load_fpga_catalog(DEVICES).clusters["cluster2"]
    accelerators = select_accelerators(dag, cluster)
    capacity = np.array([ip.device.dram_bytes for ip in accelerators])
    for bandwidth in (0.5,):
        converted = mtrain_converting(dag, accelerators, cluster.batch, bandwidth_gb_per_s=bandwidth, step=2)
        steps = [s.latency_s for s in converted.initial.steps.values()]
        assert steps == sorted(steps, reverse=True)  # each re-mapping step only shortens the step
        assert converted.mapping.schedule.latency_s <= steps[-1]
        for mapping in (converted.initial, converted.mapping):
            assert mapping.schedule.fits(capacity)  # DRAM within budget on every accelerator
    # DFS over every ratio is never worse than MTrain-Converting (a batch of 6 keeps it short: 28 ratios)
    small = replace(cluster, batch=6)
    converted = mtrain_converting(dag, accelerators, small.batch, bandwidth_gb_per_s=3.0)
    dfs = dfs_optimum(dag, accelerators, small.batch, bandwidth_gb_per_s=3.0)
    assert dfs.ratios_tried == 28 and dfs.throughput_gflops >= converted.throughput_gflops * (1 - 1e-9)
