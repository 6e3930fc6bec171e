"""The per-op analytical cost model: a conv and an element-wise op worked out by hand, and invariants."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.hardware_files import tiny_variant
from tests.workloads import conv_relu_workload, conv_workload
from traincost.cost import mac_cost, op_table, simd_cost
from traincost.cost.core import MAPPINGS, OBJECTIVES, ExternalPath
from traincost.cost.optable import OWN_LOOPS, ROLES, window_span
from traincost.cost.step_windows import step_share
from traincost.errors import ConfigError
from traincost.hardware import load_hardware
from traincost.hardware.import_zigzag import hardware_yaml_text, zigzag_hardware
from traincost.workload import Workload

TINY = Path(__file__).resolve().parents[1] / "fixtures/hardware/tiny.yaml"


def test_hand_computed_conv_on_a_2x2_weight_stationary_array() -> None:
    # 1x1 conv, K=C=4, 4x4 outputs: M=16, N=4, R=4, 256 MACs, 1-byte words. PE array K:2 x C:2.
    hw = load_hardware(TINY)
    table = op_table(conv_relu_workload(relu=False))
    cost = mac_cost(hw.cores[0], table, np.array([0]))
    # compute: ceil(4/2) K-tiles x ceil(4/2) C-tiles x 16 output pixels = 64 cycles at 100 % use
    assert cost.compute_cycles[0, 0] == 64
    assert cost.utilization[0, 0] == 1.0
    # tiles: array (n=2, r=2); the 64 B register file holds all of W (16 <= 64): n=4, r=4; so does local
    # rf:    W read 16 into the array, W written 16 from local             -> 32 B x 1 pJ/B    = 32 pJ
    # local: reads W 16 + I 16x4x2=128 (im2col, once per K-tile) + partial sums back 64 = 208
    #        writes outputs from the array 64 x 2 C-tiles = 128                 -> 336 B x 2 pJ/B = 672 pJ
    # (W and I written in from outside and the outputs read out to it are the scheduler's to charge)
    assert cost.level_read_bytes["rf"][0, 0] == 16 and cost.level_write_bytes["rf"][0, 0] == 16
    assert cost.level_read_bytes["local"][0, 0] == 208 and cost.level_write_bytes["local"][0, 0] == 128
    assert cost.energy_level_pj["rf"][0, 0] == pytest.approx(32)
    assert cost.energy_level_pj["local"][0, 0] == pytest.approx(672)
    assert cost.energy_mac_pj[0, 0] == 256
    # outside the core: W 16, I 64 in; O 64 out, no partial sums (local holds all of R)
    assert cost.ext_in_bytes["W"][0, 0] == 16 and cost.ext_in_bytes["I"][0, 0] == 64 and cost.ext_in_bytes["O"][0, 0] == 0
    assert cost.ext_write_bytes[0, 0] == 64
    # latency: max(64 compute, rf 16 B / 4 B/cycle, local ~0.3) + fill (2 + 2 PEs deep + first tile 4 B / 4 B/cycle)
    assert cost.latency_cycles[0, 0] == pytest.approx(64 + 4 + 1)


def test_an_operand_with_energies_of_its_own_pays_them_for_its_own_bytes(tmp_path: Path) -> None:
    # the conv above, local's inputs read at 1 pJ/bit and its outputs written at 0.5 (its own bank, or ZigZag's
    # port of another width): of local's 208 B read, the inputs' 128 cost 8 pJ/B; of its 128 B written, all
    # outputs, 4 pJ/B; the weights' 16 and the partial sums' 64 read stay at 2 pJ/B
    data = yaml.safe_load(TINY.read_text())
    data["memories"]["local"]["operand_energy_pj_per_bit"] = {
        "I": {"read_energy_pj_per_bit": 1.0},
        "O": {"write_energy_pj_per_bit": 0.5},
    }
    path = tmp_path / "banked.yaml"
    path.write_text(yaml.safe_dump(data))
    table = op_table(conv_relu_workload(relu=False))
    cost = mac_cost(load_hardware(path).cores[0], table, np.array([0]))
    assert cost.level_read_bytes["local"][0, 0] == 208 and cost.level_write_bytes["local"][0, 0] == 128
    assert cost.energy_level_pj["local"][0, 0] == pytest.approx((16 + 64) * 2 + 128 * 8 + 128 * 4)
    assert cost.energy_level_pj["rf"][0, 0] == pytest.approx(32)
    # the same energies given per operand cost exactly what the memory's own do
    data["memories"]["local"]["operand_energy_pj_per_bit"] = {op: {"read_energy_pj_per_bit": 0.25} for op in "WIO"}
    path.write_text(yaml.safe_dump(data))
    same = mac_cost(load_hardware(path).cores[0], table, np.array([0]))
    plain = mac_cost(load_hardware(TINY).cores[0], table, np.array([0]))
    assert same.energy_level_pj["local"][0, 0] == plain.energy_level_pj["local"][0, 0] == pytest.approx(672)


def test_hand_computed_relu_on_the_vector_core() -> None:
    hw = load_hardware(TINY)
    table = op_table(conv_relu_workload())
    cost = simd_cost(hw.cores[1], table, np.array([1]))
    assert cost.compute_cycles[0, 0] == 16  # 64 ops on 4 lanes
    # 64 B in read towards the lanes, 64 B out written from them: 128 B at 4 pJ/B (writing the input in and
    # reading the output out are the scheduler's)
    assert cost.energy_level_pj["vector_memory"][0, 0] == pytest.approx(512)
    assert cost.energy_mac_pj[0, 0] == pytest.approx(32)
    assert cost.latency_cycles[0, 0] == 16  # 128 B read (and written) at 8 B per cycle: 16 cycles too


def test_tensor_parallel_split_divides_the_output_channels() -> None:
    hw = load_hardware(TINY)
    table = op_table(conv_relu_workload(relu=False))
    whole = mac_cost(hw.cores[0], table, np.array([0]))
    half = mac_cost(hw.cores[0], table, np.array([0]), split=np.array([2.0]))
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
    cost = mac_cost(hw.cores[0], table, mac)
    outside = sum(cost.ext_in_bytes.values()) + cost.ext_write_bytes
    assert (np.diff(outside, axis=0) <= 1e-6).all()
    assert (cost.latency_cycles >= cost.compute_cycles).all()


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.integers(1, 5), st.integers(1, 20), st.integers(1, 4), st.integers(1, 7))
def test_window_span_counts_the_distinct_input_positions(stride: int, outputs: int, dilation: int, taps: int) -> None:
    expected = len({stride * o + dilation * f for o in range(outputs) for f in range(taps)})
    assert window_span(stride, outputs, dilation, taps) == expected


@pytest.mark.parametrize(("kernel", "stride", "dilation", "rows_read"), [(1, 2, 1, 4), (1, 1, 1, 8), (3, 2, 1, 7), (2, 1, 3, 8)])
def test_a_strided_or_dilated_conv_reads_only_the_pixels_its_windows_touch(
    kernel: int, stride: int, dilation: int, rows_read: int
) -> None:
    # 8x8 input, 4 channels, no padding: a 1x1 stride-2 window reads rows 0,2,4,6 (4 of 8); a 3x3 stride-2 one
    # rows 0..6 (its 3 outputs end at row 6); a 2x2 dilation-3 one rows 0..7 (5 outputs x {0, 3})
    workload = conv_workload(batch=1, channels_in=4, channels_out=4, input_hw=8, kernel=kernel, stride=stride, dilation=dilation)
    table = op_table(workload)
    assert table.x_elems[0] == 4 * rows_read * rows_read
    cost = mac_cost(load_hardware(TINY).cores[0], table, np.array([0]))
    assert cost.ext_in_bytes["I"][0, 0] == 4 * rows_read * rows_read  # everything fits: the input comes in once


def _gemm_like_conv() -> tuple[object, object]:
    # 1x1 conv, 2x2 outputs, C = K = 32 on 1-byte words: X 128 B, W 1,024 B, Y 128 B. The weights do not fit the
    # 1 KiB local memory beside anything; the input does.
    hw = load_hardware(TINY)
    return hw, op_table(conv_workload(batch=1, channels_in=32, channels_out=32, input_hw=2))


def test_the_input_stays_resident_when_the_weights_do_not_fit() -> None:
    hw, table = _gemm_like_conv()
    core = hw.cores[0]
    native = mac_cost(core, table, np.array([0]))
    # weight-resident (the core's dataflow): beside the rows streaming past it (the array's 1 row: 32 inputs and 32
    # partial sums) a weight tile has 1,024 - 64 = 960 B, 30 of 32 columns (all of R = 32 each), so the input
    # streams past 2 weight tiles: W 1,024 + X 2 x 128 in, Y 128 out
    assert native.mapping[0, 0] == MAPPINGS.index("weight_resident")
    assert native.ext_in_bytes["W"][0, 0] == 1024 and native.ext_in_bytes["I"][0, 0] == 256
    for objective in OBJECTIVES:
        chosen = mac_cost(core, table, np.array([0]), external=ExternalPath.of(hw, core), objective=objective)
        # input-resident: all 4 rows of X (128 B) stay, the weights stream past once: W 1,024 + X 128 in, Y 128 out
        # (output-resident fetches 1,408 B or more: its block shares local with an input slice and a weight slice;
        # the latency is the compute's, 1,024 cycles, for all three, so every objective ranks them by energy)
        assert MAPPINGS[chosen.mapping[0, 0]] == "input_resident", objective
        assert chosen.ext_in_bytes["W"][0, 0] == 1024 and chosen.ext_in_bytes["I"][0, 0] == 128
        assert chosen.ext_write_bytes[0, 0] == 128 and chosen.ext_in_bytes["O"][0, 0] == 0
        # the choice is about the outer loop order: what moves inside the core is the same
        assert chosen.energy_level_pj["local"][0, 0] == native.energy_level_pj["local"][0, 0]


def _under_a_big_memory(data: dict) -> None:
    """tiny.yaml's core with a memory ``big`` (8 pJ a byte, ``big_bytes``) above its local memory, keeping all three
    operands."""
    data["parameters"]["big_bytes"] = {"default": 4096, "description": "the memory above local, bytes"}
    data["memories"]["big"] = {"size_bytes": "big_bytes", **_WIDE, "read_energy_pj_per_bit": 1, "write_energy_pj_per_bit": 1}
    data["cores"][0]["memory"].append({"level": "big", "operands": ["W", "I", "O"]})


def _one_memory_per_operand(data: dict, levels: list[tuple[str, str, int]]) -> None:
    """tiny.yaml's PE core with one cheap memory (0.1 pJ a byte) per operand, ``levels`` (name, operand, bytes)
    innermost first, as ZigZag's generic_array_cacti; below big where ``_under_a_big_memory`` added it."""
    for name in ("rf", "local"):
        del data["memories"][name]
    for name, _, size_bytes in levels:
        data["memories"][name] = {
            "size_bytes": size_bytes,
            **_WIDE,
            "read_energy_pj_per_bit": 0.0125,
            "write_energy_pj_per_bit": 0.0125,
        }
    top = [{"level": "big", "operands": ["W", "I", "O"]}] if "big" in data["memories"] else []
    data["cores"][0]["memory"] = [{"level": name, "operands": [operand]} for name, operand, _ in levels] + top


def test_below_a_top_memory_holding_the_whole_op_the_loop_order_is_chosen_one_level_down(tmp_path: Path) -> None:
    # The conv above (X 128 B, W 1,024 B, Y 128 B; the local memory's weight tile beside one streaming row: 30 of
    # 32 columns, all of R) under a 4 KiB memory that holds it all: every order above the core fetches each operand
    # once (W 1,024 + X 128 in, Y 128 out), so the choice moves to the boundary between local and big. A second
    # configuration has big at 1,100 B, less than W + X + Y (1,280 B): there the order below it is the dataflow's.
    _, table = _gemm_like_conv()
    data = yaml.safe_load(TINY.read_text())
    _under_a_big_memory(data)
    (tmp_path / "big.yaml").write_text(yaml.safe_dump(data))
    hw = load_hardware(tmp_path / "big.yaml", sweep={"big_bytes": [4096, 1100]})
    core = hw.cores[0]
    native = mac_cost(core, table, np.array([0]))
    # the dataflow's order: the input streams from big past the local memory's 2 weight tiles (X 2 x 128 + W 1,024)
    assert (native.level_read_bytes["big"][:, 0] == 1280).all() and (native.level_write_bytes["big"][:, 0] == 128).all()
    for objective in OBJECTIVES:
        cost = mac_cost(core, table, np.array([0]), external=ExternalPath.of(hw, core), objective=objective)
        # input-resident below big: all 4 rows of X (128 B) stay in local beside one 2-column weight slice of the
        # register's tile (64 B); the weights stream past once: big reads W 1,024 + X 128, writes Y 128; the local
        # memory is written X 128 instead of 256 (the compute, 1,024 cycles, sets every order's latency). Over 8
        # chunks of 4 of R, output-resident below big fetches as little: local keeps all 128 outputs beside a chunk's
        # 16 inputs and 128 weights, and inside, the 64 B register holds 4 of R x 16 columns that one row at a time
        # runs over, columns innermost (held columns): each weight is read from rf once per row (4,096 B, 1 pJ/B
        # more than once), each input from local once per 16 columns instead of 2 (2 x 128 B instead of 16 x 128,
        # 2 pJ/B): 28,416 pJ against 28,928
        assert MAPPINGS[cost.mapping[0, 0]] == "output_resident" and cost.mapping_below_top[0, 0], objective
        assert cost.reduction_chunk[0, 0] == 4 and cost.held_columns[0, 0] == 16
        assert cost.level_read_bytes["big"][0, 0] == 1152 and cost.level_write_bytes["big"][0, 0] == 128
        assert cost.level_write_bytes["local"][0, 0] == native.level_write_bytes["local"][0, 0] - 128
        assert cost.level_read_bytes["local"][0, 0] == native.level_read_bytes["local"][0, 0] - 14 * 128
        assert cost.level_read_bytes["rf"][0, 0] == 4 * 1024
        assert sum(cost.energy_level_pj.values())[0, 0] == pytest.approx(28416)
        assert cost.energy_level_pj["big"][0, 0] == pytest.approx(1280 * 8)
        assert cost.ext_in_bytes["W"][0, 0] == 1024 and cost.ext_in_bytes["I"][0, 0] == 128
        assert cost.ext_write_bytes[0, 0] == 128
        # at 1,100 B the order is chosen above the core, and below big it is the dataflow's
        assert not cost.mapping_below_top[1, 0], objective
        assert cost.level_read_bytes["big"][1, 0] == 1280, objective


def test_an_input_block_below_the_top_stays_over_a_chunk_of_the_reduction(tmp_path: Path) -> None:
    # 1x1 conv, C = 64, K = 32, 2x2 outputs: M = 4, N = 32, R = 64; X 256 B, W 2,048 B, Y 128 B; array tile m=1, n=2,
    # r=2. tiny's core with a 256 B local memory (and rf) at 1 pJ a byte under big (64 KiB, 8 pJ a byte), which
    # holds the whole op: the loop order is chosen below big.
    def core(data: dict) -> None:
        _under_a_big_memory(data)
        data["parameters"]["local_kb"]["default"] = 0.25
        data["parameters"]["big_bytes"]["default"] = 65536
        for name in ("rf", "local"):
            data["memories"][name].update(_ONE_PJ_PER_BYTE)

    hw = tiny_variant(tmp_path, core)
    table = op_table(conv_workload(batch=1, channels_in=64, channels_out=32, input_hw=2))
    cost = mac_cost(hw.cores[0], table, np.array([0]), external=ExternalPath.of(hw, hw.cores[0]), objective="energy")
    # Over all of R an input block keeps one row (64 B beside a 2-column weight slice of 128 B, and its partial sums)
    # and the weights come from big once per row: 4 x 2,048 B. Over 2 chunks of 32 it keeps all 4 rows (128 B beside
    # 64 B of weights): the weights and the input come once (2,048 + 256 B), the outputs go to big once per chunk
    # (2 x 128 B written, 128 read back): big 2,432 B read and 256 written, 21,504 pJ; the best output block below
    # big (every output, over all of R, has no room beside its slices) brings the input 5 times (3,328 B read).
    assert MAPPINGS[cost.mapping[0, 0]] == "input_resident" and cost.mapping_below_top[0, 0]
    assert cost.reduction_chunk[0, 0] == 32
    assert cost.level_read_bytes["big"][0, 0] == 2432 and cost.level_write_bytes["big"][0, 0] == 256
    assert cost.energy_level_pj["big"][0, 0] == pytest.approx(21504)
    # big holds the whole op: each operand crosses into the core once, the outputs leave once, final
    assert cost.ext_in_bytes["W"][0, 0] == 2048 and cost.ext_in_bytes["I"][0, 0] == 256
    assert cost.ext_in_bytes["O"][0, 0] == 0 and cost.ext_write_bytes[0, 0] == 128


