"""The Workload IR checked on read: every number and reference a stage will trust.

``check_tables`` is what ``Workload.read`` runs after the column check. It fails on the first problem
with one line naming the file, the column, the first offending row and what was expected: empty
tables, ids that are not ``0 … n-1`` in order, integer columns stored as another dtype (a NaN turns an
integer column into floats), negative counts or bytes, loop dimensions below 1, a kind or phase
outside the vocabulary, MACs that are not the product of the loop dimensions, and op or tensor
references that point nowhere. Then the two tables are checked as one graph: each op's ``inputs`` and
``outputs`` agree with each tensor's ``consumers`` and ``producer``, and every op comes after the
producers of what it reads, so the op ids are a topological order. Where they are not, the error names
an op on the cycle (a graph with a cycle has no order at all) or the op that reads too early.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np
import pandas as pd

from traincost.errors import GraphError, cycle_text, find_cycle

__all__ = ["check_tables"]

_INTEGER_COLUMNS = {
    "ops": (
        *("op", "B", "K", "C", "OY", "OX", "FY", "FX", "G", "macs", "elementwise_ops"),
        *("stride_y", "stride_x", "dilation_y", "dilation_x"),
    ),
    "tensors": ("tensor", "dtype_bytes", "bytes", "producer", "updates"),
}


def check_tables(
    ops: pd.DataFrame,
    tensors: pd.DataFrame,
    *,
    ops_path: str | os.PathLike[str],
    tensors_path: str | os.PathLike[str],
    vocabularies: dict[str, Sequence[str]],
    loop_dims: Sequence[str],
    window_columns: Sequence[str] = (),
) -> None:
    """Raise ``GraphError`` on the first value of ``ops`` / ``tensors`` the IR does not allow.

    Args:
        vocabularies: the allowed values of ``ops.kind``, ``ops.phase`` and ``tensors.kind``, keyed
            ``op_kind``, ``phase`` and ``tensor_kind``.
        loop_dims: the loop-dimension columns (each ≥ 1 where present).
        window_columns: the optional stride and dilation columns (each ≥ 1 where present).
    """
    op_table, tensor_table = _Table(ops, ops_path, "ops", "op"), _Table(tensors, tensors_path, "tensors", "tensor")
    for table in (op_table, tensor_table):
        table.check_shape()
    for column in loop_dims:
        op_table.at_least(column, 1, "a loop dimension ≥ 1")
    for column in window_columns:
        op_table.at_least(column, 1, "a stride or dilation ≥ 1")
    for column in ("macs", "elementwise_ops"):
        op_table.at_least(column, 0, "a count ≥ 0")
    if all(column in ops.columns for column in loop_dims):
        op_table.macs_match(loop_dims)
    tensor_table.at_least("bytes", 0, "bytes ≥ 0")
    tensor_table.at_least("dtype_bytes", 1, "bytes per element ≥ 1")
    tensor_table.total_fits("bytes", "bytes")
    for column in ("macs", "elementwise_ops"):
        op_table.total_fits(column, "operations")
    op_table.within("kind", vocabularies["op_kind"])
    op_table.within("phase", vocabularies["phase"])
    tensor_table.within("kind", vocabularies["tensor_kind"])
    n_ops, n_tensors = len(ops), len(tensors)
    for column in ("inputs", "outputs"):
        op_table.ids_in(column, (0, n_tensors), f"a tensor id of {tensors_path} (0 … {n_tensors - 1})")
    tensor_table.ids_in("consumers", (0, n_ops), f"an op id of {ops_path} (0 … {n_ops - 1})")
    tensor_table.ids_in("producer", (-1, n_ops), f"-1 or an op id of {ops_path} (0 … {n_ops - 1})")
    tensor_table.ids_in("updates", (-1, n_tensors), f"-1 or a tensor id (0 … {n_tensors - 1})")
    _check_graph(op_table, tensor_table)


def _pairs(cells: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A column of id lists as (row, id) pairs: each id and the row whose list holds it."""
    lengths = np.fromiter((len(ids) for ids in cells), dtype=np.int64, count=len(cells))
    rows = np.repeat(np.arange(len(cells)), lengths)
    ids = np.concatenate([np.asarray(cell) for cell in cells if len(cell)]) if lengths.sum() else rows
    return rows, ids


