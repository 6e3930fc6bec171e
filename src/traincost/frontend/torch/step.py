"""One training step of a torch module, traced by torch itself: forward, loss, backward and optimizer as one graph of
core ATen ops (the torch front end; ``frontend.onnx.graph`` and ``frontend.onnx.train_graph`` are the ONNX Runtime Training one).

``make_fx`` runs the step once on proxy tensors and records every ATen op the dispatcher sees, decomposed by torch's
core ATen tables (``core_aten_decompositions``): the forward as the module runs it, the backward as torch's autograd
engine runs it (each op's own derivative formula), then the optimizer. Nothing is rewritten by hand: every op torch
can differentiate is covered, and the backward reads exactly the tensors autograd saved.

Each recorded node carries its phase and its layer in ``node.meta[STEP_META]``:

* forward: the layer is the module that ran it and the torch function it came from, e.g. ``layer1.0.conv1/conv2d``
  (the loss: ``loss/cross_entropy``); a function called twice in one module is numbered (``layer1.0/add_2``);
* backward: the layer of the forward function whose autograd node the engine is running (hooks on the autograd
  nodes each forward function created);
* optimizer: the parameter it updates (``traincost.frontend.torch.lower`` names its layer).

The optimizer updates are torch.optim's single-tensor formulas (SGD with momentum and dampening 0, Adam, AdamW) with the
step count a tensor input; ``check`` checks one traced step against ``torch.optim`` itself.
"""

from __future__ import annotations

import bisect
import contextlib
import itertools
import json
import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F  # noqa: N812 (torch's own alias)
from torch._decomp import core_aten_decompositions
from torch.func import functional_call
from torch.fx.experimental.proxy_tensor import get_proxy_mode, make_fx
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_leaves

from traincost import models
from traincost.errors import ConfigError, GraphError
from traincost.frontend.shared.optimizer import STEP_INPUT, OptimizerSpec, state_input_name, updated_name
from traincost.frontend.shared.torch_model import built_model, label_spec, probe_output
from traincost.models.forward_adapter import OWN_LOSS, output_used
from traincost.signature import LOSSES, MODEL_LOSS, InputSpec, draw_tensors

__all__ = ["LOSS_LAYER", "SHARED_LAYER", "STEP_META", "TracedStep", "Tracer", "signature_meta", "trace_step"]

log = logging.getLogger(__name__)

STEP_META = "traincost"  # node.meta key: (phase, layer)
LOSS_LAYER = "loss"
SHARED_LAYER = "optimizer"  # the optimizer's terms every parameter's update reads (Adam's bias corrections)


@dataclass(frozen=True)
class TracedStep:
    """A traced step and what its inputs and outputs are: a training step, or an inference step (``optimizer`` and
    ``loss_fn`` None, ``traincost.frontend.torch.inference``).

    Attributes:
        graph: the step; it reads ``inputs`` (in order) and returns ``outputs`` (in order). Running it updates the
            module's buffers (BatchNorm statistics) in place, as torch does.
        inputs: the name of each graph input: every parameter, buffer and optimizer state (``<param>.<state>``), the
            step count ``optimizer.step`` (Adam), then the batch's inputs and its labels (an inference step: the
            parameters, the buffers and the batch's inputs).
        outputs: ``loss``, every gradient ``<param>_grad``, every updated parameter and state (``<name>.updated``); an
            inference step's: ``logits``, the module's output.
        feeds: the tensors the step was traced with, by input name (the module's initial weights and buffers, zero
            states, step 1, a batch drawn with the seed); the module's own tensors, not to be written.
        params: the parameters, in the module's order.
        buffers: the buffers, in the module's order.
        fresh_module: builds the module again as it was traced (the same seed), in the mode traced, for the check
            against eager torch: tracing may leave fake tensors cached on the traced module (timm's CoaT), which a copy
            cannot take.
        loss_fn: the loss on the module's output and the labels (where the model computes its own loss, the output
            itself, no labels read); None: an inference step.
        optimizer: the optimizer traced (None: an inference step).
        meta: the Workload metadata (model, batch, seed, options, inputs, labels, loss, optimizer, ...).
    """

    graph: torch.fx.GraphModule
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    feeds: dict[str, torch.Tensor]
    params: tuple[str, ...]
    buffers: tuple[str, ...]
    fresh_module: Callable[[], torch.nn.Module]
    loss_fn: Callable[[torch.Tensor, torch.Tensor | None], torch.Tensor] | None
    optimizer: OptimizerSpec | None
    meta: dict[str, str]

    @property
    def batch_inputs(self) -> tuple[str, ...]:
        """The batch's inputs and labels (the graph inputs after the parameters, buffers and states)."""
        known = {*self.params, *self.buffers, STEP_INPUT, *self.state_inputs}
        return tuple(name for name in self.inputs if name not in known)

    @property
    def labelled(self) -> bool:
        """Whether the batch's last input is the labels (not where the model computes its own loss from its inputs)."""
        return self.loss_fn is not None and self.meta["loss"] != MODEL_LOSS

    @property
    def state_inputs(self) -> tuple[str, ...]:
        states = self.optimizer.states if self.optimizer is not None else ()
        return tuple(state_input_name(p, s) for p in self.params for s in states)


