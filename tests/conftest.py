"""Shared fixtures: the front-end chain of a zoo model, built once per test session."""

from __future__ import annotations

import os

# Under pytest-xdist (`-n 2`) each worker computes on one thread: two workers, each with torch's and ONNX Runtime's
# default of one thread per core, oversubscribe the two cores (ONNX Runtime's idle threads spin). Set before torch
# and ONNX Runtime are imported; the commands the tests run inherit it. Measured on four front-end and CLI test files
# at -n 2: 119 s wall, 190 CPU s with the defaults; 107 s, 162 CPU s with one thread.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.setdefault("OMP_NUM_THREADS", "1")

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import onnx
import pytest

from traincost.frontend.shared.optimizer import OptimizerSpec
from traincost.models.transformer import TransformerConfig, transformer_workload
from traincost.workload import Workload

# Without the `ort` extra (ONNX Runtime Training) the ONNX front end cannot import: the test modules that use it
# throughout say so with `pytestmark = pytest.mark.ort` and are not collected; a test of the torch front end runs.
_ORT_INSTALLED = importlib.util.find_spec("onnxruntime") is not None
_ORT_MODULE = "\npytestmark = pytest.mark.ort"


def pytest_ignore_collect(collection_path: Path) -> bool | None:
    """Leave out a test module marked `ort` as a whole where ONNX Runtime Training is not installed."""
    if _ORT_INSTALLED or collection_path.suffix != ".py" or not collection_path.name.startswith("test_"):
        return None
    return True if _ORT_MODULE in collection_path.read_text(encoding="utf-8") else None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that builds the ONNX front end's chain (the ``chain`` fixture) needs ONNX Runtime Training: marked `ort`."""
    for item in items:
        if "chain" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.ort)


@dataclass(frozen=True)
class Chain:
    """Every artefact of the front end for one (model, batch, optimizer)."""

    model: onnx.ModelProto
    train_step: onnx.ModelProto
    decomposed: onnx.ModelProto
    workload: Workload


OPTIMIZERS = {
    "sgd": OptimizerSpec(kind="sgd", lr=0.1),
    "sgd_momentum": OptimizerSpec(kind="sgd_momentum", lr=0.1, momentum=0.9, weight_decay=1e-4),
    "adam": OptimizerSpec(kind="adam", lr=1e-3, weight_decay=1e-4),
    "adamw": OptimizerSpec(kind="adamw", lr=1e-3, weight_decay=1e-2),
}


@dataclass(frozen=True)
class ZooStep:
    """How the tests check a zoo network's training step on the torch front end: at ``batch`` with ``optimizer`` (a key
    of ``OPTIMIZERS``) and ``options``; ``onnx_too``: also built by the ONNX front end and compared with it
    (tests/integration/test_frontend_agreement.py), else checked alone (tests/integration/test_torch_zoo.py)."""

    batch: int
    optimizer: str
    slow: bool
    onnx_too: bool
    options: tuple[tuple[str, object], ...] = ()


# Every zoo network (``traincost.models.ARCHITECTURES``; tests/integration/test_torch_zoo.py holds them equal). The
# ONNX front end's chain of the ImageNet-sized ones and GPT-2 124M takes minutes and gigabytes (bench/frontend.py
# --agreement compares those); ``gpt2``, whose defaults are GPT-2 124M, is checked with a user's options.
ZOO_STEPS = {
    "mlp": ZooStep(4, "adam", slow=False, onnx_too=True),
    "resnet18_cifar": ZooStep(2, "sgd_momentum", slow=False, onnx_too=True),
    "gpt2_small": ZooStep(2, "adamw", slow=False, onnx_too=True),
    "resnet56": ZooStep(2, "sgd", slow=True, onnx_too=True),
    "alexnet": ZooStep(1, "sgd_momentum", slow=True, onnx_too=True),
    "vgg16_bn_cifar": ZooStep(2, "adam", slow=True, onnx_too=True),
    "tiny_yolov3": ZooStep(1, "adam", slow=True, onnx_too=True),
    "resnet18": ZooStep(1, "sgd", slow=True, onnx_too=True),
    "resnet50": ZooStep(2, "sgd_momentum", slow=True, onnx_too=False),
    "vgg16": ZooStep(1, "adam", slow=True, onnx_too=False),
    "vgg16_bn": ZooStep(2, "adamw", slow=True, onnx_too=False),
    "gpt2_124m": ZooStep(1, "adamw", slow=True, onnx_too=False),
    "gpt2": ZooStep(
        2, "adam", slow=True, onnx_too=False, options=(("n_layer", 3), ("d_model", 192), ("n_head", 6), ("seq_len", 128))
    ),
}


def zoo_params(*, onnx_too: bool) -> list[object]:
    """``ZOO_STEPS`` as pytest parameters (name, step), the slow ones marked."""
    return [
        pytest.param(name, step, marks=pytest.mark.slow if step.slow else (), id=name)
        for name, step in ZOO_STEPS.items()
        if step.onnx_too == onnx_too
    ]


@pytest.fixture(scope="session")
def chain() -> Callable[..., Chain]:
    """``chain(name, batch, optimizer="sgd", options=None)``, cached for the session."""
    cache: dict[tuple[object, ...], Chain] = {}

    def build(name: str, batch: int, optimizer: str = "sgd", options: dict[str, object] | None = None) -> Chain:
        # the ONNX front end (the `ort` extra): imported by the tests that build a chain, which are marked `ort`
        from traincost.frontend.onnx.decompose import decompose  # noqa: PLC0415
        from traincost.frontend.onnx.export import export_model  # noqa: PLC0415
        from traincost.frontend.onnx.lower import lower  # noqa: PLC0415
        from traincost.frontend.onnx.train_graph import build_train_step  # noqa: PLC0415

        key = (name, batch, optimizer, tuple(sorted((options or {}).items())))
        if key not in cache:
            model = export_model(name, batch=batch, seed=0, options=options)
            train = build_train_step(model, OPTIMIZERS[optimizer])
            decomposed = decompose(train)
            cache[key] = Chain(model, train, decomposed, lower(decomposed))
        return cache[key]

    return build


@pytest.fixture(scope="session")
def tiny_transformer() -> Workload:
    """A two-layer transformer's training step (d_model 64, 32 tokens, batch 4), small enough to simulate every
    tiered policy in a fraction of a second."""
    config = TransformerConfig(
        name="tiny", n_layer=2, d_model=64, n_head=4, d_head=16, d_ff=256, vocab_size=128, seq_len=32, batch=4
    )
    return transformer_workload(config)
