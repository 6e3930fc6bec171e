"""Every zoo network's training step on the torch front end, checked by execution against eager torch and
``torch.optim``: those the ONNX front end also builds in tests/integration/test_frontend_agreement.py (with the
comparison of the two), the others here (ImageNet-sized networks and GPT-2 124M, torch only)."""

from __future__ import annotations

import pytest
from torch import nn

from tests.conftest import OPTIMIZERS, ZOO_STEPS, ZooStep, zoo_params
from traincost import models
from traincost.frontend.agreement import workload_totals
from traincost.frontend.torch.check import verify_step
from traincost.frontend.torch.lower import lower_step
from traincost.frontend.torch.step import trace_step


def test_every_zoo_network_has_its_check() -> None:
    assert set(ZOO_STEPS) == set(models.ARCHITECTURES)


@pytest.mark.parametrize(("name", "zoo_step"), zoo_params(onnx_too=False))
def test_the_traced_step_of_a_zoo_network_equals_eager_torch(name: str, zoo_step: ZooStep) -> None:
    optimizer = OPTIMIZERS[zoo_step.optimizer]
    step = trace_step(name, batch=zoo_step.batch, seed=0, optimizer=optimizer, options=dict(zoo_step.options))
    check = verify_step(step)  # raises naming the tensor if the traced step computes something else
    aside = [t.name for t in check.tensors if not t.held]
    if name in ("resnet50", "gpt2_124m"):  # every weight gradient compared (GPT-2 124M in float32: too big for float64)
        assert not [t for t in aside if t.endswith("_grad")], aside
    if check.precision == "float64":
        # every tensor compared but what is 0 in exact arithmetic: the bias gradient of a convolution a training-mode
        # BatchNorm normalises (VGG-16-BN's; in float32, ResNet-50 had 284 of its 643 tensors compared)
        module = step.fresh_module()
        assert all(name.endswith(".bias_grad") for name in aside), aside
        layers = [module.get_submodule(name.removesuffix(".bias_grad")) for name in aside]
        assert all(isinstance(layer, nn.Conv2d) for layer in layers)
        assert not aside or any(isinstance(m, nn.BatchNorm2d) for m in module.modules())
    else:  # the rest is float32 noise: VGG-16 compares 10 of its 32 weight gradients
        assert "loss" not in aside and len(aside) <= len(check.tensors) * 2 // 3
    totals = workload_totals(lower_step(step))
    params = sum(step.feeds[name].numel() for name in step.params)
    assert totals["weight_grad_bytes"] == 4 * params  # float32, one gradient per parameter
    # each parameter and each optimizer state is read and written (its update a tensor of its own)
    assert totals["weight_bytes"] == 2 * 4 * params
    assert totals["optimizer_state_bytes"] == totals["weight_bytes"] * len(optimizer.states)
    assert totals["macs_backward"] > totals["macs_forward"] > 0
