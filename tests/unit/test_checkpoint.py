"""Activation recomputation: the plan by hand, the ONNX rewrite executed in ONNX Runtime, the Workload rewrite."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.utils.checkpoint import checkpoint

from traincost.errors import GraphError
from traincost.frontend.execute import example_feeds, run
from traincost.frontend.lower import lower
from traincost.memory.liveness import memory_profile
from traincost.models import build_model, make_batch
from traincost.optimize.checkpoint import (
    SUFFIX,
    GraphNode,
    onnx_nodes,
    plan_recompute,
    recompute_onnx,
    recompute_workload,
    saved_activations,
)

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
    base = memory_profile(built.workload).table().set_index("category").loc["saved_activations", "total_bytes"]
    for rewritten in (via_onnx, via_ir):
        after = memory_profile(rewritten).table().set_index("category").loc["saved_activations", "total_bytes"]
        assert after < base


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
