"""One memory model for fusion: the solver admits groups, and the scheduler reports plans, by the same rule."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from traincost.cli import _DEFAULT_RESIDENT_FRACTION
from traincost.cost import op_table
from traincost.cost.optable import MAC_KINDS
from traincost.hardware import load_hardware
from traincost.optimize.fusion import FusionProblem, solve_fusion
from traincost.plots.fusion import _fit_labels
from traincost.schedule import SchedulePlan
from traincost.schedule.fusion_memory import core_capacity_bytes, fused_op_bytes, groups_fit
from traincost.schedule.plan import DEFAULT_RESIDENT_FRACTION
from traincost.schedule.scheduler import place_ops, schedule

EDGE_TPU = Path(__file__).resolve().parents[2] / "config/hardware/edge_tpu.yaml"


def test_solver_groups_fit_and_an_oversized_group_is_reported_by_both(chain) -> None:
    table = op_table(chain("resnet18_cifar", 1, "adam").workload)
    hardware = load_hardware(EDGE_TPU)
    problem = FusionProblem.build(table, hardware)
    # the solver's memory facts are the shared model's
    np.testing.assert_array_equal(problem.memory_bytes, fused_op_bytes(table, hardware))
    np.testing.assert_array_equal(problem.capacity_bytes, core_capacity_bytes(hardware, resident_fraction=0.5)[0])
    # by hand, the first convolution: its weights plus one output row of its output
    conv = int(np.flatnonzero(np.isin(table.kind, MAC_KINDS))[0])
    out_elems = sum(table.tensor_elems[t] for t in table.outputs[conv])
    by_hand = (table.s_elems[conv] + out_elems / max(1, table.dims["OY"][conv])) * hardware.word_bytes
    assert problem.memory_bytes[conv] == by_hand

    result = solve_fusion(problem, max_length=3, time_limit_s=60)
    solved = [[int(table.op[i]) for i in members] for members in result.subgraphs if len(members) > 1]
    fits = schedule(table, hardware, SchedulePlan.from_mode("pipeline_tensor", fused=tuple(map(tuple, solved)))).summary
    assert fits["fusion_fits"].all()  # every group the solver chose fits in the scheduler's eyes too

    # one group of every op placed on the MAC core overflows it, in both models
    core_of = place_ops(table, hardware)
    mac_core = int(core_of[conv])
    members = np.flatnonzero(core_of == mac_core)
    assert problem.memory_bytes[members].sum() > problem.capacity_bytes[mac_core]
    group_of = np.where(core_of == mac_core, 0, -1)
    assert not groups_fit(table, hardware, core_of, group_of, resident_fraction=0.5).any()
    plan = SchedulePlan.from_mode("pipeline_tensor", fused=(tuple(int(op) for op in table.op[members]),))
    summary = schedule(table, hardware, plan).summary
    assert not summary["fusion_fits"].any()
    assert np.isfinite(summary["latency_cycles"]).all()  # still costed, and reported as not fitting
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
    needed = fused_op_bytes(table, hardware)
    convs = np.flatnonzero(table.kind == "conv")
    group = convs[np.argsort(needed[convs])[-3:]]
    capacity = full[0, core_of[group[0]]]
    assert 0.25 * capacity < needed[group].sum() < 0.75 * capacity
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
    assert list(_fit_labels(table)) == ["manual\ndoes not fit:\ntraining"] * 2 + ["limit4"]


def test_the_commands_default_resident_fraction_is_the_plans() -> None:
    assert _DEFAULT_RESIDENT_FRACTION == DEFAULT_RESIDENT_FRACTION == SchedulePlan().resident_fraction
