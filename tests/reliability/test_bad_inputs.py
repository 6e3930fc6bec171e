"""Bad input to every stage: exit status 2, one ``traincost: error:`` line naming what is wrong, no output left.

Each case builds its bad input in ``tmp_path`` from small pieces (the tiny GPT-2 chain, the shipped
hardware and FPGA YAMLs, one chip's BERT-Large step) and runs one ``traincost`` command.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import onnx
import pandas as pd
import pytest
import torch
from onnx import helper

from tests.integration.test_cli import assert_clean_failure, traincost
from tests.integration.test_workflow import _config, snakemake
from tests.reliability.conftest import EDGE_TPU, FPGA_DEVICES, FPGA_IPS, TPUV4_TIERED, cli, edited_yaml
from traincost.frontend.onnx.graph import save_onnx, set_node_meta
from traincost.workload import read_table, write_table

PAPER_MTRAIN = Path(__file__).resolve().parents[2] / "data/paper/mtrain.csv"

pytestmark = pytest.mark.ort  # the ONNX front end throughout (tests/conftest.py: pytest_ignore_collect)


@dataclass(frozen=True)
class Case:
    """A command, the words its error line must contain, and the outputs it must not leave."""

    args: tuple[object, ...]
    words: tuple[str, ...]
    outputs: tuple[Path, ...]


class Inputs:
    """What the cases build on; the session fixtures are only built when a case asks for them."""

    def __init__(self, tmp: Path, request: pytest.FixtureRequest) -> None:
        self.tmp = tmp
        self._request = request

    @property
    def graphs(self) -> Path:
        return self._request.getfixturevalue("tiny_gpt2") / "graphs/first"

    @property
    def workload(self) -> tuple[object, ...]:
        ops, tensors = self._request.getfixturevalue("tiny_tables")
        return ("--ops", ops, "--tensors", tensors)

    @property
    def bert(self) -> tuple[object, ...]:
        ops, tensors = self._request.getfixturevalue("bert_large")
        return ("--ops", ops, "--tensors", tensors)

    def out(self, name: str) -> Path:
        return self.tmp / "out" / name


CASES: dict[str, Callable[[Inputs], Case]] = {}


def case(build: Callable[[Inputs], Case]) -> Callable[[Inputs], Case]:
    CASES[build.__name__] = build
    return build


# --- the ONNX front end ------------------------------------------------------------------------


def _lower(source: Path, io: Inputs) -> tuple[tuple[object, ...], tuple[Path, ...]]:
    ops, tensors = io.out("ops.parquet"), io.out("tensors.parquet")
    return ("lower", "--in", source, "--ops", ops, "--tensors", tensors), (ops, tensors)


def _decompose(source: Path, io: Inputs) -> tuple[tuple[object, ...], tuple[Path, ...]]:
    out, histogram = io.out("d.onnx"), io.out("hist.parquet")
    return ("decompose", "--in", source, "--histogram", histogram, "--out", out), (out, histogram)


@case
def truncated_onnx(io: Inputs) -> Case:
    whole = (io.graphs / "train_step.decomposed.onnx").read_bytes()
    truncated = io.tmp / "truncated.onnx"
    truncated.write_bytes(whole[: len(whole) // 2])
    args, outputs = _lower(truncated, io)
    return Case(args, (str(truncated), "not a readable ONNX model"), outputs)


def _with_node(source: Path, target: Path, node: onnx.NodeProto, phase: str) -> Path:
    model = onnx.load(str(source))
    set_node_meta(node, phase=phase, layer="extra")
    model.graph.node.append(node)
    save_onnx(model, target)
    return target


@case
def op_without_a_decomposition_rule(io: Inputs) -> Case:
    node = helper.make_node("BitmaskDropoutGrad", ["loss", "loss"], ["d"], name="dropout_grad_node", domain="com.microsoft")
    source = _with_node(io.graphs / "train_step.onnx", io.tmp / "unknown_grad.onnx", node, "backward")
    args, outputs = _decompose(source, io)
    return Case(args, (str(source), "no decomposition rule", "com.microsoft::BitmaskDropoutGrad", "dropout_grad_node"), outputs)


@case
def op_without_a_lowering_rule(io: Inputs) -> Case:
    decomposed = io.graphs / "train_step.decomposed.onnx"
    first_output = onnx.load(str(decomposed)).graph.node[0].output[0]
    node = helper.make_node("Frobnicate", [first_output], ["frobnicated"], name="frob_node", domain="com.example")
    source = _with_node(decomposed, io.tmp / "custom_op.onnx", node, "forward")
    args, outputs = _lower(source, io)
    return Case(args, ("frob_node", "com.example::Frobnicate", "not primitive"), outputs)


def _with_cycle(source: Path, target: Path) -> tuple[str, str]:
    """Make the first node that reads another node's output read a later node's output instead: a cycle
    (the later node depends on it). Returns the rewired node's name and the tensor it now reads."""
    model = onnx.load(str(source))
    nodes = model.graph.node
    writer = {name: i for i, node in enumerate(nodes) for name in node.output}
    first = next(i for i, node in enumerate(nodes) if any(name in writer for name in node.input))
    later = next(j for j in range(first + 1, len(nodes)) if set(nodes[j].input) & set(nodes[first].output))
    slot = next(k for k, name in enumerate(nodes[first].input) if name in writer)
    nodes[first].input[slot] = nodes[later].output[0]
    save_onnx(model, target)
    return nodes[first].name, nodes[later].output[0]


def _cycle_case(io: Inputs, graph: str, stage: Callable[[Path, Inputs], tuple[tuple[object, ...], tuple[Path, ...]]]) -> Case:
    """``stage`` on ``graph`` (a file of ``io.graphs``) with a cycle in it: the error names the file, node and tensor."""
    source = io.tmp / f"cycle.{graph}"
    node, tensor = _with_cycle(io.graphs / graph, source)
    args, outputs = stage(source, io)
    return Case(args, (str(source), repr(node), repr(tensor), "cycle"), outputs)


@case
def graph_with_a_cycle_lowered(io: Inputs) -> Case:
    return _cycle_case(io, "train_step.decomposed.onnx", _lower)


