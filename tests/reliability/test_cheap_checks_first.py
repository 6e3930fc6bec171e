"""Cheap checks first: a command refuses a bad file before it builds or traces a model, and the workflow's config
check refuses what a job would (a grid past its limit, a hardware path that is no mapping) before any job runs."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.reliability.conftest import EDGE_TPU, cli
from tests.unit.test_workflow_plan import REPO, _config
from traincost.limits import MAX_CONFIGS
from traincost.workflow import config_problems


@pytest.mark.parametrize("frontend", ["torch", pytest.param("onnx", marks=pytest.mark.ort)])
def test_a_hardware_typo_is_refused_before_the_model_is_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, frontend: str
) -> None:
    def never(*_: object, **__: object) -> None:
        raise AssertionError("the model was built before the hardware file was read")

    monkeypatch.setattr("traincost.models.build_model", never)
    typo = tmp_path / "edge_tpuu.yaml"
    result = cli("cost", "resnet18_cifar", "--hardware", typo, "--out-dir", tmp_path / "out", "--frontend", frontend)
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith(f"traincost: error: {typo}") and len(result.stderr.strip().splitlines()) == 1


def test_the_config_check_applies_the_grid_limit_and_reads_the_hardware_path_as_a_job_would(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    config = _config("quick.yaml")
    sweep = config["hardware_sweeps"]["edge_tpu_resnet18"]
    sweep["grid"] = {"x_pes": list(range(1, 1001)), "y_pes": list(range(1, 1002))}
    problems = config_problems(config, repo=REPO)
    limit = f"hardware_sweeps.edge_tpu_resnet18.grid: 1,001,000 configurations, more than max_configs {MAX_CONFIGS:,}"
    assert any(p.startswith(limit) for p in problems), problems
    sweep["max_configs"] = 2_000_000
    assert not any("configurations" in p for p in config_problems(config, repo=REPO))
    listed = tmp_path / "list.yaml"
    listed.write_text(yaml.safe_dump([1, 2]))
    sweep["hardware"] = str(listed)
    problems = config_problems(config, repo=REPO)
    assert f"hardware_sweeps.edge_tpu_resnet18.hardware: {listed} is list; expected a hardware YAML mapping" in problems
    broken = tmp_path / "broken.yaml"
    broken.write_text("a: [1, 2\n")
    sweep["hardware"] = str(broken)
    problems = config_problems(config, repo=REPO)
    assert any(p.startswith(f"hardware_sweeps.edge_tpu_resnet18.hardware: {broken}: not valid YAML") for p in problems)


@pytest.mark.parametrize(
    ("flags", "words"),
    [
        (("--batch", "1000000000000"), ["argument --batch", "a batch size from 1 to 1,048,576"]),
        (("--seed", "-1"), ["argument --seed", "a seed from 0 to 2,147,483,647"]),
        (("--seed", str(10**30)), ["argument --seed", "a seed from 0 to 2,147,483,647"]),
        (("--batch", "1000000"), ["the batch (input 1000000x3x32x32) would take 12,288,000,000 bytes"]),
    ],
)
def test_a_number_past_what_a_run_can_take_is_one_line_before_any_work(
    tmp_path: Path, flags: tuple[str, ...], words: list[str]
) -> None:
    """numpy's seeding raised on -1 and 10^30; a batch of 10^12 asked numpy for 10.9 PiB."""
    result = cli("cost", "resnet18_cifar", *flags, "--hardware", EDGE_TPU, "--out-dir", tmp_path / "out", "--frontend", "torch")
    assert result.returncode == 2, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    for word in words:
        assert word in result.stderr, result.stderr