def _first_missing(wanted: np.ndarray, present: np.ndarray) -> int | None:
    """The position in ``wanted`` of the first code not in ``present``, or None."""
    missing = ~np.isin(wanted, present)
    return int(np.argmax(missing)) if missing.any() else None


def _check_graph(ops: _Table, tensors: _Table) -> None:
    """Ops and tensors tell the same edges, and op order is a topological order (ids checked in range before)."""
    n_ops = len(ops.frame)
    op_names = ops.frame["name"].to_numpy() if "name" in ops.frame.columns else np.arange(n_ops).astype(str)
    producer = tensors.frame["producer"].to_numpy(dtype=np.int64)
    # the ids are integers in range (checked before); int64, so that tensor * n_ops + op cannot overflow
    read_op, read_tensor = (ids.astype(np.int64) for ids in _pairs(ops.frame["inputs"].to_numpy()))
    consumed_tensor, consumer = (ids.astype(np.int64) for ids in _pairs(tensors.frame["consumers"].to_numpy()))
    reads, consumed = read_tensor * n_ops + read_op, consumed_tensor * n_ops + consumer
    at = _first_missing(reads, consumed)
    if at is not None:
        tensor = int(read_tensor[at])
        ops.fail("inputs", int(read_op[at]), tensor, f"tensor {tensor}'s consumers in {tensors.path} to list this op")
    at = _first_missing(consumed, reads)
    if at is not None:
        op = int(consumer[at])
        tensors.fail("consumers", int(consumed_tensor[at]), op, f"op {op}'s inputs in {ops.path} to list this tensor")
    write_op, written = (ids.astype(np.int64) for ids in _pairs(ops.frame["outputs"].to_numpy()))
    wrong = producer[written] != write_op
    if wrong.any():
        at = int(np.argmax(wrong))
        tensor = int(written[at])
        tensors.fail("producer", tensor, int(producer[tensor]), f"op {int(write_op[at])}, which lists it in its outputs")
    produced = np.flatnonzero(producer >= 0)
    at = _first_missing(produced * n_ops + producer[produced], written * n_ops + write_op)
    if at is not None:
        tensor = int(produced[at])
        tensors.fail("producer", tensor, int(producer[tensor]), f"an op that lists tensor {tensor} in its outputs")
    early = producer[consumed_tensor] >= consumer
    if not early.any():
        return
    predecessors: dict[int, list[int]] = {}
    for source, target in zip(producer[consumed_tensor].tolist(), consumer.tolist(), strict=True):
        predecessors.setdefault(target, []).append(source)
    cycle = find_cycle(predecessors)
    if cycle:
        path = cycle_text([f"op {op} ({op_names[op]!r})" for op in cycle])
        raise GraphError(f"{ops.path}: the ops form a cycle, {path}; expected an acyclic graph")
    at = int(np.argmax(early))
    tensor, op = int(consumed_tensor[at]), int(consumer[at])
    writer = int(producer[tensor])
    ops.fail("inputs", op, tensor, f"ops after the producers of their inputs (tensor {tensor} is written by op {writer})")


_INT64_MAX = 2**63 - 1


