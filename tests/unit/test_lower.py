"""lower: the Workload IR of real training graphs, checked against analytic counts."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from traincost.cost import op_table
from traincost.frontend.onnx.graph import set_node_meta
from traincost.frontend.onnx.lower import lower
from traincost.workload import LOOP_DIMS, OP_KINDS, PHASES, TENSOR_KINDS, Workload

pytestmark = pytest.mark.ort  # the ONNX front end throughout (tests/conftest.py: pytest_ignore_collect)

GPT2_TINY = {"n_layer": 2, "d_model": 64, "n_head": 4, "seq_len": 32, "vocab_size": 257}


def _conv_macs(workload: Workload, kind: str) -> int:
    return int(workload.ops.loc[workload.ops["kind"] == kind, "macs"].sum())


@pytest.mark.parametrize(("name", "gmacs"), [("resnet18", 1.814), ("resnet18_cifar", 0.556)])
def test_forward_macs_match_the_analytic_count(chain, name: str, gmacs: float) -> None:
    workload = chain(name, 1).workload
    assert workload.forward_macs / 1e9 == pytest.approx(gmacs, rel=2e-3)


def test_gpt2_forward_macs_follow_the_formula(chain) -> None:
    batch = 2
    workload = chain("gpt2", batch, "sgd", GPT2_TINY).workload
    layers, d, t, vocab = GPT2_TINY["n_layer"], GPT2_TINY["d_model"], GPT2_TINY["seq_len"], GPT2_TINY["vocab_size"]
    # per token and layer: QKV 3d², projection d², MLP 8d², scores and weighted sum 2·T·d; LM head d·V
    expected = batch * t * (layers * (12 * d * d + 2 * t * d) + d * vocab)
    assert workload.forward_macs == expected


def test_convolution_training_macs_are_three_times_forward_but_the_first_input_gradient(chain) -> None:
    workload = chain("resnet18_cifar", 2).workload
    forward = _conv_macs(workload, "conv")
    first = int(workload.ops[workload.ops["kind"] == "conv"].iloc[0]["macs"])
    assert _conv_macs(workload, "conv_wgrad") == forward
    assert _conv_macs(workload, "conv_dgrad") == forward - first
    assert (forward + _conv_macs(workload, "conv_wgrad") + _conv_macs(workload, "conv_dgrad")) / forward == pytest.approx(
        3.0, abs=0.05
    )


def test_loop_dimensions_multiply_to_the_macs(chain) -> None:
    ops = chain("resnet18_cifar", 2).workload.ops
    mac_ops = ops[ops["macs"] > 0]
    assert set(mac_ops["kind"]) == {"conv", "conv_dgrad", "conv_wgrad", "gemm"}
    product = np.prod(mac_ops[list(LOOP_DIMS)].to_numpy(dtype=np.int64), axis=1)
    assert np.array_equal(product, mac_ops["macs"].to_numpy())
    # the stride-2 conv of stage 2 and both its gradients carry the forward loop nest
    layer = ops[(ops["layer"] == "stages/stages.1/stages.1.0/conv1/Conv") & ops["kind"].str.startswith("conv")]
    assert sorted(layer["kind"]) == ["conv", "conv_dgrad", "conv_wgrad"]
    dims = layer[list(LOOP_DIMS)].drop_duplicates()
    assert len(dims) == 1
    assert dims.iloc[0].to_dict() == {"B": 2, "K": 128, "C": 64, "OY": 16, "OX": 16, "FY": 3, "FX": 3, "G": 1}


def test_schema_vocabularies_and_phases(chain) -> None:
    workload = chain("resnet18_cifar", 2, "adam").workload
    ops, tensors = workload.ops, workload.tensors
    assert set(ops["kind"]) <= set(OP_KINDS)
    assert set(ops["phase"]) == {"forward", "backward", "optimizer"} and set(ops["phase"]) <= set(PHASES)
    assert set(tensors["kind"]) <= set(TENSOR_KINDS)
    assert list(ops["op"]) == list(range(len(ops)))
    # execution order: every op reads tensors that exist before it
    producer = dict(zip(tensors["tensor"], tensors["producer"], strict=True))
    for op, inputs in zip(ops["op"], ops["inputs"], strict=True):
        assert all(producer[t] < op for t in inputs)
    phases = list(ops["phase"])
    first_optimizer = phases.index("optimizer")
    assert set(phases[first_optimizer:]) == {"optimizer"}, "the optimizer runs after the whole backward pass"
    loss_op = int(ops.index[ops["name"] == ops.loc[ops["layer"] == "loss", "name"].iloc[0]][0])
    assert (ops.loc[ops["kind"].isin(["conv_dgrad", "conv_wgrad"]), "op"] > loss_op).all()


def test_tensor_kinds_and_sizes(chain) -> None:
    workload = chain("resnet18_cifar", 2, "adam").workload
    tensors = workload.tensors.set_index("name")
    weights = tensors[tensors["kind"] == "weight"]
    own = weights[weights["updates"] < 0]
    assert len(own) == 62 and own["bytes"].sum() == 11_173_962 * 4
    assert tensors.loc["stages.0.0.conv1.weight_grad", "kind"] == "weight_grad"
    assert tensors.loc["stages.0.0.conv1.weight.exp_avg", "kind"] == "optimizer_state"
    assert tensors.loc["stages.0.0.conv1.weight.updated", "updates"] == tensors.loc["stages.0.0.conv1.weight", "tensor"]
    assert tensors.loc["stem.1.running_mean", "kind"] == "buffer"
    assert tensors.loc["input", "kind"] == "input" and bool(tensors.loc["input", "saved_for_backward"])
    assert tensors.loc["loss", "kind"] == "output"
    assert (tensors["bytes"] == tensors["shape"].map(lambda s: int(np.prod(s))) * tensors["dtype_bytes"]).all()
    saved = tensors[tensors["saved_for_backward"]]
    assert set(saved["kind"]) <= {"input", "activation"}
    assert workload.meta["model"] == "resnet18_cifar" and workload.meta["optimizer"] == "adam"
    assert workload.meta["precision"] == "fp32"


def test_lowering_is_deterministic_and_roundtrips_parquet(chain, tmp_path) -> None:
    built = chain("resnet18_cifar", 2)
    first, second = tmp_path / "a", tmp_path / "b"
    built.workload.write(first / "ops.parquet", first / "tensors.parquet")
    lower(built.decomposed).write(second / "ops.parquet", second / "tensors.parquet")
    for name in ("ops.parquet", "tensors.parquet"):
        assert (first / name).read_bytes() == (second / name).read_bytes()
    back = Workload.read(first / "ops.parquet", first / "tensors.parquet")
    assert back.total_macs == built.workload.total_macs
    assert back.meta == dict(built.workload.meta)


def test_training_graph_size(chain) -> None:
    """MONET quotes about 500 nodes for ResNet-18 training; with the optimizer unrolled per
    parameter we have more, and report how many per phase."""
    ops = chain("resnet18", 1).workload.ops
    counts = ops["phase"].value_counts()
    assert 400 <= counts["forward"] + counts["backward"] <= 1200
    assert counts["optimizer"] == 62 * 2  # SGD: Mul and Sub per parameter


def test_strided_convolutions_carry_their_stride_through_all_three_passes(chain) -> None:
    workload = chain("resnet18_cifar", 2).workload
    ops = workload.ops
    shortcut = ops[(ops["layer"] == "stages/stages.1/stages.1.0/shortcut/shortcut.0/Conv") & ops["kind"].str.startswith("conv")]
    assert sorted(shortcut["kind"]) == ["conv", "conv_dgrad", "conv_wgrad"]
    assert (shortcut[["stride_y", "stride_x"]] == 2).all().all() and (shortcut[["dilation_y", "dilation_x"]] == 1).all().all()
    plain = ops[ops["kind"].isin(["gemm", "eltwise"])]
    assert (plain[["stride_y", "stride_x", "dilation_y", "dilation_x"]] == 1).all().all()
    # the 1x1 stride-2 shortcut reads a quarter of its 2x64x32x32 input, forward and in its weight gradient;
    # the data gradient reads all of dY (2x128x16x16)
    table = op_table(workload)
    rows = {table.kind[i]: i for i in np.flatnonzero(np.isin(table.op, shortcut["op"].to_numpy()))}
    assert table.x_elems[rows["conv"]] == 2 * 64 * 16 * 16
    assert table.x_elems[rows["conv_wgrad"]] == 2 * 64 * 16 * 16
    assert table.x_elems[rows["conv_dgrad"]] == 2 * 128 * 16 * 16


def test_a_transposed_weight_is_a_view_not_a_saved_activation(chain) -> None:
    """torch exports GPT-2's every Linear as Transpose(W) + MatMul, and ONNX Runtime's MatMul gradient
    reads the transposed weight: that transpose is a view of the weight (torch's ``W.t()``), so it
    saves nothing, and a view the backward reads saves the activation it views, once."""
    workload = chain("gpt2_small", 2).workload
    tensors, ops = workload.tensors, workload.ops
    weights = set(tensors.loc[tensors["kind"] == "weight", "tensor"])
    transposed = tensors[tensors["producer"].isin(ops.loc[ops["op_type"] == "Transpose", "op"])]
    of_weights = transposed[transposed["view_of"].isin(weights)]
    assert len(of_weights) >= 8  # QKV, projection, two MLP layers in each of GPT-2 small's two blocks
    assert not of_weights["saved_for_backward"].any()
    read_in_backward = of_weights["consumers"].map(lambda readers: any(ops.loc[r, "phase"] == "backward" for r in readers))
    assert read_in_backward.all()
    saved = tensors[tensors["saved_for_backward"]]
    assert (saved["view_of"] == -1).all()  # storages, never views
    assert set(saved["kind"]) <= {"input", "activation"}
    views = tensors[tensors["view_of"] >= 0]
    assert (tensors.loc[views["view_of"], "view_of"].to_numpy() == -1).all()  # chains end at a storage


def _normalize_step() -> onnx.ModelProto:
    """A hand-made step: ``F.normalize(x)`` as ONNX exports it (ReduceL2, a Clip, the Clip output expanded
    to x's shape, a Div), a backward Div that reads the expanded divisor, and a backward Expand of a
    per-channel gradient reshaped to rows, as a global average pool's gradient is."""
    x, norm, row = (2, 3, 64, 32), (2, 3, 64, 1), (2, 3, 64 * 32)
    nodes = []
    for phase, op_type, inputs, output in [
        ("forward", "ReduceL2", ["x", "last_axis"], "norm"),
        ("forward", "Clip", ["norm", "eps"], "clipped"),
        ("forward", "Expand", ["clipped", "x_shape"], "divisor"),
        ("forward", "Div", ["x", "divisor"], "y"),
        ("backward", "Div", ["dy", "divisor"], "dx"),
        ("backward", "Expand", ["clipped", "x_shape"], "spread"),
        ("backward", "Reshape", ["spread", "row_shape"], "rows"),
        ("backward", "Neg", ["rows"], "drows"),
    ]:
        node = helper.make_node(op_type, inputs, [output], name=output, **({"keepdims": 1} if op_type == "ReduceL2" else {}))
        set_node_meta(node, phase=phase)
        nodes.append(node)
    constants = [
        helper.make_tensor("last_axis", TensorProto.INT64, [1], [-1]),
        helper.make_tensor("eps", TensorProto.FLOAT, [], [1e-12]),
        helper.make_tensor("x_shape", TensorProto.INT64, [4], list(x)),
        helper.make_tensor("row_shape", TensorProto.INT64, [3], list(row)),
    ]
    value = helper.make_tensor_value_info
    shapes = {"norm": norm, "clipped": norm, "divisor": x, "y": x, "spread": x, "rows": row}
    graph = helper.make_graph(
        nodes,
        "normalize",
        [value("x", TensorProto.FLOAT, x), value("dy", TensorProto.FLOAT, x)],
        [value("dx", TensorProto.FLOAT, x), value("drows", TensorProto.FLOAT, row)],
        initializer=constants,
        value_info=[value(name, TensorProto.FLOAT, shape) for name, shape in shapes.items()],
    )
    return helper.make_model(graph)


def test_an_expand_is_a_view_and_a_reshape_of_it_a_copy() -> None:
    """torch's ``expand`` is a stride-0 view: ``F.normalize``'s division saves the (2, 3, 64, 1) norm its
    divisor expands, not a (2, 3, 64, 32) tensor (Swin V2's cosine attention). A reshape that merges an
    expanded dimension has no strides to express it and copies, as torch's ``reshape`` does."""
    tensors = lower(_normalize_step()).tensors.set_index("name")
    assert tensors.loc["divisor", "view_of"] == tensors.loc["clipped", "tensor"]
    saved = tensors[tensors["saved_for_backward"] & (tensors["kind"] == "activation")]
    assert set(saved.index) == {"clipped"}
    assert saved["bytes"].sum() == 2 * 3 * 64 * 4
    assert tensors.loc["spread", "view_of"] == tensors.loc["clipped", "tensor"]
    assert tensors.loc["rows", "view_of"] == -1
