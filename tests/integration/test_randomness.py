"""Random draws a model makes beyond ``nn.Dropout``: exported, costed with their masks saved, and checked like with like."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import onnx
import pandas as pd
import pytest
import torch

from tests.reliability.conftest import EDGE_TPU, cli, importable
from traincost import models
from traincost.frontend.shared.optimizer import OptimizerSpec
from traincost.frontend.shared.torch_randomness import no_randomness
from traincost.memory.torch_measure import measure_torch_memory

ADAM = OptimizerSpec(kind="adam", lr=0.01)
RANDOM_MODULE = textwrap.dedent(
    """
    import torch
    from torch import nn


    class Drops(nn.Module):
        '''Stochastic depth (timm's bernoulli_ and torch.rand's), attention dropout and functional dropout.'''

        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(8, 8)
            self.attention = nn.MultiheadAttention(8, 2, dropout=0.25, batch_first=True)
            self.head = nn.Linear(8, 10)

        def forward(self, x):
            keep = x.new_empty(x.shape[0], 1, 1).bernoulli_(0.75) / 0.75
            y = x + self.proj(x) * keep
            y = y + self.proj(y) * (torch.rand(y.shape[0], 1, 1) < 0.5).to(y.dtype) * 2.0
            a, _ = self.attention(y, y, y, need_weights=False)
            return self.head(nn.functional.dropout(a, 0.1, training=self.training).sum(1))


    def drops():
        return Drops()
    """
)


@pytest.fixture
def random_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    return f"{importable(tmp_path, monkeypatch, 'random_nets', RANDOM_MODULE)}:drops"


@pytest.mark.ort
def test_every_random_draw_is_costed_with_its_mask_saved_and_checked_on_the_onnx_front_end(
    random_module: str, tmp_path: Path
) -> None:
    out = tmp_path / "cost"
    args = ("--input-shape", "4,8", "--batch", 2, "--optimizer", "adam", "--hardware", EDGE_TPU, "--out-dir", out)
    result = cli("cost", random_module, *args, "--frontend", "onnx")
    # the export check and the decomposition check both pass: each side draws the same (keep) values
    assert result.returncode == 0, result.stderr
    ops = pd.read_parquet(out / "ops.parquet")
    tensors = pd.read_parquet(out / "tensors.parquet")
    forward = ops[ops["phase"] == "forward"]
    # the attention dropout and the functional one are both drawn in training mode; each mask is saved (1 byte each)
    assert (forward["op_type"] == "Dropout").sum() == 2
    masks = tensors[tensors["producer"].isin(forward.index[forward["op_type"] == "Dropout"]) & (tensors["dtype_bytes"] == 1)]
    assert len(masks) == 2 and masks["saved_for_backward"].all()
    assert sorted(masks["bytes"]) == [2 * 4 * 8, 2 * 2 * 4 * 4]  # the functional dropout's, the attention probabilities'
    # stochastic depth: bernoulli_ and torch.rand are both uniform draws compared with a probability
    assert (forward["op_type"] == "RandomUniformLike").sum() + (forward["op_type"] == "RandomUniform").sum() == 2


def test_every_random_draw_is_traced_and_its_mask_saved_as_torch_saves_it(random_module: str, tmp_path: Path) -> None:
    out = tmp_path / "cost"
    args = ("--input-shape", "4,8", "--batch", 2, "--optimizer", "adam", "--hardware", EDGE_TPU, "--out-dir", out)
    result = cli("cost", random_module, *args, "--frontend", "torch")
    # the traced step and eager torch both draw every mask at its keep value for the check
    assert result.returncode == 0, result.stderr
    assert "33 of 33 tensors compared and held end to end" in result.stdout
    ops = pd.read_parquet(out / "ops.parquet")
    forward = ops[ops["phase"] == "forward"]
    # stochastic depth's bernoulli_ and torch.rand, the attention dropout and the functional one: four draws
    assert sorted(forward.loc[forward["op_type"].isin(["Bernoulli", "RandomUniformLike"]), "layer"]) == [
        "attention/multi_head_attention_forward", "bernoulli_", "dropout", "rand",
    ]  # fmt: skip
    spec = models.InputSpec("input", (4, 8), "float32")
    measured = measure_torch_memory(
        models.factory_architecture(random_module, inputs=(spec,), name="drops"), batch=2, optimizer=ADAM, seed=0
    )
    saved = pd.read_parquet(out / "memory.parquet").set_index("category").loc["saved_activations", "total_bytes"]
    assert saved == measured["saved_activations"]  # the dropout masks as the storages torch keeps them in


def _sdpa_graph() -> onnx.ModelProto:
    import io  # noqa: PLC0415

    class Self(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.attention = torch.nn.MultiheadAttention(8, 2, dropout=0.5, batch_first=True)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.attention(x, x, x, need_weights=False)[0]

    buffer = io.BytesIO()
    torch.onnx.export(Self().train(), (torch.randn(2, 3, 8),), buffer, dynamo=False, training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False, opset_version=17, input_names=["x"], output_names=["y"])  # fmt: skip
    return onnx.load_from_string(buffer.getvalue())


@pytest.mark.ort
def test_the_attention_dropout_is_exported_in_training_mode() -> None:
    from traincost.frontend.onnx.execute import Executable  # noqa: PLC0415 (the ONNX front end: the `ort` extra)
    from traincost.frontend.onnx.randomness import dropout_in_training_mode, without_randomness  # noqa: PLC0415

    model = _sdpa_graph()
    (dropout,) = [node for node in model.graph.node if node.op_type == "Dropout"]
    assert len(dropout.input) == 2  # torch's exporter leaves out training_mode: ONNX reads it as inference
    assert dropout_in_training_mode(model.graph) == 1
    assert len(dropout.input) == 3 and len(dropout.output) == 2
    x = np.random.default_rng(0).standard_normal((2, 3, 8)).astype(np.float32)
    drawn = Executable(model).run({"x": x}, ["y"])["y"]
    kept = Executable(without_randomness(model)).run({"x": x}, ["y"])["y"]
    assert not np.allclose(drawn, kept)  # at p = 0.5 some attention weight was dropped (and the rest doubled)


@pytest.mark.ort
def test_torch_and_onnx_keep_every_element_alike() -> None:
    from traincost.frontend.onnx.randomness import dropout_in_training_mode, without_randomness  # noqa: PLC0415

    """A dropout at p = 0.5 with every draw kept scales by 2 in torch and in the ONNX graph without randomness."""
    x = torch.randn(3, 4)
    with no_randomness():
        dropped = torch.nn.functional.dropout(x, 0.5, training=True)
        kept = x.new_empty(3, 1).bernoulli_(0.2)
        uniform = torch.rand(3, 1)
    assert torch.equal(dropped, x * 2)
    assert torch.equal(kept, torch.ones(3, 1)) and torch.equal(uniform, torch.zeros(3, 1))
    model = _sdpa_graph()
    dropout_in_training_mode(model.graph)
    (node,) = [n for n in without_randomness(model).graph.node if n.output and n.output[0].endswith("Dropout_output_0")]
    assert node.op_type == "Mul"
