"""Adaptive average pooling to a size that does not divide the input: exported as two products with pooling matrices."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from tests.reliability.conftest import EDGE_TPU, cli, importable
from traincost.frontend.onnx.adaptive_pool import pooling_matrix


@pytest.mark.parametrize(("size", "output"), [((1, 1), (7, 7)), ((5, 7), (3, 4)), ((13, 13), (6, 6)), ((8, 8), (4, 2))])
def test_the_pooling_matrices_are_torchs_windows(size: tuple[int, int], output: tuple[int, int]) -> None:
    x = torch.randn(2, 3, *size)
    pooled = pooling_matrix(size[0], output[0]) @ x.numpy() @ pooling_matrix(size[1], output[1]).T
    np.testing.assert_allclose(pooled, torch.nn.functional.adaptive_avg_pool2d(x, output).numpy(), rtol=1e-6, atol=1e-6)


POOLED = textwrap.dedent(
    """
    from torch import nn

    def pooled():  # a 2x2 map pooled to 3x3, as AlexNet's 1x1 map to 6x6 at 64x64
        return nn.Sequential(nn.Conv2d(3, 4, 3, stride=2, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(3),
                             nn.Flatten(), nn.Linear(36, 10))
    """
)


@pytest.mark.ort
def test_a_model_pooling_to_a_size_that_does_not_divide_its_map_is_costed(tmp_path: Path, monkeypatch) -> None:
    module = importable(tmp_path, monkeypatch, "pooled_nets", POOLED)
    out = tmp_path / "cost"
    args = ("--input-shape", "3,4,4", "--batch", 2, "--hardware", EDGE_TPU, "--out-dir", out)
    assert cli("cost", f"{module}:pooled", *args, "--frontend", "torch").returncode == 0  # torch's own decomposition
    result = cli("cost", f"{module}:pooled", *args, "--frontend", "onnx")
    assert result.returncode == 0, result.stderr  # exported, and its training step verified by execution
    ops = pd.read_parquet(out / "ops.parquet")
    pooling = ops[(ops["phase"] == "forward") & (ops["op_type"] == "MatMul")]
    assert len(pooling) == 2  # along the width (2 -> 3), then along the height
    assert sorted(pooling["macs"]) == [2 * 4 * 2 * 2 * 3, 2 * 4 * 3 * 2 * 3]