def test_an_input_block_below_the_top_takes_no_more_rows_than_its_partial_sums_have_room_for(tmp_path: Path) -> None:
    # 1x1 conv, C = K = 32, 4x4 outputs: M = 16, N = 32, R = 32; X 512 B, W 1,024 B, Y 512 B; array tile m=1, n=2,
    # r=2. Cheap memories of one operand each below big (4 KiB, 8 pJ a byte): 1 KiB of inputs, 16 B of outputs, 64 B
    # of weights.
    def core(data: dict) -> None:
        _under_a_big_memory(data)
        _one_memory_per_operand(data, [("rf", "I", 1024), ("oram", "O", 16), ("local", "W", 64)])

    hw = tiny_variant(tmp_path, core)
    table = op_table(conv_workload(batch=1, channels_in=32, channels_out=32, input_hw=4))
    cost = mac_cost(hw.cores[0], table, np.array([0]), external=ExternalPath.of(hw, hw.cores[0]), objective="energy")
    # input-resident below big: the input memory would hold all 16 rows (512 B), but the block runs all of R over its
    # rows and the array's 2 columns, whose partial sums stay in the 16 B output memory: 8 rows. The weights come from
    # big once per block (2 x 1,024 B, written into the weight memory), the input once (512 B); the outputs leave
    # once, final (512 B).
    assert MAPPINGS[cost.mapping[0, 0]] == "input_resident" and cost.mapping_below_top[0, 0]
    assert cost.level_read_bytes["big"][0, 0] == 2560 and cost.level_write_bytes["big"][0, 0] == 512
    assert cost.level_write_bytes["local"][0, 0] == 2048


def test_inputs_latched_at_the_port_where_the_weights_have_no_memory_below_the_top(tmp_path: Path) -> None:
    # 1x1 conv, C = K = 8, 4x4 outputs: M = 16, N = 8, R = 8; X 128 B, W 64 B, Y 128 B. An OX:4 x K:2 array (m=4, n=2,
    # r=1) under an 8 B output register (0.1 pJ a byte, 4 B a cycle) and a local memory of all three operands, where
    # inputs and weights cost 2 pJ a byte and outputs 0.1 (ZigZag's gemm_l1: outputs on a 4x wider port).
    def core(data: dict) -> None:
        cheap = {"read_energy_pj_per_bit": 0.0125, "write_energy_pj_per_bit": 0.0125}
        data["memories"]["rf"].update(size_bytes=8, **cheap)
        data["memories"]["local"].update(size_bytes=4096, operand_energy_pj_per_bit={"O": cheap})
        data["cores"][0]["pe_array"] = [{"dim": "OX", "size": 4}, {"dim": "K", "size": 2}]
        data["cores"][0]["memory"] = [{"level": "rf", "operands": ["O"]}, {"level": "local", "operands": ["W", "I", "O"]}]

    hw = tiny_variant(tmp_path, core)
    core_, table = hw.cores[0], op_table(conv_workload(batch=1, channels_in=8, channels_out=8, input_hw=4))
    external = ExternalPath.of(hw, core_)
    energy = mac_cost(core_, table, np.array([0]), external=external, objective="energy")
    # Latched: each input read once (128 B), the weights every step of rows (4 x 64 B), the 8 outputs of a step
    # leave the array every reduction step, to the register and on to local (written 8 x 128 B, read back 7 x 128):
    # local reads 128 + 256 + 896 = 1,280 B, writes 1,024; energy 384 x 2 + 1,920 x 0.1 + the register's
    # 2 x 1,920 x 0.1 = 1,344 pJ. Keeping the partial sums in the register instead (band 2) reads each input once per
    # column tile (4 x 128 B) and the weights as often: 768 x 2 + 128 x 0.1 + 2 x 1,024 x 0.1 = 1,753.6 pJ.
    assert energy.inputs_latched[0, 0]
    assert energy.level_read_bytes["local"][0, 0] == 1280 and energy.level_write_bytes["local"][0, 0] == 1024
    assert sum(energy.energy_level_pj.values())[0, 0] == pytest.approx(1344)
    # the register passes 1,920 B each way at 4 B a cycle: 480 cycles against the compute's 128; latency keeps band 2
    latency = mac_cost(core_, table, np.array([0]), external=external, objective="latency")
    assert not latency.inputs_latched[0, 0] and latency.reduction_levels[0, 0] == 2
    assert sum(latency.energy_level_pj.values())[0, 0] == pytest.approx(1753.6)


def test_inputs_latched_over_every_column_a_weight_register_holds(tmp_path: Path) -> None:
    """tiny.yaml with its weight register in each PE: 1x1 conv, C = K = 32, 2x2 outputs (M = 4, N = 32, R = 32; 1-byte
    words), a K:2 x C:2 array (m=1, n=2, r=2: 1,024 steps) under a 64 B weight register in each of its 4 PEs (1 pJ a
    byte) and the 1 KiB local memory (2 pJ a byte).
    The register holds the weights of all 32 columns for one step of the array's R (32 x 2 = 64 B), so each input can
    stay at the port while every column passes (ZigZag's ``tpu_like`` under Stream's inter-core split, output channels
    innermost over a per-PE weight register)."""
    hw = tiny_variant(tmp_path, lambda data: data["memories"]["rf"].update(per_pe=True))
    core, table = hw.cores[0], op_table(conv_workload(batch=1, channels_in=32, channels_out=32, input_hw=2))
    cost = mac_cost(core, table, np.array([0]), external=ExternalPath.of(hw, core), objective="energy")
    # Latched: local reads W 1,024 (into the register, once) + X 128 (each input once) + partial sums back 4 x 32 x 15
    # = 1,920, writes 4 x 32 x 16 = 2,048; the register is written 1,024 and read every step, 1,024 x 4 = 4,096.
    # Energy: MACs 4,096 + local (3,072 + 2,048) x 2 + register (1,024 + 4,096) x 1 = 19,456 pJ. The dataflow's order
    # reads the inputs once per column tile (16 x 128 = 2,048) and each weight once from the register: 20,224 pJ.
    assert cost.inputs_latched[0, 0]
    assert cost.level_read_bytes["local"][0, 0] == 3072 and cost.level_write_bytes["local"][0, 0] == 2048
    assert cost.level_read_bytes["rf"][0, 0] == 4096 and cost.level_write_bytes["rf"][0, 0] == 1024
    assert (cost.energy_mac_pj + sum(cost.energy_level_pj.values()))[0, 0] == pytest.approx(19456)
    # the same register shared by the array (tiny.yaml's own) is not offered the order (``_latches_over_weights``)
    shared = mac_cost(load_hardware(TINY).cores[0], table, np.array([0]), external=ExternalPath.of(hw, core), objective="energy")
    assert not shared.inputs_latched[0, 0]
    # each PE works on 16 of the 32 columns for its one input channel of the step: a 15 B register cannot hold them
    small = tiny_variant(tmp_path, lambda data: data["memories"]["rf"].update(per_pe=True, size_bytes=15))
    cost = mac_cost(small.cores[0], table, np.array([0]), external=ExternalPath.of(small, small.cores[0]), objective="energy")
    assert not cost.inputs_latched[0, 0]


def test_an_output_stationary_core_latches_each_input_over_the_columns_its_output_registers_hold(tmp_path: Path) -> None:
    # 1x1 conv, C = K = 8, 4x4 outputs: M = 16, N = 8, R = 8; X 128 B. An OX:4 x K:2 output-stationary array (m=4, n=2,
    # r=1: 128 steps) with a 4 B output register per PE (two 16-bit partial sums), an input buffer that reads 2 B a
    # cycle, and a local memory of all three operands (ZigZag's tesla_npu_like_mixed: ``I: sram_1KB_I[K2]``,
    # ``O: rf_4B[K2 C64 FY3 FX3]``).
    def core(data: dict) -> None:
        data["memories"]["rf"] = {"size_bytes": 4, "per_pe": True, **_WIDE, **_ONE_PJ_PER_BYTE}
        data["memories"]["ibuf"] = {
            "size_bytes": 64,
            "read_bandwidth_bytes_per_cycle": 2,
            "write_bandwidth_bytes_per_cycle": 1000,
            **_ONE_PJ_PER_BYTE,
        }
        data["memories"]["local"].update(size_bytes=4096, **_WIDE)
        data["cores"][0].update(dataflow="output_stationary", pe_array=[{"dim": "OX", "size": 4}, {"dim": "K", "size": 2}])
        data["cores"][0]["memory"] = [
            {"level": "rf", "operands": ["O"]},
            {"level": "ibuf", "operands": ["I"]},
            {"level": "local", "operands": ["W", "I", "O"]},
        ]

    hw = tiny_variant(tmp_path, core)
    core_, table = hw.cores[0], op_table(conv_workload(batch=1, channels_in=8, channels_out=8, input_hw=4))
    for objective in ("latency", "energy"):
        cost = mac_cost(core_, table, np.array([0]), external=ExternalPath.of(hw, core_), objective=objective)
        # The registers hold a block of two column tiles; with those innermost each input stays at the buffer's port
        # while both pass: the buffer reads 128 steps x 4 inputs / 2 = 256 B (512 in the dataflow's order, R
        # innermost), 128 cycles at 2 B a cycle, the compute's, where 512 B took 256. 256 pJ less.
        assert cost.inputs_latched[0, 0], objective
        assert cost.level_read_bytes["ibuf"][0, 0] == 256
        assert cost.compute_cycles[0, 0] == 128 and cost.latency_cycles[0, 0] < 140
        assert cost.energy_level_pj["ibuf"][0, 0] == pytest.approx((256 + 256) * 1.0)
    # an output-stationary core whose outputs share its one memory with the inputs (FuseMax) has no such order
    fusemax = load_hardware(TINY.parents[3] / "config/hardware/fusemax.yaml")
    mac = next(core for core in fusemax.cores if core.dataflow == "output_stationary")
    assert not mac_cost(mac, table, np.array([0]), external=ExternalPath.of(fusemax, mac)).inputs_latched.any()


@pytest.mark.parametrize("per_pe", [True, False])
def test_an_output_stationary_pe_accumulates_in_its_own_register_every_step(tmp_path: Path, per_pe: bool) -> None:
    # 1x1 conv, C = K = 8, 4x4 outputs: M = 16, N = 8, R = 8 (128 outputs, 1,024 MACs) on an OX:4 x K:2
    # output-stationary array (r = 1: 8 steps of R per output), 16-bit partial sums, 8-bit outputs. With a register per
    # PE (ZigZag's tesla_npu_like_mixed ``rf_4B``) the PE accumulates there: each step writes a partial sum, each but
    # the first reads it back (ZigZag: ``O: rf_4B[K2 C64 FY3 FX3]``, two accesses a MAC): 128 x 8 writes, 128 x 7
    # reads, 2 B each but the last write of each output (1 B), and the finished output leaves once (1 B). The same
    # register shared by the PEs is not where a PE accumulates: the output is written into it once.
    def core(data: dict) -> None:
        data["precision_bits"] = {"partial_sums": 16}
        data["memories"]["rf"] = {"size_bytes": 512, **({"per_pe": True} if per_pe else {}), **_WIDE, **_ONE_PJ_PER_BYTE}
        data["memories"]["local"].update(size_bytes=4096, **_WIDE)
        data["cores"][0].update(dataflow="output_stationary", pe_array=[{"dim": "OX", "size": 4}, {"dim": "K", "size": 2}])
        data["cores"][0]["memory"] = [{"level": "rf", "operands": ["O"]}, {"level": "local", "operands": ["W", "I", "O"]}]

    hw = tiny_variant(tmp_path, core)
    core_, table = hw.cores[0], op_table(conv_workload(batch=1, channels_in=8, channels_out=8, input_hw=4))
    cost = mac_cost(core_, table, np.array([0]), external=ExternalPath.of(hw, core_))
    reads, writes = cost.level_read_bytes["rf"][0, 0], cost.level_write_bytes["rf"][0, 0]
    if per_pe:
        assert (reads, writes) == (128 * 7 * 2 + 128, 128 * 7 * 2 + 128)
    else:
        assert (reads, writes) == (128, 128)
    assert cost.compute_cycles[0, 0] == 128


def test_a_strided_data_gradient_takes_partial_sums_only_on_the_pixels_its_windows_reach(tmp_path: Path) -> None:
    # The data gradient of a 1x1 stride-2 conv, 2 -> 4 channels over 4 x 4 pixels (2 x 2 outputs): dX has 2 x 16 = 32
    # elements, the GEMM M = 4 positions x N = 2 channels x R = 4 output channels, 32 MACs. On tiny's K:2 x C:2 array
    # (R 2 a step: two R-tiles) the 8 summed outputs go into an output register as a partial sum, come back once and
    # leave final; the 24 pixels the stride skips are written once, as zero: 8 + 32 writes and 8 + 32 reads (the
    # register passes every pixel on to local), where 32 x 2 and 32 + 32 were counted, as if every pixel were summed.
    def core(data: dict) -> None:
        data["memories"]["orf"] = {"size_bytes": 64, **_WIDE, **_ONE_PJ_PER_BYTE}
        data["cores"][0]["memory"] = [
            {"level": "rf", "operands": ["W"]},
            {"level": "orf", "operands": ["O"]},
            {"level": "local", "operands": ["W", "I", "O"]},
        ]

    hw = tiny_variant(tmp_path, core)
    table = op_table(
        _as_gradient(conv_workload(batch=1, channels_in=2, channels_out=4, input_hw=4, kernel=1, stride=2), "conv_dgrad")
    )
    assert table.o_elems[0] == 32 and table.macs[0] == 32
    cost = mac_cost(hw.cores[0], table, np.array([0]))
    assert cost.level_write_bytes["orf"][0, 0] == 8 + 32
    assert cost.level_read_bytes["orf"][0, 0] == 8 + 32
    assert cost.ext_write_bytes[0, 0] == 32


def _as_gradient(workload: Workload, kind: str) -> Workload:
    """``conv_workload``'s convolution turned into its data gradient (dY and W in, dX out) or its weight gradient (X
    and dY in, dW out), the tensors keeping their ids: 0 x, 1 w, 2 y."""
    inputs, output = {"conv_dgrad": ([2, 1], 0), "conv_wgrad": ([0, 2], 1)}[kind]
    workload.ops.loc[0, "kind"] = kind
    workload.ops.at[0, "inputs"], workload.ops.at[0, "outputs"] = inputs, [output]
    workload.tensors["producer"] = [0 if t == output else -1 for t in range(3)]
    workload.tensors["consumers"] = [[] if t == output else [0] for t in range(3)]
    return workload


@pytest.mark.parametrize(
    ("kind", "conv", "axes", "expected"),
    [
        # The data gradient of a 1x1 conv 16 -> 2 channels over 4 x 4 pixels (512 MACs). On K:8 x C:2, as the forward
        # names its loops, K 2 fills a quarter of the K axis and C 16 takes 8 steps of the C axis: 8 x 16 = 128 cycles,
        # the forward conv's; as its ConvTranspose names them, its 16 output channels (the forward's C) take 2 steps of
        # the K axis and its reduction (the forward's K, 2) fills the C axis: 2 x 16 = 32. On K:2 x C:8 it is the other
        # way round: the forward's naming takes 32, the forward conv's too.
        ("conv_dgrad", (1, 16, 2), (8, 2), (True, 32, 128)),
        ("conv_dgrad", (1, 16, 2), (2, 8), (False, 32, 32)),
        # The weight gradient of a 1x1 conv 1 -> 2 channels over 4 x 4 pixels, batch 4 (128 MACs), on K:4 x C:2: the
        # forward's C (1) fills half the C axis, B x OY x OX = 64 cycles; as its Conv of Xᵀ and dYᵀ names them the C
        # axis takes the batch, 2 steps of it: 32. With batch 1 and 4 input channels on K:2 x C:4 the forward's C fills
        # the C axis (16 cycles), where the batch would fill a quarter of it (64).
        ("conv_wgrad", (4, 1, 2), (4, 2), (True, 32, 64)),
        ("conv_wgrad", (1, 4, 2), (2, 4), (False, 16, 16)),
    ],
)
def test_a_conv_gradient_unrolls_its_loops_as_its_primitive_names_them_where_that_costs_less(
    tmp_path: Path, kind: str, conv: tuple[int, int, int], axes: tuple[int, int], expected: tuple[bool, int, int]
) -> None:
    # expected: whether the gradient takes its own loops, its compute cycles, the forward conv's
    own, cycles, forward_cycles = expected

    def sized(data: dict) -> None:
        for axis, size in zip(data["cores"][0]["pe_array"], axes, strict=True):
            axis["size"] = size

    hw = tiny_variant(tmp_path, sized)
    core = hw.cores[0]
    batch, channels_in, channels_out = conv
    shape = {"batch": batch, "channels_in": channels_in, "channels_out": channels_out, "input_hw": 4}
    gradient = mac_cost(
        core,
        op_table(_as_gradient(conv_workload(**shape), kind)),
        np.array([0]),
        external=ExternalPath.of(hw, core),
        objective="latency",
    )
    assert gradient.own_loops[0, 0] == own
    assert gradient.compute_cycles[0, 0] == cycles
    # the forward conv of that shape unrolls its own loops, whatever they cost
    forward = mac_cost(
        core, op_table(conv_workload(**shape)), np.array([0]), external=ExternalPath.of(hw, core), objective="latency"
    )
    assert not forward.own_loops
    assert forward.compute_cycles[0, 0] == forward_cycles