@case
def graph_with_a_cycle_decomposed(io: Inputs) -> Case:
    return _cycle_case(io, "train_step.onnx", _decompose)


@case
def tensor_with_two_writers(io: Inputs) -> Case:
    decomposed = io.graphs / "train_step.decomposed.onnx"
    graph = onnx.load(str(decomposed)).graph
    taken = graph.node[1].output[0]
    node = helper.make_node("Relu", [graph.node[0].output[0]], [taken], name="second_writer")
    source = _with_node(decomposed, io.tmp / "two_writers.onnx", node, "forward")
    args, outputs = _lower(source, io)
    return Case(args, (str(source), "second_writer", repr(taken), "one writer per tensor"), outputs)


@case
def unknown_zoo_model(io: Inputs) -> Case:
    out = io.out("model.onnx")
    return Case(("export", "--model", "resnet19", "--batch", 1, "--out", out), ("'resnet19'", "resnet18_cifar"), (out,))


@case
def unknown_model_option(io: Inputs) -> Case:
    out = io.out("model.onnx")
    args = ("export", "--model", "gpt2", "--batch", 1, "--options", '{"n_layers": 1}', "--out", out)
    return Case(args, ("'n_layers'", "gpt2", "n_layer"), (out,))


# --- a user's model: torch module or ONNX file --------------------------------------------------

USER_MODULE = """
from torch import nn

def net():
    return nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 6 * 6, 10))

def not_a_module():
    return 42

def per_sample(output, labels):
    return output.mean(-1)

def pair():
    return Pair()

def video():
    return nn.Sequential(nn.Conv3d(3, 4, 1), nn.AdaptiveMaxPool3d(1), nn.Flatten(), nn.Linear(4, 10))

class Pair(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 3)

    def forward(self, x):
        return self.linear(x), x
"""


def _user_module(io: Inputs) -> str:
    """The module above, importable as ``bad_nets`` for this case."""
    (io.tmp / "bad_nets.py").write_text(USER_MODULE)
    monkeypatch = io._request.getfixturevalue("monkeypatch")
    monkeypatch.syspath_prepend(str(io.tmp))
    monkeypatch.delitem(sys.modules, "bad_nets", raising=False)
    return "bad_nets"


def _user_onnx(io: Inputs, *, train: bool = True, fold: bool = False, params: bool = True, external: bool = False) -> Path:
    """``bad_nets:net`` exported by a user with the given settings (the right ones by default)."""
    net = importlib.import_module(_user_module(io)).net().train(train)
    path = io.tmp / "user.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            net, (torch.randn(2, 3, 8, 8),), str(path), dynamo=False, opset_version=17, export_params=params,
            training=torch.onnx.TrainingMode.TRAINING if train else torch.onnx.TrainingMode.EVAL,
            do_constant_folding=fold, input_names=["input"], dynamic_axes={"input": {0: "batch"}},
        )  # fmt: skip
    if external:
        onnx.save(onnx.load(str(path)), str(path), save_as_external_data=True, location="user.onnx.data", size_threshold=0)
    return path


def _export(io: Inputs, *model: object, words: tuple[str, ...]) -> Case:
    out = io.out("model.onnx")
    return Case(("export", *model, "--batch", 2, "--out", out), words, (out,))


def _cost_onnx(io: Inputs, change: Callable[[onnx.GraphProto], object]) -> tuple[tuple[object, ...], Path, Path]:
    """``traincost cost`` on the user's ONNX file as ``change`` edits it, into an ``--out-dir`` that does not exist yet."""
    path = _user_onnx(io)
    model = onnx.load(str(path))
    change(model.graph)
    onnx.save(model, str(path))
    out = io.tmp / "costed" / "net"
    return ("cost", path, "--batch", 2, "--hardware", EDGE_TPU, "--out-dir", out), path, out


@case
def onnx_with_a_cycle_costed(io: Inputs) -> Case:
    def cycle(graph: onnx.GraphProto) -> None:
        graph.node[1].input[0] = graph.node[2].output[0]

    args, path, out = _cost_onnx(io, cycle)
    return Case(args, (str(path), "cycle", "'/1/BatchNormalization'", "'/2/Relu'"), (out, out.parent))


@case
def onnx_reading_a_tensor_nothing_writes(io: Inputs) -> Case:
    def dangling(graph: onnx.GraphProto) -> None:
        graph.node[1].input[0] = "written_by_nobody"

    args, path, out = _cost_onnx(io, dangling)
    return Case(args, (str(path), "'written_by_nobody'", "no node writes"), (out, out.parent))


@case
def onnx_exported_in_eval_mode(io: Inputs) -> Case:
    path = _user_onnx(io, train=False)
    return _export(io, "--onnx", path, words=(str(path), "'/1/BatchNormalization'", "inference mode", "TrainingMode.TRAINING"))


@case
def onnx_with_batchnorm_folded_into_conv(io: Inputs) -> Case:
    path = _user_onnx(io, train=False, fold=True)
    return _export(io, "--onnx", path, words=(str(path), "'/0/Conv'", "constant folding", "do_constant_folding=False"))


@case
def onnx_exported_by_dynamo(io: Inputs) -> Case:
    path = _user_onnx(io)
    model = onnx.load(str(path))
    for node in model.graph.node:  # what torch's dynamo exporter stamps on every node
        node.metadata_props.add(key="pkg.torch.onnx.stack_trace", value="")
    onnx.save(model, str(path))
    return _export(io, "--onnx", path, words=(str(path), "dynamo exporter", "dynamo=False"))


@case
def onnx_with_parameters_as_graph_inputs(io: Inputs) -> Case:
    path = _user_onnx(io, params=False)
    return _export(io, "--onnx", path, words=(str(path), "graph input '0.weight'", "export_params=True"))


@case
def onnx_without_its_external_weights(io: Inputs) -> Case:
    path = _user_onnx(io, external=True)
    (io.tmp / "user.onnx.data").unlink()
    return _export(io, "--onnx", path, words=(str(path), "external data 'user.onnx.data'", "not beside the model"))


