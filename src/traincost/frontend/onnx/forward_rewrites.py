"""Forward ops rewritten into primitive ops before ONNX Runtime Training builds their gradients.

ONNX Runtime 1.19's gradient builder has no gradient for ``HardSwish``, ``HardSigmoid``, ``Elu``,
``Selu``, ``Celu``, ``Softplus`` (torch's ``Mish`` exports one), ``PRelu``, ``DepthToSpace`` (torch's
``PixelShuffle``) and ``InstanceNormalization`` (which torch's ``GroupNorm`` exports), and the gradients it builds for
``ConvTranspose`` and ``Resize`` (``ConvTransposeGrad``, ``ResizeGrad``) have no CPU kernel, so the
training graph could not be executed or checked. Each such forward node is replaced, under the same
output names, by standard ops whose gradients ONNX Runtime builds and our rules decompose. Every
rewrite is checked by executing the forward graph before and after (``tests/unit/test_forward_rewrites.py``).
"""

from __future__ import annotations

import json
import math
import re
from collections import ChainMap
from collections.abc import Callable

import numpy as np
import onnx
from onnx import helper

from traincost.errors import GraphError, UnsupportedOpError
from traincost.frontend.onnx.backward_recompute import REWRITES_META
from traincost.frontend.onnx.execute import example_feeds, run
from traincost.frontend.onnx.gelu_fusion import fuse_tanh_gelu
from traincost.frontend.onnx.gradient_rules import RuleContext
from traincost.frontend.onnx.graph import (
    IR_VERSION,
    OPSET,
    NodeFactory,
    initializer_values,
    model_meta,
    producers,
    set_model_meta,
)
from traincost.frontend.onnx.shapes import TensorType, tensor_types
from traincost.frontend.shared.rounding import max_relative_error

__all__ = ["FORWARD_REWRITES", "TOLERANCE", "no_gradient_error", "rewrite_forward"]

# How ONNX Runtime Training 1.19 reports a forward op it cannot differentiate.
_NO_GRADIENT = re.compile(r"gradient builder has not been registered: (\S+) for node (\S+)")
# Largest relative difference allowed between a rewritten node's outputs and the original's.
TOLERANCE = 1e-5

ForwardRewrite = Callable[[RuleContext], None]
FORWARD_REWRITES: dict[str, ForwardRewrite] = {}


def _rewrite(op_type: str) -> Callable[[ForwardRewrite], ForwardRewrite]:
    def register(function: ForwardRewrite) -> ForwardRewrite:
        FORWARD_REWRITES[op_type] = function
        return function

    return register


def rewrite_forward(model: onnx.ModelProto, *, seed: int = 0) -> onnx.ModelProto:
    """A copy of the forward graph ``model`` in which every op of ``FORWARD_REWRITES`` is replaced
    and every exported tanh-approximate GELU is fused into one FastGelu (``gelu_fusion``).

    The copy is checked by execution: on a batch drawn with ``seed``, every output of a replaced
    node or fused GELU must equal the original's within ``TOLERANCE``.

    Raises:
        UnsupportedOpError: for such an op with attributes a rewrite does not cover, naming the node.
        GraphError: a rewritten node's output differs from the original's, naming the node.
    """
    fused, checked = fuse_tanh_gelu(model)
    graph = fused.graph
    targets = [node for node in graph.node if node.domain in ("", "ai.onnx") and node.op_type in FORWARD_REWRITES]
    if not targets and not checked:
        return model
    types = tensor_types(graph)
    parameters = frozenset(init.name for init in graph.initializer)
    computed = _computed(fused, targets, types)
    constants = ChainMap(computed, initializer_values(graph))  # the weights an op reads become arrays, no others
    types |= {name: TensorType(value.shape, helper.np_dtype_to_tensor_dtype(value.dtype)) for name, value in computed.items()}
    nodes = list(graph.node)
    written_by = {name: node for node in nodes for name in node.output if name}
    if fused is model:
        result = onnx.ModelProto()
        result.CopyFrom(model)
    else:  # the GELU fusion's own copy, rewritten in place: GPT-2 124M's weights are not copied once more
        result = fused
    del result.graph.node[:]
    for node in nodes:
        if node not in targets:
            result.graph.node.append(node)
            continue
        make = NodeFactory(node.name or node.output[0])
        FORWARD_REWRITES[node.op_type](RuleContext(node=node, types=types, constants=constants, make=make, parameters=parameters))
        result.graph.node.extend(make.nodes)
        result.graph.initializer.extend(make.initializers)
    replaced = [*checked, *(name for node in targets for name in node.output if name)]
    _check(model, result, {name: written_by[name] for name in replaced}, seed=seed)
    recorded = json.loads(model_meta(result).get(REWRITES_META, "{}"))
    set_model_meta(
        result, **{REWRITES_META: json.dumps(recorded | {node.name: node.op_type for node in targets}, sort_keys=True)}
    )
    return result


