"""In-memory-computing arrays: ZigZag's energy model worked by hand, its use by the cost engine, and bad input."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import yaml

from tests.workloads import conv_relu_workload, conv_workload
from traincost.cost import mac_cost, op_table
from traincost.cost.core import ExternalPath
from traincost.hardware import HardwareError, load_hardware
from traincost.hardware.import_zigzag import hardware_yaml_text, zigzag_hardware
from traincost.hardware.in_memory import activation_pj
from traincost.hardware.spec import InMemoryArray

TINY = Path(__file__).resolve().parents[1] / "fixtures/hardware/tiny.yaml"
_V2 = 0.9**2  # ZigZag's 28 nm supply, squared
_NAND2_PJ, _XOR2_PJ = 0.7e-3 * _V2, 1.05e-3 * _V2  # a gate's capacitance switched at that supply


def _array(**change: object) -> InMemoryArray:
    fields = {
        "kind": "digital",
        "wordline_axes": (),
        "bitline_axes": (),
        "wordline_size": 1,
        "bitline_size": 2,
        "activation_bits": 1,
        "weight_bits": 1,
        "bit_serial_bits": 1,
        "adc_bits": 0,
    }
    return InMemoryArray(**(fields | change))


def test_a_two_row_digital_column_by_hand() -> None:
    # one column of two 1-bit weights, 1-bit inputs: two 1-bit multipliers (a NOR, half switched: its weight is
    # held) and an adder tree of one full adder (3 NAND2 + 2 XOR2); no place values, no accumulator (1 bit enters)
    multipliers = 2 * 0.5 * _NAND2_PJ
    both_rows = activation_pj(_array(), np.array(2.0), np.array(1.0))
    assert both_rows == pytest.approx(multipliers + 3 * _NAND2_PJ + 2 * _XOR2_PJ)
    # one row fed: the adder sees one input at 0 and switches only its two XOR2s; the multipliers all switch
    one_row = activation_pj(_array(), np.array(1.0), np.array(1.0))
    assert one_row == pytest.approx(multipliers + 2 * _XOR2_PJ)


def test_an_analog_macro_at_full_use_costs_what_zigzag_charges() -> None:
    # ZigZag 3.9.1: ImcArray(analog, bit_serial_precision 2, input_precision [8, 8], adc_resolution 8, 128 x 64)
    # .get_peak_energy_single_cycle(), summed, x 4 cycles (8-bit inputs, 2 bits a cycle)
    array = _array(
        kind="analog", wordline_size=128, bitline_size=64, activation_bits=8, weight_bits=8, bit_serial_bits=2, adc_bits=8
    )
    assert activation_pj(array, np.array(64.0), np.array(128.0)) == pytest.approx(3236.0966553600006, rel=1e-12)
    # every part grows with the rows or the columns filled, and an emptier macro costs more per MAC it computes
    rows, columns = np.meshgrid([1.0, 16.0, 64.0], [1.0, 32.0, 128.0], indexing="ij")
    energy = activation_pj(array, rows, columns)
    assert np.all(np.diff(energy, axis=0) > 0) and np.all(np.diff(energy, axis=1) > 0)
    per_mac = energy / (rows * columns)
    assert np.all(np.diff(per_mac, axis=0) < 0) and np.all(np.diff(per_mac, axis=1) < 0)


def _in_memory_tiny(
    tmp_path: Path, *, wordline_dim: str = "K", hardware: Callable[[dict], None] | None = None, **change: object
) -> object:
    """tiny.yaml's 2 x 2 array (K along the wordlines, C along the bitlines) computing in its weight memory, the file
    then changed by ``hardware``."""
    data = yaml.safe_load(TINY.read_text())
    core = data["cores"][0]
    core["pe_array"] = [{"name": "cols", "dim": wordline_dim, "size": 2}, {"name": "rows", "dim": "C", "size": 2}]
    core["in_memory"] = {
        "kind": "digital",
        "wordline_axes": ["cols"],
        "bitline_axes": ["rows"],
        "wordline_size": 2,
        "bitline_size": 2,
        "activation_bits": 8,
        "weight_bits": 8,
        "bit_serial_bits": 2,
    } | change
    if hardware is not None:
        hardware(data)
    path = tmp_path / "in_memory.yaml"
    path.write_text(yaml.safe_dump(data))
    return load_hardware(path)


def test_the_engine_charges_the_macro_activations_and_the_bit_serial_cycles(tmp_path: Path) -> None:
    hw = _in_memory_tiny(tmp_path)
    table = op_table(conv_relu_workload(relu=False))  # 1x1 conv, K = C = 4, 16 outputs: 256 MACs
    cost = mac_cost(hw.cores[0], table, np.array([0]))
    # 64 steps of the 2 x 2 array (the hand-computed conv of test_core_cost), 4 cycles each: 8-bit inputs, 2 a cycle
    assert cost.compute_cycles[0, 0] == 64 * 4
    assert cost.utilization[0, 0] == 1.0  # every PE busy at every step
    # 256 MACs fill both rows and columns: 64 activations of the macro
    assert cost.energy_mac_pj[0, 0] == pytest.approx(64 * activation_pj(hw.cores[0].in_memory, np.array(2.0), np.array(2.0)))
    plain = load_hardware(TINY)
    flat = mac_cost(plain.cores[0], table, np.array([0]))
    for memory, pj in flat.energy_level_pj.items():  # the memories move what they moved
        assert cost.energy_level_pj[memory][0, 0] == pytest.approx(pj[0, 0])


def test_an_op_that_fills_half_the_rows_activates_the_macro_twice_as_often(tmp_path: Path) -> None:
    hw = _in_memory_tiny(tmp_path)
    core = hw.cores[0]
    table = op_table(conv_workload(batch=1, channels_in=1, channels_out=4, input_hw=4))  # C = 1: one row of two
    cost = mac_cost(core, table, np.array([0]))
    assert table.macs[0] == 64
    assert cost.energy_mac_pj[0, 0] == pytest.approx(64 / 2 * activation_pj(core.in_memory, np.array(1.0), np.array(2.0)))


def test_the_array_computes_only_between_writes_of_its_cells(tmp_path: Path) -> None:
    # tiny's conv (K = C = 4, 16 outputs: 256 MACs) takes 64 steps of 4 cycles; its 16 weights are written into the
    # cells (rf) once. A cell holds the weight the array computes with, so the writes wait for the compute (ZigZag's
    # cycles on aimc and dimc: compute + the weights' off-chip bytes over the link): 256 + 16 / 0.25 B a cycle + the
    # array's depth (2 + 2) = 324 cycles.
    table = op_table(conv_relu_workload(relu=False))

    def slow_cells(data: dict) -> None:
        data["memories"]["rf"].update(write_bandwidth_bytes_per_cycle=0.25)

    def plain(data: dict) -> None:
        slow_cells(data)
        del data["cores"][0]["in_memory"]

    slow = _in_memory_tiny(tmp_path, hardware=slow_cells)
    assert mac_cost(slow.cores[0], table, np.array([0])).latency_cycles[0, 0] == 256 + 64 + 4
    # the same array without computing in its weight memory (a step a cycle) writes the register beside the compute:
    # max(64, 16 / 0.25) + 4 + 1 cycle for the first tile
    flat = _in_memory_tiny(tmp_path, hardware=plain)
    assert mac_cost(flat.cores[0], table, np.array([0])).latency_cycles[0, 0] == 64 + 4 + 1

    # cells that are the weights' only memory take them from outside at the link's pace, 0.5 B a cycle: 256 + 16 / 0.5
    # + 4 = 292 cycles (the op's 144 bytes over the link take 288)
    def from_outside(data: dict) -> None:
        data["parameters"]["offchip_bandwidth"]["default"] = 0.5
        data["cores"][0]["memory"][1]["operands"] = ["I", "O"]

    outside = _in_memory_tiny(tmp_path, hardware=from_outside)
    core = outside.cores[0]
    cost = mac_cost(core, table, np.array([0]), external=ExternalPath.of(outside, core), objective="latency")
    assert cost.ext_in_bytes["W"][0, 0] == 16
    assert cost.latency_cycles[0, 0] == 256 + 32 + 4


@pytest.mark.parametrize(("tiling", "blocks", "inputs"), [("any", 19, 64 * 66 * 64), ("divisors", 28, 286720)])
def test_divisor_tiles_rewrite_the_cells_once_per_block_of_rows_as_zigzag_does(
    tmp_path: Path, tiling: str, blocks: int, inputs: int
) -> None:
    # ZigZag's aimc (a 64 x 64 macro, K along the wordlines and C along the bitlines, a 32 KB SRAM for the inputs and
    # partial sums) on ResNet-18's layer1.0.conv1 (3x3, 64 -> 64, 56 x 56 outputs): the cells hold one tap's 4,096
    # weights, so the 36,864 B of weights come from off chip once per block of rows the SRAM keeps (inputs 64 B and
    # partial sums 128 B a row). 165 rows fit: 19 blocks of 3,136 rows. In blocks that divide the rows, 112
    # (3,136 = 2^6 x 7^2): 28, ZigZag's ``W: cells[OX2 OY7 OX2 OX2 OY2] | dram[FY3 FX3 OY2 OX7 OY2]``, and its cycles,
    # 112,896 of compute + 28 x 36,864 B over the 8 B/cycle link = 241,920 (ZigZag: 243,095). Each block of
    # outputs reads the 58 x 58 input's pixels its windows touch: 14 x 8 outputs read 16 x 10, 28 x 160 = 4,480 of
    # each channel, ZigZag's 286,720 B. With our own tiles the outputs' block above the core takes 168 rows and more
    # (12 x 14: 5 blocks of 14, the last 10, input rows by 4 of 16 columns, 66 x 64 a channel).
    path = tmp_path / "aimc.yaml"
    zigzag = Path(__file__).resolve().parents[1] / "fixtures/hardware/zigzag/hardware/aimc.yaml"
    path.write_text(hardware_yaml_text(zigzag_hardware(zigzag), header="test"))
    hw = load_hardware(path)
    core = replace(hw.cores[0], tiling=tiling)
    table = op_table(conv_workload(batch=1, channels_in=64, channels_out=64, input_hw=58, kernel=3))
    cost = mac_cost(core, table, np.array([0]), external=ExternalPath.of(hw, core), objective="energy")
    assert cost.ext_in_bytes["W"][0, 0] == blocks * 36864
    assert cost.ext_in_bytes["I"][0, 0] == pytest.approx(inputs)
    assert cost.compute_cycles[0, 0] == 112896
    assert cost.latency_cycles[0, 0] == pytest.approx(112896 + blocks * 36864 / 8, rel=1e-3)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"wordline_axes": ["nope"]}, "in_memory.wordline_axes: 'nope' is not an axis"),
        ({"bitline_axes": ["cols"]}, "axis 'cols' is on both"),
        ({"bit_serial_bits": 3}, "bit_serial_bits: 3 does not divide activation_bits 8"),
        ({"bitline_size": 3}, "bitline_size: 3; expected a power of 2 on a digital array"),
        ({"wordline_size": 1}, "wordline_axes: unroll 2 PEs, more than wordline_size 1"),
        ({"kind": "optical"}, "kind"),
    ],
)
def test_a_bad_in_memory_array_is_one_clear_error(tmp_path: Path, change: dict, message: str) -> None:
    with pytest.raises(HardwareError, match=message.replace("(", r"\(")):
        _in_memory_tiny(tmp_path, **change)


def test_an_in_memory_array_needs_a_weight_memory_to_compute_in(tmp_path: Path) -> None:
    def no_weight_memory(data: dict) -> None:
        data["cores"][0]["memory"] = [{"level": "local", "operands": ["I", "O"]}]

    with pytest.raises(HardwareError, match=r"cores\[0\]\.in_memory: the array computes in its weight memory"):
        _in_memory_tiny(tmp_path, hardware=no_weight_memory)


def test_outputs_along_the_wordlines_would_need_a_diagonal_mapping(tmp_path: Path) -> None:
    with pytest.raises(HardwareError, match="'cols' unrolls OX, which weights do not depend on"):
        _in_memory_tiny(tmp_path, wordline_dim="OX", kind="analog", bit_serial_bits=1, adc_bits=4)
