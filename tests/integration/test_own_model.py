"""A user's own model through the chain: a torch module named by a factory path (with kwargs, named inputs and
a loss), or an ONNX file a user exported; every later stage reads what it needs from the export's metadata."""

from __future__ import annotations

import importlib
import json
import sys
import textwrap
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
import pandas as pd
import pytest
import torch

from tests.reliability.conftest import EDGE_TPU, cli
from traincost import models
from traincost.frontend.onnx.execute import example_feeds, run
from traincost.frontend.onnx.export import export_model
from traincost.frontend.onnx.graph import model_meta
from traincost.frontend.onnx.train_graph import build_train_step
from traincost.frontend.shared.optimizer import OptimizerSpec
from traincost.models.library import torchvision_model
from traincost.signature import InputSpec, draw_tensors
from traincost.workload import read_table

pytestmark = pytest.mark.ort  # the ONNX front end throughout (tests/conftest.py: pytest_ignore_collect)

OWN_NETS = textwrap.dedent(
    """
    import torch
    from torch import nn

    class Encoder(nn.Module):
        '''A BERT-style encoder from torch.nn.TransformerEncoder: token ids in, per-token logits out.'''

        def __init__(self, vocab=50, d_model=16, heads=2, layers=1):
            super().__init__()
            self.embed = nn.Embedding(vocab, d_model)
            layer = nn.TransformerEncoderLayer(d_model, heads, dim_feedforward=32, dropout=0.0, batch_first=True)
            self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
            self.head = nn.Linear(d_model, vocab)

        def forward(self, tokens):
            return self.head(self.encoder(self.embed(tokens)))

    def encoder(**kwargs):
        return Encoder(**kwargs)

    def regressor():
        return nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3))

    def two_inputs():
        return TwoInputs()

    class TwoInputs(nn.Module):
        def __init__(self):
            super().__init__()
            self.image = nn.Conv2d(3, 4, 3, padding=1)
            self.side = nn.Linear(5, 4)

        def forward(self, image, side):
            return self.image(image).mean(dim=(2, 3)) + self.side(side)

    def weighted_huber(output, target):
        '''A regression loss on float targets: Huber, the first output weighted twice.'''
        weights = torch.tensor([2.0, 1.0, 1.0])
        error = (output - target).abs()
        return (torch.where(error < 1, 0.5 * error * error, error - 0.5) * weights).mean()

    def z_loss(output, labels):
        '''Cross-entropy over the last axis plus a penalty on the logits' size.'''
        picked = output.log_softmax(-1).gather(-1, labels.unsqueeze(-1))
        return 0.01 * output.pow(2).mean() - picked.mean()
    """
)
TOKENS = {"tokens": {"shape": [8], "dtype": "int64", "range": [0, 40]}}


@pytest.fixture
def own_nets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    (tmp_path / "own_nets.py").write_text(OWN_NETS)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "own_nets", raising=False)
    return "own_nets"


def _own(function: str) -> Callable[..., object]:
    """A function of the user's module (on sys.path through the fixture)."""
    return getattr(importlib.import_module("own_nets"), function)


def export_encoder_onnx(path: Path, *, vocab: int = 50, dynamic_batch: bool = True) -> torch.nn.Module:
    """A user's export of the encoder, with the settings docs/models.md ("An ONNX file") gives."""
    torch.manual_seed(0)
    model = _own("encoder")(vocab=vocab).train()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model,
            (torch.zeros(1, 8, dtype=torch.int64),),
            str(path),
            dynamo=False,
            training=torch.onnx.TrainingMode.TRAINING,
            do_constant_folding=False,
            opset_version=17,
            input_names=["tokens"],
            dynamic_axes={"tokens": {0: "batch"}} if dynamic_batch else None,
        )
    return model


