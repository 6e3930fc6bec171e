"""One memory model for fusion: the solver admits groups, and the scheduler fuses them, by the same rule."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from tests.workloads import conv_relu_workload
from traincost.cli.arguments import resident_share
from traincost.cost import op_table
from traincost.cost.optable import MAC_KINDS
from traincost.hardware import load_hardware
from traincost.optimize.fusion import FusionProblem, solve_fusion
from traincost.plots.fusion import _fit_labels, _overflow_note
from traincost.schedule import SchedulePlan
from traincost.schedule.fusion_memory import (
    GroupTiling,
    OpMemory,
    core_capacity_bytes,
    group_fits,
    groups_fit,
    held_bytes,
    tile_candidates,
)
from traincost.schedule.plan import DEFAULT_RESIDENT_FRACTION
from traincost.schedule.scheduler import place_ops, schedule
from traincost.workflow import Plan
from traincost.workload import STEP_PHASES

REPO = Path(__file__).resolve().parents[2]
EDGE_TPU = REPO / "config/hardware/edge_tpu.yaml"
TINY = REPO / "tests/fixtures/hardware/tiny.yaml"


def _group_bytes(table, hardware, members: np.ndarray) -> float:
    """What a group of ``members`` (its samples cut one by one, rows not cut) keeps on chip: weights and accumulated
    outputs whole, output tiles twice, over its samples."""
    memory = OpMemory.of(table, hardware)
    batch = int(np.gcd.reduce(memory.batch[members]))
    return float(memory.fixed[members].sum() + memory.tiled[members].sum() / batch)


def test_solver_groups_fit_and_an_oversized_group_is_reported_by_both(chain) -> None:
    table = op_table(chain("resnet18_cifar", 1, "adam").workload)
    hardware = load_hardware(EDGE_TPU)
    problem = FusionProblem.build(table, hardware)
    # the solver's memory facts are the shared model's
    memory = OpMemory.of(table, hardware)
    np.testing.assert_array_equal(problem.fixed_bytes, memory.fixed)
    np.testing.assert_array_equal(problem.tiled_bytes, memory.tiled)
    np.testing.assert_array_equal(problem.capacity_bytes, core_capacity_bytes(hardware, resident_fraction=0.5)[0])
    # by hand, the first convolution: its weights whole, its output tile twice (double-buffered)
    conv = int(np.flatnonzero(np.isin(table.kind, MAC_KINDS))[0])
    out_elems = sum(table.tensor_elems[t] for t in table.outputs[conv])
    assert problem.fixed_bytes[conv] == table.s_elems[conv] * hardware.word_bytes
    assert problem.tiled_bytes[conv] == 2 * out_elems * hardware.word_bytes
    alone = GroupTiling.of(table, hardware, place_ops(table, hardware), np.where(np.arange(len(table)) == conv, 0, -1))
    assert alone.cuts[0][-1] == (1, max(1, table.dims["OY"][conv]))  # batch 1: its rows one by one at the finest

    result = solve_fusion(problem, max_length=3, time_limit_s=60)
    solved = [[int(table.op[i]) for i in members] for members in result.subgraphs if len(members) > 1]
    fits = schedule(table, hardware, SchedulePlan.from_mode("pipeline_tensor", fused=tuple(map(tuple, solved)))).summary
    assert fits["fusion_fits"].all()  # every group the solver chose fits in the scheduler's eyes too

    # one group of every op placed on the MAC core overflows it, in both models
    core_of = place_ops(table, hardware)
    mac_core = int(core_of[conv])
    members = np.flatnonzero(core_of == mac_core)
    assert _group_bytes(table, hardware, members) > problem.capacity_bytes[mac_core]
    group_of = np.where(core_of == mac_core, 0, -1)
    assert not groups_fit(table, hardware, core_of, group_of, resident_fraction=0.5).any()
    plan = SchedulePlan.from_mode("pipeline_tensor", fused=(tuple(int(op) for op in table.op[members]),))
    summary = schedule(table, hardware, plan).summary
    assert not summary["fusion_fits"].any()
    assert np.isfinite(summary["latency_cycles"]).all()  # still costed (as not fused), and reported as not fitting
    # no fusion: nothing to overflow
    assert groups_fit(table, hardware, core_of, np.full(len(table), -1), resident_fraction=0.5).all()


def test_the_resident_fraction_sets_the_capacity_of_solver_and_scheduler_alike(chain) -> None:
    table = op_table(chain("resnet18_cifar", 1, "adam").workload)
    hardware = load_hardware(EDGE_TPU)
    full = core_capacity_bytes(hardware, resident_fraction=1.0)
    np.testing.assert_allclose(core_capacity_bytes(hardware, resident_fraction=0.25), full / 4)
    for fraction in (0.25, 0.75):
        problem = FusionProblem.build(table, hardware, resident_fraction=fraction)
        np.testing.assert_allclose(problem.capacity_bytes, full[0] * fraction)
    # one group of the three largest forward convolutions: 0.42 of the MAC core's memory, so it fits 0.75 but not 0.25
    core_of = place_ops(table, hardware)
    convs = np.flatnonzero(table.kind == "conv")
    needed = np.array([_group_bytes(table, hardware, np.array([c])) for c in convs])
    group = convs[np.argsort(needed)[-3:]]
    capacity = full[0, core_of[group[0]]]
    assert 0.25 * capacity < _group_bytes(table, hardware, group) < 0.75 * capacity
    group_of = np.full(len(table), -1)
    group_of[group] = 0
    for fraction, fits in ((0.25, False), (0.75, True)):
        assert bool(groups_fit(table, hardware, core_of, group_of, resident_fraction=fraction)[0]) is fits
        plan = SchedulePlan.from_mode(
            "pipeline_tensor", fused=(tuple(int(op) for op in table.op[group]),), resident_fraction=fraction
        )
        assert bool(schedule(table, hardware, plan).summary["fusion_fits"].iloc[0]) is fits


def test_figure10_labels_a_strategy_that_does_not_fit() -> None:
    table = pd.DataFrame(
        {
            "strategy": ["manual", "manual", "limit4"],
            "step": ["training", "inference", "training"],
            "fusion_fits": [False, True, True],
        }
    )
    assert list(_fit_labels(table)) == ["manual †"] * 2 + ["limit4"]
    assert _overflow_note(table).endswith("do not fit on-chip memory (their groups run unfused): manual (training)")


def test_the_commands_default_resident_fraction_is_the_plans() -> None:
    """The commands' default (no --resident-fraction) and the workflow's written-out one are the scheduler's."""
    for mode in ("pipeline_tensor", "stream_layer_by_layer"):
        command = resident_share(argparse.Namespace(resident_fraction=None, mode=mode))
        assert command == Plan.sweep_resident({"mode": mode}) == SchedulePlan.from_mode(mode).resident_fraction
    assert resident_share(argparse.Namespace(resident_fraction=None)) == DEFAULT_RESIDENT_FRACTION  # fuse: no --mode
    assert DEFAULT_RESIDENT_FRACTION == SchedulePlan().resident_fraction