def no_gradient_error(graph_name: str, message: str) -> UnsupportedOpError | None:
    """The one-line error for ONNX Runtime Training's failure ``message`` if it is a forward op with no
    gradient builder (which neither ORT nor ``FORWARD_REWRITES`` covers), else None."""
    found = _NO_GRADIENT.search(message)
    if found is None:
        return None
    op_type, node = found.groups()
    return UnsupportedOpError(
        f"graph {graph_name!r}: ONNX Runtime Training has no gradient for {op_type} (node {node!r}) and no forward "
        "rewrite replaces it; write that part of the model with ops it lists (docs/operators.md lists the layers that train)"
    )


def _check(before: onnx.ModelProto, after: onnx.ModelProto, written_by: dict[str, onnx.NodeProto], *, seed: int) -> None:
    """Each tensor of ``written_by``, computed by the nodes of ``after`` that replace its writer, equals its value in
    ``before`` on one batch, the replacement reading the very tensors ``before`` computed; an error names its node.

    One execution of ``before`` gives the replacements' inputs and the expected values; the replacements then run
    alone on them, not in a second execution of the whole graph.
    """
    nodes, inputs = _replacements(before, after, list(written_by))
    feeds = example_feeds(before, seed=seed) if "model" in model_meta(before) else _random_feeds(before, seed=seed)
    expected = run(before, feeds, list(dict.fromkeys([*inputs, *written_by])))
    graph = helper.make_graph(
        nodes,
        f"{after.graph.name}_forward_rewrites",
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(expected[n].dtype), expected[n].shape) for n in inputs],
        [helper.make_empty_tensor_value_info(name) for name in written_by],
        initializer=[init for init in after.graph.initializer if init.name in {i for node in nodes for i in node.input}],
    )
    part = helper.make_model(graph, opset_imports=list(after.opset_import))
    part.ir_version = after.ir_version
    actual = run(part, {name: expected[name] for name in inputs})
    for name, node in written_by.items():
        error = max_relative_error(expected[name], actual[name])
        if not error <= TOLERANCE:
            raise GraphError(f"node {node.name!r} ({node.op_type}): its forward rewrite differs by {error:.2e} (> {TOLERANCE})")


def _replacements(before: onnx.ModelProto, after: onnx.ModelProto, outputs: list[str]) -> tuple[list[onnx.NodeProto], list[str]]:
    """The nodes of ``after`` that compute ``outputs`` from tensors ``before`` computes too, and those tensors."""
    known = {name for node in before.graph.node for name in node.output} | {value.name for value in before.graph.input}
    writers = producers(after.graph)
    stack, chosen = list(outputs), set()
    while stack:
        node = writers.get(stack.pop())
        if node is not None and id(node) not in chosen:
            chosen.add(id(node))
            stack.extend(name for name in node.input if name and name not in known)
    nodes = [node for node in after.graph.node if id(node) in chosen]
    made = {name for node in nodes for name in node.output}
    read = dict.fromkeys(name for node in nodes for name in node.input if name and name not in made)
    return nodes, [name for name in read if name in known]


def _random_feeds(model: onnx.ModelProto, *, seed: int) -> dict[str, np.ndarray]:
    """Standard-normal floats (zeros for other types) for the inputs of a graph not written by traincost export."""
    rng = np.random.default_rng(seed)
    initialized = {init.name for init in model.graph.initializer}
    feeds = {}
    for value in model.graph.input:
        if value.name in initialized:
            continue
        tensor = value.type.tensor_type
        dims = [d.dim_value for d in tensor.shape.dim]
        dtype = helper.tensor_dtype_to_np_dtype(tensor.elem_type)
        floating = np.issubdtype(dtype, np.floating)
        feeds[value.name] = rng.standard_normal(dims).astype(dtype) if floating else np.zeros(dims, dtype)
    return feeds


