"""The model zoo: plain-torch builders behind a name registry.

Every zoo model obeys one contract, which later stages rely on: ``model(x)`` returns 2-D logits
(N, C) and the training loss is ``torch.nn.functional.cross_entropy(model(x), labels)`` with
``labels`` int64 of shape (N,). Classifiers give one row per image; GPT-2 one row per token
(``batch * seq_len``); Tiny-YOLOv3 one row per anchor and cell of both heads (see
:mod:`traincost.models.tiny_yolo` for that proxy loss). Activations are never in-place, and with
``dropout=0.0`` no Dropout module exists, so exported training graphs are deterministic.

A user's torch module is an :class:`Architecture` too, made by :func:`factory_architecture` (a factory path with
its keyword arguments, named inputs and loss) and passed where a zoo name goes: every function here takes a
``Model``, a zoo name or an architecture, and no registry changes at run time. :func:`input_specs` gives any
model's inputs, and the export records them in the graph, so no later stage needs the model.

Options are keyword arguments of the builder. Each architecture lists the option keys it accepts
with their default values; the GPT-2 presets ``gpt2_small`` and ``gpt2_124m`` take the same keys
as ``gpt2`` with their own defaults. Building uses torch's global random state and never seeds it:
call ``torch.manual_seed`` first for reproducible weights.

Example:
    >>> _ = torch.manual_seed(0)
    >>> model = build_model("gpt2_small")
    >>> tokens, labels = make_batch("gpt2_small", batch=2, seed=0)
    >>> loss = torch.nn.functional.cross_entropy(model(tokens), labels)
"""

from __future__ import annotations

import contextlib
import importlib
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass
from types import MappingProxyType
from typing import Literal

import torch
from torch import nn

from traincost.errors import ConfigError, UnknownModelError
from traincost.models._validation import check_dropout, check_positive_int
from traincost.models.alexnet import alexnet
from traincost.models.forward_adapter import adapt_forward
from traincost.models.gpt2 import GPT2_124M, GPT2_SMALL, GPT2Config, gpt2
from traincost.models.mlp import MLP_CLASSES, MLP_FEATURES, mlp
from traincost.models.resnet import resnet18, resnet18_cifar, resnet50, resnet56
from traincost.models.tiny_yolo import ANCHORS_PER_HEAD, NUM_CLASSES, tiny_yolov3
from traincost.models.torchvision_ops import declare_unloadable_ops
from traincost.models.vgg import vgg16, vgg16_bn, vgg16_bn_cifar
from traincost.signature import InputSpec, check_loss, draw_tensors

__all__ = [
    "ARCHITECTURES",
    "Architecture",
    "SampleSpec",
    "build_model",
    "InputSpec",
    "get_architecture",
    "input_shape",
    "input_specs",
    "load_factory",
    "make_batch",
    "parameter_count",
    "factory_architecture",
    "Model",
]


@dataclass(frozen=True, slots=True)
class SampleSpec:
    """What one sample of an architecture looks like.

    Attributes:
        shape: Input shape of one sample, without the batch dimension.
        rows: Rows of logits (and labels) the model produces per sample.
        num_classes: Labels are drawn from ``[0, num_classes)``; for token inputs this is also the
            vocabulary the token ids are drawn from.
    """

    shape: tuple[int, ...]
    rows: int
    num_classes: int


@dataclass(frozen=True, slots=True)
class Architecture:
    """One entry of the zoo.

    Attributes:
        name: Registry name.
        description: One line: model, variant, input shape, classes.
        build: Builder; called with every option in ``defaults`` as a keyword argument.
        input_kind: ``"image"`` (float32 N x C x H x W) or ``"tokens"`` (int64 N x T token ids).
        defaults: The option keys the architecture accepts, with their default values.
        sample: Called with the resolved options as keyword arguments; checks their values and
            returns the per-sample input shape, logit rows and class count.
        inputs: the forward's named inputs (a user's module); empty for the zoo's one ``input``.
        loss: ``cross_entropy``, ``mse`` or a factory path of a loss function.
        labels: what a loss function reads as its labels, one sample's (None: int64 class ids shaped
            like the output without its last axis).
    """

    name: str
    description: str
    build: Callable[..., nn.Module]
    input_kind: Literal["image", "tokens"]
    defaults: Mapping[str, object]
    sample: Callable[..., SampleSpec]
    inputs: tuple[InputSpec, ...] = ()
    loss: str = "cross_entropy"
    labels: InputSpec | None = None


