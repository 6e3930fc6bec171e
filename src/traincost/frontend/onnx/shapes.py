"""Static shapes and element types of every tensor of a graph whose shapes were recorded."""

from __future__ import annotations

from dataclasses import dataclass

import onnx
from onnx import helper

from traincost.errors import GraphError

__all__ = ["TensorType", "tensor_types", "require"]


@dataclass(frozen=True, slots=True)
class TensorType:
    """Shape and element type of one tensor."""

    shape: tuple[int, ...]
    elem_type: int

    @property
    def numel(self) -> int:
        count = 1
        for dim in self.shape:
            count *= dim
        return count

    @property
    def dtype_bytes(self) -> int:
        return helper.tensor_dtype_to_np_dtype(self.elem_type).itemsize

    @property
    def rank(self) -> int:
        return len(self.shape)


def _from_value_info(value: onnx.ValueInfoProto) -> TensorType | None:
    tensor = value.type.tensor_type
    if not tensor.elem_type or not tensor.HasField("shape"):
        return None
    dims = []
    for dim in tensor.shape.dim:
        if not dim.HasField("dim_value"):
            return None
        dims.append(dim.dim_value)
    return TensorType(tuple(dims), tensor.elem_type)


def tensor_types(graph: onnx.GraphProto) -> dict[str, TensorType]:
    """Name → TensorType for every tensor with a static shape (inputs, initializers, value_info, outputs)."""
    types: dict[str, TensorType] = {}
    for init in graph.initializer:
        types[init.name] = TensorType(tuple(init.dims), init.data_type)
    for value in [*graph.input, *graph.value_info, *graph.output]:
        found = _from_value_info(value)
        if found is not None:
            types[value.name] = found
    return types


def require(types: dict[str, TensorType], name: str, node: onnx.NodeProto) -> TensorType:
    """The type of ``name``, or a GraphError naming ``node`` if its shape was not recorded."""
    if name not in types:
        raise GraphError(f"node {node.name!r} ({node.op_type}): tensor {name!r} has no recorded shape")
    return types[name]
