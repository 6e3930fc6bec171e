"""Optimizer steps written as primitive ONNX ops, appended to a forward + backward graph.

One graph is then one complete training iteration: it reads parameters, optimizer states and a
batch, and writes the loss, every updated parameter and every updated optimizer state. The update
rules are exactly those of ``torch.optim`` (SGD with dampening 0 and no Nesterov; Adam; AdamW with
decoupled weight decay), so one execution equals one ``optimizer.step()``.

Names as :mod:`traincost.frontend.shared.optimizer` gives them: parameter ``p`` is read as ``p`` and written as
``p.updated``; its state ``s`` (``momentum``, ``exp_avg``, ``exp_avg_sq``) is read as ``p.s`` and written as
``p.s.updated``. Adam reads the step count (1 for the first step) from the scalar input ``optimizer.step``.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import onnx
from onnx import TensorProto, helper

from traincost.frontend.onnx.graph import NodeFactory, set_node_meta
from traincost.frontend.shared.optimizer import STEP_INPUT, OptimizerSpec, state_input_name, updated_name

__all__ = ["append_optimizer"]


def append_optimizer(
    graph: onnx.GraphProto,
    params: Iterable[tuple[str, str, str]],
    spec: OptimizerSpec,
) -> None:
    """Append the optimizer update of every parameter to ``graph``, in place.

    Args:
        graph: a training graph whose gradient of parameter ``p`` is the tensor ``p_grad``.
        params: (parameter name, gradient tensor name, owning forward layer) triples.
        spec: the optimizer.
    """
    shared = NodeFactory("optimizer")
    step = bias = None
    if spec.kind in ("adam", "adamw"):
        graph.input.append(helper.make_tensor_value_info(STEP_INPUT, TensorProto.FLOAT, []))
        # Bias corrections shared by every parameter: step_size = lr / (1 - beta1^t),
        # inv_sqrt_bc2 = 1 / sqrt(1 - beta2^t).
        one = shared.const(np.float32(1.0), "one")
        bc1 = shared.op("Sub", [one, shared.op("Pow", [shared.const(np.float32(spec.beta1), "beta1"), STEP_INPUT])])
        bc2 = shared.op("Sub", [one, shared.op("Pow", [shared.const(np.float32(spec.beta2), "beta2"), STEP_INPUT])])
        step = shared.op("Div", [shared.const(np.float32(spec.lr), "lr"), bc1])
        bias = shared.op("Reciprocal", [shared.op("Sqrt", [bc2])])
    for node in shared.nodes:
        set_node_meta(node, phase="optimizer", layer="optimizer", kind="optimizer")
    graph.node.extend(shared.nodes)
    graph.initializer.extend(shared.initializers)

    for param, grad, layer in params:
        make = NodeFactory(f"optimizer/{param}")
        _update(make, param=param, grad=grad, spec=spec, step_size=step, inv_sqrt_bc2=bias, graph=graph)
        for node in make.nodes:
            set_node_meta(node, phase="optimizer", layer=layer, kind="optimizer")
        graph.node.extend(make.nodes)
        graph.initializer.extend(make.initializers)


def _update(
    make: NodeFactory,
    *,
    param: str,
    grad: str,
    spec: OptimizerSpec,
    step_size: str | None,
    inv_sqrt_bc2: str | None,
    graph: onnx.GraphProto,
) -> None:
    """Emit the update of one parameter (see the module docstring for names)."""

    def scalar(value: float, hint: str) -> str:
        return make.const(np.float32(value), hint)

    def state_io(state: str) -> tuple[str, str]:
        name = state_input_name(source, state)
        graph.input.append(_like(graph, source, name))
        graph.output.append(_like(graph, source, updated_name(name)))
        return name, updated_name(name)

    source = param
    graph.output.append(_like(graph, source, updated_name(source)))
    if spec.weight_decay and spec.kind != "adamw":
        grad = make.op("Add", [grad, make.op("Mul", [param, scalar(spec.weight_decay, "weight_decay")])])
    match spec.kind:
        case "sgd":
            make.op("Sub", [param, make.op("Mul", [grad, scalar(spec.lr, "lr")])], outputs=[updated_name(param)])
        case "sgd_momentum":
            buf, buf_out = state_io("momentum")
            make.op("Add", [make.op("Mul", [buf, scalar(spec.momentum, "momentum")]), grad], outputs=[buf_out])
            make.op("Sub", [param, make.op("Mul", [buf_out, scalar(spec.lr, "lr")])], outputs=[updated_name(param)])
        case "adam" | "adamw":
            assert step_size is not None and inv_sqrt_bc2 is not None
            if spec.kind == "adamw" and spec.weight_decay:
                param = make.op("Mul", [param, scalar(1.0 - spec.lr * spec.weight_decay, "decay")])
            m, m_out = state_io("exp_avg")
            v, v_out = state_io("exp_avg_sq")
            make.op(
                "Add",
                [
                    make.op("Mul", [m, scalar(spec.beta1, "beta1")]),
                    make.op("Mul", [grad, scalar(1 - spec.beta1, "one_minus_beta1")]),
                ],
                outputs=[m_out],
            )
            grad_sq = make.op("Mul", [grad, grad])
            make.op(
                "Add",
                [
                    make.op("Mul", [v, scalar(spec.beta2, "beta2")]),
                    make.op("Mul", [grad_sq, scalar(1 - spec.beta2, "one_minus_beta2")]),
                ],
                outputs=[v_out],
            )
            denom = make.op("Add", [make.op("Mul", [make.op("Sqrt", [v_out]), inv_sqrt_bc2]), scalar(spec.eps, "eps")])
            delta = make.op("Mul", [make.op("Div", [m_out, denom]), step_size])
            make.op("Sub", [param, delta], outputs=[updated_name(source)])


def _like(graph: onnx.GraphProto, template: str, name: str) -> onnx.ValueInfoProto:
    """A value_info named ``name`` with the type and shape of graph input ``template``."""
    for value in graph.input:
        if value.name == template:
            copy = onnx.ValueInfoProto()
            copy.CopyFrom(value)
            copy.name = name
            return copy
    raise KeyError(template)
