"""Executing traincost graphs in ONNX Runtime: the oracle every graph pass is checked against."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np
import onnx
from onnx import helper, numpy_helper

from traincost.errors import GraphError
from traincost.frontend.onnx.graph import initializer_map, model_meta, producers, without_initializers
from traincost.frontend.onnx.ort import onnxruntime as ort
from traincost.signature import InputSpec, draw_tensors

__all__ = ["Executable", "run", "example_feeds", "record_shapes", "intra_op_threads", "weightless"]

_PROVIDERS = ["CPUExecutionProvider"]
# Initializers with at least this many elements are fed as inputs (shape tensors stay initializers).
_WEIGHT_MIN_ELEMENTS = 4096
# Ops whose output shape depends on the values of their data or float inputs.
_DATA_SHAPED_OPS = frozenset({"NonZero", "Unique", "Compress", "NonMaxSuppression", "Resize", "Upsample"})
# Element types of the inputs an output shape can depend on (shapes, indices, axes, sizes).
_INDEX_TYPES = frozenset({onnx.TensorProto.INT64, onnx.TensorProto.INT32})
# ONNX Runtime's type strings → numpy dtypes.
_NUMPY_TYPES = {
    "tensor(float)": "float32",
    "tensor(double)": "float64",
    "tensor(float16)": "float16",
    "tensor(int64)": "int64",
    "tensor(int32)": "int32",
    "tensor(int8)": "int8",
    "tensor(uint8)": "uint8",
    "tensor(bool)": "bool",
}


def intra_op_threads() -> int:
    """The threads an ONNX Runtime session computes on: ``OMP_NUM_THREADS`` where it is a positive integer (Snakemake
    sets it to a job's ``threads``, and torch follows it too), else 0, ONNX Runtime's default of one per core."""
    value = os.environ.get("OMP_NUM_THREADS", "")
    return int(value) if value.isdigit() and int(value) > 0 else 0


def _session(model: onnx.ModelProto) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.log_severity_level = 3
    # Run the graph as written: no fusion may hide a wrong rewrite.
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    # Without the arena, what a run frees goes back to the system: GPT-2 124M's peak stays one run's.
    options.enable_cpu_mem_arena = False
    options.intra_op_num_threads = intra_op_threads()
    try:
        return ort.InferenceSession(model.SerializeToString(), sess_options=options, providers=_PROVIDERS)
    except Exception as err:  # onnxruntime raises its own exception classes for invalid graphs
        raise GraphError(f"graph {model.graph.name!r}: ONNX Runtime cannot load it ({err})") from err


def weightless(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of ``model`` whose large initializers (the weights) are typed graph inputs instead; their data is
    not copied."""
    large = _large(model)
    skeleton = without_initializers(model, {init.name for init in large})
    declared = {value.name for value in skeleton.graph.input}
    typed = [helper.make_tensor_value_info(init.name, init.data_type, list(init.dims)) for init in large]
    skeleton.graph.input.extend(value for value in typed if value.name not in declared)
    return skeleton


def _large(model: onnx.ModelProto) -> list[onnx.TensorProto]:
    """The initializers fed as inputs (at least ``_WEIGHT_MIN_ELEMENTS`` elements)."""
    return [init for init in model.graph.initializer if math.prod(init.dims) >= _WEIGHT_MIN_ELEMENTS]


class Executable:
    """A graph to execute many times: its weights as arrays, fed as inputs to sessions of its skeleton.

    The skeleton is the graph without its large initializers (each becomes a graph input), so a
    session for another set of outputs, or for the part of the graph they depend on, serialises the
    structure only, and ONNX Runtime reads the weights from the arrays instead of keeping a copy.
    A weight becomes an array when a session first reads it (typing a graph's tensors reads none).
    The session of the last set of outputs is kept.
    """

    __slots__ = ("skeleton", "_stored", "_arrays", "_session")

    def __init__(self, model: onnx.ModelProto, *, weights: Mapping[str, np.ndarray] | None = None) -> None:
        """Args:
        model: the graph.
        weights: arrays already made for initializers of the same names and values (those of the
            graph ``model`` was rewritten from, or ``model`` is a skeleton of): shared, not copied.
        """
        shared = weights or {}
        self.skeleton = weightless(model)
        fed = {value.name for value in self.skeleton.graph.input}
        self._arrays = {name: value for name, value in shared.items() if name in fed}
        self._stored = {init.name: init for init in _large(model) if init.name not in self._arrays}
        self._session: tuple[tuple[str, ...], ort.InferenceSession] | None = None

    @property
    def weights(self) -> dict[str, np.ndarray]:
        """Every large initializer as an array (to share with an Executable of a rewritten graph)."""
        return self.arrays(list(self._stored))

    def arrays(self, names: Iterable[str]) -> dict[str, np.ndarray]:
        """The arrays of the large initializers, made for those of ``names`` not made yet."""
        for name in names:
            if name in self._stored:
                self._arrays[name] = numpy_helper.to_array(self._stored.pop(name))
        return self._arrays

    def run(self, feeds: Mapping[str, np.ndarray], outputs: Sequence[str] | None = None) -> dict[str, np.ndarray]:
        """Execute the graph once and return the named tensors (all graph outputs by default)."""
        wanted = tuple(outputs) if outputs is not None else tuple(o.name for o in self.skeleton.graph.output)
        if self._session is None or self._session[0] != wanted:
            self._session = None  # one session at a time
            self._session = (wanted, _session(self._with_outputs(wanted)))
        session = self._session[1]
        accepted = {i.name for i in session.get_inputs()}
        given = {name: value for name, value in self.arrays(accepted).items() if name in accepted}
        given |= {name: value for name, value in feeds.items() if name in accepted}
        values = session.run(list(wanted), given)
        return dict(zip(wanted, values, strict=True))

    def inferred_types(
        self, names: Sequence[str], declared: Sequence[onnx.ValueInfoProto] = ()
    ) -> dict[str, onnx.ValueInfoProto]:
        """The tensors of ``names`` that ONNX Runtime's shape inference types completely, without executing.

        Only the types ``declared`` are given (not those recorded in the graph). Rank-0 tensors are
        left out: ONNX Runtime reports an unknown shape as an empty one.
        """
        skeleton = onnx.ModelProto()
        skeleton.CopyFrom(self.skeleton)
        del skeleton.graph.value_info[:]
        skeleton.graph.value_info.extend(declared)
        del skeleton.graph.output[:]
        skeleton.graph.output.extend(helper.make_empty_tensor_value_info(name) for name in names)
        typed = {}
        for value in _session(skeleton).get_outputs():
            dims = value.shape
            if value.type in _NUMPY_TYPES and dims and all(isinstance(d, int) for d in dims):
                elem = helper.np_dtype_to_tensor_dtype(np.dtype(_NUMPY_TYPES[value.type]))
                typed[value.name] = helper.make_tensor_value_info(value.name, elem, dims)
        return typed

    def _with_outputs(self, names: Sequence[str]) -> onnx.ModelProto:
        """The skeleton with only the nodes ``names`` depend on, and ``names`` as its outputs."""
        nodes = self.skeleton.graph.node
        writer = {out: index for index, node in enumerate(nodes) for out in node.output if out}
        needed: set[int] = set()
        stack = list(names)
        while stack:
            index = writer.get(stack.pop())
            if index is not None and index not in needed:
                needed.add(index)
                stack.extend(nodes[index].input)
        model = onnx.ModelProto()
        model.CopyFrom(self.skeleton)
        graph = model.graph
        kept = [node for index, node in enumerate(graph.node) if index in needed]
        del graph.node[:]
        graph.node.extend(kept)
        typed = {value.name: value for value in [*graph.output, *graph.value_info]}
        del graph.output[:]
        graph.output.extend(typed.get(name) or helper.make_empty_tensor_value_info(name) for name in names)
        return model


def run(
    model: onnx.ModelProto,
    feeds: Mapping[str, np.ndarray],
    outputs: Sequence[str] | None = None,
) -> dict[str, np.ndarray]:
    """Execute ``model`` once and return the named outputs (all graph outputs by default).

    Intermediate tensors can be asked for by name. To execute a graph more than once, make an
    ``Executable`` of it.
    """
    return Executable(model).run(feeds, outputs)


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
    feeds = draw_tensors([*specs, InputSpec.from_json(json.loads(meta["labels"]))], seed=seed)
    initialized = {init.name for init in model.graph.initializer}
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


def record_shapes(model: onnx.ModelProto, *, seed: int) -> None:
    """Write the shape and element type of every node output into ``model.graph.value_info``.

    ONNX shape inference types the standard ops; ONNX Runtime's, when it loads the graph, the
    com.microsoft ops ONNX cannot. An op whose output shape depends on values (an embedding's
    GatherGrad reads it from a shape tensor) or a rank-0 output ONNX Runtime cannot tell from an
    unknown shape is typed by executing the op alone, on the values of its small integer inputs
    (shapes, indices, axes: fetched by executing what they depend on) and zeros for its float and
    large ones (data); then ONNX Runtime types what follows, until every tensor is typed. Ops whose
    output shape depends on data or float values (``_DATA_SHAPED_OPS``) are executed in the whole
    graph. Exact for the fixed-shape graphs traincost builds. What is executed runs on the batch and
    optimizer states of ``example_feeds(model, seed=seed)``, drawn only if anything is executed.
    """
    drawn: list[dict[str, np.ndarray]] = []

    def feeds() -> dict[str, np.ndarray]:
        if not drawn:
            drawn.append(example_feeds(model, seed=seed))
        return drawn[0]

    graph = model.graph
    names = [out for node in graph.node for out in node.output if out]
    executable = Executable(model)
    typed = _onnx_types(executable.skeleton)
    typed |= executable.inferred_types([name for name in names if name not in typed], list(typed.values()))
    writers = producers(graph)
    sources = {value.name: value for value in executable.skeleton.graph.input}
    constants = initializer_map(executable.skeleton.graph)
    while unknown := [name for name in names if name not in typed]:
        ready = [n for n in unknown if all(not i or i in typed or i in sources or i in constants for i in writers[n].input)]
        frontier = list({id(writers[n]): writers[n] for n in ready or unknown}.values())
        for node in frontier:
            outputs = [out for out in node.output if out]
            if node.op_type in _DATA_SHAPED_OPS or not ready:
                values = executable.run(feeds(), outputs)
            else:
                values = _run_alone(node, executable, feeds, typed | sources, constants)
            for name in outputs:
                elem = helper.np_dtype_to_tensor_dtype(values[name].dtype)
                typed[name] = helper.make_tensor_value_info(name, elem, values[name].shape)
        typed |= executable.inferred_types([name for name in names if name not in typed], list(typed.values()))
    for output in graph.output:
        if output.name in typed:
            output.CopyFrom(typed.pop(output.name))
    del graph.value_info[:]
    graph.value_info.extend(typed[name] for name in names if name in typed)


def _onnx_types(model: onnx.ModelProto) -> dict[str, onnx.ValueInfoProto]:
    """The tensors ONNX shape inference types completely (rank 0 included)."""
    inferred = onnx.shape_inference.infer_shapes(model, data_prop=True)
    typed = {}
    for value in inferred.graph.value_info:
        tensor = value.type.tensor_type
        if tensor.elem_type and tensor.HasField("shape") and all(d.HasField("dim_value") for d in tensor.shape.dim):
            typed[value.name] = value
    return typed


def _run_alone(
    node: onnx.NodeProto,
    executable: Executable,
    feeds: Callable[[], Mapping[str, np.ndarray]],
    types: Mapping[str, onnx.ValueInfoProto],
    constants: Mapping[str, np.ndarray],
) -> dict[str, np.ndarray]:
    """The outputs of ``node`` executed alone, on the values of its small integer inputs and zeros for the others
    (``feeds`` gives the graph's feeds, called only if an integer input is fed or computed from them)."""
    inputs = [name for name in dict.fromkeys(node.input) if name and name not in constants]
    dims = {name: [d.dim_value for d in types[name].type.tensor_type.shape.dim] for name in inputs}
    small = [
        name
        for name in inputs
        if math.prod(dims[name]) < _WEIGHT_MIN_ELEMENTS and types[name].type.tensor_type.elem_type in _INDEX_TYPES
    ]
    fed = {value.name for value in executable.skeleton.graph.input}
    weights = executable.arrays(small)
    values = {name: weights[name] for name in small if name in weights}
    values |= {name: feeds()[name] for name in small if name not in values and name in fed}
    missing = [name for name in small if name not in values]
    if missing:
        values |= executable.run(feeds(), missing)
    for name in inputs:
        if name not in values:
            elem = types[name].type.tensor_type.elem_type
            values[name] = np.zeros(dims[name], dtype=helper.tensor_dtype_to_np_dtype(elem))
    outputs = [out for out in node.output if out]
    graph = helper.make_graph(
        [node],
        f"{node.name}_alone",
        [types[name] for name in inputs],
        [helper.make_empty_tensor_value_info(name) for name in outputs],
        initializer=[numpy_helper.from_array(constants[name], name) for name in dict.fromkeys(node.input) if name in constants],
    )
    alone = helper.make_model(graph, opset_imports=list(executable.skeleton.opset_import))
    alone.ir_version = executable.skeleton.ir_version
    values = _session(alone).run(outputs, values)
    return dict(zip(outputs, values, strict=True))