def test_an_ops_cost_is_the_same_costed_with_other_kinds_or_alone(chain) -> None:
    # ResNet-18's training step on FuseMax's array (OY x K): under EDP every data gradient and some weight gradients
    # take their own loops, costed again apart and spliced in among the others' columns; each kind costs what it
    # costs alone
    table = op_table(chain("resnet18_cifar", 1).workload)
    hw = load_hardware(Path(__file__).resolve().parents[2] / "config/hardware/fusemax.yaml", sweep={"x_pes": [128, 256]})
    core, mac = hw.cores[0], np.flatnonzero(table.is_mac)
    together = mac_cost(core, table, mac, external=ExternalPath.of(hw, core), objective="edp")
    for kind in np.unique(table.kind[mac]):
        columns = np.flatnonzero(table.kind[mac] == kind)
        alone = mac_cost(core, table, mac[columns], external=ExternalPath.of(hw, core), objective="edp")
        np.testing.assert_array_equal(together.latency_cycles[:, columns], alone.latency_cycles)
        for memory, energy in alone.energy_level_pj.items():
            np.testing.assert_array_equal(together.energy_level_pj[memory][:, columns], energy)
        np.testing.assert_array_equal(
            together.own_loops[:, columns], np.broadcast_to(alone.own_loops, alone.latency_cycles.shape)
        )
    own = {kind: together.own_loops[:, table.kind[mac] == kind] for kind in ("conv", "conv_dgrad", "conv_wgrad")}
    assert not own["conv"].any() and own["conv_dgrad"].any() and own["conv_wgrad"].any() and not own["conv_wgrad"].all()


def test_a_conv_gradients_own_loops_keep_the_roles_the_forward_gives_them() -> None:
    # each array axis keeps its role (an axis over the forward's reduction unrolls the gradient's reduction), and the
    # renaming is a permutation of the loops
    for kind, loops in OWN_LOOPS.items():
        assert sorted(loops) == sorted(loops.values()), kind
        for dim, loop in loops.items():
            role = next(w for w, dims in enumerate(ROLES["conv"]) if dim in dims)
            assert loop in ROLES[kind][role], (kind, dim)


def test_a_double_buffered_memory_keeps_two_of_a_tile_but_one_of_a_whole_operand(tmp_path: Path) -> None:
    # The conv above with its local memory double-buffered. Beside one streaming row, now two of it (32 inputs and 32
    # partial sums, each less than its whole operand: 128 B), a weight tile would have 896 B, less than all 1,024 B
    # of W: two of it, 448 B each, 14 columns; the input streams past ceil(32 / 14) = 3 weight tiles (X 3 x 128 in).
    _, table = _gemm_like_conv()
    single = mac_cost(load_hardware(TINY).cores[0], table, np.array([0]))
    hw = tiny_variant(tmp_path, lambda data: data["memories"]["local"].update(double_buffered=True))
    core = hw.cores[0]
    native = mac_cost(core, table, np.array([0]))
    assert single.ext_in_bytes["I"][0, 0] == 256 and native.ext_in_bytes["I"][0, 0] == 384
    assert native.ext_in_bytes["W"][0, 0] == 1024
    for objective in OBJECTIVES:
        # input-resident: the whole input (4 rows, 128 B) is one buffer beside two 2-column weight slices (128 B)
        cost = mac_cost(core, table, np.array([0]), external=ExternalPath.of(hw, core), objective=objective)
        assert MAPPINGS[cost.mapping[0, 0]] == "input_resident", objective
        assert cost.ext_in_bytes["I"][0, 0] == 128 and cost.ext_in_bytes["W"][0, 0] == 1024


def test_a_band_keeps_the_arrays_block_where_a_wider_one_would_crowd_the_input_out(tmp_path: Path) -> None:
    # 1x1 conv, C = K = 32, 4x4 outputs: M = 16, N = 32, R = 32; X 512 B, W 1,024 B, Y 512 B; array tile m=1, n=2,
    # r=2. A 16 B output register, a 700 B double-buffered local memory (the weights do not fit, the input does) and
    # the 4 KiB memory above it that holds the whole op.
    def core(data: dict) -> None:
        _under_a_big_memory(data)
        data["memories"]["local"].update(size_bytes=700, double_buffered=True)
        data["memories"]["rf"]["size_bytes"] = 16
        data["cores"][0]["memory"] = [
            {"level": "rf", "operands": ["O"]},
            {"level": "local", "operands": ["W", "I", "O"]},
            {"level": "big", "operands": ["W", "I", "O"]},
        ]

    hw = tiny_variant(tmp_path, core)
    table = op_table(conv_workload(batch=1, channels_in=32, channels_out=32, input_hw=4))
    cost = mac_cost(hw.cores[0], table, np.array([0]), external=ExternalPath.of(hw, hw.cores[0]), objective="energy")
    # Band 2 (the reduction innermost over the array and rf). Grown to rf's 16 outputs, its block is 4 x 4: beside it
    # the input-resident block in local needs two weight slices of R x 4 (256 B), which leaves (700 - 256) / 32 = 13
    # rows, fewer than 16, so two of them: 6 rows, the weights 3 times from big (3,072 + 512 B). With the array's
    # block (1 x 2) the slices take 128 B and the whole input fits once: big reads W 1,024 + X 512 and is written the
    # 512 final outputs; local is written those three (2,048 B).
    assert cost.reduction_levels[0, 0] == 2 and not cost.band_grown[0, 0]
    assert MAPPINGS[cost.mapping[0, 0]] == "input_resident" and cost.mapping_below_top[0, 0]
    assert cost.level_read_bytes["big"][0, 0] == 1536 and cost.level_write_bytes["big"][0, 0] == 512
    assert cost.level_write_bytes["local"][0, 0] == 2048


def test_an_output_block_takes_the_room_the_input_slice_leaves_it(tmp_path: Path) -> None:
    # 1x1 conv, batch 3 of 4x4 outputs, C = 64, K = 16: M = 48, N = 16, R = 64; X 3,072 B, W 1,024 B, Y 768 B.
    # A 4 B weight register (its tile: 1 row x 2 columns x 2 of R) below a 1 KiB local memory of inputs and outputs.
    hw = _weight_register_below_local(tmp_path, rf_bytes=4, local_bytes=1024)
    core, table = hw.cores[0], op_table(conv_workload(batch=3, channels_in=64, channels_out=16, input_hw=4))
    cost = mac_cost(core, table, np.array([0]), external=ExternalPath.of(hw, core), objective="energy")
    # output-resident: beside the block, local keeps an input slice of M x 2 = 96 B, so the block has 928 B: 16
    # columns (square-ish, at most N) x 48 rows (58 fit): the whole output. Weights and inputs come in once:
    # W 1,024 + X 3,072, Y 768 out. (Half of local each, 512 B, would hold 32 rows: the weights twice.)
    assert MAPPINGS[cost.mapping[0, 0]] == "output_resident"
    assert cost.ext_in_bytes["W"][0, 0] == 1024 and cost.ext_in_bytes["I"][0, 0] == 3072
    assert cost.ext_in_bytes["O"][0, 0] == 0 and cost.ext_write_bytes[0, 0] == 768


@pytest.mark.parametrize("dataflow", ["weight_stationary", "output_stationary"])
@pytest.mark.parametrize(
    ("local_bytes", "shape", "brought_in"),
    [(128, ((32, 12), 8), (3072, 2048)), (40, ((32, 32), 4), (4096, 2048))],
)
def test_an_output_block_takes_the_shape_that_brings_the_fewest_bytes_in(
    tmp_path: Path, dataflow: str, local_bytes: int, shape: tuple[tuple[int, int], int], brought_in: tuple[int, int]
) -> None:
    # A 1x1 conv, 1-byte elements; the weights' only memory holds one array tile (rf, 4 B: n = 2, r = 2), local keeps
    # inputs and outputs. An output block of m rows x n columns in local keeps its m x n partial sums and the 2m inputs
    # of one reduction step: m (n + 2) <= local. The weights W come in once per block of rows, the inputs X once per
    # block of columns. Below, the square-ish block against the one chosen:
    # * 128 B, C = 32, K = 12, 8x8 outputs (M = 64, N = 12; W 384 B, X 2,048 B): square-ish 11 columns (sqrt 128),
    #   128 / 13 = 9 rows: W 8 times, X twice, 7,168 B. All 12 columns (one part): still 9 rows, X once, 5,120 B.
    # * 40 B, C = K = 32, 4x4 outputs (M = 16, N = 32; W 1,024 B, X 512 B): square-ish 6 columns, 40 / 8 = 5 rows:
    #   W 4 times, X 6 times, 7,168 B; the columns in 5 equal parts, 7 x 4: 6,656 B. The rows in as many parts as
    #   the square-ish block's, 4, and the columns that then fit, 8: W 4 times, X 4 times, 6,144 B (the optimum).
    # An output-stationary core whose weights have a 16 B memory above local (tesla_npu_like's order) keeps that
    # block in its own mapping, the weights crossing into their memory once per block of rows: it had kept the
    # square-ish one.
    hw = (
        _weight_register_below_local(tmp_path, rf_bytes=4, local_bytes=local_bytes)
        if dataflow == "weight_stationary"
        else _weights_above_local(tmp_path, local_bytes=local_bytes, weight_bytes=16)
    )
    (channels_in, channels_out), input_hw = shape
    conv = conv_workload(batch=1, channels_in=channels_in, channels_out=channels_out, input_hw=input_hw)
    core, table = hw.cores[0], op_table(conv)
    cost = mac_cost(core, table, np.array([0]), external=ExternalPath.of(hw, core), objective="energy")
    assert MAPPINGS[cost.mapping[0, 0]] == "output_resident"
    assert (cost.ext_in_bytes["W"][0, 0], cost.ext_in_bytes["I"][0, 0]) == brought_in
    assert cost.ext_write_bytes[0, 0] == input_hw**2 * channels_out  # the outputs leave once


def test_an_output_block_that_does_not_fit_loses_to_a_shape_that_does(tmp_path: Path) -> None:
    # tiny's core (a 128 B weight register below a 256 B local memory of all three operands, 1-byte elements) under
    # big (1 MiB, 8 pJ a byte), which holds the whole op. A 1x1 conv on one pixel, C = 128, K = 64: M = 1, N = 64,
    # R = 128; W 8,192 B, X 128 B. Over chunks of 16 of R, local keeps an output block beside one chunk's inputs of
    # its rows and weights of its columns (16 B a row and a column): m x n + 16 m + 16 n <= 256. The square-ish
    # block, 16 columns (the root of 256), leaves no room for a row (16 + 16 + 256 = 288 B); of the shapes that fit,
    # 1 row x 14 columns (254 B) brings the fewest in: W once, X once per block of columns, big reads 8,192 + 5 x 128
    # B. The engine had kept the square-ish block, the fewest bytes of all, which does not fit.
    def core(data: dict) -> None:
        _under_a_big_memory(data)
        data["parameters"]["big_bytes"]["default"] = 1 << 20
        data["memories"]["rf"]["size_bytes"] = 128
        data["memories"]["local"]["size_bytes"] = 256

    hw = tiny_variant(tmp_path, core)
    table = op_table(conv_workload(batch=1, channels_in=128, channels_out=64, input_hw=1))
    cost = mac_cost(hw.cores[0], table, np.array([0]), external=ExternalPath.of(hw, hw.cores[0]), objective="energy")
    assert MAPPINGS[cost.mapping[0, 0]] == "output_resident" and cost.mapping_below_top[0, 0]
    assert cost.reduction_chunk[0, 0] == 16
    assert cost.level_read_bytes["big"][0, 0] == 8192 + 5 * 128


@pytest.mark.parametrize(("weight_bytes", "weights_in", "mapping"), [(16, 192, "output_resident"), (64, 64, "weight_resident")])
def test_a_weight_block_is_kept_only_by_a_memory_that_holds_the_weights_below_it(
    tmp_path: Path, weight_bytes: int, weights_in: int, mapping: str
) -> None:
    # An output-stationary core: a 256 B local memory of inputs and outputs below a weight memory at the top, as
    # tesla_npu_like's. A 1x1 conv, C = K = 8, 8x8 outputs (M = 64, N = 8, R = 8; W 64 B, X 512 B, Y 512 B). Local's
    # output block keeps all 8 columns over all of R and the array's 2 inputs of each row: 256 / (8 + 2) = 25 rows.
    # A weight block above it would grow from that block's 8 x 8 weights: a 64 B weight memory holds them, once for
    # the op; a 16 B one cannot, and the weights come in once per block of rows, 3 x 64 B.
    hw = _weights_above_local(tmp_path, local_bytes=256, weight_bytes=weight_bytes)
    table = op_table(conv_workload(batch=1, channels_in=8, channels_out=8, input_hw=8))
    for objective in ("energy", "latency"):
        cost = mac_cost(hw.cores[0], table, np.array([0]), external=ExternalPath.of(hw, hw.cores[0]), objective=objective)
        assert MAPPINGS[cost.mapping[0, 0]] == mapping, objective
        assert cost.ext_in_bytes["W"][0, 0] == weights_in and cost.ext_in_bytes["I"][0, 0] == 512


def test_an_input_block_is_kept_only_by_a_memory_that_holds_the_rows_of_the_tile_below_it(tmp_path: Path) -> None:
    # A weight-stationary core with one cheap memory per operand (0.1 pJ a byte), as ZigZag's generic_array_cacti: an
    # 8 B output register, a 16 B weight memory above it, a 16 B input memory at the top. A 1x1 conv, C = K = 8, 4x4
    # outputs (M = 16, N = 8, R = 8; X 128 B, W 64 B, Y 128 B); array tile m = 1, n = 2, r = 2. The register's block
    # of 4 rows x 2 columns makes the weight memory's tile 4 rows x 2 columns x all of R: an input block above it
    # would keep those rows' 32 inputs in 16 B. Costed anyway, it fetched the inputs once and the weights once per 4
    # rows (128 + 256 B in). The input memory holds 2 rows: a block of them, from a 1-row tile, fetches the weights 8
    # times (128 + 512 B); the dataflow's order keeps each weight tile while every row streams past, the inputs once
    # per column tile (W 64 + X 4 x 128 B), the fewest.
    hw = tiny_variant(
        tmp_path, lambda data: _one_memory_per_operand(data, [("oreg", "O", 8), ("wmem", "W", 16), ("imem", "I", 16)])
    )
    table = op_table(conv_workload(batch=1, channels_in=8, channels_out=8, input_hw=4))
    for objective in OBJECTIVES:
        cost = mac_cost(hw.cores[0], table, np.array([0]), external=ExternalPath.of(hw, hw.cores[0]), objective=objective)
        assert MAPPINGS[cost.mapping[0, 0]] == "weight_resident", objective
        assert (cost.ext_in_bytes["W"][0, 0], cost.ext_in_bytes["I"][0, 0]) == (64, 512), objective


def test_an_output_block_below_the_top_is_kept_only_where_its_memory_holds_the_tile_below_it(tmp_path: Path) -> None:
    # 1x1 conv, C = K = 8, 4x4 outputs: M = 16, N = 8, R = 8; X 128 B, W 64 B, Y 128 B; array tile m = 1, n = 2,
    # r = 2. Cheap memories of one operand each (0.1 pJ a byte) below big (64 KiB, 8 pJ a byte), which holds the
    # whole op, as ZigZag's generic_array_cacti: 64 B of inputs, 64 B of weights (all of W) and a 32 B output memory
    # above them. A block of 16 rows x 2 columns held in the output memory (32 partial sums) makes the weight memory's
    # tile 16 rows x all 8 columns; an output block below big grown from it would keep 128 partial sums in 32 B.
    # Costed anyway, it read each weight once from its memory and fetched each operand once from big (2,739.2 pJ).
    # The output memory holds 4 rows of all columns: a block of them fetches the weights from big 4 times (big reads
    # 384 B). The dataflow's order with a block of 1 row x 8 columns held in the output memory, columns innermost,
    # reads each input once (128 B), the weights once per row (16 x 64 B), the 8 partial sums of a row 4 times each
    # way (512 B), and big reads each operand once (192 B) and takes the outputs once (128 B): 2,796.8 pJ.
    def core(data: dict) -> None:
        _under_a_big_memory(data)
        data["parameters"]["big_bytes"]["default"] = 65536
        _one_memory_per_operand(data, [("rf", "I", 64), ("local", "W", 64), ("oram", "O", 32)])

    hw = tiny_variant(tmp_path, core)
    table = op_table(conv_workload(batch=1, channels_in=8, channels_out=8, input_hw=4))
    for objective in OBJECTIVES:
        cost = mac_cost(hw.cores[0], table, np.array([0]), external=ExternalPath.of(hw, hw.cores[0]), objective=objective)
        assert MAPPINGS[cost.mapping[0, 0]] == "weight_resident" and not cost.mapping_below_top[0, 0], objective
        assert cost.held_columns[0, 0] == 8, objective
        read = {name: cost.level_read_bytes[name][0, 0] for name in ("rf", "local", "oram", "big")}
        assert read == {"rf": 128, "local": 1024, "oram": 512, "big": 192}, objective
        assert sum(cost.energy_level_pj.values())[0, 0] == pytest.approx(2796.8), objective