# torch's core ATen decompositions, but for the fused attention kernel torch runs on CPU: its decomposition computes a
# log-sum-exp that the kernel's backward (which has none) does not read as the kernel's own (the gradients come out
# wrong), so the forward stays one op, as the backward is (``lower`` lowers both).
_FLASH_ATTENTION = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default
_DECOMPOSITIONS = {op: rule for op, rule in core_aten_decompositions().items() if op is not _FLASH_ATTENTION}


@contextlib.contextmanager
def composite_rnn() -> Iterator[None]:
    """torch with oneDNN off while a step is traced: its CPU LSTM is then the composite of ``aten::lstm``, a matmul
    per layer and time step and the gates element-wise, as the engine costs them, not oneDNN's fused
    ``mkldnn_rnn_layer`` (one op of no MACs the engine can see, and a workspace the replay cannot feed). No other op
    of the traced graphs changes: tracing runs no kernel, and every other op is lowered to the same ATen ops."""
    enabled = torch.backends.mkldnn.enabled
    torch.backends.mkldnn.enabled = False
    try:
        yield
    finally:
        torch.backends.mkldnn.enabled = enabled


def trace_step(
    model: models.Model, *, batch: int, seed: int, optimizer: OptimizerSpec, options: dict[str, object] | None = None
) -> TracedStep:
    """Trace one training step of ``model`` (a zoo name or an architecture) at ``batch``.

    Raises:
        ConfigError: the module's forward fails on its inputs or the loss does not fit its output.
        GraphError: torch cannot trace the step (the first line of its error, naming the op).
    """
    options = dict(options or {})
    arch, specs, module, inputs = built_model(model, batch=batch, seed=seed, options=options)
    name = arch.name
    module.train()
    buffers_as_built = {n: b.detach().clone() for n, b in module.named_buffers()}
    output = probe_output(module, inputs, name)  # moves BatchNorm statistics: restored below
    with torch.no_grad():
        for n, b in module.named_buffers():
            b.copy_(buffers_as_built[n])
    used = output_used(module)
    if used == OWN_LOSS:
        labels, loss, loss_fn = None, MODEL_LOSS, _own_loss(output, name)
    else:
        labels, loss = label_spec(arch.loss, tuple(output.shape), where=f"model {name!r}", given=arch.labels), arch.loss
        inputs[labels.name] = torch.from_numpy(draw_tensors([*specs, labels], seed=seed)[labels.name])
        loss_fn = _loss_function(arch.loss)
    params = tuple(n for n, _ in module.named_parameters())
    buffers = tuple(n for n, _ in module.named_buffers())
    # the module's own tensors (tracing fakes them and the check copies what it changes), and zero states that take
    # no memory (one zero broadcast to each shape: the check draws states of its own)
    feeds: dict[str, torch.Tensor] = {n: p.detach() for n, p in module.named_parameters()}
    feeds |= {n: b.detach() for n, b in module.named_buffers()}
    zero = torch.zeros((), dtype=torch.float32)
    for p in params:
        feeds |= {state_input_name(p, s): zero.expand(feeds[p].shape) for s in optimizer.states}
    if optimizer.kind in ("adam", "adamw"):
        feeds[STEP_INPUT] = torch.ones((), dtype=torch.float32)
    feeds |= inputs
    names = tuple(feeds)
    outputs = ("loss", *(f"{p}_grad" for p in params), *(updated_name(p) for p in params))
    outputs += tuple(updated_name(state_input_name(p, s)) for p in params for s in optimizer.states)
    step = _Step(module, params=params, buffers=buffers, labelled=labels is not None, loss_fn=loss_fn, optimizer=optimizer)
    graph = step.trace([feeds[n] for n in names], name)
    meta = {
        **signature_meta(arch, batch=batch, seed=seed, options=options, params=params, specs=specs, labels=labels),
        "loss": loss,
        "output": used,
        "optimizer": optimizer.kind,
        "optimizer_hyperparameters": json.dumps(optimizer.hyperparameters(), sort_keys=True),
        "stage": "train_step",
        "frontend": "torch",
    }
    log.info("traced %s: %d nodes, %d parameters", name, len(graph.graph.nodes), len(params))

    def fresh_module() -> torch.nn.Module:
        return built_model(model, batch=batch, seed=seed, options=options)[2].train()

    return TracedStep(graph, names, outputs, feeds, params, buffers, fresh_module, loss_fn, optimizer, meta)


