"""A traced training step checked by execution against eager torch and ``torch.optim``, in float64.

The traced graph runs on the batch it was traced with; eager torch runs the module's forward, the loss, ``backward()``
and one ``step()`` of the ``torch.optim`` optimizer from the same weights and optimizer states (random, see
``_check_feeds``). Both run in double precision: the traced graph with every float32 of it made float64
(``in_double``: the very graph costed, its dtype alone changed), the module, its batch and the optimizer's states
in double. Float32 rounding would leave a gradient that sums many terms (a weight gradient of MobileNetV2 at 224 x
224) moved by more than it can be compared to; in double, rounding moves only what is 0 in exact arithmetic (a sum
that cancels). The loss, every gradient, every updated parameter, optimizer state and buffer must agree within what
rounding explains (``rounding``: ten times how far one-ulp nudges of the inputs move eager torch's value, at least
``rounding.TOLERANCE``). Both run with every random draw at its keep value (``torch_randomness.no_randomness``), so a
dropout compares like with like. Eager torch runs on one module built once (``TracedStep.fresh_module``), its weights
and buffers loaded from the feeds before each run.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping

import numpy as np
import torch
from torch.utils._pytree import tree_map

from traincost.errors import GraphError
from traincost.frontend.shared.optimizer import STEP_INPUT, state_input_name, updated_name
from traincost.frontend.shared.rounding import NOISE, allowed_error, differs, max_relative_error, sensitivities
from traincost.frontend.shared.step_check import NOISE_REASON, ZERO_REASON, DecompositionCheck, TensorCheck
from traincost.frontend.shared.torch_model import torch_optimizer
from traincost.frontend.shared.torch_randomness import no_randomness
from traincost.frontend.torch.step import TracedStep

__all__ = ["DOUBLE_BUDGET_BYTES", "in_double", "verify_step"]

log = logging.getLogger(__name__)

# The memory the check may take in float64; above it, the check runs in float32 (which takes about half). The
# float64 check peaks at about 120 bytes per parameter (15 float64 copies: the module's weights, gradients and states,
# the references, the traced step's outputs and a nudged run's): VGG-16 16.9 GB, GPT-2 124M 15.6 GB, where in
# float32 they take 8.4 GB (GPT-2 124M then compares every weight gradient, VGG-16 10 of its 32).
DOUBLE_BUDGET_BYTES = 8e9
_DOUBLE_PEAK_PER_PARAMETER = 120

# torch.optim's state names for ours (``OptimizerSpec.states``)
_TORCH_STATE = {"momentum": "momentum_buffer", "exp_avg": "exp_avg", "exp_avg_sq": "exp_avg_sq"}


def verify_step(step: TracedStep, *, seed: int = 0) -> DecompositionCheck:
    """Run the traced step and eager torch on the step's batch, in float64; compare every tensor the step writes.

    A module that makes float32 tensors of its own (RAFT's coordinate grids) cannot run in float64, and a large one
    would not fit in memory there (``DOUBLE_BUDGET_BYTES``): either is checked in float32, as traced, and the check says
    so (``DecompositionCheck.precision``).

    Raises:
        GraphError: a tensor differs by more than rounding explains, naming it, its error and its limit.
    """
    double_bytes = _DOUBLE_PEAK_PER_PARAMETER * sum(step.feeds[name].numel() for name in step.params)
    if double_bytes > DOUBLE_BUDGET_BYTES:
        log.warning(
            "torch front end, %s: checked in float32: in float64 the check would take about %.0f GB, above %.0f GB",
            step.meta["model"], double_bytes / 1e9, DOUBLE_BUDGET_BYTES / 1e9,
        )  # fmt: skip
        return _verify(step, seed=seed, precision="float32")
    try:
        return _verify(step, seed=seed, precision="float64")
    except _NotInDoubleError as err:
        log.warning("torch front end, %s: checked in float32: in float64 %s", step.meta["model"], err)
        return _verify(step, seed=seed, precision="float32")


class _NotInDoubleError(Exception):
    """The module or the graph fails in float64 (a dtype it fixes meets a float64 tensor)."""


def _verify(step: TracedStep, *, seed: int, precision: str) -> DecompositionCheck:
    """``verify_step`` in ``precision``."""
    double = precision == "float64"
    feeds = _check_feeds(step, seed=seed, double=double)
    module = step.fresh_module().double() if double else step.fresh_module()
    graph = in_double(step.graph) if double else step.graph
    try:
        reference = _eager(step, module, feeds)
        traced = _traced(step, graph, feeds)
    except RuntimeError as err:
        if not double:
            raise
        raise _NotInDoubleError(" ".join(str(err).split())[:200]) from err
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
        # rounding noise (a sum that cancels to 0) is reported, not compared; so is a sum eager torch cancels to exactly
        # 0 (a bias gradient before a BatchNorm), which has no scale to tell rounding by
        held = moved[name] <= NOISE and bool(np.any(expected))
        if held and not error <= limit:
            told = differs(
                f"tensor {name!r} of the traced step differs from eager torch's", error, moved[name], retry="another --seed"
            )
            raise GraphError(f"torch front end, {step.meta['model']}: {told}")
        reason = "" if held else NOISE_REASON if moved[name] > NOISE else ZERO_REASON
        checks.append(TensorCheck(name, error, moved[name], limit, held, reason))
    return DecompositionCheck(
        per_rule={}, tensors=tuple(checks), branch_flips=0, pinned=0, against_torch=True, precision=precision
    )


def in_double(graph: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """A copy of ``graph`` computing in float64 what it computes in float32: every float32 dtype among its nodes'
    arguments made float64, every float32 constant it holds cast. Fed float64 tensors, it runs the same ops."""
    double = torch.fx.GraphModule(graph, copy.deepcopy(graph.graph))
    for node in double.graph.nodes:
        node.args = tree_map(_double_dtype, node.args)
        node.kwargs = tree_map(_double_dtype, node.kwargs)
        if node.op == "get_attr":
            value = getattr(double, node.target)
            if isinstance(value, torch.Tensor) and value.dtype == torch.float32:
                setattr(double, node.target, value.double())
    double.recompile()
    return double


def _double_dtype(arg: object) -> object:
    return torch.float64 if arg is torch.float32 else arg


def _nudged(step: TracedStep) -> set[str]:
    """The inputs rounding acts on: the parameters and the batch's float inputs (not the zero states, not the
    step count, not BatchNorm's statistics, which a training-mode forward does not read)."""
    return {*step.params, *step.batch_inputs}


def _check_feeds(step: TracedStep, *, seed: int, double: bool) -> dict[str, np.ndarray]:
    """The step's feeds (in float64 if ``double``), every optimizer state uniform in [0, 1) (drawn with ``seed``), as
    the ONNX front end's check draws them: from zero states Adam's first update is the sign of the gradient, which rounding flips
    wherever a gradient is near 0, so it would compare rounding; with states, every term of the update is exercised.
    The step count stays float32, as torch.optim keeps it."""
    rng = np.random.default_rng(seed)
    states = set(step.state_inputs)
    own = {name: value.numpy() for name, value in step.feeds.items() if name not in states}  # read, never written
    feeds = {name: _double(name, value) for name, value in own.items()} if double else own
    for name in step.state_inputs:
        feeds[name] = rng.random(tuple(step.feeds[name].shape), dtype=np.float64 if double else np.float32)
    return feeds


def _double(name: str, value: np.ndarray) -> np.ndarray:
    return value.astype(np.float64) if value.dtype == np.float32 and name != STEP_INPUT else value


def _traced(step: TracedStep, graph: torch.fx.GraphModule, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """``graph`` (the step's, or it ``in_double``) run on ``feeds``: its outputs and the buffers it updates."""
    # the graph writes only the buffers (a BatchNorm's statistics, in place): those it gets as copies
    tensors = {name: torch.from_numpy(np.array(value, copy=name in step.buffers)) for name, value in feeds.items()}
    with torch.no_grad(), no_randomness():
        results = graph(*(tensors[name] for name in step.inputs))
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
