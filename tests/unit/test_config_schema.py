"""The shipped configs validate, and the schema knows exactly the zoo."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest
import yaml

from traincost import models

REPO = Path(__file__).resolve().parents[2]
SCHEMA = yaml.safe_load((REPO / "workflow/schemas/config.schema.yaml").read_text())


def test_schema_model_names_are_the_zoo_or_a_factory_path() -> None:
    zoo, factory = SCHEMA["properties"]["workloads"]["additionalProperties"]["properties"]["model"]["anyOf"]
    assert sorted(zoo["enum"]) == sorted(models.ARCHITECTURES)
    assert jsonschema.Draft202012Validator(factory).is_valid("my_pkg.nets:mobile_net")
    assert not jsonschema.Draft202012Validator(factory).is_valid("resnet-18")


WORKLOAD = SCHEMA["properties"]["workloads"]["additionalProperties"]
TOKENS = {"tokens": {"shape": [128], "dtype": "int64", "range": [0, 30522]}}


@pytest.mark.parametrize(
    ("workload", "valid"),
    [
        ({"module": "my_pkg.nets:encoder", "kwargs": {"vocab": 30522}, "inputs": TOKENS, "loss": "my_pkg.losses:z_loss"}, True),
        ({"onnx": "models/encoder.onnx", "loss": "mse"}, True),
        ({"model": "resnet18", "onnx": "models/encoder.onnx"}, False),  # one kind of model
        ({"kwargs": {}}, False),  # no model at all
        ({"module": "my_pkg.nets:encoder", "inputs": {"tokens": {"shape": [128], "dtype": "int32"}}}, False),
        ({"module": "my_pkg.nets:encoder", "inputs": {"tokens": {"shape": []}}}, False),
        ({"onnx": "m.onnx", "loss": "hinge"}, False),
    ],
)
def test_a_workload_names_one_model_with_its_inputs_and_loss(workload: dict, valid: bool) -> None:
    assert jsonschema.Draft202012Validator(WORKLOAD).is_valid({**workload, "batch": 2, "optimizer": "sgd"}) is valid


@pytest.mark.parametrize("name", ["config.yaml", "quick.yaml"])
def test_shipped_configs_validate(name: str) -> None:
    config = yaml.safe_load((REPO / "config" / name).read_text())
    jsonschema.validate(config, SCHEMA)
    for workload in config["workloads"].values():
        assert workload["optimizer"] in config["optimizers"]
        assert workload["model"] in models.ARCHITECTURES
    assert set(config["figure3"]["workloads"]) <= set(config["workloads"])


def test_every_key_has_a_description() -> None:
    def walk(node: dict, path: str) -> list[str]:
        missing = []
        for key, child in node.get("properties", {}).items():
            if "description" not in child:
                missing.append(f"{path}.{key}")
            missing += walk(child, f"{path}.{key}")
        extra = node.get("additionalProperties")
        if isinstance(extra, dict):
            missing += walk(extra, f"{path}.*")
        return missing

    assert walk(SCHEMA, "config") == []
