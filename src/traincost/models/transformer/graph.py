"""The ops and tensors of a training step, appended in execution order and turned into a Workload."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pandas as pd

from traincost.workload import LOOP_DIMS, WINDOW_COLUMNS, Workload

__all__ = ["OpGraph", "OpRow", "TensorRow"]


@dataclass(slots=True)
class TensorRow:
    """One row of the tensors table (producer, consumers and ``saved_for_backward`` come from the ops)."""

    name: str
    kind: str
    shape: list[int]
    dtype_bytes: int
    updates: int = -1

    @property
    def elements(self) -> int:
        return math.prod(self.shape)


@dataclass(frozen=True, slots=True)
class OpRow:
    """One row of the ops table."""

    name: str
    op_type: str
    kind: str
    phase: str
    layer: str
    dims: Mapping[str, int]
    macs: int
    elementwise_ops: int
    inputs: list[int]
    outputs: list[int]


@dataclass(slots=True)
class OpGraph:
    """The ops and tensors of a step, appended in execution order."""

    ops: list[OpRow] = field(default_factory=list)
    tensors: list[TensorRow] = field(default_factory=list)

    def tensor(self, name: str, kind: str, shape: Sequence[int], dtype_bytes: int) -> int:
        """Add a tensor and return its id."""
        self.tensors.append(TensorRow(name=name, kind=kind, shape=[int(n) for n in shape], dtype_bytes=dtype_bytes))
        return len(self.tensors) - 1

    def op(
        self,
        name: str,
        op_type: str,
        kind: str,
        *,
        phase: str,
        layer: str,
        inputs: Sequence[int],
        outputs: Sequence[int],
        dims: Mapping[str, int] | None = None,
        elementwise_ops: int = 0,
    ) -> None:
        """Add an op; ``dims`` are its loop dimensions (MACs = their product), absent for non-MAC ops."""
        loops = dict.fromkeys(LOOP_DIMS, 1) | dict(dims or {})
        macs = math.prod(loops.values()) if dims else 0
        self.ops.append(OpRow(name, op_type, kind, phase, layer, loops, macs, int(elementwise_ops), list(inputs), list(outputs)))

    def elements(self, tensor: int) -> int:
        """Elements of a tensor."""
        return self.tensors[tensor].elements

    def workload(self, meta: Mapping[str, str]) -> Workload:
        """The Workload: producers, consumers and ``saved_for_backward`` derived from the ops."""
        producer = [-1] * len(self.tensors)
        consumers: list[list[int]] = [[] for _ in self.tensors]
        for index, op in enumerate(self.ops):
            for t in op.outputs:
                producer[t] = index
            for t in dict.fromkeys(op.inputs):
                consumers[t].append(index)
        phases = [op.phase for op in self.ops]
        saved = [
            row.kind in ("input", "activation")
            and (made < 0 or phases[made] == "forward")
            and any(phases[reader] == "backward" for reader in readers)
            for row, made, readers in zip(self.tensors, producer, consumers, strict=True)
        ]
        ops = pd.DataFrame(
            {
                "op": range(len(self.ops)),
                "name": [op.name for op in self.ops],
                "op_type": [op.op_type for op in self.ops],
                "kind": [op.kind for op in self.ops],
                "phase": phases,
                "layer": [op.layer for op in self.ops],
                **{dim: [op.dims[dim] for op in self.ops] for dim in LOOP_DIMS},
                **{column: [1] * len(self.ops) for column in WINDOW_COLUMNS},  # no convolutions
                "macs": [op.macs for op in self.ops],
                "elementwise_ops": [op.elementwise_ops for op in self.ops],
                "inputs": [op.inputs for op in self.ops],
                "outputs": [op.outputs for op in self.ops],
            }
        ).astype({d: "int64" for d in (*LOOP_DIMS, *WINDOW_COLUMNS, "macs", "elementwise_ops")})
        tensors = pd.DataFrame(
            {
                "tensor": range(len(self.tensors)),
                "name": [t.name for t in self.tensors],
                "kind": [t.kind for t in self.tensors],
                "shape": [t.shape for t in self.tensors],
                "dtype_bytes": [t.dtype_bytes for t in self.tensors],
                "bytes": [t.elements * t.dtype_bytes for t in self.tensors],
                "producer": producer,
                "consumers": consumers,
                "saved_for_backward": saved,
                "updates": [t.updates for t in self.tensors],
                "view_of": -1,  # every tensor is its own storage: weights are read transposed in place
            }
        ).astype(dict.fromkeys(("tensor", "dtype_bytes", "bytes", "producer", "updates", "view_of"), "int64"))
        return Workload(ops=ops, tensors=tensors, meta=dict(meta))