def _computed(model: onnx.ModelProto, targets: list[onnx.NodeProto], types: dict[str, TensorType]) -> dict[str, np.ndarray]:
    """Values of the Resize scales/sizes and normalisation scale/bias the targets read, which torch
    computes with Constant and Concat nodes, and the outputs whose shape shape inference left
    unknown: the graph is run once on random inputs to read them."""
    initialized = {init.name for init in model.graph.initializer}
    parameters = {name for node in targets if node.op_type in ("Resize", "InstanceNormalization") for name in node.input[1:]}
    untyped = {name for node in targets for name in node.output if name not in types}
    wanted = sorted((parameters | untyped) - initialized - {""})
    if not wanted:
        return {}
    return run(model, _random_feeds(model, seed=0), wanted)


def _f(make: NodeFactory, value: float | np.ndarray, elem_type: int, hint: str = "c") -> str:
    return make.const(np.asarray(value, dtype=helper.tensor_dtype_to_np_dtype(elem_type)), hint)


def _i64(make: NodeFactory, values: list[int], hint: str) -> str:
    return make.const(np.asarray(values, dtype=np.int64), hint)


def _clip01(make: NodeFactory, z: str, elem: int) -> str:
    """min(max(z, 0), 1) as Relu(z) − Relu(z − 1): two ReLUs, whose gradient ONNX Runtime builds."""
    return make.op("Sub", [make.op("Relu", [z]), make.op("Relu", [make.op("Sub", [z, _f(make, 1.0, elem, "one")])])])


# --- activations ------------------------------------------------------------------------------


@_rewrite("HardSigmoid")
def hard_sigmoid(ctx: RuleContext) -> None:
    """Y = clip(α·X + β, 0, 1)."""
    make, x = ctx.make, ctx.input(0)
    elem = ctx.type_of(x).elem_type
    alpha, beta = float(ctx.attr("alpha", 0.2)), float(ctx.attr("beta", 0.5))
    z = make.op("Add", [make.op("Mul", [x, _f(make, alpha, elem, "alpha")]), _f(make, beta, elem, "beta")])
    make.op("Identity", [_clip01(make, z, elem)], outputs=[ctx.output(0)])


@_rewrite("HardSwish")
def hard_swish(ctx: RuleContext) -> None:
    """Y = X·clip(X/6 + ½, 0, 1) (torch's ``nn.Hardswish``)."""
    make, x = ctx.make, ctx.input(0)
    elem = ctx.type_of(x).elem_type
    z = make.op("Add", [make.op("Mul", [x, _f(make, 1 / 6, elem, "sixth")]), _f(make, 0.5, elem, "half")])
    make.op("Mul", [x, _clip01(make, z, elem)], outputs=[ctx.output(0)])


@_rewrite("Einsum")
def einsum(ctx: RuleContext) -> None:
    """Two-operand einsum as one batched MatMul between Transposes and Reshapes (MaxViT's attention).

    The operands are transposed and reshaped to (batch, kept, contracted) and (batch, contracted, kept), multiplied,
    then reshaped and transposed to the output's order; an index in one operand only and not in the output is summed
    first (torchvision MaxViT's ``B G H I D, B G H J D -> B G H I J``).
    """
    make = ctx.make
    equation = ctx.attr("equation")
    equation = (equation.decode() if isinstance(equation, bytes) else str(equation)).replace(" ", "")
    if "->" not in equation or "." in equation or len(ctx.node.input) != 2:
        raise ctx.unsupported(f"einsum {equation!r}: only two operands with an explicit output and no ellipsis")
    operands, out = equation.split("->")
    subscripts = operands.split(",")
    if any(len(set(sub)) != len(sub) for sub in subscripts) or len(set(out)) != len(out):
        raise ctx.unsupported(f"einsum {equation!r}: an index repeated within an operand (a trace or diagonal)")
    size = {}
    names = [ctx.input(0), ctx.input(1)]
    for k, sub in enumerate(subscripts):
        size |= dict(zip(sub, ctx.type_of(names[k]).shape, strict=True))
    for k, sub in enumerate(subscripts):  # summed in this operand alone
        alone = [axis for axis, index in enumerate(sub) if index not in subscripts[1 - k] and index not in out]
        if alone:
            names[k] = make.op("ReduceSum", [names[k], _i64(make, alone, "axes")], keepdims=0)
            subscripts[k] = "".join(index for axis, index in enumerate(sub) if axis not in alone)
    a, b = subscripts
    batch = [i for i in a if i in b and i in out]
    contracted = [i for i in a if i in b and i not in out]
    left, right = [i for i in a if i not in b], [i for i in b if i not in a]

    def matrix(name: str, sub: str, order: list[str], rows: list[str]) -> str:
        moved = make.op("Transpose", [name], perm=[sub.index(i) for i in order])
        shape = [math.prod(size[i] for i in batch), math.prod(size[i] for i in rows), -1]
        return make.op("Reshape", [moved, _i64(make, shape, "shape")])

    product = make.op(
        "MatMul",
        [matrix(names[0], a, batch + left + contracted, left), matrix(names[1], b, batch + contracted + right, contracted)],
    )
    order = batch + left + right
    spread = make.op("Reshape", [product, _i64(make, [size[i] for i in order], "shape")])
    make.op("Transpose", [spread], outputs=[ctx.output(0)], perm=[order.index(i) for i in out])


