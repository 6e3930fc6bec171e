"""Random corruptions of a valid workload and a valid hardware YAML (hypothesis, fixed seed).

Whatever is corrupted, `traincost sweep` and `traincost memory` must end in one of two ways: exit 0
with every number of the output finite, or exit 2 with one ``traincost: error:`` line and no output
file. Never a traceback (exit 1), never a hang (each example has a time budget), never NaN or inf in a
table. 250 examples per target, the same on every run (about 20 s for both). Its first runs found a
division by zero in a hardware expression and loop dimensions whose product was not the op's MACs.
A third target draws whole graphs (random DAGs of element-wise ops) and rewires them: an op reading a
later op's output (a cycle, or an order that is not topological), references that point nowhere, and
edges written in one table but not the other; a graph with a cycle must always be refused.
"""

from __future__ import annotations

import graphlib
import math
import subprocess
import tempfile
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.reliability.conftest import REPO, cli, conv_chain_workload
from traincost.workload import LOOP_DIMS, write_table

TINY = REPO / "tests/fixtures/hardware/tiny.yaml"
FUZZ = settings(
    max_examples=250,
    derandomize=True,  # the same examples on every run
    deadline=timedelta(seconds=20),  # a hang fails the example
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
BAD_NUMBERS = st.sampled_from([math.nan, math.inf, -math.inf, -1, -(2**40), 0, 2**62, 0.5, 1e300])


def _outcome_is_clean(result: subprocess.CompletedProcess[str], out: Path) -> None:
    """Exit 0 with a finite table, or exit 2 with one error line and nothing written."""
    assert result.returncode in (0, 2), result.stderr[-3000:]
    if result.returncode == 2:
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("traincost: error: "), result.stderr[-3000:]
        assert not out.exists()
        return
    table = pd.read_parquet(out)
    numbers = table.select_dtypes(include="number").to_numpy(dtype=float)
    assert np.isfinite(numbers).all(), table.loc[:, ~np.isfinite(numbers).all(axis=0)].to_string()


# --- the Workload tables ------------------------------------------------------------------------

OP_NUMBERS = ["op", "B", "K", "C", "OY", "OX", "FY", "FX", "G", "macs", "elementwise_ops"]
TENSOR_NUMBERS = ["tensor", "dtype_bytes", "bytes", "producer", "updates"]
corruption = st.one_of(
    st.tuples(st.just("number"), st.sampled_from(["ops"]), st.sampled_from(OP_NUMBERS), st.integers(0, 2), BAD_NUMBERS),
    st.tuples(st.just("number"), st.sampled_from(["tensors"]), st.sampled_from(TENSOR_NUMBERS), st.integers(0, 5), BAD_NUMBERS),
    st.tuples(
        st.just("reference"),
        st.sampled_from(["ops"]),
        st.sampled_from(["inputs", "outputs"]),
        st.integers(0, 2),
        st.sampled_from([-1, 6, 10**9]),
    ),
    st.tuples(st.just("reference"), st.just("tensors"), st.just("consumers"), st.integers(0, 5), st.sampled_from([-1, 3, 10**9])),
    st.tuples(st.just("empty"), st.sampled_from(["ops", "tensors"]), st.none(), st.none(), st.none()),
    st.tuples(
        st.just("text"), st.sampled_from(["ops", "tensors"]), st.sampled_from(["kind", "phase"]), st.integers(0, 2), st.none()
    ),
)


def _corrupt(tables: dict[str, pd.DataFrame], how: tuple[Any, ...]) -> None:
    what, which, column, row, value = how
    frame = tables[which]
    if row is not None and (row >= len(frame) or column not in frame.columns):
        return  # an earlier corruption emptied the table
    match what:
        case "number":
            if isinstance(value, float):
                frame[column] = frame[column].astype(float)
            frame.at[row, column] = value
        case "reference":
            frame.at[row, column] = [*frame.at[row, column], value]
        case "empty":
            tables[which] = frame.iloc[:0]
        case "text":
            frame.at[row, column] = "sideways"


@pytest.mark.slow  # 250 examples: 25 s
@FUZZ
@given(how=st.lists(corruption, min_size=1, max_size=3))
def test_a_corrupted_workload_is_refused_or_costed_finitely(how: list[tuple[Any, ...]], tmp_path: Path) -> None:
    workload = conv_chain_workload(b=1, k=4, c=3, oy=4, ox=4, fy=3, fx=3, k2=2)
    tables = {"ops": workload.ops.copy(), "tensors": workload.tensors.copy()}
    for one in how:
        _corrupt(tables, one)
    folder = Path(tempfile.mkdtemp(dir=tmp_path))  # hypothesis re-runs examples while it shrinks one
    ops, tensors = folder / "ops.parquet", folder / "tensors.parquet"
    write_table(tables["ops"], ops, workload.meta)
    write_table(tables["tensors"], tensors, workload.meta)
    sweep = folder / "sweep.parquet"
    _outcome_is_clean(
        cli("sweep", "--ops", ops, "--tensors", tensors, "--hardware", TINY, "--step", "inference", "--out", sweep), sweep
    )
    memory = folder / "memory.parquet"
    _outcome_is_clean(cli("memory", "--ops", ops, "--tensors", tensors, "--out", memory), memory)


# --- drawn graphs -------------------------------------------------------------------------------


Graph = tuple[list[list[int]], list[tuple[Any, ...]]]


@st.composite
def graphs(draw: st.DrawFn) -> Graph:
    """What each op of a DAG reads (op i writes tensor i + 1; tensor 0 is the input), and edits to it."""
    n_ops = draw(st.integers(1, 8))
    reads = [draw(st.lists(st.integers(0, op), min_size=1, max_size=3, unique=True)) for op in range(n_ops)]
    op, later = st.integers(0, n_ops - 1), st.integers(0, n_ops - 1)
    edit = st.one_of(
        st.tuples(st.just("read_later"), op, later, st.sampled_from(["both", "ops", "tensors"])),
        st.tuples(st.just("dangling"), op, st.sampled_from([-1, n_ops + 1, 10**9]), st.sampled_from(["ops", "tensors"])),
        st.tuples(st.just("producer"), st.integers(0, n_ops), st.sampled_from([-1, 0, n_ops - 1, n_ops, 10**9]), st.none()),
    )
    return reads, draw(st.lists(edit, max_size=3))


def _graph_tables(reads: list[list[int]], edits: list[tuple[Any, ...]]) -> tuple[pd.DataFrame, pd.DataFrame, bool]:
    """The ops and tensors tables of a drawn graph after its edits, and whether an edit made a cycle in both tables."""
    n_ops = len(reads)
    inputs = [list(ids) for ids in reads]
    consumers: list[list[int]] = [[] for _ in range(n_ops + 1)]
    for op, ids in enumerate(reads):
        for tensor in ids:
            consumers[tensor].append(op)
    producer = [-1, *range(n_ops)]
    for what, op, value, side in edits:
        if what == "read_later":  # op reads the output of op `value` (itself or a later op: not a DAG order)
            tensor = value + 1
            if side in ("both", "ops"):
                inputs[op].append(tensor)
            if side in ("both", "tensors"):
                consumers[tensor].append(op)
        elif what == "dangling":
            (inputs[op] if side == "ops" else consumers[min(op, n_ops)]).append(value)
        else:
            producer[op] = value
    sorter: graphlib.TopologicalSorter[int] = graphlib.TopologicalSorter()
    for op, ids in enumerate(inputs):
        sorter.add(op, *(producer[t] for t in ids if 0 <= t <= n_ops and op in consumers[t] and 0 <= producer[t] < n_ops))
    try:
        sorter.prepare()
        cyclic = False
    except graphlib.CycleError:
        cyclic = True
    ops = pd.DataFrame(
        [
            {"op": op, "name": f"op{op}", "op_type": "Add", "kind": "eltwise", "phase": "forward", "layer": f"l{op}"}
            | dict.fromkeys(LOOP_DIMS, 1)
            | {"macs": 0, "elementwise_ops": 16, "inputs": inputs[op], "outputs": [op + 1]}
            for op in range(n_ops)
        ]
    )
    tensors = pd.DataFrame(
        [
            {"tensor": t, "name": f"t{t}", "kind": "input" if t == 0 else "output" if t == n_ops else "activation",
             "shape": [4, 4], "dtype_bytes": 4, "bytes": 64, "producer": producer[t], "consumers": consumers[t],
             "saved_for_backward": False, "updates": -1}
            for t in range(n_ops + 1)
        ]
    )  # fmt: skip
    return ops, tensors, cyclic


@pytest.mark.slow  # 250 examples: 20 s
@FUZZ
@given(graph=graphs())
def test_a_drawn_graph_with_a_cycle_is_always_refused(graph: Graph, tmp_path: Path) -> None:
    reads, edits = graph
    ops_frame, tensors_frame, cyclic = _graph_tables(reads, edits)
    folder = Path(tempfile.mkdtemp(dir=tmp_path))
    ops, tensors = folder / "ops.parquet", folder / "tensors.parquet"
    write_table(ops_frame, ops, {"model": "drawn"})
    write_table(tensors_frame, tensors, {"model": "drawn"})
    for args, out in (
        (("sweep", "--hardware", TINY, "--step", "inference"), folder / "sweep.parquet"),
        (("memory",), folder / "memory.parquet"),
    ):
        result = cli(*args, "--ops", ops, "--tensors", tensors, "--out", out)
        _outcome_is_clean(result, out)
        if cyclic:
            assert result.returncode == 2, "a graph with a cycle was costed"
        if not edits:
            assert result.returncode == 0, result.stderr


@pytest.mark.slow  # 250 examples: 20 s
@FUZZ
@given(graph=graphs(), data=st.data())
def test_a_drawn_graph_s_totals_never_wrap_around(graph: Graph, data: st.DataObject, tmp_path: Path) -> None:
    """A drawn DAG (its edits left out) whose tensors' bytes and ops' element-wise counts are drawn up to 2^62 each:
    the tables are refused in one line where a total would pass 2^63 - 1, and otherwise every byte total of the
    memory table is non-negative and at most the sum of the tensors' bytes."""
    ops_frame, tensors_frame, _ = _graph_tables(graph[0], [])
    sizes = data.draw(st.lists(st.integers(0, 2**62), min_size=len(tensors_frame), max_size=len(tensors_frame)))
    counts = data.draw(st.lists(st.integers(0, 2**62), min_size=len(ops_frame), max_size=len(ops_frame)))
    tensors_frame["bytes"], ops_frame["elementwise_ops"] = sizes, counts
    folder = Path(tempfile.mkdtemp(dir=tmp_path))
    ops, tensors, out = folder / "ops.parquet", folder / "tensors.parquet", folder / "memory.parquet"
    write_table(ops_frame, ops, {"model": "drawn"})
    write_table(tensors_frame, tensors, {"model": "drawn"})
    result = cli("memory", "--ops", ops, "--tensors", tensors, "--out", out)
    _outcome_is_clean(result, out)
    if sum(sizes) > 2**63 - 1 or sum(counts) > 2**63 - 1:
        assert result.returncode == 2 and "adds up to" in result.stderr, result.stderr
        return
    assert result.returncode == 0, result.stderr
    table = pd.read_parquet(out)
    for column in ("at_peak_bytes", "total_bytes"):
        assert (table[column] >= 0).all() and table[column].sum() <= sum(sizes), table


# --- the hardware YAML --------------------------------------------------------------------------


def _number_paths(data: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a number or expression string of the hardware data (names and lists of names excluded)."""
    if isinstance(data, dict):
        names = ("name", "dataflow", "dim")
        return [p for key, value in data.items() if key not in names for p in _number_paths(value, (*path, key))]
    if isinstance(data, list):
        return [p for i, value in enumerate(data) for p in _number_paths(value, (*path, i))]
    return [path] if isinstance(data, int | float) or (isinstance(data, str) and path and path[-1] != "level") else []


BASE = yaml.safe_load(TINY.read_text())
PATHS = [p for p in _number_paths(BASE) if "runs" not in p and "operands" not in p and "description" not in p]
hardware_value = st.one_of(
    BAD_NUMBERS,
    st.sampled_from(["9 ** 9 ** 9 ** 9", "(" * 400 + "1" + ")" * 400, "1 + " * 2000 + "1", "local_kb ** 64", "1 / 0", "nope"]),
)
text_edit = st.sampled_from(
    [
        ("\nmemories:", "\nword_bytes: 2\nmemories:"),  # a duplicate key
        ("\nmemories:", "\nx: &a [1, 2]\ny: [*a, *a]\nmemories:"),  # an alias
        ("name: tiny", "name: tiny\nname: tiny2"),
    ]
)


@pytest.mark.slow  # 250 examples: 25 s
@FUZZ
@given(
    edits=st.lists(st.tuples(st.sampled_from(PATHS), hardware_value), min_size=1, max_size=3),
    text=st.none() | text_edit,
)
def test_a_corrupted_hardware_yaml_is_refused_or_costed_finitely(
    edits: list[tuple[tuple[Any, ...], Any]], text: tuple[str, str] | None, tmp_path: Path, tiny_tables: tuple[Path, Path]
) -> None:
    data = yaml.safe_load(TINY.read_text())
    for path, value in edits:
        node = data
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
    written = yaml.safe_dump(data, sort_keys=False)
    if text is not None:
        written = written.replace(*text, 1)
    folder = Path(tempfile.mkdtemp(dir=tmp_path))
    hardware = folder / "hardware.yaml"
    hardware.write_text(written)
    ops, tensors = tiny_tables
    out = folder / "sweep.parquet"
    result = cli("sweep", "--ops", ops, "--tensors", tensors, "--hardware", hardware, "--step", "training", "--out", out)
    _outcome_is_clean(result, out)
