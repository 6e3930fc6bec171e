"""An ONNX graph's order checked before any stage trusts it: a cycle named node by node, a tensor nothing writes."""

from __future__ import annotations

import onnx
import pytest
from onnx import TensorProto, helper

from traincost.errors import GraphError
from traincost.frontend.onnx.graph import check_node_order


def _graph(*nodes: tuple[str, list[str], str]) -> onnx.GraphProto:
    """Relu nodes ``(name, inputs, output)`` over the graph input ``x``."""
    value = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    made = [helper.make_node("Relu" if len(inputs) == 1 else "Add", inputs, [out], name=name) for name, inputs, out in nodes]
    return helper.make_graph(made, "g", [value], [])


def test_nodes_in_order_pass() -> None:
    check_node_order(_graph(("a", ["x"], "ya"), ("b", ["ya"], "yb")))


def test_a_cycle_is_named_node_by_node() -> None:
    graph = _graph(("a", ["x", "yc"], "ya"), ("b", ["ya"], "yb"), ("c", ["yb"], "yc"))
    with pytest.raises(
        GraphError, match=r"node 'a' reads 'yc' before node 'c' writes it; the nodes form a cycle, 'a' → 'b' → 'c' → 'a'"
    ):
        check_node_order(graph)


def test_nodes_out_of_order_are_not_called_a_cycle() -> None:
    graph = _graph(("b", ["ya"], "yb"), ("a", ["x"], "ya"))
    with pytest.raises(GraphError, match=r"node 'b' reads 'ya' before node 'a' writes it; .*out of order") as info:
        check_node_order(graph)
    assert "cycle," not in str(info.value)


def test_a_tensor_nothing_writes_is_named() -> None:
    with pytest.raises(GraphError, match=r"node 'b' reads 'nowhere', which no node writes and which is no graph input"):
        check_node_order(_graph(("a", ["x"], "ya"), ("b", ["ya", "nowhere"], "yb")))