@_rewrite("Elu")
def elu(ctx: RuleContext) -> None:
    """Y = max(X, 0) + α·(exp(min(X, 0)) − 1), with min(X, 0) = −Relu(−X) (no overflow for large X)."""
    make, x = ctx.make, ctx.input(0)
    elem = ctx.type_of(x).elem_type
    alpha = float(ctx.attr("alpha", 1.0))
    negative_part = make.op("Neg", [make.op("Relu", [make.op("Neg", [x])])])
    decay = make.op("Sub", [make.op("Exp", [negative_part]), _f(make, 1.0, elem, "one")])
    make.op("Add", [make.op("Relu", [x]), make.op("Mul", [decay, _f(make, alpha, elem, "alpha")])], outputs=[ctx.output(0)])


def _exp_of_negative_part(make: NodeFactory, x: str, elem: int, scale: float) -> str:
    """exp(min(X, 0)/scale) − 1, with min(X, 0) = −Relu(−X) (no overflow for large X)."""
    negative_part = make.op("Neg", [make.op("Relu", [make.op("Neg", [x])])])
    if scale != 1.0:
        negative_part = make.op("Mul", [negative_part, _f(make, 1 / scale, elem, "inverse_alpha")])
    return make.op("Sub", [make.op("Exp", [negative_part]), _f(make, 1.0, elem, "one")])


@_rewrite("Selu")
def selu(ctx: RuleContext) -> None:
    """Y = γ·(max(X, 0) + α·(exp(min(X, 0)) − 1))."""
    make, x = ctx.make, ctx.input(0)
    elem = ctx.type_of(x).elem_type
    alpha, gamma = float(ctx.attr("alpha", 1.67326319217681884765625)), float(ctx.attr("gamma", 1.05070102214813232421875))
    decay = make.op("Mul", [_exp_of_negative_part(make, x, elem, 1.0), _f(make, alpha, elem, "alpha")])
    inner = make.op("Add", [make.op("Relu", [x]), decay])
    make.op("Mul", [inner, _f(make, gamma, elem, "gamma")], outputs=[ctx.output(0)])


@_rewrite("Celu")
def celu(ctx: RuleContext) -> None:
    """Y = max(X, 0) + α·(exp(min(X, 0)/α) − 1)."""
    make, x = ctx.make, ctx.input(0)
    elem = ctx.type_of(x).elem_type
    alpha = float(ctx.attr("alpha", 1.0))
    decay = make.op("Mul", [_exp_of_negative_part(make, x, elem, alpha), _f(make, alpha, elem, "alpha")])
    make.op("Add", [make.op("Relu", [x]), decay], outputs=[ctx.output(0)])


@_rewrite("Softplus")
def softplus(ctx: RuleContext) -> None:
    """Y = max(X, 0) + log(1 + exp(−|X|)), |X| = Relu(X) + Relu(−X) (no overflow for large |X|)."""
    make, x = ctx.make, ctx.input(0)
    elem = ctx.type_of(x).elem_type
    positive = make.op("Relu", [x])
    magnitude = make.op("Add", [positive, make.op("Relu", [make.op("Neg", [x])])])
    tail = make.op("Log", [make.op("Add", [make.op("Exp", [make.op("Neg", [magnitude])]), _f(make, 1.0, elem, "one")])])
    make.op("Add", [positive, tail], outputs=[ctx.output(0)])


