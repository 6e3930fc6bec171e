"""decompose: every composite op rewritten into primitive ops, checked by execution."""

from __future__ import annotations

import json
from collections.abc import Callable

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from torch import nn

from traincost import models
from traincost.errors import GraphError, UnsupportedOpError
from traincost.frontend.onnx import verification as verification_module
from traincost.frontend.onnx.decompose import decompose, is_primitive, op_histogram, rewrite_node
from traincost.frontend.onnx.execute import example_feeds, run
from traincost.frontend.onnx.export import export_model
from traincost.frontend.onnx.gradient_rules import RULES, Rule, RuleContext
from traincost.frontend.onnx.graph import model_meta, set_node_meta
from traincost.frontend.onnx.lower import lower
from traincost.frontend.onnx.shapes import tensor_types
from traincost.frontend.onnx.train_graph import build_train_step
from traincost.frontend.onnx.verification import verify_decomposition
from traincost.frontend.shared.optimizer import OptimizerSpec
from traincost.frontend.shared.rounding import NOISE, NUDGES, TOLERANCE, allowed_error, max_relative_error

pytestmark = pytest.mark.ort  # the ONNX front end throughout (tests/conftest.py: pytest_ignore_collect)

# Every zoo architecture at a small batch (VGG-16 and GPT-2 124M are covered by their smaller
# siblings here and run whole in the default workflow; see bench/frontend.py). The three largest
# (20-100 s each) run with `-m slow`: their op types are all in resnet18 / resnet18_cifar.
ZOO = [
    pytest.param("resnet18_cifar", 2, None, id="resnet18_cifar"),
    pytest.param("resnet18", 1, None, id="resnet18"),
    pytest.param("resnet56", 2, None, id="resnet56", marks=pytest.mark.slow),
    pytest.param("resnet50", 1, None, id="resnet50", marks=pytest.mark.slow),
    pytest.param("alexnet", 1, {"dropout": 0.5}, id="alexnet", marks=pytest.mark.slow),
    pytest.param("tiny_yolov3", 1, None, id="tiny_yolov3", marks=pytest.mark.slow),  # 21 s; Resize, LeakyReLU: test_operators
    pytest.param("gpt2_small", 2, None, id="gpt2_small"),
    pytest.param("gpt2", 1, {"n_layer": 1, "d_model": 64, "n_head": 2, "seq_len": 32, "vocab_size": 257}, id="gpt2"),
]


@pytest.mark.parametrize(("name", "batch", "options"), ZOO)
def test_decomposed_graph_is_primitive_and_equivalent(chain, name: str, batch: int, options) -> None:
    built = chain(name, batch, "adam", options)
    before, after = built.train_step, built.decomposed
    assert any(not is_primitive(n) for n in before.graph.node), "the ORT graph should have composite ops"
    assert all(is_primitive(n) for n in after.graph.node)
    assert {n.domain for n in after.graph.node} == {""}
    onnx.checker.check_model(after, full_check=True)
    check = verify_decomposition(before, after, seed=1)
    assert set(check.per_rule) == {n.op_type for n in before.graph.node if not is_primitive(n)}
    assert max(check.per_rule.values()) <= TOLERANCE
    assert check.end_to_end["loss"] <= TOLERANCE
    # Gradients and updated parameters are compared even where a ReLU / max-pool element flipped.
    held = {t.name for t in check.tensors if t.held}
    params = json.loads(model_meta(before)["parameters"])
    assert {f"{p}_grad" for p in params} <= held and {f"{p}.updated" for p in params} <= held
    assert all(t.error <= t.limit == allowed_error(t.sensitivity) for t in check.tensors if t.held)
    assert check.pinned == 0 or check.branch_flips > 0
    # Same graph interface: every input and output of the step survives.
    assert [v.name for v in before.graph.output] == [v.name for v in after.graph.output]


def test_convolution_gradients_become_one_primitive_each(chain) -> None:
    built = chain("resnet18_cifar", 2)
    convgrads = op_histogram(built.train_step)["com.microsoft::ConvGrad"]
    after = op_histogram(built.decomposed)
    assert convgrads == 20
    # 19 input gradients (the first conv has none), 20 weight gradients next to the 20 forward convs.
    assert after["ConvTranspose"] == 19
    assert after["Conv"] == 40