def signature_meta(
    arch: models.Architecture,
    *,
    batch: int,
    seed: int,
    options: dict[str, object],
    params: Sequence[str],
    specs: Sequence[InputSpec],
    labels: InputSpec | None,
) -> dict[str, str]:
    """The Workload metadata of a traced step that says what was traced: the model, batch, seed, options, parameters,
    inputs, labels (null: the model computes its own loss) and loss (``TracedStep.meta`` adds the stage and, for a
    training step, the optimizer and the output entry the loss read)."""
    return {
        "model": arch.name,
        "batch": str(batch),
        "seed": str(seed),
        "options": json.dumps(options, sort_keys=True),
        "parameters": json.dumps(list(params)),
        "inputs": json.dumps([spec.to_json() for spec in specs]),
        "labels": json.dumps(labels.to_json() if labels is not None else None),
        "loss": arch.loss,
        "input_shape": json.dumps(list(specs[0].shape)),
    }


def _own_loss(output: torch.Tensor, name: str) -> Callable[[torch.Tensor, None], torch.Tensor]:
    """The loss of a model that computes its own (its output's ``loss`` entry): the output itself, a scalar."""
    if output.dim() != 0:
        raise ConfigError(f"model {name!r}: its output {OWN_LOSS!r} has shape {list(output.shape)}; a loss is a scalar")
    return lambda output, _labels: output


