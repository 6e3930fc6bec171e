"""Activations the front end writes as several ops keep, as torch's kernels do, one tensor for the backward pass."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pandas as pd
import pytest

from tests.reliability.conftest import EDGE_TPU, cli, importable
from traincost import models
from traincost.frontend.shared.optimizer import OptimizerSpec
from traincost.memory.torch_measure import measure_torch_memory

ACTIVATIONS = textwrap.dedent(
    """
    from torch import nn

    def activated(kind):
        layer = {"hardswish": nn.Hardswish(), "hardsigmoid": nn.Hardsigmoid(), "softplus": nn.Softplus(),
                 "elu": nn.ELU(), "selu": nn.SELU()}[kind]
        return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), layer, nn.Conv2d(8, 8, 1), nn.Flatten(), nn.Linear(512, 10))
    """
)


@pytest.mark.parametrize("frontend", [pytest.param("onnx", marks=pytest.mark.ort), "torch"])
@pytest.mark.parametrize("kind", ["hardswish", "hardsigmoid", "softplus", "elu", "selu"])
def test_a_rewritten_activation_saves_what_torchs_kernel_saves(kind: str, frontend: str, tmp_path: Path, monkeypatch) -> None:
    """Without the recompute, HardSwish's rewrite kept three intermediates besides its input: 34,400 bytes saved
    against torch's 18,020 for a HardSwish and a HardSigmoid. The torch front end's backward reads what torch's
    derivative formulas read, whatever torch's decomposition of the forward."""
    module = importable(tmp_path, monkeypatch, "activation_nets", ACTIVATIONS)
    out = tmp_path / "cost"
    args = ("--kwargs", f'{{"kind": "{kind}"}}', "--input-shape", "3,8,8", "--batch", 2, "--hardware", EDGE_TPU)
    result = cli("cost", f"{module}:activated", *args, "--out-dir", out, "--frontend", frontend)
    assert result.returncode == 0, result.stderr  # the step with its recomputes is verified by execution
    ops = pd.read_parquet(out / "ops.parquet")
    if frontend == "onnx":
        assert (ops["name"].str.endswith("/backward") & (ops["phase"] == "backward")).any()  # the intermediates, recomputed
    spec = models.InputSpec("input", (3, 8, 8), "float32")
    name = models.factory_architecture(f"{module}:activated", inputs=(spec,), kwargs={"kind": kind}, name=f"activated_{kind}")
    measured = measure_torch_memory(name, batch=2, optimizer=OptimizerSpec(kind="sgd", lr=0.01), seed=0)
    saved = pd.read_parquet(out / "memory.parquet").set_index("category").loc["saved_activations", "total_bytes"]
    assert saved == pytest.approx(measured["saved_activations"], abs=4)  # torch's cross-entropy keeps one float more