_IMAGENET = SampleSpec(shape=(3, 224, 224), rows=1, num_classes=1000)
_CIFAR10 = SampleSpec(shape=(3, 32, 32), rows=1, num_classes=10)
_YOLO = SampleSpec(shape=(3, 416, 416), rows=ANCHORS_PER_HEAD * (13 * 13 + 26 * 26), num_classes=NUM_CLASSES)


def _imagenet_sample() -> SampleSpec:
    """Sample spec of the option-free ImageNet classifiers."""
    return _IMAGENET


def _cifar10_sample() -> SampleSpec:
    """Sample spec of the option-free CIFAR-10 classifiers."""
    return _CIFAR10


def _mlp_sample() -> SampleSpec:
    """Sample spec of the MLP: a feature vector, one row, 10 classes."""
    return SampleSpec(shape=(MLP_FEATURES,), rows=1, num_classes=MLP_CLASSES)


def _yolo_sample() -> SampleSpec:
    """Sample spec of Tiny-YOLOv3: one row per anchor and cell of the 13x13 and 26x26 heads."""
    return _YOLO


def _imagenet_dropout_sample(*, dropout: float) -> SampleSpec:
    """Sample spec of the ImageNet classifiers with a ``dropout`` option, after checking it."""
    check_dropout(dropout)
    return _IMAGENET


def _gpt2_sample(*, n_layer: int, d_model: int, n_head: int, seq_len: int, vocab_size: int) -> SampleSpec:
    """Sample spec of GPT-2 after checking its options: ``seq_len`` tokens, one row each."""
    config = GPT2Config(n_layer=n_layer, d_model=d_model, n_head=n_head, seq_len=seq_len, vocab_size=vocab_size)
    return SampleSpec(shape=(config.seq_len,), rows=config.seq_len, num_classes=config.vocab_size)


_NO_OPTIONS: Mapping[str, object] = MappingProxyType({})
_DROPOUT: Mapping[str, object] = MappingProxyType({"dropout": 0.5})

