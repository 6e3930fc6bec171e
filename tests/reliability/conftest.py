"""Shared pieces of the reliability suite: the CLI run in-process, a tiny GPT-2 chain and edited inputs.

``cli()`` runs ``traincost.cli.main``, the function behind the console script
(``sys.exit(main())``), in this process and returns what a subprocess would: exit status, stdout
and stderr. Importing torch and ONNX Runtime once, instead of once per case, is what keeps dozens
of bad-input cases within the suite's time budget; ``test_bad_inputs.py`` checks one case through
the real console script too, and the determinism tests run real processes.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml

from tests.integration.test_cli import TINY_GPT2
from traincost.cli import main
from traincost.workload import LOOP_DIMS, Workload

REPO = Path(__file__).resolve().parents[2]
EDGE_TPU = REPO / "config/hardware/edge_tpu.yaml"
FUSEMAX = REPO / "config/hardware/fusemax.yaml"
TPUV4_TIERED = REPO / "config/hardware/tpuv4_tiered.yaml"
FPGA_DEVICES = REPO / "config/hardware/fpga/devices.yaml"
FPGA_IPS = REPO / "data/fpga/training_ips.yaml"

# The chain below is built with the flags the workflow's front-end rules pass for workload `first` of
# tests/integration/test_workflow.py (GPT-2 TINY, batch 2, SGD lr 0.1, seed 0), so its files can stand
# in for the workflow's own results/graphs and results/workloads files.
CHAIN_FILES = (
    "graphs/{w}/model.onnx",
    "graphs/{w}/train_step.onnx",
    "graphs/{w}/train_step.decomposed.onnx",
    "graphs/{w}/op_histogram.parquet",
    "graphs/{w}/verification.parquet",
    "workloads/{w}/ops.parquet",
    "workloads/{w}/tensors.parquet",
)


def cli(*args: object) -> subprocess.CompletedProcess[str]:
    """``traincost ARGS`` in this process: exit status, stdout and stderr as a subprocess would give them.

    An exception that escapes ``main`` is printed as Python would print it, with status 1.
    """
    argv = [str(arg) for arg in args]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main(["--quiet", *argv])
        except SystemExit as exit_:  # argparse errors
            status = exit_.code if isinstance(exit_.code, int) else 1
        except Exception:  # what the interpreter would print before exiting with status 1
            traceback.print_exc()
            status = 1
    return subprocess.CompletedProcess(["traincost", *argv], status, out.getvalue(), err.getvalue())


def importable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, module: str, source: str) -> str:
    """Write ``source`` as the module ``module`` in ``tmp_path`` and put it on the path for the rest of the test;
    returns the module's name (a user's factory module, as ``traincost cost`` imports it)."""
    (tmp_path / f"{module}.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    return module


def one_error_line(result: subprocess.CompletedProcess[str], *words: str) -> None:
    """The command failed as bad input must: status 2, one ``traincost: error:`` line holding each of ``words``."""
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("traincost: error: "), result.stderr
    for word in words:
        assert word in lines[0], (word, lines[0])


def slow_export(out: Path) -> subprocess.Popen[str]:
    """``traincost export --out out`` in a process of its own whose export writes half a temporary file beside ``out``,
    prints ``writing`` and then works for a minute in 50 ms steps (one long sleep misses a signal landing just before
    it starts): a command to interrupt."""
    program = f"""
import signal, sys, time
from traincost.cli import frontend, main
from traincost.io import atomic_path

signal.signal(signal.SIGINT, signal.default_int_handler)  # Ctrl-C as at a terminal (a test runner may ignore it)

def slow_export(args):
    with atomic_path(args.out) as tmp:
        tmp.write_text("half")
        print("writing", flush=True)
        for _ in range(1200):
            time.sleep(0.05)

