"""Reading, writing and editing ONNX graphs, with traincost's per-node annotations.

Every node of a traincost graph carries two metadata entries: ``traincost.phase`` (forward,
backward, optimizer, recompute) and ``traincost.layer`` (the forward layer it derives from, e.g.
``layer1.0.conv1``). Graph passes copy them onto the nodes they create, so the lowering to the
Workload IR never has to guess.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from pathlib import Path

import numpy as np
import onnx
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import DecodeError, Message
from onnx import helper, numpy_helper

from traincost.errors import GraphError, cycle_text, find_cycle
from traincost.io import atomic_path
from traincost.limits import MAX_EXTERNAL_DATA_BYTES

__all__ = [
    "IR_VERSION",
    "OPSET",
    "PHASE_KEY",
    "LAYER_KEY",
    "KIND_KEY",
    "LOSS_OUTPUT",
    "load_onnx",
    "check_external_data",
    "save_onnx",
    "get_meta",
    "set_meta",
    "node_meta",
    "set_node_meta",
    "NodeFactory",
    "producers",
    "consumers",
    "check_node_order",
    "initializer_map",
    "initializer_values",
    "without_initializers",
    "model_meta",
    "set_model_meta",
]

# ONNX Runtime 1.19 reads at most IR version 10; node metadata needs 10.
IR_VERSION = 10
# The standard-domain opset every traincost graph uses.
OPSET = 17

PHASE_KEY = "traincost.phase"
LAYER_KEY = "traincost.layer"
KIND_KEY = "traincost.kind"
# The training step's loss output (``train_graph`` names ONNX Runtime's loss so).
LOSS_OUTPUT = "loss"


def load_onnx(path: str | os.PathLike[str]) -> onnx.ModelProto:
    """Load an ONNX file, raising a GraphError that names the file if it is not ONNX; its external weight data is
    checked (``check_external_data``) before it is read."""
    file = Path(path)
    if not file.is_file():
        raise GraphError(f"{file}: no such ONNX file")
    try:
        model = onnx.load(str(file), load_external_data=False)
    except (DecodeError, onnx.onnx_cpp2py_export.checker.ValidationError, RuntimeError, ValueError) as err:
        raise GraphError(f"{file}: not a readable ONNX model ({err.__class__.__name__}: {err})") from err
    if not model.graph.node:
        raise GraphError(f"{file}: not an ONNX model (the graph has no nodes)")
    check_external_data(model, file)
    try:
        onnx.load_external_data_for_model(model, str(file.parent))
    except (OSError, ValueError, RuntimeError) as err:
        raise GraphError(f"{file}: its external weight data cannot be read ({type(err).__name__}: {err})") from err
    return model


def check_external_data(model: onnx.ModelProto, file: Path) -> None:
    """Each initializer kept in external data names a file beside the model (or below its folder, never outside
    it), and all of them together make traincost read at most ``MAX_EXTERNAL_DATA_BYTES``.

    Raises:
        GraphError: naming the initializer and what its data entry says.
    """
    folder = file.parent.resolve()
    total = 0
    for init in model.graph.initializer:
        if init.data_location != onnx.TensorProto.EXTERNAL:
            continue
        entry = {item.key: item.value for item in init.external_data}
        location = entry.get("location", "")
        data = (folder / location).resolve()
        if not location or Path(location).is_absolute() or not data.is_relative_to(folder):
            raise GraphError(
                f"{file}: initializer {init.name!r} keeps its values in external data {location!r}, outside the "
                "model's folder; expected a file beside the model"
            )
        if not data.is_file():
            raise GraphError(
                f"{file}: initializer {init.name!r} keeps its values in external data {location!r}, which is not "
                f"beside the model; copy it next to {file.name} (or export without external data)"
            )
        try:
            offset, length = int(entry.get("offset", 0)), entry.get("length")
            total += int(length) if length is not None else max(data.stat().st_size - offset, 0)
        except ValueError as err:
            raise GraphError(f"{file}: initializer {init.name!r}: external data entry {entry}: {err}") from err
        if total > MAX_EXTERNAL_DATA_BYTES:
            raise GraphError(
                f"{file}: its external weight data is {total:,} bytes by initializer {init.name!r}; expected at most "
                f"{MAX_EXTERNAL_DATA_BYTES:,} (traincost.limits.MAX_EXTERNAL_DATA_BYTES)"
            )


def save_onnx(model: onnx.ModelProto, path: str | os.PathLike[str]) -> None:
    """Write ``model`` atomically (temporary file, then rename)."""
    with atomic_path(path) as tmp:
        onnx.save(model, str(tmp))


def get_meta(props: Iterable[onnx.StringStringEntryProto], key: str) -> str | None:
    """The value of ``key`` in a metadata_props list, or None."""
    for prop in props:
        if prop.key == key:
            return prop.value
    return None


def set_meta(props: onnx.StringStringEntryProto, key: str, value: str) -> None:
    """Set ``key`` in a repeated metadata_props field, replacing an earlier value."""
    for prop in props:
        if prop.key == key:
            prop.value = value
            return
    entry = props.add()
    entry.key = key
    entry.value = value


def node_meta(node: onnx.NodeProto, key: str) -> str | None:
    """A traincost annotation of ``node`` (None when absent)."""
    return get_meta(node.metadata_props, key)


def set_node_meta(node: onnx.NodeProto, **values: str) -> None:
    """Annotate ``node``: keyword ``phase``, ``layer`` or ``kind`` → ``traincost.<key>``."""
    for key, value in values.items():
        set_meta(node.metadata_props, f"traincost.{key}", value)


def model_meta(model: onnx.ModelProto) -> dict[str, str]:
    """The model-level metadata (``traincost.*`` entries without the prefix)."""
    return {p.key.removeprefix("traincost."): p.value for p in model.metadata_props if p.key.startswith("traincost.")}


def set_model_meta(target: onnx.ModelProto, /, **values: str) -> None:
    """Set model-level ``traincost.<key>`` metadata."""
    for key, value in values.items():
        set_meta(target.metadata_props, f"traincost.{key}", value)


def producers(graph: onnx.GraphProto) -> dict[str, onnx.NodeProto]:
    """Tensor name → the node that writes it."""
    return {out: node for node in graph.node for out in node.output if out}


def check_node_order(graph: onnx.GraphProto) -> None:
    """Check that each tensor has one writer and that every node comes after the writers of its inputs.

    ONNX requires the nodes of a graph in topological order, so a node that reads a tensor written
    by a later node means a cycle (or a graph edited out of order); a tensor that nothing writes and
    that is no graph input or initializer cannot be read at all.

    Raises:
        GraphError: naming the graph, the node and the tensor at fault, and the nodes of a cycle.
    """
    sources = {v.name for v in graph.input} | {i.name for i in graph.initializer}
    writer: dict[str, onnx.NodeProto] = {}
    for node in graph.node:
        for name in node.output:
            if not name:
                continue
            if name in writer or name in sources:
                first = f"node {writer[name].name!r}" if name in writer else "a graph input or initializer"
                raise GraphError(
                    f"graph {graph.name!r}: node {node.name!r} writes {name!r}, already written by {first}; "
                    "expected one writer per tensor"
                )
            writer[name] = node
    written = set(sources)
    for node in graph.node:
        for name in node.input:
            if not name or name in written:
                continue
            if name not in writer:
                raise GraphError(
                    f"graph {graph.name!r}: node {node.name!r} reads {name!r}, which no node writes and which is "
                    "no graph input or initializer; expected every tensor read to be written first"
                )
            cycle = _cycle_through(graph, writer)
            problem = (
                f"the nodes form a cycle, {cycle_text([repr(name) for name in cycle])}"
                if cycle
                else "expected nodes in topological order (the graph is out of order)"
            )
            raise GraphError(
                f"graph {graph.name!r}: node {node.name!r} reads {name!r} before node {writer[name].name!r} writes it; {problem}"
            )
        written.update(node.output)


def _cycle_through(graph: onnx.GraphProto, writer: Mapping[str, onnx.NodeProto]) -> list[str]:
    """The names of nodes on a cycle of ``graph`` (the first repeated last), or ``[]`` if it has none."""
    index = {id(node): position for position, node in enumerate(graph.node)}
    predecessors = {
        position: [index[id(writer[name])] for name in node.input if name in writer] for position, node in enumerate(graph.node)
    }
    return [graph.node[position].name or f"#{position} {graph.node[position].op_type}" for position in find_cycle(predecessors)]


def consumers(graph: onnx.GraphProto) -> dict[str, list[onnx.NodeProto]]:
    """Tensor name → the nodes that read it, in graph order."""
    readers: dict[str, list[onnx.NodeProto]] = {}
    for node in graph.node:
        for name in node.input:
            if name:
                readers.setdefault(name, []).append(node)
    return readers


def initializer_map(graph: onnx.GraphProto) -> dict[str, np.ndarray]:
    """Initializer name → its value as a numpy array."""
    return {init.name: numpy_helper.to_array(init) for init in graph.initializer}


class _InitializerValues(Mapping[str, np.ndarray]):
    """Initializer name → its value, made into an array when first read."""

    def __init__(self, graph: onnx.GraphProto) -> None:
        self._stored = {init.name: init for init in graph.initializer}
        self._arrays: dict[str, np.ndarray] = {}

    def __getitem__(self, name: str) -> np.ndarray:
        if name not in self._arrays:
            self._arrays[name] = numpy_helper.to_array(self._stored[name])
        return self._arrays[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._stored)

    def __len__(self) -> int:
        return len(self._stored)


def initializer_values(graph: onnx.GraphProto) -> Mapping[str, np.ndarray]:
    """``initializer_map`` read lazily: an initializer becomes an array when it is first read, so a pass that
    reads the small ones (shapes, axes) does not copy the weights."""
    return _InitializerValues(graph)


def without_initializers(model: onnx.ModelProto, names: Collection[str]) -> onnx.ModelProto:
    """A copy of ``model`` without the initializers ``names``, which are never copied (``CopyFrom`` then deleting
    them would copy GPT-2 124M's 0.5 GB of weights once more)."""
    copy = onnx.ModelProto()
    for field, value in model.ListFields():
        if field.name != "graph":
            _copy_field(copy, field, value)
    copy.graph.SetInParent()
    for field, value in model.graph.ListFields():
        if field.name != "initializer":
            _copy_field(copy.graph, field, value)
    copy.graph.initializer.extend(init for init in model.graph.initializer if init.name not in names)
    return copy


def _copy_field(target: Message, field: FieldDescriptor, value: object) -> None:
    if field.is_repeated:
        getattr(target, field.name).extend(value)
    elif field.type == FieldDescriptor.TYPE_MESSAGE:
        getattr(target, field.name).CopyFrom(value)
    else:
        setattr(target, field.name, value)


class NodeFactory:
    """Makes nodes that replace or extend one node, with unique names and the same annotations.

    Args:
        prefix: the name every created node and tensor starts with (usually the replaced node's).
        template: the node whose traincost annotations the new nodes inherit.
    """

    def __init__(self, prefix: str, template: onnx.NodeProto | None = None) -> None:
        self.prefix = prefix
        self.template = template
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self._count = 0

    def fresh(self, hint: str) -> str:
        """A new tensor name under this factory's prefix."""
        self._count += 1
        return f"{self.prefix}/{hint}_{self._count}"

    def const(self, value: np.ndarray | float | int | Sequence[int], hint: str = "const", dtype: type | None = None) -> str:
        """Add an initializer holding ``value`` and return its name."""
        array = np.asarray(value, dtype=dtype)
        name = self.fresh(hint)
        self.initializers.append(numpy_helper.from_array(array, name))
        return name

    def op(
        self,
        op_type: str,
        inputs: Sequence[str],
        *,
        outputs: Sequence[str] | None = None,
        kind: str | None = None,
        n_outputs: int = 1,
        **attrs: object,
    ) -> str:
        """Append a standard-domain node and return its (first) output name.

        Args:
            op_type: the ONNX operator.
            inputs: input tensor names ("" for an absent optional input).
            outputs: output names; fresh names are made when omitted.
            kind: a Workload op kind to record on the node (e.g. ``conv_dgrad``).
            n_outputs: how many fresh outputs to make when ``outputs`` is omitted.
            **attrs: node attributes.
        """
        names = list(outputs) if outputs is not None else [self.fresh(op_type) for _ in range(n_outputs)]
        node = helper.make_node(op_type, list(inputs), names, name=self.fresh(op_type), **attrs)
        if self.template is not None:
            node.metadata_props.extend(p for p in self.template.metadata_props if p.key != KIND_KEY)
        if kind is not None:
            set_node_meta(node, kind=kind)
        self.nodes.append(node)
        return names[0]