def _external_at(io: Inputs, location: str) -> Path:
    """The user's export with its weights in external data, each entry pointing at the whole of ``location``
    instead (no offset or length: onnx reads the file to its end)."""
    path = _user_onnx(io, external=True)
    model = onnx.load(str(path), load_external_data=False)
    for init in model.graph.initializer:
        if init.external_data:
            del init.external_data[:]
            init.external_data.add(key="location", value=location)
    onnx.save(model, str(path))
    return path


@case
def onnx_external_weights_outside_its_folder(io: Inputs) -> Case:
    (io.tmp.parent / "elsewhere.data").write_bytes(b"\0" * 4096)
    path = _external_at(io, "../elsewhere.data")
    return _export(io, "--onnx", path, words=(str(path), "'../elsewhere.data'", "outside the model's folder"))


@case
def onnx_external_weights_of_nine_gib(io: Inputs) -> Case:
    """A sparse file: 9 GiB by its size, nothing on disk; refused from its size before a byte is read."""
    path = _external_at(io, "huge.data")
    with (io.tmp / "huge.data").open("wb") as data:
        data.truncate(9 * 2**30)
    return _export(io, "--onnx", path, words=(str(path), "external weight data is", "expected at most 8,589,934,592"))


@case
def onnx_inputs_named_differently(io: Inputs) -> Case:
    path = _user_onnx(io)
    inputs = json.dumps({"pixels": {"shape": [3, 8, 8]}})
    return _export(io, "--onnx", path, "--inputs", inputs, words=(str(path), "['pixels']", "do not match", "['input']"))


@case
def onnx_input_shape_that_does_not_fit(io: Inputs) -> Case:
    path = _user_onnx(io)
    words = (str(path), "input 'input'", "sample shape 3x8x8", "[3, 16, 16]")
    return _export(io, "--onnx", path, "--input-shape", "3,16,16", words=words)


@case
def onnx_with_a_loss_function(io: Inputs) -> Case:
    path = _user_onnx(io)
    return _export(
        io,
        "--onnx",
        path,
        "--loss",
        "bad_nets:net",
        words=(str(path), "an ONNX file takes cross_entropy, token_cross_entropy or mse"),
    )


@case
def factory_that_does_not_import(io: Inputs) -> Case:
    return _export(io, "--module", "no_such_nets:net", "--input-shape", "3,8,8", words=("'no_such_nets'", "ModuleNotFoundError"))


@case
def factory_that_returns_no_module(io: Inputs) -> Case:
    module = _user_module(io)
    words = (f"'{module}:not_a_module'", "returned int, not a torch nn.Module")
    return _export(io, "--module", f"{module}:not_a_module", "--input-shape", "3,8,8", words=words)


@case
def module_inputs_that_do_not_fit(io: Inputs) -> Case:
    module = _user_module(io)
    words = ("'net'", "its forward fails on inputs (input: float32 2x3x9x9)", "RuntimeError")
    return _export(io, "--module", f"{module}:net", "--input-shape", "3,9,9", words=words)


@case
def module_output_entry_that_does_not_exist(io: Inputs) -> Case:
    module = _user_module(io)
    words = (f"'{module}:pair'", "--output '2'", "returns tuple with tensors ['0', '1']")
    return _export(io, "--module", f"{module}:pair", "--input-shape", "4", "--output", "2", words=words)


@case
def module_with_a_layer_no_lowering_expresses(io: Inputs) -> Case:
    module = _user_module(io)
    words = ("model 'video'", "layer '1', AdaptiveMaxPool3d (1 such layers), is not lowered")
    return _export(io, "--module", f"{module}:video", "--input-shape", "3,2,4,4", words=words)


@case
def module_labels_that_do_not_fit_the_cross_entropy(io: Inputs) -> Case:
    module = _user_module(io)
    labels = '{"shape": [4], "dtype": "int64", "range": [0, 10]}'
    words = ("labels int64 [2, 4] do not fit cross_entropy's output [2, 10]", "give --loss token_cross_entropy")
    return _export(io, "--module", f"{module}:net", "--input-shape", "3,8,8", "--labels", labels, words=words)


@case
def module_loss_that_does_not_exist(io: Inputs) -> Case:
    module = _user_module(io)
    words = (f"loss '{module}:focal'", f"module '{module}' has no 'focal'")
    return _export(io, "--module", f"{module}:net", "--input-shape", "3,8,8", "--loss", f"{module}:focal", words=words)


@case
def module_loss_that_is_not_a_scalar(io: Inputs) -> Case:
    module = _user_module(io)
    words = (f"loss '{module}:per_sample'", "returns shape [2]", "expected a scalar")
    return _export(io, "--module", f"{module}:net", "--input-shape", "3,8,8", "--loss", f"{module}:per_sample", words=words)


@case
def factory_kwargs_it_does_not_take(io: Inputs) -> Case:
    module = _user_module(io)
    words = (f"'{module}:net'", "net(**{'wings': 2}) raised TypeError")
    return _export(io, "--module", f"{module}:net", "--kwargs", '{"wings": 2}', "--input-shape", "3,8,8", words=words)


@case
def factory_kwargs_ten_thousand_levels_deep(io: Inputs) -> Case:
    module = _user_module(io)
    deep = '{"a": ' * 10_000 + "1" + "}" * 10_000
    words = ("argument --kwargs", "more characters", "nested deeper")
    return _export(io, "--module", f"{module}:net", "--kwargs", deep, "--input-shape", "3,8,8", words=words)


@case
def factory_kwargs_with_a_duplicate_key(io: Inputs) -> Case:
    module = _user_module(io)
    words = ("argument --kwargs", "duplicate key 'width'")
    return _export(io, "--module", f"{module}:net", "--kwargs", '{"width": 2, "width": 3}', "--input-shape", "3,8,8", words=words)


@case
def module_inputs_without_a_token_range(io: Inputs) -> Case:
    module = _user_module(io)
    inputs = json.dumps({"tokens": {"shape": [8], "dtype": "int64"}})
    return _export(io, "--module", f"{module}:net", "--inputs", inputs, words=("--inputs.tokens.range", "[low, high]"))


# --- Workload tables ---------------------------------------------------------------------------


@case
def missing_input_file(io: Inputs) -> Case:
    missing, out = io.tmp / "nowhere/ops.parquet", io.out("memory.parquet")
    args = ("memory", "--ops", missing, "--tensors", io.workload[3], "--out", out)
    return Case(args, (str(missing), "no such"), (out,))