def test_end_to_end_gradients_match_when_no_branch_flips(chain) -> None:
    built = chain("gpt2_small", 2)
    check = verify_decomposition(built.train_step, built.decomposed, seed=0)
    assert check.branch_flips == 0  # GPT-2 has no ReLU or max-pool
    grads = [n for n in check.end_to_end if n.endswith("_grad")]
    assert sorted(grads) == sorted(f"{p}_grad" for p in json.loads(model_meta(built.train_step)["parameters"]))
    assert max(check.end_to_end.values()) <= TOLERANCE


def test_a_wrong_rule_is_caught(chain, monkeypatch) -> None:
    built = chain("resnet18_cifar", 2)
    original = RULES[("com.microsoft", "ReluGrad")]

    def leaky(ctx) -> None:  # a subtly wrong ReluGrad: lets 1 % of negative gradients through
        make = ctx.make
        d_y, y = ctx.input(0), ctx.input(1)
        zero = make.const(np.float32(0.0))
        scaled = make.op("Mul", [d_y, make.const(np.float32(0.01))])
        make.op("Where", [make.op("Greater", [y, zero]), d_y, scaled], outputs=[ctx.output(0)])

    monkeypatch.setitem(RULES, ("com.microsoft", "ReluGrad"), leaky)
    wrong = decompose(built.train_step)
    with pytest.raises(GraphError, match="ReluGrad"):
        verify_decomposition(built.train_step, wrong)
    assert RULES[("com.microsoft", "ReluGrad")] is leaky is not original


def test_an_op_without_rule_names_every_such_op_and_node(chain) -> None:
    graph = onnx.ModelProto()
    graph.CopyFrom(chain("resnet18_cifar", 2).train_step)
    for i, node in enumerate(n for n in graph.graph.node if n.op_type == "ReluGrad"):
        if i < 2:
            node.op_type = "MysteryGrad"
    extra = helper.make_node("FancyOp", ["loss"], ["fancy"], name="my_fancy_node", domain="com.example")
    set_node_meta(extra, phase="backward", layer="x")
    graph.graph.node.append(extra)
    with pytest.raises(UnsupportedOpError) as info:
        decompose(graph)
    message = str(info.value)
    assert "com.microsoft::MysteryGrad" in message and "com.example::FancyOp" in message
    assert "my_fancy_node" in message and message.count("ReluGrad_0") == 2


def test_convgrad_rule_on_strided_dilated_padded_convolutions() -> None:
    """The ConvGrad rule against ORT's own kernel, on shapes the zoo does not have."""
    cases = [
        dict(strides=[2, 2], pads=[1, 1, 1, 1], dilations=[1, 1], k=3, h=9),
        dict(strides=[3, 1], pads=[0, 2, 1, 0], dilations=[1, 2], k=3, h=11),
        dict(strides=[2, 2], pads=[0, 0, 0, 0], dilations=[2, 2], k=2, h=8),
        dict(strides=[1, 1], pads=[0, 0, 0, 0], dilations=[1, 1], k=1, h=5),
    ]
    rng = np.random.default_rng(0)
    for case in cases:
        k, h = case.pop("k"), case.pop("h")
        x = rng.standard_normal((2, 3, h, h + 1)).astype(np.float32)
        w = rng.standard_normal((4, 3, k, k)).astype(np.float32)
        conv = helper.make_node("Conv", ["x", "w"], ["y"], **case)
        forward = helper.make_model(
            helper.make_graph(
                [conv],
                "f",
                [
                    helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape),
                    helper.make_tensor_value_info("w", TensorProto.FLOAT, w.shape),
                ],
                [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
            ),
            opset_imports=[helper.make_opsetid("", 17)],
        )
        forward.ir_version = 10
        y = run(forward, {"x": x, "w": w})["y"]
        dy = rng.standard_normal(y.shape).astype(np.float32)
        grad = helper.make_node("ConvGrad", ["dy", "x", "w"], ["dx", "dw", "db"], name="g", domain="com.microsoft", **case)
        values = [
            helper.make_tensor_value_info(n, TensorProto.FLOAT, a.shape)
            for n, a in [("dy", dy), ("x", x), ("w", w), ("dx", x), ("dw", w), ("db", w[:, 0, 0, 0])]
        ]
        model = helper.make_model(
            helper.make_graph([grad], "g", values[:3], values[3:]),
            opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)],
        )
        model.ir_version = 10
        expected = run(model, {"dy": dy, "x": x, "w": w})
        make = rewrite_node(grad, tensor_types(model.graph), {})
        replaced = helper.make_model(
            helper.make_graph(make.nodes, "r", values[:3], values[3:], initializer=make.initializers),
            opset_imports=[helper.make_opsetid("", 17)],
        )
        replaced.ir_version = 10
        actual = run(replaced, {"dy": dy, "x": x, "w": w})
        for name in ("dx", "dw", "db"):
            assert max_relative_error(expected[name], actual[name]) < 1e-5, (case, name)


