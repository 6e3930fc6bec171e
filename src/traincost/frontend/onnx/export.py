"""torch → ONNX export of a registered model (the zoo's or a user's module), checked against torch.

The exported forward graph carries in its metadata everything later stages need (see
:func:`record_signature`): the model's name, its inputs (name, shape with the batch, dtype, value
range), the labels the loss reads, the loss and the parameter list. No later stage looks the model up.
"""

from __future__ import annotations

import io
import json
import logging
import warnings
from collections.abc import Callable, Sequence

import numpy as np
import onnx
import torch
from onnx import helper, numpy_helper
from torch.utils._python_dispatch import TorchDispatchMode

from traincost import models
from traincost.errors import ConfigError, GraphError
from traincost.frontend.onnx.adaptive_pool import general_adaptive_pooling
from traincost.frontend.onnx.execute import Executable, record_shapes, weightless
from traincost.frontend.onnx.fused_attention import ATTENTION_META
from traincost.frontend.onnx.graph import IR_VERSION, OPSET, set_model_meta
from traincost.frontend.onnx.randomness import dropout_in_training_mode, without_randomness
from traincost.frontend.onnx.shapes import tensor_types
from traincost.frontend.shared.rounding import NOISE, allowed_error, differs, max_relative_error, sensitivity
from traincost.frontend.shared.torch_model import CROSS_ENTROPY, LOGITS, built_model, label_spec, probe_output
from traincost.frontend.shared.torch_randomness import no_randomness
from traincost.models.forward_adapter import OWN_LOSS, output_used
from traincost.signature import LOSSES, InputSpec, draw_tensors

__all__ = [
    "LOGITS",
    "check_against_torch",
    "export_model",
    "flatten_logits",
    "record_signature",
    "torch_export",
]

log = logging.getLogger(__name__)

_PROTOBUF_LIMIT_BYTES = 2**31  # the largest message protobuf serialises: an ONNX graph with its weights inline
_WRAPPED = "model."  # prefix of the user's parameters inside the module that adds a custom loss


class _WithLoss(torch.nn.Module):
    """A model followed by a user's loss function: the exported graph's one output is the loss."""

    def __init__(self, model: torch.nn.Module, loss_fn: Callable[..., torch.Tensor]) -> None:
        super().__init__()
        self.model = model
        self.loss_fn = loss_fn

    def forward(self, *tensors: torch.Tensor) -> torch.Tensor:
        *inputs, labels = tensors
        return self.loss_fn(self.model(*inputs), labels)


