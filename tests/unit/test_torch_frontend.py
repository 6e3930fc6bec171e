"""The torch front end: a training step traced by torch, lowered to the Workload IR and checked against eager torch.

Hand-made modules whose counts are known, torch's own measurement of what autograd saves, and a traced graph made
wrong on purpose, which the check must catch.
"""

from __future__ import annotations

import operator

import pytest
import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from traincost import models
from traincost.errors import GraphError
from traincost.frontend.shared.optimizer import OptimizerSpec
from traincost.frontend.shared.torch_randomness import no_randomness
from traincost.frontend.torch import check as torch_check
from traincost.frontend.torch.check import in_double, verify_step
from traincost.frontend.torch.lower import lower_step
from traincost.frontend.torch.step import STEP_META, trace_step
from traincost.memory.torch_measure import measure_torch_memory, saved_storages
from traincost.signature import InputSpec
from traincost.workload import Workload

BATCH = 5
SGD = OptimizerSpec(kind="sgd", lr=0.1)
ADAM = OptimizerSpec(kind="adam", lr=0.01)


def two_layer_mlp() -> nn.Module:
    """4 → 3 → 2 features."""
    return nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))


def conv_bn(inplace: bool = False, dropout: float = 0.0) -> nn.Module:
    """A 3x3 convolution, BatchNorm, ReLU, a 1x1 convolution with stride 2, dropout and a classifier on 3 x 8 x 8."""
    return nn.Sequential(
        nn.Conv2d(3, 6, 3, padding=1),
        nn.BatchNorm2d(6),
        nn.ReLU(inplace=inplace),
        nn.Conv2d(6, 4, 1, stride=2, bias=False),
        nn.Flatten(),
        nn.Dropout(dropout),
        nn.Linear(4 * 4 * 4, 3),
    )


