"""The workflow checks, while it reads its config, that what the config needs is installed: without ONNX Runtime
Training a config on the onnx front end fails at once, under ``snakemake -n`` too, and one on the torch front end
plans as before. ONNX Runtime is hidden by a package of the same name without its ``training`` package placed
first on ``PYTHONPATH``, so the test runs alike on Pythons with and without the ``ort`` extra."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def without_ort(tmp_path: Path) -> dict[str, str]:
    """An environment in which ``onnxruntime`` is an empty package: ``onnxruntime.training`` cannot be imported."""
    (tmp_path / "shadow" / "onnxruntime").mkdir(parents=True)
    (tmp_path / "shadow" / "onnxruntime" / "__init__.py").write_text("")
    path = os.pathsep.join([str(tmp_path / "shadow"), *filter(None, [os.environ.get("PYTHONPATH")])])
    return {**os.environ, "PYTHONPATH": path, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}


def _dry_run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """``snakemake -n`` of the quick config in the repository (its files are named relative to it), every job planned
    whatever results/ holds, and no lock taken beside a run of the user's."""
    command = [sys.executable, "-m", "snakemake", "-n", "--forceall", "--nolock", "--cores", "2"]
    command += ["--configfile", "config/quick.yaml", *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, cwd=REPO, check=False)


def test_the_onnx_front_end_without_onnx_runtime_training_fails_before_planning(without_ort: dict[str, str]) -> None:
    result = _dry_run(without_ort)
    said = result.stdout + result.stderr
    assert result.returncode != 0
    assert "not installed: frontend: onnx (the front end of resnet18_cifar" in said, said[-2000:]
    assert "pip install -e '.[ort]' on Python 3.11" in said and "snakemake --config frontend=torch" in said
    assert "hardware_sweep_shard" not in said  # no job was planned


def test_the_torch_front_end_plans_without_onnx_runtime(without_ort: dict[str, str]) -> None:
    result = _dry_run(without_ort, "--config", "frontend=torch")
    assert result.returncode == 0, (result.stdout + result.stderr)[-2000:]
    assert "trace_step" in result.stdout and "train_graph" not in result.stdout
