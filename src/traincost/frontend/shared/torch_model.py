"""A registered model as torch runs it: built with its seed, a batch drawn from its inputs, its output probed, the
labels its loss reads, and the torch.optim optimizer of a spec. Both front ends start here (``frontend.onnx.export`` for ONNX,
``frontend.torch.step`` for torch's own graph)."""

from __future__ import annotations

import math

import torch

from traincost import models
from traincost.errors import ConfigError
from traincost.frontend.shared.optimizer import OptimizerSpec
from traincost.frontend.shared.torch_randomness import no_randomness
from traincost.signature import InputSpec, draw_tensors

__all__ = [
    "CROSS_ENTROPY",
    "INFERENCE_STAGE",
    "LOGITS",
    "built_model",
    "eval_output",
    "label_spec",
    "probe_output",
    "refuse_unreal",
    "torch_optimizer",
]

LOGITS = "logits"  # the model's output, as both front ends name it in the graphs and steps they make
CROSS_ENTROPY = {"cross_entropy": 1, "token_cross_entropy": -1}  # each cross-entropy loss's class axis
INFERENCE_STAGE = "inference_step"  # a Workload's ``stage`` when it is a model's inference step (either front end)


def built_model(
    model: models.Model, *, batch: int, seed: int, options: dict[str, object]
) -> tuple[models.Architecture, list[InputSpec], torch.nn.Module, dict[str, torch.Tensor]]:
    """``model`` (a zoo name or an architecture): its architecture, its input specs at ``batch``, the module built
    under ``torch.manual_seed(seed)`` and a batch drawn from the specs with ``seed``."""
    arch = models.get_architecture(model)
    specs = [spec.batched(batch) for spec in models.input_specs(arch, options=options)]
    torch.manual_seed(seed)
    module = models.build_model(arch, options=options)
    _refuse_unlowered(module, arch.name)
    refuse_unreal(module, arch.name)
    inputs = {key: torch.from_numpy(array) for key, array in draw_tensors(specs, seed=seed).items()}
    return arch, specs, module, inputs


# Layers no lowering expresses: an adaptive max-pooling over 3 spatial axes (its windows' sizes vary).
_UNLOWERED = (torch.nn.AdaptiveMaxPool3d,)


def _refuse_unlowered(module: torch.nn.Module, name: str) -> None:
    """Refuse, before anything is traced, a module with a layer no lowering expresses, naming the first such layer.

    Raises:
        ConfigError: a 3-D adaptive max-pooling layer.
    """
    found = [(path, type(sub).__name__) for path, sub in module.named_modules() if isinstance(sub, _UNLOWERED)]
    if found:
        path, kind = found[0]
        raise ConfigError(
            f"model {name!r}: layer {path!r}, {kind} ({len(found)} such layers), is not lowered (its windows "
            "vary in size): an AdaptiveAvgPool3d, or a MaxPool3d of fixed windows, is"
        )


def refuse_unreal(module: torch.nn.Module, name: str) -> None:
    """Refuse a module with a parameter that is not real floating point, naming the first: a complex parameter's
    step would be costed and checked on its real part alone, an integer one is no trained parameter.

    Raises:
        ConfigError: a complex or integer parameter.
    """
    for path, parameter in module.named_parameters():
        if parameter.is_complex() or not parameter.is_floating_point():
            dtype = str(parameter.dtype).replace("torch.", "")
            raise ConfigError(
                f"model {name!r}: parameter {path!r} is {dtype}; expected real floating-point parameters (a complex "
                "parameter would be costed on its real part alone)"
            )


def probe_output(module: torch.nn.Module, inputs: dict[str, torch.Tensor], name: str) -> torch.Tensor:
    """The module's output on ``inputs`` with every random draw at its keep value (``torch_randomness.no_randomness``):
    what the exported graph's output must equal with its draws likewise (``check_against_torch``).

    It moves BatchNorm statistics, as tracing does (the export restores them); in training mode, BatchNorm's
    output does not depend on them.
    """
    described = ", ".join(f"{k}: {v.dtype} {'x'.join(map(str, v.shape))}".replace("torch.", "") for k, v in inputs.items())
    try:
        with torch.no_grad(), no_randomness():
            output = module(*inputs.values())
    except ConfigError:  # the forward adapter's (``traincost.models.forward_adapter``): it names what was expected
        raise
    except Exception as err:  # a user's forward may fail in any way: report it on one line
        detail = " ".join(str(err).split())[:300]
        raise ConfigError(f"model {name!r}: its forward fails on inputs ({described}): {type(err).__name__}: {detail}") from err
    if not isinstance(output, torch.Tensor):
        raise ConfigError(f"model {name!r}: its forward returns {type(output).__name__}; expected one tensor (a "
                          "factory path's module may return a ModelOutput, dict or tuple: --output names the entry)")  # fmt: skip
    return output