@_rewrite("PRelu")
def prelu(ctx: RuleContext) -> None:
    """Y = Relu(X) − slope·Relu(−X) (the slope a learned tensor broadcast against X)."""
    make, x, slope = ctx.make, ctx.input(0), ctx.input(1)
    negative = make.op("Mul", [make.op("Relu", [make.op("Neg", [x])]), slope])
    make.op("Sub", [make.op("Relu", [x]), negative], outputs=[ctx.output(0)])


# --- normalisation ----------------------------------------------------------------------------


@_rewrite("InstanceNormalization")
def instance_norm(ctx: RuleContext) -> None:
    """Y = LayerNormalization over the axes from 2 on (no affine), times the per-channel scale, plus bias.

    torch's ``GroupNorm`` exports a Reshape to N × G × rest, InstanceNormalization with a computed
    scale of ones and bias of zeros, a Reshape back and its own affine: those constants are skipped
    (an initializer is a parameter, kept even when it holds ones or zeros). The
    LayerNormalization keeps its mean and 1/σ as outputs, as torch keeps them for the backward pass.
    """
    make = ctx.make
    x, scale, bias = ctx.input(0), ctx.input(1), ctx.input(2)
    x_t = ctx.type_of(x)
    elem = x_t.elem_type
    normalized_shape = list(x_t.shape[2:])
    ones = _f(make, np.ones(normalized_shape), elem, "ones")
    zeros = _f(make, np.zeros(normalized_shape), elem, "zeros")
    scale_value, bias_value = ctx.constants.get(scale), ctx.constants.get(bias)
    plain_scale = scale not in ctx.parameters and scale_value is not None and bool(np.all(scale_value == 1))
    plain_bias = bias not in ctx.parameters and bias_value is not None and bool(np.all(bias_value == 0))
    stats = [make.fresh("mean"), make.fresh("inv_std_dev")]
    eps = float(ctx.attr("epsilon", 1e-5))
    if plain_scale and plain_bias:
        make.op("LayerNormalization", [x, ones, zeros], outputs=[ctx.output(0), *stats], axis=2, epsilon=eps)
        return
    y = make.op("LayerNormalization", [x, ones, zeros], outputs=[make.fresh("normalized"), *stats], axis=2, epsilon=eps)
    channel = _i64(make, [x_t.shape[1], *[1] * (x_t.rank - 2)], "shape")
    if not plain_scale:
        y = make.op("Mul", [y, make.op("Reshape", [scale, channel])])
    if not plain_bias:
        y = make.op("Add", [y, make.op("Reshape", [bias, channel])])
    make.op("Identity", [y], outputs=[ctx.output(0)])


# --- resampling -------------------------------------------------------------------------------


