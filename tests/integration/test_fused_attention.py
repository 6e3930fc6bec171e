"""Fused attention as a modelling choice: the log-sum-exp saved instead of the probabilities, the scores recomputed."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pandas as pd
import pytest

from tests.reliability.conftest import EDGE_TPU, cli, importable
from traincost import models
from traincost.frontend.shared.optimizer import OptimizerSpec
from traincost.memory.torch_measure import measure_torch_memory

ENCODER = textwrap.dedent(
    """
    from torch import nn

    def encoder(dropout=0.0):  # 2 layers, 2 heads of width 8, 8 tokens
        layer = nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, dropout=dropout, batch_first=True)
        return nn.Sequential(nn.TransformerEncoder(layer, 2, enable_nested_tensor=False), nn.Flatten(), nn.Linear(128, 10))
    """
)
BATCH, HEADS, TOKENS, WIDTH, LAYERS = 2, 2, 8, 8, 2


@pytest.fixture
def encoder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    return f"{importable(tmp_path, monkeypatch, 'encoder_nets', ENCODER)}:encoder"


def _cost(encoder: str, out: Path, *extra: object) -> tuple[str, pd.DataFrame, pd.DataFrame]:
    args = ("--input-shape", f"{TOKENS},16", "--batch", BATCH, "--optimizer", "adam", "--hardware", EDGE_TPU)
    result = cli("cost", encoder, *args, "--out-dir", out, "--frontend", "onnx", *extra)
    assert result.returncode == 0, result.stderr  # the fused step is checked by execution against the materialised one
    memory = pd.read_parquet(out / "memory.parquet").set_index("category")["total_bytes"]
    return result.stdout, memory, pd.read_parquet(out / "ops.parquet")


@pytest.mark.ort
def test_fused_attention_saves_the_log_sum_exp_and_recomputes_the_scores(encoder: str, tmp_path: Path) -> None:
    told, fused, fused_ops = _cost(encoder, tmp_path / "torch")  # torch runs this attention fused: the default
    assert "attention: 2 of 2 costed fused (--attention torch)" in told
    _, materialised, materialised_ops = _cost(encoder, tmp_path / "materialised", "--attention", "materialised")
    probabilities = BATCH * HEADS * TOKENS * TOKENS * 4 * LAYERS
    log_sum_exp = BATCH * HEADS * TOKENS * 4 * LAYERS
    assert materialised["saved_activations"] - fused["saved_activations"] == probabilities - log_sum_exp
    # the backward pass recomputes Q Kᵀ: one more product of N·H·L·L·d MACs per layer
    backward = {name: ops[ops["phase"] == "backward"]["macs"].sum() for name, ops in (("f", fused_ops), ("m", materialised_ops))}
    assert backward["f"] - backward["m"] == BATCH * HEADS * TOKENS * TOKENS * WIDTH * LAYERS
    # and the saved activations are torch's, within 1 % (torch's flash kernel keeps Q, K, V, the output and the LSE)
    spec = models.InputSpec("input", (TOKENS, 16), "float32")
    model = models.factory_architecture(encoder, inputs=(spec,), name="fused_encoder")
    measured = measure_torch_memory(model, batch=BATCH, optimizer=OptimizerSpec(kind="adam", lr=0.001), seed=0)
    assert fused["saved_activations"] == pytest.approx(measured["saved_activations"], rel=0.01)
    assert materialised["saved_activations"] > 1.05 * measured["saved_activations"]


@pytest.mark.ort
def test_an_attention_with_dropout_is_materialised_as_torch_runs_it(encoder: str, tmp_path: Path) -> None:
    told, _, _ = _cost(encoder, tmp_path / "dropout", "--kwargs", '{"dropout": 0.1}')
    assert "attention: 0 of 2 costed fused (--attention torch)" in told
    told, _, _ = _cost(encoder, tmp_path / "forced", "--kwargs", '{"dropout": 0.1}', "--attention", "fused")
    assert "attention: 2 of 2 costed fused (--attention fused)" in told


def test_the_torch_front_end_saves_what_torchs_attention_kernels_save(encoder: str, tmp_path: Path) -> None:
    """Traced, the flash kernel's backward reads Q, K, V, the output and the log-sum-exp (its three gradients are
    lowered as products, the scores recomputed: ``frontend.torch.lower``); with attention dropout torch takes its math kernel
    and keeps the probabilities. Either way the saved activations are torch's own, to the byte."""
    spec = models.InputSpec("input", (TOKENS, 16), "float32")
    adam = OptimizerSpec(kind="adam", lr=0.001)
    for dropout in (0.0, 0.1):
        out = tmp_path / f"torch_{dropout}"
        args = ("--input-shape", f"{TOKENS},16", "--batch", BATCH, "--optimizer", "adam", "--hardware", EDGE_TPU)
        result = cli("cost", encoder, *args, "--kwargs", f'{{"dropout": {dropout}}}', "--out-dir", out, "--frontend", "torch")
        assert result.returncode == 0, result.stderr
        saved = pd.read_parquet(out / "memory.parquet").set_index("category").loc["saved_activations", "total_bytes"]
        model = models.factory_architecture(encoder, inputs=(spec,), kwargs={"dropout": dropout}, name=f"encoder_{dropout}")
        assert saved == measure_torch_memory(model, batch=BATCH, optimizer=adam, seed=0)["saved_activations"]
        ops = pd.read_parquet(out / "ops.parquet")
        flash = ops[ops["name"].str.contains("flash_attention")]
        if dropout:
            assert flash.empty
        else:  # per layer: S and O forward; dQ (S, dP, dQ), dK and dV backward; each N·H·L·L·d MACs
            per_product = BATCH * HEADS * TOKENS * TOKENS * WIDTH * LAYERS
            assert flash.groupby("phase")["macs"].sum().to_dict() == {"forward": 2 * per_product, "backward": 5 * per_product}


@pytest.mark.ort
def test_the_workflows_lowering_costs_a_workload_fused_when_its_key_says_so(encoder: str, tmp_path: Path) -> None:
    """`traincost lower --attention` (the `attention` workload key): materialised by default, as MONET's graph is."""
    import onnx  # noqa: PLC0415

    from traincost.frontend.onnx.decompose import decompose  # noqa: PLC0415
    from traincost.frontend.onnx.export import export_model  # noqa: PLC0415
    from traincost.frontend.onnx.train_graph import build_train_step  # noqa: PLC0415

    model = models.factory_architecture(encoder, inputs=(models.InputSpec("input", (TOKENS, 16), "float32"),), name="lowered")
    step = decompose(build_train_step(export_model(model, batch=BATCH, seed=0), OptimizerSpec(kind="sgd", lr=0.01)))
    onnx.save(step, tmp_path / "decomposed.onnx")
    saved = {}
    for choice in ("materialised", "fused"):
        ops, tensors = tmp_path / f"{choice}.ops.parquet", tmp_path / f"{choice}.tensors.parquet"
        flags = [] if choice == "materialised" else ["--attention", choice]
        result = cli("lower", "--in", tmp_path / "decomposed.onnx", *flags, "--ops", ops, "--tensors", tensors)
        assert result.returncode == 0, result.stderr
        assert f"attention: {LAYERS if choice == 'fused' else 0} of {LAYERS} costed fused" in result.stdout
        table = pd.read_parquet(tensors)
        saved[choice] = table.loc[table["saved_for_backward"], "bytes"].sum()
    assert saved["materialised"] - saved["fused"] == BATCH * HEADS * TOKENS * (TOKENS - 1) * 4 * LAYERS