@pytest.mark.parametrize(
    ("channels", "kernels", "group", "attrs"),
    [
        (6, 6, 6, dict(strides=[1, 1], pads=[1, 1, 1, 1], dilations=[1, 1])),  # depthwise 3x3, MobileNet
        (6, 6, 6, dict(strides=[2, 2], pads=[1, 1, 1, 1], dilations=[1, 1])),  # depthwise, strided
        (4, 8, 4, dict(strides=[2, 1], pads=[0, 2, 1, 0], dilations=[1, 2])),  # depth multiplier 2, dilated
        (6, 4, 2, dict(strides=[1, 1], pads=[0, 0, 0, 0], dilations=[1, 1])),  # two groups (ResNeXt-style)
    ],
)
def test_convgrad_rule_on_grouped_and_depthwise_convolutions(channels: int, kernels: int, group: int, attrs: dict) -> None:
    """Grouped ConvGrad rewritten against ORT's own kernel: input, weight and bias gradients."""
    rng = np.random.default_rng(group)
    x = rng.standard_normal((2, channels, 9, 10)).astype(np.float32)
    w = rng.standard_normal((kernels, channels // group, 3, 3)).astype(np.float32)
    forward = _standalone(helper.make_node("Conv", ["x", "w"], ["y"], group=group, **attrs), {"x": x, "w": w}, ["y"])
    y = run(forward, {"x": x, "w": w})["y"]
    dy = rng.standard_normal(y.shape).astype(np.float32)
    grad = helper.make_node(
        "ConvGrad", ["dy", "x", "w"], ["dx", "dw", "db"], name="g", domain="com.microsoft", group=group, **attrs
    )
    model = _standalone(grad, {"dy": dy, "x": x, "w": w}, ["dx", "dw", "db"], shapes={"dx": x, "dw": w, "db": w[:, 0, 0, 0]})
    expected = run(model, {"dy": dy, "x": x, "w": w})
    make = rewrite_node(grad, tensor_types(model.graph), {})
    assert {n.op_type for n in make.nodes} >= {"ConvTranspose", "Conv", "ReduceSum"}
    outputs = {"dx": x, "dw": w, "db": w[:, 0, 0, 0]}
    replaced = _standalone(make.nodes, {"dy": dy, "x": x, "w": w}, list(outputs), shapes=outputs)
    replaced.graph.initializer.extend(make.initializers)
    actual = run(replaced, {"dy": dy, "x": x, "w": w})
    for name in ("dx", "dw", "db"):
        assert max_relative_error(expected[name], actual[name]) < 1e-5, name


def _standalone(
    nodes: onnx.NodeProto | list[onnx.NodeProto],
    inputs: dict[str, np.ndarray],
    outputs: list[str],
    *,
    shapes: dict[str, np.ndarray] | None = None,
) -> onnx.ModelProto:
    """A model of ``nodes`` over float ``inputs`` (opset 17 and com.microsoft)."""
    shapes = shapes or {}
    graph = helper.make_graph(
        nodes if isinstance(nodes, list) else [nodes],
        "standalone",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, a.shape) for n, a in inputs.items()],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, shapes[n].shape if n in shapes else None) for n in outputs],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 10
    return model