def _tiny(tmp_path: Path, local_kb: float) -> Path:
    data = yaml.safe_load(TINY.read_text())
    data["parameters"]["local_kb"]["default"] = local_kb
    path = tmp_path / f"tiny_{local_kb}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_a_fused_group_that_fits_keeps_its_intermediate_on_chip(tmp_path: Path) -> None:
    table = op_table(conv_relu_workload())
    hardware = load_hardware(TINY)
    # one sample of 4 rows: cut into all 4 rows (fewer than the pipeline's 8 tiles); the PE core keeps w (16 B) and a
    # quarter of y twice (32 B) of its 512 B share, the vector core a quarter of z twice (32 B) of its 128 B share
    tiling = GroupTiling.of(table, hardware, place_ops(table, hardware), np.zeros(2, dtype=np.int64))
    assert tiling.cuts == (((1, 1), (1, 2), (1, 4)),)
    np.testing.assert_array_equal(tiling.held, [[16 + 128, 128], [16 + 64, 64], [16 + 32, 32]])
    fits, tiles, row_tiles = tiling.choose(core_capacity_bytes(hardware, resident_fraction=0.5))
    assert fits.tolist() == [[True]] and tiles.tolist() == [[4]] and row_tiles.tolist() == [[4]]
    row = schedule(table, hardware, SchedulePlan(fused=((0, 1),))).summary.iloc[0]
    assert bool(row.fusion_fits)
    # x and w in, z out; y never crosses a core's boundary (test_scheduler's unfused case moves it over the bus)
    assert row.offchip_bytes == 16 + 64 + 64 and row.bus_bytes == 80 + 64
    assert row.energy_pj == pytest.approx(960 + 544 + 80 * 10.5 + 64 * 12.5)
    # the conv waits for the w it holds (16 B at 8 B per cycle off chip: its fill of 2 cycles) and runs 69; the relu
    # starts on the conv's first tile and ends one of its own tiles (16 / 4) after the conv
    assert row.latency_cycles == pytest.approx(16 / 8 + 69 + 16 / 4)


def test_a_group_that_does_not_fit_costs_what_its_parts_cost_unfused(tmp_path: Path) -> None:
    table = op_table(conv_relu_workload())
    small = load_hardware(_tiny(tmp_path, 32 / 1024))  # 32 B local memory: a 16 B share, less than w and a tile of y
    assert not group_fits(table, small, place_ops(table, small), np.zeros(2, dtype=np.int64), resident_fraction=0.5).any()
    fused = schedule(table, small, SchedulePlan(fused=((0, 1),))).summary.iloc[0]
    alone = schedule(table, small, SchedulePlan()).summary.iloc[0]
    assert not bool(fused.fusion_fits)
    # y (64 B) does not fit the 16 B share: it goes off chip and comes back, as without fusion
    assert fused.offchip_bytes == alone.offchip_bytes == 16 + 64 + 64 + 64 + 64
    columns = ["latency_cycles", "energy_pj", "offchip_bytes", "bus_bytes", "peak_onchip_bytes"]
    assert fused[columns].tolist() == alone[columns].tolist()


