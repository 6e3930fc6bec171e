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
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.reliability.conftest import EDGE_TPU, cli, importable, one_error_line
from tests.workloads import conv_relu_workload
from traincost.hardware import HardwareError, load_hardware
from traincost.limits import MAX_COUNT

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


@settings(max_examples=40, deadline=None, derandomize=True, database=None)
@given(
    word_bytes=st.sampled_from([1, 2, 4]),
    size_bytes=st.floats(0.01, 64, allow_nan=False),
    count=st.integers(1, 2 * MAX_COUNT),
)
def test_a_memory_below_a_word_or_a_count_past_the_limit_is_refused_and_nothing_else(
    word_bytes: int, size_bytes: float, count: int, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Drawn word sizes, register sizes and core counts: the file loads exactly when the register holds a word and
    the count is within ``MAX_COUNT``, and is refused naming the field otherwise."""
    data = yaml.safe_load(TINY.read_text())
    data["word_bytes"], data["cores"][0]["count"] = word_bytes, count
    data["memories"]["rf"]["size_bytes"] = size_bytes
    path = tmp_path_factory.mktemp("bounds") / "tiny.yaml"
    path.write_text(yaml.safe_dump(data))
    fits = size_bytes >= word_bytes and count <= MAX_COUNT
    try:
        load_hardware(path)
    except HardwareError as err:
        assert not fits, str(err)
        assert ("memories.rf.size_bytes" in str(err)) == (size_bytes < word_bytes)
        assert ("cores[0].count" in str(err)) == (count > MAX_COUNT)
        return
    assert fits


@settings(max_examples=25, deadline=None, derandomize=True, database=None)
@given(dtype=st.sampled_from(["float32", "float64", "float16", "bfloat16", "complex64", "complex128", "int64", "int8"]))
def test_a_parameter_is_costed_only_when_real_floating_point(dtype: str) -> None:
    """Any parameter dtype: real floating point passes the check, complex and integer are refused naming it."""
    import torch  # noqa: PLC0415 (the torch front end's own check, without tracing)

    from traincost.errors import ConfigError  # noqa: PLC0415
    from traincost.frontend.shared.torch_model import refuse_unreal  # noqa: PLC0415

    module = torch.nn.Linear(2, 2)
    module.weight = torch.nn.Parameter(torch.zeros(2, 2, dtype=getattr(torch, dtype)), requires_grad=False)
    real = getattr(torch, dtype).is_floating_point and not getattr(torch, dtype).is_complex
    try:
        refuse_unreal(module, "drawn")
    except ConfigError as err:
        assert not real and f"parameter 'weight' is {dtype}" in str(err)
        return
    assert real
