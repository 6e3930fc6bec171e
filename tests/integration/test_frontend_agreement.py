"""Both front ends on the zoo's networks: the torch front end's step checked by execution against eager torch, and
then MACs per phase within 1 %, the bytes of weights, gradients and optimizer states equal, saved activations within
5 % (``traincost.frontend.agreement``). The whole zoo, GPT-2 124M included, is in ``bench/frontend.py --agreement``."""

from __future__ import annotations

import pytest

from tests.conftest import OPTIMIZERS
from traincost.frontend.agreement import frontend_agreement
from traincost.frontend.torch_check import verify_step
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
    step = trace_step(name, batch=batch, seed=0, optimizer=OPTIMIZERS[optimizer])
    check = verify_step(step)  # raises naming the tensor if the traced step computes something else
    assert sum(t.held for t in check.tensors) >= len(check.tensors) // 2
    table = frontend_agreement(lower_step(step), onnx_workload)
    assert table["within"].all(), table.to_string()