def test_an_onnx_file_records_what_every_later_stage_needs(own_nets: str, tmp_path: Path) -> None:
    source = tmp_path / "encoder.onnx"
    model = export_encoder_onnx(source)
    out = tmp_path / "model.onnx"
    # per-token logits (3, 8, 50): the classes are torch's dimension 1 by default, the vocabulary with the token loss
    for loss, labels in (("cross_entropy", [150, 8]), ("token_cross_entropy", [24, 50])):
        result = cli("export", "--onnx", source, "--batch", 3, "--name", "my_encoder", "--loss", loss, "--out", out)
        assert result.returncode == 0, result.stderr
        meta = model_meta(onnx.load(str(out)))
        assert meta["model"] == "my_encoder"
        # the token range comes from the embedding table the input indexes; the labels from the output's class axis
        assert json.loads(meta["inputs"]) == [{"name": "tokens", "shape": [3, 8], "dtype": "int64", "range": [0, 50]}]
        rows, classes = labels
        assert json.loads(meta["labels"]) == {"name": "labels", "shape": [rows], "dtype": "int64", "range": [0, classes]}
        assert meta["loss"] == loss
        assert sorted(json.loads(meta["parameters"])) == sorted(name for name, _ in model.named_parameters())


def test_an_onnx_file_is_costed_in_one_command(own_nets: str, tmp_path: Path) -> None:
    source = tmp_path / "encoder.onnx"
    export_encoder_onnx(source)
    out = tmp_path / "cost"
    result = cli("cost", source, "--batch", 2, "--hardware", EDGE_TPU, "--out-dir", out)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("encoder, batch 2")
    ops, meta = read_table(out / "ops.parquet")
    assert meta["model"] == "encoder" and meta["source"] == str(source)
    # the embedding's gather in the forward pass, its gradient in the backward pass, the loss over 2 x 8 tokens
    assert {"forward", "backward", "optimizer"} <= set(ops["phase"])
    phases = pd.read_parquet(out / "phases.parquet")
    assert np.isfinite(phases["energy_pj"]).all() and (phases["energy_pj"] > 0).all()


def test_a_module_with_token_inputs_kwargs_and_its_own_loss_trains_on_that_loss(own_nets: str, tmp_path: Path) -> None:
    """The training graph's loss is the user's loss function on the user's inputs, as torch computes it."""
    out = tmp_path / "model.onnx"
    args = ("--module", f"{own_nets}:encoder", "--kwargs", '{"vocab": 40}', "--inputs", json.dumps(TOKENS))
    result = cli("export", *args, "--loss", f"{own_nets}:z_loss", "--batch", 2, "--name", "enc", "--out", out)
    assert result.returncode == 0, result.stderr
    forward = onnx.load(str(out))
    meta = model_meta(forward)
    assert [o.name for o in forward.graph.output] == ["loss"]
    assert json.loads(meta["labels"]) == {"name": "labels", "shape": [2, 8], "dtype": "int64", "range": [0, 40]}
    train = build_train_step(forward, OptimizerSpec(kind="sgd", lr=0.1))
    loss = run(train, example_feeds(train, seed=0), ["loss"])["loss"]
    torch.manual_seed(0)
    model = _own("encoder")(vocab=40).train()
    specs = [InputSpec("tokens", (2, 8), "int64", 0, 40), InputSpec("labels", (2, 8), "int64", 0, 40)]
    batch = {name: torch.from_numpy(array) for name, array in draw_tensors(specs, seed=0).items()}
    expected = _own("z_loss")(model(batch["tokens"]), batch["labels"]).item()
    assert float(loss) == pytest.approx(expected, rel=1e-5)


