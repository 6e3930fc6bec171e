"""The optimizer step of a training graph checked by execution against ``torch.optim``.

``train-graph`` appends the optimizer as primitive ops (``optimizer_step.py``). Here those ops run alone,
on the graph's parameters with random gradients and random optimizer states at step 3 (from zero
moments Adam's first update is lr·sign(g), which says little), and one ``torch.optim`` step runs
on the same tensors; every updated parameter and state must match within ``TOLERANCE``. The
parameters are taken a slice at a time, so memory stays a few hundred MB on GPT-2 124M.
"""

from __future__ import annotations

import json
import logging
import math

import numpy as np
import onnx
import torch
from onnx import helper, numpy_helper
from torch.optim.adam import adam
from torch.optim.adamw import adamw
from torch.optim.sgd import sgd

from traincost.errors import GraphError
from traincost.frontend.onnx.execute import Executable
from traincost.frontend.onnx.graph import PHASE_KEY, model_meta, node_meta, producers
from traincost.frontend.onnx.shapes import tensor_types
from traincost.frontend.shared.optimizer import STEP_INPUT, OptimizerSpec, state_input_name, updated_name
from traincost.frontend.shared.rounding import max_relative_error

__all__ = ["check_optimizer", "TOLERANCE"]

log = logging.getLogger(__name__)

# Largest relative difference allowed between the graph's update and torch.optim's.
TOLERANCE = 1e-4
# The step the check runs (bias corrections away from their first-step values).
_STEP = 3.0
# Parameter elements checked per execution.
_CHUNK_ELEMENTS = 30_000_000


def check_optimizer(train: onnx.ModelProto, spec: OptimizerSpec, *, seed: int) -> float:
    """Check the optimizer ops of ``train`` against one ``torch.optim`` step; the worst relative error.

    Raises:
        GraphError: naming the tensor whose update differs by more than ``TOLERANCE``.
    """
    graph = train.graph
    params: list[str] = json.loads(model_meta(train)["parameters"])
    values = {init.name: init for init in graph.initializer if init.name in set(params)}
    rng = np.random.default_rng(seed)
    worst = 0.0
    chunk: list[str] = []
    for index, param in enumerate(params):
        chunk.append(param)
        if sum(math.prod(values[p].dims) for p in chunk) >= _CHUNK_ELEMENTS or index == len(params) - 1:
            worst = max(worst, _check_chunk(train, spec, chunk, values, rng))
            chunk = []
    log.info("optimizer step (%s) equals torch.optim's within %.1e", spec.kind, worst)
    return worst


def _check_chunk(
    train: onnx.ModelProto,
    spec: OptimizerSpec,
    params: list[str],
    values: dict[str, onnx.TensorProto],
    rng: np.random.Generator,
) -> float:
    states = [state_input_name(p, s) for p in params for s in spec.states]
    wanted = [updated_name(name) for name in params + states]
    model = _optimizer_part(train, wanted)
    feeds: dict[str, np.ndarray] = {STEP_INPUT: np.array(_STEP, dtype=np.float32)}
    for param in params:
        feeds[param] = numpy_helper.to_array(values[param])
        shape = feeds[param].shape
        feeds[f"{param}_grad"] = 0.01 * rng.standard_normal(shape, dtype=np.float32)
        for state in spec.states:
            draw = (
                rng.random(shape, dtype=np.float32) * 1e-4
                if state == "exp_avg_sq"
                else 0.01 * rng.standard_normal(shape, dtype=np.float32)
            )
            feeds[state_input_name(param, state)] = draw
    actual = Executable(model).run(feeds, wanted)
    expected = _torch_step(spec, params, feeds)  # after ONNX Runtime's run: it updates the states in feeds
    worst = 0.0
    for name in params + states:
        error = max_relative_error(expected[name], actual[updated_name(name)])
        if not error <= TOLERANCE:
            raise GraphError(
                f"graph {train.graph.name!r}: optimizer update {updated_name(name)!r} differs from "
                f"torch.optim's by {error:.2e} (> {TOLERANCE})"
            )
        worst = max(worst, error)
    return worst


def _optimizer_part(train: onnx.ModelProto, outputs: list[str]) -> onnx.ModelProto:
    """The optimizer ops that compute ``outputs``, reading parameters, gradients, states and the step as inputs."""
    graph = train.graph
    writers = producers(graph)
    needed: set[str] = set()
    stack = list(outputs)
    while stack:
        name = stack.pop()
        node = writers.get(name)
        if node is None or node_meta(node, PHASE_KEY) != "optimizer" or node.output[0] in needed:
            continue
        needed.add(node.output[0])
        stack.extend(node.input)
    nodes = [node for node in graph.node if node.output and node.output[0] in needed]
    made = {out for node in nodes for out in node.output}
    read = list(dict.fromkeys(name for node in nodes for name in node.input if name and name not in made))
    constants = {init.name: init for init in graph.initializer if init.name in read}
    types = tensor_types(graph)
    fed = set(json.loads(model_meta(train)["parameters"]))
    inputs = [name for name in read if name not in constants or name in fed]
    part = helper.make_graph(
        nodes,
        f"{graph.name}_optimizer",
        [helper.make_tensor_value_info(n, types[n].elem_type, types[n].shape) for n in inputs],
        [helper.make_tensor_value_info(n, types[n].elem_type, types[n].shape) for n in outputs],
        initializer=[constants[n] for n in read if n not in inputs],
    )
    model = helper.make_model(part, opset_imports=list(train.opset_import))
    model.ir_version = train.ir_version
    return model


def _torch_step(spec: OptimizerSpec, params: list[str], feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """One ``torch.optim`` step from the parameters, gradients and states in ``feeds``; the states are updated in
    place (the parameters, read-only views of the graph's data, are copied).

    The step is torch.optim's functional form (``torch.optim.sgd.sgd``, ``torch.optim.adam.adam``,
    ``torch.optim.adamw.adamw``): the code the optimizer classes' ``step`` runs on CPU, without constructing
    a class, which imports torch._dynamo (3 s in every train-graph job)."""
    tensors = [torch.from_numpy(feeds[p].copy()) for p in params]
    grads = [torch.from_numpy(feeds[f"{name}_grad"]) for name in params]
    states = {s: [torch.from_numpy(feeds[state_input_name(name, s)]) for name in params] for s in spec.states}
    match spec.kind:
        case "sgd" | "sgd_momentum":
            sgd(
                tensors,
                grads,
                states.get("momentum", [None] * len(params)),
                foreach=False,
                weight_decay=spec.weight_decay,
                momentum=spec.momentum if spec.kind == "sgd_momentum" else 0.0,
                lr=spec.lr,
                dampening=0.0,
                nesterov=False,
                maximize=False,
            )
        case "adam" | "adamw":
            step = adam if spec.kind == "adam" else adamw
            step(
                tensors,
                grads,
                states["exp_avg"],
                states["exp_avg_sq"],
                [],
                [torch.tensor(_STEP - 1.0) for _ in params],  # the functional step counts this one
                foreach=False,
                amsgrad=False,
                beta1=spec.beta1,
                beta2=spec.beta2,
                lr=spec.lr,
                weight_decay=spec.weight_decay,
                eps=spec.eps,
                maximize=False,
            )
    result = {name: tensor.numpy() for name, tensor in zip(params, tensors, strict=True)}
    for s, values in states.items():
        result.update({state_input_name(name, s): value.numpy() for name, value in zip(params, values, strict=True)})
    return result
