"""A user's ONNX file as the entry of the chain: checked, made static at the batch, described in metadata.

The file must be a forward graph exported for training, as ``traincost export`` writes it::

    torch.onnx.export(model.train(), args, "model.onnx", dynamo=False,
                      training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
                      opset_version=17, input_names=[...], dynamic_axes={name: {0: "batch"}, ...})

Each wrong setting is detected and named in one error: the dynamo exporter (inference-mode graph), an
eval-mode export (BatchNorm in inference mode, or folded into Conv by constant folding), parameters
exported as graph inputs instead of initializers, external weight data missing beside the file, an
opset above 17, inputs that do not match the model, and several graph outputs without the one the loss
reads named (``output``).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from pathlib import Path

import onnx
from google.protobuf.message import DecodeError
from onnx import helper, version_converter

from traincost.errors import ConfigError, GraphError
from traincost.frontend.onnx.execute import run
from traincost.frontend.onnx.export import flatten_logits, record_signature
from traincost.frontend.onnx.graph import OPSET, check_external_data, check_node_order, consumers, set_model_meta
from traincost.frontend.shared.torch_model import CROSS_ENTROPY, label_spec
from traincost.signature import LOSSES, InputSpec, draw_tensors

__all__ = ["EXPORT_SETTINGS", "import_onnx"]

log = logging.getLogger(__name__)

EXPORT_SETTINGS = (
    "torch.onnx.export(model.train(), ..., dynamo=False, training=torch.onnx.TrainingMode.TRAINING, "
    "do_constant_folding=False, opset_version=17)"
)
# Inputs of these ops that hold parameters (weights, biases, norm scales, embedding tables).
_PARAMETER_SLOTS = {
    "Conv": (1, 2),
    "ConvTranspose": (1, 2),
    "Gemm": (1, 2),
    "BatchNormalization": (1, 2, 3, 4),
    "LayerNormalization": (1, 2),
    "InstanceNormalization": (1, 2),
    "GroupNormalization": (1, 2),
    "Gather": (0,),
}
# Float initializers read only by these ops are settings (scales, ratios, bounds), not parameters.
_SETTING_READERS = frozenset({"Resize", "Upsample", "Dropout", "Clip", "Pad", "ConstantOfShape", "Range"})
_ONNX_TYPES = {onnx.TensorProto.FLOAT: "float32", onnx.TensorProto.INT64: "int64"}


def import_onnx(
    path: str | Path,
    *,
    batch: int,
    seed: int,
    name: str | None = None,
    loss: str = "cross_entropy",
    inputs: Sequence[InputSpec] | None = None,
    output: str | None = None,
) -> onnx.ModelProto:
    """The forward graph of a user's ONNX file, at ``batch``, with the metadata later stages read.

    Args:
        path: the ONNX file (its external weight data, if any, beside it).
        batch: batch size; a graph input's first dimension must be symbolic or equal to it.
        seed: seed of the batch the graph is run on once (to learn its output's shape).
        name: the name every output carries; default the file's stem.
        loss: ``cross_entropy`` (over the output's dimension 1), ``token_cross_entropy`` (over its last axis) or ``mse``.
        inputs: the graph inputs' shapes (one sample's), dtypes and int64 ranges; default read from the
            graph (an int64 input must feed an embedding's Gather, which gives its range).
        output: the graph output the loss reads, required when the graph has more than one; the
            others are dropped with every node, initializer and input only they need.

    Raises:
        GraphError: the file is not ONNX, lacks its weights, or was exported with a wrong setting.
        ConfigError: ``inputs`` or ``loss`` do not fit the model.
    """
    file = Path(path)
    name = name or re.sub(r"\W", "_", file.stem)
    if loss not in LOSSES:
        takes = f"{', '.join(LOSSES[:-1])} or {LOSSES[-1]}"
        raise ConfigError(f"{file}: loss {loss!r}: an ONNX file takes {takes} (a loss function needs the torch module)")
    model = _load(file)
    _check_export_settings(model, file)
    graph = model.graph
    _keep_output(graph, output, file=file)
    initialized = {init.name for init in graph.initializer}
    fed = [value for value in graph.input if value.name not in initialized]
    del graph.input[:]  # initializers listed as inputs too (keep_initializers_as_inputs=True) are initializers only
    graph.input.extend(fed)
    specs = _input_specs(graph, fed, inputs, batch=batch, file=file)
    _make_static(graph, specs)
    feeds = draw_tensors(specs, seed=seed)
    described = ", ".join(spec.describe() for spec in specs)
    try:
        output = run(model, feeds)[graph.output[0].name]
    except Exception as err:  # ONNX Runtime raises its own classes for shape and type mismatches
        detail = " ".join(str(err).split())[:300]
        raise GraphError(f"{file}: ONNX Runtime cannot run it on inputs ({described}): {detail}") from err
    labels = label_spec(loss, tuple(output.shape), where=f"{file}")
    if loss in CROSS_ENTROPY and output.ndim != 2:
        flatten_logits(graph, graph.output[0].name, shape=tuple(int(n) for n in output.shape), loss=loss)
    params = _parameters(graph)
    record_signature(model, name=name, batch=batch, seed=seed, options={}, params=params, inputs=specs, labels=labels, loss=loss)
    set_model_meta(model, source=str(file))
    try:
        model = onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
        onnx.checker.check_model(model, full_check=True)
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as err:
        raise GraphError(f"{file}: not a valid ONNX graph ({' '.join(str(err).split())[:300]})") from err
    log.info("imported %s as %s: %d nodes, %d parameters", file, name, len(graph.node), len(params))
    return model


def _keep_output(graph: onnx.GraphProto, output: str | None, *, file: Path) -> None:
    """Make ``output`` the graph's only output: drop the other outputs and what only they need.

    Raises:
        GraphError: several outputs and none chosen.
        ConfigError: ``output`` is not an output of the graph.
    """
    names = [value.name for value in graph.output]
    if output is None:
        if len(names) != 1:
            raise GraphError(
                f"{file}: {len(names)} graph outputs {names}; name the one the loss reads "
                "(--output, or the workload's output: key)"
            )
        return
    if output not in names:
        raise ConfigError(f"{file}: output {output!r} is not a graph output; its outputs are {names}")
    needed: set[str] = set()
    stack = [output]
    writer = {name: node for node in graph.node for name in node.output if name}
    while stack:
        name = stack.pop()
        if name in needed:
            continue
        needed.add(name)
        node = writer.get(name)
        if node is not None:
            stack.extend(i for i in [*node.input, *_subgraph_inputs(node)] if i)
            needed.update(o for o in node.output if o)
    kept = [node for node in graph.node if any(o in needed for o in node.output)]
    del graph.node[:]
    graph.node.extend(kept)
    for field in (graph.output, graph.input, graph.initializer, graph.value_info):
        chosen = [value for value in field if value.name in needed]
        del field[:]
        field.extend(chosen)


def _subgraph_inputs(node: onnx.NodeProto) -> list[str]:
    """Names an If / Loop / Scan node's subgraphs read from the enclosing graph (or declare themselves)."""
    return [
        name
        for attr in node.attribute
        for graph in ([attr.g] if attr.HasField("g") else list(attr.graphs))
        for inner in graph.node
        for name in inner.input
    ]


def _load(file: Path) -> onnx.ModelProto:
    """The model with its weights, every external data file checked first."""
    if not file.is_file():
        raise GraphError(f"{file}: no such ONNX file")
    try:
        model = onnx.load(str(file), load_external_data=False)
    except (DecodeError, RuntimeError, ValueError) as err:
        raise GraphError(f"{file}: not a readable ONNX model ({type(err).__name__}: {err})") from err
    if not model.graph.node:
        raise GraphError(f"{file}: not an ONNX model (the graph has no nodes)")
    try:
        check_node_order(model.graph)
    except GraphError as err:
        raise GraphError(f"{file}: {err}") from None
    check_external_data(model, file)
    try:
        onnx.load_external_data_for_model(model, str(file.parent))
    except (OSError, ValueError, RuntimeError) as err:
        raise GraphError(f"{file}: its external weight data cannot be read ({type(err).__name__}: {err})") from err
    return model


def _check_export_settings(model: onnx.ModelProto, file: Path) -> None:
    """One error per wrong export setting, each naming the node or tensor that shows it; an opset below 17 is converted."""
    graph = model.graph
    fix = f"export with {EXPORT_SETTINGS}"
    if model.producer_name == "pytorch" and any(
        prop.key.startswith(("pkg.torch", "pkg.onnxscript")) for node in graph.node for prop in node.metadata_props
    ):
        raise GraphError(f"{file}: exported by torch's dynamo exporter, which writes an inference graph (BatchNorm folded "
                         f"into Conv, no Dropout); {fix}")  # fmt: skip
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None)
    if opset is None or opset > OPSET:
        raise GraphError(f"{file}: opset {opset}; traincost's rewrites are opset {OPSET}: {fix}")
    initialized = {init.name for init in graph.initializer}
    fed = {value.name for value in graph.input if value.name not in initialized}
    for node in graph.node:
        # opset 14 on says training_mode; before, a training-mode BatchNormalization has its statistics outputs
        training = next((a.i for a in node.attribute if a.name == "training_mode"), 0) == 1 or (
            opset < 14 and len(node.output) > 1
        )
        if node.op_type == "BatchNormalization" and not training:
            raise GraphError(f"{file}: node {node.name!r}: BatchNormalization in inference mode (an eval-mode export); {fix}")
        for slot in _PARAMETER_SLOTS.get(node.op_type, ()):
            if slot >= len(node.input) or not node.input[slot]:
                continue
            tensor = node.input[slot]
            if tensor.startswith("onnx::") and tensor in initialized and node.op_type in ("Conv", "ConvTranspose", "Gemm"):
                raise GraphError(
                    f"{file}: node {node.name!r} reads {tensor!r}, a weight computed by constant folding (BatchNorm "
                    f"folded into it by an eval-mode export); {fix}"
                )
            if tensor in fed:
                raise GraphError(
                    f"{file}: graph input {tensor!r} is a parameter of node {node.name!r} ({node.op_type}); parameters "
                    f"must be initializers: export with export_params=True"
                )
    if opset < OPSET:
        try:
            converted = version_converter.convert_version(model, OPSET)
        except Exception as err:  # the converter raises RuntimeError or its own C++ errors
            raise GraphError(f"{file}: opset {opset} cannot be converted to {OPSET} ({err}); {fix}") from err
        model.CopyFrom(converted)


def _input_specs(
    graph: onnx.GraphProto, fed: Sequence[onnx.ValueInfoProto], given: Sequence[InputSpec] | None, *, batch: int, file: Path
) -> list[InputSpec]:
    """The graph inputs as specs with the batch, checked against ``given`` (shapes without the batch)."""
    names = [value.name for value in fed]
    if given is not None and sorted(spec.name for spec in given) != sorted(names):
        raise ConfigError(f"{file}: inputs {[s.name for s in given]} do not match the model's inputs {names}")
    by_name = {spec.name: spec for spec in given or ()}
    readers = consumers(graph)
    tables = {init.name: tuple(init.dims) for init in graph.initializer}
    specs = []
    for value in fed:
        where = f"{file}: input {value.name!r}"
        dtype = _ONNX_TYPES.get(value.type.tensor_type.elem_type)
        if dtype is None:
            elem = onnx.TensorProto.DataType.Name(value.type.tensor_type.elem_type)
            raise GraphError(f"{where} is {elem}; expected float32 or int64")
        dims = [d.dim_value if d.HasField("dim_value") else None for d in value.type.tensor_type.shape.dim]
        if not dims:
            raise GraphError(f"{where} has no shape; expected (batch, ...)")
        if dims[0] not in (None, batch):
            raise ConfigError(
                f"{where} has a fixed batch of {dims[0]}, not {batch}; export with dynamic_axes={{{value.name!r}: {{0: 'N'}}}}"
            )
        spec = by_name.get(value.name)
        if spec is not None:
            if (
                spec.dtype != dtype
                or len(spec.shape) != len(dims) - 1
                or any(d is not None and d != s for d, s in zip(dims[1:], spec.shape, strict=True))
            ):
                shown = "x".join("?" if d is None else str(d) for d in dims[1:])
                raise ConfigError(
                    f"{where}: the model reads {dtype} of sample shape {shown}; inputs says {spec.dtype} {list(spec.shape)}"
                )
            specs.append(spec.batched(batch))
            continue
        if None in dims[1:]:
            raise ConfigError(f"{where} has a symbolic dimension besides the batch; give its shape in inputs")
        low, high = 0, 0
        if dtype == "int64":
            table = next(
                (
                    tables.get(n.input[0])
                    for n in readers.get(value.name, [])
                    if n.op_type == "Gather" and n.input[1] == value.name
                ),
                None,
            )
            if not table:
                raise ConfigError(f"{where} is int64 and indexes no embedding table; give its value range in inputs")
            high = table[0]
        specs.append(InputSpec(value.name, (batch, *dims[1:]), dtype, low, high))
    return specs


def _make_static(graph: onnx.GraphProto, specs: Sequence[InputSpec]) -> None:
    """Fix every input's shape at the batch and forget the shapes the exporter recorded (they are re-inferred)."""
    by_name = {spec.name: spec for spec in specs}
    for value in graph.input:
        if value.name in by_name:
            value.CopyFrom(helper.make_tensor_value_info(value.name, value.type.tensor_type.elem_type, by_name[value.name].shape))
    for output in graph.output:
        output.CopyFrom(helper.make_empty_tensor_value_info(output.name))
    del graph.value_info[:]


def _parameters(graph: onnx.GraphProto) -> list[str]:
    """The trained tensors: float initializers except BatchNorm's running statistics and settings (scales, ratios)."""
    readers = consumers(graph)
    statistics = {n.input[i] for n in graph.node if n.op_type == "BatchNormalization" for i in (3, 4) if i < len(n.input)}
    return [
        init.name
        for init in graph.initializer
        if init.data_type == onnx.TensorProto.FLOAT
        and init.name not in statistics
        and any(node.op_type not in _SETTING_READERS for node in readers.get(init.name, []))
    ]
