"""The layers of today's CNNs and transformers, one small network each, through the front end.

For each layer: ONNX Runtime Training's graph (after the forward rewrites of ``forward_rewrites``)
gives the same SGD step as ``torch.optim.SGD`` (1e-4), its decomposition into standard ops is
verified by execution, and the op types ONNX Runtime emits for it are the ones ``docs/operators.md``
lists. ``LAYERS`` is the source of that page (``tests/unit/test_operators_doc.py``).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import onnx
import pytest
import torch
from onnx import helper, numpy_helper
from torch import nn

from traincost import models
from traincost.errors import GraphError, UnsupportedOpError
from traincost.frontend.onnx.decompose import decompose, is_primitive, rewrite_node
from traincost.frontend.onnx.execute import example_feeds, run
from traincost.frontend.onnx.export import export_model
from traincost.frontend.onnx.forward_rewrites import FORWARD_REWRITES, rewrite_forward
from traincost.frontend.onnx.shapes import tensor_types
from traincost.frontend.onnx.train_graph import build_train_step
from traincost.frontend.onnx.verification import verify_decomposition
from traincost.frontend.shared.optimizer import OptimizerSpec
from traincost.frontend.shared.rounding import TOLERANCE, max_relative_error

pytestmark = pytest.mark.ort  # the ONNX front end throughout (tests/conftest.py: pytest_ignore_collect)

BATCH, LR, CLASSES = 2, 0.1, 10


class _Attention(nn.Module):
    """torch's ``scaled_dot_product_attention`` over 6 tokens of width 8 (2 heads), with a mask or not."""

    def __init__(self, mask: str) -> None:
        super().__init__()
        self.qkv, self.out, self.mask = nn.Linear(8, 24), nn.Linear(6 * 8, CLASSES), mask

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.qkv(x).reshape(x.shape[0], 6, 3, 2, 4).permute(2, 0, 3, 1, 4)
        match self.mask:
            case "causal":
                y = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            case "boolean":
                y = nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=torch.ones(6, 6, dtype=torch.bool).tril())
            case "additive":
                y = nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=torch.linspace(-1, 1, 36).reshape(6, 6))
            case _:
                y = nn.functional.scaled_dot_product_attention(q, k, v)
        return self.out(y.transpose(1, 2).reshape(x.shape[0], -1))


class _ConcatSplit(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv, self.head = nn.Conv2d(4, 6, 1), nn.Linear(6 * 6 * 6, CLASSES)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        first, second = self.conv(x).split([2, 4], dim=1)
        return self.head(torch.cat([second, first * 2], dim=1).flatten(1))


class _GatherElements(nn.Module):
    """``torch.gather`` of the conv's channels, one index map per position, then the head."""

    def __init__(self) -> None:
        super().__init__()
        self.conv, self.head = nn.Conv2d(4, 6, 1), nn.Linear(3 * 6 * 6, CLASSES)
        self.register_buffer("index", torch.tensor([5, 0, 3]).reshape(1, 3, 1, 1).expand(BATCH, 3, 6, 6).contiguous())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.conv(x).gather(1, self.index).flatten(1))


class _StridedSlices(nn.Module):
    """Swin's PatchMerging (``x[..., 0::2, 1::2]`` and its three siblings, concatenated) and a step of 4 whose last
    element's spacing runs past the map's end (rows 1 and 5 of 6)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv, self.head = nn.Conv2d(4, 6, 1), nn.Linear(4 * 6 * 3 * 3 + 6 * 2 * 6, CLASSES)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x)
        merged = torch.cat([y[:, :, 0::2, 0::2], y[:, :, 1::2, 0::2], y[:, :, 0::2, 1::2], y[:, :, 1::2, 1::2]], dim=1)
        return self.head(torch.cat([merged.flatten(1), y[:, :, 1::4, :].flatten(1)], dim=1))


class _SelfAttentionDropout(nn.Module):
    """``nn.MultiheadAttention`` with attention dropout (torch's exporter writes that Dropout without its training mode)."""

    def __init__(self) -> None:
        super().__init__()
        self.attention, self.head = nn.MultiheadAttention(8, 2, dropout=0.25, batch_first=True), nn.Linear(6 * 8, CLASSES)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.attention(x, x, x, need_weights=False)[0].flatten(1))


