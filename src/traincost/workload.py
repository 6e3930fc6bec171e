"""The Workload IR: one training step (or inference) as two tables, the spine of every study.

``ops`` has one row per operator in execution order:

=================  ======================================================================
column             meaning
=================  ======================================================================
op                 int id, the position in execution order
name               the ONNX node name
op_type            the ONNX operator (after decomposition: a standard op)
kind               conv, conv_dgrad, conv_wgrad, gemm, matmul, eltwise, reduce, pool, norm,
                   softmax, optimizer, layout (zero-cost data rearrangement)
phase              forward, backward, optimizer, recompute
layer              the forward layer the op derives from (its ONNX node name, e.g.
                   ``layer1/layer1.0/conv1/Conv``; ``loss``; ``optimizer`` for shared terms)
B K C OY OX FY FX G  loop dimensions in ZigZag naming. Convolutions and their gradients carry
                   the loop nest of the forward convolution they compute or differentiate
                   (so MACs = B·K·C·OY·OX·FY·FX·G for all three); a GEMM (M×C)·(C×N) with
                   batch count b is B=b, OY=M, K=N, C=C. Other ops: all 1.
stride_y stride_x  the convolution's window geometry (optional; 1 where absent): input pixel
dilation_y         ``stride · o + dilation · f`` feeds output pixel ``o`` through filter tap ``f``,
dilation_x         so a strided or dilated window touches fewer distinct input pixels. Carried by
                   conv, conv_dgrad and conv_wgrad as by their forward convolution; 1 elsewhere
macs               multiply-accumulates
elementwise_ops    non-MAC arithmetic (one per element per elementary operation)
inputs, outputs    tensor ids
=================  ======================================================================

``tensors`` has one row per tensor: ``tensor`` (id), ``name``, ``kind`` (input, activation, weight,
buffer, constant, gradient, weight_grad, optimizer_state, temporary, output), ``shape``,
``dtype_bytes``, ``bytes``, ``producer`` (op id, -1 for graph inputs and initializers),
``consumers`` (op ids), ``saved_for_backward`` (made in the forward pass, or a batch input, and read
by the backward pass; counted per storage), ``updates`` (id of the persistent tensor this one
overwrites in place — an updated parameter, optimizer state or running statistic — else -1),
``view_of`` (optional: id of the tensor whose storage a reshape, transpose or expand of it views, else -1;
a view adds no bytes to the liveness analysis).

Metadata (model, batch, input_shape, optimizer, precision, source, …) travels in the Parquet
schema of both files.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from traincost.errors import GraphError
from traincost.io import atomic_path
from traincost.limits import MAX_TABLE_MIB
from traincost.workload_check import check_tables

__all__ = [
    "Workload",
    "LOOP_DIMS",
    "WINDOW_COLUMNS",
    "OP_KINDS",
    "PHASES",
    "STEP_PHASES",
    "TENSOR_KINDS",
    "write_table",
    "read_table",
    "made_kind",
    "NORM_OPS_PER_ELEMENT",
    "SOFTMAX_OPS_PER_ELEMENT",
    "conv_loops",
    "spatial_loops",
    "window_columns",
]

LOOP_DIMS = ("B", "K", "C", "OY", "OX", "FY", "FX", "G")
WINDOW_COLUMNS = ("stride_y", "stride_x", "dilation_y", "dilation_x")
OP_KINDS = (
    "conv",
    "conv_dgrad",
    "conv_wgrad",
    "gemm",
    "matmul",
    "eltwise",
    "reduce",
    "pool",
    "norm",
    "softmax",
    "optimizer",
    "layout",
)
PHASES = ("forward", "backward", "optimizer", "recompute")
# inference = the forward ops of a Workload; training = the whole step with its optimizer
STEP_PHASES = {"inference": ("forward",), "training": PHASES}
TENSOR_KINDS = (
    "input",
    "activation",
    "weight",
    "buffer",
    "constant",
    "gradient",
    "weight_grad",
    "optimizer_state",
    "temporary",
    "output",
)

_META_KEY = b"traincost"
# the tensors columns the cost model, the liveness analysis and the studies read
_TENSOR_COLUMNS = ("tensor", "name", "kind", "dtype_bytes", "bytes", "producer", "consumers", "updates")
_OP_COLUMNS = ("op", "name", "kind", "phase", "layer", *LOOP_DIMS, "macs", "elementwise_ops", "inputs", "outputs")


def made_kind(phase: str) -> str:
    """The kind of a tensor an op of ``phase`` makes (no other rule names it): an activation in the forward pass or a
    recompute, a gradient in the backward pass, else a temporary (the optimizer's)."""
    match phase:
        case "forward" | "recompute":
            return "activation"
        case "backward":
            return "gradient"
        case _:
            return "temporary"


# Elementary operations per element of the (largest) tensor a norm or a softmax reads or writes, as both lowerings
# count them.
NORM_OPS_PER_ELEMENT = 7  # mean, centre, square, mean, normalise, scale, shift
SOFTMAX_OPS_PER_ELEMENT = 5  # max, subtract, exp, sum, divide (log-softmax: log-subtract)


def window_columns(strides: Sequence[int], dilations: Sequence[int]) -> dict[str, int]:
    """The ``WINDOW_COLUMNS`` of a convolution with ``strides`` and ``dilations`` (one per spatial axis, or one for
    all): a 1-D convolution runs along x (``spatial_loops``), a 3-D one's last two axes are y and x (``conv_loops``)."""
    stride_y, stride_x = ([1, *strides] if len(strides) == 1 else list(strides))[-2:]
    dilation_y, dilation_x = ([1, *dilations] if len(dilations) == 1 else list(dilations))[-2:]
    return {"stride_y": stride_y, "stride_x": stride_x, "dilation_y": dilation_y, "dilation_x": dilation_x}


def conv_loops(
    out_sizes: Sequence[int], kernel: Sequence[int], *, batch: int, out_channels: int, in_channels: int, groups: int
) -> dict[str, int]:
    """The loop dimensions of a convolution: ``out_sizes`` and ``kernel`` over its 1, 2 or 3 spatial axes,
    ``out_channels`` and ``in_channels`` per group.

    A 3-D convolution (a video network's) is the 2-D convolution of each output depth slice over the input slices its
    kernel's depth taps read, stacked as input channels: the output depth one more batch-like output dimension
    (B · OZ), the depth taps more input channels (C · FZ). MACs, weights and outputs are exact; the input operand is
    the tensor's own, each element read once (``cost.optable`` counts what a convolution's windows touch of its input
    tensor), so the reuse of an input slice by the output slices its taps reach is kept.

    Raises:
        GraphError: a convolution over more than 3 spatial axes.
    """
    out_sizes, kernel = tuple(out_sizes), tuple(kernel)
    if len(out_sizes) == 3:
        batch, in_channels = batch * out_sizes[0], in_channels * kernel[0]
        out_sizes, kernel = out_sizes[1:], kernel[1:]
    return {"B": batch, "K": out_channels, "C": in_channels, "G": groups} | spatial_loops(out_sizes, kernel)


def spatial_loops(out_sizes: tuple[int, ...], kernel: tuple[int, ...]) -> dict[str, int]:
    """The spatial loop dimensions of a 1-D (along x) or 2-D convolution with output ``out_sizes`` and ``kernel``.

    Raises:
        GraphError: a convolution over more than 2 spatial axes.
    """
    if len(out_sizes) == 1:
        return {"OX": out_sizes[0], "FX": kernel[0]}
    if len(out_sizes) == 2:
        return {"OY": out_sizes[0], "OX": out_sizes[1], "FY": kernel[0], "FX": kernel[1]}
    raise GraphError(f"{len(out_sizes)}-D convolutions are not lowered (1-D, 2-D and 3-D only)")


def write_table(frame: pd.DataFrame, path: str | os.PathLike[str], meta: Mapping[str, str] | None = None) -> None:
    """Write ``frame`` as Parquet, atomically, with ``meta`` in the schema metadata.

    No timestamps and a fixed row order: the same frame gives byte-identical files.
    """
    table = pa.Table.from_pandas(frame, preserve_index=False)
    schema_meta = dict(table.schema.metadata or {})
    schema_meta[_META_KEY] = json.dumps(dict(meta or {}), sort_keys=True).encode()
    table = table.replace_schema_metadata(schema_meta)
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp)