@case
def parquet_that_is_not_an_ops_table(io: Inputs) -> Case:
    histogram, out = io.graphs / "op_histogram.parquet", io.out("memory.parquet")
    args = ("memory", "--ops", histogram, "--tensors", io.workload[3], "--out", out)
    return Case(args, (str(histogram), "not a Workload ops table", "'op'"), (out,))


@case
def parquet_that_is_not_a_tensors_table(io: Inputs) -> Case:
    histogram, out = io.graphs / "op_histogram.parquet", io.out("sweep.parquet")
    args = ("sweep", "--ops", io.workload[1], "--tensors", histogram, "--hardware", EDGE_TPU, "--step", "training", "--out", out)
    return Case(args, (str(histogram), "not a Workload tensors table", "'tensor'"), (out,))


@case
def text_file_named_parquet(io: Inputs) -> Case:
    text, out = io.tmp / "ops.parquet", io.out("memory.parquet")
    text.write_text("op,kind\n0,conv\n")
    args = ("memory", "--ops", text, "--tensors", io.workload[3], "--out", out)
    return Case(args, (str(text), "not a readable Parquet file"), (out,))


@case
def tables_with_different_columns_concatenated(io: Inputs) -> Case:
    out = io.out("merged.parquet")
    ops, tensors = io.workload[1], io.workload[3]
    return Case(("concat", "--in", ops, tensors, "--out", out), (str(tensors), "columns differ", str(ops)), (out,))


def _corrupted(io: Inputs, which: str, change: Callable[[pd.DataFrame], pd.DataFrame]) -> Path:
    """A copy of the tiny workload's ``ops`` or ``tensors`` table, with its metadata, as ``change`` returns it."""
    source = io.workload[1] if which == "ops" else io.workload[3]
    frame, meta = read_table(source)
    frame = change(frame)
    target = io.tmp / f"corrupted_{which}.parquet"
    write_table(frame, target, meta)
    return target


def _ir_case(io: Inputs, which: str, change: Callable[[pd.DataFrame], pd.DataFrame], *words: str) -> Case:
    """``sweep`` (ops) or ``memory`` (tensors) on a corrupted table: the error names file, column and row."""
    bad = _corrupted(io, which, change)
    if which == "ops":
        out = io.out("sweep.parquet")
        args = ("sweep", "--ops", bad, "--tensors", io.workload[3], "--hardware", EDGE_TPU, "--step", "training", "--out", out)
    else:
        out = io.out("memory.parquet")
        args = ("memory", "--ops", io.workload[1], "--tensors", bad, "--out", out)
    return Case(args, (str(bad), *words), (out,))


def _set(column: str, row: int, value: object) -> Callable[[pd.DataFrame], pd.DataFrame]:
    def change(frame: pd.DataFrame) -> pd.DataFrame:
        if isinstance(value, float):
            frame[column] = frame[column].astype(float)
        frame.loc[row, column] = value
        return frame

    return change


@case
def nan_macs_in_the_ops_table(io: Inputs) -> Case:
    return _ir_case(io, "ops", _set("macs", 3, float("nan")), "'macs'", "row 3", "integer")


@case
def infinite_bytes_in_the_tensors_table(io: Inputs) -> Case:
    return _ir_case(io, "tensors", _set("bytes", 2, float("inf")), "'bytes'", "row 2", "integer")


@case
def negative_tensor_bytes(io: Inputs) -> Case:
    return _ir_case(io, "tensors", _set("bytes", 2, -4096), "'bytes'", "row 2", "-4096", "bytes ≥ 0")


@case
def zero_loop_dimension(io: Inputs) -> Case:
    return _ir_case(io, "ops", _set("K", 0, 0), "'K'", "row 0", "loop dimension ≥ 1")


@case
def op_reading_a_tensor_that_does_not_exist(io: Inputs) -> Case:
    def dangling(frame: pd.DataFrame) -> pd.DataFrame:
        frame.at[1, "inputs"] = [*frame.at[1, "inputs"], 10**6]
        return frame

    return _ir_case(io, "ops", dangling, "'inputs'", "row 1", "1000000", "tensor id")


@case
def loop_dimensions_that_do_not_multiply_to_the_macs(io: Inputs) -> Case:
    return _ir_case(io, "ops", _set("FY", 2, 2**62), "'macs'", "row 2", "the product of B·K·C·OY·OX·FY·FX·G")


@case
def duplicate_op_ids(io: Inputs) -> Case:
    return _ir_case(io, "ops", _set("op", 4, 3), "'op'", "row 4", "unique")


@case
def empty_ops_table(io: Inputs) -> Case:
    return _ir_case(io, "ops", lambda frame: frame.iloc[:0], "no rows")


@case
def unknown_phase(io: Inputs) -> Case:
    return _ir_case(io, "ops", _set("phase", 0, "sideways"), "'phase'", "row 0", "'sideways'", "forward")


@case
def producer_out_of_range(io: Inputs) -> Case:
    return _ir_case(io, "tensors", _set("producer", 5, 99999), "'producer'", "row 5", "op id")


def _op_reads_last_output(io: Inputs, *, tensors_too: bool) -> tuple[Path, Path]:
    """The tiny workload with op 0 also reading the last op's output (listed as a consumer too with ``tensors_too``)."""
    ops, meta = read_table(io.workload[1])
    tensors, _ = read_table(io.workload[3])
    last = int(ops.at[len(ops) - 1, "outputs"][0])
    ops.at[0, "inputs"] = [*ops.at[0, "inputs"], last]
    if tensors_too:
        tensors.at[last, "consumers"] = [*tensors.at[last, "consumers"], 0]
    paths = io.tmp / "cycle_ops.parquet", io.tmp / "cycle_tensors.parquet"
    write_table(ops, paths[0], meta)
    write_table(tensors, paths[1], meta)
    return paths


@case
def workload_with_a_cycle(io: Inputs) -> Case:
    ops, tensors = _op_reads_last_output(io, tensors_too=True)
    out = io.out("memory.parquet")
    return Case(("memory", "--ops", ops, "--tensors", tensors, "--out", out), (str(ops), "cycle", "op 0 ("), (out,))


