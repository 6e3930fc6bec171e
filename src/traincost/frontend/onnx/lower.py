"""Decomposed ONNX training graph → Workload IR (see ``traincost.workload`` for the schema)."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping

import numpy as np
import onnx
import pandas as pd
from onnx import helper

from traincost.errors import GraphError
from traincost.frontend.onnx.decompose import is_primitive
from traincost.frontend.onnx.graph import KIND_KEY, LAYER_KEY, PHASE_KEY, check_node_order, model_meta, node_meta
from traincost.frontend.onnx.shapes import TensorType, tensor_types
from traincost.frontend.shared.saved import saved_for_backward
from traincost.workload import (
    LOOP_DIMS,
    NORM_OPS_PER_ELEMENT,
    SOFTMAX_OPS_PER_ELEMENT,
    WINDOW_COLUMNS,
    Workload,
    conv_loops,
    made_kind,
    window_columns,
)

__all__ = ["lower", "op_kind", "saved_for_backward"]

_KIND_BY_OP = {
    "Conv": "conv",
    "ConvTranspose": "conv_dgrad",
    "Gemm": "gemm",
    "MatMul": "matmul",
    "MaxPool": "pool",
    "AveragePool": "pool",
    "GlobalAveragePool": "pool",
    "GlobalMaxPool": "pool",
    "LayerNormalization": "norm",
    "BatchNormalization": "norm",
    "InstanceNormalization": "norm",
    "Softmax": "softmax",
    "LogSoftmax": "softmax",
}
_LAYOUT_OPS = frozenset(
    {
        "Reshape",
        "Transpose",
        "Flatten",
        "Squeeze",
        "Unsqueeze",
        "Concat",
        "Split",
        "Slice",
        "Identity",
        "Shape",
        "Size",
        "Expand",
        "Gather",
        "ConstantOfShape",
        "Constant",
        "Pad",
        "Tile",
        "Range",
    }
)
# Layout ops whose output is a view of their first input's storage, as torch's reshape, flatten,
# squeeze, unsqueeze, transpose, detach and expand are: they allocate nothing.
_VIEW_OPS = frozenset({"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Identity", "Expand"})
# An Expand repeats its input with stride 0 (torch's ``expand``); a reshape that merges such a
# dimension with another has no strides to express it, so torch's ``reshape`` copies (a nearest
# upsampling, the gradient of a global average pool): that Reshape or Flatten has a storage of its own.
_COPIES_A_BROADCAST = frozenset({"Reshape", "Flatten"})
_VIEW_KINDS = frozenset({"activation", "gradient", "temporary"})


def op_kind(node: onnx.NodeProto) -> str:
    """The Workload kind of a primitive node (an annotation from a graph pass wins)."""
    annotated = node_meta(node, KIND_KEY)
    if annotated:
        return annotated
    if node.op_type in _KIND_BY_OP:
        return _KIND_BY_OP[node.op_type]
    if node.op_type.startswith("Reduce") or node.op_type in ("ArgMax", "ArgMin"):
        return "reduce"
    if node.op_type in _LAYOUT_OPS:
        return "layout"
    return "eltwise"


def lower(model: onnx.ModelProto, *, source: str = "") -> Workload:
    """The Workload of a decomposed training graph with recorded shapes.

    Raises:
        GraphError: if a node is not primitive, lacks its phase annotation, or a tensor has no shape;
            or if the nodes are not in topological order (a cycle) or a tensor has two writers.
    """
    graph = model.graph
    check_node_order(graph)
    types = tensor_types(graph)
    meta = model_meta(model)
    params = set(json.loads(meta.get("parameters", "[]")))
    initialized = {i.name for i in graph.initializer}
    buffers = {v.name for v in graph.input if v.name in initialized and v.name not in params}
    fed = {v.name for v in graph.input if v.name not in initialized}

    tensor_ids: dict[str, int] = {}

    def tensor_id(name: str, node: onnx.NodeProto | None = None) -> int:
        if name not in tensor_ids:
            if name not in types:
                where = f"node {node.name!r}" if node is not None else "graph"
                raise GraphError(f"graph {graph.name!r}, {where}: tensor {name!r} has no recorded shape")
            tensor_ids[name] = len(tensor_ids)
        return tensor_ids[name]

    for name in [*(v.name for v in graph.input), *(i.name for i in graph.initializer)]:
        tensor_id(name)

    rows = []
    producer: dict[int, int] = {}
    readers: dict[int, list[int]] = {}
    phase_of_op: list[str] = []
    for index, node in enumerate(graph.node):
        if not is_primitive(node):
            raise GraphError(
                f"graph {graph.name!r}: node {node.name!r} ({node.domain}::{node.op_type}) is not primitive; decompose first"
            )
        phase = node_meta(node, PHASE_KEY)
        if phase is None:
            raise GraphError(f"graph {graph.name!r}: node {node.name!r} has no {PHASE_KEY} annotation")
        ins = [tensor_id(n, node) for n in node.input if n]
        outs = [tensor_id(n, node) for n in node.output if n]
        for t in ins:
            readers.setdefault(t, []).append(index)
        for t in outs:
            producer[t] = index
        kind = op_kind(node)
        dims, macs = _loops(node, kind, types)
        rows.append(
            {
                "op": index,
                "name": node.name,
                "op_type": node.op_type,
                "kind": kind,
                "phase": phase,
                "layer": node_meta(node, LAYER_KEY) or "",
                **dims,
                **_window(node, kind),
                "macs": macs,
                "elementwise_ops": _elementwise_ops(node, kind, types),
                "inputs": ins,
                "outputs": outs,
            }
        )
        phase_of_op.append(phase)
    ops = pd.DataFrame(rows)
    ops = ops.astype({d: "int64" for d in (*LOOP_DIMS, *WINDOW_COLUMNS, "macs", "elementwise_ops")})

    outputs = {v.name for v in graph.output}
    names = sorted(tensor_ids, key=tensor_ids.__getitem__)
    tensor_rows = []
    for name in names:
        t = tensor_ids[name]
        ttype = types[name]
        made_by = producer.get(t, -1)
        read_by = readers.get(t, [])
        kind = _tensor_kind(
            name, made_by=made_by, phase_of_op=phase_of_op, params=params, buffers=buffers, fed=fed, outputs=outputs
        )
        tensor_rows.append(
            {
                "tensor": t,
                "name": name,
                "kind": kind,
                "shape": list(ttype.shape),
                "dtype_bytes": ttype.dtype_bytes,
                "bytes": ttype.numel * ttype.dtype_bytes,
                "producer": made_by,
                "consumers": read_by,
                "saved_for_backward": False,  # per storage, below
                "updates": tensor_ids.get(name.removesuffix(".updated"), -1) if name.endswith(".updated") else -1,
            }
        )
    tensors = pd.DataFrame(tensor_rows).astype(
        {"dtype_bytes": "int64", "bytes": "int64", "producer": "int64", "updates": "int64"}
    )
    tensors["view_of"] = _views(graph, tensor_ids, tensors["kind"].to_numpy())
    tensors["saved_for_backward"] = saved_for_backward(tensors, ops)
    precision = (
        "fp32"
        if types[names[0]].elem_type == onnx.TensorProto.FLOAT
        else helper.tensor_dtype_to_string(types[names[0]].elem_type)
    )
    workload_meta = {**meta, "precision": precision, "source": source}
    return Workload(ops=ops, tensors=tensors, meta=workload_meta)


def _views(graph: onnx.GraphProto, tensor_ids: Mapping[str, int], kinds: np.ndarray) -> np.ndarray:
    """Per tensor id, the id of the tensor whose storage it views through chains of ``_VIEW_OPS``, or -1.

    Only activations, gradients and temporaries are views: a weight gradient, an output or an
    optimizer state is a buffer of its own even when a transpose writes it. A reshape of an
    expanded tensor is a copy (``_COPIES_A_BROADCAST``).
    """
    view_of = np.full(len(kinds), -1, dtype=np.int64)
    broadcast = np.zeros(len(kinds), dtype=bool)  # a view with a stride-0 dimension (of an Expand)
    for node in graph.node:
        if node.op_type not in _VIEW_OPS or not node.output[0]:
            continue
        target, source = tensor_ids[node.output[0]], tensor_ids[node.input[0]]
        if kinds[target] not in _VIEW_KINDS or (broadcast[source] and node.op_type in _COPIES_A_BROADCAST):
            continue
        view_of[target] = view_of[source] if view_of[source] >= 0 else source
        broadcast[target] = broadcast[source] or node.op_type == "Expand"
    return view_of


def _tensor_kind(
    name: str,
    *,
    made_by: int,
    phase_of_op: list[str],
    params: set[str],
    buffers: set[str],
    fed: set[str],
    outputs: set[str],
) -> str:
    base = name.removesuffix(".updated")
    if name in params or (name.endswith(".updated") and base in params):
        return "weight"
    if name.endswith(".updated") and made_by >= 0 and phase_of_op[made_by] == "optimizer":
        return "optimizer_state"
    if name.endswith(".updated"):
        return "buffer"
    if made_by < 0:
        if name in buffers:
            return "buffer"
        if name in fed:
            return "optimizer_state" if name.rsplit(".", 1)[0] in params else "input"
        return "constant"
    if name in outputs:
        return "output"
    if name.endswith("_grad") and base.removesuffix("_grad") in params:
        return "weight_grad"
    return made_kind(phase_of_op[made_by])


def _loops(node: onnx.NodeProto, kind: str, types: Mapping[str, TensorType]) -> tuple[dict[str, int], int]:
    """Loop dimensions (ZigZag naming) and MACs of one node."""
    dims = dict.fromkeys(LOOP_DIMS, 1)
    shape = {name: types[name].shape for name in [*node.input, *node.output] if name}
    match kind:
        case "conv":
            x, w, y = shape[node.input[0]], shape[node.input[1]], shape[node.output[0]]
            group = _attr(node, "group", 1)
            dims |= conv_loops(y[2:], w[2:], batch=x[0], out_channels=y[1] // group, in_channels=w[1], groups=group)
        case "conv_wgrad":
            # Conv(Xᵀ: C/g×(g·N)×H×W, dYᵀ: K×N×OY×OX, g groups) → C/g×K×FY×FX, the forward loop nest re-read.
            xt, dyt, out = shape[node.input[0]], shape[node.input[1]], shape[node.output[0]]
            group = _attr(node, "group", 1)
            dims |= conv_loops(dyt[2:], out[2:], batch=dyt[1], out_channels=dyt[0] // group, in_channels=xt[0], groups=group)
        case "conv_dgrad":
            # ConvTranspose(dY: N×K×OY×OX, W: K×C/g×FY×FX, g groups) → N×C×H×W.
            dy, w = shape[node.input[0]], shape[node.input[1]]
            group = _attr(node, "group", 1)
            dims |= conv_loops(dy[2:], w[2:], batch=dy[0], out_channels=w[0] // group, in_channels=w[1], groups=group)
        case "gemm":
            a, b = shape[node.input[0]], shape[node.input[1]]
            m, reduce_a = (a[1], a[0]) if _attr(node, "transA", 0) else (a[0], a[1])
            n = b[0] if _attr(node, "transB", 0) else b[1]
            dims |= {"OY": m, "C": reduce_a, "K": n}
        case "matmul":
            a, b, y = shape[node.input[0]], shape[node.input[1]], shape[node.output[0]]
            if len(a) < 2 or len(b) < 2:
                raise GraphError(f"node {node.name!r}: MatMul with a 1-D operand is not lowered")
            dims |= {"B": math.prod(y[:-2]), "OY": a[-2], "C": a[-1], "K": b[-1]}
        case _:
            return dims, 0
    return dims, math.prod(dims.values())


def _window(node: onnx.NodeProto, kind: str) -> dict[str, int]:
    """Stride and dilation of the forward convolution a conv op computes or differentiates (1 elsewhere).

    The weight gradient is lowered from the Conv of Xᵀ with dYᵀ whose dilations are the forward strides
    and whose strides are the forward dilations (``gradient_rules``); the data gradient is a
    ConvTranspose with the forward strides and dilations.
    """
    strides, dilations = _ints(node, "strides"), _ints(node, "dilations")
    if kind == "conv_wgrad":
        strides, dilations = dilations, strides
    if kind not in ("conv", "conv_dgrad", "conv_wgrad"):
        strides, dilations = [1], [1]
    return window_columns(strides, dilations)  # an absent attribute is 1 on every axis


def _attr(node: onnx.NodeProto, name: str, default: int) -> int:
    for attribute in node.attribute:
        if attribute.name == name:
            return int(helper.get_attribute_value(attribute))
    return default


def _elementwise_ops(node: onnx.NodeProto, kind: str, types: Mapping[str, TensorType]) -> int:
    """Non-MAC arithmetic of one node (see the constants above for norm and softmax)."""
    out = types[node.output[0]].numel if node.output and node.output[0] else 0
    first_in = types[node.input[0]].numel if node.input and node.input[0] else 0
    match kind:
        case "layout":
            return 0
        case "conv" | "gemm":
            has_bias = len(node.input) > 2 and bool(node.input[2])
            return out if has_bias else 0
        case "conv_dgrad" | "conv_wgrad" | "matmul":
            return 0
        case "reduce":
            return first_in
        case "norm":
            return NORM_OPS_PER_ELEMENT * first_in
        case "softmax":
            return SOFTMAX_OPS_PER_ELEMENT * first_in
        case "pool":
            if node.op_type in ("MaxPool", "AveragePool"):
                return out * int(np.prod(_ints(node, "kernel_shape")))
            if node.op_type in ("ScatterElements", "ScatterND"):
                return types[node.input[2]].numel
            return first_in
        case _:
            if node.op_type in ("ScatterElements", "ScatterND"):
                return types[node.input[2]].numel
            if node.op_type == "Sum":
                return out * max(len(node.input) - 1, 1)
            return out


def _ints(node: onnx.NodeProto, name: str) -> list[int]:
    for attribute in node.attribute:
        if attribute.name == name:
            return [int(v) for v in helper.get_attribute_value(attribute)]
    return [1]