def _depthwise_separable() -> nn.Module:
    """MobileNet's block: pointwise 1x1, depthwise 3x3 (stride 2), BatchNorm, SiLU, pointwise 1x1, then a GELU head."""
    return nn.Sequential(
        nn.Conv2d(4, 8, 1),
        nn.Conv2d(8, 8, 3, stride=2, padding=1, groups=8, bias=False),
        nn.BatchNorm2d(8),
        nn.SiLU(),
        nn.Conv2d(8, 16, 1),
        nn.Flatten(),
        nn.Linear(16 * 3 * 3, 32),
        nn.GELU(),
        nn.Linear(32, 10),
    )


def test_a_depthwise_separable_block_with_silu_and_gelu_decomposes_and_verifies(monkeypatch) -> None:
    """Grouped ConvGrad, QuickGelu (SiLU) and Gelu (torch's exact nn.GELU) end to end: ORT's training
    graph, rewritten to standard ops, checked by execution; the MACs of all three convolution passes
    are the forward convolution's."""
    train = _train_step(monkeypatch, _depthwise_separable, (4, 6, 6))
    composites = {n.op_type for n in train.graph.node if n.domain == "com.microsoft"}
    assert {"ConvGrad", "QuickGelu", "QuickGeluGrad", "Gelu", "GeluGrad"} <= composites
    after = decompose(train)
    assert all(is_primitive(n) for n in after.graph.node)
    check = verify_decomposition(train, after)
    assert all(error <= TOLERANCE for error in check.per_rule.values()), check.per_rule
    ops = lower(after).ops
    depthwise = ops[ops["kind"].isin(["conv", "conv_dgrad", "conv_wgrad"]) & (ops["G"] == 8)]
    assert sorted(depthwise["kind"]) == ["conv", "conv_dgrad", "conv_wgrad"]
    assert set(depthwise["macs"]) == {8 * 3 * 3 * 3 * 3}  # B=1 · G=8 · K/G=C/G=1 · OY·OX 3x3 · FY·FX 3x3


def _train_step(monkeypatch, build: Callable[[], nn.Module], shape: tuple[int, ...]) -> onnx.ModelProto:
    """The SGD train step at batch 1 of the model ``build`` makes, for inputs of ``shape``."""
    sample = models.SampleSpec(shape=shape, rows=1, num_classes=10)
    arch = models.Architecture("tiny", "a test model", build, "image", {}, lambda: sample)
    monkeypatch.setattr(models, "ARCHITECTURES", {**models.ARCHITECTURES, "tiny": arch})
    return build_train_step(export_model("tiny", batch=1, seed=0), OptimizerSpec(kind="sgd", lr=0.1))


def test_bias_gradient_before_batchnorm_is_checked_at_rounding_level(monkeypatch) -> None:
    """A convolution's bias gradient before training-mode BatchNorm is 0 exactly; float32 leaves about
    one ulp of Σ|dY| in ORT's ConvGrad and in the rewrite alike (VGG-16-BN's last blocks, batch 1)."""

    def conv_bn() -> nn.Module:
        return nn.Sequential(
            nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(64, 10)
        )

    train = _train_step(monkeypatch, conv_bn, (8, 4, 4))
    bias_grad = run(train, example_feeds(train, seed=0, states="random"), ["0.bias_grad"])["0.bias_grad"]
    assert np.max(np.abs(bias_grad)) < 1e-6  # rounding noise, so a relative comparison of it means nothing
    check = verify_decomposition(train, decompose(train))
    assert check.per_rule["ConvGrad"] <= TOLERANCE
    assert check.end_to_end["0.bias_grad"] <= TOLERANCE


