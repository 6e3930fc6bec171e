"""Rules that rewrite each composite op of an ONNX Runtime training graph into primitive ONNX ops.

One rule per operator. A rule writes the replaced node's outputs under the same names, so the rest
of the graph is untouched, and emits one primitive per gradient component: a convolution's input
gradient is a ConvTranspose (kind ``conv_dgrad``), its weight gradient a Conv over the batch axis
(kind ``conv_wgrad``), its bias gradient a ReduceSum. Every rule is checked by executing the graph
before and after (``decompose.verify_decomposition``).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import helper

from traincost.errors import UnsupportedOpError
from traincost.frontend.onnx.graph import NodeFactory
from traincost.frontend.onnx.shapes import TensorType, require

__all__ = ["RuleContext", "Rule", "RULES", "COMPOSITE_STANDARD_OPS"]

MS = "com.microsoft"


@dataclass(frozen=True, slots=True)
class RuleContext:
    """What a rule may read: the node, the tensor types, and a factory for the new nodes."""

    node: onnx.NodeProto
    types: Mapping[str, TensorType]
    constants: Mapping[str, np.ndarray]
    make: NodeFactory
    parameters: frozenset[str] = frozenset()  # trainable tensors among ``constants`` (forward rewrites)

    def input(self, i: int) -> str:
        return self.node.input[i] if i < len(self.node.input) else ""

    def output(self, i: int) -> str:
        return self.node.output[i] if i < len(self.node.output) else ""

    def type_of(self, name: str) -> TensorType:
        return require(self.types, name, self.node)

    def attr(self, name: str, default: object = None) -> object:
        for attribute in self.node.attribute:
            if attribute.name == name:
                return helper.get_attribute_value(attribute)
        return default

    def constant(self, i: int) -> np.ndarray:
        """The value of input ``i``, which must be an initializer."""
        name = self.input(i)
        if name not in self.constants:
            raise self.unsupported(f"input {i} ({name!r}) must be a constant to be decomposed")
        return self.constants[name]

    def unsupported(self, why: str) -> UnsupportedOpError:
        return UnsupportedOpError(f"node {self.node.name!r} ({self.node.op_type}): {why}")


Rule = Callable[[RuleContext], None]
RULES: dict[tuple[str, str], Rule] = {}

# Standard-domain ops that are still composites and get a rule.
COMPOSITE_STANDARD_OPS = frozenset({"SoftmaxCrossEntropyLoss"})


def rule(domain: str, *op_types: str) -> Callable[[Rule], Rule]:
    def register(function: Rule) -> Rule:
        for op_type in op_types:
            RULES[(domain, op_type)] = function
        return function

    return register


def _i64(make: NodeFactory, values: list[int] | tuple[int, ...], hint: str = "axes") -> str:
    return make.const(np.asarray(values, dtype=np.int64), hint)


def _f(make: NodeFactory, value: float, elem_type: int, hint: str = "c") -> str:
    return make.const(np.asarray(value, dtype=helper.tensor_dtype_to_np_dtype(elem_type)), hint)


def _channel_view(make: NodeFactory, vector: str, rank: int) -> str:
    """A per-channel vector (C,) as (1, C, 1, ...) for broadcasting against an NC... tensor."""
    return make.op("Unsqueeze", [vector, _i64(make, [0, *range(2, rank)])])


def _out(ctx: RuleContext, i: int) -> list[str] | None:
    name = ctx.output(i)
    return [name] if name else None


# --- convolution -------------------------------------------------------------------------------


@rule(MS, "ConvGrad")
def conv_grad(ctx: RuleContext) -> None:
    """ConvGrad(dY, X, W) → dX = ConvTranspose(dY, W), dW = Conv(Xᵀ, dYᵀ) with dilation = stride, dB = ΣdY.

    Grouped and depthwise convolutions (``group`` g > 1) keep the group on both: the ConvTranspose
    takes ``group`` = g, and the weight gradient convolves X laid out as C/g × (g·N) × H × W with dYᵀ
    (K × N × OY × OX) in g groups, so each output channel of group j meets only group j's inputs.
    """
    make = ctx.make
    d_y, x, w = ctx.input(0), ctx.input(1), ctx.input(2)
    x_t, w_t, dy_t = ctx.type_of(x), ctx.type_of(w), ctx.type_of(d_y)
    spatial = x_t.rank - 2
    group = int(ctx.attr("group", 1))
    if ctx.attr("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET"):
        raise ctx.unsupported("auto_pad is not supported; export with explicit pads")
    strides = list(ctx.attr("strides", [1] * spatial))
    dilations = list(ctx.attr("dilations", [1] * spatial))
    pads = list(ctx.attr("pads", [0] * 2 * spatial))
    kernel = list(w_t.shape[2:])
    if ctx.output(0):
        output_padding = [
            x_t.shape[2 + i]
            - (strides[i] * (dy_t.shape[2 + i] - 1) + (kernel[i] - 1) * dilations[i] + 1 - pads[i] - pads[spatial + i])
            for i in range(spatial)
        ]
        make.op(
            "ConvTranspose",
            [d_y, w],
            outputs=[ctx.output(0)],
            kind="conv_dgrad",
            strides=strides,
            dilations=dilations,
            pads=pads,
            output_padding=output_padding,
            **({"group": group} if group > 1 else {}),
        )
    if ctx.output(1):
        # dW[k, c, f] = Σ_{n, o} X[n, c, o·s + f·d − p] · dY[n, k, o]: a Conv of Xᵀ (C×N×H×W) with dYᵀ
        # (K×N×OY×OX) as kernel, strides = forward dilations, dilations = forward strides. Rows of
        # X past the last window would add kernel taps, so the end padding (or X itself) is cut.
        swap = [1, 0, *range(2, 2 + spatial)]
        wgrad_pads = list(pads)
        crop = []
        for i in range(spatial):
            reach = (x_t.shape[2 + i] + pads[i] + pads[spatial + i] - ((dy_t.shape[2 + i] - 1) * strides[i] + 1)) // dilations[
                i
            ] + 1
            wgrad_pads[spatial + i] = pads[spatial + i] - (reach - kernel[i]) * dilations[i]
            crop.append(x_t.shape[2 + i] + min(wgrad_pads[spatial + i], 0))
            wgrad_pads[spatial + i] = max(wgrad_pads[spatial + i], 0)
        x_used = x
        if crop != list(x_t.shape[2:]):
            axes = list(range(2, 2 + spatial))
            x_used = make.op("Slice", [x, _i64(make, [0] * spatial, "starts"), _i64(make, crop, "ends"), _i64(make, axes)])
        if group == 1:
            x_rows = make.op("Transpose", [x_used], perm=swap)
        else:  # N × C × S → N × g × C/g × S → C/g × g × N × S → C/g × (g·N) × S
            n, c = x_t.shape[0], x_t.shape[1]
            split = make.op("Reshape", [x_used, _i64(make, [n, group, c // group, *crop], "shape")])
            moved = make.op("Transpose", [split], perm=[2, 1, 0, *range(3, 3 + spatial)])
            x_rows = make.op("Reshape", [moved, _i64(make, [c // group, group * n, *crop], "shape")])
        d_w = make.op(
            "Conv",
            [x_rows, make.op("Transpose", [d_y], perm=swap)],
            kind="conv_wgrad",
            strides=dilations,
            dilations=strides,
            pads=wgrad_pads,
            **({"group": group} if group > 1 else {}),
        )
        make.op("Transpose", [d_w], outputs=[ctx.output(1)], perm=swap)
    if ctx.output(2):
        make.op("ReduceSum", [d_y, _i64(make, [0, *range(2, 2 + spatial)])], outputs=[ctx.output(2)], keepdims=0)


# --- normalisation ----------------------------------------------------------------------------


@rule(MS, "BatchNormInternal")
def batch_norm_internal(ctx: RuleContext) -> None:
    """Training-mode BatchNorm: batch statistics, normalised output, running-statistics update."""
    make = ctx.make
    x, scale, bias, run_mean, run_var = (ctx.input(i) for i in range(5))
    x_t = ctx.type_of(x)
    axes = [0, *range(2, x_t.rank)]
    eps = float(ctx.attr("epsilon", 1e-5))
    momentum = float(ctx.attr("momentum", 0.9))
    # Opset 17: ReduceMean takes its axes as an attribute (ReduceSum as an input).
    mean = make.op("ReduceMean", [x], axes=axes, keepdims=1)
    centered = make.op("Sub", [x, mean])
    var = make.op("ReduceMean", [make.op("Mul", [centered, centered])], axes=axes, keepdims=1)
    inv_std = make.op("Reciprocal", [make.op("Sqrt", [make.op("Add", [var, _f(make, eps, x_t.elem_type, "eps")])])])
    normalized = make.op("Mul", [centered, inv_std])
    scaled = make.op("Mul", [normalized, _channel_view(make, scale, x_t.rank)])
    make.op("Add", [scaled, _channel_view(make, bias, x_t.rank)], outputs=[ctx.output(0)])
    flat = _i64(make, [x_t.shape[1]], "shape")
    saved_mean = make.op("Reshape", [mean, flat], outputs=_out(ctx, 3))
    if ctx.output(4):
        make.op("Reshape", [inv_std, flat], outputs=[ctx.output(4)])
    keep = _f(make, momentum, x_t.elem_type, "momentum")
    take = _f(make, 1.0 - momentum, x_t.elem_type, "one_minus_momentum")
    if ctx.output(1):
        make.op("Add", [make.op("Mul", [run_mean, keep]), make.op("Mul", [saved_mean, take])], outputs=[ctx.output(1)])
    if ctx.output(2):
        # ONNX Runtime's BatchNormInternal updates the running variance with the biased batch
        # variance (torch uses the unbiased one); the rewrite keeps ORT's semantics.
        batch_var = make.op("Reshape", [var, flat])
        make.op("Add", [make.op("Mul", [run_var, keep]), make.op("Mul", [batch_var, take])], outputs=[ctx.output(2)])


@rule(MS, "BatchNormalizationGrad")
def batch_norm_grad(ctx: RuleContext) -> None:
    """dX = γ·σ⁻¹·(dY − (Σ dY + x̂·Σ dY·x̂)/M), dγ = Σ dY·x̂, dβ = Σ dY (sums over all but channels)."""
    make = ctx.make
    d_y, x, scale, mean, inv_std = (ctx.input(i) for i in range(5))
    x_t = ctx.type_of(x)
    axes = _i64(make, [0, *range(2, x_t.rank)])
    count = x_t.numel // x_t.shape[1]
    inv_std_b = _channel_view(make, inv_std, x_t.rank)
    x_hat = make.op("Mul", [make.op("Sub", [x, _channel_view(make, mean, x_t.rank)]), inv_std_b])
    d_bias = make.op("ReduceSum", [d_y, axes], outputs=_out(ctx, 2), keepdims=0)
    d_scale = make.op("ReduceSum", [make.op("Mul", [d_y, x_hat]), axes], outputs=_out(ctx, 1), keepdims=0)
    if ctx.output(0):
        correction = make.op(
            "Add", [_channel_view(make, d_bias, x_t.rank), make.op("Mul", [x_hat, _channel_view(make, d_scale, x_t.rank)])]
        )
        centered = make.op("Sub", [d_y, make.op("Mul", [correction, _f(make, 1.0 / count, x_t.elem_type)])])
        gain = make.op("Mul", [_channel_view(make, scale, x_t.rank), inv_std_b])
        make.op("Mul", [centered, gain], outputs=[ctx.output(0)])


@rule(MS, "LayerNormalizationGrad")
def layer_norm_grad(ctx: RuleContext) -> None:
    """Gradient of LayerNormalization over the axes from ``axis`` on, from its saved mean and 1/σ."""
    make = ctx.make
    d_y, x, scale, mean, inv_std = (ctx.input(i) for i in range(5))
    x_t = ctx.type_of(x)
    axis = int(ctx.attr("axis", -1)) % x_t.rank
    norm_axes = list(range(axis, x_t.rank))
    outer_axes = _i64(make, list(range(axis)))
    x_hat = make.op("Mul", [make.op("Sub", [x, mean]), inv_std])
    make.op("ReduceSum", [d_y, outer_axes], outputs=_out(ctx, 2), keepdims=0)
    make.op("ReduceSum", [make.op("Mul", [d_y, x_hat]), outer_axes], outputs=_out(ctx, 1), keepdims=0)
    if ctx.output(0):
        d_xhat = make.op("Mul", [d_y, scale])
        mean_d = make.op("ReduceMean", [d_xhat], axes=norm_axes, keepdims=1)
        mean_dx = make.op("ReduceMean", [make.op("Mul", [d_xhat, x_hat])], axes=norm_axes, keepdims=1)
        inner = make.op("Sub", [make.op("Sub", [d_xhat, mean_d]), make.op("Mul", [x_hat, mean_dx])])
        make.op("Mul", [inner, inv_std], outputs=[ctx.output(0)])


# --- activations ------------------------------------------------------------------------------


@rule(MS, "ReluGrad")
def relu_grad(ctx: RuleContext) -> None:
    """dX = dY where Y > 0, else 0."""
    make = ctx.make
    d_y, y = ctx.input(0), ctx.input(1)
    zero = _f(make, 0.0, ctx.type_of(y).elem_type, "zero")
    make.op("Where", [make.op("Greater", [y, zero]), d_y, zero], outputs=[ctx.output(0)])


@rule(MS, "LeakyReluGrad")
def leaky_relu_grad(ctx: RuleContext) -> None:
    """dX = dY where Y > 0, else α·dY."""
    make = ctx.make
    d_y, y = ctx.input(0), ctx.input(1)
    elem = ctx.type_of(y).elem_type
    alpha = float(ctx.attr("alpha", 0.01))
    negative = make.op("Mul", [d_y, _f(make, alpha, elem, "alpha")])
    make.op("Where", [make.op("Greater", [y, _f(make, 0.0, elem, "zero")]), d_y, negative], outputs=[ctx.output(0)])


@rule(MS, "TanhGrad")
def tanh_grad(ctx: RuleContext) -> None:
    """dX = dY·(1 − Y²)."""
    make = ctx.make
    d_y, y = ctx.input(0), ctx.input(1)
    one = _f(make, 1.0, ctx.type_of(y).elem_type, "one")
    make.op("Mul", [d_y, make.op("Sub", [one, make.op("Mul", [y, y])])], outputs=[ctx.output(0)])


@rule(MS, "SigmoidGrad")
def sigmoid_grad(ctx: RuleContext) -> None:
    """dX = dY·Y·(1 − Y)."""
    make = ctx.make
    d_y, y = ctx.input(0), ctx.input(1)
    one = _f(make, 1.0, ctx.type_of(y).elem_type, "one")
    make.op("Mul", [make.op("Mul", [d_y, y]), make.op("Sub", [one, y])], outputs=[ctx.output(0)])


def _with_bias(ctx: RuleContext, index: int) -> tuple[str, int]:
    """Input ``index`` plus the optional bias at ``index + 1`` (the Bias* variants of the GELU ops), and its element type."""
    x = ctx.input(index)
    elem = ctx.type_of(x).elem_type
    if ctx.input(index + 1):
        x = ctx.make.op("Add", [x, ctx.input(index + 1)])
    return x, elem


@rule(MS, "GeluGrad", "BiasGeluGrad_dX")
def gelu_grad(ctx: RuleContext) -> None:
    """Exact GELU: dX = dY·(Φ(x) + x·φ(x)), x = X (+ bias for BiasGeluGrad_dX)."""
    make = ctx.make
    d_y = ctx.input(0)
    x, elem = _with_bias(ctx, 1)
    cdf = make.op(
        "Mul",
        [
            make.op("Add", [make.op("Erf", [make.op("Mul", [x, _f(make, 1 / math.sqrt(2), elem)])]), _f(make, 1.0, elem)]),
            _f(make, 0.5, elem),
        ],
    )
    pdf = make.op(
        "Mul",
        [
            make.op("Exp", [make.op("Mul", [make.op("Mul", [x, x]), _f(make, -0.5, elem)])]),
            _f(make, 1 / math.sqrt(2 * math.pi), elem),
        ],
    )
    make.op("Mul", [d_y, make.op("Add", [cdf, make.op("Mul", [x, pdf])])], outputs=[ctx.output(0)])


@rule(MS, "Gelu", "BiasGelu")
def gelu(ctx: RuleContext) -> None:
    """Exact GELU (torch's default ``nn.GELU``): Y = X·Φ(X) = ½·X·(1 + erf(X/√2)), X plus the bias for BiasGelu."""
    make = ctx.make
    x, elem = _with_bias(ctx, 0)
    erf = make.op("Erf", [make.op("Mul", [x, _f(make, 1 / math.sqrt(2), elem)])])
    half_x = make.op("Mul", [x, _f(make, 0.5, elem, "half")])
    make.op("Mul", [half_x, make.op("Add", [erf, _f(make, 1.0, elem, "one")])], outputs=[ctx.output(0)])


@rule(MS, "QuickGelu")
def quick_gelu(ctx: RuleContext) -> None:
    """Y = X·σ(α·X): ONNX Runtime's fusion of SiLU / Swish (α = 1) and of the sigmoid GELU (α = 1.702)."""
    make = ctx.make
    x = ctx.input(0)
    alpha = float(ctx.attr("alpha", 1.702))
    sigmoid = make.op("Sigmoid", [make.op("Mul", [x, _f(make, alpha, ctx.type_of(x).elem_type, "alpha")])])
    make.op("Mul", [x, sigmoid], outputs=[ctx.output(0)])


@rule(MS, "QuickGeluGrad")
def quick_gelu_grad(ctx: RuleContext) -> None:
    """dX = dY·(s + α·X·s·(1 − s)), s = σ(α·X)."""
    make = ctx.make
    d_y, x = ctx.input(0), ctx.input(1)
    elem = ctx.type_of(x).elem_type
    alpha_x = make.op("Mul", [x, _f(make, float(ctx.attr("alpha", 1.702)), elem, "alpha")])
    s = make.op("Sigmoid", [alpha_x])
    slope = make.op("Mul", [make.op("Mul", [alpha_x, s]), make.op("Sub", [_f(make, 1.0, elem, "one"), s])])
    make.op("Mul", [d_y, make.op("Add", [s, slope])], outputs=[ctx.output(0)])


# √(2/π) and the cubic coefficient of the tanh approximation of GELU (torch's approximate="tanh").
_TANH_GELU_SCALE = math.sqrt(2 / math.pi)
_TANH_GELU_CUBIC = 0.044715


def _tanh_gelu_inner(ctx: RuleContext, x: str, elem: int) -> str:
    """tanh(√(2/π)·(x + 0.044715·x³))."""
    make = ctx.make
    cube = make.op("Mul", [make.op("Mul", [x, x]), x])
    inner = make.op("Add", [x, make.op("Mul", [cube, _f(make, _TANH_GELU_CUBIC, elem, "cubic")])])
    return make.op("Tanh", [make.op("Mul", [inner, _f(make, _TANH_GELU_SCALE, elem, "scale")])])


@rule(MS, "FastGelu")
def fast_gelu(ctx: RuleContext) -> None:
    """Tanh-approximate GELU: Y = ½·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), x = X (+ bias)."""
    make = ctx.make
    x, elem = _with_bias(ctx, 0)
    tanh = _tanh_gelu_inner(ctx, x, elem)
    half_x = make.op("Mul", [x, _f(make, 0.5, elem, "half")])
    make.op("Mul", [half_x, make.op("Add", [tanh, _f(make, 1.0, elem, "one")])], outputs=[ctx.output(0)])


@rule(MS, "FastGeluGrad", "BiasFastGeluGrad_dX")
def fast_gelu_grad(ctx: RuleContext) -> None:
    """dX = dY·(½·(1 + t) + ½·x·(1 − t²)·√(2/π)·(1 + 3·0.044715·x²)), t = tanh(…), x = X (+ bias)."""
    make = ctx.make
    d_y = ctx.input(0)
    x, elem = _with_bias(ctx, 1)
    tanh = _tanh_gelu_inner(ctx, x, elem)
    one = _f(make, 1.0, elem, "one")
    half = _f(make, 0.5, elem, "half")
    slope = make.op("Add", [one, make.op("Mul", [make.op("Mul", [x, x]), _f(make, 3 * _TANH_GELU_CUBIC, elem, "cubic3")])])
    sech2 = make.op("Sub", [one, make.op("Mul", [tanh, tanh])])
    d_tanh = make.op("Mul", [make.op("Mul", [sech2, slope]), _f(make, _TANH_GELU_SCALE, elem, "scale")])
    derivative = make.op("Mul", [make.op("Add", [make.op("Add", [one, tanh]), make.op("Mul", [x, d_tanh])]), half])
    make.op("Mul", [d_y, derivative], outputs=[ctx.output(0)])


def _softmax_axis(ctx: RuleContext) -> int:
    """The non-negative axis of a (log-)softmax gradient. The opset-11 forms (no ``_13``) flatten
    to 2-D around the axis, which equals a plain reduction only for the last axis."""
    rank = ctx.type_of(ctx.input(1)).rank
    axis = int(ctx.attr("axis", -1)) % rank
    if not ctx.node.op_type.endswith("_13") and axis != rank - 1:
        raise ctx.unsupported(f"opset-11 {ctx.node.op_type} is only decomposed for the last axis")
    return axis


@rule(MS, "SoftmaxGrad_13", "SoftmaxGrad")
def softmax_grad(ctx: RuleContext) -> None:
    """dX = Y·(dY − Σ dY·Y) along the softmax axis."""
    make = ctx.make
    d_y, y = ctx.input(0), ctx.input(1)
    total = make.op("ReduceSum", [make.op("Mul", [d_y, y]), _i64(make, [_softmax_axis(ctx)])], keepdims=1)
    make.op("Mul", [y, make.op("Sub", [d_y, total])], outputs=[ctx.output(0)])


@rule(MS, "LogSoftmaxGrad_13", "LogSoftmaxGrad")
def log_softmax_grad(ctx: RuleContext) -> None:
    """dX = dY − exp(Y)·Σ dY along the axis (Y = log-softmax output)."""
    make = ctx.make
    d_y, y = ctx.input(0), ctx.input(1)
    total = make.op("ReduceSum", [d_y, _i64(make, [_softmax_axis(ctx)])], keepdims=1)
    make.op("Sub", [d_y, make.op("Mul", [make.op("Exp", [y]), total])], outputs=[ctx.output(0)])


@rule(MS, "DropoutGrad")
def dropout_grad(ctx: RuleContext) -> None:
    """dX = dY·mask/(1 − ratio)."""
    make = ctx.make
    d_y, mask, ratio = ctx.input(0), ctx.input(1), ctx.input(2)
    elem = ctx.type_of(d_y).elem_type
    kept = make.op("Mul", [d_y, make.op("Cast", [mask], to=elem)])
    if ratio:
        one = _f(make, 1.0, elem, "one")
        keep_scale = make.op("Div", [one, make.op("Sub", [one, make.op("Cast", [ratio], to=elem)])])
    else:
        keep_scale = _f(make, 2.0, elem, "keep_scale")
    make.op("Mul", [kept, keep_scale], outputs=[ctx.output(0)])


# --- loss -------------------------------------------------------------------------------------


def _check_plain_loss(ctx: RuleContext, first_optional_input: int) -> str:
    if ctx.attr("ignore_index") is not None or ctx.input(first_optional_input):
        raise ctx.unsupported("class weights and ignore_index are not decomposed")
    reduction = ctx.attr("reduction", b"mean")
    reduction = reduction.decode() if isinstance(reduction, bytes) else str(reduction)
    if reduction not in ("mean", "sum"):
        raise ctx.unsupported(f"reduction {reduction!r} is not decomposed (mean or sum)")
    return reduction


@rule("", "SoftmaxCrossEntropyLoss")
def softmax_cross_entropy(ctx: RuleContext) -> None:
    """loss = −mean(log_softmax(logits)[label]); also writes log_prob."""
    make = ctx.make
    reduction = _check_plain_loss(ctx, 2)
    logits, labels = ctx.input(0), ctx.input(1)
    if ctx.type_of(logits).rank != 2:
        raise ctx.unsupported("only (N, C) logits are decomposed; flatten the model output")
    log_prob = make.op("LogSoftmax", [logits], outputs=_out(ctx, 1), kind="softmax", axis=1)
    picked = make.op("GatherElements", [log_prob, make.op("Unsqueeze", [labels, _i64(make, [1])])], axis=1)
    reduce_op = "ReduceMean" if reduction == "mean" else "ReduceSum"
    make.op("Neg", [make.op(reduce_op, [picked], keepdims=0)], outputs=[ctx.output(0)])


@rule(MS, "SoftmaxCrossEntropyLossGrad")
def softmax_cross_entropy_grad(ctx: RuleContext) -> None:
    """dlogits = (softmax − onehot(label))·dloss (/N for the mean)."""
    make = ctx.make
    reduction = _check_plain_loss(ctx, 3)
    d_loss, log_prob, labels = ctx.input(0), ctx.input(1), ctx.input(2)
    lp_t = ctx.type_of(log_prob)
    n, classes = lp_t.shape
    np_type = helper.tensor_dtype_to_np_dtype(lp_t.elem_type)
    one_hot = make.op(
        "OneHot",
        [labels, _i64(make, [classes], "depth"), make.const(np.asarray([0, 1], dtype=np_type), "values")],
        axis=-1,
    )
    diff = make.op("Sub", [make.op("Exp", [log_prob]), one_hot])
    factor = d_loss if reduction == "sum" else make.op("Mul", [d_loss, _f(make, 1.0 / n, lp_t.elem_type)])
    make.op("Mul", [diff, factor], outputs=[ctx.output(0)])


# --- data movement and linear algebra ---------------------------------------------------------


@rule(MS, "Scale")
def scale(ctx: RuleContext) -> None:
    """Y = A·s, or A/s with scale_down."""
    make = ctx.make
    a, s = ctx.input(0), ctx.input(1)
    elem = ctx.type_of(a).elem_type
    if ctx.type_of(s).elem_type != elem:
        s = make.op("Cast", [s], to=elem)
    make.op("Div" if int(ctx.attr("scale_down", 0)) else "Mul", [a, s], outputs=[ctx.output(0)])


@rule(MS, "FusedMatMul")
def fused_matmul(ctx: RuleContext) -> None:
    """Y = α·op(A)·op(B) with op a transpose of the last two axes."""
    make = ctx.make
    if int(ctx.attr("transBatchA", 0)) or int(ctx.attr("transBatchB", 0)):
        raise ctx.unsupported("transBatchA/transBatchB are not decomposed")
    operands = []
    for i, flag in ((0, "transA"), (1, "transB")):
        name = ctx.input(i)
        if int(ctx.attr(flag, 0)):
            rank = ctx.type_of(name).rank
            name = make.op("Transpose", [name], perm=[*range(rank - 2), rank - 1, rank - 2])
        operands.append(name)
    alpha = float(ctx.attr("alpha", 1.0))
    if alpha == 1.0:
        make.op("MatMul", operands, outputs=[ctx.output(0)])
    else:
        product = make.op("MatMul", operands)
        make.op("Mul", [product, _f(make, alpha, ctx.type_of(ctx.input(0)).elem_type, "alpha")], outputs=[ctx.output(0)])


def _sum_to(ctx: RuleContext, value: str, full: tuple[int, ...], target: tuple[int, ...], output: str) -> None:
    """Write ``value`` (of the broadcast shape ``full``) summed over the axes broadcasting added to
    ``target`` into ``output``."""
    make = ctx.make
    lead = len(full) - len(target)
    axes = [*range(lead), *(lead + i for i, d in enumerate(target) if d == 1 and full[lead + i] != 1)]
    if not axes:
        make.op("Identity", [value], outputs=[output])
        return
    summed = make.op("ReduceSum", [value, _i64(make, axes)], keepdims=1)
    make.op("Reshape", [summed, _i64(make, list(target), "shape")], outputs=[output])


@rule(MS, "DivGrad")
def div_grad(ctx: RuleContext) -> None:
    """Y = A/B: dA = dY/B, dB = −dY·A/B², each summed back over the axes broadcasting added."""
    make = ctx.make
    d_y, a, b = ctx.input(0), ctx.input(1), ctx.input(2)
    full = ctx.type_of(d_y).shape
    if ctx.output(0):
        _sum_to(ctx, make.op("Div", [d_y, b]), full, ctx.type_of(a).shape, ctx.output(0))
    if ctx.output(1):
        ratio = make.op("Div", [make.op("Div", [a, b]), b])
        _sum_to(ctx, make.op("Neg", [make.op("Mul", [d_y, ratio])]), full, ctx.type_of(b).shape, ctx.output(1))


@rule("", "MaxPoolGrad")
@rule(MS, "MaxPoolGrad")
def max_pool_grad(ctx: RuleContext) -> None:
    """dX = scatter-add of dY into the positions MaxPool's indices (flat over N·C·H·W) point at."""
    make = ctx.make
    d_y, indices = ctx.input(0), ctx.input(1)
    x_t = ctx.type_of(ctx.output(0))
    zeros = make.op(
        "ConstantOfShape",
        [_i64(make, [x_t.numel], "shape")],
        value=helper.make_tensor("zero", x_t.elem_type, [1], [0]),
    )
    flat = _i64(make, [-1], "shape")
    scattered = make.op(
        "ScatterElements",
        [zeros, make.op("Reshape", [indices, flat]), make.op("Reshape", [d_y, flat])],
        kind="pool",
        axis=0,
        reduction="add",
    )
    make.op("Reshape", [scattered, _i64(make, list(x_t.shape), "shape")], outputs=[ctx.output(0)])


@rule(MS, "GatherGrad")
def gather_grad(ctx: RuleContext) -> None:
    """dW = scatter-add of dY rows into zeros(shape) at the gathered indices.

    Over another axis a (a ViT's class token, ``x[:, 0]``), the scatter runs with a moved to the front:
    dY's index dimensions first, the result moved back.
    """
    make = ctx.make
    shape, indices, d_y = ctx.input(0), ctx.input(1), ctx.input(2)
    out_t = ctx.type_of(ctx.output(0))
    rank = out_t.rank
    axis = int(ctx.attr("axis", 0)) % rank
    zero = helper.make_tensor("zero", out_t.elem_type, [1], [0])
    index = make.op("Unsqueeze", [make.op("Cast", [indices], to=onnx.TensorProto.INT64), _i64(make, [-1])])
    if axis == 0:
        zeros = make.op("ConstantOfShape", [shape], value=zero)
        make.op("ScatterND", [zeros, index, d_y], outputs=[ctx.output(0)], reduction="add")
        return
    index_rank = ctx.type_of(indices).rank
    front = [axis, *range(axis), *range(axis + 1, rank)]  # the gathered axis first
    moved_shape = [out_t.shape[i] for i in front]
    zeros = make.op("ConstantOfShape", [_i64(make, moved_shape, "shape")], value=zero)
    dy_front = [*range(axis, axis + index_rank), *range(axis), *range(axis + index_rank, ctx.type_of(d_y).rank)]
    d_y_moved = make.op("Transpose", [d_y], perm=dy_front)
    scattered = make.op("ScatterND", [zeros, index, d_y_moved], reduction="add")
    make.op("Transpose", [scattered], outputs=[ctx.output(0)], perm=[front.index(i) for i in range(rank)])


@rule(MS, "GatherElementsGrad")
def gather_elements_grad(ctx: RuleContext) -> None:
    """dX = scatter-add of dY into zeros(shape) along ``axis``."""
    make = ctx.make
    d_y, shape, indices = ctx.input(0), ctx.input(1), ctx.input(2)
    out_t = ctx.type_of(ctx.output(0))
    zeros = make.op("ConstantOfShape", [shape], value=helper.make_tensor("zero", out_t.elem_type, [1], [0]))
    make.op("ScatterElements", [zeros, indices, d_y], outputs=[ctx.output(0)], axis=int(ctx.attr("axis", 0)), reduction="add")


@rule(MS, "ConcatTraining")
def concat_training(ctx: RuleContext) -> None:
    """Concat, plus the per-input lengths along the axis when they are used."""
    make = ctx.make
    axis = int(ctx.attr("axis", 0))
    inputs = list(ctx.node.input)
    make.op("Concat", inputs, outputs=[ctx.output(0)], axis=axis)
    if ctx.output(1):
        lengths = [ctx.type_of(name).shape[axis] for name in inputs]
        make.op("Identity", [_i64(make, lengths, "lengths")], outputs=[ctx.output(1)])


@rule(MS, "SplitTraining")
def split_training(ctx: RuleContext) -> None:
    """Split with the sizes given as an input."""
    make = ctx.make
    axis = int(ctx.attr("axis", 0))
    make.op("Split", [ctx.input(0), ctx.input(1)], outputs=list(ctx.node.output), axis=axis)


@rule(MS, "SliceGrad")
def slice_grad(ctx: RuleContext) -> None:
    """dX = dY put back where the slice took it (constant bounds, positive steps), zeros elsewhere.

    Along an axis sliced with step ``s`` (PatchMerging's ``x[..., 0::2, ...]``), dY's elements are spread
    ``s`` apart: a new axis after it padded with ``s - 1`` zeros, merged back (Unsqueeze, Pad, Reshape), the
    trailing zeros past the axis's end cut off; then every axis is zero-padded to the sliced tensor's shape.
    """
    make = ctx.make
    out_t = ctx.type_of(ctx.output(0))
    rank = out_t.rank
    starts, ends = ctx.constant(2), ctx.constant(3)
    axes = ctx.constant(4) if ctx.input(4) else np.arange(len(starts))
    steps = ctx.constant(5) if ctx.input(5) else np.ones(len(starts), dtype=np.int64)
    if np.any(steps <= 0):
        raise ctx.unsupported("slices with negative steps are not decomposed")
    grad, shape = ctx.input(0), list(ctx.type_of(ctx.input(0)).shape)
    pads = [0] * (2 * rank)
    for start, end, signed_axis, step in zip(starts.tolist(), ends.tolist(), axes.tolist(), steps.tolist(), strict=True):
        axis = signed_axis % rank
        dim = out_t.shape[axis]
        first = min(max(start + dim if start < 0 else start, 0), dim)
        last = min(max(end + dim if end < 0 else end, 0), dim)
        if step > 1 and shape[axis] > 0:
            spread_pads = [0] * (2 * (rank + 1))
            spread_pads[rank + 1 + axis + 1] = step - 1
            spread = make.op("Pad", [make.op("Unsqueeze", [grad, _i64(make, [axis + 1])]), _i64(make, spread_pads, "pads")])
            spread_len, kept = shape[axis] * step, min(shape[axis] * step, dim - first)
            grad = make.op("Reshape", [spread, _i64(make, [*shape[:axis], spread_len, *shape[axis + 1 :]], "shape")])
            if kept < spread_len:  # the last element's trailing zeros run past the axis's end
                grad = make.op("Slice", [grad, _i64(make, [0], "starts"), _i64(make, [kept], "ends"), _i64(make, [axis])])
            shape[axis], last = kept, first + kept
        pads[axis], pads[rank + axis] = first, dim - last
    make.op("Pad", [grad, _i64(make, pads, "pads")], outputs=[ctx.output(0)], mode="constant")


@rule("", "AveragePoolGrad")
@rule(MS, "AveragePoolGrad")
def average_pool_grad(ctx: RuleContext) -> None:
    """dX = ConvTranspose of dY (one channel at a time) with a k×k kernel of 1/(k·k); padded pooling that does not
    count the padding (PoolFormer's ``AvgPool2d(count_include_pad=False)``) divides each dY by its window's count of
    input elements first and spreads it with a kernel of ones."""
    make = ctx.make
    d_y = ctx.input(0)
    dy_t, x_t = ctx.type_of(d_y), ctx.type_of(ctx.output(0))
    spatial = x_t.rank - 2
    kernel = list(ctx.attr("kernel_shape"))
    strides = list(ctx.attr("strides", [1] * spatial))
    pads = list(ctx.attr("pads", [0] * 2 * spatial))
    excluded = any(pads) and not int(ctx.attr("count_include_pad", 0))
    if excluded and int(ctx.attr("ceil_mode", 0)):
        raise ctx.unsupported("padded average pooling in ceil mode without count_include_pad is not decomposed")
    if kernel == [1] * spatial and strides == [1] * spatial and not any(pads):
        make.op("Identity", [d_y], outputs=[ctx.output(0)])
        return
    n, c = x_t.shape[:2]
    dtype = helper.tensor_dtype_to_np_dtype(x_t.elem_type)
    weights = np.full([1, 1, *kernel], 1.0 if excluded else 1.0 / math.prod(kernel), dtype=dtype)
    output_padding = [
        x_t.shape[2 + i] - (strides[i] * (dy_t.shape[2 + i] - 1) + kernel[i] - pads[i] - pads[spatial + i])
        for i in range(spatial)
    ]
    planes = make.op("Reshape", [d_y, _i64(make, [n * c, 1, *dy_t.shape[2:]], "shape")])
    if excluded:  # each output's divisor: the input elements its window covers
        counts = [
            [min(o * strides[i] - pads[i] + kernel[i], x_t.shape[2 + i]) - max(o * strides[i] - pads[i], 0) for o in range(size)]
            for i, size in enumerate(dy_t.shape[2:])
        ]
        divisor = functools.reduce(np.multiply, np.ix_(*[np.asarray(axis, dtype=np.float64) for axis in counts]))
        planes = make.op("Mul", [planes, make.const((1.0 / divisor).astype(dtype)[None, None], "inverse_counts")])
    spread = make.op(
        "ConvTranspose",
        [planes, make.const(weights, "kernel")],
        kind="pool",
        strides=strides,
        pads=pads,
        output_padding=output_padding,
    )
    make.op("Reshape", [spread, _i64(make, list(x_t.shape), "shape")], outputs=[ctx.output(0)])
