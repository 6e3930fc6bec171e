"""Forward + backward + optimizer in one ONNX graph, from a model exported by ``export``.

ONNX Runtime Training (``onnxruntime.training.artifacts``) builds the gradient graph with the loss
the export recorded (cross-entropy or mean squared error; a user's loss function is in the graph
already). We then remove its gradient accumulators (``InPlaceAccumulatorV2``), keep the raw
gradients ``<param>_grad``, append the optimizer as primitive ops (``optimizer_step.py``, checked by
execution against ``torch.optim``: ``optimizer_check.py``), expose the updated BatchNorm running
statistics, annotate every node with its phase and forward layer, and record every tensor's shape.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import onnx
from onnx import external_data_helper, helper

from traincost.errors import GraphError
from traincost.frontend.onnx.execute import record_shapes
from traincost.frontend.onnx.forward_rewrites import no_gradient_error, rewrite_forward
from traincost.frontend.onnx.graph import (
    IR_VERSION,
    LAYER_KEY,
    LOSS_OUTPUT,
    check_node_order,
    consumers,
    model_meta,
    node_meta,
    producers,
    set_meta,
    set_model_meta,
    set_node_meta,
)
from traincost.frontend.onnx.optimizer_check import check_optimizer
from traincost.frontend.onnx.optimizer_step import append_optimizer
from traincost.frontend.onnx.ort import onnxruntime as ort
from traincost.frontend.shared.optimizer import OptimizerSpec, updated_name

__all__ = ["build_train_step", "forward_layer_name"]

log = logging.getLogger(__name__)

_ACCUMULATOR = "InPlaceAccumulatorV2"
# The loss ORT appends (``artifacts.LossType``) for each built-in loss of the export's metadata (labels ``labels``,
# targets ``target``).
_LOSSES = {"cross_entropy": "CrossEntropyLoss", "token_cross_entropy": "CrossEntropyLoss", "mse": "MSELoss"}
# The file the gradient builder reads the weights from.
_WEIGHTS_FILE = "weights.bin"


def build_train_step(model: onnx.ModelProto, optimizer: OptimizerSpec, *, seed: int = 0) -> onnx.ModelProto:
    """The complete training iteration of ``model`` (written by ``traincost export``).

    Args:
        model: forward graph with parameters as initializers and traincost metadata.
        optimizer: the optimizer to append.
        seed: seed of the batch used to record shapes.

    Returns:
        A graph with inputs ``input``, ``labels``, every parameter (default: its initial value),
        every optimizer state and, for Adam, ``optimizer.step``; outputs ``loss``, every
        ``<param>.updated``, every ``<state>.updated`` and the updated BatchNorm statistics.
    """
    from onnxruntime.training import artifacts  # noqa: PLC0415 (imports torch; here, after traincost.frontend.onnx.ort)

    check_node_order(model.graph)  # ONNX Runtime's account of a cycle or a tensor nothing writes names neither
    meta = model_meta(model)
    if "parameters" not in meta:
        raise GraphError(f"graph {model.graph.name!r}: no traincost.parameters metadata; write it with traincost export")
    params: list[str] = json.loads(meta["parameters"])
    rewritten = rewrite_forward(model, seed=seed)
    initial = {init.name: init for init in rewritten.graph.initializer}
    frozen = [name for name in initial if name not in params]
    loss = meta.get("loss", "cross_entropy")
    loss = artifacts.LossType[_LOSSES[loss]] if loss in _LOSSES else None  # None: the graph's output is the loss
    ort.set_default_logger_severity(3)
    with tempfile.TemporaryDirectory(prefix="traincost-ort-") as tmp, _native_stderr_to(Path(tmp) / "ort.log") as log_file:
        forward = _gradient_builder_input(rewritten, Path(tmp))
        try:
            with contextlib.chdir(tmp):  # where the weights the gradient builder's input points to are
                artifacts.generate_artifacts(
                    forward,
                    requires_grad=params,
                    frozen_params=frozen,
                    loss=loss,
                    optimizer=artifacts.OptimType.AdamW,
                    artifact_directory=tmp,
                )
        except Exception as err:  # ORT raises its own exception classes from C++
            unsupported = no_gradient_error(model.graph.name, str(err))
            if unsupported is not None:
                raise unsupported from err
            detail = log_file.read_text(errors="replace").strip().splitlines()[-3:]
            raise GraphError(f"graph {model.graph.name!r}: ONNX Runtime Training failed: {err} {' | '.join(detail)}") from err
        del forward
        train = onnx.load(str(Path(tmp) / "training_model.onnx"), load_external_data=False)
    graph = train.graph
    _remove_accumulators(graph)
    loss_name = graph.output[0].name
    _rename_tensor(graph, loss_name, LOSS_OUTPUT)
    for name in params + frozen:
        graph.initializer.append(initial[name])
    _annotate(graph)
    _expose_running_stats(graph, frozen)
    writers = producers(graph)
    missing = [p for p in params if f"{p}_grad" not in writers]
    if missing:
        raise GraphError(f"graph {model.graph.name!r}: ONNX Runtime produced no gradient for {missing}")
    readers = consumers(graph)
    owner = {p: _first_forward_layer(readers.get(p, [])) for p in params}
    append_optimizer(graph, [(p, f"{p}_grad", owner[p]) for p in params], optimizer)

    train.ir_version = IR_VERSION
    for prop in model.metadata_props:
        set_meta(train.metadata_props, prop.key, prop.value)
    set_model_meta(
        train,
        optimizer=optimizer.kind,
        optimizer_hyperparameters=json.dumps(optimizer.hyperparameters(), sort_keys=True),
        stage="train_step",
    )
    graph.name = f"{meta.get('model', 'model')}_train_step"
    record_shapes(train, seed=seed)
    check_optimizer(train, optimizer, seed=seed)
    log.info("train step: %d nodes, %d parameters, optimizer %s", len(graph.node), len(params), optimizer.kind)
    return train


@contextlib.contextmanager
def _native_stderr_to(path: Path) -> Iterator[Path]:
    """Send what C++ code writes to stderr into ``path``: the gradient builder logs every graph
    transformer at info level whatever severity is set from Python."""
    sys.stderr.flush()
    saved = os.dup(2)
    with path.open("wb") as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield path
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def forward_layer_name(node_name: str) -> str:
    """The forward layer a node name refers to: ``/layer1/conv1/Conv_Grad/ConvGrad_0`` → ``layer1/conv1/Conv``."""
    name = node_name.split("_Grad/", 1)[0] if "_Grad/" in node_name else node_name
    return name.strip("/")


def _gradient_builder_input(model: onnx.ModelProto, directory: Path) -> onnx.ModelProto:
    """What ``generate_artifacts`` reads: a copy of ``model`` whose initializers point to one file of
    ``directory`` (external data), and in which every LayerNormalization also outputs its mean and
    inverse std-dev.

    ``generate_artifacts`` copies, checks and serialises its input a dozen times: without the weights
    in it, GPT-2 124M's training graph is built in a few seconds and 2 GB less.
    ``generate_artifacts`` fails on LayerNormalization nodes with one output (TOOLCHAIN.md).
    """
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    # small tensors (shapes, pads, axes: what shape inference must read) stay in the graph
    external_data_helper.convert_model_to_external_data(
        copy, all_tensors_to_one_file=True, location=_WEIGHTS_FILE, size_threshold=1024
    )
    external_data_helper.write_external_data_tensors(copy, str(directory))
    for node in copy.graph.node:
        if node.op_type == "LayerNormalization":
            while len(node.output) < 3:
                node.output.append(f"{node.name}/{('mean', 'inv_std_dev')[len(node.output) - 1]}")
    return copy


def _remove_accumulators(graph: onnx.GraphProto) -> None:
    """Drop gradient accumulators, their buffers and flag, and their outputs."""
    dropped_inputs: set[str] = set()
    dropped_outputs: set[str] = set()
    kept = []
    for node in graph.node:
        if node.op_type == _ACCUMULATOR:
            dropped_inputs.update([node.input[0], *node.input[2:]])
            dropped_outputs.update(node.output)
        else:
            kept.append(node)
    del graph.node[:]
    graph.node.extend(kept)
    _filter(graph.input, lambda v: v.name not in dropped_inputs)
    _filter(graph.output, lambda v: v.name not in dropped_outputs)


def _filter(field: object, keep: object) -> None:
    items = [item for item in field if keep(item)]  # type: ignore[attr-defined, operator]
    del field[:]  # type: ignore[attr-defined]
    field.extend(items)  # type: ignore[attr-defined]


def _rename_tensor(graph: onnx.GraphProto, old: str, new: str) -> None:
    for node in graph.node:
        for field in (node.input, node.output):
            for i, name in enumerate(field):
                if name == old:
                    field[i] = new
    for value in list(graph.output) + list(graph.input) + list(graph.value_info):
        if value.name == old:
            value.name = new


def _annotate(graph: onnx.GraphProto) -> None:
    """Mark every node forward (an ancestor of the loss) or backward, and with its forward layer."""
    writers = producers(graph)
    ancestors: set[int] = set()
    stack = [LOSS_OUTPUT]
    seen: set[str] = set()
    while stack:
        tensor = stack.pop()
        if tensor in seen or tensor not in writers:
            continue
        seen.add(tensor)
        node = writers[tensor]
        ancestors.add(id(node))
        stack.extend(node.input)
    for node in graph.node:
        forward = id(node) in ancestors
        layer = forward_layer_name(node.name)
        if node.name.startswith("AccumulateGrad_"):
            source = node.name.removeprefix("AccumulateGrad_").removesuffix("_grad")
            layer = forward_layer_name(writers[source].name) if source in writers else layer
        if node.op_type == "SoftmaxCrossEntropyLoss" or layer.startswith("onnx::SoftmaxCrossEntropyLoss"):
            layer = LOSS_OUTPUT
        set_node_meta(node, phase="forward" if forward else "backward", layer=layer)


def _expose_running_stats(graph: onnx.GraphProto, frozen: list[str]) -> None:
    """Name the running statistics a training-mode BatchNorm writes ``<buffer>.updated`` and output them."""
    for node in graph.node:
        if node.op_type != "BatchNormInternal":
            continue
        for buffer, out in zip(node.input[3:5], node.output[1:3], strict=True):
            if buffer in frozen and out:
                _rename_tensor(graph, out, updated_name(buffer))
                graph.output.append(helper.make_empty_tensor_value_info(updated_name(buffer)))


def _first_forward_layer(readers: list[onnx.NodeProto]) -> str:
    for node in readers:
        if node_meta(node, "traincost.phase") == "forward":
            return node_meta(node, LAYER_KEY) or ""
    return ""