def _two_batchnorms() -> nn.Module:
    """Two 1x1 convolutions, each followed by BatchNorm with no ReLU between."""
    return nn.Sequential(
        nn.Conv2d(8, 16, 1), nn.BatchNorm2d(16), nn.Conv2d(16, 16, 1), nn.BatchNorm2d(16), nn.Flatten(), nn.Linear(64, 10)
    )


def test_a_batchnorm_gradient_that_cancels_is_compared_to_its_terms(monkeypatch) -> None:
    """The first BatchNorm's bias gradient sums the second conv's input gradient, which the second
    BatchNorm makes sum to 0 per channel: it is 0 exactly, and float32 leaves rounding noise in it
    that differs between two correct graphs. Compared relative to the sum of its terms' magnitudes (Σ|dY|), as a
    convolution's bias gradient is, it is held to TOLERANCE, and so are the graph's other tensors."""
    train = _train_step(monkeypatch, _two_batchnorms, (8, 2, 2))
    check = verify_decomposition(train, decompose(train))
    tensors = {t.name: t for t in check.tensors}
    assert tensors["1.bias_grad"].held and tensors["1.bias_grad"].error <= TOLERANCE
    assert all(t.limit <= 10 * NOISE for t in check.tensors if t.held)
    assert tensors["loss"].held and tensors["0.weight_grad"].held and tensors["0.weight.updated"].held
    assert tensors["loss"].limit == tensors["0.weight_grad"].limit == TOLERANCE
    table = check.table()
    assert set(table["check"]) == {"node", "end_to_end"}
    assert table.set_index("name").loc["BatchNormalizationGrad", "limit"] == TOLERANCE


def test_an_update_computed_from_a_noise_gradient_is_noise_too() -> None:
    """timm MobileViTv2 at 32x32: a gradient nudges moved by 0.30, its Adam update by 3e-4 (the random optimizer states
    dominate it), the two graphs' updates 7.8e-3 apart. The update is reported with its gradient, not held."""
    check = verification_module.TensorCheck
    tensors = (
        check("w_grad", 3.15, 0.30, 3.0, False),
        check("w.updated", 7.8e-3, 3.1e-4, 3.1e-3, True),
        check("b_grad", 1e-6, 1e-6, 1e-4, True),
        check("b.updated", 1e-6, 1e-6, 1e-4, True),
        check("bn.running_mean.updated", 1e-6, 1e-6, 1e-4, True),
    )
    judged = {t.name: t.held for t in verification_module._noise_follows_gradients(tensors, set())}
    assert judged == {"w_grad": False, "w.updated": False, "b_grad": True, "b.updated": True, "bn.running_mean.updated": True}
    # a gradient that is 0 in exact arithmetic (a sum cancelled below NOISE of its addends) is held against the addends'
    # magnitude, but its update is the optimizer applied to the two graphs' rounding residues: set aside with it
    judged = {t.name: t.held for t in verification_module._noise_follows_gradients(tensors, {"b_grad"})}
    assert judged == {"w_grad": False, "w.updated": False, "b_grad": True, "b.updated": False, "bn.running_mean.updated": True}


def _scaled(rule: Rule, factor: float) -> Rule:
    """``rule`` with its first output multiplied by ``factor``."""

    def scaled(ctx: RuleContext) -> None:
        rule(ctx)
        # The node that wrote the output now writes an intermediate, which a Mul scales into it.
        exact = ctx.make.fresh("exact")
        producer = next(node for node in ctx.make.nodes if ctx.output(0) in node.output)
        producer.output[list(producer.output).index(ctx.output(0))] = exact
        ctx.make.op("Mul", [exact, ctx.make.const(np.float32(factor))], outputs=[ctx.output(0)])

    return scaled


def test_a_rule_off_by_a_thousandth_is_caught_end_to_end(monkeypatch) -> None:
    """The graph is built with a BatchNormalizationGrad rule 0.1 % off and checked node by node with
    the right one: only the end-to-end check can see it, in the graph whose rounding noise the test
    above lets through."""
    train = _train_step(monkeypatch, _two_batchnorms, (8, 2, 2))
    key = ("com.microsoft", "BatchNormalizationGrad")
    with monkeypatch.context() as patch:
        patch.setitem(RULES, key, _scaled(RULES[key], 1.001))
        wrong = decompose(train)
    with pytest.raises(GraphError, match="decomposed graph differs"):
        verify_decomposition(train, wrong)