def test_a_loss_function_on_float_regression_targets(own_nets: str, tmp_path: Path) -> None:
    """--labels gives the float targets a user's loss reads; one SGD step in ONNX Runtime equals torch's, and the
    whole chain costs it. Labels with a built-in loss or a zoo model are refused."""
    out = tmp_path / "model.onnx"
    targets = '{"shape": [3], "dtype": "float32"}'
    args = ("--module", f"{own_nets}:regressor", "--input-shape", "6", "--loss", f"{own_nets}:weighted_huber")
    result = cli("export", *args, "--labels", targets, "--batch", 4, "--out", out)
    assert result.returncode == 0, result.stderr
    forward = onnx.load(str(out))
    assert json.loads(model_meta(forward)["labels"]) == {"name": "labels", "shape": [4, 3], "dtype": "float32", "range": [0, 0]}
    train = build_train_step(forward, OptimizerSpec(kind="sgd", lr=0.1))
    outputs = run(train, example_feeds(train, seed=0))
    torch.manual_seed(0)
    model = _own("regressor")().train()
    drawn = draw_tensors([InputSpec("input", (4, 6), "float32"), InputSpec("labels", (4, 3), "float32")], seed=0)
    batch = {name: torch.from_numpy(array) for name, array in drawn.items()}
    loss = _own("weighted_huber")(model(batch["input"]), batch["labels"])
    loss.backward()
    assert float(outputs["loss"]) == pytest.approx(loss.item(), rel=1e-5)
    with torch.no_grad():
        for name, param in model.named_parameters():
            expected = (param - 0.1 * param.grad).numpy()
            assert np.allclose(outputs[f"{name}.updated"], expected, rtol=1e-5, atol=1e-7), name
    costed = cli("cost", *args[1:], "--labels", targets, "--batch", 4, "--hardware", EDGE_TPU, "--out-dir", tmp_path / "cost")
    assert costed.returncode == 0, costed.stderr
    builtin = cli("export", *args[:4], "--loss", "mse", "--labels", targets, "--batch", 4, "--out", out.with_name("b.onnx"))
    told = "labels are for a cross-entropy or a loss function; mse reads targets like the output"
    assert builtin.returncode != 0 and told in builtin.stderr
    zoo = cli("export", "--model", "mlp", "--labels", targets, "--batch", 4, "--out", out.with_name("z.onnx"))
    assert zoo.returncode != 0 and "--labels: only for a torch module given by a factory path; 'mlp'" in zoo.stderr
    bad = cli("export", *args, "--labels", '{"shape": [3], "dtype": "float16"}', "--batch", 4, "--out", out.with_name("c.onnx"))
    assert bad.returncode != 0 and "--labels.dtype: expected one of float32, int64, got 'float16'" in bad.stderr
    assert not any(out.with_name(n).exists() for n in ("b.onnx", "z.onnx", "c.onnx"))


def test_mse_and_two_named_inputs(own_nets: str, tmp_path: Path) -> None:
    out = tmp_path / "reg"
    result = cli("cost", f"{own_nets}:regressor", "--input-shape", "6", "--loss", "mse", "--hardware", EDGE_TPU, "--out-dir", out)
    assert result.returncode == 0, result.stderr
    tensors, _ = read_table(out / "tensors.parquet")
    assert "target" in set(tensors["name"])  # mse reads float targets shaped like the output
    inputs = {"image": {"shape": [3, 8, 8]}, "side": {"shape": [5]}}
    graph = tmp_path / "two.onnx"
    result = cli("export", "--module", f"{own_nets}:two_inputs", "--inputs", json.dumps(inputs), "--batch", 2, "--out", graph)
    assert result.returncode == 0, result.stderr
    assert [i.name for i in onnx.load(str(graph)).graph.input if i.name in inputs] == ["image", "side"]


def test_an_onnx_file_with_initializers_listed_as_inputs_and_dropout(tmp_path: Path) -> None:
    """keep_initializers_as_inputs=True lists every parameter as a graph input too; they stay parameters."""
    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3), torch.nn.BatchNorm2d(8), torch.nn.ReLU(), torch.nn.Dropout(0.1), torch.nn.Flatten(),
        torch.nn.Linear(8 * 6 * 6, 10),
    ).train()  # fmt: skip
    source = tmp_path / "net.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            net, (torch.randn(2, 3, 8, 8),), str(source), dynamo=False, training=torch.onnx.TrainingMode.TRAINING,
            do_constant_folding=False, opset_version=17, input_names=["input"], keep_initializers_as_inputs=True,
        )  # fmt: skip
    out = tmp_path / "cost"
    result = cli("cost", source, "--batch", 2, "--hardware", EDGE_TPU, "--out-dir", out)
    assert result.returncode == 0, result.stderr
    tensors, _ = read_table(out / "tensors.parquet")
    weights = set(tensors[tensors["kind"] == "weight"]["name"])
    assert {name for name, _ in net.named_parameters()} <= weights


