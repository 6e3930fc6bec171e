"""Hand-built Workloads small enough to cost by hand."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from traincost.workload import LOOP_DIMS, Workload

__all__ = [
    "ZIGZAG_LAYERS",
    "conv_bn_net",
    "conv_bn_relu_workload",
    "conv_relu_workload",
    "conv_workload",
    "linear_bn_net",
    "relu_conv_workload",
    "separate_layers_workload",
    "twin_convs_workload",
]


def conv_relu_workload(*, relu: bool = True) -> Workload:
    """A 1x1 convolution (B=1, K=C=4, 4x4) on 1-byte elements, optionally followed by a ReLU.

    Tensors: 0 input x [1,4,4,4] (64 elements), 1 weight w [4,4,1,1] (16), 2 conv output y [1,4,4,4],
    3 relu output z (the step's output).
    """
    dims = {"B": 1, "K": 4, "C": 4, "OY": 4, "OX": 4, "FY": 1, "FX": 1, "G": 1}
    ops = [
        {"op": 0, "name": "conv", "op_type": "Conv", "kind": "conv", "phase": "forward", "layer": "conv"}
        | dims
        | {"macs": 256, "elementwise_ops": 0, "inputs": [0, 1], "outputs": [2]}
    ]
    if relu:
        ops.append(
            {"op": 1, "name": "relu", "op_type": "Relu", "kind": "eltwise", "phase": "forward", "layer": "relu"}
            | dict.fromkeys(LOOP_DIMS, 1)
            | {"macs": 0, "elementwise_ops": 64, "inputs": [2], "outputs": [3]}
        )
    tensors = [
        {"tensor": 0, "name": "x", "kind": "input", "shape": [1, 4, 4, 4], "bytes": 64, "producer": -1, "consumers": [0]},
        {"tensor": 1, "name": "w", "kind": "weight", "shape": [4, 4, 1, 1], "bytes": 16, "producer": -1, "consumers": [0]},
        {
            "tensor": 2,
            "name": "y",
            "kind": "activation" if relu else "output",
            "shape": [1, 4, 4, 4],
            "bytes": 64,
            "producer": 0,
            "consumers": [1] if relu else [],
        },
    ]
    if relu:
        tensors.append(
            {"tensor": 3, "name": "z", "kind": "output", "shape": [1, 4, 4, 4], "bytes": 64, "producer": 1, "consumers": []}
        )
    frame = pd.DataFrame(tensors).assign(dtype_bytes=1, saved_for_backward=False, updates=-1)
    return Workload(ops=pd.DataFrame(ops), tensors=frame, meta={"model": "conv_relu"})


def conv_workload(
    *,
    batch: int,
    channels_in: int,
    channels_out: int,
    input_hw: int,
    kernel: int = 1,
    stride: int = 1,
    dilation: int = 1,
    groups: int = 1,
) -> Workload:
    """One square convolution on 1-byte elements, no padding: tensors 0 input, 1 weight, 2 output (the step's); K
    and C per group."""
    out_hw = (input_hw - dilation * (kernel - 1) - 1) // stride + 1
    k, c = channels_out // groups, channels_in // groups
    dims = {"B": batch, "K": k, "C": c, "OY": out_hw, "OX": out_hw, "FY": kernel, "FX": kernel, "G": groups}
    window = {"stride_y": stride, "stride_x": stride, "dilation_y": dilation, "dilation_x": dilation}
    macs = batch * channels_out * c * out_hw * out_hw * kernel * kernel
    ops = [
        {"op": 0, "name": "conv", "op_type": "Conv", "kind": "conv", "phase": "forward", "layer": "conv"}
        | dims
        | window
        | {"macs": macs, "elementwise_ops": 0, "inputs": [0, 1], "outputs": [2]}
    ]
    shapes = {
        "x": [batch, channels_in, input_hw, input_hw],
        "w": [channels_out, c, kernel, kernel],
        "y": [batch, channels_out, out_hw, out_hw],
    }
    kinds = {"x": "input", "w": "weight", "y": "output"}
    tensors = [
        {
            "tensor": t,
            "name": name,
            "kind": kinds[name],
            "shape": shape,
            "bytes": int(pd.Series(shape).prod()),
            "producer": 0 if name == "y" else -1,
            "consumers": [] if name == "y" else [0],
        }
        for t, (name, shape) in enumerate(shapes.items())
    ]
    frame = pd.DataFrame(tensors).assign(dtype_bytes=1, saved_for_backward=False, updates=-1)
    return Workload(ops=pd.DataFrame(ops), tensors=frame, meta={"model": "conv"})


# layers of ResNet-18 and MobileNetV2 as ZigZag parses them, for ``separate_layers_workload``: a 3x3 convolution, a
# strided 1x1 one, the classifier and a depthwise 3x3 convolution
ZIGZAG_LAYERS = (
    {"name": "conv3x3", "kind": "conv", "B": 1, "K": 64, "C": 64, "OY": 14, "OX": 14, "FY": 3, "FX": 3, "G": 1, "stride": 1},
    {"name": "down", "kind": "conv", "B": 1, "K": 128, "C": 64, "OY": 14, "OX": 14, "FY": 1, "FX": 1, "G": 1, "stride": 2},
    {"name": "fc", "kind": "gemm", "B": 1, "K": 1000, "C": 512, "OY": 1, "OX": 1, "FY": 1, "FX": 1, "G": 1, "stride": 1},
    {"name": "dw", "kind": "conv", "B": 1, "K": 1, "C": 1, "OY": 112, "OX": 112, "FY": 3, "FX": 3, "G": 32, "stride": 1},
)


def separate_layers_workload(layers: Sequence[Mapping[str, int | str]]) -> Workload:
    """Convolutions and GEMMs that share no tensor, on 1-byte elements, as ZigZag costs a network's layers: each its
    own input, weight and output (the step's). A layer gives its ``name``, ``kind`` (conv or gemm), the loop sizes
    of ``LOOP_DIMS`` (K and C per group) and its ``stride``; its input spans its windows (no padding)."""
    ops, tensors = [], []
    for i, layer in enumerate(layers):
        dims = {dim: int(layer[dim]) for dim in LOOP_DIMS}
        stride = int(layer["stride"])
        rows, columns = ((dims[o] - 1) * stride + dims[f] for o, f in (("OY", "FY"), ("OX", "FX")))
        channels_in, channels_out = dims["C"] * dims["G"], dims["K"] * dims["G"]
        shapes = {
            "input": [dims["B"], channels_in, rows, columns],
            "weight": [channels_out, dims["C"], dims["FY"], dims["FX"]],
            "output": [dims["B"], channels_out, dims["OY"], dims["OX"]],
        }
        ids = {kind: 3 * i + j for j, kind in enumerate(shapes)}
        macs = dims["B"] * channels_out * dims["C"] * dims["OY"] * dims["OX"] * dims["FY"] * dims["FX"]
        ops.append(
            {"op": i, "name": layer["name"], "op_type": str(layer["kind"]).title(), "kind": layer["kind"]}
            | {"phase": "forward", "layer": layer["name"]}
            | dims
            | {"stride_y": stride, "stride_x": stride, "dilation_y": 1, "dilation_x": 1}
            | {"macs": macs, "elementwise_ops": 0, "inputs": [ids["input"], ids["weight"]], "outputs": [ids["output"]]}
        )
        tensors += [
            {
                "tensor": ids[kind],
                "name": f"{layer['name']}.{kind}",
                "kind": kind,
                "shape": shape,
                "bytes": int(pd.Series(shape).prod()),
                "producer": i if kind == "output" else -1,
                "consumers": [] if kind == "output" else [i],
            }
            for kind, shape in shapes.items()
        ]
    frame = pd.DataFrame(tensors).assign(dtype_bytes=1, saved_for_backward=False, updates=-1)
    return Workload(ops=pd.DataFrame(ops), tensors=frame, meta={"model": "separate_layers"})


def conv_bn_net() -> object:
    """A torch module small enough to follow by hand: a 3x3 convolution (1 -> 2 channels, 4x4, no bias), its
    BatchNorm, a ReLU and a linear classifier (32 -> 3). A model factory (``factory_architecture``)."""
    from torch import nn  # noqa: PLC0415 - torch only for the tests that build this module

    return nn.Sequential(nn.Conv2d(1, 2, 3, padding=1, bias=False), nn.BatchNorm2d(2), nn.ReLU(), nn.Flatten(), nn.Linear(32, 3))


def conv_bn_relu_workload() -> Workload:
    """The 1x1 convolution of :func:`conv_relu_workload` (64-element output y), then a BatchNorm decomposed into
    three SIMD ops of one layer (mean m = ReduceMean(y) [1,4,1,1], d = Sub(y, m), n = Mul(d, gamma)), then a ReLU
    of n (the step's output z). 1-byte elements.

    Tensors: 0 x (64), 1 w (16), 2 y (64), 3 m (4), 4 d (64), 5 gamma (4), 6 n (64), 7 z (64).
    """
    ones = dict.fromkeys(LOOP_DIMS, 1)
    dims = {"B": 1, "K": 4, "C": 4, "OY": 4, "OX": 4, "FY": 1, "FX": 1, "G": 1}
    bn = "bn/BatchNormalization_BatchNormInternal"

    rows = [  # name, kind, layer, loops, macs, elementwise ops, inputs, outputs
        ("Conv", "conv", "conv", dims, 256, 0, [0, 1], [2]),
        ("ReduceMean", "reduce", bn, ones, 0, 64, [2], [3]),
        ("Sub", "eltwise", bn, ones, 0, 64, [2, 3], [4]),
        ("Mul", "eltwise", bn, ones, 0, 64, [4, 5], [6]),
        ("Relu", "eltwise", "relu", ones, 0, 64, [6], [7]),
    ]
    ops = [
        {"op": i, "name": name, "op_type": name, "kind": kind, "phase": "forward", "layer": layer}
        | loops
        | {"macs": macs, "elementwise_ops": elementwise, "inputs": inputs, "outputs": outputs}
        for i, (name, kind, layer, loops, macs, elementwise, inputs, outputs) in enumerate(rows)
    ]
    sizes = {"x": 64, "w": 16, "y": 64, "m": 4, "d": 64, "gamma": 4, "n": 64, "z": 64}
    kinds = {"x": "input", "w": "weight", "gamma": "weight", "z": "output"}
    producers = {"y": 0, "m": 1, "d": 2, "n": 3, "z": 4}
    consumers = {"x": [0], "w": [0], "y": [1, 2], "m": [2], "d": [3], "gamma": [3], "n": [4], "z": []}
    tensors = [
        {
            "tensor": t,
            "name": name,
            "kind": kinds.get(name, "activation"),
            "shape": [size],
            "bytes": size,
            "producer": producers.get(name, -1),
            "consumers": consumers[name],
        }
        for t, (name, size) in enumerate(sizes.items())
    ]
    frame = pd.DataFrame(tensors).assign(dtype_bytes=1, saved_for_backward=False, updates=-1)
    return Workload(ops=pd.DataFrame(ops), tensors=frame, meta={"model": "conv_bn_relu"})


def linear_bn_net() -> object:
    """A linear layer, a BatchNorm1d (no convolution before it to fold into), a Dropout, a ReLU and a linear
    classifier (8 -> 16 -> 3). A model factory (``factory_architecture``)."""
    from torch import nn  # noqa: PLC0415 - torch only for the tests that build this module

    return nn.Sequential(nn.Flatten(), nn.Linear(8, 16), nn.BatchNorm1d(16), nn.Dropout(0.5), nn.ReLU(), nn.Linear(16, 3))


def relu_conv_workload(*, batch: int, channels: int, input_hw: int, kernel: int) -> Workload:
    """A ReLU feeding a square convolution (``channels`` in and out, no padding, stride 1) on 1-byte elements.

    Tensors: 0 input x, 1 relu output a (the convolution's streamed input), 2 weight w, 3 convolution output y (the
    step's output)."""
    out_hw = input_hw - kernel + 1
    dims = {"B": batch, "K": channels, "C": channels, "OY": out_hw, "OX": out_hw, "FY": kernel, "FX": kernel, "G": 1}
    window = {"stride_y": 1, "stride_x": 1, "dilation_y": 1, "dilation_x": 1}
    image = [batch, channels, input_hw, input_hw]
    ops = [
        {"op": 0, "name": "relu", "op_type": "Relu", "kind": "eltwise", "phase": "forward", "layer": "relu"}
        | dict.fromkeys(LOOP_DIMS, 1)
        | dict.fromkeys(window, 1)
        | {"macs": 0, "elementwise_ops": int(pd.Series(image).prod()), "inputs": [0], "outputs": [1]},
        {"op": 1, "name": "conv", "op_type": "Conv", "kind": "conv", "phase": "forward", "layer": "conv"}
        | dims
        | window
        | {"macs": batch * channels * channels * out_hw * out_hw * kernel * kernel, "elementwise_ops": 0}
        | {"inputs": [1, 2], "outputs": [3]},
    ]
    shapes = {
        "x": (image, "input", -1, [0]),
        "a": (image, "activation", 0, [1]),
        "w": ([channels, channels, kernel, kernel], "weight", -1, [1]),
        "y": ([batch, channels, out_hw, out_hw], "output", 1, []),
    }
    tensors = [
        {"tensor": t, "name": name, "kind": kind, "shape": shape, "bytes": int(pd.Series(shape).prod())}
        | {"producer": producer, "consumers": consumers}
        for t, (name, (shape, kind, producer, consumers)) in enumerate(shapes.items())
    ]
    frame = pd.DataFrame(tensors).assign(dtype_bytes=1, saved_for_backward=False, updates=-1)
    return Workload(ops=pd.DataFrame(ops), tensors=frame, meta={"model": "relu_conv"})


def twin_convs_workload(*, channels_out: int, rows: int = 4) -> Workload:
    """Two 1x1 convolutions reading the same input (B=1, C=2, 16 pixels in ``rows`` rows) on 1-byte elements, each
    its own step output.

    Tensors: 0 input x, 1 and 2 their weights, 3 and 4 their outputs."""
    columns = 16 // rows
    dims = {"B": 1, "K": channels_out, "C": 2, "OY": rows, "OX": columns, "FY": 1, "FX": 1, "G": 1}
    ops = [
        {"op": k, "name": f"conv{k}", "op_type": "Conv", "kind": "conv", "phase": "forward", "layer": f"conv{k}"}
        | dims
        | {"macs": channels_out * 2 * 16, "elementwise_ops": 0, "inputs": [0, 1 + k], "outputs": [3 + k]}
        for k in range(2)
    ]
    image, weight = [rows, columns], [channels_out, 2, 1, 1]
    shapes = [[1, 2, *image], weight, weight, [1, channels_out, *image], [1, channels_out, *image]]
    kinds = ["input", "weight", "weight", "output", "output"]
    producers, consumers = [-1, -1, -1, 0, 1], [[0, 1], [0], [1], [], []]
    tensors = [
        {"tensor": t, "name": f"t{t}", "kind": kinds[t], "shape": shapes[t], "bytes": int(pd.Series(shapes[t]).prod())}
        | {"producer": producers[t], "consumers": consumers[t]}
        for t in range(5)
    ]
    frame = pd.DataFrame(tensors).assign(dtype_bytes=1, saved_for_backward=False, updates=-1)
    return Workload(ops=pd.DataFrame(ops), tensors=frame, meta={"model": "twin_convs"})


def write_zigzag_loma_tables(folder: Path) -> None:
    """ZigZag's cached LOMA tables (one per objective, as ``bench/crosscheck/zigzag_crosscheck.py`` writes them) of
    ResNet-18's ``layer1.0.conv1`` on ``tpu_like``, its numbers as ZigZag 3.9.1 gave them, into ``folder``."""
    shape = {"layer": "layer1/layer1.0/conv1", "kind": "conv", "B": 1, "K": 64, "C": 64, "OY": 56, "OX": 56, "FY": 3}
    shape |= {"FX": 3, "G": 1, "stride_y": 1, "stride_x": 1, "dilation_y": 1, "dilation_x": 1, "IY": 56, "IX": 56}
    zigzag = {"zigzag_cycles": 138048.0, "zigzag_pj": 6.6996e7, "zigzag_dram_pj": 3.96032e7, "zigzag_dram_bytes": 438272.0}
    zigzag |= {"zigzag_onloading_cycles": 25088.0, "zigzag_offloading_cycles": 2.0, "zigzag_spatial_utilization": 1.0}
    zigzag |= {"zigzag_pj_rf_2B": 4.9903e6, "zigzag_pj_sram_2MB": 6.7925e6, "zigzag_pj_rf_128B": 1.0986e7}
    row = shape | {"times": 1, "macs": 115605504} | zigzag | {"zigzag_temporal_mapping": "", "zigzag_cpu_seconds": 38.0}
    folder.mkdir(parents=True, exist_ok=True)
    for opt in ("latency", "energy", "EDP"):
        table = pd.DataFrame([row]).assign(network="resnet18", hardware="tpu_like", zigzag_seconds=40.0)
        table.to_parquet(folder / f"zigzag_resnet18_tpu_like_lpf6_{opt}.parquet")