@pytest.mark.parametrize(("local_bytes", "weights_in"), [(256, 512), (136, 1024)])
def test_an_output_block_stays_above_the_core_over_chunks_of_the_reduction(
    tmp_path: Path, local_bytes: int, weights_in: int
) -> None:
    # A 1x1 conv, C = 64, K = 8, 4x4 outputs (M = 16, N = 8, R = 64; W 512 B, X 1,024 B, Y 128 B), 1-byte elements;
    # a 128 B weight register (rf) below a local memory of inputs and outputs; array tile n = 2, r = 2.
    # * Over all of R, rf's tile takes all of R for 2 columns (64 x 2 = 128 B), so an output block in local keeps its
    #   rows' 64 inputs of that R-step beside each row's 8 partial sums (256 B: 256 / 72 = 3 rows, the weights in 6
    #   times); an input block takes 256 / 64 = 4 rows of all of R (the weights in 4 times, 2,048 B).
    # * Over chunks of R, 256 B: the whole output (128 B) leaves 128 B, the inputs of all 16 rows over 8 of R: a chunk
    #   of 8. rf's tile takes 8 of R for all 8 columns (64 B); the output block, 256 / (8 + 8) = 16 rows, is the whole
    #   output: the weights and inputs come in once (512 B, 1,024 B), the outputs leave once.
    # * 136 B: the whole output leaves 8 B, no step of R for 16 rows; all columns of half the rows (64 B) leave 72 B,
    #   9 of R for 8 rows: a chunk of 8 (whole steps of the array's 2). The block: 136 / 16 = 8 rows, the weights in
    #   twice (1,024 B), the inputs once.
    hw = _weight_register_below_local(tmp_path, rf_bytes=128, local_bytes=local_bytes)
    core, table = hw.cores[0], op_table(conv_workload(batch=1, channels_in=64, channels_out=8, input_hw=4))
    cost = mac_cost(core, table, np.array([0]), external=ExternalPath.of(hw, core), objective="energy")
    assert MAPPINGS[cost.mapping[0, 0]] == "output_resident" and cost.reduction_chunk[0, 0] == 8
    assert (cost.ext_in_bytes["W"][0, 0], cost.ext_in_bytes["I"][0, 0]) == (weights_in, 1024)
    assert cost.ext_in_bytes["O"][0, 0] == 0 and cost.ext_write_bytes[0, 0] == 128


def test_an_unknown_mapping_objective_is_an_error() -> None:
    hw, table = _gemm_like_conv()
    with pytest.raises(ConfigError, match="mapping objective 'speed'"):
        mac_cost(hw.cores[0], table, np.array([0]), external=ExternalPath.of(hw, hw.cores[0]), objective="speed")


def test_the_mapping_choice_never_loses_to_the_dataflow_order(chain) -> None:
    table = op_table(chain("resnet18_cifar", 1).workload)
    hw = load_hardware(
        Path(__file__).resolve().parents[2] / "config/hardware/edge_tpu.yaml", sweep={"local_memory_mb": [0.25, 0.5, 2]}
    )
    core, mac = hw.cores[0], np.flatnonzero(table.is_mac)
    external = ExternalPath.of(hw, core)

    def scores(cost) -> dict[str, np.ndarray]:
        moved = sum(cost.ext_in_bytes.values()) + cost.ext_write_bytes
        cycles = np.maximum(cost.latency_cycles, moved / external.bandwidth_bytes_per_cycle[:, None])
        energy = cost.energy_mac_pj + sum(cost.energy_level_pj.values()) + moved * 8 * external.energy_pj_per_bit[:, None]
        return {"latency": cycles, "energy": energy, "edp": cycles * energy}

    native = scores(mac_cost(core, table, mac))
    picked_some = False
    for objective in OBJECTIVES:
        cost = mac_cost(core, table, mac, external=external, objective=objective)
        assert (scores(cost)[objective] <= native[objective] * (1 + 1e-9)).all()
        picked_some |= bool((cost.mapping != MAPPINGS.index("weight_resident")).any())
    assert picked_some  # at 256 KB the deep layers' weights no longer fit: another order wins somewhere


def _weights_above_local(tmp_path: Path, *, local_bytes: int, weight_bytes: int) -> object:
    """tiny.yaml's PE core output-stationary, a local memory of ``local_bytes`` keeping its inputs and outputs below a
    memory of ``weight_bytes`` keeping its weights (``tesla_npu_like``'s order)."""

    def core(data: dict) -> None:
        del data["memories"]["rf"]
        data["memories"]["local"]["size_bytes"] = local_bytes
        data["memories"]["wmem"] = {"size_bytes": weight_bytes, **_WIDE, **_ONE_PJ_PER_BYTE}
        data["cores"][0]["dataflow"] = "output_stationary"
        data["cores"][0]["memory"] = [{"level": "local", "operands": ["I", "O"]}, {"level": "wmem", "operands": ["W"]}]

    return tiny_variant(tmp_path, core)


def _weight_register_below_local(tmp_path: Path, *, rf_bytes: int, local_bytes: int) -> object:
    """tiny.yaml with a weight register of ``rf_bytes`` below a local memory of ``local_bytes`` that keeps the inputs
    and outputs only."""

    def resized(data: dict) -> None:
        data["memories"]["rf"]["size_bytes"] = rf_bytes
        data["memories"]["local"]["size_bytes"] = local_bytes
        data["cores"][0]["memory"][1]["operands"] = ["I", "O"]

    return tiny_variant(tmp_path, resized)


def test_partial_sums_move_in_their_own_precision(tmp_path: Path) -> None:
    # the hand-computed conv with 8-bit operands and 32-bit partial sums: the array's two C-tiles write 64
    # partial sums (4 B) and 64 outputs (1 B) into the local memory and read the 64 partial sums back
    hw = tiny_variant(tmp_path, lambda d: d.update(precision_bits={"partial_sums": 32}))
    cost = mac_cost(hw.cores[0], op_table(conv_relu_workload(relu=False)), np.array([0]))
    assert cost.level_read_bytes["local"][0, 0] == 16 + 128 + 64 * 4
    assert cost.level_write_bytes["local"][0, 0] == 64 * 4 + 64
    assert cost.ext_write_bytes[0, 0] == 64  # the finished outputs leave in 8 bits


def test_per_pe_memories_pool_their_capacity_and_bandwidth(tmp_path: Path) -> None:
    # four 16 B register files (one per PE) with 1 B/cycle ports tile and time like one 64 B file with a 4 B/cycle port
    table = op_table(conv_relu_workload(relu=False))
    pooled = mac_cost(load_hardware(TINY).cores[0], table, np.array([0]))

    def per_pe(data: dict) -> None:
        bandwidths = {"read_bandwidth_bytes_per_cycle": 1, "write_bandwidth_bytes_per_cycle": 1}
        data["memories"]["rf"].update(size_bytes=16, per_pe=True, **bandwidths)

    split = mac_cost(tiny_variant(tmp_path, per_pe).cores[0], table, np.array([0]))
    assert split.level_read_bytes["rf"][0, 0] == pooled.level_read_bytes["rf"][0, 0]
    assert split.ext_in_bytes["I"][0, 0] == pooled.ext_in_bytes["I"][0, 0]
    assert split.latency_cycles[0, 0] == pooled.latency_cycles[0, 0]


def test_memory_instances_of_idle_pes_hold_no_copies(tmp_path: Path) -> None:
    # the hand-computed conv with 8 instances of rf on the 4-PE core (an imported array that unrolls fewer PEs than it
    # has): the busy PEs' 4 instances each keep their own weights, the idle ones nothing; rf still reads each of the
    # 16 weights once (8 copies per 4 distinct weights would read them twice)
    hw = tiny_variant(tmp_path, lambda d: d["memories"]["rf"].update(instances=8))
    cost = mac_cost(hw.cores[0], op_table(conv_relu_workload(relu=False)), np.array([0]))
    assert cost.level_read_bytes["rf"][0, 0] == 16 and cost.level_write_bytes["rf"][0, 0] == 16


# ports wide enough that compute sets the pace, and 1 pJ per byte either way
_WIDE = {"read_bandwidth_bytes_per_cycle": 1000, "write_bandwidth_bytes_per_cycle": 1000}
_ONE_PJ_PER_BYTE = {"read_energy_pj_per_bit": 0.125, "write_energy_pj_per_bit": 0.125}


def _register_hierarchy(data: dict) -> None:
    """An Edge-TPU-like core: a 4 B weight register and a 2 B output register below a cheap 1 KiB weight SRAM
    and an expensive 1 KiB SRAM for inputs and outputs; every port wide enough that compute sets the pace."""
    cheap = {"read_energy_pj_per_bit": 0.0125, "write_energy_pj_per_bit": 0.0125}
    del data["memories"]["rf"]
    data["memories"] |= {
        "wreg": {"size_bytes": 4, **_WIDE, **cheap},
        "oreg": {"size_bytes": 2, **_WIDE, **cheap},
        "wsram": {"size_bytes": 1024, **_WIDE, **_ONE_PJ_PER_BYTE},
    }
    data["memories"]["local"].update(_WIDE)
    data["cores"][0]["memory"] = [
        {"level": "wreg", "operands": ["W"]},
        {"level": "oreg", "operands": ["O"]},
        {"level": "wsram", "operands": ["W"]},
        {"level": "local", "operands": ["I", "O"]},
    ]


def test_reduction_innermost_below_the_top_keeps_partial_sums_in_the_output_register(tmp_path: Path) -> None:
    # 1x1 conv, C = 32, K = 4, 2x2 outputs: M = 4, N = 4, R = 32; array tile m=1, n=2, r=2 (K:2 x C:2).
    hw = tiny_variant(tmp_path, _register_hierarchy)
    core, table = hw.cores[0], op_table(conv_workload(batch=1, channels_in=32, channels_out=4, input_hw=2))
    # The dataflow's order (band 0): the 4 B weight register holds the array's 2x2 weights, so each of the 16
    # R-tiles sends its 16 partial sums through the output register to local and reads 15 of them back:
    # local reads I 128 x 2 K-tiles = 256 + partial sums 16 x 15 = 240, writes 16 x 16 = 256.
    native = mac_cost(core, table, np.array([0]))
    assert native.reduction_levels[0, 0] == 0
    assert native.level_read_bytes["local"][0, 0] == 496 and native.level_write_bytes["local"][0, 0] == 256
    assert native.level_read_bytes["wsram"][0, 0] == 128
    # Band 3 (reduction innermost over the array, wreg and oreg): oreg keeps its 2 outputs until all of R is
    # done (local: I 256 read, the 16 outputs written once); the weights change every cycle, so each M-tile (4)
    # reads all 128 of them from wsram. Energy: regs (1,024 + 512 B) x 0.1 + wsram 512 x 1 + local 272 x 2 =
    # 1,209.6 pJ against the dataflow's (256 + 992) x 0.1 + 128 + 752 x 2 = 1,756.8 pJ.
    chosen = mac_cost(core, table, np.array([0]), external=ExternalPath.of(hw, core), objective="energy")
    assert chosen.reduction_levels[0, 0] == 3
    assert chosen.level_read_bytes["local"][0, 0] == 256 and chosen.level_write_bytes["local"][0, 0] == 16
    assert chosen.level_read_bytes["wsram"][0, 0] == 512
    assert sum(chosen.energy_level_pj.values())[0, 0] == pytest.approx(1209.6)
    assert sum(native.energy_level_pj.values())[0, 0] == pytest.approx(1756.8)


def _with_input_register(*, wsram_bytes: int, oreg_bytes: int = 2) -> Callable[[dict], None]:
    """The register hierarchy with an output register of ``oreg_bytes``, a 16 B input register (ireg, as cheap as the
    registers) above the registers and a weight SRAM of ``wsram_bytes`` above that."""

    def edit(data: dict) -> None:
        _register_hierarchy(data)
        data["memories"]["oreg"]["size_bytes"] = oreg_bytes
        data["memories"]["wsram"]["size_bytes"] = wsram_bytes
        data["memories"]["ireg"] = {**data["memories"]["oreg"], "size_bytes": 16}
        data["cores"][0]["memory"][2:2] = [{"level": "ireg", "operands": ["I"]}]

    return edit


def test_a_weight_tile_cut_in_the_reduction_lets_an_input_memory_below_it_serve_more_columns(tmp_path: Path) -> None:
    # The register hierarchy with a 16 B input register (ireg, 0.1 pJ/B) below a 32 B wsram; 1x1 conv, C = 16, K = 8,
    # 2x2 outputs: M = 4, N = 8, R = 16, array tile m=1, n=2, r=2. Band 3 keeps each output in oreg over wsram's
    # R-tile while the rows stream past wsram's weights (ZigZag's ascend_like: I: rf_64KB_I[... K2 ... K2]).
    hw = tiny_variant(tmp_path, _with_input_register(wsram_bytes=32))
    core, table = hw.cores[0], op_table(conv_workload(batch=1, channels_in=16, channels_out=8, input_hw=2))
    cost = mac_cost(core, table, np.array([0]), external=ExternalPath.of(hw, core), objective="energy")
    # wsram taking all of R first holds 16 x 2 weights: a row's 16 inputs enter ireg once per 2 columns, 4 times,
    # 256 B read from local (2 pJ/B), and the 32 outputs leave oreg once (local 288 B: 576 pJ). Cut to 8 of R x 4
    # columns, the inputs enter twice (128 B) and the outputs leave oreg twice (64 B written into local, 32 read
    # back: local 224 B, 448 pJ; ireg 128 B written, oreg 64 more read and 32 more written, x 0.1 pJ). Cut to 4 of R
    # x all 8 columns, the inputs enter once (64 B) but the partial sums leave four times (128 written, 96 read:
    # 288 B).
    assert cost.reduction_levels[0, 0] == 3 and cost.widened_columns[0, 0] == 4
    assert cost.level_read_bytes["local"][0, 0] == 128 + 32 and cost.level_write_bytes["local"][0, 0] == 64
    assert cost.energy_level_pj["local"][0, 0] == pytest.approx(448)
    # oreg: the array reads back 32 x 7 partial sums and writes 32 x 8 over the 8 R-steps of 2
    assert cost.level_write_bytes["ireg"][0, 0] == 128
    assert cost.level_read_bytes["oreg"][0, 0] == 224 + 64 and cost.level_write_bytes["oreg"][0, 0] == 256 + 32
    assert cost.level_read_bytes["wsram"][0, 0] == 4 * 128


@pytest.mark.parametrize(("wbuf_bytes", "widened", "inputs_in"), [(64, 4, 128), (32, 0, 256)])
def test_a_band_widens_its_weight_tile_only_to_what_the_weight_memories_above_hold(
    tmp_path: Path, wbuf_bytes: int, widened: int, inputs_in: int
) -> None:
    # The case above with a weight buffer (wbuf) between wsram and local, whose tile takes all 16 of R. Where it holds
    # 4 columns of them (64 B), wsram's tile is cut to 8 of R x 4 columns as above and the inputs enter ireg twice
    # (128 B); where it holds 2 (32 B), 4 columns would not fit above wsram: the band keeps wsram's tile over all of R
    # and 2 columns, and a row's inputs enter ireg once per 2 columns, 4 times (256 B read from local), the 32
    # outputs leaving oreg once.
    def with_wbuf(data: dict) -> None:
        _with_input_register(wsram_bytes=32)(data)
        data["memories"]["wbuf"] = {**data["memories"]["wsram"], "size_bytes": wbuf_bytes}
        data["cores"][0]["memory"].insert(4, {"level": "wbuf", "operands": ["W"]})

    hw = tiny_variant(tmp_path, with_wbuf)
    core, table = hw.cores[0], op_table(conv_workload(batch=1, channels_in=16, channels_out=8, input_hw=2))
    cost = mac_cost(core, table, np.array([0]), external=ExternalPath.of(hw, core), objective="energy")
    assert cost.reduction_levels[0, 0] == 3 and cost.widened_columns[0, 0] == widened
    assert cost.level_write_bytes["ireg"][0, 0] == inputs_in
    assert cost.level_write_bytes["local"][0, 0] == (64 if widened else 32)


