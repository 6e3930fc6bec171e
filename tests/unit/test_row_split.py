"""A tensor-parallel convolution split over its output rows, as Stream 2.1.1 splits one across cores, by hand: each
core holds every weight and reads its rows' inputs with their halo; the scheduler takes the row split where it
scores better than the output-channel split."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from tests.workloads import conv_workload
from traincost.cost import op_table
from traincost.cost.core import ExternalPath, mac_cost
from traincost.hardware import load_hardware
from traincost.schedule import SchedulePlan, schedule

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def four_cores(tmp_path: Path):
    """tiny.yaml with four PE cores (each a 2 x 2 array, K by C, 1-byte words)."""
    data = yaml.safe_load((REPO / "tests/fixtures/hardware/tiny.yaml").read_text())
    data["cores"][0]["count"] = 4
    path = tmp_path / "tiny4.yaml"
    path.write_text(yaml.safe_dump(data))
    return load_hardware(path)


def test_a_row_share_holds_every_weight_and_reads_its_rows_with_their_halo(four_cores) -> None:
    """2 -> 2 channels, 3 x 3 windows over 10 x 10: 8 x 8 outputs. By channels each of the 4 cores takes ceil(2/4) =
    1 output channel (2 cores busy, half of each K axis idle): 1 x 2 x 64 x 9 steps of its 2 x 2 array = 576 cycles,
    9 x 2 = 18 weights, all 200 inputs, 64 outputs. By rows each takes 2 of the 8 output rows: 2 x 8 x 9 = 144
    steps, all 36 weights, the 4 input rows its windows touch (10 wide, 2 channels: 80 of 200) and 32 outputs."""
    table = op_table(conv_workload(batch=1, channels_in=2, channels_out=2, input_hw=10, kernel=3))
    core = four_cores.cores[0]
    costs = {
        rows: mac_cost(core, table, np.array([0]), split=core.count, split_rows=rows, external=ExternalPath.of(four_cores, core))
        for rows in (False, True)
    }
    by_channels, by_rows = costs[False], costs[True]
    assert by_channels.compute_cycles.item() == 576 and by_rows.compute_cycles.item() == 144
    assert by_channels.core_shares.item() == 2 and by_rows.core_shares.item() == 4
    assert {k: v.item() for k, v in by_channels.ext_in_bytes.items()} == {"W": 18, "I": 200, "O": 0}
    assert {k: v.item() for k, v in by_rows.ext_in_bytes.items()} == {"W": 36, "I": 80, "O": 0}
    assert by_channels.ext_write_bytes.item() == 64 and by_rows.ext_write_bytes.item() == 32


def test_the_scheduler_splits_rows_where_they_score_better_and_fetches_the_weights_once(four_cores) -> None:
    table = op_table(conv_workload(batch=1, channels_in=2, channels_out=2, input_hw=10, kernel=3))
    op = schedule(table, four_cores, SchedulePlan.from_mode("pipeline_tensor"), per_op=True).ops.iloc[0]
    # every weight fetched once for the 4 cores (36 B), each core's input rows (4 x 80 B: the halo rows read by two
    # cores each), the outputs (4 x 32 B)
    assert bool(op.rows_split) and op.offchip_traffic_bytes == 36 + 4 * 80 + 4 * 32
    one_core = schedule(table, four_cores, SchedulePlan.from_mode("pipeline"), per_op=True).ops.iloc[0]
    assert not bool(one_core.rows_split) and op.latency_cycles < one_core.latency_cycles / 3


def test_an_op_of_one_output_row_keeps_its_channel_split(four_cores) -> None:
    one_row = op_table(conv_workload(batch=1, channels_in=2, channels_out=8, input_hw=3, kernel=3))  # 1 x 1 outputs
    assert not schedule(one_row, four_cores, SchedulePlan.from_mode("pipeline_tensor"), per_op=True).ops.rows_split.any()
