"""One memory model for fusion: the solver admits groups, and the scheduler reports plans, by the same rule."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from traincost.cost import op_table
from traincost.cost.optable import MAC_KINDS
from traincost.hardware import load_hardware
from traincost.optimize.fusion import FusionProblem, solve_fusion
from traincost.plots.fusion import _fit_labels
from traincost.schedule import SchedulePlan
from traincost.schedule.fusion_memory import core_capacity_bytes, fused_op_bytes, groups_fit
from traincost.schedule.scheduler import place_ops, schedule

EDGE_TPU = Path(__file__).resolve().parents[2] / "config/hardware/edge_tpu.yaml"


def test_solver_groups_fit_and_an_oversized_group_is_reported_by_both(chain) -> None:
    table = op_table(chain("resnet18_cifar", 1, "adam").workload)
    hardware = load_hardware(EDGE_TPU)
    problem = FusionProblem.build(table, hardware)
    # the solver's memory facts are the shared model's
    np.testing.assert_array_equal(problem.memory_bytes, fused_op_bytes(table, hardware))
    np.testing.assert_array_equal(problem.capacity_bytes, core_capacity_bytes(hardware)[0])
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
    assert not groups_fit(table, hardware, core_of, group_of).any()
    plan = SchedulePlan.from_mode("pipeline_tensor", fused=(tuple(int(op) for op in table.op[members]),))
    summary = schedule(table, hardware, plan).summary
    assert not summary["fusion_fits"].any()
    assert np.isfinite(summary["latency_cycles"]).all()  # still costed, and reported as not fitting
    # no fusion: nothing to overflow
    assert groups_fit(table, hardware, core_of, np.full(len(table), -1)).all()


def test_figure10_labels_a_strategy_that_does_not_fit() -> None:
    table = pd.DataFrame(
        {
            "strategy": ["manual", "manual", "limit4"],
            "step": ["training", "inference", "training"],
            "fusion_fits": [False, True, True],
        }
    )
    assert list(_fit_labels(table)) == ["manual\ndoes not fit:\ntraining"] * 2 + ["limit4"]