def test_a_bands_output_block_of_one_row_takes_the_columns_its_room_holds(tmp_path: Path) -> None:
    # The register hierarchy with an 8 B output register, a 16 B input register and an 8 B wsram, on a classifier's one
    # row (1x1 conv on a 1x1 input, C = 16, K = 8: M = 1, N = 8, R = 16; array tile m=1, n=2, r=2). The band over
    # every level below local keeps the whole row of 8 outputs in oreg (a square-ish block, 2 x 2 of its 8 B, had
    # taken 2 columns of the one row), so the row's 16 inputs enter ireg once, not once per 2 columns: local reads 16
    # B (not 64) and takes the 8 outputs once. wreg (128 read, 128 written) x 0.1 + oreg (64 + 64) x 0.1 + ireg (64 +
    # 16) x 0.1 + wsram 128 x 1 + local (16 + 8) x 2 = 222.4 pJ (323.2 with 2 columns).
    hw = tiny_variant(tmp_path, _with_input_register(wsram_bytes=8, oreg_bytes=8))
    core, table = hw.cores[0], op_table(conv_workload(batch=1, channels_in=16, channels_out=8, input_hw=1))
    cost = mac_cost(core, table, np.array([0]), external=ExternalPath.of(hw, core), objective="energy")
    assert cost.reduction_levels[0, 0] == 5
    assert cost.level_write_bytes["ireg"][0, 0] == 16 and cost.level_read_bytes["local"][0, 0] == 16
    assert cost.level_write_bytes["local"][0, 0] == 8
    assert sum(cost.energy_level_pj.values())[0, 0] == pytest.approx(222.4)


def test_outputs_finished_in_the_band_leave_every_memory_above_it_once(tmp_path: Path) -> None:
    # The register hierarchy with an 8 B output memory (osram) and a second 1 KiB weight memory (wbig, 1 pJ/B) between
    # wsram and local; the conv of the test above (M = 4, N = 4, R = 32; array tile m=1, n=2, r=2).
    def deeper(data: dict) -> None:
        _register_hierarchy(data)
        data["memories"]["osram"] = {**data["memories"]["oreg"], "size_bytes": 8}
        data["memories"]["wbig"] = dict(data["memories"]["wsram"])
        data["cores"][0]["memory"][3:3] = [{"level": "osram", "operands": ["O"]}, {"level": "wbig", "operands": ["W"]}]

    hw = tiny_variant(tmp_path, deeper)
    core, table = hw.cores[0], op_table(conv_workload(batch=1, channels_in=32, channels_out=4, input_hw=2))
    cost = mac_cost(core, table, np.array([0]), external=ExternalPath.of(hw, core), objective="energy")
    # Band 3: oreg keeps each output until all of R is done, so osram, too small for 4 rows of partial sums, still
    # gets each of the 16 outputs once and passes it to local once; wsram, above the band, holds all 128 weights
    # (wbig reads them once). wreg 512 + 512 B, oreg 256 + 256 (x 0.1 pJ/B); wsram 512 + 128 (x 1); osram 16 + 16
    # (x 0.1); wbig 128 (x 1); local I 256 read, 16 written (x 2): 1,468.8 pJ. Charged the partial sums of every
    # array R-tile at osram, this order cost more than the dataflow's (2,112 pJ), which was chosen.
    assert cost.reduction_levels[0, 0] == 3
    assert cost.level_read_bytes["osram"][0, 0] == 16 and cost.level_write_bytes["osram"][0, 0] == 16
    assert cost.level_read_bytes["local"][0, 0] == 256 and cost.level_write_bytes["local"][0, 0] == 16
    assert cost.level_read_bytes["wbig"][0, 0] == 128
    assert sum(cost.energy_level_pj.values())[0, 0] == pytest.approx(1468.8)


@pytest.mark.parametrize(("min_bits", "rf_pj"), [(64, 32 + 16), (24, 24 + 18)])
def test_an_access_narrower_than_the_minimum_width_costs_a_full_access(tmp_path: Path, min_bits: int, rf_pj: float) -> None:
    # the hand-computed conv with rf's accesses at least min_bits wide. Into the array rf sends the 2x2 weight tile,
    # 32 bits per access, 16 B in all; from local it takes its 4x4 tile, 128 bits, 16 B. At 64 bits the first costs
    # 64 (x2: 32 B charged), the second 128 (x1); at 24 bits they cost 48 (x1.5: 24 B) and 144 (x1.125: 18 B).
    # 1 pJ per byte; the bytes moved stay 16 + 16.
    hw = tiny_variant(tmp_path, lambda d: d["memories"]["rf"].update(min_access_bits=min_bits))
    cost = mac_cost(hw.cores[0], op_table(conv_relu_workload(relu=False)), np.array([0]))
    assert cost.level_read_bytes["rf"][0, 0] == 16 and cost.level_write_bytes["rf"][0, 0] == 16
    assert cost.energy_level_pj["rf"][0, 0] == pytest.approx(rf_pj)
    assert cost.energy_level_pj["local"][0, 0] == pytest.approx(672)  # no minimum there: as without the key


@pytest.mark.parametrize(("local_bytes", "big_pj"), [(1024, 1856), (64, 2048), (40, 2673.78)])
def test_a_memory_holding_whole_groups_moves_them_together(tmp_path: Path, local_bytes: int, big_pj: float) -> None:
    # A depthwise 3x3 conv, 8 channels, 4x4 -> 2x2: per group W 9 B, 16 input pixels (36 im2col), 4 outputs. Below
    # big (1 pJ a bit, accesses at least 64 bits wide) the local memory keeps a whole group's op (29 B: 9 + 16 + 4):
    # big reads W 72 and X 128, writes Y 32. Local holds all 8 groups at 1 KiB, 2 at 64 B, 1 at 40 B; a transfer
    # carries that many groups' tiles. All 8: W 576 bits, X 2,304, Y 256, whole accesses, charged as moved: 232 B x 8
    # = 1,856 pJ. Two: W 144 bits in 3 accesses (x4/3: 768), X 576 (1,024), Y 64 (256): 2,048. One: W 72 bits in 2
    # (x16/9: 1,024), X 288 in 5 (x10/9: 1,137.8), Y 32 in 1 (x2: 512): 2,673.8.
    def core(data: dict) -> None:
        _under_a_big_memory(data)
        data["memories"]["local"]["size_bytes"] = local_bytes
        data["memories"]["big"]["min_access_bits"] = 64

    hw = tiny_variant(tmp_path, core)
    table = op_table(conv_workload(batch=1, channels_in=8, channels_out=8, input_hw=4, kernel=3, groups=8))
    assert table.groups[0] == 8 and (table.m[0], table.n[0], table.r[0]) == (4, 1, 9)
    cost = mac_cost(hw.cores[0], table, np.array([0]), external=ExternalPath.of(hw, hw.cores[0]), objective="energy")
    assert cost.level_read_bytes["big"][0, 0] == 200 and cost.level_write_bytes["big"][0, 0] == 32
    assert cost.energy_level_pj["big"][0, 0] == pytest.approx(big_pj, abs=0.01)


@pytest.mark.parametrize(
    ("channels_in", "served", "oreg_bytes", "oreg_pj"),
    [(1, None, 8, 32), (1, ["K0"], 8, 16), (2, None, 8, 32), (2, ["K0"], 16, 32)],
)
def test_a_register_serving_an_axis_holds_its_outputs_and_copies_along_the_others(
    tmp_path: Path, channels_in: int, served: list[str] | None, oreg_bytes: int, oreg_pj: float
) -> None:
    # A 1x1 conv, K = 2, 2x2 outputs (8 outputs of 1 B), on axes K0 (2) x C1 (2), with two 2 B output registers
    # (1 pJ a byte, accesses at least 16 bits) below local. Served along K0 (ZigZag's gemm_l1_l3 reg_O), one
    # register per C PE holds both K outputs: with C = 1 one register is at work and each step writes and reads 2 B
    # in one access (8 B each way: 16 pJ); with C = 2 each C PE keeps its own partial sums (16 B each way: 32 pJ).
    # Without served_axes an instance sits beside each busy PE up to two: the outputs of a step spread over both,
    # 1 B an access, charged 2 B (C = 1: 8 B each way, 32 pJ), and no copies (C = 2: 8 B each way, 32 pJ).
    def core(data: dict) -> None:
        data["cores"][0]["pe_array"] = [{"name": "K0", "dim": "K", "size": 2}, {"name": "C1", "dim": "C", "size": 2}]
        narrow = {"read_bandwidth_bytes_per_cycle": 2, "write_bandwidth_bytes_per_cycle": 2}
        data["memories"]["oreg"] = {"size_bytes": 2, "instances": 2, "min_access_bits": 16, **narrow, **_ONE_PJ_PER_BYTE}
        data["cores"][0]["memory"].insert(1, {"level": "oreg", "operands": ["O"]} | ({"served_axes": served} if served else {}))

    hw = tiny_variant(tmp_path, core)
    cost = mac_cost(
        hw.cores[0], op_table(conv_workload(batch=1, channels_in=channels_in, channels_out=2, input_hw=2)), np.array([0])
    )
    assert cost.level_read_bytes["oreg"][0, 0] == oreg_bytes and cost.level_write_bytes["oreg"][0, 0] == oreg_bytes
    assert cost.energy_level_pj["oreg"][0, 0] == pytest.approx(oreg_pj)


@pytest.mark.parametrize(
    ("ports", "latency"),
    [
        ([{"direction": "read", "bandwidth_bytes_per_cycle": 4}, {"direction": "write", "bandwidth_bytes_per_cycle": 4}], 69),
        ([{"direction": "read_write", "bandwidth_bytes_per_cycle": 4}], 89),
        (
            [
                {"direction": "read_write", "bandwidth_bytes_per_cycle": 4, "operands": ["W", "I"]},
                {"direction": "read_write", "bandwidth_bytes_per_cycle": 2, "operands": ["O"]},
            ],
            101,
        ),
    ],
)
def test_a_read_write_port_shares_its_bandwidth_between_reads_and_writes(tmp_path: Path, ports: list, latency: float) -> None:
    # The hand-computed conv (64 compute cycles, fill 2 + 2 PEs deep + 1) with local's ports instead of its
    # bandwidths. Local reads W 16, I 128 and partial sums 64 (208 B) and writes 128 B of outputs. A read and a write
    # port of 4 B/cycle: 52 and 32 cycles, under the compute: 69. One read_write port of 4 B/cycle carries all 336 B:
    # 84 cycles, 89 in all. A 4 B/cycle port for W and I (144 B: 36 cycles) and a 2 B/cycle one for O (192 B: 96):
    # 101.
    def core(data: dict) -> None:
        for key in ("read_bandwidth_bytes_per_cycle", "write_bandwidth_bytes_per_cycle"):
            del data["memories"]["local"][key]
        data["memories"]["local"]["ports"] = ports

    hw = tiny_variant(tmp_path, core)
    cost = mac_cost(hw.cores[0], op_table(conv_relu_workload(relu=False)), np.array([0]))
    assert cost.level_read_bytes["local"][0, 0] == 208 and cost.level_write_bytes["local"][0, 0] == 128
    assert cost.latency_cycles[0, 0] == pytest.approx(latency)


def test_serial_tile_io_loads_a_whole_input_before_and_stores_the_last_tile_after_the_compute(tmp_path: Path) -> None:
    # the hand-computed conv with tile_io: serial. The input's only memory (local) holds all 64 B of it: loaded
    # before the compute over the 8 B/cycle off-chip link (8 cycles); the weights pass two levels (rf, local):
    # loaded under the compute. After it, the array's last output tile (1 pixel x 2 channels, 2 B) leaves: 0.25.
    hw = tiny_variant(tmp_path, lambda d: d["cores"][0].update(tile_io="serial"))
    table, core = op_table(conv_relu_workload(relu=False)), hw.cores[0]
    serial = mac_cost(core, table, np.array([0]), external=ExternalPath.of(hw, core), objective="latency")
    assert serial.latency_cycles[0, 0] == pytest.approx(64 + 4 + 1 + 8 + 0.25)
    overlapped = mac_cost(load_hardware(TINY).cores[0], table, np.array([0]), external=ExternalPath.of(hw, core))
    assert overlapped.latency_cycles[0, 0] == pytest.approx(64 + 4 + 1)


def test_serial_tile_io_loads_an_input_that_fits_the_room_its_memory_leaves_it(tmp_path: Path) -> None:
    # 1x1 conv, C = 32, K = 4, 4x4 outputs: the input is 512 B, more than a third of the 1 KiB local memory that also
    # keeps weights and outputs, but beside a weight slice (R x the array's 2 columns = 64 B) and the outputs of those
    # columns (16 x 2 = 32 B) it has 928 B: loaded whole before the compute, 512 B over the 8 B/cycle link = 64
    # cycles, then the array's last output tile (2 B: 0.25 cycles) after it
    hw = tiny_variant(tmp_path, lambda d: d["cores"][0].update(tile_io="serial"))
    table, core = op_table(conv_workload(batch=1, channels_in=32, channels_out=4, input_hw=4)), hw.cores[0]
    serial = mac_cost(core, table, np.array([0]), external=ExternalPath.of(hw, core), objective="latency")
    overlapped = mac_cost(load_hardware(TINY).cores[0], table, np.array([0]), external=ExternalPath.of(hw, core))
    assert serial.latency_cycles[0, 0] - overlapped.latency_cycles[0, 0] == pytest.approx(64 + 0.25)


@pytest.mark.parametrize(("oreg_bytes", "local_psum_reads", "local_writes"), [(2, 64, 128), (64, 0, 64)])
def test_an_output_register_too_small_for_the_streamed_rows_passes_partial_sums_on(
    tmp_path: Path, oreg_bytes: int, local_psum_reads: int, local_writes: int
) -> None:
    # the hand-computed conv (M=16, N=4, R=4, array n=2 r=2) with an output register between rf and local. In the
    # dataflow's order every one of the 16 rows streams past a weight tile, so finishing rf's tile (all of R,
    # 4 columns) needs 16 x 4 = 64 partial sums held: a 2 B register cannot, and local sees each of the array's
    # 2 R-tiles (writes 64 x 2, reads 64 back); a 64 B one can, and local gets each output once.
    def with_oreg(data: dict) -> None:
        data["memories"]["oreg"] = {**data["memories"]["rf"], "size_bytes": oreg_bytes}
        data["cores"][0]["memory"].insert(1, {"level": "oreg", "operands": ["O"]})

    hw = tiny_variant(tmp_path, with_oreg)
    cost = mac_cost(hw.cores[0], op_table(conv_relu_workload(relu=False)), np.array([0]))
    assert cost.reduction_levels[0, 0] == 0
    # local also reads W 16 (into rf) and I 16 x 4 x 2 K-tiles = 128 (into the array)
    assert cost.level_read_bytes["local"][0, 0] == 16 + 128 + local_psum_reads
    assert cost.level_write_bytes["local"][0, 0] == local_writes


def _held_rows_core(data: dict) -> None:
    """A 64 B weight register (1 B/cycle, 1 pJ/B) and a 4 B output register (1 pJ/B) below the 1 KiB local memory
    (W, I, O; 2 pJ/B); every port but the weight register's wide enough that compute sets the pace."""
    narrow = {"read_bandwidth_bytes_per_cycle": 1, "write_bandwidth_bytes_per_cycle": 1}
    del data["memories"]["rf"]
    data["memories"] |= {
        "wreg": {"size_bytes": 64, **narrow, **_ONE_PJ_PER_BYTE},
        "oreg": {"size_bytes": 4, **_WIDE, **_ONE_PJ_PER_BYTE},
    }
    data["memories"]["local"].update(_WIDE)
    data["cores"][0]["memory"] = [
        {"level": "wreg", "operands": ["W"]},
        {"level": "oreg", "operands": ["O"]},
        {"level": "local", "operands": ["W", "I", "O"]},
    ]


def _held_rows_conv() -> object:
    # 1x1 conv, C = 32, K = 4, 4x4 outputs: M = 16, N = 4, R = 32, 2,048 MACs at 1 pJ; array tile m=1, n=2, r=2;
    # compute 2 K-tiles x 16 C-tiles x 16 pixels = 512 cycles
    return op_table(conv_workload(batch=1, channels_in=32, channels_out=4, input_hw=4))


