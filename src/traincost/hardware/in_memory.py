"""Energy of the MACs of an in-memory-computing array: ZigZag 3.9.1's model (``ImcArray.get_energy_for_a_layer``).

A macro keeps ``wordline_size`` columns x ``bitline_size`` rows of weights in SRAM cells. One activation of it
multiplies the inputs of the rows an op fills by their weights and adds them along each bitline, in
``activation_bits / bit_serial_bits`` cycles (the inputs enter ``bit_serial_bits`` at a time). Its energy is that of
the gates and converters each cycle drives, counted from a 28 nm cell library (ZigZag's ``TECH_PARAM_28NM``:
capacitances of a NAND2, XOR2, D flip-flop and a bitline per cell at 0.9 V):

* analog: a DAC per filled row, an ``adc_bits`` ADC per bit of each filled column, 1-bit multipliers in every
  column of the filled rows, the charge on every bitline cell of the filled columns, an adder tree over a weight's
  bit places and an accumulator per filled column;
* digital: 1-bit multipliers over the whole macro, an adder tree per column and bit entering together (its gates
  fed by the filled rows; the rest see one input at 0 and switch less), the place-value tree over the bits entering
  together and an accumulator per filled column.

An op activates a macro macs / (rows x columns) times. Its cells are written as its weight memory (the core's
innermost weight level), so their writes are the hierarchy's, not counted here; their reads cost nothing. The
model has no precharge: ZigZag charges one only where a cell group holds more than one weight, which the importer
refuses.
"""

from __future__ import annotations

import math

import numpy as np

from traincost.hardware.spec import Core, InMemoryArray

__all__ = ["activation_pj", "mac_energy_pj", "mapped"]

_VDD_V = 0.9
_ND2_PF = 0.7e-3
_XOR2_PF = _ND2_PF * 1.5
_DFF_PF = _ND2_PF * 3
_CELL_BITLINE_PF = _ND2_PF / 2  # a cell's share of its bitline: half a NAND2
_ADDER_PJ = (3 * _ND2_PF + 2 * _XOR2_PF) * _VDD_V**2  # a 1-bit full adder: 3 NAND2 and 2 XOR2
_ADDER_ONE_INPUT_PJ = 2 * _XOR2_PF * _VDD_V**2  # a full adder with one input at 0
_MULTIPLIER_PJ = 0.5 * _ND2_PF * _VDD_V**2  # a 1-bit multiplier (a NOR, as a NAND2) with its weight held
_REGISTER_PJ = _DFF_PF * _VDD_V**2


def activation_pj(array: InMemoryArray, rows: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """Energy of one activation of a macro (all its bit-serial cycles) with ``rows`` and ``columns`` filled."""
    cycles = array.cycles_per_mac
    weight_bits, serial_bits = array.weight_bits, array.bit_serial_bits
    if array.kind == "analog":
        dac_pj = 50e-3 * serial_bits * _VDD_V**2 if serial_bits != 1 else 0.0
        adc_pj = (100 * array.adc_bits + 1e-3 * 4**array.adc_bits) * _VDD_V**2 / 1000 if array.adc_bits else 0.0
        parts = (
            dac_pj * rows,
            adc_pj * weight_bits * columns,
            _MULTIPLIER_PJ * weight_bits * array.wordline_size * rows,
            _CELL_BITLINE_PF * _VDD_V**2 * weight_bits * columns * array.bitline_size,
        )
        place_inputs, place_bits = weight_bits, array.adc_bits
        accumulator_bits = array.activation_bits + array.adc_bits + weight_bits
    else:
        tree_bits = weight_bits + int(math.log2(array.bitline_size))
        distinct, position = np.unique(rows, return_inverse=True)  # a few fillings: one tree each
        trees = np.array([_adder_tree_pj(weight_bits, filled, array.bitline_size) for filled in distinct])
        parts = (
            _MULTIPLIER_PJ * serial_bits * weight_bits * array.wordline_size * array.bitline_size * np.ones_like(rows),
            trees[position].reshape(np.shape(rows)) * serial_bits * columns,
        )
        place_inputs, place_bits = serial_bits, tree_bits
        accumulator_bits = array.activation_bits + tree_bits
    place_adders = place_bits * (place_inputs - 1) + place_inputs * (math.log2(place_inputs) - 0.5) if place_inputs > 1 else 0
    accumulate = serial_bits != array.activation_bits
    per_cycle = sum(parts) + (_ADDER_PJ * place_adders + (_ADDER_PJ + _REGISTER_PJ) * accumulator_bits * accumulate) * columns
    return per_cycle * cycles


def _adder_tree_pj(bits: int, filled: float, inputs: int) -> float:
    """One adder tree of ``inputs`` inputs of ``bits`` bits with the first ``filled`` of them fed (ZigZag's
    ``get_regular_adder_trees_energy``): the subtrees wholly fed switch fully, the adders where a fed subtree meets
    an idle one switch as with one input at 0."""
    depth = int(math.log2(inputs))
    if filled < 1:
        return 0.0
    if filled >= inputs:
        return (inputs * (bits + 1) - (bits + depth + 1)) * _ADDER_PJ
    full = half = 0.0
    left, base = float(filled), float(inputs)
    while left != 0:
        base /= 2
        level = int(math.log2(base))
        if left <= 1 and base == 1:
            half += bits
            left = 0
        elif left > base:
            full += base * (bits + 1) - (bits + level + 1) + (bits + level)
            left -= base
        elif left < base:
            half += bits + level
        else:
            full += base * (bits + 1) - (bits + level + 1)
            half += bits + level
            left -= base
    return full * _ADDER_PJ + half * _ADDER_ONE_INPUT_PJ


def mapped(core: Core, dims: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The rows and columns of a macro each op fills: per side, the product over its PE axes of the axis's size cut
    to the op's extent in the loop it unrolls (ZigZag's mapped rows and columns)."""
    array = core.in_memory
    assert array is not None
    by_name = {axis.name: axis for axis in core.pe_array}

    def filled(names: tuple[str, ...]) -> np.ndarray:
        out = np.ones_like(next(iter(dims.values())), dtype=np.float64)
        for name in names:
            axis = by_name[name]
            out = out * np.minimum(dims[axis.dim], axis.size[:, None])
        return out

    return filled(array.bitline_axes), filled(array.wordline_axes)


def mac_energy_pj(core: Core, dims: dict[str, np.ndarray], macs: np.ndarray) -> np.ndarray:
    """Energy of the MACs of each op on ``core``'s in-memory array: its macro activations (macs over the rows x
    columns it fills) times each one's energy."""
    assert core.in_memory is not None
    rows, columns = mapped(core, dims)
    return macs / (rows * columns) * activation_pj(core.in_memory, rows, columns)