@_rewrite("Resize")
def resize(ctx: RuleContext) -> None:
    """Y = X resampled along each spatial axis by a constant interpolation matrix, as a MatMul.

    Nearest, linear and cubic resizing are separable: output o of an axis is Σ_i A[o, i]·X[i]. Each
    axis's A is read off ONNX Runtime's own Resize kernel, run with the node's attributes on the
    unit vectors of that axis, so every coordinate-transformation and rounding mode is the kernel's.
    Nearest upsampling by an integer factor is instead an Expand (a copy, no MACs).
    """
    make, x = ctx.make, ctx.input(0)
    x_t, y_t = ctx.type_of(x), ctx.type_of(ctx.output(0))
    mode = _text(ctx.attr("coordinate_transformation_mode", b"half_pixel"))
    if mode == "tf_crop_and_resize":
        raise ctx.unsupported("coordinate_transformation_mode tf_crop_and_resize is not rewritten")
    if x_t.shape[:2] != y_t.shape[:2] or x_t.rank not in (3, 4):
        raise ctx.unsupported("only 1-D and 2-D resizing of N×C×… tensors (batch and channels unchanged) is rewritten")
    spatial = list(range(2, x_t.rank))
    factors = [y_t.shape[a] // x_t.shape[a] for a in spatial]
    scales = ctx.constants.get(ctx.input(2)) if ctx.input(2) else None
    integer = all(y_t.shape[a] == f * x_t.shape[a] for a, f in zip(spatial, factors, strict=True))
    if (
        _text(ctx.attr("mode", b"nearest")) == "nearest"
        and mode == "asymmetric"
        and integer
        and (scales is None or np.allclose(scales[2:], factors))
    ):
        _nearest_integer_upsample(ctx, factors)
        return
    y = x
    for axis in reversed(spatial):
        matrix = _interpolation_matrix(ctx, axis)
        if np.array_equal(matrix, np.eye(len(matrix))):
            continue
        if axis == x_t.rank - 1:
            y = make.op("MatMul", [y, _f(make, matrix.T, x_t.elem_type, "interpolation")])
        else:
            y = make.op("MatMul", [_f(make, matrix, x_t.elem_type, "interpolation"), y])
    make.op("Identity", [y], outputs=[ctx.output(0)])


def _nearest_integer_upsample(ctx: RuleContext, factors: list[int]) -> None:
    """N×C×H×W → N×C×H×1×W×1, expanded to N×C×H×f×W×g, reshaped to N×C×fH×gW."""
    make, x = ctx.make, ctx.input(0)
    x_t = ctx.type_of(x)
    spatial = x_t.rank - 2
    unit_axes = [3 + 2 * i for i in range(spatial)]
    spread = make.op("Unsqueeze", [x, _i64(make, unit_axes, "axes")])
    target = [*x_t.shape[:2], *[d for i in range(spatial) for d in (x_t.shape[2 + i], factors[i])]]
    copied = make.op("Expand", [spread, _i64(make, target, "shape")])
    make.op("Reshape", [copied, _i64(make, list(ctx.type_of(ctx.output(0)).shape), "shape")], outputs=[ctx.output(0)])


def _interpolation_matrix(ctx: RuleContext, axis: int) -> np.ndarray:
    """A (out × in) along ``axis``: ONNX Runtime's Resize, with the node's attributes, of the unit vectors."""
    x_t, y_t = ctx.type_of(ctx.input(0)), ctx.type_of(ctx.output(0))
    length, out = x_t.shape[axis], y_t.shape[axis]
    shape_in = [length] + [1] * (x_t.rank - 1)
    shape_in[axis] = length
    if ctx.input(2) and ctx.input(2) in ctx.constants and ctx.constants[ctx.input(2)].size:
        factors = [1.0] * x_t.rank
        factors[axis] = float(ctx.constants[ctx.input(2)][axis])
        inputs = ["x", "", helper.make_tensor("scales", onnx.TensorProto.FLOAT, [x_t.rank], factors)]
    else:
        sizes = list(shape_in)
        sizes[axis] = out
        inputs = ["x", "", "", helper.make_tensor("sizes", onnx.TensorProto.INT64, [x_t.rank], sizes)]
    initializers = [t for t in inputs if isinstance(t, onnx.TensorProto)]
    names = [t.name if isinstance(t, onnx.TensorProto) else t for t in inputs]
    attributes = {a.name: helper.get_attribute_value(a) for a in ctx.node.attribute}
    node = helper.make_node("Resize", names, ["y"], **attributes)
    graph = helper.make_graph(
        [node],
        "interpolation",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, shape_in)],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)],
        initializer=initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = IR_VERSION
    basis = np.eye(length, dtype=np.float32).reshape(shape_in)
    responses = run(model, {"x": basis})["y"].reshape(length, -1)
    if responses.shape[1] != out:
        raise ctx.unsupported(f"resizing axis {axis} from {length} gives {responses.shape[1]} values, not {out}")
    return responses.T.astype(np.float64)


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


