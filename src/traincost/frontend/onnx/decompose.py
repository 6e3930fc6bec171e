"""Replace every composite op of a training graph by primitive standard-domain ONNX ops.

A node is primitive when it is a standard ONNX operator (``onnx.defs``) that is not in
``gradient_rules.COMPOSITE_STANDARD_OPS``. Every other node needs a rule in
``gradient_rules.RULES``; if any has none, the pass stops with one error that names every such op
type and node. ``verification.verify_decomposition`` checks the rewritten graph by execution (the
workflow's ``verify_decomposition`` rule, ``traincost verify-decomposition``): loss, every gradient
and every updated tensor must match the original to within what float32 rounding can move them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

import numpy as np
import onnx
from onnx import helper

from traincost.errors import UnsupportedOpError
from traincost.frontend.onnx.backward_recompute import recompute_rewritten_activations
from traincost.frontend.onnx.execute import record_shapes, weightless
from traincost.frontend.onnx.gradient_rules import COMPOSITE_STANDARD_OPS, RULES, RuleContext
from traincost.frontend.onnx.graph import (
    IR_VERSION,
    OPSET,
    NodeFactory,
    check_node_order,
    initializer_values,
    model_meta,
    set_model_meta,
)
from traincost.frontend.onnx.shapes import TensorType, tensor_types

__all__ = ["decompose", "rewrite_node", "is_primitive", "op_histogram"]


def is_primitive(node: onnx.NodeProto) -> bool:
    """True for a standard ONNX op that needs no decomposition."""
    return node.domain in ("", "ai.onnx") and onnx.defs.has(node.op_type, "") and node.op_type not in COMPOSITE_STANDARD_OPS


def op_histogram(model: onnx.ModelProto) -> Counter[str]:
    """Count of nodes per op type (``domain::op`` for non-standard domains)."""
    return Counter(f"{n.domain}::{n.op_type}" if n.domain not in ("", "ai.onnx") else n.op_type for n in model.graph.node)


def rewrite_node(node: onnx.NodeProto, types: dict[str, TensorType], constants: Mapping[str, np.ndarray]) -> NodeFactory:
    """The primitive nodes and constants that replace composite ``node`` (same output names)."""
    make = NodeFactory(node.name, template=node)
    RULES[(node.domain, node.op_type)](RuleContext(node=node, types=types, constants=constants, make=make))
    return make


def decompose(model: onnx.ModelProto, *, seed: int = 0) -> onnx.ModelProto:
    """A copy of ``model`` in which every composite op is replaced by primitive ops.

    Raises:
        UnsupportedOpError: naming every op type without a rule and its nodes.
        GraphError: the nodes are not in topological order (a cycle) or a tensor has two writers.
    """
    graph = model.graph
    check_node_order(graph)
    missing: dict[str, list[str]] = {}
    for node in graph.node:
        if not is_primitive(node) and (node.domain, node.op_type) not in RULES:
            missing.setdefault(f"{node.domain or 'ai.onnx'}::{node.op_type}", []).append(node.name)
    if missing:
        listing = "; ".join(f"{op} at {', '.join(nodes)}" for op, nodes in sorted(missing.items()))
        raise UnsupportedOpError(f"graph {graph.name!r}: no decomposition rule for {listing}")

    types = tensor_types(graph)
    constants = initializer_values(graph)  # rules read shapes and axes, not weights: those are not made arrays
    result = onnx.ModelProto()
    result.CopyFrom(model)
    del result.graph.node[:]
    for node in graph.node:
        if is_primitive(node):
            result.graph.node.append(node)
            continue
        make = rewrite_node(node, types, constants)
        result.graph.node.extend(make.nodes)
        result.graph.initializer.extend(make.initializers)
    del result.opset_import[:]
    result.opset_import.append(helper.make_opsetid("", OPSET))
    result.ir_version = IR_VERSION
    stage = model_meta(model).get("stage", "train_step")
    result.graph.name = graph.name.replace(stage, f"{stage}_decomposed")
    set_model_meta(result, stage=f"{stage}.decomposed")
    result = recompute_rewritten_activations(result)  # their intermediates, as torch's kernels keep only one tensor
    record_shapes(result, seed=seed)
    # The weights are checked as typed inputs: copied unchanged from ``model``, their data is not serialised again.
    onnx.checker.check_model(weightless(result))
    return result