def read_table(path: str | os.PathLike[str]) -> tuple[pd.DataFrame, dict[str, str]]:
    """Read a table written by ``write_table`` and its metadata, once its footer says it fits ``MAX_TABLE_MIB``.

    Raises:
        GraphError: no such file, not Parquet, larger than the limit, or metadata that is not a JSON object.
    """
    file = Path(path)
    if not file.is_file():
        raise GraphError(f"{file}: no such Parquet file")
    try:
        parquet = pq.ParquetFile(file)
        _check_table_size(file, parquet.metadata)
        table = parquet.read()
    except (pa.ArrowInvalid, OSError) as err:
        raise GraphError(f"{file}: not a readable Parquet file ({err})") from err
    raw = (table.schema.metadata or {}).get(_META_KEY, b"{}")
    try:
        meta = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise GraphError(f"{file}: its metadata {_META_KEY.decode()!r} is not JSON ({err})") from err
    if not isinstance(meta, dict) or not all(isinstance(key, str) for key in meta):
        raise GraphError(f"{file}: its metadata {_META_KEY.decode()!r} is {type(meta).__name__}; expected a JSON object")
    return table.to_pandas(), meta


def _check_table_size(file: Path, metadata: pq.FileMetaData) -> None:
    """Refuse a table whose footer foretells more memory than ``MAX_TABLE_MIB``: a few MB of Parquet can
    decompress to gigabytes."""
    values = nbytes = 0
    for group in range(metadata.num_row_groups):
        row_group = metadata.row_group(group)
        for column in range(row_group.num_columns):
            chunk = row_group.column(column)
            values += chunk.num_values
            nbytes += chunk.total_uncompressed_size
    limit_mib = MAX_TABLE_MIB.get()
    if max(nbytes, 8 * values) > limit_mib * 2**20:
        raise GraphError(
            f"{file}: its footer says {metadata.num_rows:,} rows, {values:,} values, {nbytes:,} bytes uncompressed; "
            f"expected at most {limit_mib:,} MiB (raise it with traincost --max-table-mib)"
        )