def _cross_entropy(output: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """torch's cross-entropy over the output's dimension 1, the flattened labels shaped as the output without it."""
    return F.cross_entropy(output, labels if output.dim() == 2 else labels.reshape(output.shape[:1] + output.shape[2:]))


def _loss_function(loss: str) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    """The loss ``loss`` names: cross-entropy over the output's dimension 1 (``label_spec``'s flattened labels
    shaped as the output without it), token cross-entropy (the output's rows over its last axis), mean squared error,
    or a user's function (``package.module:function``)."""
    if loss == "cross_entropy":
        return _cross_entropy
    if loss == "token_cross_entropy":
        return lambda output, labels: F.cross_entropy(output.reshape(-1, output.shape[-1]), labels)
    if loss == "mse":
        return F.mse_loss
    if loss in LOSSES:
        raise AssertionError(loss)
    return models.load_factory(loss, what="loss")


class Tracer:
    """A function ``make_fx`` traces on flat tensors (``__call__``), recording phases and layers as it runs.

    Attributes:
        module: the module whose forward the function runs.
        what: what is traced, for errors ("the training step").
    """

    what = "the step"

    def __init__(self, module: torch.nn.Module) -> None:
        self.module = module
        self.marks: list[tuple[int, str, str]] = []  # (first node index, phase, layer), in order
        self.modules: list[str] = []  # the qualified names of the modules running, innermost last

    def __call__(self, *flat: torch.Tensor) -> tuple[torch.Tensor, ...]:
        raise NotImplementedError

    def trace(self, flat: Sequence[torch.Tensor], name: str) -> torch.fx.GraphModule:
        """The graph of ``self`` on tensors shaped like ``flat``, each node's (phase, layer) in ``node.meta[STEP_META]``.

        Raises:
            GraphError: torch cannot trace it (the first line of its error, naming the op).
        """
        handles = _track_modules(self.module, self.modules)
        try:
            with composite_rnn():
                graph = make_fx(self, decomposition_table=_DECOMPOSITIONS, tracing_mode="fake")(*flat)
        except (ConfigError, GraphError):
            raise
        except Exception as err:  # torch raises many classes; the first line names the op
            detail = str(err).strip().splitlines()[0][:300] if str(err).strip() else ""
            raise GraphError(f"torch front end, {name}: tracing {self.what} failed ({type(err).__name__}: {detail})") from err
        finally:
            for handle in handles:
                handle.remove()
        starts = [mark[0] for mark in self.marks]
        for index, node in enumerate(graph.graph.nodes):
            if node.op in ("call_function", "output"):
                at = bisect.bisect_right(starts, index) - 1
                node.meta[STEP_META] = self.marks[at][1:] if at >= 0 else ("forward", "")
        return graph

    def _mark(self, phase: str, layer: str) -> None:
        self.marks.append((_node_count(), phase, layer))

    def _layers(self) -> _Layers:
        """The mode that names each forward torch function call by its module while ``__call__`` runs it."""
        return _Layers(self.marks, self.modules)


class _Step(Tracer):
    """One training step on flat tensors: forward, loss, backward, optimizer."""

    what = "the training step"

    def __init__(
        self,
        module: torch.nn.Module,
        *,
        params: tuple[str, ...],
        buffers: tuple[str, ...],
        labelled: bool,
        loss_fn: Callable[[torch.Tensor, torch.Tensor | None], torch.Tensor],
        optimizer: OptimizerSpec,
    ) -> None:
        super().__init__(module)
        self.params, self.buffers, self.labelled = params, buffers, labelled
        self.loss_fn, self.optimizer = loss_fn, optimizer

    def __call__(self, *flat: torch.Tensor) -> tuple[torch.Tensor, ...]:
        it = iter(flat)
        params = {n: next(it).requires_grad_() for n in self.params}
        buffers = {n: next(it) for n in self.buffers}
        states = {(p, s): next(it) for p in self.params for s in self.optimizer.states}
        count = next(it) if self.optimizer.kind in ("adam", "adamw") else None
        inputs = list(it)
        labels = inputs.pop() if self.labelled else None
        layers = self._layers()
        with layers:
            output = functional_call(self.module, {**params, **buffers}, tuple(inputs))
            with layers.within(LOSS_LAYER):
                loss = self.loss_fn(output, labels)
        self._mark("backward", LOSS_LAYER)
        grads = torch.autograd.grad(loss, list(params.values()), allow_unused=True)
        missing = [n for n, g in zip(params, grads, strict=True) if g is None]
        if missing:
            raise GraphError(
                f"torch front end: the loss does not depend on parameters {missing[:5]}; expected every parameter to train"
            )
        self._mark("optimizer", SHARED_LAYER)
        corrections = _bias_corrections(self.optimizer, count) if count is not None else None
        updated, new_states = [], []
        for (name, param), grad in zip(params.items(), grads, strict=True):
            self._mark("optimizer", name)
            kept = [states[name, s] for s in self.optimizer.states]
            value, kept = _update(self.optimizer, param.detach(), grad, kept, corrections)
            updated.append(value)
            new_states.extend(kept)
        return (loss, *grads, *updated, *new_states)


def _node_count() -> int:
    mode = get_proxy_mode()
    if mode is None:
        raise AssertionError("the step runs only under make_fx")
    return len(mode.tracer.graph.nodes)


def _bias_corrections(spec: OptimizerSpec, count: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Adam's bias corrections at step ``count``, ``1 - beta1^t`` and ``sqrt(1 - beta2^t)``: computed once for every
    parameter (torch.optim computes them per parameter, on Python numbers)."""
    return 1 - torch.pow(spec.beta1, count), torch.sqrt(1 - torch.pow(spec.beta2, count))


def _update(
    spec: OptimizerSpec,
    param: torch.Tensor,
    grad: torch.Tensor,
    states: list[torch.Tensor],
    corrections: tuple[torch.Tensor, torch.Tensor] | None,
) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """torch.optim's single-tensor update of one parameter (its first step reads zero states and a step count of 1)."""
    lr, decay = spec.lr, spec.weight_decay
    if spec.kind == "adamw" and decay:
        param = param * (1 - lr * decay)
    elif decay:
        grad = grad + decay * param
    match spec.kind:
        case "sgd":
            return param - lr * grad, []
        case "sgd_momentum":
            momentum = spec.momentum * states[0] + grad
            return param - lr * momentum, [momentum]
        case "adam" | "adamw":
            if corrections is None:
                raise AssertionError("Adam without a step count")
            bias_correction1, bias_correction2_sqrt = corrections
            exp_avg = states[0] + (grad - states[0]) * (1 - spec.beta1)  # torch: exp_avg.lerp_(grad, 1 - beta1)
            exp_avg_sq = states[1] * spec.beta2 + grad * grad * (1 - spec.beta2)
            denominator = torch.sqrt(exp_avg_sq) / bias_correction2_sqrt + spec.eps
            return param - (lr / bias_correction1) * (exp_avg / denominator), [exp_avg, exp_avg_sq]
    raise AssertionError(spec.kind)


class _Layers(TorchFunctionMode):
    """Names each forward torch function call by the module running it, marks where its ops start in the traced graph,
    and hooks the autograd nodes it created so that their backward ops are marked with the same layer."""

    def __init__(self, marks: list[tuple[int, str, str]], modules: list[str]) -> None:
        super().__init__()
        self.marks, self.modules = marks, modules
        self.seen: dict[str, Iterator[int]] = {}
        self.hooked: set[torch.autograd.graph.Node] = set()
        self.scope: list[str] = []

    def within(self, scope: str) -> _Scope:
        return _Scope(self.scope, scope)

    def __torch_function__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204 (torch's signature)
        start = _node_count()
        out = func(*args, **(kwargs or {}))
        if _node_count() == start:  # a shape read, a view of metadata: nothing recorded
            return out
        module = self.scope[-1] if self.scope else (self.modules[-1] if self.modules else "")
        base = f"{module}/{getattr(func, '__name__', 'op')}" if module else getattr(func, "__name__", "op")
        counter = self.seen.setdefault(base, itertools.count(1))
        index = next(counter)
        layer = base if index == 1 else f"{base}_{index}"
        self.marks.append((start, "forward", layer))
        self._hook(out, layer)
        return out

    def _hook(self, out: object, layer: str) -> None:
        """Mark, when the engine runs them, the backward of the autograd nodes this call created (those reachable
        from its outputs not yet hooked by an earlier call)."""
        todo = [t.grad_fn for t in tree_leaves(out) if isinstance(t, torch.Tensor) and t.grad_fn is not None]
        while todo:
            node = todo.pop()
            if node is None or node in self.hooked:
                continue
            self.hooked.add(node)
            node.register_prehook(self._backward_mark(layer))
            todo.extend(next_node for next_node, _ in node.next_functions)

    def _backward_mark(self, layer: str) -> Callable[[object], None]:
        def mark(_grads: object) -> None:
            self.marks.append((_node_count(), "backward", layer))

        return mark


class _Scope:
    def __init__(self, stack: list[str], scope: str) -> None:
        self.stack, self.scope = stack, scope

    def __enter__(self) -> None:
        self.stack.append(self.scope)

    def __exit__(self, *_: object) -> None:
        self.stack.pop()


def _track_modules(module: torch.nn.Module, running: list[str]) -> list[torch.utils.hooks.RemovableHandle]:
    """Hooks that keep the qualified name of each module on ``running`` while its forward runs."""

    def enter(name: str) -> Callable[..., None]:
        def hook(*_: object) -> None:
            running.append(name)

        return hook

    def leave(*_: object) -> None:
        running.pop()

    handles = []
    for name, sub in module.named_modules():
        handles.append(sub.register_forward_pre_hook(enter(name)))
        handles.append(sub.register_forward_hook(leave))
    return handles