@_rewrite("DepthToSpace")
def depth_to_space(ctx: RuleContext) -> None:
    """torch's ``PixelShuffle``: Reshape, Transpose, Reshape (DCR or CRD order, as the ``mode`` says)."""
    make, x = ctx.make, ctx.input(0)
    n, c, h, w = ctx.type_of(x).shape
    b = int(ctx.attr("blocksize"))
    if _text(ctx.attr("mode", b"DCR")) == "DCR":
        split, perm = [n, b, b, c // (b * b), h, w], [0, 3, 4, 1, 5, 2]
    else:
        split, perm = [n, c // (b * b), b, b, h, w], [0, 1, 4, 2, 5, 3]
    moved = make.op("Transpose", [make.op("Reshape", [x, _i64(make, split, "shape")])], perm=perm)
    make.op("Reshape", [moved, _i64(make, [n, c // (b * b), h * b, w * b], "shape")], outputs=[ctx.output(0)])


# --- transposed convolution --------------------------------------------------------------------


@_rewrite("ConvTranspose")
def conv_transpose(ctx: RuleContext) -> None:
    """Y = ConvTranspose(X, W) as one Conv that computes all s_y·s_x output phases, then a depth-to-space.

    With stride s, output row o (o + p = q·s + r) sums X[q − j]·W[r + j·s]: phase r is a stride-1
    convolution of X (padded by K' − 1, K' = ⌈k/s⌉) with the flipped sub-kernel W[r::s]. The phases
    are the output channels of one Conv (weights W rearranged: K'·s taps per axis, zero beyond k),
    interleaved back by Reshape/Transpose and cropped to Y. The MACs are the transposed convolution's
    when s divides k (plus the borders), never the s²-fold of convolving a zero-inserted input.
    """
    make, x, w = ctx.make, ctx.input(0), ctx.input(1)
    x_t, w_t, y_t = ctx.type_of(x), ctx.type_of(w), ctx.type_of(ctx.output(0))
    if x_t.rank != 4:
        raise ctx.unsupported("only 2-D transposed convolutions are rewritten")
    if list(ctx.attr("dilations", [1, 1])) != [1, 1]:
        raise ctx.unsupported("dilated transposed convolutions are not rewritten")
    if _text(ctx.attr("auto_pad", b"NOTSET")) != "NOTSET":
        raise ctx.unsupported("auto_pad is not rewritten; export with explicit pads")
    group = int(ctx.attr("group", 1))
    strides = list(ctx.attr("strides", [1, 1]))
    pads = list(ctx.attr("pads", [0, 0, 0, 0]))
    c_in, c_out_g, kernel = w_t.shape[0], w_t.shape[1], list(w_t.shape[2:])
    c_in_g, c_out = c_in // group, c_out_g * group
    taps = [math.ceil(k / s) for k, s in zip(kernel, strides, strict=True)]
    # Q per axis: enough phase rows that Q·s covers the crop pads[i] + Y's length.
    rows = [max(x_t.shape[2 + i] + taps[i] - 1, math.ceil((pads[i] + y_t.shape[2 + i]) / strides[i])) for i in range(2)]
    # Weights: C_in × C_out/g × k × k → zero-padded to K'·s taps → (g, C_in/g, C_out/g, K', s, K', s)
    # → (g, C_out/g, s, s, C_in/g, K', K') → (C_out·s·s, C_in/g, K', K'), flipped along the taps.
    sy, sx = strides
    padded = make.op(
        "Pad", [w, _i64(make, [0, 0, 0, 0, 0, 0, taps[0] * sy - kernel[0], taps[1] * sx - kernel[1]], "pads")], mode="constant"
    )
    split = make.op("Reshape", [padded, _i64(make, [group, c_in_g, c_out_g, taps[0], sy, taps[1], sx], "shape")])
    moved = make.op("Transpose", [split], perm=[0, 2, 4, 6, 1, 3, 5])
    phases = make.op("Reshape", [moved, _i64(make, [c_out * sy * sx, c_in_g, taps[0], taps[1]], "shape")])
    for axis in (2, 3):
        reverse = _i64(make, list(range(taps[axis - 2] - 1, -1, -1)), "reverse")
        phases = make.op("Gather", [phases, reverse], axis=axis)
    conv_pads = [taps[0] - 1, taps[1] - 1, rows[0] - x_t.shape[2], rows[1] - x_t.shape[3]]
    z = make.op("Conv", [x, phases], pads=conv_pads, **({"group": group} if group > 1 else {}))
    n = x_t.shape[0]
    z = make.op("Reshape", [z, _i64(make, [n, c_out, sy, sx, rows[0], rows[1]], "shape")])
    z = make.op("Transpose", [z], perm=[0, 1, 4, 2, 5, 3])
    z = make.op("Reshape", [z, _i64(make, [n, c_out, rows[0] * sy, rows[1] * sx], "shape")])
    ends = [pads[0] + y_t.shape[2], pads[1] + y_t.shape[3]]
    crop = make.op("Slice", [z, _i64(make, pads[:2], "starts"), _i64(make, ends, "ends"), _i64(make, [2, 3], "axes")])
    if ctx.input(2):
        bias = make.op("Reshape", [ctx.input(2), _i64(make, [c_out, 1, 1], "shape")])
        make.op("Add", [crop, bias], outputs=[ctx.output(0)])
    else:
        make.op("Identity", [crop], outputs=[ctx.output(0)])