def export_model(name: models.Model, *, batch: int, seed: int, options: dict[str, object] | None = None) -> onnx.ModelProto:
    """Export model ``name`` (a zoo name or an architecture, ``models.Model``) for training at a fixed batch size.

    The model is built under ``torch.manual_seed(seed)``, run on a batch drawn from its inputs, and
    exported with the legacy exporter in training mode (so BatchNorm stays a training-mode op), without
    constant folding, at opset 17; it is shape-inferred and checked with ``onnx.checker``; its output on
    that batch must equal torch's within what rounding explains (``check_against_torch``), every random
    draw at its keep value in both for that check only (``traincost.frontend.onnx.randomness``).

    Returns:
        The forward graph: the model's inputs, output ``logits`` (cross-entropy: flattened to rows x classes,
        the classes the output's dimension 1; mse: the output) or ``loss`` (a user's loss function), parameters and
        buffers as initializers with their initial values, and the metadata of :func:`record_signature`.

    Raises:
        ConfigError: the module's forward fails on its inputs, returns no tensor the loss can read, or the loss
            does not fit its output.
    """
    options = dict(options or {})
    arch, specs, module, inputs = built_model(name, batch=batch, seed=seed, options=options)
    name = arch.name
    module.train()
    _check_protobuf_size(module, name)
    params = [n for n, _ in module.named_parameters()]
    # The buffers as built (BatchNorm statistics, which the probe and the tracing move): restored in the graph below.
    buffers = {k: v.detach().clone() for k, v in module.state_dict().items() if k not in set(params)}
    kernels = _SoftmaxKernels()
    with kernels:
        output = expected = probe_output(module, inputs, name)
    used = output_used(module)
    if used == OWN_LOSS:
        raise ConfigError(f"model {name!r}: its forward returns its own loss (labels among its inputs); the ONNX front "
                          "end exports the output a loss reads: leave the labels out, or use the torch front end")  # fmt: skip
    labels = label_spec(arch.loss, tuple(output.shape), where=f"model {name!r}", given=arch.labels)
    custom = arch.loss not in LOSSES
    if custom:
        loss_fn = models.load_factory(arch.loss, what="loss")
        module = _WithLoss(module, loss_fn)
        inputs[labels.name] = torch.from_numpy(draw_tensors([*specs, labels], seed=seed)[labels.name])
        expected = probe_output(module, inputs, name)
        if expected.dim() != 0:
            raise ConfigError(f"loss {arch.loss!r}: returns shape {list(expected.shape)} for model {name!r}; expected a scalar")
    model = torch_export(module, inputs, output_name="loss" if custom else LOGITS, name=name)
    if custom:
        _strip_prefix(model.graph, _WRAPPED)
    elif arch.loss in CROSS_ENTROPY and output.dim() != 2:
        flatten_logits(model.graph, LOGITS, shape=tuple(output.shape), loss=arch.loss)
    for init in model.graph.initializer:
        if init.name in buffers:
            init.CopyFrom(numpy_helper.from_array(np.ascontiguousarray(buffers[init.name].numpy()), init.name))
    names = {init.name for init in model.graph.initializer}
    missing = [p for p in params if p not in names]
    if missing:
        raise GraphError(f"export of {name}: parameters {missing} are not initializers of the ONNX graph")
    record_signature(
        model, name=name, batch=batch, seed=seed, options=options, params=params, inputs=specs, labels=labels, loss=arch.loss
    )
    set_model_meta(model, output=used, **{ATTENTION_META: json.dumps(kernels.by_softmax(model.graph, name))})
    # Typed on the graph without its weights' data (shapes do not read it); strict, so check_model need not infer again.
    typed = onnx.shape_inference.infer_shapes(weightless(model), check_type=True, strict_mode=True)
    model.graph.value_info.extend(typed.graph.value_info)
    del model.graph.output[:]
    model.graph.output.extend(typed.graph.output)
    known = tensor_types(model.graph)
    if any(name and name not in known for node in model.graph.node for name in node.output):
        record_shapes(model, seed=seed)  # shapes computed at run time (a Reshape to a computed shape): typed by execution
    onnx.checker.check_model(model)
    sensitivity = output_sensitivity(module, inputs, expected, seed=seed)
    flattened = arch.loss == "cross_entropy" and output.dim() > 2  # its rows: the class axis moved last
    compared = expected.movedim(1, -1) if flattened else expected
    check_against_torch(model, compared.numpy(), {k: v.numpy() for k, v in inputs.items()}, name, sensitivity=sensitivity)
    log.info("exported %s: %d nodes, %d parameters", name, len(model.graph.node), len(params))
    return model


def _check_protobuf_size(module: torch.nn.Module, name: str) -> None:
    """Refuse a module whose weights an ONNX protobuf cannot hold in one piece (2 GiB): the exporter would fail after
    tracing, and every later stage reads the graph whole.

    Raises:
        ConfigError: naming the model, its size and what to do.
    """
    size = sum(t.numel() * t.element_size() for t in [*module.parameters(), *module.buffers()])
    if size >= _PROTOBUF_LIMIT_BYTES:
        raise ConfigError(
            f"model {name!r}: its parameters and buffers take {size / 1e9:.2f} GB, more than the 2 GiB an ONNX graph "
            "holds in one protobuf, which the ONNX front end reads whole; cost a smaller variant (fewer layers or a "
            "narrower width)"
        )


