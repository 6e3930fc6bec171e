"""A Workload checked as a graph on read: ops and tensors tell the same edges, and op order is topological."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from tests.workloads import conv_relu_workload
from traincost.errors import GraphError
from traincost.workload import LOOP_DIMS, Workload


def _read(workload: Workload, tmp_path: Path) -> Workload:
    ops, tensors = tmp_path / "ops.parquet", tmp_path / "tensors.parquet"
    workload.write(ops, tensors)
    return Workload.read(ops, tensors)


def _relu_chain(n_ops: int) -> Workload:
    """x → relu0 → relu1 → …: op i reads tensor i and writes tensor i + 1."""
    ops = pd.DataFrame(
        [
            {"op": i, "name": f"relu{i}", "op_type": "Relu", "kind": "eltwise", "phase": "forward", "layer": f"relu{i}"}
            | dict.fromkeys(LOOP_DIMS, 1)
            | {"macs": 0, "elementwise_ops": 16, "inputs": [i], "outputs": [i + 1]}
            for i in range(n_ops)
        ]
    )
    tensors = pd.DataFrame(
        [
            {"tensor": t, "name": f"t{t}", "kind": "input" if t == 0 else "activation", "shape": [16], "dtype_bytes": 1,
             "bytes": 16, "producer": t - 1, "consumers": [t] if t < n_ops else [], "saved_for_backward": False,
             "updates": -1}
            for t in range(n_ops + 1)
        ]
    )  # fmt: skip
    return Workload(ops=ops, tensors=tensors, meta={"model": "relu_chain"})


def _reads(workload: Workload, op: int, tensor: int, *, tensors_too: bool = True) -> Workload:
    """``workload`` with ``op`` also reading ``tensor`` (listed among its consumers too with ``tensors_too``)."""
    ops, tensors = workload.ops.copy(), workload.tensors.copy()
    ops.at[op, "inputs"] = [*ops.at[op, "inputs"], tensor]
    if tensors_too:
        tensors.at[tensor, "consumers"] = [*tensors.at[tensor, "consumers"], op]
    return Workload(ops=ops, tensors=tensors, meta=workload.meta)


def test_a_valid_workload_reads(tmp_path: Path) -> None:
    assert len(_read(_relu_chain(5), tmp_path).ops) == 5
    assert len(_read(conv_relu_workload(), tmp_path).ops) == 2


def test_a_cycle_is_named_op_by_op(tmp_path: Path) -> None:
    """The conv reads the ReLU's output, which reads the conv's: conv → relu → conv."""
    with pytest.raises(GraphError, match=r"ops form a cycle, op 0 \('conv'\) → op 1 \('relu'\) → op 0 \('conv'\)"):
        _read(_reads(conv_relu_workload(), 0, 3), tmp_path)


def test_an_op_reading_its_own_output_is_a_cycle(tmp_path: Path) -> None:
    with pytest.raises(GraphError, match=r"cycle, op 2 \('relu2'\) → op 2 \('relu2'\)"):
        _read(_reads(_relu_chain(4), 2, 3), tmp_path)


def test_a_long_cycle_is_named_by_its_ends(tmp_path: Path) -> None:
    ends = r"op 0 \('relu0'\) → op 1 \('relu1'\) → op 2 \('relu2'\) → … 6 more … → op 9 \('relu9'\) → op 0 \('relu0'\);"
    with pytest.raises(GraphError, match=ends):
        _read(_reads(_relu_chain(10), 0, 10), tmp_path)


def test_an_order_that_is_not_topological_names_the_early_reader(tmp_path: Path) -> None:
    """Two independent chains, relu0 → relu1 and relu2: relu1 reading relu2's output is no cycle, but it comes first."""
    chain = _relu_chain(3)
    ops, tensors = chain.ops.copy(), chain.tensors.copy()
    ops.at[2, "inputs"] = [0]  # relu2 reads x, not relu1's output
    tensors.at[0, "consumers"] = [0, 2]
    tensors.at[2, "consumers"] = []
    split = _reads(Workload(ops=ops, tensors=tensors, meta=chain.meta), 1, 3)
    with pytest.raises(GraphError, match=r"column 'inputs', row 1 \('relu1'\): 3; expected ops after the producers .* by op 2"):
        _read(split, tmp_path)


def test_an_edge_in_one_table_only_names_both_files(tmp_path: Path) -> None:
    with pytest.raises(GraphError, match=r"ops.parquet: column 'inputs', row 0 \('relu0'\): 2; expected tensor 2's consumers in"):
        _read(_reads(_relu_chain(3), 0, 2, tensors_too=False), tmp_path)
    chain = _relu_chain(3)
    chain.tensors.at[2, "consumers"] = [2, 0]
    with pytest.raises(GraphError, match=r"tensors.parquet: column 'consumers', row 2 \('t2'\): 0; expected op 0's inputs"):
        _read(chain, tmp_path)


def test_a_producer_that_does_not_list_its_output_is_refused(tmp_path: Path) -> None:
    chain = _relu_chain(3)
    chain.tensors.at[2, "producer"] = 0  # written by relu1, which lists it
    with pytest.raises(GraphError, match=r"column 'producer', row 2 \('t2'\): 0; expected op 1, which lists it"):
        _read(chain, tmp_path)
    chain = _relu_chain(3)
    chain.ops.at[1, "outputs"] = []
    with pytest.raises(GraphError, match=r"column 'producer', row 2 \('t2'\): 1; expected an op that lists tensor 2"):
        _read(chain, tmp_path)