class _Einsum(nn.Module):
    """MaxViT's attention as it writes it: ``torch.einsum`` for Q Kᵀ and for the product with V, plus an index summed in
    one operand alone."""

    def __init__(self) -> None:
        super().__init__()
        self.qkv, self.out = nn.Linear(8, 24), nn.Linear(6 * 8, CLASSES)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.qkv(x).reshape(x.shape[0], 6, 3, 2, 4).permute(2, 0, 3, 1, 4)
        scores = torch.einsum("b g i d, b g j d -> b g i j", q, k).softmax(-1)
        y = torch.einsum("bgij,bgjd->bigd", scores, v) + torch.einsum("bgid,bgje->bige", q, v)
        return self.out(y.reshape(x.shape[0], -1))


class _Embedding(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed, self.head = nn.Embedding(CLASSES, 8), nn.Linear(8, CLASSES)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.head(self.embed(tokens)).reshape(-1, CLASSES)


def _conv_then(*layers: nn.Module, side: int = 6, channels: int = 6) -> Callable[[], nn.Module]:
    """A 1x1 convolution (4 → 6 channels on 6x6), ``layers``, a linear head over channels × side²."""
    return lambda: nn.Sequential(
        nn.Conv2d(4, 6, 1), *copy.deepcopy(layers), nn.Flatten(), nn.Linear(channels * side * side, CLASSES)
    )


@dataclass(frozen=True)
class Layer:
    """A layer of a modern network, in a network small enough to check in a second."""

    name: str
    torch_layer: str
    build: Callable[[], nn.Module]
    shape: tuple[int, ...] = (4, 6, 6)
    input_kind: str = "image"


LAYERS = {
    layer.name: layer
    for layer in (
        Layer(
            "dilated_conv",
            "nn.Conv2d(dilation=2)",
            lambda: nn.Sequential(nn.Conv2d(4, 6, 3, dilation=2, padding=2), nn.Flatten(), nn.Linear(216, CLASSES)),
        ),
        Layer("grouped_conv", "nn.Conv2d(groups=2)", _conv_then(nn.Conv2d(6, 6, 3, padding=1, groups=2))),
        Layer("depthwise_conv", "nn.Conv2d(groups=channels)", _conv_then(nn.Conv2d(6, 6, 3, padding=1, groups=6))),
        Layer(
            "conv_transpose",
            "nn.ConvTranspose2d(stride=2, output_padding=1)",
            _conv_then(nn.ConvTranspose2d(6, 4, 3, stride=2, padding=1, output_padding=1), side=12, channels=4),
        ),
        Layer(
            "conv_transpose_grouped",
            "nn.ConvTranspose2d(kernel 4, stride 2, groups=2)",
            _conv_then(nn.ConvTranspose2d(6, 4, 4, stride=2, padding=1, groups=2), side=12, channels=4),
        ),
        Layer("gelu", "nn.GELU()", _conv_then(nn.GELU())),
        Layer("gelu_tanh", "nn.GELU(approximate='tanh')", _conv_then(nn.GELU(approximate="tanh"))),
        Layer("silu", "nn.SiLU()", _conv_then(nn.SiLU())),
        Layer("hardswish", "nn.Hardswish()", _conv_then(nn.Hardswish())),
        Layer("leaky_relu", "nn.LeakyReLU(0.1)", _conv_then(nn.LeakyReLU(0.1))),
        Layer("sigmoid", "nn.Sigmoid()", _conv_then(nn.Sigmoid())),
        Layer("tanh", "nn.Tanh()", _conv_then(nn.Tanh())),
        Layer("hardsigmoid", "nn.Hardsigmoid()", _conv_then(nn.Hardsigmoid())),
        Layer("elu", "nn.ELU()", _conv_then(nn.ELU())),
        Layer("selu", "nn.SELU()", _conv_then(nn.SELU())),
        Layer("celu", "nn.CELU(0.5)", _conv_then(nn.CELU(0.5))),
        Layer("softplus", "nn.Softplus()", _conv_then(nn.Softplus())),
        Layer("mish", "nn.Mish()", _conv_then(nn.Mish())),
        Layer("prelu", "nn.PReLU(6)", _conv_then(nn.PReLU(6))),
        Layer("softsign", "nn.Softsign()", _conv_then(nn.Softsign())),
        Layer("batchnorm", "nn.BatchNorm2d", _conv_then(nn.BatchNorm2d(6), nn.ReLU())),
        Layer("groupnorm", "nn.GroupNorm(3, 6)", _conv_then(nn.GroupNorm(3, 6))),
        Layer("instancenorm", "nn.InstanceNorm2d(6, affine=True)", _conv_then(nn.InstanceNorm2d(6, affine=True))),
        Layer(
            "layernorm",
            "nn.LayerNorm",
            lambda: nn.Sequential(nn.Conv2d(4, 6, 1), nn.Flatten(), nn.LayerNorm(216), nn.Linear(216, CLASSES)),
        ),
        Layer("embedding", "nn.Embedding", _Embedding, shape=(5,), input_kind="tokens"),
        Layer("attention", "F.scaled_dot_product_attention", lambda: _Attention("none"), shape=(6, 8)),
        Layer("attention_causal", "F.scaled_dot_product_attention(is_causal=True)", lambda: _Attention("causal"), shape=(6, 8)),
        Layer(
            "attention_boolean_mask",
            "F.scaled_dot_product_attention(attn_mask=bool)",
            lambda: _Attention("boolean"),
            shape=(6, 8),
        ),
        Layer(
            "attention_additive_mask",
            "F.scaled_dot_product_attention(attn_mask=float)",
            lambda: _Attention("additive"),
            shape=(6, 8),
        ),
        Layer("einsum", "torch.einsum (MaxViT's attention)", _Einsum, shape=(6, 8)),
        Layer("upsample_nearest", "nn.Upsample(scale_factor=2)", _conv_then(nn.Upsample(scale_factor=2), side=12)),
        Layer(
            "upsample_bilinear",
            "nn.Upsample(scale_factor=2, mode='bilinear')",
            _conv_then(nn.Upsample(scale_factor=2, mode="bilinear"), side=12),
        ),
        Layer(
            "upsample_bilinear_aligned",
            "nn.Upsample(size=9, mode='bilinear', align_corners=True)",
            _conv_then(nn.Upsample(size=9, mode="bilinear", align_corners=True), side=9),
        ),
        Layer(
            "upsample_bicubic",
            "nn.Upsample(scale_factor=1.5, mode='bicubic')",
            _conv_then(nn.Upsample(scale_factor=1.5, mode="bicubic"), side=9),
        ),
        Layer(
            "pixel_shuffle",
            "nn.PixelShuffle(2)",
            lambda: nn.Sequential(nn.Conv2d(4, 8, 1), nn.PixelShuffle(2), nn.Flatten(), nn.Linear(2 * 12 * 12, CLASSES)),
        ),
        Layer("concat_split", "torch.cat, torch.split", _ConcatSplit),
        Layer("gather_elements", "torch.gather", _GatherElements),
        Layer(
            "log_softmax",
            "nn.LogSoftmax(dim=1)",
            lambda: nn.Sequential(nn.Conv2d(4, 6, 1), nn.Flatten(), nn.Linear(216, CLASSES), nn.LogSoftmax(dim=1)),
        ),
        Layer("adaptive_avg_pool", "nn.AdaptiveAvgPool2d(1)", _conv_then(nn.AdaptiveAvgPool2d(1), side=1)),
        Layer("adaptive_avg_pool_3", "nn.AdaptiveAvgPool2d(3)", _conv_then(nn.AdaptiveAvgPool2d(3), side=3)),
        Layer("adaptive_avg_pool_4", "nn.AdaptiveAvgPool2d(4) of a 6x6 map", _conv_then(nn.AdaptiveAvgPool2d(4), side=4)),
        Layer("max_pool", "nn.MaxPool2d(2)", _conv_then(nn.MaxPool2d(2), side=3)),
        Layer(
            "avg_pool_without_padding",
            "nn.AvgPool2d(3, 2, 1, count_include_pad=False) (PoolFormer's, strided)",
            _conv_then(nn.AvgPool2d(3, 2, 1, count_include_pad=False), side=3),
        ),
        Layer("strided_slice", "x[..., 0::2, 1::2] (Swin's PatchMerging)", _StridedSlices),
        Layer("dropout", "nn.Dropout(0.3)", _conv_then(nn.Dropout(0.3))),
        Layer("attention_dropout", "nn.MultiheadAttention(dropout=0.25)", _SelfAttentionDropout, shape=(6, 8)),
    )
}


def register(monkeypatch: pytest.MonkeyPatch, layer: Layer) -> str:
    """Make the network of ``layer`` a zoo entry for the rest of the test; returns its name."""
    rows = layer.shape[0] if layer.input_kind == "tokens" else 1
    sample = models.SampleSpec(shape=layer.shape, rows=rows, num_classes=CLASSES)
    arch = models.Architecture(layer.name, layer.torch_layer, layer.build, layer.input_kind, {}, lambda: sample)
    monkeypatch.setattr(models, "ARCHITECTURES", {**models.ARCHITECTURES, layer.name: arch})
    return layer.name


_BUILT: dict[str, tuple[onnx.ModelProto, onnx.ModelProto]] = {}


def built(monkeypatch: pytest.MonkeyPatch, layer: Layer) -> tuple[onnx.ModelProto, onnx.ModelProto]:
    """The exported forward graph and SGD train step of ``layer``'s network at batch ``BATCH``
    (built once per test session); the network stays registered for the rest of the test."""
    register(monkeypatch, layer)
    if layer.name not in _BUILT:
        forward = export_model(layer.name, batch=BATCH, seed=0)
        _BUILT[layer.name] = forward, build_train_step(forward, OptimizerSpec(kind="sgd", lr=LR))
    return _BUILT[layer.name]


def _torch_sgd_step(layer: Layer) -> dict[str, np.ndarray]:
    torch.manual_seed(0)
    model = models.build_model(layer.name)
    model.train()
    inputs, labels = models.make_batch(layer.name, batch=BATCH, seed=0)
    loss = nn.functional.cross_entropy(model(inputs), labels)
    loss.backward()
    torch.optim.SGD(model.parameters(), lr=LR).step()
    return {"loss": loss.detach().numpy()} | {n: p.detach().numpy().copy() for n, p in model.named_parameters()}


_RANDOM = frozenset({"dropout", "attention_dropout"})


@pytest.mark.parametrize("name", list(LAYERS))
def test_a_layer_trains_as_in_torch_and_decomposes(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    layer = LAYERS[name]
    _, train = built(monkeypatch, layer)
    if name in _RANDOM:  # torch and ONNX Runtime draw different masks: the step is compared without
        expected = None
    else:
        expected = _torch_sgd_step(layer)
        outputs = run(train, example_feeds(train, seed=0, states="zeros"))
        assert max_relative_error(expected["loss"], outputs["loss"]) < 1e-5
        for param in (p for p in expected if p != "loss"):
            assert max_relative_error(expected[param], outputs[f"{param}.updated"]) < 1e-4, param
    after = decompose(train)
    assert all(is_primitive(node) for node in after.graph.node)
    check = verify_decomposition(train, after)
    assert max(check.per_rule.values(), default=0.0) <= TOLERANCE, check.per_rule
    assert check.end_to_end["loss"] <= TOLERANCE


def _single(nodes: onnx.NodeProto | list[onnx.NodeProto], inputs: dict[str, np.ndarray]) -> onnx.ModelProto:
    """A model of ``nodes`` over float ``inputs`` whose last node's first output is the graph output."""
    node = nodes[-1] if isinstance(nodes, list) else nodes
    graph = helper.make_graph(
        nodes if isinstance(nodes, list) else [nodes],
        "single",
        [helper.make_tensor_value_info(n, onnx.TensorProto.FLOAT, a.shape) for n, a in inputs.items()],
        [helper.make_tensor_value_info(node.output[0], onnx.TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 10
    return model


@pytest.mark.parametrize(
    "attrs",
    [
        dict(strides=[2, 2], pads=[1, 1, 1, 1], output_padding=[1, 1]),
        dict(strides=[3, 2], pads=[0, 2, 1, 0], group=2),
        dict(strides=[1, 1], pads=[1, 1, 1, 1]),
        dict(strides=[2, 2], pads=[0, 0, 0, 0], output_padding=[1, 0]),
    ],
)
def test_the_conv_transpose_rewrite_equals_the_operator(attrs: dict) -> None:
    """Strides that do not divide the kernel, asymmetric pads, output padding and groups."""
    rng = np.random.default_rng(0)
    group = attrs.get("group", 1)
    x = rng.standard_normal((2, 4, 5, 6)).astype(np.float32)
    w = rng.standard_normal((4, 6 // group, 3, 3)).astype(np.float32)
    b = rng.standard_normal(6).astype(np.float32)
    node = helper.make_node("ConvTranspose", ["input", "w", "b"], ["y"], name="up", **attrs)
    model = _single(node, {"input": x})
    model.graph.initializer.extend([numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    model = onnx.shape_inference.infer_shapes(model)
    rewritten = rewrite_forward(model)  # checks itself by execution
    assert "ConvTranspose" not in {n.op_type for n in rewritten.graph.node}
    feeds = {"input": x}
    assert max_relative_error(run(model, feeds)["y"], run(rewritten, feeds)["y"]) < 1e-5
    convs = [n for n in rewritten.graph.node if n.op_type == "Conv"]
    assert len(convs) == 1


def test_a_wrong_forward_rewrite_is_one_error_naming_the_node(monkeypatch) -> None:
    """A HardSigmoid rewrite whose β is 1 % off, in a graph that goes on after it: the replacement, run on the
    tensor the original graph gave the HardSigmoid, differs from the original's output."""
    x = np.random.default_rng(0).standard_normal((2, 8)).astype(np.float32)
    nodes = [helper.make_node("HardSigmoid", ["input"], ["h"], name="gate"), helper.make_node("Relu", ["h"], ["y"], name="after")]
    model = onnx.shape_inference.infer_shapes(_single(nodes, {"input": x}))

    def off(ctx) -> None:
        ctx.make.op("HardSigmoid", [ctx.input(0)], outputs=[ctx.output(0)], alpha=0.2, beta=0.505)

    monkeypatch.setitem(FORWARD_REWRITES, "HardSigmoid", off)
    with pytest.raises(GraphError, match="'gate' \\(HardSigmoid\\): its forward rewrite differs"):
        rewrite_forward(model)


def test_a_transposed_convolution_it_cannot_rewrite_is_one_error_naming_the_node() -> None:
    x = np.zeros((1, 4, 5, 5), np.float32)
    node = helper.make_node("ConvTranspose", ["input", "w"], ["y"], name="dilated_up", dilations=[2, 2])
    model = _single(node, {"input": x})
    model.graph.initializer.append(numpy_helper.from_array(np.zeros((4, 2, 3, 3), np.float32), "w"))
    model = onnx.shape_inference.infer_shapes(model)
    with pytest.raises(UnsupportedOpError, match="'dilated_up' \\(ConvTranspose\\): dilated"):
        rewrite_forward(model)


# Fused and gradient ops checked one at a time against ONNX Runtime's own com.microsoft kernel:
# (op type, inputs, attributes). The GELUs ORT's optimizer fuses (BiasGelu when a bias add comes
# first, FastGelu from the tanh form) and the forms of the softmax gradients older opsets emit.
KERNEL_CASES = [
    ("Gelu", ["x"], {}),
    ("BiasGelu", ["x", "bias"], {}),
    ("GeluGrad", ["dy", "x"], {}),
    ("BiasGeluGrad_dX", ["dy", "x", "bias"], {}),
    ("FastGelu", ["x"], {}),
    ("FastGelu", ["x", "bias"], {}),
    ("FastGeluGrad", ["dy", "x"], {}),
    ("BiasFastGeluGrad_dX", ["dy", "x", "bias"], {}),
    ("QuickGelu", ["x"], {"alpha": 1.702}),
    ("QuickGeluGrad", ["dy", "x"], {"alpha": 1.0}),
    ("ReluGrad", ["dy", "x"], {}),
    ("LeakyReluGrad", ["dy", "x"], {"alpha": 0.1}),
    ("SigmoidGrad", ["dy", "x"], {}),
    ("TanhGrad", ["dy", "x"], {}),
    ("SoftmaxGrad_13", ["dy", "x"], {"axis": 0}),
    ("SoftmaxGrad", ["dy", "x"], {"axis": 1}),
    ("LogSoftmaxGrad_13", ["dy", "x"], {"axis": 0}),
    ("LogSoftmaxGrad", ["dy", "x"], {"axis": 1}),
]


@pytest.mark.parametrize(
    ("op_type", "inputs", "attrs"), [pytest.param(*case, id=f"{case[0]}-{len(case[1])}") for case in KERNEL_CASES]
)
def test_a_rule_equals_the_onnx_runtime_kernel(op_type: str, inputs: list[str], attrs: dict) -> None:
    """The rule's replacement and ORT's com.microsoft kernel on the same inputs, x over [-6, 6]."""
    rng = np.random.default_rng(1)
    values = {
        "x": rng.uniform(-6, 6, (4, 16)).astype(np.float32),
        "dy": rng.standard_normal((4, 16)).astype(np.float32),
        "bias": rng.standard_normal(16).astype(np.float32),
    }
    node = helper.make_node(op_type, inputs, ["y"], name="fused", domain="com.microsoft", **attrs)
    model = _single(node, {name: values[name] for name in inputs})
    model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    feeds = {name: values[name] for name in inputs}
    expected = run(model, feeds)["y"]
    model.graph.output[0].CopyFrom(helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, expected.shape))
    make = rewrite_node(node, tensor_types(model.graph), {})
    replaced = _single(make.nodes, feeds)
    replaced.graph.initializer.extend(make.initializers)
    assert max_relative_error(expected, run(replaced, feeds)["y"]) < 1e-5


@pytest.mark.parametrize(("a_shape", "b_shape"), [((4, 16), (4, 16)), ((4, 16), (16,)), ((4, 16), (4, 1)), ((1, 16), (4, 16))])
def test_the_div_gradient_rule_equals_the_onnx_runtime_kernel(a_shape: tuple[int, ...], b_shape: tuple[int, ...]) -> None:
    """DivGrad (a division by a tensor, as torch's Softsign or a normalisation by a computed norm) with
    broadcasting on either side: both gradients summed back to their operand's shape, as ORT's kernel does."""
    rng = np.random.default_rng(2)
    a = rng.standard_normal(a_shape).astype(np.float32)
    b = rng.uniform(0.5, 2.0, b_shape).astype(np.float32) * rng.choice([-1, 1], b_shape).astype(np.float32)
    dy = rng.standard_normal(np.broadcast_shapes(a_shape, b_shape)).astype(np.float32)
    feeds = {"dy": dy, "a": a, "b": b}
    node = helper.make_node("DivGrad", ["dy", "a", "b"], ["da", "db"], name="div", domain="com.microsoft")
    graph = helper.make_graph(
        [node],
        "div",
        [helper.make_tensor_value_info(n, onnx.TensorProto.FLOAT, v.shape) for n, v in feeds.items()],
        [helper.make_tensor_value_info(n, onnx.TensorProto.FLOAT, v.shape) for n, v in (("da", a), ("db", b))],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 10
    expected = run(model, feeds)
    make = rewrite_node(node, tensor_types(model.graph), {})
    replaced = onnx.ModelProto()
    replaced.CopyFrom(model)
    del replaced.graph.node[:]
    replaced.graph.node.extend(make.nodes)
    replaced.graph.initializer.extend(make.initializers)
    actual = run(replaced, feeds)
    for name in ("da", "db"):
        assert max_relative_error(expected[name], actual[name]) < 1e-5, name


def test_a_forward_op_without_gradient_is_one_error_naming_op_and_node(monkeypatch: pytest.MonkeyPatch) -> None:
    """torch.floor exports Floor, which ONNX Runtime Training cannot differentiate and no rewrite replaces."""

    class Floored(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv, self.head = nn.Conv2d(4, 6, 1), nn.Linear(216, CLASSES)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = self.conv(x)
            return self.head((torch.floor(y) * y).flatten(1))

    layer = Layer("floored", "torch.floor", Floored)
    register(monkeypatch, layer)
    with pytest.raises(UnsupportedOpError) as info:
        build_train_step(export_model(layer.name, batch=BATCH, seed=0), OptimizerSpec(kind="sgd", lr=LR))
    message = str(info.value)
    assert "no gradient for Floor (node '/Floor')" in message and "\n" not in message
    assert "write that part of the model with ops it lists" in message  # what to do