class _SoftmaxKernels(TorchDispatchMode):
    """The softmaxes torch computes in a forward pass, in order: ``fused`` where it calls a fused attention kernel
    (``_scaled_dot_product_flash_attention_for_cpu`` here), ``materialised`` where it computes a softmax (its math
    attention kernel, taken with attention dropout, or a model's own softmax)."""

    def __init__(self) -> None:
        super().__init__()
        self.kernels: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204 (torch's signature)
        name = func.overloadpacket.__name__
        if name.startswith(("_scaled_dot_product_flash_attention", "_scaled_dot_product_efficient_attention")):
            self.kernels.append("fused")
        elif name in ("_softmax", "_safe_softmax"):
            self.kernels.append("materialised")
        return func(*args, **(kwargs or {}))

    def by_softmax(self, graph: onnx.GraphProto, name: str) -> dict[str, str]:
        """Each ``Softmax`` of the exported ``graph`` with the kernel torch ran it with (the same order); none if the
        counts differ (a softmax the exporter wrote otherwise), with a warning."""
        softmaxes = [node.name for node in graph.node if node.op_type == "Softmax"]
        if len(softmaxes) != len(self.kernels):
            log.warning(
                "export of %s: %d softmaxes in the graph, %d in torch's forward: attention kernels not recorded "
                "(--attention torch costs every attention materialised)", name, len(softmaxes), len(self.kernels)
            )  # fmt: skip
            return {}
        return dict(zip(softmaxes, self.kernels, strict=True))


def flatten_logits(graph: onnx.GraphProto, output: str, *, shape: Sequence[int], loss: str) -> None:
    """Replace graph output ``output`` (of ``shape``) by the graph output ``logits``: the class axis of the
    cross-entropy ``loss`` (``CROSS_ENTROPY``) moved last, reshaped to (rows, classes), the rows in the order of
    ``label_spec``'s labels."""
    source = f"{LOGITS}.unflattened" if output == LOGITS else output
    for node in graph.node:
        node.output[:] = [source if o == output else o for o in node.output]
        node.input[:] = [source if i == output else i for i in node.input]
    classes = shape[CROSS_ENTROPY[loss]]
    if len(shape) > 2 and CROSS_ENTROPY[loss] == 1:
        perm = [0, *range(2, len(shape)), 1]
        moved = f"{LOGITS}.classes_last"
        graph.node.append(helper.make_node("Transpose", [source], [moved], name=f"/{LOGITS}/Transpose", perm=perm))
        source = moved
    rows = f"{LOGITS}.shape"
    value = numpy_helper.from_array(np.array([-1, classes], dtype=np.int64))
    graph.node.append(helper.make_node("Constant", [], [rows], name=f"/{LOGITS}/Constant", value=value))
    graph.node.append(helper.make_node("Reshape", [source, rows], [LOGITS], name=f"/{LOGITS}/Reshape"))
    del graph.output[:]
    graph.output.append(helper.make_empty_tensor_value_info(LOGITS))


def record_signature(
    model: onnx.ModelProto,
    *,
    name: str,
    batch: int,
    seed: int,
    options: dict[str, object],
    params: Sequence[str],
    inputs: Sequence[InputSpec],
    labels: InputSpec,
    loss: str,
) -> None:
    """Seed the Dropout nodes, stamp the IR version and name, and write the traincost metadata of a forward graph.

    Metadata: ``model`` (the name every output carries), ``batch``, ``seed``, ``options``, ``parameters``,
    ``inputs`` and ``labels`` (JSON specs, shapes with the batch), ``loss``, ``input_shape`` (the first
    input's) and ``stage``.
    """
    # A seeded Dropout draws the same mask in every session, so graphs can be compared by execution.
    for index, node in enumerate(n for n in model.graph.node if n.op_type == "Dropout"):
        if not any(a.name == "seed" for a in node.attribute):
            node.attribute.append(helper.make_attribute("seed", seed + index))
    model.ir_version = IR_VERSION
    model.graph.name = name
    set_model_meta(
        model,
        model=name,
        batch=str(batch),
        seed=str(seed),
        options=json.dumps(options, sort_keys=True),
        parameters=json.dumps(list(params)),
        inputs=json.dumps([spec.to_json() for spec in inputs]),
        labels=json.dumps(labels.to_json()),
        loss=loss,
        input_shape=json.dumps(list(inputs[0].shape)),
        stage="model",
    )


def torch_export(
    module: torch.nn.Module, inputs: dict[str, torch.Tensor], *, output_name: str, name: str, training: bool = True
) -> onnx.ModelProto:
    """The legacy exporter's graph of ``module``: in training mode without constant folding (BatchNorm stays a
    training-mode op), or in inference mode with constant folding, which folds each BatchNorm into the convolution
    before it (torch's eval peephole pass) as deployment tools do."""
    buffer = io.BytesIO()
    with warnings.catch_warnings(), general_adaptive_pooling():
        warnings.simplefilter("ignore")
        try:
            torch.onnx.export(
                module,
                tuple(inputs.values()),
                buffer,
                dynamo=False,
                training=torch.onnx.TrainingMode.TRAINING if training else torch.onnx.TrainingMode.EVAL,
                do_constant_folding=not training,
                opset_version=OPSET,
                input_names=list(inputs),
                output_names=[output_name],
            )
        except Exception as err:  # the exporter raises many classes; its first line says what it cannot export
            detail = str(err).strip().splitlines()[0][:300] if str(err).strip() else ""
            raise GraphError(f"export of {name}: torch.onnx.export failed ({type(err).__name__}: {detail})") from err
    model = onnx.load_from_string(buffer.getvalue())
    if training:
        dropout_in_training_mode(model.graph)
    return model


def _strip_prefix(graph: onnx.GraphProto, prefix: str) -> None:
    """Rename every initializer ``prefix<name>`` to ``<name>`` (the user's own parameter names)."""
    renamed = {i.name: i.name.removeprefix(prefix) for i in graph.initializer if i.name.startswith(prefix)}
    for init in graph.initializer:
        init.name = renamed.get(init.name, init.name)
    for value in graph.input:
        value.name = renamed.get(value.name, value.name)
    for node in graph.node:
        node.input[:] = [renamed.get(i, i) for i in node.input]


def check_against_torch(
    model: onnx.ModelProto, expected: np.ndarray, feeds: dict[str, np.ndarray], name: str, *, sensitivity: float = 0.0
) -> None:
    """The graph's output on ``feeds``, every random draw at its keep value as in ``probe_output``, equals torch's
    (``expected``) within what rounding explains for an output that one-ulp nudges of the inputs move by
    ``sensitivity`` (``output_sensitivity``; ``rounding.allowed_error``).

    Raises:
        GraphError: the output differs by more, or rounding alone moves it by more than ``rounding.NOISE``.
    """
    if sensitivity > NOISE:
        raise GraphError(
            f"export of {name}: float32 rounding moves torch's output by {sensitivity:.2e} (one-ulp nudges of the "
            f"inputs), more than {NOISE}: nothing to compare. A BatchNorm over few values per channel (small maps at "
            "a small batch) amplifies rounding; give a larger input or batch"
        )
    checked = Executable(without_randomness(model))
    output = model.graph.output[0].name
    actual = checked.run(feeds, [output])[output]
    error = max_relative_error(expected.reshape(actual.shape) if expected.size == actual.size else expected, actual)
    if not error <= allowed_error(sensitivity):
        told = differs("its ONNX output differs from torch's", error, sensitivity, retry="another --seed")
        raise GraphError(f"export of {name}: {told}")


def output_sensitivity(module: torch.nn.Module, inputs: dict[str, torch.Tensor], expected: torch.Tensor, *, seed: int) -> float:
    """How far float32 rounding moves the module's output (``expected``, from ``probe_output``): ``rounding.sensitivity``
    of the forward, every draw kept, on the float inputs nudged by one ulp."""

    def forward(feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        with torch.no_grad(), no_randomness():
            return {"output": module(*(torch.from_numpy(value) for value in feeds.values())).numpy()}

    return sensitivity(forward, {key: value.numpy() for key, value in inputs.items()}, {"output": expected.numpy()}, seed=seed)