def test_a_plan_costs_what_its_fitting_groups_cost(chain) -> None:
    """Groups that do not fit are run unfused: a plan costs exactly what the plan of its fitting groups costs, and
    never less than that plan (it is never both infeasible and cheaper)."""
    table = op_table(chain("resnet18_cifar", 1).workload, phases=STEP_PHASES["inference"])
    hardware = load_hardware(EDGE_TPU)
    # groups the solver admits with the whole top memories, scheduled with a quarter of them: some fit, some not
    result = solve_fusion(FusionProblem.build(table, hardware, resident_fraction=1.0), max_length=4, time_limit_s=60)
    solved = [members for members in result.subgraphs if len(members) > 1]
    group_of = np.full(len(table), -1)
    for g, members in enumerate(solved):
        group_of[list(members)] = g
    fits = group_fits(table, hardware, place_ops(table, hardware), group_of, resident_fraction=0.25)[0]
    assert 0 < fits.sum() < len(solved)

    def cost(groups: list[tuple[int, ...]]) -> pd.Series:
        plan = SchedulePlan(fused=tuple(tuple(int(table.op[i]) for i in g) for g in groups), resident_fraction=0.25)
        return schedule(table, hardware, plan).summary.iloc[0]

    every, fitting = cost(solved), cost([g for g, ok in zip(solved, fits, strict=True) if ok])
    columns = ["latency_cycles", "energy_pj", "offchip_bytes", "bus_bytes"]
    assert every[columns].tolist() == fitting[columns].tolist()
    assert not bool(every.fusion_fits) and bool(fitting.fusion_fits)
    assert fitting.energy_pj < cost([]).energy_pj  # and the groups that fit do save


def test_each_group_runs_in_its_fewest_fitting_tiles_at_every_configuration() -> None:
    # three groups of 3, 1 and 4 candidates over 2 cores, checked against the rule taken group by group: the first
    # candidate (fewest tiles) that fits on every core and reaches the pipeline's floor, else 1 tile, not fitting
    rng = np.random.default_rng(0)
    start = np.array([0, 3, 4])
    tiles = np.array([1, 2, 4, 1, 1, 2, 8, 16])
    row_tiles = np.array([1, 2, 4, 1, 1, 1, 1, 2])
    deep = np.array([False, False, True, True, False, False, True, True])
    held = rng.uniform(0, 100, size=(8, 2))
    capacity = rng.uniform(0, 120, size=(200, 2))
    fits, chosen, chosen_rows = GroupTiling(start=start, tiles=tiles, row_tiles=row_tiles, held=held, deep=deep).choose(capacity)
    for c, cap in enumerate(capacity):
        for g, (first, last) in enumerate(zip(start, [*start[1:], len(tiles)], strict=True)):
            ok = [k for k in range(first, last) if deep[k] and (held[k] <= cap).all()]
            assert fits[c, g] == bool(ok)
            assert (chosen[c, g], chosen_rows[c, g]) == ((tiles[ok[0]], row_tiles[ok[0]]) if ok else (1, 1))
    assert fits.any() and not fits.all()  # both outcomes are exercised


@pytest.mark.ort
def test_what_a_group_holds_is_its_members_bytes_summed_as_numpy_sums_them(chain) -> None:
    # groups of 1 to 12 consecutive ops of a training step on the Edge TPU, each core's share against the definition
    # taken group by group (``held_bytes`` of its members' sums at each of ``tile_candidates``): the same floats, bit
    # for bit, groups of 8 members or more on a core among them
    table = op_table(chain("resnet18_cifar", 1, "adam").workload)
    hardware = load_hardware(EDGE_TPU)
    core_of = place_ops(table, hardware)
    lengths = np.resize(np.arange(1, 13), len(table))
    group_of = np.repeat(np.arange(len(table)), lengths)[: len(table)]
    tiling = GroupTiling.of(table, hardware, core_of, group_of)
    memory = OpMemory.of(table, hardware)
    ends = [*tiling.start[1:], len(tiling.tiles)]
    largest = 0
    for g, (first, last) in enumerate(zip(tiling.start, ends, strict=True)):
        members = np.flatnonzero(group_of == g)
        cuts = tile_candidates(int(np.gcd.reduce(memory.batch[members])), int(memory.rows[members].min()))
        assert tiling.cuts[g] == cuts
        for k in range(len(hardware.cores)):
            on = members[core_of[members] == k]
            largest = max(largest, len(on))
            sums = (memory.fixed[on].sum(), memory.tiled[on].sum(), (memory.halo_row_bytes[on] * memory.batch[on]).sum())
            assert tiling.held[first:last, k].tolist() == [held_bytes(*map(float, sums), cut) for cut in cuts]
    assert largest >= 8