ARCHITECTURES: Mapping[str, Architecture] = MappingProxyType(
    {
        arch.name: arch
        for arch in (
            Architecture(
                name="resnet18",
                description="ResNet-18, ImageNet stem, 3x224x224, 1000 classes",
                build=resnet18,
                input_kind="image",
                defaults=_NO_OPTIONS,
                sample=_imagenet_sample,
            ),
            Architecture(
                name="resnet18_cifar",
                description="ResNet-18, CIFAR stem (3x3/1 conv, no max-pool), 3x32x32, 10 classes",
                build=resnet18_cifar,
                input_kind="image",
                defaults=_NO_OPTIONS,
                sample=_cifar10_sample,
            ),
            Architecture(
                name="mlp",
                description="3-layer MLP, 64 -> 128 -> 128 -> 10 features (the recomputation test model)",
                build=mlp,
                input_kind="image",
                defaults=_NO_OPTIONS,
                sample=_mlp_sample,
            ),
            Architecture(
                name="resnet50",
                description="ResNet-50 v1.5, ImageNet stem, 3x224x224, 1000 classes",
                build=resnet50,
                input_kind="image",
                defaults=_NO_OPTIONS,
                sample=_imagenet_sample,
            ),
            Architecture(
                name="resnet56",
                description="ResNet-56 (He et al. 2016), projection shortcuts, 3x32x32, 10 classes",
                build=resnet56,
                input_kind="image",
                defaults=_NO_OPTIONS,
                sample=_cifar10_sample,
            ),
            Architecture(
                name="alexnet",
                description="AlexNet (torchvision layout), 3x224x224, 1000 classes",
                build=alexnet,
                input_kind="image",
                defaults=_DROPOUT,
                sample=_imagenet_dropout_sample,
            ),
            Architecture(
                name="vgg16",
                description="VGG-16 (configuration D, no BatchNorm), 3x224x224, 1000 classes",
                build=vgg16,
                input_kind="image",
                defaults=_DROPOUT,
                sample=_imagenet_dropout_sample,
            ),
            Architecture(
                name="vgg16_bn",
                description="VGG-16 with BatchNorm after every convolution (torchvision vgg16_bn), 3x224x224, 1000 classes",
                build=vgg16_bn,
                input_kind="image",
                defaults=_DROPOUT,
                sample=_imagenet_dropout_sample,
            ),
            Architecture(
                name="vgg16_bn_cifar",
                description="VGG-16 with BatchNorm for CIFAR-10: 3x32x32, one 512 -> 10 linear layer",
                build=vgg16_bn_cifar,
                input_kind="image",
                defaults=_NO_OPTIONS,
                sample=_cifar10_sample,
            ),
            Architecture(
                name="tiny_yolov3",
                description="Tiny-YOLOv3, 3x416x416, 80 classes, per-cell class loss over 13x13 and 26x26 heads",
                build=tiny_yolov3,
                input_kind="image",
                defaults=_NO_OPTIONS,
                sample=_yolo_sample,
            ),
            Architecture(
                name="gpt2",
                description="GPT-2, configurable; defaults are the 124M model",
                build=gpt2,
                input_kind="tokens",
                defaults=MappingProxyType(asdict(GPT2_124M)),
                sample=_gpt2_sample,
            ),
            Architecture(
                name="gpt2_small",
                description="GPT-2 small (our MONET stand-in): 2 layers, d_model 128, 4 heads, seq 64, vocab 1024",
                build=gpt2,
                input_kind="tokens",
                defaults=MappingProxyType(asdict(GPT2_SMALL)),
                sample=_gpt2_sample,
            ),
            Architecture(
                name="gpt2_124m",
                description="GPT-2 124M: 12 layers, d_model 768, 12 heads, seq 1024, vocab 50257, tied embeddings",
                build=gpt2,
                input_kind="tokens",
                defaults=MappingProxyType(asdict(GPT2_124M)),
                sample=_gpt2_sample,
            ),
        )
    }
)
"""Every zoo architecture by registry name."""


Model = str | Architecture
"""A zoo name (a key of ``ARCHITECTURES``) or an architecture (a zoo entry, or a user's: ``factory_architecture``)."""


def load_factory(path: str, *, what: str) -> Callable[..., object]:
    """The callable a factory path ``package.module:function`` names.

    Args:
        path: the factory path.
        what: what to name in an error (``model``, ``loss``).

    Raises:
        ConfigError: the path is malformed, does not import, or names nothing callable.
    """
    module_name, _, function_name = path.partition(":")
    if not module_name or not function_name.isidentifier():
        raise ConfigError(f"{what} {path!r}: expected a factory path package.module:function")
    declare_unloadable_ops()  # torchvision (or a module importing it) fails to import without them here
    try:
        with _own_argv(module_name):
            module = importlib.import_module(module_name)
    except Exception as err:  # a user's module may fail to import in any way: report it on one line
        raise ConfigError(f"{what} {path!r}: importing {module_name!r} failed ({type(err).__name__}: {err})") from err
    factory = getattr(module, function_name, None)
    if factory is None:
        raise ConfigError(f"{what} {path!r}: module {module_name!r} has no {function_name!r}")
    if not callable(factory):
        raise ConfigError(f"{what} {path!r}: {function_name!r} is not callable")
    return factory


