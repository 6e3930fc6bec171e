"""Both front ends on the zoo's networks: MACs per phase within 1 %, the bytes of weights, gradients and optimizer
states equal, saved activations within 5 % (``traincost.frontend.agreement``). The whole zoo, GPT-2 124M included,
is in ``bench/frontend.py --agreement``."""

from __future__ import annotations

import pytest

from tests.conftest import OPTIMIZERS
from traincost.frontend.agreement import frontend_agreement
from traincost.frontend.torch_lower import lower_step
from traincost.frontend.torch_step import trace_step

pytestmark = pytest.mark.ort

SLOW = pytest.mark.slow


@pytest.mark.parametrize(
    ("name", "batch", "optimizer"),
    [
        ("mlp", 4, "adam"),
        ("resnet18_cifar", 2, "sgd_momentum"),
        ("gpt2_small", 2, "adamw"),
        pytest.param("resnet56", 2, "sgd", marks=SLOW),
        pytest.param("alexnet", 1, "sgd_momentum", marks=SLOW),
        pytest.param("vgg16_bn_cifar", 2, "adam", marks=SLOW),
        pytest.param("tiny_yolov3", 1, "adam", marks=SLOW),
        pytest.param("resnet18", 1, "sgd", marks=SLOW),
    ],
)
def test_both_front_ends_agree_on_a_zoo_network(chain, name: str, batch: int, optimizer: str) -> None:
    onnx_workload = chain(name, batch, optimizer).workload
    torch_workload = lower_step(trace_step(name, batch=batch, seed=0, optimizer=OPTIMIZERS[optimizer]))
    table = frontend_agreement(torch_workload, onnx_workload)
    assert table["within"].all(), table.to_string()
