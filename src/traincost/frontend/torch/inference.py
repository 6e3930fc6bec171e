"""The inference step of a model through the torch front end: its eval-mode forward, traced by torch.

The step the ONNX front end exports in ``inference_graph``, traced by torch instead, so that it needs no ONNX Runtime
and runs on every Python the project supports: the model in eval mode; each BatchNorm that reads the output of a
convolution nothing else reads folded into that convolution (``torch.nn.utils.fusion.fuse_conv_bn_eval``, what torch's
exporter does with constant folding and deployment tools do); every other BatchNorm in inference form (its running
statistics as a per-channel scale and shift); no dropout, no loss. The step's one output is ``LOGITS``, the module's.

``verify_inference`` runs the traced graph against eager torch's eval-mode forward of the module as built, before
folding, so the folding is checked with the trace.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass

import numpy as np
import torch
from torch.func import functional_call
from torch.nn.modules.batchnorm import _BatchNorm
from torch.nn.modules.conv import _ConvNd
from torch.nn.utils.fusion import fuse_conv_bn_eval
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_leaves

from traincost import models
from traincost.errors import GraphError
from traincost.frontend.shared.rounding import NOISE, allowed_error, differs, max_relative_error, sensitivities
from traincost.frontend.shared.step_check import NOISE_REASON, DecompositionCheck, TensorCheck
from traincost.frontend.shared.torch_model import INFERENCE_STAGE, LOGITS, built_model, eval_output, label_spec
from traincost.frontend.shared.torch_randomness import no_randomness
from traincost.frontend.torch.step import TracedStep, Tracer, signature_meta

__all__ = ["fold_batchnorm", "trace_inference", "verify_inference"]

log = logging.getLogger(__name__)


def trace_inference(model: models.Model, *, batch: int, seed: int, options: dict[str, object] | None = None) -> TracedStep:
    """Trace the inference step of ``model`` (a zoo name or an architecture) at ``batch``.

    Raises:
        ConfigError: the module's forward fails on its inputs or returns a scalar.
        GraphError: torch cannot trace the forward (the first line of its error, naming the op).
    """
    options = dict(options or {})
    arch, specs, module, inputs = built_model(model, batch=batch, seed=seed, options=options)
    name = arch.name
    output = eval_output(module, inputs, name)
    folded = fold_batchnorm(module, inputs)
    params = tuple(n for n, _ in module.named_parameters())
    buffers = tuple(n for n, _ in module.named_buffers())
    feeds: dict[str, torch.Tensor] = {n: p.detach() for n, p in module.named_parameters()}
    feeds |= {n: b.detach() for n, b in module.named_buffers()}
    feeds |= inputs
    names = tuple(feeds)
    graph = _Forward(module, params=params, buffers=buffers).trace([feeds[n] for n in names], name)
    labels = label_spec(arch.loss, tuple(output.shape), where=f"model {name!r}", given=arch.labels)
    meta = {
        **signature_meta(arch, batch=batch, seed=seed, options=options, params=params, specs=specs, labels=labels),
        "stage": INFERENCE_STAGE,
        "frontend": "torch",
        "batchnorm_folded": str(folded),
    }
    log.info("traced the inference step of %s: %d nodes, %d BatchNorms folded", name, len(graph.graph.nodes), folded)

    def fresh_module() -> torch.nn.Module:
        return built_model(model, batch=batch, seed=seed, options=options)[2].eval()

    return TracedStep(graph, names, (LOGITS,), feeds, params, buffers, fresh_module, None, None, meta)


def fold_batchnorm(module: torch.nn.Module, inputs: dict[str, torch.Tensor]) -> int:
    """Fold, in place, each BatchNorm of eval-mode ``module`` whose input is the output of a convolution that nothing
    else reads; return how many were folded.

    One eager forward on ``inputs`` tells the pairs: the BatchNorm's input must be the very tensor the convolution
    returned, read by one torch call only (the BatchNorm's), each module called once and registered under one name.
    The convolution is replaced by ``fuse_conv_bn_eval``'s and the BatchNorm by ``nn.Identity``.
    """
    uses = _Uses()
    made: dict[str, list[int]] = {}  # per convolution: the ids of what each call returned
    read: dict[str, list[int]] = {}  # per BatchNorm: the ids of what each call read
    names = Counter(id(m) for _, m in module.named_modules(remove_duplicate=False))
    handles = []
    for name, sub in module.named_modules():
        if isinstance(sub, _ConvNd) and names[id(sub)] == 1:
            handles.append(sub.register_forward_hook(_recorder(made, name, uses, output=True)))
        elif isinstance(sub, _BatchNorm) and sub.track_running_stats and names[id(sub)] == 1:
            handles.append(sub.register_forward_hook(_recorder(read, name, uses, output=False)))
    try:
        with torch.no_grad(), no_randomness(), uses:
            module(*inputs.values())
    finally:
        for handle in handles:
            handle.remove()
    conv_of = {calls[0]: conv for conv, calls in made.items() if len(calls) == 1}
    folded = 0
    for bn, calls in read.items():
        conv = conv_of.get(calls[0]) if len(calls) == 1 else None
        if conv is None or uses.count[calls[0]] != 1:
            continue
        _replace(module, conv, fuse_conv_bn_eval(module.get_submodule(conv), module.get_submodule(bn)))
        _replace(module, bn, torch.nn.Identity())
        folded += 1
    return folded


class _Uses(TorchFunctionMode):
    """Counts, per tensor id, the torch calls that read it and return a tensor (a shape query is not a read); keeps
    every tensor it sees so that no id is reused while it counts."""

    def __init__(self) -> None:
        super().__init__()
        self.count: Counter[int] = Counter()
        self.kept: list[torch.Tensor] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204 (torch's signature)
        out = func(*args, **(kwargs or {}))
        if any(isinstance(t, torch.Tensor) for t in tree_leaves(out)):
            for t in dict.fromkeys(id(t) for t in tree_leaves((args, kwargs or {})) if isinstance(t, torch.Tensor)):
                self.count[t] += 1
            self.kept.extend(t for t in tree_leaves((args, out)) if isinstance(t, torch.Tensor))
        return out


def _recorder(calls: dict[str, list[int]], name: str, uses: _Uses, *, output: bool):  # noqa: ANN202 (a forward hook)
    def hook(_module: torch.nn.Module, args: tuple[object, ...], out: object) -> None:
        seen = out if output else (args[0] if args else None)
        if isinstance(seen, torch.Tensor):
            uses.kept.append(seen)
            calls.setdefault(name, []).append(id(seen))
        else:
            calls.setdefault(name, []).extend((-1, -1))  # not a plain tensor: never folded

    return hook


def _replace(module: torch.nn.Module, name: str, new: torch.nn.Module) -> None:
    parent, _, child = name.rpartition(".")
    setattr(module.get_submodule(parent) if parent else module, child, new)


class _Forward(Tracer):
    """The eval-mode forward on flat tensors: the parameters, the buffers, then the batch's inputs."""

    what = "the inference step"

    def __init__(self, module: torch.nn.Module, *, params: tuple[str, ...], buffers: tuple[str, ...]) -> None:
        super().__init__(module)
        self.params, self.buffers = params, buffers

    def __call__(self, *flat: torch.Tensor) -> tuple[torch.Tensor, ...]:
        state = dict(zip((*self.params, *self.buffers), flat, strict=False))
        inputs = flat[len(state) :]
        with self._layers():
            output = functional_call(self.module, state, tuple(inputs))
        return (output,)


@dataclass(frozen=True, slots=True)
class _Reference:
    """The module as built (before folding) and the batch, as numpy feeds by name."""

    module: torch.nn.Module
    batch: tuple[str, ...]

    def run(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        with torch.no_grad(), no_randomness():
            for name, value in [*self.module.named_parameters(), *self.module.named_buffers()]:
                if name in feeds:
                    value.copy_(torch.from_numpy(np.asarray(feeds[name])))
            output = self.module(*(torch.from_numpy(np.asarray(feeds[n])) for n in self.batch))
        return {LOGITS: output.numpy().copy()}


def verify_inference(step: TracedStep, *, seed: int = 0) -> DecompositionCheck:
    """Run the traced inference step and eager torch's eval-mode forward of the unfolded module on the step's batch;
    their outputs must agree within what rounding explains (``rounding``: ten times how far one-ulp nudges of the
    module's parameters and inputs move eager torch's output, at least ``rounding.TOLERANCE``).

    Raises:
        GraphError: the outputs differ by more than rounding explains.
    """
    batch = tuple(name for name in step.inputs if name not in {*step.params, *step.buffers})
    module = step.fresh_module()
    reference = _Reference(module, batch)
    floats = {n: p.detach().numpy().copy() for n, p in module.named_parameters()}
    floats |= {n: step.feeds[n].numpy() for n in batch if step.feeds[n].is_floating_point()}
    fixed = {n: step.feeds[n].numpy() for n in batch if n not in floats}
    expected = reference.run({**floats, **fixed})
    with torch.no_grad(), no_randomness():
        (traced,) = step.graph(*(step.feeds[name] for name in step.inputs))
    error = max_relative_error(expected[LOGITS], traced.numpy())
    moved = sensitivities(lambda nudged: reference.run({**fixed, **nudged}), floats, expected, seed=seed)[LOGITS]
    limit = allowed_error(moved)
    held = moved <= NOISE
    if held and not error <= limit:
        told = differs("the traced inference step's output differs from eager torch's", error, moved, retry="another --seed")
        raise GraphError(f"torch front end, {step.meta['model']}: {told}")
    check = TensorCheck(LOGITS, error, moved, limit, held, "" if held else NOISE_REASON)
    return DecompositionCheck(per_rule={}, tensors=(check,), branch_flips=0, pinned=0, against_torch=True)
