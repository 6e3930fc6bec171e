"""A fused group runs as a stack of tiles, as Stream cuts it: samples before rows, the fewest tiles that fit but at
least the pipeline's 8, and what the tiles add (the halo read again, weights loaded again), by hand."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.workloads import relu_conv_workload
from traincost.cost import op_table
from traincost.hardware import load_hardware
from traincost.schedule import SchedulePlan
from traincost.schedule.fusion_memory import (
    PIPELINE_TILES,
    GroupTiling,
    OpMemory,
    deciding_cuts,
    held_bytes,
    tile_candidates,
)
from traincost.schedule.scheduler import place_ops, schedule
from traincost.schedule.tile_overhead import TileOverhead

REPO = Path(__file__).resolve().parents[2]
TINY = REPO / "tests/fixtures/hardware/tiny.yaml"


def test_samples_are_cut_before_rows_and_never_past_stream_s_limit() -> None:
    assert tile_candidates(8, 4) == ((1, 1), (2, 1), (4, 1), (8, 1), (8, 2), (8, 4))
    assert tile_candidates(1, 6) == ((1, 1), (1, 2), (1, 3), (1, 6))
    assert max(b * r for b, r in tile_candidates(64, 112)) <= 1024


def _relu_conv():
    """relu (vector core) -> 3x3 convolution (PE core), 2 samples of 4 channels, 6x6 in, 4x4 out, 1-byte words."""
    table = op_table(relu_conv_workload(batch=2, channels=4, input_hw=6, kernel=3))
    hardware = load_hardware(TINY)
    return table, hardware, GroupTiling.of(table, hardware, place_ops(table, hardware), np.zeros(2, dtype=np.int64))


def test_what_a_fused_relu_and_convolution_hold_by_hand() -> None:
    table, hardware, tiling = _relu_conv()
    memory = OpMemory.of(table, hardware)
    # the relu: its output a (2 x 4 x 6 x 6 = 288 B) twice; the convolution: w (144 B) whole, y (128 B) twice, and
    # where rows are cut the 2 rows of a (24 B per row of a sample) its next row tile's windows read again
    assert memory.fixed.tolist() == [0, 144] and memory.tiled.tolist() == [576, 256]
    assert memory.halo_row_bytes.tolist() == [0, 48] and memory.batch.tolist() == [2, 2]
    # cut along the 2 samples, then the convolution's 4 output rows (the smaller of the members' rows)
    assert tiling.cuts == (((1, 1), (2, 1), (2, 2), (2, 4)),)
    pe, vector = hardware.core_for("conv"), hardware.core_for("eltwise")
    held = tiling.held  # (candidates, cores) of its one group
    assert held[:, vector].tolist() == [576, 288, 144, 72]
    assert held[:, pe].tolist() == [144 + 256, 144 + 128, 144 + 64 + 48, 144 + 32 + 48]


def test_the_fewest_tiles_that_fit_at_least_the_pipeline_floor() -> None:
    _, hardware, tiling = _relu_conv()
    pe, vector = hardware.core_for("conv"), hardware.core_for("eltwise")

    def choose(pe_bytes: float, vector_bytes: float) -> tuple[bool, int, int]:
        capacity = np.zeros((1, 2))
        capacity[0, pe], capacity[0, vector] = pe_bytes, vector_bytes
        fits, tiles, rows = tiling.choose(capacity)
        return bool(fits[0, 0]), int(tiles[0, 0]), int(rows[0, 0])

    # 8 tiles at most here, so the floor takes the finest cut however roomy the memories
    assert choose(1e9, 1e9) == (True, 8, 4)
    assert choose(224, 72) == (True, 8, 4)
    assert choose(223, 72) == (False, 1, 1)  # one byte short of the convolution's share
    assert choose(224, 71) == (False, 1, 1)


def test_the_cuts_that_decide_fitting_decide_it_as_every_cut_does() -> None:
    rng = np.random.default_rng(0)
    for _ in range(300):
        batch, rows = int(rng.choice([1, 2, 3, 8, 16])), int(rng.choice([1, 4, 7, 12, 32]))
        fixed, tiled, halo = rng.uniform(0, 100, 3)
        capacity = rng.uniform(0, 300)
        cuts = tile_candidates(batch, rows)
        floor = min(PIPELINE_TILES, max(b * r for b, r in cuts))
        every = any(held_bytes(fixed, tiled, halo, c) <= capacity for c in cuts if c[0] * c[1] >= floor)
        deciding = any(held_bytes(fixed, tiled, halo, c) <= capacity for c in deciding_cuts(batch, rows))
        assert every == deciding


def test_tiles_read_the_halo_again_and_reload_weights_that_do_not_stay(tmp_path: Path) -> None:
    table, hardware, _ = _relu_conv()
    conv = 1
    tiles = np.array([[8.0, 8.0]])
    overhead = TileOverhead.of(
        table,
        hardware,
        core_of=place_ops(table, hardware),
        split=np.array([False, True]),
        op_tiles=tiles,
        op_row_tiles=np.array([[4, 4]]),
    )
    # 4 row tiles of 1 output row read 3 input rows each, 12 where the whole op reads 6: a (288 B) once more
    assert overhead.halo_bytes[0].tolist() == [0, 288]
    # w (144 B) does not stay in the 64 B register file: 7 more loads, at 1000 B per cycle from the local memory
    assert overhead.reload_bytes[0].tolist() == [0, 7 * 144]
    assert overhead.cycles[0, conv] == pytest.approx(7 * 144 / 1000)
    local_pj, rf_pj = (288 + 7 * 144) * 8 * 0.25, 7 * 144 * 8 * 0.125
    assert overhead.by_memory["local"][0].sum() == pytest.approx(local_pj)
    assert overhead.by_memory["rf"][0].sum() == pytest.approx(rf_pj)
    assert overhead.energy_pj[0].tolist() == pytest.approx([0, local_pj + rf_pj])


def test_a_scheduled_group_reports_its_tiles_and_its_energy_adds_up() -> None:
    table, hardware, _ = _relu_conv()
    fused = schedule(table, hardware, SchedulePlan(fused=((0, 1),)), per_op=True)
    assert bool(fused.summary["fusion_fits"].iloc[0])
    assert fused.ops["tiles"].tolist() == [8, 8]
    assert fused.ops["halo_bytes"].tolist() == [0, 288] and fused.ops["reload_bytes"].tolist() == [0, 7 * 144]
    summary = fused.summary.iloc[0]
    assert fused.ops["energy_pj"].sum() == pytest.approx(summary.energy_pj)
    parts = [c for c in fused.summary.columns if c.startswith("energy_") and c not in ("energy_pj", "energy_forward_pj")]
    assert sum(summary[c] for c in parts) == pytest.approx(summary.energy_pj)


def test_the_rows_rule_cuts_rows_only_holds_one_tile_and_adds_nothing() -> None:
    table, hardware, _ = _relu_conv()
    rows = GroupTiling.of(table, hardware, place_ops(table, hardware), np.zeros(2, dtype=np.int64), tiling="rows")
    assert rows.cuts == (((1, 4),),)
    pe, vector = hardware.core_for("conv"), hardware.core_for("eltwise")
    assert rows.held[0, vector] == 288 / 4 and rows.held[0, pe] == 144 + 128 / 4
    fused = schedule(table, hardware, SchedulePlan(fused=((0, 1),), fusion_tiling="rows"), per_op=True)
    assert bool(fused.summary["fusion_fits"].iloc[0]) and fused.ops["tiles"].tolist() == [4, 4]
    assert fused.ops["halo_bytes"].tolist() == [0, 0] and fused.ops["reload_bytes"].tolist() == [0, 0]


def test_a_fused_member_waits_for_the_weights_it_holds_before_its_first_tile() -> None:
    table, hardware, _ = _relu_conv()
    fused = schedule(table, hardware, SchedulePlan(fused=((0, 1),)), per_op=True).ops
    alone = schedule(table, hardware, SchedulePlan(), per_op=True).ops
    relu, conv = fused.iloc[0], fused.iloc[1]
    # the conv holds w whole: 144 B over the 8 B-per-cycle off-chip link (the 16 B-per-cycle bus is faster) before
    # its first tile; the relu holds nothing, and unfused nobody waits
    assert fused["fill_cycles"].tolist() == [0, 144 / 8] and alone["fill_cycles"].tolist() == [0, 0]
    # the conv starts on the relu's first tile and runs its fill, then its tiles; its traffic streams throughout
    assert conv.start_cycles == pytest.approx((relu.end_cycles - relu.start_cycles) / relu.tiles)
    traffic_cycles = max(conv.offchip_traffic_bytes / 8, conv.bus_traffic_bytes / 16)
    assert conv.end_cycles - conv.start_cycles == pytest.approx(max(144 / 8 + conv.latency_cycles, traffic_cycles))