@pytest.mark.slow  # 24 s (90 s on shared cores): ResNet-18, 64x64, batch 2 (layer4 BatchNorm over 2x2x2 values)
def test_a_torchvision_resnet18_exported_to_onnx_is_costed(tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = torchvision_model("resnet18", num_classes=10).train()  # torchvision imported after its operator schemas
    source = tmp_path / "resnet18.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model, (torch.randn(2, 3, 64, 64),), str(source), dynamo=False, training=torch.onnx.TrainingMode.TRAINING,
            do_constant_folding=False, opset_version=17, input_names=["image"], dynamic_axes={"image": {0: "batch"}},
        )  # fmt: skip
    out = tmp_path / "cost"
    result = cli("cost", source, "--batch", 2, "--hardware", EDGE_TPU, "--out-dir", out)
    assert result.returncode == 0, result.stderr
    ops, meta = read_table(out / "ops.parquet")
    assert meta["model"] == "resnet18"
    assert sorted(ops[ops["phase"] == "forward"]["kind"]).count("conv") == 20  # 17 3x3 + 3 projection shortcuts


def test_an_onnx_file_with_two_outputs_names_the_one_the_loss_reads(tmp_path: Path) -> None:
    """A classifier that also returns an auxiliary head: --output picks the loss's output, the other head goes."""

    class TwoHeads(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.body = torch.nn.Linear(6, 8)
            self.classes = torch.nn.Linear(8, 4)
            self.aux = torch.nn.Linear(8, 2)

        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            hidden = self.body(x).relu()
            return self.classes(hidden), self.aux(hidden)

    torch.manual_seed(0)
    source = tmp_path / "two_heads.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            TwoHeads().train(), (torch.randn(2, 6),), str(source), dynamo=False, training=torch.onnx.TrainingMode.TRAINING,
            do_constant_folding=False, opset_version=17, input_names=["x"], output_names=["classes", "aux"],
        )  # fmt: skip
    out = tmp_path / "model.onnx"
    unnamed = cli("export", "--onnx", source, "--batch", 2, "--out", out)
    assert unnamed.returncode != 0 and not out.exists()
    assert "2 graph outputs ['classes', 'aux']; name the one the loss reads (--output" in unnamed.stderr
    wrong = cli("export", "--onnx", source, "--output", "logits", "--batch", 2, "--out", out)
    assert wrong.returncode != 0 and not out.exists()
    assert "output 'logits' is not a graph output; its outputs are ['classes', 'aux']" in wrong.stderr
    for output, kept in (("classes", "classes.weight"), ("aux", "aux.weight")):
        result = cli("export", "--onnx", source, "--output", output, "--batch", 2, "--out", out)
        assert result.returncode == 0, result.stderr
        graph = onnx.load(str(out))
        params = json.loads(model_meta(graph)["parameters"])
        dropped = {"classes.weight", "aux.weight"} - {kept}
        assert kept in params and not dropped & set(params)  # the other head's weights are not parameters
        assert not dropped & {init.name for init in graph.graph.initializer}
        assert [o.name for o in graph.graph.output] == [output]
        train = build_train_step(graph, OptimizerSpec(kind="sgd", lr=0.1))
        assert np.isfinite(run(train, example_feeds(train, seed=0))["loss"])
    module = cli("export", "--module", "torch.nn:Identity", "--input-shape", "4", "--output", "x", "--batch", 2, "--out", out)
    assert module.returncode != 0 and "--output 'x': the forward returns one tensor, which has no entries" in module.stderr


def per_pixel_classes() -> torch.nn.Module:
    """A segmentation head on 3 x 6 x 5: 4 classes per pixel, (batch, classes, height, width) logits."""
    return torch.nn.Conv2d(3, 4, 3, padding=1)


def test_the_onnx_front_end_takes_the_classes_on_dimension_1_as_torch_does() -> None:
    arch = models.factory_architecture(f"{__name__}:per_pixel_classes", inputs=(InputSpec("input", (3, 6, 5), "float32"),))
    forward = export_model(arch, batch=2, seed=0)
    assert json.loads(model_meta(forward)["labels"]) == {"name": "labels", "shape": [60], "dtype": "int64", "range": [0, 4]}
    train = build_train_step(forward, OptimizerSpec(kind="sgd", lr=0.1))
    feeds = example_feeds(train, seed=0)
    loss = run(train, feeds, ["loss"])["loss"]
    torch.manual_seed(0)  # the export's weights
    module = models.build_model(arch)
    logits = module(torch.from_numpy(feeds["input"]))
    expected = torch.nn.functional.cross_entropy(logits, torch.from_numpy(feeds["labels"]).reshape(2, 6, 5))
    assert float(loss) == pytest.approx(float(expected), rel=1e-5)
