"""The torch front end's inference step: the eval-mode forward traced by torch, BatchNorm folded where a convolution
alone feeds it, lowered to the Workload IR and checked against eager torch.

Hand-made modules whose counts are known, BatchNorms that must not be folded, and a traced graph made wrong on purpose,
which the check must catch.
"""

from __future__ import annotations

import pandas as pd
import pytest
import torch
from torch import nn

from traincost import models
from traincost.errors import ConfigError, GraphError
from traincost.frontend.shared.torch_model import INFERENCE_STAGE, LOGITS
from traincost.frontend.torch.inference import fold_batchnorm, trace_inference, verify_inference
from traincost.frontend.torch.lower import lower_step
from traincost.schedule.manual_fusion import groups_by_prefix
from traincost.signature import InputSpec

BATCH = 3


def conv_bn_head() -> nn.Module:
    """3x3 convolution (3 → 6 channels, no bias), BatchNorm, ReLU, then a BatchNorm after a linear layer: on 3 x 8 x 8."""
    return nn.Sequential(
        nn.Conv2d(3, 6, 3, padding=1, bias=False),
        nn.BatchNorm2d(6),
        nn.ReLU(),
        nn.Flatten(),
        nn.Linear(6 * 8 * 8, 4),
        nn.BatchNorm1d(4),
    )


class SharedOutput(nn.Module):
    """A convolution whose output a BatchNorm and a residual add both read: folding would change the add."""

    def __init__(self) -> None:
        super().__init__()
        self.conv, self.bn = nn.Conv2d(4, 4, 1), nn.BatchNorm2d(4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x)
        return (self.bn(y) + y).mean((2, 3))


def shared_output() -> nn.Module:
    return SharedOutput()


class Total(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.sum()


def scalar_output() -> nn.Module:
    return Total()


def _architecture(factory: str, shape: tuple[int, ...]) -> models.Architecture:
    return models.factory_architecture(f"{__name__}:{factory}", inputs=(InputSpec("input", shape, "float32"),))


def _trained_statistics(module: nn.Module) -> nn.Module:
    """BatchNorm statistics away from their initial 0 and 1, so that folding changes the weights."""
    with torch.no_grad():
        for bn in (m for m in module.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)):
            bn.running_mean.uniform_(-1, 1)
            bn.running_var.uniform_(0.5, 2)
            bn.weight.uniform_(0.5, 1.5)
            bn.bias.uniform_(-1, 1)
    return module.eval()


def test_a_batchnorm_after_a_convolution_is_folded_and_the_output_is_unchanged() -> None:
    torch.manual_seed(0)
    module = _trained_statistics(conv_bn_head())
    x = torch.randn(BATCH, 3, 8, 8)
    before = module(x)
    assert fold_batchnorm(module, {"input": x}) == 1
    assert isinstance(module[1], nn.Identity) and module[0].bias is not None  # the fold gives the convolution a bias
    assert isinstance(module[5], nn.BatchNorm1d)  # after a linear layer: kept, in inference form
    torch.testing.assert_close(module(x), before, rtol=1e-5, atol=1e-5)


def test_a_convolution_output_read_twice_keeps_its_batchnorm() -> None:
    torch.manual_seed(0)
    module = _trained_statistics(shared_output())
    assert fold_batchnorm(module, {"input": torch.randn(BATCH, 4, 5, 5)}) == 0
    assert isinstance(module.bn, nn.BatchNorm2d)


def test_the_inference_step_has_the_forward_macs_and_no_training_op() -> None:
    step = trace_inference(_architecture("conv_bn_head", (3, 8, 8)), batch=BATCH, seed=0)
    workload = lower_step(step)
    ops, tensors = workload.ops, workload.tensors
    assert set(ops["phase"]) == {"forward"}
    assert ops["macs"].sum() == BATCH * (8 * 8 * 6 * 3 * 9 + 6 * 8 * 8 * 4)
    assert workload.meta["stage"] == INFERENCE_STAGE and workload.meta["batchnorm_folded"] == "1"
    # the BatchNorm after the convolution is gone; the one after the linear layer is one op in inference form
    assert list(ops.loc[ops["op_type"] == "BatchNormalization", "layer"]) == ["5/batch_norm"]
    assert not ops["layer"].str.startswith("1/").any()
    assert not tensors["name"].str.endswith(".updated").any()  # no statistics written
    output = tensors[tensors["kind"] == "output"]
    assert list(output["name"]) == [LOGITS] and int(output["bytes"].iloc[0]) == BATCH * 4 * 4


def test_the_check_holds_on_the_step_and_catches_a_wrong_one() -> None:
    step = trace_inference(_architecture("conv_bn_head", (3, 8, 8)), batch=BATCH, seed=1)
    check = verify_inference(step, seed=1)
    assert [t.name for t in check.tensors] == [LOGITS] and check.tensors[0].held
    assert check.summary().startswith("traced step verified in float32 against eager torch:")
    relu = next(n for n in step.graph.graph.nodes if n.target is torch.ops.aten.relu.default)
    relu.target = torch.ops.aten.sigmoid.default
    step.graph.recompile()
    with pytest.raises(GraphError, match="inference step's output differs from eager torch's"):
        verify_inference(step, seed=1)


def test_a_wrong_fold_is_caught() -> None:
    """The check compares with the module as built: a folded weight off by 1 % fails it."""
    step = trace_inference(_architecture("conv_bn_head", (3, 8, 8)), batch=BATCH, seed=0)
    step.feeds["0.weight"].mul_(1.01)
    with pytest.raises(GraphError, match="far beyond rounding"):
        verify_inference(step)


def test_a_scalar_output_is_refused() -> None:
    with pytest.raises(ConfigError, match="returns a scalar"):
        trace_inference(_architecture("scalar_output", (4,)), batch=BATCH, seed=0)


def test_manual_fusion_prefixes_take_the_torch_front_ends_layer_names() -> None:
    """Prefixes are module paths as the ONNX front end names layers; a torch layer lies under the path's last module."""
    layers = [
        "stem.0/conv2d",
        "stages.0.0.conv1/conv2d",
        "stages.0.0/add",
        "stages.0.1.conv1/conv2d",
        "stages.0.10/add",
        "fc/linear",
    ]
    ops = pd.DataFrame({"op": range(len(layers)), "layer": layers, "phase": "forward"})
    groups = groups_by_prefix(ops, ["stages/stages.0/stages.0.0", "stages/stages.0/stages.0.1"], phases=["forward"])
    assert groups == ((1, 2),)  # stages.0.1 has one op; stages.0.10 lies under neither
    onnx_ops = pd.DataFrame(
        {"op": [0, 1], "layer": ["stages/stages.0/stages.0.0/conv1", "stages/stages.0/stages.0.0"], "phase": "forward"}
    )
    assert groups_by_prefix(onnx_ops, ["stages/stages.0/stages.0.0"], phases=["forward"]) == ((0, 1),)