@case
def workload_with_a_cycle_swept(io: Inputs) -> Case:
    ops, tensors = _op_reads_last_output(io, tensors_too=True)
    out = io.out("sweep.parquet")
    args = ("sweep", "--ops", ops, "--tensors", tensors, "--hardware", EDGE_TPU, "--step", "training", "--out", out)
    return Case(args, (str(ops), "cycle", "op 0 ("), (out,))


@case
def ops_and_tensors_tables_that_disagree(io: Inputs) -> Case:
    ops, tensors = _op_reads_last_output(io, tensors_too=False)
    out = io.out("memory.parquet")
    args = ("memory", "--ops", ops, "--tensors", tensors, "--out", out)
    return Case(args, (str(ops), "'inputs'", "row 0", "consumers", str(tensors)), (out,))


# --- hardware YAML (read by `traincost sweep`) --------------------------------------------------


def _sweep_with(io: Inputs, hardware: Path, *extra: object) -> tuple[tuple[object, ...], tuple[Path, ...]]:
    out = io.out("sweep.parquet")
    return ("sweep", *io.workload, "--hardware", hardware, *extra, "--step", "training", "--out", out), (out,)


def _edge(io: Inputs, change: Callable[[dict], object]) -> Path:
    return edited_yaml(EDGE_TPU, io.tmp / "edge_tpu.yaml", change)


@case
def core_level_missing_from_memories(io: Inputs) -> Case:
    hardware = _edge(io, lambda d: d["cores"][0]["memory"].append({"level": "l2_cache", "operands": ["W"]}))
    args, outputs = _sweep_with(io, hardware)
    return Case(args, (str(hardware), "cores[0].memory[2].level", "'l2_cache'", "not a key of memories"), outputs)


@case
def negative_memory_bandwidth(io: Inputs) -> Case:
    hardware = _edge(io, lambda d: d["memories"]["simd_memory"].update(read_bandwidth_bytes_per_cycle=-64))
    args, outputs = _sweep_with(io, hardware)
    return Case(args, (str(hardware), "memories.simd_memory.read_bandwidth_bytes_per_cycle", "expected > 0"), outputs)


@case
def offchip_bandwidth_negative_by_expression(io: Inputs) -> Case:
    hardware = _edge(io, lambda d: d["offchip"].update(bandwidth_bytes_per_cycle="32 - x_pes * 16"))
    args, outputs = _sweep_with(io, hardware)
    return Case(args, (str(hardware), "offchip.bandwidth_bytes_per_cycle", "= -32", "x_pes=4", "expected > 0"), outputs)


@case
def pe_axis_on_an_unknown_loop_dimension(io: Inputs) -> Case:
    hardware = _edge(io, lambda d: d["cores"][0]["pe_array"][0].update(dim="Q"))
    args, outputs = _sweep_with(io, hardware)
    return Case(args, (str(hardware), "cores[0].pe_array[0].dim", "'Q'", "'OX'"), outputs)


@case
def expression_over_an_unknown_parameter(io: Inputs) -> Case:
    hardware = _edge(io, lambda d: d["memories"]["simd_memory"].update(size_bytes="simd_kb * KiB"))
    args, outputs = _sweep_with(io, hardware)
    return Case(args, (str(hardware), "memories.simd_memory.size_bytes", "['simd_kb']", "local_memory_mb"), outputs)


@case
def op_kind_that_no_core_runs(io: Inputs) -> Case:
    hardware = _edge(io, lambda d: d["cores"][1]["runs"].remove("eltwise"))
    args, outputs = _sweep_with(io, hardware)
    return Case(args, ("no core runs op kind 'eltwise'", "Workload op"), outputs)


def _edited_text(source: Path, target: Path, old: str, new: str) -> Path:
    """A copy of ``source`` with the first ``old`` replaced by ``new`` (edits a YAML loader would lose)."""
    text = source.read_text()
    assert old in text, old
    target.write_text(text.replace(old, new, 1))
    return target


@case
def duplicate_key_in_a_hardware_yaml(io: Inputs) -> Case:
    hardware = _edited_text(EDGE_TPU, io.tmp / "dup.yaml", "\nmemories:", "\nword_bytes: 4\nmemories:")
    args, outputs = _sweep_with(io, hardware)
    return Case(args, (str(hardware), "duplicate key 'word_bytes'", "first at line"), outputs)


@case
def yaml_alias_in_a_hardware_yaml(io: Inputs) -> Case:
    hardware = _edited_text(EDGE_TPU, io.tmp / "alias.yaml", "\nmemories:", "\nx: &big [1, 2]\ny: [*big, *big]\nmemories:")
    args, outputs = _sweep_with(io, hardware)
    return Case(args, (str(hardware), "alias *big is not allowed"), outputs)


@case
def nan_in_a_hardware_yaml(io: Inputs) -> Case:
    hardware = _edge(io, lambda d: d["offchip"].update(bandwidth_bytes_per_cycle=float("nan")))
    args, outputs = _sweep_with(io, hardware)
    return Case(args, (str(hardware), "offchip.bandwidth_bytes_per_cycle is nan", "finite number"), outputs)


@case
def hardware_yaml_larger_than_a_config_may_be(io: Inputs) -> Case:
    hardware = io.tmp / "huge.yaml"
    hardware.write_text(EDGE_TPU.read_text() + "#" * (9 * 2**20) + "\n")
    args, outputs = _sweep_with(io, hardware)
    return Case(args, (str(hardware), "MAX_YAML_BYTES = 1 MiB"), outputs)


@case
def hardware_yaml_that_is_a_special_file(io: Inputs) -> Case:
    args, outputs = _sweep_with(io, Path("/dev/zero"))
    return Case(args, ("/dev/zero", "special file", "expected a regular file"), outputs)


@case
def hardware_yaml_that_is_a_fifo(io: Inputs) -> Case:
    fifo = io.tmp / "hardware.yaml"
    os.mkfifo(fifo)  # opening it to read would wait for a writer for ever
    args, outputs = _sweep_with(io, fifo)
    return Case(args, (str(fifo), "a FIFO", "expected a regular file"), outputs)