def test_latency_and_energy_objectives_choose_different_orders_where_they_trade_off(tmp_path: Path) -> None:
    hw = tiny_variant(tmp_path, _held_rows_core)
    core, table = hw.cores[0], _held_rows_conv()
    external = ExternalPath.of(hw, core)
    fast = mac_cost(core, table, np.array([0]), external=external, objective="latency")
    frugal = mac_cost(core, table, np.array([0]), external=external, objective="energy")
    # The dataflow's order (band 0): wreg holds a tile of the array's 2 columns x all 32 of R (64 B), read once into
    # the array (128 B). The 4 B output register cannot hold 16 rows x 2 columns of partial sums, so each of the
    # array's 16 R-tiles passes 64 of them to local: oreg writes 1,024 from the array and 960 back from local, reads
    # 960 + 1,024; local reads W 128 + I 16 x 32 x 2 K-tiles = 1,024 + partial sums 960, writes 1,024.
    # Energy 2,048 MAC + wreg 256 + oreg 3,968 + local 3,136 x 2 = 12,544 pJ; latency 512 + fill 4 (array depth)
    # + 4 (the first 2x2 weights at 1 B/cycle) = 520.
    assert fast.held_rows[0, 0] == 0 and fast.reduction_levels[0, 0] == 0
    assert fast.level_read_bytes["oreg"][0, 0] == 1984 and fast.level_write_bytes["local"][0, 0] == 1024
    assert (fast.energy_mac_pj + sum(fast.energy_level_pj.values()))[0, 0] == pytest.approx(12544)
    assert fast.latency_cycles[0, 0] == pytest.approx(520)
    # Rows held in the output register: it holds 4 partial sums, 2 rows of the array's 2 columns, so the array runs
    # all of wreg's R over 2 rows at a time, reading its weights again per block: 128 x 16 / 2 = 1,024 B out of
    # wreg. Each output leaves oreg once: oreg writes 1,024, reads 960 + 64; local reads 128 + 1,024, writes 64.
    # Energy 2,048 + wreg 1,152 + oreg 2,048 + local 1,216 x 2 = 7,680 pJ (less); latency 1,024 B at wreg's
    # 1 B/cycle + 8 = 1,032 cycles (more). The bands (weights from local every step) lose on both.
    assert frugal.held_rows[0, 0] == 2 and frugal.reduction_levels[0, 0] == 0
    assert frugal.level_read_bytes["wreg"][0, 0] == 1024 and frugal.level_read_bytes["oreg"][0, 0] == 1024
    assert frugal.level_read_bytes["local"][0, 0] == 1152 and frugal.level_write_bytes["local"][0, 0] == 64
    assert (frugal.energy_mac_pj + sum(frugal.energy_level_pj.values()))[0, 0] == pytest.approx(7680)
    assert frugal.latency_cycles[0, 0] == pytest.approx(1032)
    # EDP: 520 x 12,544 = 6.5e6 against 1,032 x 7,680 = 7.9e6
    edp = mac_cost(core, table, np.array([0]), external=external, objective="edp")
    assert edp.held_rows[0, 0] == 0


def test_energy_chooses_columns_held_in_the_pes_where_inputs_cost_more_than_weights(tmp_path: Path) -> None:
    # The held-rows core with a 128 B weight register (all 4 columns x 32 of R) and local at 4 pJ/B: the output
    # register's 4 partial sums hold 2 rows of the array's 2 columns, or 1 row of all 4 columns.
    def dear_inputs(data: dict) -> None:
        _held_rows_core(data)
        data["memories"]["wreg"]["size_bytes"] = 128
        data["memories"]["local"].update(read_energy_pj_per_bit=0.5, write_energy_pj_per_bit=0.5)

    hw = tiny_variant(tmp_path, dear_inputs)
    core, table = hw.cores[0], _held_rows_conv()
    external = ExternalPath.of(hw, core)
    frugal = mac_cost(core, table, np.array([0]), external=external, objective="energy")
    # Columns innermost: each input read from local once, 16 x 32 = 512 B, each weight from wreg every step,
    # 128 x 16 rows = 2,048 B (at 1 B/cycle: 2,048 + 8 cycles). Each output leaves oreg once (writes 1,024, reads
    # 960 + 64); local reads 128 + 512 and writes 64. Energy 2,048 MAC + wreg 2,176 + oreg 2,048 + local 704 x 4
    # = 9,088 pJ, where rows innermost costs 2,048 + 1,152 + 2,048 + (128 + 1,024 + 64) x 4 = 10,112 and the
    # dataflow's order 18,816.
    assert frugal.held_columns[0, 0] == 4 and frugal.held_rows[0, 0] == 0
    assert frugal.level_read_bytes["wreg"][0, 0] == 2048 and frugal.level_read_bytes["local"][0, 0] == 640
    assert (frugal.energy_mac_pj + sum(frugal.energy_level_pj.values()))[0, 0] == pytest.approx(9088)
    assert frugal.latency_cycles[0, 0] == pytest.approx(2056)
    fast = mac_cost(core, table, np.array([0]), external=external, objective="latency")
    assert fast.held_columns[0, 0] == 0 and fast.held_rows[0, 0] == 0
    assert (fast.energy_mac_pj + sum(fast.energy_level_pj.values()))[0, 0] == pytest.approx(18816)
    assert fast.latency_cycles[0, 0] == pytest.approx(520)


def test_per_pe_output_registers_hold_fewer_rows_under_an_unrolled_reduction(tmp_path: Path) -> None:
    # The core above with one 1 B output register per PE (4 PEs, 4 B in all): the array's C:2 axis has two PEs work on
    # each output, each keeping its own partial sum of it, so the registers hold 2 outputs, 1 row of 2 columns: the
    # weights are read once per row, 128 x 16 = 2,048 B (2,048 cycles at 1 B/cycle). Each partial sum is written and
    # read in both PEs' registers: oreg moves 2 x 2,048 B. Energy still chooses the order: wreg 2,176 + oreg 4,096
    # + local 2,432 + MAC 2,048 = 10,752 pJ (the dataflow's order: 16,512).
    def per_pe(data: dict) -> None:
        _held_rows_core(data)
        data["memories"]["oreg"].update(size_bytes=1, per_pe=True)

    hw = tiny_variant(tmp_path, per_pe)
    core = hw.cores[0]
    cost = mac_cost(core, _held_rows_conv(), np.array([0]), external=ExternalPath.of(hw, core), objective="energy")
    assert cost.held_rows[0, 0] == 1
    assert cost.level_read_bytes["wreg"][0, 0] == 2048 and cost.level_read_bytes["oreg"][0, 0] == 2048
    assert (cost.energy_mac_pj + sum(cost.energy_level_pj.values()))[0, 0] == pytest.approx(10752)
    native = mac_cost(core, _held_rows_conv(), np.array([0]))
    assert (native.energy_mac_pj + sum(native.energy_level_pj.values()))[0, 0] == pytest.approx(16512)
    # With one output channel only the two PEs of the C axis work, each keeping its own partial sum of the same output:
    # their registers hold one row (the two beside the idle K column hold nothing, where they had made it two).
    one_channel = op_table(conv_workload(batch=1, channels_in=32, channels_out=1, input_hw=4))
    cost = mac_cost(core, one_channel, np.array([0]), external=ExternalPath.of(hw, core), objective="energy")
    assert cost.held_rows[0, 0] == 1


def _output_register_below_weights(rf_bytes: int, **oreg: object) -> Callable[[dict], None]:
    """An output register (``oreg``'s fields) below a weight register of ``rf_bytes``, both 1 pJ/B, below the 2 pJ/B
    local memory (W, I, O); every port wide."""

    def edit(data: dict) -> None:
        data["memories"]["rf"].update(size_bytes=rf_bytes, **_ONE_PJ_PER_BYTE, **_WIDE)
        data["memories"]["oreg"] = {**oreg, **_ONE_PJ_PER_BYTE, **_WIDE}
        data["memories"]["local"].update(_WIDE)
        data["cores"][0]["memory"] = [
            {"level": "oreg", "operands": ["O"]},
            {"level": "rf", "operands": ["W"]},
            {"level": "local", "operands": ["W", "I", "O"]},
        ]

    return edit


def test_a_band_finishes_only_the_reduction_the_weight_memory_above_it_holds(tmp_path: Path) -> None:
    # An 8 B output register below a 16 B weight register (both 1 pJ/B), below the 2 pJ/B local memory, on the
    # hand-computed conv (M=16, N=4, R=32, array m=1 n=2 r=2). The band keeping the reduction innermost over the
    # array and the output register grows a 4 x 2 output block there; finishing all 32 of R would need the weight
    # register to hold 2 x 32 weights while the rows stream past it, and it holds 2 x 8. So the block's partial sums
    # leave for local once per 8 of R: 64 x 4 = 256 B up, 192 back down (not 64 and 0, with a 64 B weight tile in a
    # 16 B register). Energy: MACs 2,048 + oreg (1,024 + 192 written, 960 + 256 read) 2,432 + rf (weights read for
    # each row, 128 x 16, and written once) 2,176 + local (weights 128, inputs 1,024, partial sums 192 read; 256
    # written) 3,200 = 9,856 pJ; the band that takes the weight register in too (weights fetched again per block of
    # rows: rf written 512) costs as much.
    hw = tiny_variant(tmp_path, _output_register_below_weights(16, size_bytes=8))
    core = hw.cores[0]
    cost = mac_cost(core, _held_rows_conv(), np.array([0]), external=ExternalPath.of(hw, core), objective="energy")
    assert cost.reduction_levels[0, 0] == 2
    assert cost.level_write_bytes["local"][0, 0] == 256 and cost.level_read_bytes["local"][0, 0] == 128 + 1024 + 192
    assert cost.level_write_bytes["rf"][0, 0] == 128 and cost.level_read_bytes["oreg"][0, 0] == 960 + 256
    assert (cost.energy_mac_pj + sum(cost.energy_level_pj.values()))[0, 0] == pytest.approx(9856)


def test_per_pe_output_registers_hold_a_bands_block_once_per_copy(tmp_path: Path) -> None:
    # The core above with an 8 B weight register (2 columns x 4 of R) and one 2 B output register per PE (8 B in
    # all), on the 1x1 conv (M 16, N 4, R 32; array m 1, n 2, r 2). The array's C:2 axis has two PEs work on each
    # output, each keeping its own partial sum, so the registers hold 4 outputs: a block of 2 rows x 2 columns, where
    # 4 rows (16 B of partial sums) had been kept. Energy keeps the reduction innermost over the array, the output
    # and the weight registers (band 3): each block finishes all 32 of R and leaves once (64 B to local), the weight
    # register takes all 128 weights once per block of rows, 8 times (1,024 B, not 512). MACs 2,048 + oreg (each of
    # the 2 copies of 64 outputs takes 16 partial sums: 2,048 written, 2,048 read) 4,096 + rf (2,048 read, 1,024
    # written) 3,072 + local (W 1,024 and I 1,024 read, the outputs 64 written) 2,112 x 2 = 13,440 pJ.
    hw = tiny_variant(tmp_path, _output_register_below_weights(8, size_bytes=2, per_pe=True))
    core = hw.cores[0]
    cost = mac_cost(core, _held_rows_conv(), np.array([0]), external=ExternalPath.of(hw, core), objective="energy")
    assert cost.reduction_levels[0, 0] == 3
    assert cost.level_write_bytes["rf"][0, 0] == 1024 and cost.level_write_bytes["local"][0, 0] == 64
    assert cost.level_read_bytes["local"][0, 0] == 2048 and cost.level_write_bytes["oreg"][0, 0] == 2048
    assert (cost.energy_mac_pj + sum(cost.energy_level_pj.values()))[0, 0] == pytest.approx(13440)


@pytest.mark.parametrize(("register_bytes", "written"), [(16, 192), (32, 384)])
def test_a_register_holding_a_blocks_inputs_loads_each_blocks_own_pixels(
    tmp_path: Path, register_bytes: int, written: int
) -> None:
    # The held-rows core with an input register below the rest, on a 3x3 conv (2 -> 4 channels, 6x6 input): M = 16
    # (4 x 4 outputs), N = 4, R = 18, 72 input pixels. Held rows, 2 at a time (energy's choice): two outputs side by
    # side read 3 x 4 = 12 pixels of each channel, 24 over the weight register's whole R. A 16 B register cannot keep
    # them: the weight tile is cut to the 12 of R whose inputs it holds (16 = 2 x 12 x 72/288 x 8/3, the halo of
    # blocks of two outputs), and as wide as the 64 B weight register then holds, all 4 columns; each of the 8 blocks
    # loads its own pixels once, 8 x 12 x 2 = 192 B. A 32 B register keeps the 24 over all of R, loaded once per column
    # tile of the weight register (64 / 18: 3 columns, 2 tiles): 8 x 24 x 2 = 384 B. Either way the array reads the
    # im2col once per column step of the array: 288 x 2 = 576 B.
    def input_register(data: dict) -> None:
        _held_rows_core(data)
        data["memories"]["ireg"] = {**data["memories"]["oreg"], "size_bytes": register_bytes}
        data["cores"][0]["memory"].insert(0, {"level": "ireg", "operands": ["I"]})

    hw = tiny_variant(tmp_path, input_register)
    core = hw.cores[0]
    table = op_table(conv_workload(batch=1, channels_in=2, channels_out=4, input_hw=6, kernel=3))
    cost = mac_cost(core, table, np.array([0]), external=ExternalPath.of(hw, core), objective="energy")
    assert cost.held_rows[0, 0] == 2
    assert cost.level_write_bytes["ireg"][0, 0] == written and cost.level_read_bytes["ireg"][0, 0] == 576


def _inputs_in_the_pes_core(osram_pj_per_byte: float) -> Callable[[dict], None]:
    """The held-rows core (a 64 B weight register, a 4 B output register) with an 8 B input register below them, an
    output SRAM of 64 B (all 64 outputs) above them at ``osram_pj_per_byte``, and local cut to 512 B (it no longer
    holds the whole op, 704 B); every port wide."""

    def edit(data: dict) -> None:
        _held_rows_core(data)
        data["memories"]["wreg"].update(_WIDE)
        data["memories"]["local"]["size_bytes"] = 512
        data["memories"]["ireg"] = {"size_bytes": 8, **_WIDE, **_ONE_PJ_PER_BYTE}
        per_bit = {f"{way}_energy_pj_per_bit": osram_pj_per_byte / 8 for way in ("read", "write")}
        data["memories"]["osram"] = {"size_bytes": 64, **_WIDE, **per_bit}
        data["cores"][0]["memory"] = [
            {"level": "ireg", "operands": ["I"]},
            {"level": "wreg", "operands": ["W"]},
            {"level": "oreg", "operands": ["O"]},
            {"level": "osram", "operands": ["O"]},
            {"level": "local", "operands": ["W", "I", "O"]},
        ]

    return edit


@pytest.mark.parametrize(
    ("osram_pj_per_byte", "bytes_moved", "energy_pj"),
    [(0.5, {"ireg": 512, "oreg": 1472, "osram": 512}, 9600), (2.0, {"ireg": 1024, "oreg": 1024, "osram": 64}, 9984)],
)
def test_held_rows_keep_their_inputs_in_the_pes_over_a_weight_tile_cut_to_fit_them(
    tmp_path: Path, osram_pj_per_byte: float, bytes_moved: dict[str, int], energy_pj: float
) -> None:
    # The 1x1 conv (M 16, N 4, R 32; array m 1, n 2, r 2). Energy holds 2 rows in the output register either way.
    # With wreg's tile as it grows (2 columns x all 32 of R) ireg keeps 2 rows of one R-step (2 x 2 inputs; 2 x 32
    # do not fit 8 B) and loads each input once per column step: 1,024 B from local. Cut to the R whose inputs of
    # the 2 rows ireg holds (8 / 2 = 4) and as wide as wreg then holds (all 4 columns), the inputs stay over the
    # tile: 512 B. The partial sums then leave oreg once per 4 of R, 8 times: oreg writes 1,024 from the array and
    # 448 back from osram, reads 960 + 512; osram writes 512, reads 448 + 64 (it holds all outputs: they leave
    # whole). MACs 2,048 + ireg (1,024 read, 512 written) 1,536 + wreg (1,024 read, 128 written) 1,152 + oreg
    # 2,944 + osram 1,024 x 0.5 + local (W 128, I 512 read, 64 written) 704 x 2 = 9,600 pJ, where the tile as it
    # grows costs 2,048 + 2,048 + 1,152 + 2,048 + 128 x 0.5 + (128 + 1,024 + 64) x 2 = 9,792. With osram at 2 pJ/B
    # (as dear as local) the cut costs 11,136 and the tile as it grows 9,984: it stays.
    hw = tiny_variant(tmp_path, _inputs_in_the_pes_core(osram_pj_per_byte))
    core = hw.cores[0]
    cost = mac_cost(core, _held_rows_conv(), np.array([0]), external=ExternalPath.of(hw, core), objective="energy")
    assert cost.held_rows[0, 0] == 2
    assert cost.level_write_bytes["ireg"][0, 0] == bytes_moved["ireg"] and cost.level_read_bytes["ireg"][0, 0] == 1024
    assert cost.level_read_bytes["local"][0, 0] == 128 + bytes_moved["ireg"]
    for name in ("oreg", "osram"):  # each as many bytes read as written
        assert cost.level_write_bytes[name][0, 0] == cost.level_read_bytes[name][0, 0] == bytes_moved[name]
    assert (cost.energy_mac_pj + sum(cost.energy_level_pj.values()))[0, 0] == pytest.approx(energy_pj)