def factory_architecture(
    path: str,
    *,
    inputs: tuple[InputSpec, ...],
    kwargs: Mapping[str, object] | None = None,
    loss: str = "cross_entropy",
    name: str | None = None,
    labels: InputSpec | None = None,
    output: str | None = None,
) -> Architecture:
    """A user's torch module as an architecture, from a factory path.

    The entry is an :class:`Architecture` like the zoo's: ``build(**kwargs)`` returns the module,
    and the export reads its inputs and loss from the entry.

    Args:
        path: ``package.module:function``; ``function(**kwargs)`` (a Hugging Face model class: ``function(config)``,
            its config made of ``kwargs``) returns an ``nn.Module`` whose forward takes one tensor per entry of
            ``inputs`` (by name, or in order) and returns a tensor, or a mapping or tuple holding the one the loss
            reads (``forward_adapter``: a Hugging Face ``ModelOutput``, ...).
        inputs: the forward's inputs, shapes without the batch.
        kwargs: keyword arguments of the factory.
        loss: ``cross_entropy`` (over the output's dimension 1, as torch takes it), ``mse`` or a factory path
            ``package.module:function`` of ``loss_fn(output, labels) -> scalar``.
        name: the architecture's name (a workload's name); default the function's name (``module.function`` where
            that is a zoo model's).
        labels: what a loss function reads as ``labels``, one sample's (e.g. float32 regression
            targets); default int64 class ids shaped like the output without its last axis.
        output: the entry of the forward's output the loss reads (default: ``forward_adapter``'s rule).

    Returns:
        The architecture, to pass wherever a ``Model`` goes.

    Raises:
        ConfigError: the path is malformed, does not import, or names no callable; ``name`` is a zoo name.
    """
    factory = load_factory(path, what="model")
    module_name, _, function_name = path.partition(":")
    if name is None:  # the function's name, or its whole dotted path where a zoo model has that name
        name = function_name if function_name not in ARCHITECTURES else f"{module_name}.{function_name}"
    if name in ARCHITECTURES:
        raise ConfigError(f"model {path!r}: the name {name!r} is a zoo model's; name it otherwise (--name)")
    if not inputs:
        raise ConfigError(f"model {path!r}: no inputs; describe the forward's inputs (name, shape, dtype)")
    check_loss(loss, where=f"model {path!r}: loss")
    if labels is not None and loss == "mse":
        raise ConfigError(f"model {path!r}: labels are for a cross-entropy or a loss function; mse reads targets like the output")
    given = MappingProxyType(dict(kwargs or {}))

    def build(**options: object) -> nn.Module:
        try:
            model = _construct(factory, options)
        except Exception as err:  # a user's factory may fail in any way: report it on one line
            raise ConfigError(f"model {path!r}: {function_name}(**{dict(options)}) raised {type(err).__name__}: {err}") from err
        if not isinstance(model, nn.Module):
            raise ConfigError(f"model {path!r}: {function_name}() returned {type(model).__name__}, not a torch nn.Module")
        return adapt_forward(model, [spec.name for spec in inputs], output=output, where=f"model {path!r}")

    sample = SampleSpec(shape=inputs[0].shape, rows=1, num_classes=max(inputs[0].high, 1))
    description = f"{path}, inputs {', '.join(spec.describe() for spec in inputs)}, loss {loss}"
    kind = "tokens" if inputs[0].dtype == "int64" else "image"
    return Architecture(name, description, build, kind, given, lambda **_: sample, inputs=inputs, loss=loss, labels=labels)


@contextlib.contextmanager
def _own_argv(program: str) -> Iterator[None]:
    """Run a user's code with ``sys.argv`` of its own (``[program]``), not traincost's: a module that parses the
    command line at import, or a factory that does, sees no arguments instead of traincost's."""
    saved = sys.argv
    sys.argv = [program]
    try:
        yield
    finally:
        sys.argv = saved


def _construct(factory: Callable[..., object], options: Mapping[str, object]) -> object:
    """``factory(**options)``; a Hugging Face model class (a module class with a ``config_class``, which its
    constructor takes) is built from its config made of ``options`` instead, random weights and nothing downloaded."""
    config_class = getattr(factory, "config_class", None)
    with _own_argv(getattr(factory, "__module__", None) or "model"):
        if isinstance(factory, type) and issubclass(factory, nn.Module) and isinstance(config_class, type):
            return factory(config_class(**options))
        return factory(**options)


def input_specs(name: Model, *, options: Mapping[str, object] | None = None) -> tuple[InputSpec, ...]:
    """The inputs of architecture ``name``, one sample's shapes without the batch.

    A zoo model reads one tensor ``input``: float32 images or int64 token ids below its vocabulary.
    """
    arch, _, spec = _resolve(name, options)
    if arch.inputs:
        return arch.inputs
    if arch.input_kind == "tokens":
        return (InputSpec("input", spec.shape, "int64", 0, spec.num_classes),)
    return (InputSpec("input", spec.shape, "float32"),)


