"""The Workload as flat numpy arrays, the form the vectorised cost model and scheduler read.

Built once per workload (not per configuration). Three things happen here:

* every MAC op (conv, conv_dgrad, conv_wgrad, gemm, matmul) is seen as ``g`` independent GEMMs
  ``O[M×N] = X[M×R] · S[R×N]``: ``S`` is the operand a weight-stationary array keeps (the weight;
  for ``conv_wgrad`` the output gradient), ``X`` the streamed operand, ``O`` the output. Which loop
  dimensions make up M, N and R depends on the kind (``ROLES``);
* views (``VIEW_OP_TYPES``: reshapes and shape reads) are free: their output aliases their input,
  so tensors are renamed to the tensor they alias and the view ops are dropped from scheduling;
* constants (shape vectors, scalars baked into the graph) are free to read.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from traincost.workload import LOOP_DIMS, Workload

__all__ = [
    "OpTable",
    "COST_FIELDS",
    "op_table",
    "resolve_views",
    "last_uses",
    "operand_tensors",
    "flat_ids",
    "MAC_KINDS",
    "ROLES",
    "VIEW_OP_TYPES",
    "SPLIT_DIM",
    "ROW_SPLIT_KINDS",
    "OWN_LOOPS",
    "window_span",
    "window_spans",
]

MAC_KINDS = ("conv", "conv_dgrad", "conv_wgrad", "gemm", "matmul")

# (M dims, N dims, R dims) of the GEMM view of each MAC kind, in the loop dims of the Workload
# (a conv gradient carries the loop nest of its forward conv).
ROLES: dict[str, tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]] = {
    "conv": (("B", "OY", "OX"), ("K",), ("C", "FY", "FX")),
    "conv_dgrad": (("B", "OY", "OX"), ("C",), ("K", "FY", "FX")),
    "conv_wgrad": (("C", "FY", "FX"), ("K",), ("B", "OY", "OX")),
    "gemm": (("B", "OY", "OX"), ("K",), ("C",)),
    "matmul": (("B", "OY", "OX"), ("K",), ("C",)),
}
# The loop a PE axis's dimension names in a conv gradient read as the primitive it decomposes into (``docs/operators.md``),
# in the loop dims the gradient carries from its forward: the data gradient is a ConvTranspose of dY and W, whose output
# channels are the forward's C and whose reduction is its K; the weight gradient a Conv of Xᵀ and dYᵀ, whose channels
# are the batch, whose output pixels are the filter's taps and whose filter is dY's pixels. Each loop keeps its role
# (an axis that unrolls a forward's reduction unrolls the primitive's). Dims not listed name the same loop. MONET maps
# the data gradient so: "we expand Stream's operator library to support training-critical primitives such as
# ConvTranspose" (section III); it does not say how it maps the weight gradient, whose reading here is our decomposition's.
OWN_LOOPS: dict[str, dict[str, str]] = {
    "conv_dgrad": {"K": "C", "C": "K"},
    "conv_wgrad": {"B": "C", "C": "B", "OY": "FY", "OX": "FX", "FY": "OY", "FX": "OX"},
}
# the output-channel dimension that tensor parallelism splits across cores
SPLIT_DIM = {"conv": "K", "conv_dgrad": "C", "conv_wgrad": "K", "gemm": "K", "matmul": "K"}
# the kinds whose output rows (OY) tensor parallelism may split across cores instead, as Stream 2.1.1 splits a
# convolution's (its inter-core tiling D2, the ONNX parser's OY): a weight gradient's OY is a reduction and a data
# gradient's output rows are not the forward's
ROW_SPLIT_KINDS = ("conv", "gemm", "matmul")
# operators that only relabel memory: zero cost, output aliases input 0
VIEW_OP_TYPES = frozenset({"Reshape", "Unsqueeze", "Squeeze", "Flatten", "Identity", "Shape"})


# The per-op fields of ``OpTable`` that the cost of an op on a core reads (``mac_cost``, ``simd_cost``); the others say
# where the op sits in the graph (its id, its tensors)
COST_FIELDS = (
    *("kind", "phase", "dims", "macs", "elementwise_ops", "m", "n", "r", "groups", "window", "stride", "dilation"),
    *("s_elems", "x_elems", "o_elems", "in_elems"),
)


@dataclass(frozen=True, slots=True)
class OpTable:
    """Per-op arrays (length = scheduled ops) and per-tensor arrays of one Workload."""

    op: np.ndarray  # Workload op id
    kind: np.ndarray  # str
    phase: np.ndarray  # str
    dims: dict[str, np.ndarray]  # loop dim -> int64
    macs: np.ndarray
    elementwise_ops: np.ndarray
    m: np.ndarray  # GEMM view (MAC ops; 1 elsewhere), per group
    n: np.ndarray
    r: np.ndarray
    groups: np.ndarray
    window: np.ndarray  # filter taps FY·FX that the streamed operand slides over (1 for GEMMs)
    stride: np.ndarray  # (ops, 2): a convolution's stride along Y and X (1 elsewhere; its gradients carry the forward's)
    dilation: np.ndarray  # (ops, 2): the same, its dilation
    s_elems: np.ndarray  # stationary-like operand (input 1) elements
    x_elems: np.ndarray  # streamed operand (input 0) elements the op reads: the pixels its windows touch
    o_elems: np.ndarray  # output elements
    in_elems: np.ndarray  # all inputs that are not constants (element-wise ops)
    x_tensor: np.ndarray  # tensor id of the streamed operand (MAC ops), -1 if none
    s_tensor: np.ndarray  # tensor id of the stationary-like operand (MAC ops), -1 if none
    inputs: tuple[tuple[int, ...], ...]  # tensor ids after aliasing, constants removed
    outputs: tuple[tuple[int, ...], ...]
    tensor_elems: np.ndarray  # per tensor id
    tensor_rows: np.ndarray  # per tensor id: its row extent (H of NCHW, the sequence of B×S×D), the unit of row tiling
    tensor_batch: np.ndarray  # per tensor id: its batch extent (N of NCHW, B of B×S×D, else 1), the unit of batch tiling
    tensor_persistent: np.ndarray  # bool: lives in off-chip memory across steps (weights, states, inputs)
    tensor_step_output: np.ndarray  # bool: must be written off-chip (updated params and states, loss)
    last_use: np.ndarray  # per tensor: index (in this table) of its last reader, -1 if none
    views: int  # view ops dropped

    def __len__(self) -> int:
        return len(self.op)

    @property
    def is_mac(self) -> np.ndarray:
        return np.isin(self.kind, MAC_KINDS)

    def sum_over_outputs(self, per_tensor: np.ndarray) -> np.ndarray:
        """Per op: the sum of a per-tensor value over the tensors it writes."""
        writer, written = flat_ids(self.outputs)
        return np.bincount(writer, weights=per_tensor[written], minlength=len(self))

    def distinct_rows(self, index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Ops ``index`` grouped by what their cost on a core reads (``COST_FIELDS``: kind, phase, loop dims, GEMM
        view, windows, operand and output sizes): the positions in ``index`` of the first op of each group, in order,
        and per op its group. Ops alike in all of these cost alike on a core, so a layer that a network repeats is
        costed once (``OpCosts.of``)."""
        columns = [self.dims[d][index] for d in sorted(self.dims)]
        columns += [getattr(self, name)[index] for name in COST_FIELDS if name != "dims"]
        rows = [column.tolist() if column.ndim == 1 else list(map(tuple, column.tolist())) for column in columns]
        first: dict[tuple, int] = {}
        group = np.array([first.setdefault(key, len(first)) for key in zip(*rows, strict=True)], dtype=np.int64)
        return np.unique(group, return_index=True)[1], group

    def producers(self) -> np.ndarray:
        """Per tensor id: the position of the op that writes it, -1 for graph inputs and parameters."""
        producer = np.full(len(self.tensor_elems), -1, dtype=np.int64)
        writer, written = flat_ids(self.outputs)
        producer[written] = writer
        return producer