def test_held_rows_cut_no_weight_tile_wider_than_the_weight_memory_above_holds(tmp_path: Path) -> None:
    # The core above (output SRAM at 0.5 pJ/B) with a 64 B weight SRAM (0.5 pJ/B) between the registers and the output
    # SRAM: it holds wreg's tile as it grows, 2 columns x all 32 of R. Cut to ireg's 4 of R, wreg would hold all 4
    # columns, but the weight SRAM above it would then need 4 x 32 weights: the cut takes 2 columns, and the inputs
    # in ireg no longer serve more of them than the tile as it grows (1,024 B from local either way). So energy keeps
    # wreg's tile as it grows: 9,792 pJ as above and the weight SRAM's 128 B in and out, 9,920 pJ (the 4-column cut,
    # 512 B into ireg, had been counted).
    def weight_sram(data: dict) -> None:
        _inputs_in_the_pes_core(0.5)(data)
        data["memories"]["wsram"] = {**data["memories"]["osram"], "size_bytes": 64}
        data["cores"][0]["memory"].insert(3, {"level": "wsram", "operands": ["W"]})

    hw = tiny_variant(tmp_path, weight_sram)
    core = hw.cores[0]
    cost = mac_cost(core, _held_rows_conv(), np.array([0]), external=ExternalPath.of(hw, core), objective="energy")
    assert cost.held_rows[0, 0] == 2
    assert cost.level_write_bytes["ireg"][0, 0] == 1024 and cost.level_read_bytes["local"][0, 0] == 128 + 1024
    assert cost.level_write_bytes["wsram"][0, 0] == cost.level_read_bytes["wsram"][0, 0] == 128
    assert (cost.energy_mac_pj + sum(cost.energy_level_pj.values()))[0, 0] == pytest.approx(9920)


def test_instances_beside_idle_pes_hold_and_move_nothing(tmp_path: Path) -> None:
    # The core above with 16 one-byte output registers, as an import of a 4 x 4 array whose mapping unrolls 2 x 2
    # gives: the 12 beside idle PEs add no room (still 1 row held), no bandwidth and no accesses, so the op costs
    # exactly what it costs with one register per PE.
    def registers(instances: int) -> Callable[[dict], None]:
        def edit(data: dict) -> None:
            _held_rows_core(data)
            data["memories"]["oreg"].update(size_bytes=1, instances=instances)
            data["memories"]["wreg"].update(read_bandwidth_bytes_per_cycle=0.25, instances=instances)

        return edit

    costs = []
    for instances in (4, 16):
        (tmp_path / str(instances)).mkdir()
        hw = tiny_variant(tmp_path / str(instances), registers(instances))
        core = hw.cores[0]
        costs.append(mac_cost(core, _held_rows_conv(), np.array([0]), external=ExternalPath.of(hw, core), objective="energy"))
    per_pe, oversized = costs
    assert oversized.held_rows[0, 0] == per_pe.held_rows[0, 0] == 1
    assert oversized.latency_cycles[0, 0] == per_pe.latency_cycles[0, 0]
    for name in ("wreg", "oreg", "local"):
        assert oversized.energy_level_pj[name][0, 0] == per_pe.energy_level_pj[name][0, 0]


def test_more_bandwidth_is_never_slower_and_energy_is_the_sum_of_its_parts(tmp_path: Path) -> None:
    # the held-rows core with its weight register's port at 1 to 16 B/cycle (per instance, one per PE), on ResNet-like
    # convolutions: each objective's latency never grows with the bandwidth, and every candidate's energy is MAC
    # energy plus each memory's bytes at its energy per byte
    def swept(data: dict) -> None:
        _held_rows_core(data)
        data["parameters"]["wreg_bandwidth"] = {"default": 1, "description": "bytes per cycle"}
        data["memories"]["wreg"].update(read_bandwidth_bytes_per_cycle="wreg_bandwidth", per_pe=True, size_bytes=16)

    data = yaml.safe_load(TINY.read_text())
    swept(data)
    path = tmp_path / "swept.yaml"
    path.write_text(yaml.safe_dump(data))
    hw = load_hardware(path, sweep={"wreg_bandwidth": [1, 2, 4, 16]})
    core = hw.cores[0]
    table = op_table(conv_workload(batch=2, channels_in=16, channels_out=8, input_hw=6, kernel=3))
    energy_per_byte = {"wreg": 1.0, "oreg": 1.0, "local": 2.0}
    for objective in OBJECTIVES:
        cost = mac_cost(core, table, np.array([0]), external=ExternalPath.of(hw, core), objective=objective)
        if objective == "latency":
            assert (np.diff(cost.latency_cycles[:, 0]) <= 1e-9).all()
        for name, per_byte in energy_per_byte.items():
            moved = cost.level_read_bytes[name] + cost.level_write_bytes[name]
            assert cost.energy_level_pj[name] == pytest.approx(moved * per_byte)


def test_eyeriss_like_keeps_a_resnet_layers_partial_sums_in_the_pes(tmp_path: Path) -> None:
    # ZigZag's eyeriss_like (K:14 x C:12 PEs, each with a 64 B input, a 64 B weight and a 16 B output register file) on
    # ResNet-18's layer1.0.conv1 (3x3, 64 -> 64 channels, 56x56 outputs). The output registers hold 8 partial sums per
    # PE, but each output has one in each of the 12 PEs of its reduction: blocks of 8 rows x 14 columns. The inputs of
    # 8 rows over all 576 of R (1,536, their halo counted) do not fit the 768 the input registers hold, so the block
    # runs over chunks of R whose inputs do fit, and its partial sums leave the PEs once per chunk, where the dataflow's
    # order passed 38 MB of them each way through the 8 KB SRAM's 16 B/cycle port (2.4 M cycles); the layer takes its
    # compute, ceil(64/14) x ceil(64/12) x 56 x 56 x 9 = 846,720 cycles.
    path = tmp_path / "eyeriss_like.yaml"
    zigzag = Path(__file__).resolve().parents[1] / "fixtures/hardware/zigzag/hardware/eyeriss_like.yaml"
    path.write_text(hardware_yaml_text(zigzag_hardware(zigzag), header="test"))
    hw = load_hardware(path)
    core, table = hw.cores[0], op_table(conv_workload(batch=1, channels_in=64, channels_out=64, input_hw=58, kernel=3))
    outputs = 64 * 56 * 56
    for objective in OBJECTIVES:
        cost = mac_cost(core, table, np.array([0]), external=ExternalPath.of(hw, core), objective=objective)
        assert cost.compute_cycles[0, 0] == 846720 and cost.held_rows[0, 0] == 8
        assert cost.latency_cycles[0, 0] == pytest.approx(846720, rel=1e-3)
        assert 0 < cost.reduction_chunk[0, 0] < 576  # the held block runs over chunks of R
        # the partial sums leave the PEs once per R-tile the block runs over (9 here), not once per step of the array's
        # R (48)
        assert outputs < cost.level_write_bytes["sram_8KB"][0, 0] <= 10 * outputs
        # each PE of an output accumulates in its own register in the steps it works in: 64 channels on 12 PEs over 9
        # taps, at least 48 partial sums (2 B) in each of the 12 copies, read and written
        assert cost.level_write_bytes["rf_16B"][0, 0] >= outputs * 48 * 2 * 12


def _weights_only_in_the_register(data: dict, offchip_pj_per_bit: float) -> None:
    """``_register_hierarchy`` without its weight SRAM: the weights' only memory in the core is the 4 B register that
    holds one array tile of them (as an in-memory array's cells, or ZigZag's ``tpu_like`` rf_128B)."""
    _register_hierarchy(data)
    del data["memories"]["wsram"]
    data["cores"][0]["memory"] = [level for level in data["cores"][0]["memory"] if level["level"] != "wsram"]
    data["offchip"]["energy_pj_per_bit"] = offchip_pj_per_bit


@pytest.mark.parametrize(("offchip_pj_per_bit", "band", "weights_in"), [(0.0, 3, 512), (1.0, 0, 128)])
def test_weights_without_a_memory_above_the_band_come_in_again_for_every_block_of_rows(
    tmp_path: Path, offchip_pj_per_bit: float, band: int, weights_in: int
) -> None:
    # The hand-made case of test_reduction_innermost_below_the_top_...: band 3 keeps each block of rows' partial
    # sums in the output register over all 32 of R, so the 4 B weight register takes all 128 weights once per block
    # of rows (4): 512 bytes from off chip, where it had counted them once. Free off-chip bytes let the band win on
    # its on-chip energy (646.4 pJ against 1,616); at 8 pJ a byte, its 384 bytes more cost 3,072 pJ and the dataflow's
    # order (weights in once, the inputs' block resident in local) wins.
    hw = tiny_variant(tmp_path, lambda data: _weights_only_in_the_register(data, offchip_pj_per_bit))
    core, table = hw.cores[0], op_table(conv_workload(batch=1, channels_in=32, channels_out=4, input_hw=2))
    chosen = mac_cost(core, table, np.array([0]), external=ExternalPath.of(hw, core), objective="energy")
    assert chosen.reduction_levels[0, 0] == band
    assert chosen.ext_in_bytes["W"][0, 0] == weights_in
    assert sum(chosen.energy_level_pj.values())[0, 0] == pytest.approx(646.4 if band else 1616.0)


@pytest.mark.parametrize(
    ("channels", "weights_in", "inputs_in", "blocks"),
    [((4, 4), 48, 256, ("input_resident", "output_resident")), ((2, 8), 16, 128, ("input_resident",))],
)
def test_a_block_kept_above_the_core_takes_the_room_of_its_own_rows(
    tmp_path: Path, channels: tuple[int, int], weights_in: int, inputs_in: int, blocks: tuple[str, ...]
) -> None:
    # A 1x1 conv over 8x8 outputs (M = 64), 1-byte elements, array tile n = 2, r = 2; the weights' only memory holds
    # one array tile (rf, 4 B), local keeps I and O in 160 B. A block kept in local above the core holds what its own
    # rows need, where the op's whole extent had been reserved:
    # * K = C = 4: an output block of m rows x 4 columns, its 4m partial sums and the 2m inputs of one reduction step,
    #   m = 160 / 6 = 26; an input block of m rows x all of R, its 4m inputs and the 2m partial sums of a column tile,
    #   m = 26 too (a tie). The weights come in ceil(64 / 26) = 3 times: 48 B (reserving all 64 rows: 128 B).
    # * C = 2, K = 8: the array finishes the reduction, so an input block keeps no partial sums: all 64 rows' 128
    #   inputs fit, and the weights come in once (the input block had reserved 64 x 2 partial sums: 4 passes).
    hw = _weight_register_below_local(tmp_path, rf_bytes=4, local_bytes=160)
    channels_in, channels_out = channels
    conv = conv_workload(batch=1, channels_in=channels_in, channels_out=channels_out, input_hw=8)
    core, table = hw.cores[0], op_table(conv)
    chosen = mac_cost(core, table, np.array([0]), external=ExternalPath.of(hw, core), objective="energy")
    assert MAPPINGS[chosen.mapping[0, 0]] in blocks
    assert chosen.ext_in_bytes["W"][0, 0] == weights_in and chosen.ext_in_bytes["I"][0, 0] == inputs_in
    assert chosen.ext_write_bytes[0, 0] == 64 * channels_out  # the outputs leave once


@pytest.mark.parametrize(
    ("channels_out", "mapping", "weights_in", "inputs_in"), [(2, "output_resident", 72, 240), (4, "input_resident", 288, 288)]
)
def test_a_block_kept_above_the_core_reads_the_halo_of_its_windows(
    tmp_path: Path, channels_out: int, mapping: str, weights_in: int, inputs_in: int
) -> None:
    # A 3x3 conv from 2 channels over 10 x 10 pixels (no padding): 8 x 8 outputs (M = 64), R = 18, and the windows
    # touch all 200 input pixels. The weights' only memory holds one array tile (4 B); local (130 B) keeps a block
    # above the core.
    # * 2 output channels: an output block of 32 rows (2 partial sums and the 2 inputs of one reduction step of the
    #   array each, 4 B a row), 4 rows of 8 outputs. Each block reads the 6 x 10 pixels its windows touch, of both
    #   channels: 2 blocks x 120 = 240 B, where counting each pixel once gave 200; the 36 B of weights come in once
    #   per block.
    # * 4 (2 column tiles of the array, 72 B of weights): an input block keeps all of R of its rows (200 / 64 B of
    #   inputs a row) and their partial sums over a column tile (2 B a row). Counting each pixel once, 130 / 5.125 = 25
    #   rows fit, 3 passes of the weights (216 B). But blocks of 5 x 5 outputs read 7 x 7 pixels each, 12 x 12 of the
    #   10 x 10 over the image: 1.44 times their share, so 25 rows take 162 B. At 6.5 B a row, 20 rows (4 x 5 outputs,
    #   the same 1.44): 4 passes, 288 B of weights and 288 of inputs.
    hw = _weight_register_below_local(tmp_path, rf_bytes=4, local_bytes=130)
    conv = conv_workload(batch=1, channels_in=2, channels_out=channels_out, input_hw=10, kernel=3)
    core, table = hw.cores[0], op_table(conv)
    chosen = mac_cost(core, table, np.array([0]), external=ExternalPath.of(hw, core), objective="energy")
    assert MAPPINGS[chosen.mapping[0, 0]] == mapping
    assert chosen.ext_in_bytes["W"][0, 0] == weights_in and chosen.ext_in_bytes["I"][0, 0] == pytest.approx(inputs_in)


@pytest.mark.parametrize(
    ("input_hw", "tiling", "weights_in"), [(8, "any", 48), (8, "divisors", 64), (7, "any", 32), (7, "divisors", 112)]
)
def test_divisor_tiles_split_each_loop_into_factors_of_its_size(
    tmp_path: Path, input_hw: int, tiling: str, weights_in: int
) -> None:
    # The K = C = 4 case above: local holds a block of 26 rows above the core, and the 16 B of weights come in
    # once per block. With ``tiling: any`` the last block is partial: ceil(64 / 26) = 3 passes (48 B), and over
    # 7 x 7 outputs ceil(49 / 26) = 2 (32 B). With ``divisors`` a block divides the rows, as ZigZag's loops take
    # factors of their size: 16 of 64 rows (4 passes, 64 B); of 49 rows only 7 (7 passes, 112 B), since 49 = 7 x 7.
    hw = _weight_register_below_local(tmp_path, rf_bytes=4, local_bytes=160)
    core, table = (
        replace(hw.cores[0], tiling=tiling),
        op_table(conv_workload(batch=1, channels_in=4, channels_out=4, input_hw=input_hw)),
    )
    chosen = mac_cost(core, table, np.array([0]), external=ExternalPath.of(hw, core), objective="energy")
    assert chosen.ext_in_bytes["W"][0, 0] == weights_in
    assert chosen.ext_in_bytes["I"][0, 0] == 4 * input_hw**2  # each input once, whatever the blocks
    assert chosen.ext_write_bytes[0, 0] == 4 * input_hw**2


def test_divisor_tiles_count_the_steps_of_each_loop_the_array_pads(tmp_path: Path) -> None:
    # The case above over 7 x 7 outputs, the array's second axis unrolling OX by 2 instead of C: OX takes 4 steps
    # (the last half empty) and OY 7, so the rows take 28 steps of 2. Local holds 26 rows (4 inputs and 2 partial
    # sums each): with ``any`` 2 blocks (32 B of weights in); with ``divisors`` 7 steps (7 divides 28; 13 would fit),
    # 14 rows, 4 blocks (64 B). Counting the 49 rows as ceil(49 / 2) = 25 steps would have given 5 steps, 5 blocks.
    def ox_axis(data: dict) -> None:
        data["memories"]["rf"]["size_bytes"] = 4
        data["memories"]["local"]["size_bytes"] = 160
        data["cores"][0]["memory"][1]["operands"] = ["I", "O"]
        data["cores"][0]["pe_array"][1]["dim"] = "OX"

    hw = tiny_variant(tmp_path, ox_axis)
    table = op_table(conv_workload(batch=1, channels_in=4, channels_out=4, input_hw=7))
    for tiling, weights_in in (("any", 32), ("divisors", 64)):
        core = replace(hw.cores[0], tiling=tiling)
        chosen = mac_cost(core, table, np.array([0]), external=ExternalPath.of(hw, core), objective="energy")
        assert chosen.ext_in_bytes["W"][0, 0] == weights_in, tiling


def test_an_axis_with_divisors_may_leave_pes_idle_where_the_objective_gains(tmp_path: Path) -> None:
    # tiny.yaml's array with a 4 B weight register and a 32 B local memory for the inputs and partial sums, the
    # K axis also over 1 of its 2 PEs: the 1x1 conv (K = C = 4, 16 rows) then streams its weights from off chip
    # twice (32 B) instead of four times (64 B), in 128 compute cycles instead of 64. The energy objective takes
    # the half array, the latency objective the whole one.
    def half_k(data: dict) -> None:
        data["memories"]["rf"]["size_bytes"] = 4
        data["memories"]["local"]["size_bytes"] = 32
        data["cores"][0]["memory"][1]["operands"] = ["I", "O"]
        data["cores"][0]["pe_array"][0]["divisors"] = [2]

    hw = tiny_variant(tmp_path, half_k)
    core = hw.cores[0]
    assert [[(axis.dim, axis.size[0]) for axis in v.pe_array] for v in core.spatial_variants()] == [
        [("K", 2), ("C", 2)],
        [("K", 1), ("C", 2)],
    ]
    table = op_table(conv_workload(batch=1, channels_in=4, channels_out=4, input_hw=4, kernel=1))
    by = {
        objective: mac_cost(core, table, np.array([0]), external=ExternalPath.of(hw, core), objective=objective)
        for objective in ("energy", "latency")
    }
    assert by["energy"].spatial_variant[0, 0] == 1 and by["latency"].spatial_variant[0, 0] == 0
    assert (by["energy"].ext_in_bytes["W"][0, 0], by["latency"].ext_in_bytes["W"][0, 0]) == (32, 64)
    assert (by["energy"].compute_cycles[0, 0], by["latency"].compute_cycles[0, 0]) == (128, 64)
    assert (by["energy"].utilization[0, 0], by["latency"].utilization[0, 0]) == (0.5, 1.0)  # of the whole array
    assert by["energy"].latency_cycles[0, 0] > by["latency"].latency_cycles[0, 0]


