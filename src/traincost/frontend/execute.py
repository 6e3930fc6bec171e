"""Executing traincost graphs in ONNX Runtime: the oracle every graph pass is checked against."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper

from traincost.errors import GraphError
from traincost.frontend.onnx_graph import initializer_map, model_meta
from traincost.models.signature import InputSpec, draw_tensors

__all__ = ["run", "example_feeds", "record_shapes", "max_relative_error"]

_PROVIDERS = ["CPUExecutionProvider"]
# How many tensors ``record_shapes`` fetches per execution.
_RECORD_CHUNK = 600


def _session(model: onnx.ModelProto) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.log_severity_level = 3
    # Run the graph as written: no fusion may hide a wrong rewrite.
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    try:
        return ort.InferenceSession(model.SerializeToString(), sess_options=options, providers=_PROVIDERS)
    except Exception as err:  # onnxruntime raises its own exception classes for invalid graphs
        raise GraphError(f"graph {model.graph.name!r}: ONNX Runtime cannot load it ({err})") from err


def run(
    model: onnx.ModelProto,
    feeds: Mapping[str, np.ndarray],
    outputs: Sequence[str] | None = None,
) -> dict[str, np.ndarray]:
    """Execute ``model`` once and return the named outputs (all graph outputs by default).

    Intermediate tensors can be asked for by name: they are made graph outputs of a copy.
    """
    graph_outputs = [o.name for o in model.graph.output]
    wanted = list(outputs) if outputs is not None else graph_outputs
    extra = [name for name in wanted if name not in graph_outputs]
    if extra:
        model_copy = onnx.ModelProto()
        model_copy.CopyFrom(model)
        model_copy.graph.output.extend(helper.make_empty_tensor_value_info(name) for name in extra)
        model = model_copy
    session = _session(model)
    accepted = {i.name for i in session.get_inputs()}
    values = session.run(wanted, {k: v for k, v in feeds.items() if k in accepted})
    return dict(zip(wanted, values, strict=True))


def example_feeds(model: onnx.ModelProto, *, seed: int, states: str = "zeros") -> dict[str, np.ndarray]:
    """A batch and optimizer states for a traincost graph, drawn from the inputs and labels its export recorded.

    Parameters keep the values stored in the graph. Optimizer states are zeros (the first step, as
    ``torch.optim`` starts) or, with ``states="random"``, uniform in [0, 1) so that a rewrite
    check exercises every term of the update.

    Args:
        model: a graph written by ``traincost export`` or a later stage.
        seed: seed of the batch (and of random states).
        states: "zeros" or "random".
    """
    meta = model_meta(model)
    if "inputs" not in meta or "labels" not in meta:
        raise GraphError(f"graph {model.graph.name!r}: no traincost.inputs metadata; was it written by traincost export?")
    specs = [InputSpec.from_json(spec) for spec in json.loads(meta["inputs"])]
    drawn = draw_tensors([*specs, InputSpec.from_json(json.loads(meta["labels"]))], seed=seed)
    feeds: dict[str, np.ndarray] = {name: tensor.numpy() for name, tensor in drawn.items()}
    initialized = set(initializer_map(model.graph))
    rng = np.random.default_rng(seed)
    for value in model.graph.input:
        if value.name in feeds or value.name in initialized:
            continue
        dims = [d.dim_value for d in value.type.tensor_type.shape.dim]
        if value.name == "optimizer.step":
            feeds[value.name] = np.array(1.0, dtype=np.float32)
        elif states == "random":
            feeds[value.name] = rng.random(dims, dtype=np.float32)
        else:
            feeds[value.name] = np.zeros(dims, dtype=np.float32)
    return feeds


def record_shapes(model: onnx.ModelProto, feeds: Mapping[str, np.ndarray]) -> None:
    """Write the shape and element type of every node output into ``model.graph.value_info``.

    ONNX shape inference cannot type com.microsoft ops, so the shapes are recorded by running the
    graph once; this is exact for the fixed-shape graphs traincost builds.
    """
    graph = model.graph
    names = [out for node in graph.node for out in node.output if out]
    typed = {}
    # Outputs are fetched a slice at a time: ONNX Runtime frees every tensor not asked for, so
    # memory stays near one execution's even for GPT-2 124M with Adam.
    for first in range(0, len(names), _RECORD_CHUNK):
        chunk = names[first : first + _RECORD_CHUNK]
        values = run(model, feeds, chunk)
        for name in chunk:
            elem = helper.np_dtype_to_tensor_dtype(values[name].dtype)
            typed[name] = helper.make_tensor_value_info(name, elem, values[name].shape)
        del values
    for output in graph.output:
        if output.name in typed:
            output.CopyFrom(typed.pop(output.name))
    del graph.value_info[:]
    graph.value_info.extend(typed.values())


def max_relative_error(expected: np.ndarray, actual: np.ndarray, *, magnitude: float = 0.0) -> float:
    """max |actual - expected| / max(max |expected|, magnitude, tiny): a scale-aware error of a whole tensor.

    ``magnitude`` is the size float32 rounding scales with when it exceeds the values themselves,
    e.g. the largest sum of absolute terms for a tensor of sums that cancel.
    """
    expected = np.asarray(expected, dtype=np.float64)
    actual = np.asarray(actual, dtype=np.float64)
    if expected.shape != actual.shape:
        return float("inf")
    if expected.size == 0:
        return 0.0
    scale = max(float(np.max(np.abs(expected))), magnitude, 1e-12)
    return float(np.max(np.abs(actual - expected)) / scale)
