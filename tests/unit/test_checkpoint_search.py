"""Equation 6 solved by hand, activation costs, and the AC00/AC10/AC01/AC11 study."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from traincost.errors import ConfigError
from traincost.hardware import load_hardware
from traincost.optimize.checkpoint import onnx_nodes, saved_activations
from traincost.optimize.checkpoint_nsga import largest_saving, run_nsga2
from traincost.optimize.checkpoint_search import (
    CheckpointEvaluator,
    activation_costs,
    additivity_study,
    first_feature_maps,
    solve_checkpoint_milp,
)
from traincost.optimize.fusion import FusionProblem, candidate_subgraphs
from traincost.optimize.recompute_table import RecomputeTables
from traincost.schedule import SchedulePlan, scheduler
from traincost.schedule.lanes import VectorLanes
from traincost.workload import STEP_PHASES, Workload

EDGE_TPU = Path(__file__).resolve().parents[2] / "config/hardware/edge_tpu.yaml"
TOY = pd.DataFrame({"name": ["a", "b", "c"], "bytes": [4, 3, 2], "recompute_flops": [10, 6, 5]})


def test_milp_toy_instance_by_hand() -> None:
    # budget 5: keep {b, c} (5 bytes, saves 11 FLOPs of recomputation) rather than {a} (4 bytes, saves 10)
    assert solve_checkpoint_milp(TOY, budget_bytes=5) == ["a"]
    assert solve_checkpoint_milp(TOY, budget_bytes=9) == []
    assert solve_checkpoint_milp(TOY, budget_bytes=0) == ["a", "b", "c"]
    with pytest.raises(ConfigError, match="negative budget"):
        solve_checkpoint_milp(TOY, budget_bytes=-1)


def test_activation_costs_and_additivity(chain) -> None:
    built = chain("resnet18_cifar", 1, "adam")
    hardware = load_hardware(EDGE_TPU)
    costs = activation_costs(built.workload, word_bytes=hardware.word_bytes)
    saved = [t for t in saved_activations(onnx_nodes(built.decomposed)) if t != "input"]
    assert list(costs["name"]) == saved
    assert (costs["recompute_flops"] >= 0).all() and (costs["recompute_ops"] >= 1).all()
    tensors = built.workload.tensors.set_index("name")
    first = costs.iloc[0]
    assert first["bytes"] == tensors.loc[first["name"], "bytes"] // 4 * 2  # FP32 in the graph, FP16 on the accelerator
    evaluator = CheckpointEvaluator(built.workload, hardware, costs, fusion_length=4)
    study = additivity_study(evaluator, *first_feature_maps(costs)).set_index("scenario")
    assert list(study.index) == ["AC00", "AC10", "AC01", "AC11", "AC11 linear"]
    assert study.loc["AC00", "relative_latency_cycles"] == 1.0
    # memory is additive by construction; recomputing never makes the step cheaper in FLOPs
    assert study.loc["AC11", "activation_bytes"] == study.loc["AC11 linear", "activation_bytes"]
    assert study.loc["AC11", "activation_bytes"] < study.loc["AC10", "activation_bytes"] < study.loc["AC00", "activation_bytes"]
    assert study.loc["AC11", "recompute_flops"] > 0


def test_nsga2_is_reproducible_and_reports_a_saving(chain) -> None:
    built = chain("resnet18_cifar", 1, "adam")
    hardware = load_hardware(EDGE_TPU)
    costs = activation_costs(built.workload, word_bytes=hardware.word_bytes)
    runs = []
    for workers in (1, 2):
        evaluator = CheckpointEvaluator(built.workload, hardware, costs, fusion_length=2)
        baseline = evaluator.evaluate([])
        runs.append(run_nsga2(evaluator, population=4, generations=2, seed=7, workers=workers))
    first, second = runs
    assert first.equals(second)  # same seed, same evaluations and front, in one process or two
    assert first["pareto"].any() and (first["activation_bytes"] < baseline["activation_bytes"]).any()
    best = largest_saving(first, baseline, tolerance=1.0)
    assert best["saved_bytes"] > 0 and best["latency_change"] <= 1.0
    with pytest.raises(ConfigError, match="population 2"):
        run_nsga2(evaluator, population=2, generations=1, seed=0)


def test_an_activation_behind_dropout_is_not_a_candidate() -> None:
    def op(index: int, op_type: str, phase: str, inputs: list[int], outputs: list[int]) -> dict:
        loops = dict.fromkeys(("B", "K", "C", "OY", "OX", "FY", "FX", "G"), 1)
        return {"op": index, "name": f"n{index}", "op_type": op_type, "kind": "eltwise", "phase": phase, "layer": "l"} | loops | {
            "macs": 0, "elementwise_ops": 8, "inputs": inputs, "outputs": outputs,
        }  # fmt: skip

    ops = pd.DataFrame(
        [
            op(0, "Dropout", "forward", [0], [1]),  # x -> a (random)
            op(1, "Relu", "forward", [1], [2]),  # a -> b
            op(2, "ReduceSum", "forward", [2], [3]),  # b -> loss
            op(3, "Mul", "backward", [2, 4], [5]),  # reads b
            op(4, "Mul", "backward", [1, 5], [6]),  # reads a
        ]
    )
    kinds = ["input", "activation", "activation", "output", "input", "gradient", "gradient"]
    producers = [-1, 0, 1, 2, -1, 3, 4]
    tensors = pd.DataFrame(
        {"tensor": range(7), "name": ["x", "a", "b", "loss", "g", "db", "da"], "kind": kinds, "shape": [[8]] * 7, "bytes": 32}
    ).assign(dtype_bytes=4, producer=producers, consumers=[[]] * 7, saved_for_backward=False, updates=-1)
    costs = activation_costs(Workload(ops=ops, tensors=tensors), word_bytes=2)
    assert list(costs["name"]) == ["b"]  # a can only be rebuilt by redrawing the dropout mask
    assert costs["bytes"].iloc[0] == 16 and costs["recompute_flops"].iloc[0] == 8


def test_local_fusion_is_a_valid_cover_close_to_the_full_solve(chain) -> None:
    built = chain("resnet18_cifar", 1, "adam")
    hardware = load_hardware(EDGE_TPU)
    costs = activation_costs(built.workload, word_bytes=hardware.word_bytes)
    local = CheckpointEvaluator(built.workload, hardware, costs, fusion_length=4, fusion="local")
    full = CheckpointEvaluator(built.workload, hardware, costs, fusion_length=4, fusion="full")
    tables = RecomputeTables(built.workload, phases=STEP_PHASES["training"])
    rewrite = tables.rewrite(list(costs["name"][::3]))
    problem = FusionProblem.build(rewrite.table, hardware)
    groups = local.fused_groups(rewrite)
    members = [m for g in groups for m in g]
    assert len(members) == len(set(members))  # disjoint; the ops left out run alone
    assert any(rewrite.clone[list(g)].any() for g in groups)  # recomputed ops are fused too
    for group in groups:  # each group is a valid fused subgraph of the rewritten graph
        assert group in candidate_subgraphs(problem, max_length=4, nodes=group)
    optimum = full.fused_groups(rewrite)
    count = len(groups) + len(rewrite.table) - len(members)
    best = len(optimum) + len(rewrite.table) - sum(map(len, optimum))
    assert best <= count <= 1.05 * best
    with pytest.raises(ConfigError, match="fusion scope 'everywhere'"):
        CheckpointEvaluator(built.workload, hardware, costs, fusion_length=4, fusion="everywhere")


def test_the_fast_path_schedules_recompute_choices_as_the_plain_computation(chain, monkeypatch) -> None:
    """Bit for bit: the evaluator's path (costs taken from the base table's, one configuration as Python scalars)
    and the plain one (costs computed for the rewritten table, numpy arrays of one configuration)."""
    built = chain("resnet18_cifar", 1, "adam")
    hardware = load_hardware(EDGE_TPU)
    costs = activation_costs(built.workload, word_bytes=hardware.word_bytes)
    evaluator = CheckpointEvaluator(built.workload, hardware, costs, fusion_length=4)
    tables = RecomputeTables(built.workload, phases=STEP_PHASES["training"])
    rng = np.random.default_rng(1)
    for mode, fraction in (("pipeline_tensor", 0.3), ("layer_by_layer", 0.7), ("pipeline", 1.0)):
        rewrite = tables.rewrite(list(costs["name"][rng.random(len(costs)) < fraction]))
        assert rewrite.clone.any()
        fused = tuple(tuple(int(rewrite.table.op[i]) for i in g) for g in evaluator.fused_groups(rewrite))
        plan = SchedulePlan.from_mode(mode, fused=fused)
        base_costs = scheduler.OpCosts.of(tables.base, hardware, plan)
        fast = scheduler.schedule(rewrite.table, hardware, plan, per_op=True, op_costs=base_costs.take(rewrite.source))
        with monkeypatch.context() as patch:
            patch.setattr(scheduler, "lanes_for", VectorLanes)
            plain = scheduler.schedule(rewrite.table, hardware, plan, per_op=True)
        pd.testing.assert_frame_equal(fast.summary, plain.summary, check_exact=True)
        pd.testing.assert_frame_equal(fast.ops, plain.ops, check_exact=True)
    with pytest.raises(ValueError, match="do not belong"):  # the base table's costs for the rewritten table
        scheduler.schedule(rewrite.table, hardware, plan, op_costs=base_costs)
    with pytest.raises(ValueError, match="tensor parallel True"):  # costs of another plan
        scheduler.schedule(tables.base, hardware, SchedulePlan.from_mode("tensor"), op_costs=base_costs)