def get_architecture(name: Model) -> Architecture:
    """The architecture of a zoo name, or ``name`` itself if it is one.

    Args:
        name: a zoo name, e.g. ``"resnet18"``, or an architecture.

    Raises:
        UnknownModelError: ``name`` is not in the zoo; the message lists the known names.
    """
    if isinstance(name, Architecture):
        return name
    try:
        return ARCHITECTURES[name]
    except KeyError:
        known = ", ".join(sorted(ARCHITECTURES))
        raise UnknownModelError(f"unknown model {name!r}; expected one of: {known}") from None


def _resolve(name: Model, options: Mapping[str, object] | None) -> tuple[Architecture, dict[str, object], SampleSpec]:
    """Look up ``name``, merge ``options`` over its defaults and check every value.

    Raises:
        UnknownModelError: ``name`` is not in the zoo.
        ConfigError: An option key is not accepted by the architecture, or a value is invalid.
    """
    arch = get_architecture(name)
    given = dict(options or {})
    unknown = sorted(str(key) for key in given if key not in arch.defaults)
    if unknown:
        allowed = ", ".join(sorted(arch.defaults)) or "none"
        given_keys = ", ".join(map(repr, unknown))
        raise ConfigError(f"unknown option(s) {given_keys} for model {arch.name!r}; allowed options: {allowed}")
    resolved = {**arch.defaults, **given}
    return arch, resolved, arch.sample(**resolved)


def build_model(name: Model, *, options: Mapping[str, object] | None = None) -> nn.Module:
    """Build a zoo model, initialised from torch's global random state (not seeded here).

    Args:
        name: Registry name, e.g. ``"resnet18"`` or ``"gpt2_small"``.
        options: Builder options overriding the architecture's defaults; keys must be among
            ``ARCHITECTURES[name].defaults``.

    Returns:
        The model in training mode.

    Raises:
        UnknownModelError: ``name`` is not in the zoo.
        ConfigError: An option key is not accepted by the architecture, or a value is invalid.
    """
    arch, resolved, _ = _resolve(name, options)
    return arch.build(**resolved)


def input_shape(name: Model, *, batch: int, options: Mapping[str, object] | None = None) -> tuple[int, ...]:
    """Return the input shape of a batch, e.g. ``(batch, 3, 224, 224)`` or ``(batch, seq_len)``.

    Args:
        name: Registry name.
        batch: Number of samples, at least 1.
        options: Builder options, as for :func:`build_model`.

    Returns:
        The input tensor shape, batch first.

    Raises:
        UnknownModelError: ``name`` is not in the zoo.
        ConfigError: ``batch`` is not a positive int, or an option is invalid.
    """
    check_positive_int(batch, field="batch")
    _, _, spec = _resolve(name, options)
    return (batch, *spec.shape)


def make_batch(
    name: Model, *, batch: int, seed: int, options: Mapping[str, object] | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Draw a deterministic random input batch and matching labels.

    Images are float32 from N(0, 1); token ids are int64, uniform in ``[0, vocab_size)``. Labels
    are int64, uniform in ``[0, num_classes)``, one per logit row (``batch * rows``). Both come
    from one numpy generator seeded with ``seed`` (``draw_tensors``); torch's global random state is not touched.

    Args:
        name: Registry name.
        batch: Number of samples, at least 1.
        seed: Seed of the generator, a non-negative int.
        options: Builder options, as for :func:`build_model`.

    Returns:
        ``(inputs, labels)`` such that ``cross_entropy(model(inputs), labels)`` is the loss.

    Raises:
        UnknownModelError: ``name`` is not in the zoo.
        ConfigError: ``batch`` or ``seed`` is out of range, or an option is invalid.
    """
    check_positive_int(batch, field="batch")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ConfigError(f"'seed' must be a non-negative int, got {seed!r}")
    _, _, spec = _resolve(name, options)
    (inputs,) = input_specs(name, options=options)
    labels = InputSpec("labels", (batch * spec.rows,), "int64", 0, spec.num_classes)
    drawn = draw_tensors([inputs.batched(batch), labels], seed=seed)
    return torch.from_numpy(drawn["input"]), torch.from_numpy(drawn["labels"])


def parameter_count(model: nn.Module) -> int:
    """Return the number of parameter elements, counting shared (tied) tensors once."""
    return sum(parameter.numel() for parameter in model.parameters())
