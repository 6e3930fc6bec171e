"""Activation recomputation: the plan by hand, the ONNX rewrite executed in ONNX Runtime, the Workload rewrite."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
import torch
from torch.utils.checkpoint import checkpoint

from traincost.cost.optable import op_table
from traincost.errors import GraphError
from traincost.frontend.onnx.execute import example_feeds, run
from traincost.frontend.onnx.lower import lower
from traincost.memory.liveness import memory_profile
from traincost.models import build_model, make_batch
from traincost.optimize import checkpoint_check
from traincost.optimize.checkpoint import (
    SUFFIX,
    GraphNode,
    onnx_nodes,
    plan_recompute,
    recompute_onnx,
    recompute_workload,
    saved_activations,
)
from traincost.optimize.checkpoint_check import LIMIT, verify_recompute
from traincost.optimize.recompute_table import RecomputeTables
from traincost.workload import STEP_PHASES, Workload

pytestmark = pytest.mark.ort  # the ONNX front end throughout (tests/conftest.py: pytest_ignore_collect)

GPT2_TINY = {"n_layer": 1, "d_model": 32, "n_head": 2, "seq_len": 16, "vocab_size": 64}

# x -> relu -> a -> mul -> b -> add -> c -> loss; the backward pass reads a and c
GRAPH = [
    GraphNode("Relu", "forward", ("x",), ("a",)),
    GraphNode("Mul", "forward", ("a", "w"), ("b",)),
    GraphNode("Add", "forward", ("b", "w"), ("c",)),
    GraphNode("ReduceSum", "forward", ("c",), ("loss",)),
    GraphNode("Mul", "backward", ("c", "g"), ("dc",)),
    GraphNode("Mul", "backward", ("a", "dc"), ("da",)),
]


def test_plan_by_hand() -> None:
    assert saved_activations(GRAPH) == ["a", "c"]
    # c is rebuilt from a (kept): mul and add, just before the first backward reader of c
    plan = plan_recompute(GRAPH, ["c"], external={"x", "w", "g"})
    assert plan.insertions == {4: (1, 2)}
    # dropping both: a from x, then c from the recomputed a
    both = plan_recompute(GRAPH, ["a", "c"], external={"x", "w", "g"})
    assert both.insertions == {4: (0, 1, 2)}


def test_bad_requests() -> None:
    with pytest.raises(GraphError, match="not saved activations"):
        plan_recompute(GRAPH, ["b"], external={"x", "w", "g"})
    random = [GraphNode("Dropout", "forward", ("x",), ("a",)), *GRAPH[1:]]
    with pytest.raises(GraphError, match="random op Dropout"):
        plan_recompute(random, ["a"], external={"x", "w", "g"})


def test_recomputed_training_step_is_unchanged_in_onnx_runtime(chain) -> None:
    graph = chain("resnet18_cifar", 1, "adam").decomposed
    saved = saved_activations(onnx_nodes(graph))
    dropped = saved[3:12]
    rewritten = recompute_onnx(graph, dropped)
    assert sum(n.name.endswith(SUFFIX) for n in rewritten.graph.node) > len(dropped) // 2
    feeds = example_feeds(graph, seed=0, states="random")
    before, after = run(graph, feeds), run(rewritten, feeds)
    assert before.keys() == after.keys()
    for name in before:  # the same ops on the same values: bit-identical loss, parameters and states
        assert np.array_equal(before[name], after[name]), name


def test_workload_rewrite_matches_the_onnx_rewrite_and_saves_memory(chain) -> None:
    built = chain("resnet18_cifar", 1, "adam")
    dropped = saved_activations(onnx_nodes(built.decomposed))[3:12]
    via_onnx = lower(recompute_onnx(built.decomposed, dropped))
    via_ir = recompute_workload(built.workload, dropped)
    assert list(via_onnx.ops["name"]) == list(via_ir.ops["name"])
    assert list(via_onnx.ops["phase"]) == list(via_ir.ops["phase"])
    assert (via_ir.ops["phase"] == "recompute").sum() > 0
    onnx_side, ir_side = _by_name(via_onnx), _by_name(via_ir)
    for column in ("saved_for_backward", "storage", "bytes"):  # a view is the storage it views, counted once
        differ = onnx_side.index[onnx_side[column] != ir_side[column]]
        assert differ.empty, (column, onnx_side.loc[differ[:5], column], ir_side.loc[differ[:5], column])
    base = memory_profile(built.workload).table().set_index("category").loc["saved_activations", "total_bytes"]
    profiles = [memory_profile(rewritten).table().set_index("category") for rewritten in (via_onnx, via_ir)]
    pd.testing.assert_frame_equal(profiles[0], profiles[1])
    assert profiles[1].loc["saved_activations", "total_bytes"] < base


def _by_name(workload: Workload) -> pd.DataFrame:
    """The tensors table by name, with the name of the tensor whose storage each one is."""
    tensors = workload.tensors.set_index("tensor")
    storage = [tensors["name"][v] if v >= 0 else name for name, v in zip(tensors["name"], tensors["view_of"], strict=True)]
    return tensors.assign(storage=storage).set_index("name").sort_index()


def test_recomputed_mlp_step_equals_torch_checkpoint(chain) -> None:
    graph = chain("mlp", 4, "sgd").decomposed  # SGD, lr 0.1
    dropped = [t for t in saved_activations(onnx_nodes(graph)) if t != "input"]
    rewritten = recompute_onnx(graph, dropped)
    assert any(n.name.endswith(SUFFIX) for n in rewritten.graph.node)
    outputs = run(rewritten, example_feeds(graph, seed=3))

    torch.manual_seed(0)  # the weights `traincost export --seed 0` built
    model = build_model("mlp")
    inputs, labels = make_batch("mlp", batch=4, seed=3)
    hidden = checkpoint(model[:4], inputs, use_reentrant=False)  # both hidden layers recomputed in backward
    torch.nn.functional.cross_entropy(model[4](hidden), labels).backward()
    with torch.no_grad():
        for name, param in model.named_parameters():
            expected = (param - 0.1 * param.grad).numpy()
            assert np.allclose(outputs[f"{name}.updated"], expected, rtol=1e-5, atol=1e-6), name


@pytest.mark.parametrize(("model", "optimizer", "options"), [("resnet18_cifar", "adam", None), ("gpt2", "adam", GPT2_TINY)])
def test_patched_table_equals_the_rebuilt_table(chain, model, optimizer, options) -> None:
    workload = chain(model, 2, optimizer, options).workload
    tables = RecomputeTables(workload, phases=STEP_PHASES["training"])
    saved = [t for t in saved_activations(tables.nodes) if t not in tables.external]
    rng = np.random.default_rng(0)
    for fraction in (0.2, 0.6):
        dropped = []
        for name in saved:
            if rng.random() < fraction:
                try:  # activations behind a dropout mask cannot be dropped
                    plan_recompute(tables.nodes, [*dropped, name], external=tables.external)
                except GraphError:
                    continue
                dropped.append(name)
        patched = tables.rewrite(dropped)
        rebuilt = op_table(recompute_workload(workload, dropped), phases=STEP_PHASES["training"])
        assert patched.clone.sum() == (rebuilt.phase == "recompute").sum() > 0
        assert patched.redirected.any()
        for field in dataclasses.fields(rebuilt):
            ours, theirs = getattr(patched.table, field.name), getattr(rebuilt, field.name)
            if isinstance(theirs, dict):
                assert ours.keys() == theirs.keys() and all(np.array_equal(ours[k], theirs[k]) for k in theirs), field.name
            elif isinstance(theirs, np.ndarray):
                assert ours.dtype == theirs.dtype and np.array_equal(ours, theirs), field.name
            else:
                assert ours == theirs, field.name


def test_recompute_rewrites_are_checked_by_execution_and_a_broken_one_is_caught(chain, monkeypatch) -> None:
    graph = chain("resnet18_cifar", 1, "adam").decomposed
    saved = saved_activations(onnx_nodes(graph))
    rewrites = {"none": [], "some": saved[3:12]}
    table = verify_recompute(graph, rewrites, seed=0)
    assert set(table["rewrite"]) == {"some"}  # recomputing nothing is the step itself
    assert set(table["output"]) == {o.name for o in graph.graph.output}
    assert (table["error"] <= table["limit"]).all() and (table["limit"] == LIMIT).all()

    def broken(model, dropped):  # a rewrite whose first recomputed ReLU computes something else
        rewritten = recompute_onnx(model, dropped)
        clone = next(n for n in rewritten.graph.node if n.name.endswith(SUFFIX) and n.op_type == "Relu")
        clone.op_type = "Sigmoid"
        return rewritten

    monkeypatch.setattr(checkpoint_check, "recompute_onnx", broken)
    with pytest.raises(GraphError, match=r"recompute rewrite 'some' \(9 activations recomputed\) changes the step: output"):
        verify_recompute(graph, rewrites, seed=0)
