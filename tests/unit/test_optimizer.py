"""One ONNX training step equals one torch.optim step."""

from __future__ import annotations

import copy

import numpy as np
import onnx
import pytest
import torch
from onnx import numpy_helper

from traincost import models
from traincost.errors import ConfigError, GraphError
from traincost.frontend.onnx.execute import example_feeds, run
from traincost.frontend.onnx.optimizer_check import TOLERANCE as OPTIMIZER_TOLERANCE
from traincost.frontend.onnx.optimizer_check import check_optimizer
from traincost.frontend.shared.optimizer import OptimizerSpec
from traincost.frontend.shared.rounding import max_relative_error
from traincost.frontend.shared.torch_model import torch_optimizer

from ..conftest import OPTIMIZERS

pytestmark = pytest.mark.ort  # the ONNX front end throughout (tests/conftest.py: pytest_ignore_collect)

_TORCH_STATE = {"momentum": "momentum_buffer", "exp_avg": "exp_avg", "exp_avg_sq": "exp_avg_sq"}
# Adam and AdamW start from random moments at step 3: from zero moments the first update is
# lr·g/(|g| + eps) ≈ lr·sign(g), which turns float32 noise in a near-zero gradient into a full
# step either way, so only a well-conditioned step can be compared element by element.
_STEP = 3.0


