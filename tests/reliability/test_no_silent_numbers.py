"""No silent wrong number: totals that cannot wrap around, memories of at least one word, counts the scheduler can
hold, and no complex parameter costed on its real part alone; each refused in one line where it cannot be costed."""

from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.reliability.conftest import EDGE_TPU, cli, importable, one_error_line
from tests.workloads import conv_relu_workload

REPO = Path(__file__).resolve().parents[2]
TINY = REPO / "tests/fixtures/hardware/tiny.yaml"
INT64_MAX = 2**63 - 1


def _memory(tmp_path: Path, tensor_bytes: list[int]) -> tuple[subprocess.CompletedProcess[str], Path]:
    """``traincost memory`` on the conv -> relu workload with its tensors' bytes set to ``tensor_bytes``."""
    workload = conv_relu_workload()
    tensors = workload.tensors.copy()
    tensors["bytes"] = tensor_bytes[: len(tensors)]
    ops, tensors_path, out = tmp_path / "ops.parquet", tmp_path / "tensors.parquet", tmp_path / "memory.parquet"
    workload.__class__(ops=workload.ops, tensors=tensors, meta=workload.meta).write(ops, tensors_path)
    return cli("memory", "--ops", ops, "--tensors", tensors_path, "--out", out), out


def test_tensors_whose_bytes_add_up_past_int64_are_refused(tmp_path: Path) -> None:
    n = len(conv_relu_workload().tensors)
    result, out = _memory(tmp_path, [2**62] * n)  # each passes every per-value check; their sum wraps
    one_error_line(result, "tensors.parquet", "column 'bytes' adds up to", f"past {INT64_MAX:,}")
    assert not out.exists()


def test_a_complex_parameter_is_refused_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = textwrap.dedent(
        """
        import torch
        from torch import nn

        class Spectral(nn.Module):
            def __init__(self):
                super().__init__()
                self.mix = nn.Parameter(torch.ones(8, dtype=torch.complex64))

            def forward(self, x):
                return (x * self.mix).real

        def net():
            return Spectral()
        """
    )
    module = importable(tmp_path, monkeypatch, "spectral_nets", source)
    out = tmp_path / "cost"
    args = ("--input-shape", "8", "--batch", 2, "--hardware", EDGE_TPU, "--out-dir", out, "--frontend", "torch")
    one_error_line(cli("cost", f"{module}:net", *args), "parameter 'mix' is complex64", "real floating-point")
    assert not out.exists() or not list(out.iterdir())


def _parquet(path: Path, metadata: bytes | None = None, *, rows: int = 4) -> Path:
    table = pa.table({"op": np.zeros(rows, dtype=np.int64)})
    if metadata is not None:
        table = table.replace_schema_metadata({b"traincost": metadata})
    pq.write_table(table, path, compression="zstd")
    return path


def test_a_table_larger_than_the_limit_is_refused_from_its_footer(tmp_path: Path) -> None:
    """2^21 zeros: 4 KB of Parquet, 16 MiB once read; refused under an 8 MiB limit before a byte is decompressed."""
    big = _parquet(tmp_path / "ops.parquet", rows=2**21)
    assert big.stat().st_size < 100_000
    tensors, out = _parquet(tmp_path / "tensors.parquet"), tmp_path / "memory.parquet"
    refused = cli("--max-table-mib", 8, "memory", "--ops", big, "--tensors", tensors, "--out", out)
    one_error_line(refused, str(big), "2,097,152 rows", "at most 8 MiB", "--max-table-mib")
    read = cli("memory", "--ops", big, "--tensors", tensors, "--out", out)  # within the default: read, then judged
    one_error_line(read, str(big), "not a Workload ops table")


@pytest.mark.parametrize(
    ("metadata", "words"),
    [(b"{not json", ["is not JSON"]), (b"[1, 2]", ["is list; expected a JSON object"]), (b"\xff\xfe", ["is not JSON"])],
)
def test_table_metadata_that_is_not_a_json_object_is_one_line(tmp_path: Path, metadata: bytes, words: list[str]) -> None:
    ops = _parquet(tmp_path / "ops.parquet", metadata)
    tensors, out = _parquet(tmp_path / "tensors.parquet"), tmp_path / "memory.parquet"
    one_error_line(cli("memory", "--ops", ops, "--tensors", tensors, "--out", out), str(ops), "'traincost'", *words)


@pytest.mark.parametrize("column", ["B", "layer", "elementwise_ops"])
def test_an_ops_table_missing_a_column_is_one_line_naming_it(tmp_path: Path, column: str) -> None:
    """A loop dimension missing passed the read and ended in a traceback in the sweep."""
    workload = conv_relu_workload()
    ops, tensors = tmp_path / "ops.parquet", tmp_path / "tensors.parquet"
    workload.__class__(ops=workload.ops.drop(columns=[column]), tensors=workload.tensors, meta=workload.meta).write(ops, tensors)
    args = ("--hardware", EDGE_TPU, "--step", "training", "--out", tmp_path / "sweep.parquet")
    result = cli("sweep", "--ops", ops, "--tensors", tensors, *args)
    one_error_line(result, str(ops), "not a Workload ops table", f"missing columns ['{column}']")