def test_example_feeds_come_from_the_export_metadata_not_the_zoo(chain, monkeypatch) -> None:
    graph = chain("gpt2_small", 2).decomposed
    monkeypatch.setattr(models, "ARCHITECTURES", {})  # no stage after the export may look the model up
    feeds = example_feeds(graph, seed=3)
    assert feeds["input"].shape == (2, 64) and feeds["input"].dtype == np.int64
    assert feeds["labels"].shape == (128,)
    assert np.array_equal(example_feeds(graph, seed=3)["input"], feeds["input"])


def _conv_bn_relu() -> nn.Module:
    return nn.Sequential(nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.Flatten(), nn.Linear(256, 10))


def _decomposed(monkeypatch) -> tuple[onnx.ModelProto, onnx.ModelProto]:
    train = _train_step(monkeypatch, _conv_bn_relu, (8, 4, 4))
    return train, decompose(train)


def _with_a_flip(train: onnx.ModelProto, after: onnx.ModelProto) -> tuple[onnx.ModelProto, onnx.ModelProto]:
    """``train`` and ``after`` in which one input element of the ReLU lies a millionth of the
    largest on either side of 0, as two graphs that round differently can leave an element within
    rounding of the kink: it takes the other branch in ``after``, and nothing else changes."""
    source = next(node for node in after.graph.node if node.op_type == "Relu").input[0]
    value = run(train, example_feeds(train, seed=0, states="random"), [source])[source]
    index = np.unravel_index(np.argmin(np.abs(value)), value.shape)
    tiny = 1e-6 * float(np.max(np.abs(value)))
    return _planted(train, source, index, tiny - value[index]), _planted(after, source, index, -tiny - value[index])


def _planted(model: onnx.ModelProto, source: str, index: tuple[int, ...], shift: float) -> onnx.ModelProto:
    """A copy of ``model`` in which element ``index`` of tensor ``source`` is moved by ``shift``."""
    planted = onnx.ModelProto()
    planted.CopyFrom(model)
    writer = next(node for node in planted.graph.node if source in node.output)
    writer.output[list(writer.output).index(source)] = "unshifted"
    types = tensor_types(model.graph)
    shifts = np.zeros(types[source].shape, dtype=np.float32)
    shifts[index] = shift
    planted.graph.initializer.append(numpy_helper.from_array(shifts, "planted_shift"))
    planted.graph.value_info.append(helper.make_tensor_value_info("unshifted", TensorProto.FLOAT, shifts.shape))
    position = list(planted.graph.node).index(writer) + 1
    planted.graph.node.insert(position, helper.make_node("Add", ["unshifted", "planted_shift"], [source], name="plant"))
    return planted


def test_gradients_are_compared_where_a_relu_element_flips(monkeypatch) -> None:
    """A ReLU element whose input the rewrite rounds to the other side of 0 makes the gradients jump
    there. The check pins that ReLU's input to the original graph's value, so the gradients follow
    the same branches and are compared as everywhere else, within what rounding explains."""
    train, after = _with_a_flip(*_decomposed(monkeypatch))
    check = verify_decomposition(train, after)
    assert check.branch_flips == 1 and check.pinned == 1
    tensors = {t.name: t for t in check.tensors}
    for name in ("0.weight_grad", "1.weight_grad", "4.weight_grad", "0.weight.updated"):
        assert tensors[name].held and tensors[name].error <= tensors[name].limit


def test_a_wrong_rule_is_caught_where_a_relu_element_flips(monkeypatch) -> None:
    """Pinning the flipped ReLU does not hide a rewrite 0.1 % off elsewhere."""
    train = _train_step(monkeypatch, _conv_bn_relu, (8, 4, 4))
    key = ("com.microsoft", "BatchNormalizationGrad")
    with monkeypatch.context() as patch:
        patch.setitem(RULES, key, _scaled(RULES[key], 1.001))
        wrong = decompose(train)
    train, wrong = _with_a_flip(train, wrong)
    with pytest.raises(GraphError, match="decomposed graph differs"):
        verify_decomposition(train, wrong)