def _torch_step(name: str, batch: int, spec: OptimizerSpec, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """One torch.optim step from the parameters of the graph and the optimizer states in ``feeds``."""
    torch.manual_seed(0)
    model = models.build_model(name)
    model.train()
    inputs, labels = models.make_batch(name, batch=batch, seed=0)
    optimizer = torch_optimizer(spec, list(model.parameters()))
    for pname, param in model.named_parameters():
        state = {_TORCH_STATE[s]: torch.from_numpy(feeds[f"{pname}.{s}"].copy()) for s in spec.states}
        if spec.kind in ("adam", "adamw"):
            state["step"] = torch.tensor(_STEP - 1.0)
        if state:
            optimizer.state[param] = state
    loss = torch.nn.functional.cross_entropy(model(inputs), labels)
    loss.backward()
    optimizer.step()
    values = {n: p.detach().numpy().copy() for n, p in model.named_parameters()}
    for pname, param in model.named_parameters():
        for s in spec.states:
            values[f"{pname}.{s}"] = optimizer.state[param][_TORCH_STATE[s]].numpy().copy()
    values |= {n: b.detach().numpy().copy() for n, b in model.named_buffers() if "running_mean" in n}
    values["loss"] = loss.detach().numpy()
    return values


@pytest.mark.parametrize(
    ("name", "batch", "optimizer"),
    [
        ("resnet18_cifar", 4, "sgd"),
        ("resnet18_cifar", 4, "sgd_momentum"),
        ("resnet18_cifar", 4, "adam"),
        ("resnet18_cifar", 4, "adamw"),
        ("gpt2_small", 2, "adamw"),
        ("gpt2_small", 2, "sgd_momentum"),
    ],
)
def test_one_onnx_step_equals_one_torch_step(chain, name: str, batch: int, optimizer: str) -> None:
    spec = OPTIMIZERS[optimizer]
    graph = chain(name, batch, optimizer).train_step
    feeds = example_feeds(graph, seed=0, states="zeros" if spec.kind.startswith("sgd") else "random")
    if "optimizer.step" in feeds:
        feeds["optimizer.step"] = np.array(_STEP, dtype=np.float32)
    outputs = run(graph, feeds)
    expected = _torch_step(name, batch, spec, feeds)
    params = [n for n, _ in models.build_model(name).named_parameters()]
    assert max_relative_error(expected["loss"], outputs["loss"]) < 1e-5
    updated = params + [f"{p}.{s}" for p in params for s in spec.states]
    errors = {n: max_relative_error(expected[n], outputs[f"{n}.updated"]) for n in updated}
    worst = max(errors, key=errors.__getitem__)
    assert errors[worst] < 1e-4, (worst, errors[worst])
    # The step really moved the parameters (the comparison is not of two unchanged copies).
    moved = [p for p in params if not np.array_equal(outputs[f"{p}.updated"], _initial_value(graph, p))]
    assert len(moved) > len(params) // 2
    for stat in (n for n in expected if "running_mean" in n):
        assert max_relative_error(expected[stat], outputs[f"{stat}.updated"]) < 1e-4


def _initial_value(graph: onnx.ModelProto, name: str) -> np.ndarray:
    return next(numpy_helper.to_array(i) for i in graph.graph.initializer if i.name == name)


def test_optimizer_states_are_inputs_and_outputs(chain) -> None:
    graph = chain("gpt2_small", 2, "adamw").train_step
    inputs = {v.name for v in graph.graph.input}
    outputs = {v.name for v in graph.graph.output}
    params = [n for n, _ in models.build_model("gpt2_small").named_parameters()]
    for param in params:
        assert {f"{param}.exp_avg", f"{param}.exp_avg_sq"} <= inputs
        assert {f"{param}.updated", f"{param}.exp_avg.updated", f"{param}.exp_avg_sq.updated"} <= outputs
    assert "optimizer.step" in inputs
    assert not [n for n in graph.graph.node if n.domain == "com.microsoft" and n.op_type == "InPlaceAccumulatorV2"]


def test_optimizer_nodes_are_primitive_and_annotated(chain) -> None:
    graph = chain("resnet18_cifar", 4, "adam").train_step
    optimizer_nodes = [n for n in graph.graph.node if any(p.value == "optimizer" for p in n.metadata_props)]
    assert optimizer_nodes
    assert {n.op_type for n in optimizer_nodes} <= {"Mul", "Add", "Sub", "Div", "Sqrt", "Pow", "Reciprocal"}
    assert all(n.domain == "" for n in optimizer_nodes)


@pytest.mark.parametrize(
    ("values", "field"),
    [
        ({"kind": "sgd", "lr": -1.0}, "lr"),
        ({"kind": "adam", "lr": 0.1, "beta1": 1.5}, "beta1"),
        ({"kind": "rmsprop", "lr": 0.1}, "kind"),
        ({"kind": "sgd", "lr": 0.1, "weight_decay": -0.1}, "weight_decay"),
        ({"kind": "sgd", "lr": 0.1, "nesterov": True}, "nesterov"),
    ],
)
def test_bad_optimizer_values_name_the_field(values: dict[str, object], field: str) -> None:
    with pytest.raises(ConfigError, match=field):
        OptimizerSpec.from_mapping(values, where="optimizers.mine")


def test_spec_is_immutable() -> None:
    spec = OptimizerSpec(kind="sgd", lr=0.1)
    with pytest.raises(AttributeError):
        spec.lr = 0.2  # type: ignore[misc]
    assert copy.copy(spec) == spec


@pytest.mark.parametrize("optimizer", ["sgd", "sgd_momentum", "adam", "adamw"])
def test_the_optimizer_check_passes_on_every_optimizer(chain, optimizer: str) -> None:
    spec = OPTIMIZERS[optimizer]
    assert check_optimizer(chain("resnet18_cifar", 4, optimizer).train_step, spec, seed=1) <= OPTIMIZER_TOLERANCE


def test_the_optimizer_check_catches_an_update_off_by_a_percent(chain) -> None:
    """train-graph runs this check: one parameter's learning rate 1 % off fails it, naming the tensor."""
    graph = onnx.ModelProto()
    graph.CopyFrom(chain("resnet18_cifar", 4, "adam").train_step)
    target = next(i for i in graph.graph.initializer if i.name.startswith("optimizer/fc.weight/") and "beta1" in i.name)
    target.CopyFrom(numpy_helper.from_array(np.float32(numpy_helper.to_array(target) * 1.01), target.name))
    with pytest.raises(GraphError, match="fc.weight"):
        check_optimizer(graph, OPTIMIZERS["adam"], seed=1)