@case
def integer_of_400_digits_in_a_hardware_yaml(io: Inputs) -> Case:
    hardware = _edge(io, lambda d: d["memories"]["local_memory"].update(size_bytes=int("9" * 400)))
    args, outputs = _sweep_with(io, hardware)
    return Case(args, (str(hardware), "memories.local_memory.size_bytes", "400 digits"), outputs)


@case
def integer_longer_than_python_converts_in_a_hardware_yaml(io: Inputs) -> Case:
    hardware = _edited_text(EDGE_TPU, io.tmp / "long.yaml", "\nword_bytes: 2", "\nword_bytes: " + "7" * 5000)
    args, outputs = _sweep_with(io, hardware)
    return Case(args, (str(hardware), "word_bytes", "5000 digits"), outputs)


@case
def energy_that_overflows_float_arithmetic(io: Inputs) -> Case:
    hardware = _edge(io, lambda d: d["memories"]["local_memory"].update(read_energy_pj_per_bit=1e308))
    args, outputs = _sweep_with(io, hardware)
    return Case(args, (str(hardware), "energy_pj", "too large for float arithmetic"), outputs)


def _import_zigzag(io: Inputs, source: Path) -> tuple[tuple[object, ...], tuple[Path, ...]]:
    out = io.out("imported.yaml")
    return ("hardware", "import", "zigzag", source, "--out", out), (out,)


@case
def zigzag_hardware_with_an_alias_bomb(io: Inputs) -> Case:
    bomb = io.tmp / "bomb.yaml"
    levels = "abcdefgh"  # each nine times the last: 9**9 values under h, tripled in name
    rows = ["a: &a [x, x, x, x, x, x, x, x, x]"]
    rows += [f"{b}: &{b} [{', '.join([f'*{a}'] * 9)}]" for a, b in zip(levels, levels[1:], strict=False)]
    bomb.write_text("\n".join([*rows, "name: [*h, *h, *h]", ""]))
    args, outputs = _import_zigzag(io, bomb)
    return Case(args, (str(bomb), "alias *a is not allowed"), outputs)


@case
def zigzag_import_of_a_special_file(io: Inputs) -> Case:
    args, outputs = _import_zigzag(io, Path("/dev/zero"))
    return Case(args, ("/dev/zero", "special file"), outputs)


@case
def duplicate_key_in_grid_json(io: Inputs) -> Case:
    args, outputs = _sweep_with(io, EDGE_TPU, "--grid", '{"x_pes": [1, 2], "x_pes": [4]}')
    return Case(args, ("--grid", "duplicate key 'x_pes'"), outputs)


@case
def nan_in_grid_json(io: Inputs) -> Case:
    args, outputs = _sweep_with(io, EDGE_TPU, "--grid", '{"x_pes": [NaN]}')
    return Case(args, ("--grid", "NaN is not a number"), outputs)


@case
def power_tower_in_a_hardware_expression(io: Inputs) -> Case:
    hardware = _edge(io, lambda d: d["offchip"].update(bandwidth_bytes_per_cycle="9 ** 9 ** 9 ** 9"))
    args, outputs = _sweep_with(io, hardware)
    return Case(args, (str(hardware), "offchip.bandwidth_bytes_per_cycle", "MAX_EXPONENT"), outputs)


@case
def division_by_zero_in_a_hardware_expression(io: Inputs) -> Case:
    hardware = _edge(io, lambda d: d["offchip"].update(bandwidth_bytes_per_cycle="32 / (x_pes - x_pes)"))
    args, outputs = _sweep_with(io, hardware)
    return Case(args, (str(hardware), "offchip.bandwidth_bytes_per_cycle"), outputs)


@case
def hardware_expression_of_fifty_thousand_terms(io: Inputs) -> Case:
    hardware = _edge(io, lambda d: d["offchip"].update(bandwidth_bytes_per_cycle="1 + " * 50_000 + "1"))
    args, outputs = _sweep_with(io, hardware)
    return Case(args, (str(hardware), "offchip.bandwidth_bytes_per_cycle", "MAX_EXPRESSION_CHARS"), outputs)


# --- sweep grids -------------------------------------------------------------------------------


@case
def grid_of_a_billion_configurations(io: Inputs) -> Case:
    values = list(range(1, 1001))
    grid = json.dumps({"x_pes": values, "y_pes": values, "lanes": values})
    args, outputs = _sweep_with(io, EDGE_TPU, "--grid", grid)
    return Case(args, ("1,000,000,000 configurations", "limit of 1,000,000", "--max-configs"), outputs)


@case
def grid_value_that_is_not_a_list(io: Inputs) -> Case:
    args, outputs = _sweep_with(io, EDGE_TPU, "--grid", '{"x_pes": "four"}')
    return Case(args, ("edge_tpu", "'x_pes'", "'four'", "expected a list of numbers"), outputs)


@case
def grid_value_that_is_not_a_number(io: Inputs) -> Case:
    args, outputs = _sweep_with(io, EDGE_TPU, "--grid", '{"lanes": [1, null]}')
    return Case(args, ("'lanes'", "None", "finite numbers"), outputs)


@case
def empty_grid(io: Inputs) -> Case:
    args, outputs = _sweep_with(io, EDGE_TPU, "--grid", '{"x_pes": [1, 2], "lanes": []}')
    return Case(args, ("'lanes'", "has no values"), outputs)


@case
def shard_out_of_range(io: Inputs) -> Case:
    args, outputs = _sweep_with(io, EDGE_TPU, "--grid", '{"x_pes": [1, 2]}', "--shard", "4/4")
    return Case(args, ("shard 4 of 4", "0 <= index < count"), outputs)


# --- activation checkpointing (MILP) -----------------------------------------------------------


def _checkpoint(io: Inputs, budget: str) -> tuple[tuple[object, ...], tuple[Path, ...]]:
    outputs = (io.out("costs.parquet"), io.out("additivity.parquet"), io.out("milp.parquet"))
    args = ("checkpoint-study", *io.workload, "--hardware", EDGE_TPU, "--fusion-length", 2, "--budgets", 0.5, budget)
    return (*args, "--costs", outputs[0], "--additivity", outputs[1], "--milp", outputs[2]), outputs