class _Table:
    """One table of the IR and its file, with the checks that fail naming both."""

    def __init__(self, frame: pd.DataFrame, path: str | os.PathLike[str], what: str, id_column: str) -> None:
        self.frame, self.path, self.what, self.id_column = frame, path, what, id_column

    def fail(self, column: str, row: int, value: object, expected: str) -> None:
        name = self.frame["name"].iloc[row] if "name" in self.frame.columns else None
        label = f"row {row}" + (f" ({name!r})" if isinstance(name, str) else "")
        raise GraphError(f"{self.path}: column {column!r}, {label}: {value!r}; expected {expected}")

    def fail_first(self, column: str, bad: np.ndarray, values: np.ndarray, expected: str) -> None:
        if bad.any():
            row = int(np.argmax(bad))
            self.fail(column, row, values[row], expected)

    def check_shape(self) -> None:
        """Rows, integer dtypes and ids ``0 … n-1`` in order."""
        if self.frame.empty:
            raise GraphError(f"{self.path}: the {self.what} table has no rows; a Workload has at least one op and one tensor")
        for column in _INTEGER_COLUMNS[self.what]:
            if column in self.frame.columns:
                self.integer(column)
        ids = self.frame[self.id_column].to_numpy()
        self.fail_first(self.id_column, ids != np.arange(len(ids)), ids, f"ids unique and numbering the rows 0 … {len(ids) - 1}")

    def integer(self, column: str) -> None:
        values = self.frame[column]
        if pd.api.types.is_integer_dtype(values.dtype) and not pd.api.types.is_bool_dtype(values.dtype):
            return
        numbers = pd.to_numeric(values, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
        bad = ~np.isfinite(numbers) | (numbers != np.round(numbers))
        row = int(np.argmax(bad)) if bad.any() else 0
        self.fail(column, row, values.iloc[row], f"an integer (the column is {values.dtype}; the schema says int64)")

    def at_least(self, column: str, low: int, expected: str) -> None:
        if column in self.frame.columns:
            values = self.frame[column].to_numpy()
            self.fail_first(column, values < low, values, expected)

    def total_fits(self, column: str, unit: str) -> None:
        """The column's sum (exact, over Python integers) within int64, so that no total of them, a peak of live
        bytes or a phase's MACs, wraps around; the columns are non-negative integers (checked before)."""
        if column not in self.frame.columns:
            return
        values = self.frame[column].to_numpy()
        if float(values.sum(dtype=np.float64)) < 2.0**62:  # no exact sum needed far from the limit
            return
        total = sum(int(v) for v in values.tolist())
        if total > _INT64_MAX:
            raise GraphError(
                f"{self.path}: column {column!r} adds up to {total:,} {unit}, past {_INT64_MAX:,}, the largest total "
                "traincost keeps (int64); expected a workload whose totals fit"
            )

    def macs_match(self, loop_dims: Sequence[str]) -> None:
        """``macs`` is the product of the loop dimensions (exact integers), or 0 with every dimension 1."""
        product = np.prod(self.frame[list(loop_dims)].to_numpy(dtype=object), axis=1)
        macs = self.frame["macs"].to_numpy(dtype=object)
        bad = ~(((macs > 0) & (product == macs)) | ((macs == 0) & (product == 1)))
        expected = f"the product of {'·'.join(loop_dims)} (0 for an op whose dimensions are all 1)"
        self.fail_first("macs", bad.astype(bool), macs, expected)

    def within(self, column: str, allowed: Sequence[str]) -> None:
        values = self.frame[column]
        self.fail_first(column, ~values.isin(allowed).to_numpy(), values.to_numpy(), f"one of {', '.join(allowed)}")

    def ids_in(self, column: str, bounds: tuple[int, int], expected: str) -> None:
        """Every id of ``column`` (an int column, or a column of id lists) in ``[low, high)``."""
        low, high = bounds
        cells = self.frame[column].to_numpy()
        if cells.dtype != object:
            self.fail_first(column, (cells < low) | (cells >= high), cells, expected)
            return
        rows, flat = _pairs(cells)
        if not len(flat):
            return
        if not np.issubdtype(flat.dtype, np.integer):
            self.fail(column, int(rows[0]), list(cells[rows[0]]), "a list of integer ids")
        bad = (flat < low) | (flat >= high)
        if bad.any():
            position = int(np.argmax(bad))
            self.fail(column, int(rows[position]), int(flat[position]), expected)
