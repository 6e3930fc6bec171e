"""A traced training step checked by execution against eager torch and ``torch.optim``.

The traced graph runs on the batch it was traced with; eager torch runs the module's forward, the loss, ``backward()``
and one ``step()`` of the ``torch.optim`` optimizer from the same weights and optimizer states (random, see
``_check_feeds``). The loss, every gradient, every updated
parameter, optimizer state and buffer must agree within what rounding explains (``rounding``: ten times how far
one-ulp nudges of the inputs move eager torch's value, at least ``rounding.TOLERANCE``). Both run with every random
draw at its keep value (``torch_randomness.no_randomness``), so a dropout compares like with like. Eager torch runs
on one module built once (``TracedStep.fresh_module``), its weights and buffers loaded from the feeds before each run.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import torch

from traincost.errors import GraphError
from traincost.frontend.optimizer import STEP_INPUT, state_input_name, updated_name
from traincost.frontend.rounding import NOISE, allowed_error, differs, max_relative_error, sensitivities
from traincost.frontend.step_check import DecompositionCheck, TensorCheck
from traincost.frontend.torch_model import torch_optimizer
from traincost.frontend.torch_randomness import no_randomness
from traincost.frontend.torch_step import TracedStep

__all__ = ["verify_step"]

# torch.optim's state names for ours (``OptimizerSpec.states``)
_TORCH_STATE = {"momentum": "momentum_buffer", "exp_avg": "exp_avg", "exp_avg_sq": "exp_avg_sq"}


def verify_step(step: TracedStep, *, seed: int = 0) -> DecompositionCheck:
    """Run the traced step and eager torch on the step's batch; compare every tensor the step writes.

    Raises:
        GraphError: a tensor differs by more than rounding explains, naming it, its error and its limit.
    """
    feeds = _check_feeds(step, seed=seed)
    module = step.fresh_module()
    reference = _eager(step, module, feeds)
    traced = _traced(step, feeds)
    errors = {name: max_relative_error(expected, traced[name]) for name, expected in reference.items()}
    del traced  # a copy of every gradient, parameter and state: freed before the nudged runs
    nudged = _nudged(step)
    floats = {name: value for name, value in feeds.items() if value.dtype.kind == "f" and name in nudged}
    fixed = {name: value for name, value in feeds.items() if name not in floats}

    def eager_on(nudged: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return _eager(step, module, {**fixed, **nudged})

    moved = sensitivities(eager_on, floats, reference, seed=seed)
    if moved["loss"] > NOISE:
        raise GraphError(
            f"torch front end, {step.meta['model']}: float32 rounding moves the loss by {moved['loss']:.2e}; nothing to "
            "compare (give a larger input or batch)"
        )
    checks = []
    for name, expected in reference.items():
        error, limit = errors[name], allowed_error(moved[name])
        # float32 noise (a sum that cancels to 0) is reported, not compared; so is a sum eager torch cancels to exactly
        # 0 (a bias gradient before a BatchNorm), which has no scale to tell rounding by
        held = moved[name] <= NOISE and bool(np.any(expected))
        if held and not error <= limit:
            told = differs(
                f"tensor {name!r} of the traced step differs from eager torch's", error, moved[name], retry="another --seed"
            )
            raise GraphError(f"torch front end, {step.meta['model']}: {told}")
        checks.append(TensorCheck(name, error, moved[name], limit, held))
    return DecompositionCheck(per_rule={}, tensors=tuple(checks), branch_flips=0, pinned=0, against_torch=True)


def _nudged(step: TracedStep) -> set[str]:
    """The inputs rounding acts on: the parameters and the batch's float inputs (not the zero states, not the
    step count, not BatchNorm's statistics, which a training-mode forward does not read)."""
    return {*step.params, *step.batch_inputs}


def _check_feeds(step: TracedStep, *, seed: int) -> dict[str, np.ndarray]:
    """The step's feeds with every optimizer state uniform in [0, 1) (drawn with ``seed``), as the ONNX front end's check
    draws them: from zero states Adam's first update is the sign of the gradient, which rounding flips wherever a
    gradient is near 0, so it would compare rounding; with states, every term of the update is exercised."""
    rng = np.random.default_rng(seed)
    states = set(step.state_inputs)
    feeds = {name: value.numpy() for name, value in step.feeds.items() if name not in states}  # read, never written
    for name in step.state_inputs:
        feeds[name] = rng.random(tuple(step.feeds[name].shape), dtype=np.float32)
    return feeds


def _traced(step: TracedStep, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    # the graph writes only the buffers (a BatchNorm's statistics, in place): those it gets as copies
    tensors = {name: torch.from_numpy(np.array(value, copy=name in step.buffers)) for name, value in feeds.items()}
    with torch.no_grad(), no_randomness():
        results = step.graph(*(tensors[name] for name in step.inputs))
    values = dict(zip(step.outputs, (r.detach().numpy() for r in results), strict=True))
    values |= {updated_name(b): tensors[b].numpy() for b in step.buffers}  # the step updates the buffers in place
    return values


def _eager(step: TracedStep, module: torch.nn.Module, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """One eager step of ``module`` from ``feeds``: the loss, the gradients, torch.optim's update and the buffers.

    Every parameter and buffer is loaded from ``feeds`` first, so one module serves every run; what is returned is
    the run's own (copies of the updated parameters and buffers, the gradients and states the module lets go of).
    """
    with torch.no_grad():
        for name, value in [*module.named_parameters(), *module.named_buffers()]:
            value.copy_(torch.from_numpy(np.asarray(feeds[name])))
    inputs = [torch.from_numpy(np.asarray(feeds[name])) for name in step.batch_inputs]
    labels = inputs.pop() if step.labelled else None
    optimizer = torch_optimizer(step.optimizer, list(module.parameters()))
    for name, p in module.named_parameters():
        state = {
            _TORCH_STATE[s]: torch.from_numpy(np.array(feeds[state_input_name(name, s)], copy=True))
            for s in step.optimizer.states
        }
        if STEP_INPUT in feeds:  # torch.optim counts the step it takes: it reads the steps taken before
            state["step"] = torch.tensor(float(feeds[STEP_INPUT]) - 1, dtype=torch.float32)
        if state:
            optimizer.state[p] = state
    with no_randomness():
        loss = step.loss_fn(module(*inputs), labels)
        loss.backward()
    named = dict(module.named_parameters())
    values = {"loss": loss.detach().numpy()}
    values |= {f"{name}_grad": p.grad.detach().numpy() for name, p in named.items()}  # torch.optim reads, never writes, them
    optimizer.step()
    values |= {updated_name(name): p.detach().numpy().copy() for name, p in named.items()}
    for name, p in named.items():
        state = optimizer.state[p]
        for ours in step.optimizer.states:
            values[updated_name(state_input_name(name, ours))] = state[_TORCH_STATE[ours]].numpy()
    values |= {updated_name(name): b.numpy().copy() for name, b in module.named_buffers()}
    module.zero_grad(set_to_none=True)  # the gradients are the run's (``values`` holds them), not the module's
    return values