@case
def negative_checkpoint_budget(io: Inputs) -> Case:
    args, outputs = _checkpoint(io, "-0.25")
    return Case(args, ("argument --budgets", "'-0.25'", "a fraction in [0, 1]"), outputs)


@case
def checkpoint_budget_above_the_schema_range(io: Inputs) -> Case:
    """The workflow schema allows budgets in [0, 1]; the command line allowed 5 until both were one range."""
    args, outputs = _checkpoint(io, "5")
    return Case(args, ("argument --budgets", "'5'", "a fraction in [0, 1]"), outputs)


@case
def checkpoint_budget_not_a_number(io: Inputs) -> Case:
    args, outputs = _checkpoint(io, "nan")
    return Case(args, ("argument --budgets", "'nan'", "a finite number"), outputs)


@case
def checkpoint_graph_without_its_check_table(io: Inputs) -> Case:
    args, outputs = _checkpoint(io, "1")
    return Case((*args, "--graph", io.out("step.onnx")), ("--graph needs --recompute-check",), outputs)


# --- tiered memory (TM-Training) ---------------------------------------------------------------


def _tiered(io: Inputs, hardware: Path, *ratios: object) -> tuple[tuple[object, ...], tuple[Path, ...]]:
    out = io.out("study.parquet")
    args = ("tiered-study", *io.bert, "--hardware", hardware, "--ratios", *ratios, "--policies", "tm_training", "--out", out)
    return args, (out,)


@case
def tiered_workload_larger_than_memory(io: Inputs) -> Case:
    small = edited_yaml(TPUV4_TIERED, io.tmp / "small.yaml", lambda d: d["tiered_memory"].update(capacity_per_chip_gib=2))
    args, outputs = _tiered(io, small, 25)
    return Case(args, ("workload bert_large", "does not fit in 2 GiB"), outputs)


@case
def negative_tier_bandwidth(io: Inputs) -> Case:
    hardware = edited_yaml(
        TPUV4_TIERED, io.tmp / "tiers.yaml", lambda d: d["tiered_memory"]["tier2"].update(read_bandwidth_gb_per_s=-15)
    )
    args, outputs = _tiered(io, hardware, 25)
    return Case(args, (str(hardware), "tiered_memory.tier2.read_bandwidth_gb_per_s", "-15"), outputs)


@case
def nan_tier2_bandwidth(io: Inputs) -> Case:
    hardware = edited_yaml(
        TPUV4_TIERED, io.tmp / "tiers.yaml", lambda d: d["tiered_memory"]["tier2"].update(read_bandwidth_gb_per_s=float("nan"))
    )
    args, outputs = _tiered(io, hardware, 25)
    return Case(args, (str(hardware), "tiered_memory.tier2.read_bandwidth_gb_per_s is nan"), outputs)


@case
def tier1_ratio_not_a_number(io: Inputs) -> Case:
    args, outputs = _tiered(io, TPUV4_TIERED, 25, "nan")
    return Case(args, ("Tier 1 ratio nan", "expected > 0"), outputs)


# --- FPGA clusters (MTrain) --------------------------------------------------------------------


def _mtrain(io: Inputs, devices: Path, *extra: object) -> tuple[tuple[object, ...], tuple[Path, ...]]:
    out = io.out("mtrain.parquet")
    args = ("mtrain-study", *io.workload, "--devices", devices, "--ips", FPGA_IPS, "--cluster", "cluster1", "--batch", 4)
    args += (*extra, "--out", out)
    return args, (out,)


@case
def fpga_dram_cannot_hold_the_model(io: Inputs) -> Case:
    def shrink(data: dict) -> None:
        for name in ("U50LV", "U30"):
            data["devices"][name]["dram_gb"] = 1e-6  # 1 KiB

    devices = edited_yaml(FPGA_DEVICES, io.tmp / "devices.yaml", shrink)
    args, outputs = _mtrain(io, devices, "--bandwidths", 3)
    return Case(args, ("DRAM cannot hold the training step", "U50LV", "MiB short"), outputs)


@case
def cluster_with_an_unknown_device(io: Inputs) -> Case:
    devices = edited_yaml(FPGA_DEVICES, io.tmp / "devices.yaml", lambda d: d["clusters"]["cluster1"]["devices"].append("U55C"))
    args, outputs = _mtrain(io, devices, "--bandwidths", 3)
    return Case(args, (str(devices), "clusters.cluster1.devices", "'U55C'", "U50LV"), outputs)


@case
def nan_fpga_dram_bandwidth(io: Inputs) -> Case:
    devices = edited_yaml(
        FPGA_DEVICES, io.tmp / "devices.yaml", lambda d: d["devices"]["U50LV"].update(dram_bandwidth_gb_per_s=float("nan"))
    )
    args, outputs = _mtrain(io, devices, "--bandwidths", 3)
    return Case(args, (str(devices), "devices.U50LV.dram_bandwidth_gb_per_s is nan"), outputs)


@case
def cluster_with_no_devices(io: Inputs) -> Case:
    devices = edited_yaml(FPGA_DEVICES, io.tmp / "devices.yaml", lambda d: d["clusters"]["cluster2"].update(devices=[]))
    args, outputs = _mtrain(io, devices, "--bandwidths", 3)
    return Case(args, (str(devices), "clusters.cluster2.devices", "at least one device"), outputs)


@case
def training_ip_constant_without_its_source(io: Inputs) -> Case:
    ips = edited_yaml(FPGA_IPS, io.tmp / "ips.yaml", lambda d: d["EF-Train"]["clock_mhz"].pop("source"))
    out = io.out("mtrain.parquet")
    args = ("mtrain-study", *io.workload, "--devices", FPGA_DEVICES, "--ips", ips, "--cluster", "cluster1", "--out", out)
    return Case(args, (str(ips), "EF-Train.clock_mhz", "non-empty source"), (out,))


@case
def darkfpga_sized_for_an_unknown_rule(io: Inputs) -> Case:
    ips = edited_yaml(FPGA_IPS, io.tmp / "ips.yaml", lambda d: d["DarkFPGA"]["sized_for"].update(value="half"))
    out = io.out("mtrain.parquet")
    args = ("mtrain-study", *io.workload, "--devices", FPGA_DEVICES, "--ips", ips, "--cluster", "cluster1", "--out", out)
    return Case(args, (str(ips), "DarkFPGA.sized_for", "'half'", "share, batch"), (out,))