def _conv_bn_relu6() -> nn.Module:
    return nn.Sequential(nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU6(), nn.Flatten(), nn.Linear(256, 10))


def _set(model: onnx.ModelProto, source: str, values: dict[tuple[int, ...], float]) -> onnx.ModelProto:
    """A copy of ``model`` in which the elements of tensor ``source`` at the keys of ``values`` are those values
    exactly (a Where, so no rounding moves them)."""
    planted = onnx.ModelProto()
    planted.CopyFrom(model)
    writer = next(node for node in planted.graph.node if source in node.output)
    writer.output[list(writer.output).index(source)] = "unset"
    shape = tensor_types(model.graph)[source].shape
    mask, value = np.zeros(shape, dtype=bool), np.zeros(shape, dtype=np.float32)
    for index, element in values.items():
        mask[index], value[index] = True, element
    planted.graph.initializer.extend([numpy_helper.from_array(mask, "set_mask"), numpy_helper.from_array(value, "set_value")])
    planted.graph.value_info.append(helper.make_tensor_value_info("unset", TensorProto.FLOAT, shape))
    position = list(planted.graph.node).index(writer) + 1
    planted.graph.node.insert(position, helper.make_node("Where", ["set_mask", "set_value", "unset"], [source], name="set"))
    return planted


def test_a_relu6_input_exactly_at_a_bound_is_pinned_and_without_the_pin_the_check_fails(monkeypatch) -> None:
    """ONNX Runtime's Clip gradient passes dY where min <= X <= max. An element of a ReLU6 input exactly at
    6.0 in the original graph and one ulp above in the rewritten one gives 6.0 out of both, so only its
    input tells that the gradient takes the other branch; another exactly at 0.0 in the original and a
    millionth of the largest below in the rewritten one. The check pins both elements and holds; with
    no op known as branching (nothing pinned), the gradients jump there and it fails."""
    train = _train_step(monkeypatch, _conv_bn_relu6, (8, 4, 4))
    after = decompose(train)
    source = next(node for node in after.graph.node if node.op_type == "Clip").input[0]
    value = run(train, example_feeds(train, seed=0, states="random"), [source])[source]
    order = np.argsort(np.abs(value), axis=None)
    at_zero, at_six = (np.unravel_index(i, value.shape) for i in (order[0], order[-1]))
    below = -1e-6 * float(np.max(np.abs(value)))
    train = _set(train, source, {at_zero: 0.0, at_six: 6.0})
    after = _set(after, source, {at_zero: below, at_six: float(np.nextafter(np.float32(6), np.float32(7)))})
    check = verify_decomposition(train, after)
    assert check.branch_flips == 2 and check.pinned == 1
    tensors = {t.name: t for t in check.tensors}
    for name in ("0.weight_grad", "1.weight_grad", "4.weight_grad", "0.weight.updated"):
        assert tensors[name].held and tensors[name].error <= tensors[name].limit
    monkeypatch.setattr(verification_module, "_branching", lambda model: {})
    with pytest.raises(GraphError, match="decomposed graph differs"):
        verify_decomposition(train, after)