class ChannelSplit(nn.Module):
    """ShuffleNetV2's unit on 8 x 4 x 4: a 1x1 convolution, its channels chunked in two, the second half through
    another 1x1 convolution, the halves concatenated."""

    def __init__(self) -> None:
        super().__init__()
        self.first, self.second = nn.Conv2d(8, 8, 1), nn.Conv2d(4, 4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        kept, passed = self.first(x).chunk(2, dim=1)
        return torch.cat([kept, self.second(passed)], 1).mean((2, 3))


def channel_split() -> nn.Module:
    return ChannelSplit()


def _architecture(factory: str, shape: tuple[int, ...], **kwargs: object) -> models.Architecture:
    path = f"{__name__}:{factory}"
    return models.factory_architecture(path, inputs=(InputSpec("input", shape, "float32"),), kwargs=kwargs)


@pytest.fixture(scope="module")
def mlp_step():
    return trace_step(_architecture("two_layer_mlp", (4,)), batch=BATCH, seed=0, optimizer=SGD)


def test_the_step_has_the_macs_of_its_products(mlp_step, tmp_path) -> None:
    workload = lower_step(mlp_step)
    ops = workload.ops
    macs = ops.groupby("phase")["macs"].sum()
    # forward: 5x4 by 4x3 and 5x3 by 3x2; backward: the second layer's input gradient and both weight gradients (the
    # batch needs no gradient)
    assert macs["forward"] == BATCH * 4 * 3 + BATCH * 3 * 2
    assert macs["backward"] == BATCH * 3 * 2 + BATCH * 3 * 2 + BATCH * 4 * 3
    assert macs.get("optimizer", 0) == 0
    assert set(ops.loc[ops["phase"] == "forward", "kind"]) >= {"gemm", "eltwise", "softmax"}
    workload.write(tmp_path / "ops.parquet", tmp_path / "tensors.parquet")  # checks the two tables as a graph
    assert len(Workload.read(tmp_path / "ops.parquet", tmp_path / "tensors.parquet").ops) == len(ops)


def test_weights_gradients_and_states_take_the_parameters_bytes() -> None:
    step = trace_step(_architecture("two_layer_mlp", (4,)), batch=BATCH, seed=0, optimizer=ADAM)
    tensors = lower_step(step).tensors
    param_bytes = 4 * (4 * 3 + 3 + 3 * 2 + 2)
    by_kind = tensors.groupby("kind")["bytes"].sum()
    assert by_kind["weight"] == 2 * param_bytes  # read and updated
    assert by_kind["weight_grad"] == param_bytes
    assert by_kind["optimizer_state"] == 2 * 2 * param_bytes  # exp_avg and exp_avg_sq, read and updated
    updated = tensors[tensors["name"].str.endswith(".updated")]
    assert (updated["updates"] >= 0).all()
    assert set(tensors.loc[updated["updates"], "kind"]) == {"weight", "optimizer_state"}


@pytest.mark.parametrize("inplace", [False, True])
def test_saved_activations_are_what_torch_autograd_keeps(inplace: bool) -> None:
    arch = _architecture("conv_bn", (3, 8, 8), inplace=inplace)
    tensors = lower_step(trace_step(arch, batch=BATCH, seed=0, optimizer=SGD)).tensors
    ours = int(tensors.loc[tensors["saved_for_backward"], "bytes"].sum())
    torch_bytes = measure_torch_memory(arch, batch=BATCH, optimizer=SGD, seed=0)
    assert ours == torch_bytes["saved_activations"]


def test_a_chunk_is_a_view_and_saving_it_keeps_the_whole_storage() -> None:
    arch = _architecture("channel_split", (8, 4, 4))
    tensors = lower_step(trace_step(arch, batch=BATCH, seed=0, optimizer=SGD)).tensors.set_index("name")
    conv = tensors.loc["convolution", "tensor"]
    assert list(tensors.loc[["getitem", "getitem_1"], "view_of"]) == [conv, conv]
    # the second convolution's backward reads its half: torch keeps the first convolution's whole output
    assert tensors.loc["convolution", "saved_for_backward"] and not tensors.loc["getitem_1", "saved_for_backward"]
    saved = int(tensors.loc[tensors["saved_for_backward"], "bytes"].sum())
    assert saved == measure_torch_memory(arch, batch=BATCH, optimizer=SGD, seed=0)["saved_activations"]


def test_batchnorm_statistics_are_updated_buffers_and_convolution_gradients_keep_the_forward_loops() -> None:
    step = trace_step(_architecture("conv_bn", (3, 8, 8)), batch=BATCH, seed=0, optimizer=SGD)
    workload = lower_step(step)
    ops, tensors = workload.ops, workload.tensors
    updated = tensors[tensors["name"].isin(["1.running_mean.updated", "1.running_var.updated"])]
    assert len(updated) == 2 and (updated["kind"] == "buffer").all()
    assert list(tensors.loc[updated["updates"], "name"]) == ["1.running_mean", "1.running_var"]
    strided = ops[(ops["layer"] == "3/conv2d") & ops["kind"].isin(["conv", "conv_dgrad", "conv_wgrad"])]
    assert sorted(strided["kind"]) == ["conv", "conv_dgrad", "conv_wgrad"]
    assert strided["macs"].nunique() == 1 and (strided["stride_y"] == 2).all()
    first = ops[ops["layer"] == "0/conv2d"]
    assert set(first["kind"]) >= {"conv", "conv_wgrad", "reduce"} and "conv_dgrad" not in set(first["kind"])


def test_every_op_has_its_phase_and_each_parameters_update_its_forward_layer(mlp_step) -> None:
    ops = lower_step(mlp_step).ops
    assert list(dict.fromkeys(ops["phase"])) == ["forward", "backward", "optimizer"]
    # the loss's seed gradient is the loss layer's; each function's backward is the function's layer
    expected = {"loss", "loss/cross_entropy", "2/linear", "1/relu", "0/linear"}
    assert set(ops.loc[ops["phase"] == "backward", "layer"]) == expected
    owners = set(ops.loc[ops["phase"] == "optimizer", "layer"])
    assert owners == {"0/linear", "2/linear"}


def test_dropout_masks_are_saved_and_the_check_compares_like_with_like() -> None:
    arch = _architecture("conv_bn", (3, 8, 8), dropout=0.5)
    step = trace_step(arch, batch=BATCH, seed=0, optimizer=SGD)
    tensors = lower_step(step).tensors
    check = verify_step(step)
    assert all(t.held for t in check.tensors if t.name == "loss")
    ours = int(tensors.loc[tensors["saved_for_backward"], "bytes"].sum())
    torch_bytes = measure_torch_memory(arch, batch=BATCH, optimizer=SGD, seed=0)
    assert ours == torch_bytes["saved_activations"]


@pytest.mark.parametrize("kind", ["sgd", "sgd_momentum", "adam", "adamw"])
def test_the_traced_step_equals_eager_torch_and_torch_optim(kind: str) -> None:
    spec = OptimizerSpec(kind=kind, lr=0.05, weight_decay=0.01)
    step = trace_step(_architecture("conv_bn", (3, 8, 8)), batch=BATCH, seed=1, optimizer=spec)
    check = verify_step(step, seed=1)
    names = {t.name for t in check.tensors}
    assert {"loss", "0.weight_grad", "0.weight.updated", "1.running_mean.updated"} <= names
    assert all(t.error <= t.limit for t in check.tensors if t.held)
    assert "traced step verified in float64 against eager torch" in check.summary()


def test_the_check_catches_a_step_that_computes_something_else() -> None:
    step = trace_step(_architecture("conv_bn", (3, 8, 8)), batch=BATCH, seed=0, optimizer=SGD)
    relu = next(n for n in step.graph.graph.nodes if n.target is torch.ops.aten.relu.default)
    relu.target = torch.ops.aten.sigmoid.default
    step.graph.recompile()
    with pytest.raises(GraphError, match="differs from eager torch's .* far beyond rounding"):
        verify_step(step)


def test_getitem_nodes_carry_no_phase_of_their_own(mlp_step) -> None:
    nodes = [n for n in mlp_step.graph.graph.nodes if n.op == "call_function" and n.target is not operator.getitem]
    assert all(STEP_META in n.meta for n in nodes)


def per_pixel_classes() -> nn.Module:
    """A segmentation head on 3 x 6 x 5: 4 classes per pixel, (batch, classes, height, width) logits."""
    return nn.Conv2d(3, 4, 3, padding=1)


def test_the_default_cross_entropy_takes_the_classes_on_dimension_1_as_torch_does() -> None:
    arch = _architecture("per_pixel_classes", (3, 6, 5))
    step = trace_step(arch, batch=2, seed=0, optimizer=SGD)
    labels = step.feeds["labels"]
    assert labels.shape == (2 * 6 * 5,) and int(labels.max()) == 3  # a class id per pixel, of the 4 classes
    assert step.meta["loss"] == "cross_entropy" and step.meta["output"] == "output"
    inputs = [step.feeds[name] for name in step.inputs]
    loss = step.graph(*inputs)[0]
    module = step.fresh_module()
    # torch's own loss on the unflattened labels, not the step's loss function
    expected = nn.functional.cross_entropy(module(step.feeds["input"]), labels.reshape(2, 6, 5))
    assert torch.allclose(loss, expected, rtol=1e-6)


def test_the_token_cross_entropy_takes_the_classes_on_the_last_axis() -> None:
    path = f"{__name__}:per_pixel_classes"
    arch = models.factory_architecture(path, inputs=(InputSpec("input", (3, 6, 5), "float32"),), loss="token_cross_entropy")
    step = trace_step(arch, batch=2, seed=0, optimizer=SGD)
    labels = step.feeds["labels"]
    assert labels.shape == (2 * 4 * 6,) and int(labels.max()) == 4  # one per row of the last axis, of its 5 "classes"
    module = step.fresh_module()
    expected = nn.functional.cross_entropy(module(step.feeds["input"]).reshape(-1, 5), labels)
    assert torch.allclose(step.graph(*(step.feeds[name] for name in step.inputs))[0], expected, rtol=1e-6)


class Recurrent(nn.Module):
    """Token ids → embedding → an LSTM, GRU or RNN (batch first) → a classifier on the last step's output."""

    def __init__(self, cell: str, layers: int, bidirectional: bool, dropout: float) -> None:
        super().__init__()
        self.embed = nn.Embedding(20, 6)
        rnn = getattr(nn, cell)
        self.rnn = rnn(6, 8, num_layers=layers, bidirectional=bidirectional, dropout=dropout, batch_first=True)
        self.head = nn.Linear(8 * (2 if bidirectional else 1), 3)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.head(self.rnn(self.embed(tokens))[0][:, -1])


def recurrent(cell: str = "LSTM", layers: int = 1, bidirectional: bool = False, dropout: float = 0.0) -> nn.Module:
    return Recurrent(cell, layers, bidirectional, dropout)


def _recurrent(**kwargs: object) -> models.Architecture:
    inputs = (InputSpec("tokens", (5,), "int64", 0, 20),)
    return models.factory_architecture(f"{__name__}:recurrent", inputs=inputs, kwargs=kwargs)


@pytest.mark.parametrize("cell", ["LSTM", "GRU", "RNN"])
def test_a_recurrent_layer_is_a_matmul_per_step_and_gate(cell: str) -> None:
    """One layer, 5 steps at batch 2: each step multiplies the input (6 features) and the hidden state (8) by the
    weights of every gate (LSTM 4, GRU 3, RNN 1), so the forward MACs are those of the products and the classifier."""
    step = trace_step(_recurrent(cell=cell), batch=2, seed=0, optimizer=SGD)
    ops = lower_step(step).ops
    assert not ops["op_type"].str.contains("rnn").any()  # nothing opaque: oneDNN's fused LSTM is not what is traced
    gates = {"LSTM": 4, "GRU": 3, "RNN": 1}[cell]
    forward = ops[ops["phase"] == "forward"]
    assert forward["macs"].sum() == 5 * 2 * (6 + 8) * gates * 8 + 2 * 8 * 3


@pytest.mark.parametrize("cell", ["LSTM", "GRU", "RNN"])
def test_a_deep_bidirectional_recurrent_net_with_dropout_is_verified_and_saves_what_torch_saves(cell: str) -> None:
    step = trace_step(_recurrent(cell=cell, layers=2, bidirectional=True, dropout=0.3), batch=2, seed=0, optimizer=ADAM)
    check = verify_step(step)  # eager torch runs its own kernel (oneDNN's LSTM on this CPU); the traced step its composite
    assert sum(t.held for t in check.tensors) >= len(check.tensors) - 2
    tensors = lower_step(step).tensors
    ours = int(tensors.loc[tensors["saved_for_backward"], "bytes"].sum())
    assert ours == _saved_by_torch(step)


def _saved_by_torch(step) -> int:  # noqa: ANN001 (a TracedStep)
    """The bytes of the storages eager torch's autograd keeps in a training step (its composite RNN with oneDNN off)."""
    module = step.fresh_module()
    enabled = torch.backends.mkldnn.enabled
    torch.backends.mkldnn.enabled = False
    try:
        with saved_storages(module) as saved, no_randomness():
            loss = step.loss_fn(module(step.feeds["tokens"]), step.feeds["labels"])
    finally:
        torch.backends.mkldnn.enabled = enabled
    loss.backward()
    return sum(saved.values())


class Prototypes(nn.Module):
    """A prototype classifier: the distance of each sample's features to 3 learned prototypes (``torch.cdist``)."""

    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Linear(4, 6)
        self.prototypes = nn.Parameter(torch.randn(3, 6))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return -torch.cdist(self.features(x), self.prototypes)


def prototypes() -> nn.Module:
    return Prototypes()


def test_an_op_the_lowering_cannot_cost_is_refused_naming_it_and_its_layers() -> None:
    """torch keeps ``cdist`` one ATen op (``_cdist_forward``: a matmul's worth of MACs); costed as element-wise it
    would be costed as nearly nothing, so the lowering refuses it, before lowering anything, in every phase it runs."""
    step = trace_step(_architecture("prototypes", (4,)), batch=BATCH, seed=0, optimizer=SGD)
    with pytest.raises(GraphError, match=r"aten::_cdist_forward \(forward/cdist\); aten::_cdist_backward \(backward/cdist\)"):
        lower_step(step)


def test_the_check_runs_the_very_graph_costed_in_double_and_compares_every_weight_gradient() -> None:
    # SGD: from zero states Adam's first update is the sign of a gradient, which is rounding's for a gradient that is
    # 0 in exact arithmetic (the check itself draws random states)
    step = trace_step(_architecture("conv_bn", (3, 8, 8)), batch=BATCH, seed=0, optimizer=SGD)
    double = in_double(step.graph)
    assert [n.target for n in double.graph.nodes] == [n.target for n in step.graph.graph.nodes]  # the same ops
    feeds = [step.feeds[name] for name in step.inputs]
    single = step.graph(*(t.clone() for t in feeds))
    doubled = double(*(t.double() if t.is_floating_point() and t.dim() else t.clone() for t in feeds))
    assert all(d.dtype == torch.float64 for d in doubled if d.is_floating_point() and d.dim())
    assert all(torch.allclose(s.double(), d, rtol=1e-4, atol=1e-6) for s, d in zip(single, doubled, strict=True))
    check = verify_step(step)
    assert check.precision == "float64" and "in float64" in check.summary()
    grads = [t for t in check.tensors if t.name.endswith("_grad")]
    # every gradient compared but the first convolution's bias, which the BatchNorm after it makes 0 exactly
    assert {t.name for t in grads if not t.held} <= {"0.bias_grad"} and sum(t.held for t in grads) >= len(grads) - 1
    table = check.table()
    assert set(table["precision"]) == {"float64"} and set(table.loc[~table["held"], "set_aside"]) <= {
        "rounding noise",
        "exactly 0",
    }


class FixedGrid(nn.Module):
    """A module that makes a float32 tensor of its own (as RAFT's coordinate grids): it cannot run in float64."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x) @ torch.ones(3, 3, dtype=torch.float32)


def fixed_grid() -> nn.Module:
    return FixedGrid()


def test_a_module_that_cannot_run_in_double_is_checked_in_float32_and_says_so() -> None:
    check = verify_step(trace_step(_architecture("fixed_grid", (4,)), batch=BATCH, seed=0, optimizer=SGD))
    assert check.precision == "float32" and check.summary().startswith("traced step verified in float32")
    assert all(t.held for t in check.tensors if t.name.endswith("_grad"))


def clip_net() -> nn.Module:
    """A video network on 3 x 4 x 8 x 8 clips: a strided 3-D convolution, BatchNorm, max-pooling over depth, height and
    width, a convolution with a 3-tap depth kernel, average-pooling it away, a classifier."""
    return nn.Sequential(
        nn.Conv3d(3, 6, (3, 3, 3), stride=(1, 2, 2), padding=1),
        nn.BatchNorm3d(6),
        nn.ReLU(),
        nn.MaxPool3d(2),
        nn.Conv3d(6, 5, (3, 1, 1), padding=(1, 0, 0)),
        nn.AdaptiveAvgPool3d(1),
        nn.Flatten(),
        nn.Linear(5, 3),
    )


def test_a_3d_convolution_is_a_2d_one_over_depth_slices_with_exact_macs_and_saved_tensors() -> None:
    arch = _architecture("clip_net", (3, 4, 8, 8))
    step = trace_step(arch, batch=2, seed=0, optimizer=SGD)
    verify_step(step)
    workload = lower_step(step)
    ops = workload.ops
    first = ops[(ops["layer"] == "0/conv3d") & (ops["kind"] == "conv")].iloc[0]
    # output 2 x 6 x 4 x 4 x 4: each of the 4 output depth slices a batch item, each of the 3 depth taps input channels
    assert (first["B"], first["K"], first["C"], first["OY"], first["OX"], first["FY"], first["FX"]) == (8, 6, 9, 4, 4, 3, 3)
    assert (first["stride_y"], first["stride_x"]) == (2, 2)
    module = step.fresh_module()
    clips = step.feeds["input"]
    with FlopCounterMode(display=False) as flops:
        module(clips)
    assert ops.loc[ops["phase"] == "forward", "macs"].sum() == flops.get_total_flops() // 2
    pooled = ops[ops["layer"] == "3/max_pool3d"]
    assert list(pooled["op_type"]) == ["MaxPool", "MaxPoolGrad"] and set(pooled["kind"]) == {"pool"}
    tensors = workload.tensors
    with saved_storages(module) as saved, no_randomness():
        nn.functional.cross_entropy(module(clips), step.feeds["labels"]).backward()
    assert int(tensors.loc[tensors["saved_for_backward"], "bytes"].sum()) == sum(saved.values())


def test_a_module_too_big_for_a_check_in_double_is_checked_in_float32(monkeypatch: pytest.MonkeyPatch) -> None:
    step = trace_step(_architecture("two_layer_mlp", (4,)), batch=BATCH, seed=0, optimizer=SGD)
    assert verify_step(step).precision == "float64"
    monkeypatch.setattr(torch_check, "DOUBLE_BUDGET_BYTES", 120 * 20)  # its 23 parameters would take 2,760 B
    assert verify_step(step).precision == "float32"