@dataclass(frozen=True)
class Workload:
    """A training step (or its forward part) as ops and tensors tables plus metadata."""

    ops: pd.DataFrame
    tensors: pd.DataFrame
    meta: Mapping[str, str] = field(default_factory=dict)

    def write(self, ops_path: str | os.PathLike[str], tensors_path: str | os.PathLike[str]) -> None:
        """Write ``ops.parquet`` and ``tensors.parquet``."""
        write_table(self.ops, ops_path, self.meta)
        write_table(self.tensors, tensors_path, self.meta)

    @classmethod
    def read(cls, ops_path: str | os.PathLike[str], tensors_path: str | os.PathLike[str]) -> Workload:
        """Read a Workload written by ``write``, checked value by value (``traincost.workload_check``)."""
        ops, meta = read_table(ops_path)
        tensors, _ = read_table(tensors_path)
        missing = [c for c in _OP_COLUMNS if c not in ops.columns]
        if missing:
            raise GraphError(f"{ops_path}: not a Workload ops table (missing columns {missing})")
        missing = [c for c in _TENSOR_COLUMNS if c not in tensors.columns]
        if missing:
            raise GraphError(f"{tensors_path}: not a Workload tensors table (missing columns {missing})")
        check_tables(
            ops,
            tensors,
            ops_path=ops_path,
            tensors_path=tensors_path,
            vocabularies={"op_kind": OP_KINDS, "phase": PHASES, "tensor_kind": TENSOR_KINDS},
            loop_dims=LOOP_DIMS,
            window_columns=WINDOW_COLUMNS,
        )
        return cls(ops=ops, tensors=tensors, meta=meta)

    def phase(self, *phases: str) -> pd.DataFrame:
        """The ops of the given phases."""
        return self.ops[self.ops["phase"].isin(phases)]

    @property
    def forward_macs(self) -> int:
        return int(self.phase("forward")["macs"].sum())

    @property
    def total_macs(self) -> int:
        return int(self.ops["macs"].sum())
