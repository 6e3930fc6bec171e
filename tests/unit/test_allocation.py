"""The per-op allocation: a MAC op takes every instance of its core or one, whichever finishes it first."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.workloads import conv_workload, twin_convs_workload
from traincost.cost import op_table
from traincost.errors import ConfigError
from traincost.hardware import load_hardware
from traincost.schedule import SchedulePlan
from traincost.schedule.scheduler import schedule

TINY = Path(__file__).resolve().parents[2] / "tests/fixtures/hardware/tiny.yaml"


@pytest.fixture
def two_pe_cores(tmp_path: Path):
    """The tiny template with two instances of its PE core (2 output channels x 2 input channels each)."""
    data = yaml.safe_load(TINY.read_text())
    data["cores"][0]["count"] = 2
    path = tmp_path / "tiny_two.yaml"
    path.write_text(yaml.safe_dump(data))
    return load_hardware(path)


def _both(table, hardware):
    split = schedule(table, hardware, SchedulePlan(allocation="split"), per_op=True)
    chosen = schedule(table, hardware, SchedulePlan(allocation="per_op"), per_op=True)
    return split, chosen


def test_convolutions_that_a_split_does_not_speed_up_run_side_by_side(two_pe_cores) -> None:
    # 2 output channels in one output row: split over 2 instances (by channels: one row has no rows to split), each
    # share fills half of an instance's 2 channels and takes as long as the whole op on one instance; so each takes
    # one instance, and the two run at once
    table = op_table(twin_convs_workload(channels_out=2, rows=1))
    split, chosen = _both(table, two_pe_cores)
    assert chosen.ops["one_instance"].tolist() == [True, True]
    assert chosen.ops["start_cycles"].tolist() == [0, 0]
    assert split.ops["start_cycles"].iloc[1] == split.ops["end_cycles"].iloc[0]  # split: one after the other
    assert chosen.summary["latency_cycles"].iloc[0] < split.summary["latency_cycles"].iloc[0]
    # and the input is not multicast to a second instance's memory
    assert chosen.summary["energy_pj"].iloc[0] < split.summary["energy_pj"].iloc[0]
    assert chosen.ops["energy_pj"].sum() == pytest.approx(chosen.summary["energy_pj"].iloc[0])
    # by when each op finishes alone, greedily, the split is a little sooner (its shares fill less): both stay split
    soonest = schedule(table, two_pe_cores, SchedulePlan(allocation="per_op", mapping_objective="latency"), per_op=True)
    assert soonest.ops["one_instance"].tolist() == [False, False]


def test_a_convolution_that_a_split_halves_stays_split(two_pe_cores) -> None:
    # 4 output channels: on one instance they take two passes of its 2 channels, split they take one on each
    table = op_table(conv_workload(batch=1, channels_in=2, channels_out=4, input_hw=4))
    split, chosen = _both(table, two_pe_cores)
    assert chosen.ops["one_instance"].tolist() == [False]
    columns = ["latency_cycles", "energy_pj", "offchip_bytes", "bus_bytes"]
    assert chosen.summary[columns].iloc[0].tolist() == split.summary[columns].iloc[0].tolist()


def test_an_allocation_that_is_not_one_is_refused() -> None:
    with pytest.raises(ConfigError, match="allocation 'greedy'"):
        SchedulePlan(allocation="greedy")
