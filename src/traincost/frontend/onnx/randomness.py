"""Random draws in a training step: kept in the graph that is costed, switched off alike on both sides of a check.

A training step draws random numbers wherever a model drops something at random: ``nn.Dropout`` and
functional dropout (an ONNX ``Dropout``), attention dropout (``scaled_dot_product_attention``'s
``dropout_p``, also a ``Dropout``), stochastic depth and other random masks (``torch.rand`` or
``bernoulli_`` compared with a probability: ``RandomUniformLike`` and ``Less``, ``Bernoulli``). The
costed graph keeps every draw: the mask is an op of the forward pass and, where the backward pass
reads it, a saved tensor.

Two executions draw different masks, so a check by execution compares like with like by switching
the randomness off on both sides, and only for the check: every draw takes its *keep* value, the
value that keeps everything (a Bernoulli draw 1, a uniform draw its low end, so that ``draw < p``
holds; a normal draw its mean), in the ONNX graph (``without_randomness``) as in torch
(``torch_randomness.no_randomness``; a module of its own, so that the checks that run only ONNX Runtime do
not import torch). A dropout then scales by ``1 / (1 - p)`` and keeps every element, in torch
(whose CPU dropout is ``bernoulli_`` and a division) and in ONNX (``Dropout`` in training mode with
its mask all true) alike.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

__all__ = ["RANDOM_OPS", "dropout_in_training_mode", "without_randomness"]

RANDOM_OPS = frozenset({"Dropout", "Bernoulli", "RandomUniform", "RandomUniformLike", "RandomNormal", "RandomNormalLike"})
_TRUE = "traincost/randomness/true"


def dropout_in_training_mode(graph: onnx.GraphProto) -> int:
    """Give every ``Dropout`` of a training-mode export that has no ``training_mode`` input one that is true; returns
    how many it changed.

    The legacy exporter's ``scaled_dot_product_attention`` (``nn.MultiheadAttention``, ``dropout_p > 0``)
    writes a ``Dropout`` with a ratio and no ``training_mode``, which ONNX reads as inference mode: the
    attention dropout would be neither drawn nor costed. ``nn.Dropout`` and functional dropout are
    exported with the input. A ``Dropout`` without a mask output gains one: the backward pass reads it.
    """
    changed = 0
    for node in graph.node:
        if node.op_type == "Dropout" and (len(node.input) < 3 or not node.input[2]):
            if _TRUE not in {init.name for init in graph.initializer}:
                graph.initializer.append(numpy_helper.from_array(np.array(True), _TRUE))
            while len(node.input) < 2:
                node.input.append("")
            node.input[2:] = [_TRUE]
            if len(node.output) < 2:  # ONNX Runtime's Dropout gradient reads the mask
                node.output.append(f"{node.output[0]}.mask")
            changed += 1
    return changed


def without_randomness(model: onnx.ModelProto) -> onnx.ModelProto:
    """``model`` with every random draw at its keep value (a copy; ``model`` itself if it draws nothing).

    A ``Dropout`` becomes its output ``x / (1 - ratio)`` in training mode (``x`` in inference mode) and a
    mask that is all true; a ``Bernoulli`` draw is all ones, a uniform draw all ``low``, a normal draw
    all ``mean``, in the dtype the node would have drawn.
    """
    if not any(node.op_type in RANDOM_OPS and not node.domain for node in model.graph.node):
        return model
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    nodes: list[onnx.NodeProto] = []
    for node in copy.graph.node:
        nodes += _kept(node) if node.op_type in RANDOM_OPS and not node.domain else [node]
    del copy.graph.node[:]
    copy.graph.node.extend(nodes)
    return copy


def _kept(node: onnx.NodeProto) -> list[onnx.NodeProto]:
    """The nodes that compute ``node``'s outputs with every draw at its keep value."""
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    prefix = f"{node.name or node.output[0]}.kept"
    if node.op_type == "Dropout":
        return _dropout_kept(node, prefix)
    value = {"Bernoulli": 1.0}.get(node.op_type, attrs.get("low", attrs.get("mean", 0.0)))
    out = node.output[0]
    if node.op_type in ("RandomUniform", "RandomNormal"):
        array = np.full(tuple(attrs["shape"]), value, dtype=helper.tensor_dtype_to_np_dtype(attrs.get("dtype", 1)))
        return [helper.make_node("Constant", [], [out], name=prefix, value=numpy_helper.from_array(array))]
    shape = f"{prefix}.shape"
    filled = f"{prefix}.filled"
    fill = numpy_helper.from_array(np.array([value], dtype=np.float64))
    made = [
        helper.make_node("Shape", [node.input[0]], [shape], name=f"{prefix}.shape"),
        helper.make_node("ConstantOfShape", [shape], [filled], name=f"{prefix}.fill", value=fill),
    ]
    if "dtype" in attrs:
        return [*made, helper.make_node("Cast", [filled], [out], name=f"{prefix}.cast", to=attrs["dtype"])]
    return [*made, helper.make_node("CastLike", [filled, node.input[0]], [out], name=f"{prefix}.cast")]


def _dropout_kept(node: onnx.NodeProto, prefix: str) -> list[onnx.NodeProto]:
    """A ``Dropout`` that keeps every element: ``x / (1 - ratio)`` in training mode, ``x`` otherwise; its mask all true."""
    x, ratio, training = (list(node.input) + ["", ""])[:3]
    made: list[onnx.NodeProto] = []

    def op(op_type: str, inputs: list[str], **attributes: object) -> str:
        name = f"{prefix}.{len(made)}"
        made.append(helper.make_node(op_type, inputs, [name], name=name, **attributes))
        return name

    if training:
        one = op("Constant", [], value=numpy_helper.from_array(np.array(1.0, dtype=np.float64)))
        rate = (
            op("Cast", [ratio], to=onnx.TensorProto.DOUBLE)
            if ratio
            else op("Constant", [], value=numpy_helper.from_array(np.array(0.5, dtype=np.float64)))
        )
        scale = op("Where", [training, op("Div", [one, op("Sub", [one, rate])]), one])
        made.append(helper.make_node("Mul", [x, op("CastLike", [scale, x])], [node.output[0]], name=f"{prefix}.scaled"))
    else:
        made.append(helper.make_node("Identity", [x], [node.output[0]], name=f"{prefix}.identity"))
    if len(node.output) > 1 and node.output[1]:
        everything = numpy_helper.from_array(np.array([True]))
        made.append(
            helper.make_node("ConstantOfShape", [op("Shape", [x])], [node.output[1]], name=f"{prefix}.mask", value=everything)
        )
    return made