def _scaling_on(io: Inputs, fewer: pd.DataFrame) -> tuple[tuple[object, ...], tuple[Path, ...], Path]:
    """Figure 12's job for 2 pairs of cluster 1, built on the table ``fewer`` of a smaller size."""
    path, out = io.tmp / "fewer.parquet", io.out("scaling.parquet")
    fewer.to_parquet(path)
    args = ("mtrain-scaling", *io.workload, "--devices", FPGA_DEVICES, "--ips", FPGA_IPS, "--cluster", "cluster1", "--batch", 4)
    return (*args, "--pairs", 2, "--bandwidths", 3, "--fewer-fpgas", path, "--out", out), (out,), path


@case
def scaling_built_on_a_larger_cluster(io: Inputs) -> Case:
    larger = pd.DataFrame({"fpgas": [8], "bandwidth_gb_per_s": [3.0], "ratio": ["4|0|0|0|0|0|0|0"], "assign": ["0"]})
    args, outputs, path = _scaling_on(io, larger)
    return Case(args, (str(path), "a cluster smaller than 2 x cluster1"), outputs)


@case
def scaling_built_on_a_table_without_assignments(io: Inputs) -> Case:
    args, outputs, path = _scaling_on(io, pd.DataFrame({"fpgas": [2], "bandwidth_gb_per_s": [3.0], "ratio": ["4|0"]}))
    return Case(args, (str(path), "missing columns ['assign']"), outputs)


@case
def vgg16_input_on_another_model(io: Inputs) -> Case:
    args, outputs = _mtrain(io, FPGA_DEVICES, "--bandwidths", 3, "--label", "vgg16", "--assume", "vgg16_input=224")
    return Case(args, ("vgg16_input=224 expects a workload of vgg16_bn",), outputs)


@case
def constants_table_of_a_stated_assumption(io: Inputs) -> Case:
    table = io.tmp / "t3.parquet"
    pd.DataFrame({"model": ["alexnet"], "cluster": ["cluster1"], "dfs_gflops": [1.0], "converting_gflops": [1.0]}).to_parquet(
        table
    )
    md, csv = io.out("c.md"), io.out("c.csv")
    args = ("mtrain-constants", "--paper", PAPER_MTRAIN, "--baseline", table, "--variant", "dfs_ratio_rule=positive", table)
    return Case((*args, "--csv", csv, "--md", md), ("--variant dfs_ratio_rule=positive", "fp32_mac_dsp"), (md, csv))


@case
def zero_p2p_bandwidth(io: Inputs) -> Case:
    args, outputs = _mtrain(io, FPGA_DEVICES, "--bandwidths", 3, 0)
    return Case(args, ("P2P bandwidth 0 GB/s", "> 0"), outputs)


@case
def zero_ratio_step(io: Inputs) -> Case:
    args, outputs = _mtrain(io, FPGA_DEVICES, "--bandwidths", 3, "--step", 0)
    return Case(args, ("argument --step", "'0'", "an integer >= 1"), outputs)


@case
def negative_tier1_share(io: Inputs) -> Case:
    out = io.out("study.parquet")
    args = ("tiered-study", *io.bert, "--hardware", TPUV4_TIERED, "--ratios", 25, "--tier1-share-per-ratio", -5, "--out", out)
    return Case(args, ("argument --tier1-share-per-ratio", "'-5'", "a number > 0"), (out,))


def assert_nothing_left(*outputs: Path) -> None:
    for path in outputs:
        assert not path.exists(), path
        if path.parent.is_dir():
            assert not list(path.parent.glob(f".{path.name}*")), f"a temporary file of {path.name} was left behind"


@pytest.mark.parametrize("name", list(CASES))
def test_bad_input_fails_cleanly(name: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    bad = CASES[name](Inputs(tmp_path, request))
    result = cli(*bad.args)
    assert_clean_failure(result, *bad.words, left=bad.outputs[0])
    assert_nothing_left(*bad.outputs)


def test_the_console_script_exits_2_too(tiny_tables: tuple[Path, Path], tmp_path: Path) -> None:
    """One case through the real process: the exit status and stderr a shell sees."""
    ops, tensors = tiny_tables
    out = tmp_path / "sweep.parquet"
    result = traincost(
        "sweep", "--ops", ops, "--tensors", tensors, "--hardware", EDGE_TPU, "--grid", json.dumps({"x_pes": "four"}),
        "--step", "training", "--out", out,
    )  # fmt: skip
    assert_clean_failure(result, "'x_pes'", "expected a list of numbers", left=out)
    assert "Traceback" not in result.stderr


def test_the_in_process_runner_reports_a_crash_as_status_1(monkeypatch: pytest.MonkeyPatch) -> None:
    """``cli()`` must not hide a traceback that the console script would show."""

    def crash(_: object) -> None:
        raise KeyError("boom")

    monkeypatch.setattr("traincost.cli.frontend._cmd_models", crash)
    result = cli("models")
    assert result.returncode == 1 and "KeyError: 'boom'" in result.stderr


@pytest.mark.parametrize(
    ("grid", "words"),
    [
        ({"x_pes": "four"}, ["grid", "x_pes", "'four'"]),
        ({"x_pes": [1, 2], "lanes": []}, ["grid", "lanes"]),
        ({"x_pe": [1, 2]}, ["hardware_sweeps.edge.grid.x_pe", "not a parameter", "x_pes"]),
    ],
    ids=["grid_value_of_the_wrong_type", "empty_grid", "grid_key_not_a_parameter"],
)
def test_bad_sweep_grid_in_the_config_fails_before_any_job(tmp_path: Path, grid: dict, words: list[str]) -> None:
    config = _config()
    config["hardware_sweeps"]["edge"]["grid"] = grid
    result = snakemake(tmp_path, config)
    assert result.returncode != 0
    for word in words:
        assert word in result.stderr, (word, result.stderr[-1500:])
    assert not (tmp_path / "results").exists()


def test_the_reliability_page_states_the_number_of_cases() -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "reliability.md").read_text()
    assert f"**{len(CASES)} bad-input cases**" in page, "update the count in docs/reliability.md"
