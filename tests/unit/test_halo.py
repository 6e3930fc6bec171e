"""The input halo of a convolution's blocks of outputs: counted by hand and against every block's windows one by one."""

from __future__ import annotations

import numpy as np
import pytest

from tests.workloads import conv_workload
from traincost.cost.halo import Halo, block_spans, halo_factors
from traincost.cost.optable import op_table, window_span


def _touched_by_blocks(stride: int, outputs: int, dilation: int, taps: int, block: int) -> int:
    """The input positions each block of ``block`` consecutive outputs touches, summed over the blocks."""
    return sum(
        len({stride * o + dilation * f for o in range(start, min(start + block, outputs)) for f in range(taps)})
        for start in range(0, outputs, block)
    )


@pytest.mark.parametrize(
    ("stride", "outputs", "dilation", "taps"), [(1, 8, 1, 3), (2, 7, 1, 3), (2, 9, 1, 1), (1, 5, 3, 2), (3, 6, 2, 4)]
)
def test_blocks_of_outputs_read_what_their_windows_touch(stride: int, outputs: int, dilation: int, taps: int) -> None:
    spans = block_spans(stride, outputs, dilation, taps)
    assert spans[outputs] == window_span(stride, outputs, dilation, taps)  # one block reads each position once
    for block in range(1, outputs + 1):
        assert spans[block] == _touched_by_blocks(stride, outputs, dilation, taps, block), block


def test_a_3x3_window_over_8_outputs_in_blocks_by_hand() -> None:
    # 8 outputs of a 3-tap window read 10 positions; in blocks of 4, 2 x 6 = 12; of 3 (the last 2), 5 + 5 + 4 = 14;
    # one at a time, 8 x 3 = 24
    assert block_spans(1, 8, 1, 3)[[8, 4, 3, 1]].tolist() == [10, 12, 14, 24]


def test_a_block_takes_the_shape_whose_windows_read_the_fewest_pixels() -> None:
    # 8 x 8 outputs of a 3 x 3 window read 10 x 10 pixels. Blocks of 16 outputs: 4 x 4, each reading 6 x 6 (144,
    # against 2 x 8: 4 x 2 blocks of 4 x 10 = 160); of 8: 2 x 4 (4 x 2 blocks of 4 x 6 = 192; 1 x 8 reads 8 x 3 x 10
    # = 240); of all 64, the image once
    factors = halo_factors((8, 3, 1, 1), (8, 3, 1, 1))
    assert factors[[64, 16, 8]] * 100 == pytest.approx([100, 144, 192])
    assert np.all(np.diff(factors[1:]) <= 1e-12)  # more outputs a block never read more


def test_zigzags_aimc_blocks_of_resnet18_layer1_read_its_pixel_count() -> None:
    # ZigZag's SALSA on aimc cuts 56 x 56 outputs of a 3 x 3 window into 28 blocks of 14 x 8 and moves 28 x 16 x 10
    # = 4,480 pixels of each channel, where the windows touch 58 x 58 = 3,364
    assert halo_factors((56, 3, 1, 1), (56, 3, 1, 1))[112] * 58 * 58 == pytest.approx(4480)


def test_windows_that_do_not_overlap_read_no_halo() -> None:
    # a 1 x 1 window of stride 2 (a ResNet downsample) and a 2 x 2 one of stride 2 (a patch embedding): each pixel
    # belongs to one window at most, whatever the blocks
    assert halo_factors((28, 1, 2, 1), (28, 1, 2, 1)) == pytest.approx(1.0)
    assert halo_factors((14, 2, 2, 1), (14, 2, 2, 1)) == pytest.approx(1.0)


def test_a_row_of_outputs_is_cut_into_runs() -> None:
    # a 1-D convolution (one row of 100 outputs, 5 taps): blocks of 10 read 10 x 14 = 140 of the 104 positions
    factors = halo_factors((1, 1, 1, 1), (100, 5, 1, 1))
    assert factors[10] * 104 == pytest.approx(140)


@pytest.mark.parametrize(("kind", "axis"), [("conv", 0), ("conv_dgrad", 0), ("conv_wgrad", 2), ("gemm", None)])
def test_each_pass_of_a_convolution_cuts_its_output_pixels_into_the_blocks(kind: str, axis: int | None) -> None:
    # a 3 x 3 conv over 10 x 10 pixels (8 x 8 outputs): the forward pass and its data gradient cut their rows M
    # (B·OY·OX) into blocks, the weight gradient its reduction R (B·OY·OX); blocks of 16 outputs read 1.44 times
    # the pixels; a GEMM reads no halo
    workload = conv_workload(batch=1, channels_in=2, channels_out=2, input_hw=10, kernel=3)
    workload.ops["kind"] = kind
    halo = Halo.of(op_table(workload), np.array([0]))
    for cut in (0, 2):
        tile = tuple(np.array([[16.0 if a == cut else 64.0]]) for a in range(3))
        np.testing.assert_allclose(halo.factor(tile), 1.44 if cut == axis else 1.0, err_msg=str(cut))


def test_a_strided_data_gradient_reads_its_transposed_windows() -> None:
    # a 3 x 3 stride-2 conv over 17 x 17 pixels (8 x 8 outputs): its data gradient's windows over dY are
    # ceil(2 / 2) + 1 = 2 taps a side, stride 1: blocks of 4 x 4 read 5 x 5 of the 9 x 9 positions; the forward
    # pass's blocks read 9 x 9 of the 17 x 17 pixels
    workload = conv_workload(batch=1, channels_in=2, channels_out=2, input_hw=17, kernel=3, stride=2)
    tile = (np.array([[16.0]]), np.array([[2.0]]), np.array([[18.0]]))
    assert Halo.of(op_table(workload), np.array([0])).factor(tile)[0, 0] == pytest.approx(4 * 81 / 289)
    workload.ops["kind"] = "conv_dgrad"
    assert Halo.of(op_table(workload), np.array([0])).factor(tile)[0, 0] == pytest.approx(4 * 25 / 81)