def _c_or_fx(data: dict) -> None:
    """tiny.yaml's 2 x 2 array with its second axis unrolling C or, per op, FX (a ZigZag spatial-mapping hint)."""
    data["cores"][0]["pe_array"][1]["alternatives"] = ["FX"]


@pytest.mark.parametrize(("conv", "variant", "cycles"), [((1, 3, 6), 1, 192), ((4, 1, 4), 0, 64)])
def test_an_axis_with_alternatives_unrolls_per_op_what_costs_least(
    tmp_path: Path, conv: tuple[int, int, int], variant: int, cycles: int
) -> None:
    # K = 4 on the first axis (2 steps). A 3x3 conv with one input channel: C on the second axis fills half of it,
    # 2 x 1 x 16 outputs x 9 taps = 288 steps; FX fills it for 2 of every 3 taps, 2 x 16 x 3 x 2 = 192, which the
    # latency objective takes. The 1x1 conv with C = 4: C, 2 x 2 x 16 = 64 steps, against 2 x 4 x 16 = 128 with FX.
    hw = tiny_variant(tmp_path, _c_or_fx)
    core = hw.cores[0]
    channels_in, kernel, input_hw = conv
    table = op_table(conv_workload(batch=1, channels_in=channels_in, channels_out=4, input_hw=input_hw, kernel=kernel))
    cost = mac_cost(core, table, np.array([0]), external=ExternalPath.of(hw, core), objective="latency")
    assert core.spatial_variants()[variant].pe_array[1].dim == ("FX" if variant else "C")
    assert cost.spatial_variant[0, 0] == variant
    assert cost.compute_cycles[0, 0] == cycles


@settings(max_examples=200, deadline=None, derandomize=True)
@given(
    st.tuples(st.integers(1, 9), st.integers(1, 5), st.integers(1, 3), st.integers(1, 3)),
    st.tuples(st.integers(1, 6), st.integers(1, 4)),
)
def test_a_steps_overlapping_windows_are_read_once_each(window: tuple[int, int, int, int], per_step: tuple[int, int]) -> None:
    # brute force: every step of per_step outputs x taps (the last of each partial) reads its distinct input positions
    outputs, taps, stride, dilation = window
    read = 0
    for o in range(0, outputs, per_step[0]):
        for f in range(0, taps, per_step[1]):
            steps_o, steps_f = range(o, min(o + per_step[0], outputs)), range(f, min(f + per_step[1], taps))
            read += len({stride * i + dilation * j for i in steps_o for j in steps_f})
    assert step_share(window, per_step) == pytest.approx(read / (outputs * taps))


@pytest.mark.parametrize(("stride", "input_hw", "local_reads"), [(1, 5, 4 + 40 + 16), (2, 9, 4 + 64 + 16)])
def test_an_array_unrolling_outputs_and_taps_together_reads_each_input_of_a_step_once(
    tmp_path: Path, stride: int, input_hw: int, local_reads: int
) -> None:
    # A 2x2 conv, C = K = 1, 4x4 outputs, on an array of OX 4 x FX 2 fed by tiny.yaml's one local memory (no rf):
    # im2col 16 rows x 4 taps = 64 inputs over 8 steps (OY 4 x FY 2). At stride 1 a step's 4 outputs x 2 taps touch
    # 5 input columns, so the array reads 8 x 5 = 40 inputs (ZigZag's edge_tpu_like_mixed, OX 4 x FX 2); at stride
    # 2 they touch 8, all of the im2col. Local also reads the 4 weights once and 16 partial sums back (2 R-tiles).
    hw = tiny_variant(tmp_path, _ox_by_fx)
    table = op_table(conv_workload(batch=1, channels_in=1, channels_out=1, input_hw=input_hw, kernel=2, stride=stride))
    cost = mac_cost(hw.cores[0], table, np.array([0]))
    assert cost.compute_cycles[0, 0] == 8
    assert cost.level_read_bytes["local"][0, 0] == local_reads
    assert cost.ext_in_bytes["I"][0, 0] == table.x_elems[0]  # from outside, each pixel once either way


@pytest.mark.parametrize(("served", "instances", "written"), [(None, 8, 64), (["ox", "fx"], 1, 40), (["fx"], 4, 64)])
def test_input_registers_share_a_steps_pixels_only_among_the_pes_each_one_feeds(
    tmp_path: Path, served: list[str] | None, instances: int, written: int
) -> None:
    # The stride-1 case above with 1 B input registers below local. One beside each PE keeps its own copy of its
    # pixel: local writes all 64 of the im2col into them. One serving both axes feeds the whole step: 40. One per
    # OX PE serving the FX axis feeds one output's 2 taps, which touch 2 pixels: 64 again.
    def registers(data: dict) -> None:
        _ox_by_fx(data)
        _one_byte_register(data, "I", instances, served)

    hw = tiny_variant(tmp_path, registers)
    table = op_table(conv_workload(batch=1, channels_in=1, channels_out=1, input_hw=5, kernel=2))
    cost = mac_cost(hw.cores[0], table, np.array([0]))
    assert cost.level_write_bytes["I_reg"][0, 0] == written


def _ox_by_fx(data: dict) -> None:
    """tiny.yaml's PE core as an array of OX 4 x FX 2 under its local memory alone."""
    data["cores"][0]["pe_array"] = [{"name": "ox", "dim": "OX", "size": 4}, {"name": "fx", "dim": "FX", "size": 2}]
    data["cores"][0]["memory"] = [{"level": "local", "operands": ["W", "I", "O"]}]
    del data["memories"]["rf"]


def _fx_by_fy(data: dict) -> None:
    """The core of ``_ox_by_fx`` with an array of FX 2 x FY 2."""
    _ox_by_fx(data)
    data["cores"][0]["pe_array"] = [{"name": "fx", "dim": "FX", "size": 2}, {"name": "fy", "dim": "FY", "size": 2}]


def _one_byte_register(data: dict, operand: str, instances: int, served: list[str] | None = None) -> None:
    """A 1 B register ``<operand>_reg`` (1 pJ/B, 1 B/cycle) in ``instances`` instances, for ``operand`` below the
    core's memories, serving the PE axes ``served`` (None: each instance beside its own PE)."""
    name = f"{operand}_reg"
    data["memories"][name] = {"size_bytes": 1, "instances": instances, **_ONE_PJ_PER_BYTE}
    data["memories"][name].update(read_bandwidth_bytes_per_cycle=1, write_bandwidth_bytes_per_cycle=1)
    data["cores"][0]["memory"].insert(0, {"level": name, "operands": [operand]} | ({"served_axes": served} if served else {}))


@pytest.mark.parametrize(("kernel", "steps", "local_reads", "local_writes"), [(3, 4, 9 + 36 + 4 * 3, 4 * 4), (2, 1, 4 + 16, 4)])
def test_partial_sums_leave_the_array_once_per_step_of_its_reduction(
    tmp_path: Path, kernel: int, steps: int, local_reads: int, local_writes: int
) -> None:
    # An array of FX 2 x FY 2 under tiny.yaml's one local memory, a conv with C = K = 1 and 2x2 outputs. Its 3x3
    # filter takes 2 x 2 steps (the last of each axis one tap wide), so each output's partial sum leaves the array 4
    # times, not ceil(9 / 4) = 3 (ZigZag's edge_tpu_like_mixed, FX 2 x FY 2 beside C): local writes 4 x 4 and reads
    # 4 x 3 back, beside the 9 weights and the 36 inputs of the im2col. A 2x2 filter fills one step: 4 outputs.
    hw = tiny_variant(tmp_path, _fx_by_fy)
    table = op_table(conv_workload(batch=1, channels_in=1, channels_out=1, input_hw=kernel + 1, kernel=kernel))
    cost = mac_cost(hw.cores[0], table, np.array([0]))
    assert cost.compute_cycles[0, 0] == 4 * steps
    assert cost.level_read_bytes["local"][0, 0] == local_reads
    assert cost.level_write_bytes["local"][0, 0] == local_writes


@pytest.mark.parametrize(("instances", "moved"), [(1, 4 * 4 + 4 * 3), (4, 4 * 9 + 4 * (9 - 4))])
def test_a_pes_own_partial_sum_moves_only_in_the_steps_it_works_in(tmp_path: Path, instances: int, moved: int) -> None:
    # The 3x3 case above with an output register between the array and local, through which each partial sum passes
    # on to local and back (the rows stream past the weights). One register shared by the 4 PEs takes each output's
    # partial sum once per step, 4 x 4 up and 4 x 3 back down, as many read. One per PE keeps each PE's own copy,
    # which its PE updates only where it has a tap (the second step of each axis has one of two): 9 an output, its
    # MACs, and each copy back one time fewer (4 x 5), where 4 steps x 4 copies would move 4 x 16 and 4 x 12.
    def registers(data: dict) -> None:
        _fx_by_fy(data)
        _one_byte_register(data, "O", instances)

    hw = tiny_variant(tmp_path, registers)
    table = op_table(conv_workload(batch=1, channels_in=1, channels_out=1, input_hw=4, kernel=3))
    cost = mac_cost(hw.cores[0], table, np.array([0]))
    assert cost.level_write_bytes["O_reg"][0, 0] == moved
    assert cost.level_read_bytes["O_reg"][0, 0] == moved


@pytest.mark.parametrize(("input_hw", "row_steps"), [(7, 7 * 4), (8, 8 * 4)])
def test_weights_are_read_again_for_every_step_of_rows_the_array_takes(tmp_path: Path, input_hw: int, row_steps: int) -> None:
    # An output-stationary array of K 2 x OX 2 under tiny.yaml's one local memory, a 1x1 conv with C = K = 4. Over 7 x 7
    # outputs OX takes 4 steps (the last half empty) in each of 7 rows: 28 steps of rows, where ceil(49 / 2) = 25 would
    # pack them across rows. Local reads the 16 weights once per step of rows, and the 4 inputs of each output once per
    # step of 2 columns (2): 16 x 28 + 49 x 4 x 2 = 840. Over 8 x 8 nothing pads: 16 x 32 + 64 x 4 x 2.
    def output_stationary(data: dict) -> None:
        _ox_by_fx(data)
        data["cores"][0]["dataflow"] = "output_stationary"
        data["cores"][0]["pe_array"] = [{"name": "k", "dim": "K", "size": 2}, {"name": "ox", "dim": "OX", "size": 2}]

    hw = tiny_variant(tmp_path, output_stationary)
    outputs = input_hw**2
    table = op_table(conv_workload(batch=1, channels_in=4, channels_out=4, input_hw=input_hw, kernel=1))
    cost = mac_cost(hw.cores[0], table, np.array([0]))
    assert cost.compute_cycles[0, 0] == row_steps * 2 * 4
    assert cost.level_read_bytes["local"][0, 0] == 16 * row_steps + outputs * 4 * 2


_QUARTER = """
name: quarter
word_bytes: 1
parameters:
  local_bytes: {default: 256}
memories:
  rf: {size_bytes: 4, read_bandwidth_bytes_per_cycle: 4, write_bandwidth_bytes_per_cycle: 4,
       read_energy_pj_per_bit: 0.125, write_energy_pj_per_bit: 0.125}
  local: {size_bytes: local_bytes, read_bandwidth_bytes_per_cycle: 64, write_bandwidth_bytes_per_cycle: 64,
          read_energy_pj_per_bit: 0.25, write_energy_pj_per_bit: 0.25}
cores:
  - name: pe
    count: 1
    dataflow: output_stationary
    runs: [conv]
    pe_array:
      - {dim: K, size: 2}
    mac_energy_pj: 1
    memory:
      - {level: rf, operands: [O]}
      - {level: local, operands: [W, I, O]}
bus: {bandwidth_bytes_per_cycle: 16, energy_pj_per_bit: 0.0625}
offchip: {bandwidth_bytes_per_cycle: 8, energy_pj_per_bit: 1}
"""


def test_a_memory_that_holds_no_block_of_outputs_keeps_the_tile_below_it(tmp_path: Path) -> None:
    # 3x3 conv, 8 -> 3 channels, 4x4 -> 2x2: M = 4 rows, N = 3 columns, R = 72; 1-byte words and partial sums. The
    # 4 B output register holds the tile below ``local``: 2 rows x 2 columns over all of R. A block of outputs in
    # ``local`` keeps beside its partial sums its rows' inputs and its columns' weights for those 72 of R: even 2 x 2
    # takes 2*72 + 2*72 + 4 = 292 B, so at 64, 128 and 256 B no block fits and the block is that tile, 2 x 2:
    # weights once per block of rows (2 x 216 B), inputs once per block of columns (2 x two blocks of one output row,
    # each reading 3 rows x 4 pixels x 8 channels: 384 B). 512 B holds 4 x 2 (288 + 144 + 8 = 440 B; 4 x 3 would take
    # 516): weights once, every input row twice. 1 KiB holds the whole output: each once.
    path = tmp_path / "quarter.yaml"
    path.write_text(_QUARTER)
    hw = load_hardware(path, sweep={"local_bytes": [64, 128, 256, 512, 1024]})
    table = op_table(conv_workload(batch=1, channels_in=8, channels_out=3, input_hw=4, kernel=3))
    cost = mac_cost(hw.cores[0], table, np.array([0]))
    assert cost.ext_in_bytes["W"][:, 0].tolist() == [432, 432, 432, 216, 216]
    assert cost.ext_in_bytes["I"][:, 0].tolist() == [384, 384, 384, 256, 128]
    assert cost.ext_write_bytes[:, 0].tolist() == [12] * 5


@pytest.mark.parametrize(
    ("channels", "input_hw", "kept_reduction", "cut_reduction"),
    [
        # 64 -> 64 channels, 56 x 56 outputs: 8 outputs' windows as 2 x 4 touch 4 x 6 = 24 pixels of each of the 64
        # channels of the weight registers' R-tile (576 = 64 x 3 x 3): 1,536 inputs, more than the 768 the input
        # registers hold (64 B in each of the 168 PEs, each input in the 14 PEs of its output-channel axis). At the
        # layer's ratio of unique inputs to window elements (3,364 / (3,136 x 9)) they would be 549 and fit. The
        # registers keep the block's inputs over one step of the array's R, 12. Cut to what they hold, the weight tile
        # spans 768 / (1,536 / 576) = 288 of R (32 channels), where the layer's ratio would cut it to all 576.
        (64, 58, 12, 288),
        # 16 -> 16 channels, 28 x 28 outputs: 24 pixels of each of 16 channels (R-tile 144) are 384 inputs: they fit,
        # and stay over the whole R-tile, which needs no cut
        (16, 30, 144, 144),
    ],
)
def test_a_block_held_in_the_pes_keeps_its_inputs_only_where_their_halo_fits(
    tmp_path: Path, channels: int, input_hw: int, kept_reduction: int, cut_reduction: int
) -> None:
    from traincost.cost.core.candidates import OpsOnCore  # noqa: PLC0415 (the engine's inside, for one order's tiles)
    from traincost.cost.core.orders import HeldBlock, held_block_tiles, held_blocks  # noqa: PLC0415
    from traincost.cost.core.tiles import level_tiles  # noqa: PLC0415

    zigzag = Path(__file__).resolve().parents[1] / "fixtures/hardware/zigzag"
    path = tmp_path / "eyeriss_like.yaml"
    path.write_text(
        hardware_yaml_text(
            zigzag_hardware(zigzag / "hardware/eyeriss_like.yaml", mapping=zigzag / "mapping/default.yaml"), header="test"
        )
    )
    core = load_hardware(path).cores[0]  # rf_64B_A (I), rf_64B_W (W), rf_16B (O) in each PE; K 14 x C 12
    table = op_table(conv_workload(batch=1, channels_in=channels, channels_out=channels, input_hw=input_hw, kernel=3))
    ops = OpsOnCore.of(core, table, np.array([0]), split=None, split_rows=False)
    tiles = level_tiles(core, ops.gemm, ops.precision, band=0)
    assert tiles[2][2][0, 0] == channels * 9  # the weight registers' R-tile: every tap of every channel
    held = HeldBlock(rows=np.array([[8.0]]), columns=np.array([[14.0]]), innermost="rows")
    inputs = held_block_tiles(core, ops.gemm, tiles, held, ops.precision)[1]  # the input registers' tile
    assert inputs[0][0, 0] == 8 and inputs[2][0, 0] == kept_reduction
    (cut,) = [block.weights for block in held_blocks(core, ops.gemm, ops.precision) if block.weights is not None]
    assert cut[2][0, 0] == cut_reduction
