"""The per-op analytical cost model: a conv and an element-wise op worked out by hand, and invariants."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.workloads import conv_relu_workload
from traincost.cost import mac_cost, op_table, simd_cost
from traincost.hardware import load_hardware

TINY = Path(__file__).resolve().parents[1] / "fixtures/hardware/tiny.yaml"


def test_hand_computed_conv_on_a_2x2_weight_stationary_array() -> None:
    # 1x1 conv, K=C=4, 4x4 outputs: M=16, N=4, R=4, 256 MACs, 1-byte words. PE array K:2 x C:2.
    hw = load_hardware(TINY)
    table = op_table(conv_relu_workload(relu=False))
    cost = mac_cost(hw.cores[0], table, np.array([0]), word_bytes=1)
    # compute: ceil(4/2) K-tiles x ceil(4/2) C-tiles x 16 output pixels = 64 cycles at 100 % use
    assert cost.compute_cycles[0, 0] == 64
    assert cost.utilization[0, 0] == 1.0
    # tiles: array (n=2, r=2); the 64 B register file holds all of W (16 <= 64): n=4, r=4; so does local
    # rf:    W read 16 into the array, W written 16 from local             -> 32 B x 1 pJ/B    = 32 pJ
    # local: reads W 16 + I 16x4x2=128 (im2col, once per K-tile) + partial sums back 64 + outputs out 64 = 272
    #        writes W 16 + I 64 + outputs from the array 64 x 2 C-tiles = 128        -> 208; 480 B x 2 pJ/B = 960 pJ
    assert cost.energy_level_pj["rf"][0, 0] == pytest.approx(32)
    assert cost.energy_level_pj["local"][0, 0] == pytest.approx(960)
    assert cost.energy_mac_pj[0, 0] == 256
    # outside the core: W 16, I 64 in; O 64 out, no partial sums (local holds all of R)
    assert cost.ext_in_bytes["W"][0, 0] == 16 and cost.ext_in_bytes["I"][0, 0] == 64 and cost.ext_in_bytes["O"][0, 0] == 0
    assert cost.ext_write_bytes[0, 0] == 64
    # latency: max(64 compute, rf 16 B / 4 B/cycle, local ~0.3) + fill (2 + 2 PEs deep + first tile 4 B / 4 B/cycle)
    assert cost.latency_cycles[0, 0] == pytest.approx(64 + 4 + 1)


def test_hand_computed_relu_on_the_vector_core() -> None:
    hw = load_hardware(TINY)
    table = op_table(conv_relu_workload())
    cost = simd_cost(hw.cores[1], table, np.array([1]), word_bytes=1)
    assert cost.compute_cycles[0, 0] == 16  # 64 ops on 4 lanes
    # 64 B in and 64 B out, each written once and read once in the vector memory: 256 B at 4 pJ/B
    assert cost.energy_level_pj["vector_memory"][0, 0] == pytest.approx(1024)
    assert cost.energy_mac_pj[0, 0] == pytest.approx(32)
    assert cost.latency_cycles[0, 0] == 16  # 128 B read (and written) at 8 B per cycle: 16 cycles too


def test_tensor_parallel_split_divides_the_output_channels() -> None:
    hw = load_hardware(TINY)
    table = op_table(conv_relu_workload(relu=False))
    whole = mac_cost(hw.cores[0], table, np.array([0]), word_bytes=1)
    half = mac_cost(hw.cores[0], table, np.array([0]), word_bytes=1, split=np.array([2.0]))
    assert half.compute_cycles[0, 0] == whole.compute_cycles[0, 0] / 2
    assert half.energy_mac_pj[0, 0] == whole.energy_mac_pj[0, 0] / 2
    assert half.ext_in_bytes["I"][0, 0] == whole.ext_in_bytes["I"][0, 0]  # every core needs every input
    assert half.ext_in_bytes["W"][0, 0] == whole.ext_in_bytes["W"][0, 0] / 2


def test_smaller_memory_never_reduces_traffic(chain) -> None:
    workload = chain("resnet18_cifar", 1).workload
    hw = load_hardware(
        Path(__file__).resolve().parents[2] / "config/hardware/edge_tpu.yaml", sweep={"local_memory_mb": [0.5, 1, 2, 4]}
    )
    table = op_table(workload)
    mac = np.flatnonzero(table.is_mac)
    cost = mac_cost(hw.cores[0], table, mac, word_bytes=hw.word_bytes)
    outside = sum(cost.ext_in_bytes.values()) + cost.ext_write_bytes
    assert (np.diff(outside, axis=0) <= 1e-6).all()
    assert (cost.latency_cycles >= cost.compute_cycles).all()
