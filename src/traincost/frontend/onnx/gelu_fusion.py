"""torch's tanh-approximate GELU, exported as nine element-wise ops, fused back into one FastGelu.

``nn.GELU(approximate="tanh")`` keeps only its input for the backward pass. Exported at opset 17 it
becomes ``½·x·(1 + tanh(√(2/π)·(x + 0.044715·x·x·x)))`` in primitive ops, and ONNX Runtime's
gradient builder then keeps the intermediates the backward of each op needs (x/2, tanh, 1 + tanh):
four tensors of the size of x that torch does not keep. Fused into ``com.microsoft::FastGelu``
before ONNX Runtime builds the gradient, its gradient is one ``FastGeluGrad`` that reads x alone.
ONNX Runtime's own ``FastGeluFusion`` does not match the exporter's form of it.
"""

from __future__ import annotations

import math

import numpy as np
import onnx
from onnx import helper, numpy_helper

from traincost.frontend.onnx.graph import consumers, producers

__all__ = ["fuse_tanh_gelu"]

MS = "com.microsoft"
_SCALE = math.sqrt(2 / math.pi)
_CUBIC = 0.044715


def fuse_tanh_gelu(model: onnx.ModelProto) -> tuple[onnx.ModelProto, list[str]]:
    """``model`` with every exported tanh-approximate GELU replaced by a FastGelu, and their outputs.

    A pattern is fused only if none of its intermediate tensors is read outside it or is a graph
    output; the caller checks the fused graph by execution.
    """
    graph = model.graph
    writers, readers = producers(graph), consumers(graph)
    scalars = _scalars(graph)
    outputs = {value.name for value in graph.output}
    fused: dict[int, tuple[str, str, list[onnx.NodeProto]]] = {}  # id(last node) → (x, y, pattern nodes)
    for tanh in (node for node in graph.node if node.op_type == "Tanh"):
        match = _match(tanh, writers, readers, scalars)
        if match is None:
            continue
        x, nodes = match
        inner = {out for node in nodes[:-1] for out in node.output}
        members = {id(node) for node in nodes}
        if inner & outputs or any(id(r) not in members for name in inner for r in readers.get(name, [])):
            continue
        fused[id(nodes[-1])] = (x, nodes[-1].output[0], nodes)
    if not fused:
        return model, []
    dropped = {id(node) for _, _, nodes in fused.values() for node in nodes}
    result = onnx.ModelProto()
    result.CopyFrom(model)
    del result.graph.node[:]
    for node in graph.node:
        if id(node) in fused:
            x, y, nodes = fused[id(node)]
            name = f"{nodes[0].name.rsplit('/', 1)[0]}/FastGelu" if "/" in nodes[0].name else f"{y}/FastGelu"
            result.graph.node.append(helper.make_node("FastGelu", [x], [y], name=name, domain=MS))
        elif id(node) not in dropped:
            result.graph.node.append(node)
    if all(opset.domain != MS for opset in result.opset_import):
        result.opset_import.append(helper.make_opsetid(MS, 1))
    return result, [y for _, y, _ in fused.values()]


def _scalars(graph: onnx.GraphProto) -> dict[str, float]:
    """Every one-element constant (initializer or Constant node) as a float."""
    values = {init.name: numpy_helper.to_array(init) for init in graph.initializer if math.prod(init.dims) == 1}
    for node in graph.node:
        if node.op_type == "Constant" and node.attribute and node.attribute[0].name == "value":
            values[node.output[0]] = numpy_helper.to_array(node.attribute[0].t)
    return {name: float(value.reshape(-1)[0]) for name, value in values.items() if np.size(value) == 1}


def _match(
    tanh: onnx.NodeProto,
    writers: dict[str, onnx.NodeProto],
    readers: dict[str, list[onnx.NodeProto]],
    scalars: dict[str, float],
) -> tuple[str, list[onnx.NodeProto]] | None:
    """x and the pattern's nodes (the last writes the GELU) if ``tanh`` is the heart of one."""
    scaled = writers.get(tanh.input[0])
    inner = _operand_beside(scaled, "Mul", _SCALE, scalars)
    add = writers.get(inner) if inner else None
    if add is None or add.op_type != "Add":
        return None
    for x, term in (add.input, reversed(add.input)):
        cube_scaled = writers.get(term)
        cube_name = _operand_beside(cube_scaled, "Mul", _CUBIC, scalars)
        cube = writers.get(cube_name) if cube_name else None
        square = _cube_square(cube, x, writers)
        if square is None:
            continue
        tail = _tail(tanh, x, readers, scalars)
        if tail is None:
            return None
        return x, [square, cube, cube_scaled, add, scaled, tanh, *tail]
    return None


def _operand_beside(node: onnx.NodeProto | None, op_type: str, constant: float, scalars: dict[str, float]) -> str | None:
    """The other input of a binary ``op_type`` node whose one input is the scalar ``constant``."""
    if node is None or node.op_type != op_type or len(node.input) != 2:
        return None
    for mine, other in (node.input, reversed(node.input)):
        if mine in scalars and math.isclose(scalars[mine], constant, rel_tol=1e-4):
            return other
    return None


def _cube_square(cube: onnx.NodeProto | None, x: str, writers: dict[str, onnx.NodeProto]) -> onnx.NodeProto | None:
    """The x·x node of x·(x·x) (in either order); None if ``cube`` is not that."""
    if cube is None or cube.op_type != "Mul" or x not in cube.input:
        return None
    other = cube.input[1] if cube.input[0] == x else cube.input[0]
    square = writers.get(other)
    if square is not None and square.op_type == "Mul" and list(square.input) == [x, x]:
        return square
    return None


def _tail(
    tanh: onnx.NodeProto, x: str, readers: dict[str, list[onnx.NodeProto]], scalars: dict[str, float]
) -> list[onnx.NodeProto] | None:
    """The nodes of ½·(x·(1 + tanh)) after ``tanh``: Add 1, Mul x, Mul ½ (each the only reader)."""
    chain = []
    current = tanh.output[0]
    for op_type, other in (("Add", 1.0), ("Mul", x), ("Mul", 0.5)):
        following = readers.get(current, [])
        if len(following) != 1 or following[0].op_type != op_type:
            return None
        node = following[0]
        operands = list(node.input)
        operands.remove(current)
        if isinstance(other, str):
            if operands != [other]:
                return None
        elif not (operands[0] in scalars and math.isclose(scalars[operands[0]], other, rel_tol=1e-6)):
            return None
        chain.append(node)
        current = node.output[0]
    return chain
