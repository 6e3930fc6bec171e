"""`traincost cost`: a user's torch module, given as a factory path, to its training cost in one command."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.integration.test_cli import assert_clean_failure
from tests.reliability.conftest import EDGE_TPU, cli, importable

USER_MODULE = textwrap.dedent(
    """
    from torch import nn

    def separable():
        return nn.Sequential(
            nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
            nn.Conv2d(16, 16, 3, padding=1, groups=16), nn.BatchNorm2d(16), nn.SiLU(),
            nn.Conv2d(16, 32, 1), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10),
        )

    def not_a_module():
        return 42
    """
)


@pytest.fixture
def user_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    return importable(tmp_path, monkeypatch, "user_nets", USER_MODULE)


@pytest.mark.parametrize("frontend", ["torch", pytest.param("onnx", marks=pytest.mark.ort)])
def test_a_users_module_is_costed_in_one_command(user_module: str, frontend: str, tmp_path: Path) -> None:
    out = tmp_path / "cost"
    args = ("--input-shape", "3,32,32", "--batch", 4, "--hardware", EDGE_TPU, "--out-dir", out, "--frontend", frontend)
    result = cli("cost", f"{user_module}:separable", *args)
    assert result.returncode == 0, result.stderr
    assert "per phase:" in result.stdout and "peak memory by tensor category" in result.stdout
    assert f"({frontend} front end)" in result.stdout
    summary = pd.read_parquet(out / "cost.parquet")
    phases = pd.read_parquet(out / "phases.parquet").set_index("phase")
    ops = pd.read_parquet(out / "ops.parquet")
    assert set(phases.index) == {"forward", "backward", "optimizer"}
    # the phases' energies add up to the step's, and the depthwise conv is there in all three passes
    assert phases["energy_pj"].sum() == pytest.approx(summary["energy_pj"].iloc[0], rel=1e-9)
    assert sorted(ops[ops["G"] == 16]["kind"]) == ["conv", "conv_dgrad", "conv_wgrad"]
    assert np.isfinite(summary.select_dtypes("number").to_numpy(dtype=float)).all()
    # what the check compared: the loss, every gradient and updated parameter, each within its limit
    verification = pd.read_parquet(out / "verification.parquet")
    compared = verification[verification["check"] == "end_to_end"]
    assert {"loss", "0.weight_grad", "0.weight.updated"} <= set(compared["name"])
    held = compared[compared["held"]]
    assert (held["error"] <= held["limit"]).all()
    assert f"{len(held)} of {len(compared)} tensors compared and held end to end" in result.stdout


@pytest.mark.parametrize(
    ("model", "extra", "words"),
    [
        ("no_such_module:net", ("--input-shape", "3,8,8"), ["'no_such_module'", "ModuleNotFoundError"]),
        ("{module}:nothing_here", ("--input-shape", "3,8,8"), ["has no 'nothing_here'"]),
        ("{module}:not_a_module", ("--input-shape", "3,8,8"), ["not_a_module() returned int", "nn.Module"]),
        ("{module}:separable", (), ["--input-shape", "required for the factory path"]),
        ("resnet18_cifar", ("--input-shape", "3,8,8"), ["--input-shape", "only for a factory path"]),
        ("{module}:separable", ("--input-shape", "3,x,8"), ["argument --input-shape", "'3,x,8'"]),
    ],
)
def test_bad_model_input_is_one_error_line(user_module: str, tmp_path: Path, model: str, extra: tuple, words: list[str]) -> None:
    out = tmp_path / "cost"
    result = cli("cost", model.format(module=user_module), *extra, "--hardware", EDGE_TPU, "--out-dir", out)
    assert_clean_failure(result, *words)
    assert not out.exists() or not list(out.glob("*.parquet"))