def eval_output(module: torch.nn.Module, inputs: dict[str, torch.Tensor], name: str) -> torch.Tensor:
    """``module`` put in eval mode and its output on ``inputs`` (``probe_output``): what an inference step reproduces.

    Raises:
        ConfigError: the forward fails, returns no single tensor, or returns a scalar.
    """
    module.eval()
    output = probe_output(module, inputs, name)
    if output.dim() == 0:
        raise ConfigError(f"model {name!r}: its forward returns a scalar; an inference step needs the model's output")
    return output


def label_spec(loss: str, output_shape: tuple[int, ...], *, where: str, given: InputSpec | None = None) -> InputSpec:
    """The labels ``loss`` reads for a model output of ``output_shape`` (batch included).

    cross-entropy: int64 class ids, one per position of the output but its class axis, dimension 1 (as
    ``torch.nn.functional.cross_entropy`` takes it: (batch, classes) logits, or (batch, classes, d1, ...) with
    labels (batch, d1, ...)), flattened; token cross-entropy: one per row of the output flattened over its last
    axis (a language model's (batch, tokens, vocabulary) logits); mse: float32 targets shaped like the output; a
    user's loss function: ``given`` (one sample's) at the output's batch, by default int64 class ids shaped like the
    output without its last axis.

    Raises:
        ConfigError: the output has no class axis for a cross-entropy.
    """
    if loss == "mse":
        return InputSpec("target", output_shape, "float32")
    if given is not None and loss in CROSS_ENTROPY:
        return _checked_class_ids(loss, output_shape, given, where=where)
    if given is not None:
        return given.batched(output_shape[0])
    if len(output_shape) < 2:
        need = "(batch, classes, ...)" if loss == "cross_entropy" else "(batch, ..., classes)"  # the class axis
        raise ConfigError(f"{where}: output shape {list(output_shape)} has no class axis; {loss!r} needs {need}")
    if loss in CROSS_ENTROPY:
        classes = output_shape[CROSS_ENTROPY[loss]]
        return InputSpec("labels", (math.prod(output_shape) // classes,), "int64", 0, classes)
    return InputSpec("labels", output_shape[:-1], "int64", 0, output_shape[-1])


def _checked_class_ids(loss: str, output_shape: tuple[int, ...], given: InputSpec, *, where: str) -> InputSpec:
    """The class ids a user gave for a cross-entropy, checked against the output: one per position of the output but
    its class axis, of an int64 dtype, below the class count; flattened, as ``label_spec`` gives them.

    Raises:
        ConfigError: the labels do not fit the output, suggesting the loss or labels that would.
    """
    axis = CROSS_ENTROPY[loss] % len(output_shape)
    classes = output_shape[axis]
    expected = output_shape[:axis] + output_shape[axis + 1 :]
    batched = given.batched(output_shape[0])
    if batched.shape != expected or batched.dtype != "int64" or not 0 <= given.low < given.high <= classes:
        other = "token_cross_entropy" if loss == "cross_entropy" else "cross_entropy"
        raise ConfigError(
            f"{where}: labels {batched.dtype} {list(batched.shape)} do not fit {loss}'s output {list(output_shape)} "
            f"(expected int64 class ids {list(expected)} below {classes}, the output without its class axis); "
            f"give --loss {other}, mse or package.module:fn, or --labels of that shape"
        )
    return InputSpec("labels", (math.prod(expected),), "int64", given.low, given.high)


def torch_optimizer(spec: OptimizerSpec, params: list[torch.nn.Parameter]) -> torch.optim.Optimizer:
    """The ``torch.optim`` optimizer that ``spec`` describes."""
    match spec.kind:
        case "sgd":
            return torch.optim.SGD(params, lr=spec.lr, weight_decay=spec.weight_decay)
        case "sgd_momentum":
            return torch.optim.SGD(params, lr=spec.lr, momentum=spec.momentum, weight_decay=spec.weight_decay)
        case "adam":
            return torch.optim.Adam(
                params, lr=spec.lr, betas=(spec.beta1, spec.beta2), eps=spec.eps, weight_decay=spec.weight_decay
            )
        case "adamw":
            return torch.optim.AdamW(
                params, lr=spec.lr, betas=(spec.beta1, spec.beta2), eps=spec.eps, weight_decay=spec.weight_decay
            )
    raise AssertionError(spec.kind)