frontend._cmd_export = slow_export
sys.exit(main(["export", "--model", "mlp", "--batch", "1", "--out", {str(out)!r}]))
"""
    return subprocess.Popen([sys.executable, "-c", program], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def run_ok(*args: object) -> subprocess.CompletedProcess[str]:
    result = cli(*args)
    assert result.returncode == 0, result.stderr
    return result


def edited_yaml(source: Path, target: Path, change: Callable[[dict[str, Any]], object]) -> Path:
    """A copy of the YAML ``source`` at ``target`` with ``change`` applied to its data."""
    data = yaml.safe_load(source.read_text())
    change(data)
    target.write_text(yaml.safe_dump(data, sort_keys=False))
    return target


def console(*args: object, hash_seed: int = 0) -> subprocess.Popen[str]:
    """Start the real console entry point (``python -m traincost.cli``) in the background, with a given
    string-hash seed (``PYTHONHASHSEED``)."""
    command = [sys.executable, "-m", "traincost.cli", "--quiet", *map(str, args)]
    env = {**os.environ, "PYTHONHASHSEED": str(hash_seed)}
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


@pytest.fixture(scope="session")
def tiny_gpt2(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny GPT-2 training step through the whole front end, laid out as the workflow's ``results/``
    (workload name ``first``): graphs/first/*.onnx, workloads/first/{ops,tensors}.parquet."""
    root = tmp_path_factory.mktemp("tiny_gpt2")
    graphs, tables = root / "graphs/first", root / "workloads/first"
    run_ok("export", "--model", "gpt2", "--batch", 2, "--options", TINY_GPT2, "--seed", 0, "--out", graphs / "model.onnx")
    run_ok(
        "train-graph", "--in", graphs / "model.onnx", "--optimizer", "sgd", "--lr", 0.1, "--seed", 0,
        "--out", graphs / "train_step.onnx",
    )  # fmt: skip
    run_ok(
        "decompose", "--in", graphs / "train_step.onnx", "--seed", 0, "--histogram", graphs / "op_histogram.parquet",
        "--out", graphs / "train_step.decomposed.onnx",
    )  # fmt: skip
    run_ok(
        "verify-decomposition", "--in", graphs / "train_step.onnx", "--decomposed", graphs / "train_step.decomposed.onnx",
        "--seed", 0, "--out", graphs / "verification.parquet",
    )  # fmt: skip
    run_ok(
        "lower", "--in", graphs / "train_step.decomposed.onnx", "--ops", tables / "ops.parquet",
        "--tensors", tables / "tensors.parquet",
    )  # fmt: skip
    assert all((root / name.format(w="first")).is_file() for name in CHAIN_FILES)
    return root


@pytest.fixture(scope="session")
def tiny_tables(tiny_gpt2: Path) -> tuple[Path, Path]:
    """(ops.parquet, tensors.parquet) of the tiny GPT-2."""
    return tiny_gpt2 / "workloads/first/ops.parquet", tiny_gpt2 / "workloads/first/tensors.parquet"


@pytest.fixture(scope="session")
def bert_large(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(ops.parquet, tensors.parquet) of one chip's BERT-Large step from ``traincost tiered-workload``."""
    root = tmp_path_factory.mktemp("bert_large")
    run_ok("tiered-workload", "--workload", "bert_large", "--ops", root / "ops.parquet", "--tensors", root / "tensors.parquet")
    return root / "ops.parquet", root / "tensors.parquet"


def conv_chain_workload(*, b: int, k: int, c: int, oy: int, ox: int, fy: int, fx: int, k2: int, dtype_bytes: int = 2) -> Workload:
    """conv (K×C×FY×FX, stride 1, no padding) → ReLU → 1×1 conv (K2×K): three ops, consistent shapes.

    Tensors: 0 x [B,C,OY+FY-1,OX+FX-1], 1 w1 [K,C,FY,FX], 2 y1 [B,K,OY,OX], 3 a1 = relu(y1),
    4 w2 [K2,K,1,1], 5 y2 [B,K2,OY,OX] (the step's output).
    """
    first = {"B": b, "K": k, "C": c, "OY": oy, "OX": ox, "FY": fy, "FX": fx, "G": 1}
    second = {**first, "K": k2, "C": k, "FY": 1, "FX": 1}

    def macs(dims: dict[str, int]) -> int:
        total = 1
        for value in dims.values():
            total *= value
        return total

    ops = [
        {"op": 0, "name": "conv1", "op_type": "Conv", "kind": "conv", "phase": "forward", "layer": "conv1"}
        | first
        | {"macs": macs(first), "elementwise_ops": 0, "inputs": [0, 1], "outputs": [2]},
        {"op": 1, "name": "relu", "op_type": "Relu", "kind": "eltwise", "phase": "forward", "layer": "relu"}
        | dict.fromkeys(LOOP_DIMS, 1)
        | {"macs": 0, "elementwise_ops": b * k * oy * ox, "inputs": [2], "outputs": [3]},
        {"op": 2, "name": "conv2", "op_type": "Conv", "kind": "conv", "phase": "forward", "layer": "conv2"}
        | second
        | {"macs": macs(second), "elementwise_ops": 0, "inputs": [3, 4], "outputs": [5]},
    ]
    shapes = {
        0: ("x", "input", [b, c, oy + fy - 1, ox + fx - 1], -1, [0]),
        1: ("w1", "weight", [k, c, fy, fx], -1, [0]),
        2: ("y1", "activation", [b, k, oy, ox], 0, [1]),
        3: ("a1", "activation", [b, k, oy, ox], 1, [2]),
        4: ("w2", "weight", [k2, k, 1, 1], -1, [2]),
        5: ("y2", "output", [b, k2, oy, ox], 2, []),
    }
    tensors = []
    for tensor, (name, kind, shape, producer, consumers) in shapes.items():
        elems = 1
        for size in shape:
            elems *= size
        tensors.append(
            {"tensor": tensor, "name": name, "kind": kind, "shape": shape, "dtype_bytes": dtype_bytes,
             "bytes": elems * dtype_bytes, "producer": producer, "consumers": consumers,
             "saved_for_backward": False, "updates": -1}
        )  # fmt: skip
    return Workload(ops=pd.DataFrame(ops), tensors=pd.DataFrame(tensors), meta={"model": "conv_chain"})