def _at_zero_by_the_batch(model: onnx.ModelProto, source: str, index: tuple[int, ...]) -> onnx.ModelProto:
    """A copy of ``model`` in which element ``index`` of tensor ``source`` is minus the distance of the batch's
    first element from its value in ``example_feeds(model, seed=0)``: exactly 0 on those feeds, a rounding below 0
    whichever way they are nudged (a one-ulp nudge always moves a float32)."""
    feeds = example_feeds(model, seed=0, states="random")
    batch = next(name for name, value in feeds.items() if value.ndim == 4)
    onehot = np.zeros(feeds[batch].shape, dtype=np.float32)
    onehot.flat[0] = 1.0
    first = feeds[batch].flat[0]
    planted = onnx.ModelProto()
    planted.CopyFrom(model)
    writer = next(node for node in planted.graph.node if source in node.output)
    writer.output[list(writer.output).index(source)] = "unset"
    shape = tensor_types(model.graph)[source].shape
    mask = np.zeros(shape, dtype=bool)
    mask[index] = True
    planted.graph.initializer.extend(
        [
            numpy_helper.from_array(onehot, "onehot"),
            numpy_helper.from_array(np.array(first, dtype=np.float32), "first"),
            numpy_helper.from_array(mask, "set_mask"),
        ]
    )
    planted.graph.value_info.append(helper.make_tensor_value_info("unset", TensorProto.FLOAT, shape))
    position = list(planted.graph.node).index(writer) + 1
    nodes = [
        helper.make_node("Mul", [batch, "onehot"], ["picked_all"], name="pick"),
        helper.make_node("ReduceSum", ["picked_all"], ["picked"], name="picked", keepdims=0),
        helper.make_node("Sub", ["picked", "first"], ["offset"], name="offset"),
        helper.make_node("Abs", ["offset"], ["distance"], name="distance"),
        helper.make_node("Neg", ["distance"], ["below"], name="below"),
        helper.make_node("Where", ["set_mask", "below", "unset"], [source], name="set"),
    ]
    for node in reversed(nodes):
        planted.graph.node.insert(position, node)
    return planted


def test_a_relu6_element_the_nudges_flip_is_pinned_in_the_nudged_executions(monkeypatch) -> None:
    """An element of a ReLU6 input exactly at 0 in both graphs, moved a rounding below 0 by the one-ulp nudges:
    in each nudged execution it flips, and is read from the unnudged execution instead (its gradient would jump
    there, which is not rounding), so every gradient still gets a sensitivity from it, and the check holds."""
    train = _train_step(monkeypatch, _conv_bn_relu6, (8, 4, 4))
    after = decompose(train)
    source = next(node for node in after.graph.node if node.op_type == "Clip").input[0]
    train, after = (_at_zero_by_the_batch(model, source, (0, 0, 0, 0)) for model in (train, after))
    pins = []  # the pinned elements of each execution with pins that pinned any (the nudged ones, as nothing flips)
    spy = verification_module._Pinner.run

    def recording(pinner, feeds, outputs):
        run = spy(pinner, feeds, outputs)
        if run.pins:
            pins.append(run.pins)
        return run

    monkeypatch.setattr(verification_module._Pinner, "run", recording)
    check = verify_decomposition(train, after)
    assert check.branch_flips == 0
    assert pins == [{source: 1}] * NUDGES, pins  # one element pinned in every nudged execution
    tensors = {t.name: t for t in check.tensors}
    for name in ("0.weight_grad", "1.weight_grad", "4.weight_grad", "0.weight.updated"):
        assert tensors[name].held and 0 < tensors[name].sensitivity and tensors[name].error <= tensors[name].limit


def test_a_tensor_is_held_to_what_rounding_explains_and_noise_is_not_compared() -> None:
    """Float32 noise is what rounding moves by more than NOISE. A tensor that one-ulp nudges move by 2e-4 (a
    BatchNorm weight gradient whose terms cancel, as on ResNet-50 at batch 1; a weight gradient of ShuffleNetV2
    at batch 2) is held to ten times that, 2e-3: an error of 1.5e-3 is rounding, 3e-3 is not; one moved by 2e-3
    is noise; one moved by 2e-5 is held to 2e-4, one moved by nothing to TOLERANCE."""
    judged = verification_module._judged
    assert judged("g", 1.5e-3, 2e-4) == verification_module.TensorCheck("g", 1.5e-3, 2e-4, pytest.approx(2e-3), True)
    assert judged("g", 3e-3, 2e-4).error > judged("g", 3e-3, 2e-4).limit
    assert not judged("g", 5e-4, 2e-3).held
    assert judged("g", 5e-4, 2e-5).limit == pytest.approx(2e-4) and judged("g", 5e-4, 2e-5).held
    assert judged("g", 5e-5, 0.0).limit == TOLERANCE
