"""Point-to-point links between cores, as Stream's accelerator files give them: what a core reads out of a linked
core's top memory crosses the link (its bandwidth, its energy), not the bus; by hand on tiny.yaml; and a Stream
file's links imported as one link per pair of our cores."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from tests.workloads import conv_relu_workload
from traincost.cost import op_table
from traincost.hardware import HardwareError, load_hardware
from traincost.hardware.import_stream import stream_hardware
from traincost.schedule import SchedulePlan, schedule

REPO = Path(__file__).resolve().parents[2]
TINY = REPO / "tests/fixtures/hardware/tiny.yaml"
STREAM = REPO / "tests/fixtures/hardware/stream/hardware"


def _tiny(tmp_path: Path, links: list | None) -> Path:
    data = yaml.safe_load(TINY.read_text())
    if links is not None:
        data["links"] = links
    path = tmp_path / "tiny_links.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_a_read_out_of_a_linked_core_crosses_the_link_by_hand(tmp_path: Path) -> None:
    """conv (PE core) -> relu (vector core): the relu reads y (64 B), resident in the PE core's top memory. Over the
    bus (16 B a cycle, 0.0625 pJ a bit) it takes 4 cycles, within the relu's 16; over a link of 2 B a cycle and 1 pJ a
    bit, 32 cycles (the relu ends at 69 + 32) and 512 pJ, and the bus carries 64 B (z written off chip) instead of
    128. Reading y out of the PE core's memory costs the same either way."""
    table = op_table(conv_relu_workload())
    link = {"between": ["pe", "vector"], "bandwidth_bytes_per_cycle": 2, "energy_pj_per_bit": 1}
    bus, linked = (
        schedule(table, load_hardware(_tiny(tmp_path, links)), SchedulePlan(), per_op=True) for links in (None, [link])
    )
    relu_bus, relu_link = bus.ops.iloc[1], linked.ops.iloc[1]
    assert relu_bus.end_cycles == 69 + 16 and relu_link.end_cycles == 69 + 64 / 2
    assert (relu_bus.bus_traffic_bytes, relu_bus.link_traffic_bytes) == (128, 0)
    assert (relu_link.bus_traffic_bytes, relu_link.link_traffic_bytes) == (64, 64)
    summary_bus, summary_link = bus.summary.iloc[0], linked.summary.iloc[0]
    assert summary_link.energy_links_pj == 64 * 8 * 1 and summary_link.link_bytes == 64
    assert summary_bus.energy_bus_pj - summary_link.energy_bus_pj == 64 * 8 * 0.0625
    assert summary_link.energy_pj - summary_bus.energy_pj == pytest.approx(64 * 8 * (1 - 0.0625))
    assert linked.ops.energy_pj.sum() == pytest.approx(summary_link.energy_pj)


@pytest.mark.parametrize(
    ("links", "words"),
    [
        ([{"between": ["pe", "gpu"], "bandwidth_bytes_per_cycle": 2}], "links[0].between: 'gpu' is not a core"),
        ([{"between": ["pe", "vector"], "bandwidth_bytes_per_cycle": b} for b in (2, 3)], "links[1].between: ['pe', 'vector']"),
        ([{"between": ["pe", "vector"], "bandwidth_bytes_per_cycle": 0}], "links[0].bandwidth_bytes_per_cycle"),
        ([{"between": ["pe", "pe"], "bandwidth_bytes_per_cycle": 2}], "links[0].between"),
    ],
)
def test_a_bad_link_is_one_line_naming_it(tmp_path: Path, links: list, words: str) -> None:
    with pytest.raises(HardwareError, match=re.escape(words)):
        load_hardware(_tiny(tmp_path, links))


def test_a_stream_file_s_links_become_one_link_per_pair_of_our_cores() -> None:
    """tpu_like_quad_core: 4 compute cores meshed by 32-bit links, each linked to the pooling and the SIMD core: 4
    links of 32 bits a cycle to each, 16 B a cycle between our tpu_like core and each; the mesh among the 4
    instances of one core has no counterpart."""
    data = stream_hardware(STREAM / "tpu_like_quad_core.yaml", operand_bits=8)
    links = {frozenset(link["between"]): link["bandwidth_bytes_per_cycle"] for link in data["links"]}
    assert links == {frozenset({"tpu_like", "pooling"}): 16.0, frozenset({"tpu_like", "simd"}): 16.0}