def flat_ids(per_op: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    """The (op position, tensor id) pairs of per-op tensor lists (``OpTable.inputs`` or ``outputs``), as two arrays."""
    counts = np.fromiter(map(len, per_op), dtype=np.int64, count=len(per_op))
    tensors = np.fromiter(itertools.chain.from_iterable(per_op), dtype=np.int64, count=int(counts.sum()))
    return np.repeat(np.arange(len(per_op)), counts), tensors


def op_table(workload: Workload, *, phases: tuple[str, ...] = ("forward", "backward", "optimizer", "recompute")) -> OpTable:
    """Flatten the ops of ``phases`` (all by default; ``("forward",)`` is inference) into arrays."""
    ops = workload.ops[workload.ops["phase"].isin(phases)].sort_values("op")
    tensors = workload.tensors.set_index("tensor").sort_index()
    n_tensors = int(tensors.index.max()) + 1
    elems = np.zeros(n_tensors, dtype=np.int64)
    elems[tensors.index.to_numpy()] = (tensors["bytes"] // tensors["dtype_bytes"].clip(lower=1)).to_numpy()
    kinds = np.full(n_tensors, "", dtype=object)
    kinds[tensors.index.to_numpy()] = tensors["kind"].to_numpy()
    updates = np.full(n_tensors, -1, dtype=np.int64)
    updates[tensors.index.to_numpy()] = tensors["updates"].to_numpy()
    constant = kinds == "constant"
    rows = np.ones(n_tensors, dtype=np.int64)
    rows[tensors.index.to_numpy()] = [_row_extent(list(shape)) for shape in tensors["shape"]]
    batch = np.ones(n_tensors, dtype=np.int64)
    batch[tensors.index.to_numpy()] = [_batch_extent(list(shape)) for shape in tensors["shape"]]
    shapes: list[tuple[int, ...]] = [()] * n_tensors
    for t, shape in zip(tensors.index.to_numpy(), tensors["shape"], strict=True):
        shapes[t] = tuple(int(v) for v in shape)

    alias = np.arange(n_tensors)
    rows_in_phase = list(ops.itertuples(index=False))
    kept, inputs, outputs = resolve_views(((r.op_type, r.inputs, r.outputs) for r in rows_in_phase), alias, constant)
    keep_rows = [rows_in_phase[i] for i in kept]
    views = len(rows_in_phase) - len(kept)
    kind = np.array([row.kind for row in keep_rows], dtype=object)
    dims = {d: np.array([getattr(row, d) for row in keep_rows], dtype=np.int64) for d in LOOP_DIMS}
    macs = np.array([row.macs for row in keep_rows], dtype=np.float64)

    gemm = _gemm_views(keep_rows, dims=dims, macs=macs, elems=elems, shapes=shapes, alias=alias, constant=constant)
    in_elems = np.array([sum(elems[t] for t in ids) for ids in inputs], dtype=np.float64)
    o_elems = np.where(np.isin(kind, MAC_KINDS), gemm["o_elems"], [sum(elems[t] for t in ids) for ids in outputs])

    persistent = np.isin(kinds, ["input", "weight", "buffer", "optimizer_state"])
    step_output = (updates >= 0) | (kinds == "output")
    return OpTable(
        op=np.array([row.op for row in keep_rows], dtype=np.int64),
        kind=kind,
        phase=np.array([row.phase for row in keep_rows], dtype=object),
        dims=dims,
        macs=macs,
        elementwise_ops=np.array([row.elementwise_ops for row in keep_rows], dtype=np.float64),
        m=gemm["m"],
        n=gemm["n"],
        r=gemm["r"],
        groups=gemm["groups"],
        window=gemm["window"],
        stride=gemm["stride"],
        dilation=gemm["dilation"],
        s_elems=gemm["s_elems"],
        x_elems=gemm["x_elems"],
        o_elems=o_elems.astype(np.float64),
        in_elems=in_elems,
        x_tensor=gemm["x_tensor"].astype(np.int64),
        s_tensor=gemm["s_tensor"].astype(np.int64),
        inputs=inputs,
        outputs=outputs,
        tensor_elems=elems,
        tensor_rows=rows,
        tensor_batch=batch,
        tensor_persistent=persistent,
        tensor_step_output=step_output,
        last_use=last_uses(inputs, n_tensors),
        views=views,
    )


def resolve_views(
    ops: Iterable[tuple[str, Sequence[int], Sequence[int]]], alias: np.ndarray, constant: np.ndarray
) -> tuple[list[int], tuple[tuple[int, ...], ...], tuple[tuple[int, ...], ...]]:
    """Drop the view ops of ``ops`` (op type, input ids, output ids), in program order: their outputs alias
    their first input (``alias`` is updated in place). Returns the positions of the ops kept and their
    inputs and outputs after aliasing, constants removed."""
    kept, inputs, outputs = [], [], []
    names, fixed = alias.tolist(), constant.tolist()  # Python lists: read element by element

    def live(ids: Sequence[int]) -> tuple[int, ...]:
        return tuple(dict.fromkeys(names[t] for t in ids if not fixed[names[t]]))

    for index, (op_type, ins, outs) in enumerate(ops):
        if op_type in VIEW_OP_TYPES and len(ins):
            for t in outs:
                names[t] = names[ins[0]]
            continue
        kept.append(index)
        inputs.append(live(ins))
        outputs.append(live(outs))
    alias[:] = names
    return kept, tuple(inputs), tuple(outputs)


def last_uses(inputs: Sequence[Sequence[int]], n_tensors: int) -> np.ndarray:
    """Per tensor id: the position of the last op that reads it, -1 if none."""
    last = [-1] * n_tensors
    for i, ids in enumerate(inputs):
        for t in ids:
            last[t] = i
    return np.array(last, dtype=np.int64)


def _gemm_views(
    rows: list,
    *,
    dims: dict[str, np.ndarray],
    macs: np.ndarray,
    elems: np.ndarray,
    shapes: Sequence[tuple[int, ...]],
    alias: np.ndarray,
    constant: np.ndarray,
) -> dict[str, np.ndarray]:
    """M, N, R, groups, window (taps, strides, dilations) and operand sizes of every MAC op (1 and 0 for the
    others)."""
    size = len(rows)
    out = {key: np.ones(size) for key in ("m", "n", "r", "groups", "window")}
    out |= {key: np.zeros(size) for key in ("s_elems", "x_elems", "o_elems")}
    out |= {key: np.full(size, -1.0) for key in ("x_tensor", "s_tensor")}
    out |= {key: np.ones((size, 2), dtype=np.int64) for key in ("stride", "dilation")}
    for i, row in enumerate(rows):
        if row.kind not in ROLES:
            continue
        ins = list(row.inputs)
        _, n_dims, r_dims = ROLES[row.kind]
        n = float(np.prod([dims[d][i] for d in n_dims]))
        r = float(np.prod([dims[d][i] for d in r_dims]))
        s_elems = float(elems[ins[1]]) if len(ins) > 1 else n * r
        # a batched GEMM whose "stationary" operand differs per batch (attention) is g GEMMs
        groups = max(1.0, round(s_elems / (n * r)))
        out["n"][i], out["r"][i], out["groups"][i], out["s_elems"][i] = n, r, groups, s_elems
        out["m"][i] = max(1.0, macs[i] / (n * r * groups))
        if row.kind in ("conv", "conv_dgrad", "conv_wgrad"):
            for key in ("stride", "dilation"):
                out[key][i] = [int(getattr(row, f"{key}_{axis}", 1)) for axis in "yx"]
        out["x_elems"][i] = _touched_elems(
            row, int(elems[ins[0]]), shapes[ins[0]], dims, i, stride=out["stride"][i], dilation=out["dilation"][i]
        )
        out["o_elems"][i] = elems[row.outputs[0]]
        out["window"][i] = dims["FY"][i] * dims["FX"][i] if row.kind in ("conv", "conv_dgrad") else 1
        out["x_tensor"][i], out["s_tensor"][i] = operand_tensors(ins, alias, constant)
    return out


def window_span(stride: int, outputs: int, dilation: int, taps: int) -> int:
    """Distinct input positions ``stride · o + dilation · f`` for ``o < outputs``, ``f < taps``.

    The size of a partially relevant dimension, which ZigZag's ``calc_pr_dimension_size`` gives in closed
    form (that form over-counts when windows do not overlap, e.g. one output of a dilated filter); counted
    exactly here, once per op. A 1×1 convolution of stride 2 over 56 rows touches 28 of them.
    """
    return int(window_spans(stride, outputs, dilation, taps)[outputs])


@functools.cache
def window_spans(stride: int, outputs: int, dilation: int, taps: int) -> np.ndarray:
    """Index ``b`` (0 .. ``outputs``): the distinct input positions the first ``b`` outputs' windows touch
    (``window_span`` of ``b`` outputs, each window's positions added to those already touched)."""
    first = np.zeros(outputs + 1, dtype=np.int64)
    touched = np.zeros(stride * (outputs - 1) + dilation * (taps - 1) + 1, dtype=bool)
    offsets = dilation * np.arange(taps)
    for o in range(outputs):
        window = stride * o + offsets
        first[o + 1] = first[o] + int(np.count_nonzero(~touched[window]))
        touched[window] = True
    return first


def _touched_elems(
    row: Any,
    elems: int,
    shape: tuple[int, ...],
    dims: dict[str, np.ndarray],
    i: int,
    *,
    stride: np.ndarray,
    dilation: np.ndarray,
) -> int:
    """The elements of a convolution's streamed input (``elems`` of ``shape``, N×C×H×W, N×C×L or N×C×D×H×W) its
    windows read, at its ``stride`` and ``dilation`` along Y and X (a 3-D convolution's depth taps read every slice).

    The forward convolution and its weight gradient read the input pixels the strided, dilated windows
    touch (at most the tensor's: padding is not read); the data gradient streams dY, all of which it reads.
    """
    if row.kind not in ("conv", "conv_wgrad") or len(shape) < 3:
        return elems
    extent = (1, *shape[2:]) if len(shape) == 3 else shape[-2:]
    touched = 1
    for a, (axis, size) in enumerate(zip("YX", extent, strict=True)):
        out, taps = int(dims[f"O{axis}"][i]), int(dims[f"F{axis}"][i])
        touched *= min(size, window_span(int(stride[a]), out, int(dilation[a]), taps))
    return elems // max(1, extent[0] * extent[1]) * touched


def operand_tensors(ins: Sequence[int], alias: np.ndarray, constant: np.ndarray) -> tuple[int, int]:
    """Tensor ids (after aliasing) of a MAC op's streamed (input 0) and stationary (input 1) operands; -1 for
    a missing or constant one."""
    x, s = -1, -1
    if len(ins) and not constant[alias[ins[0]]]:
        x = int(alias[ins[0]])
    if len(ins) > 1 and not constant[alias[ins[1]]]:
        s = int(alias[ins[1]])
    return x, s


def _batch_extent(shape: list[int]) -> int:
    """Samples a layer-fused schedule may tile a tensor by: N of an N×C×H×W map or B of a B×S×D sequence, else 1."""
    return max(1, int(shape[0])) if len(shape) in (3, 4) else 1


def _row_extent(shape: list[int]) -> int:
    """Rows a layer-fused schedule tiles a tensor by: H of an N×C×H×W map, S of a B×S×D sequence, else 1."""
    match len(shape):
        case 4:
            return max(1, int(shape[2]))
        case 3:
            return max(1, int(shape[1]))
    return 1
