"""The inference step: an eval-mode export, BatchNorm folded or one op, no dropout, no loss, every node forward."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
import torch

from traincost import models
from traincost.cost import op_table
from traincost.frontend.onnx.decompose import decompose
from traincost.frontend.onnx.execute import Executable
from traincost.frontend.onnx.graph import LAYER_KEY, PHASE_KEY, model_meta, node_meta
from traincost.frontend.onnx.inference_graph import export_inference_step
from traincost.frontend.onnx.lower import lower
from traincost.models import factory_architecture
from traincost.signature import InputSpec, draw_tensors

pytestmark = pytest.mark.ort  # the ONNX front end throughout (tests/conftest.py: pytest_ignore_collect)


def test_resnet18_inference_is_its_convolutions_with_batchnorm_folded(chain) -> None:
    graph = export_inference_step("resnet18_cifar", batch=2, seed=0)
    types = Counter(node.op_type for node in graph.graph.node)
    # 20 convolutions (17 of 3x3, 3 shortcut 1x1), 17 ReLUs, 8 residual adds, the pool, flatten and the classifier
    assert types == {"Conv": 20, "Relu": 17, "Add": 8, "GlobalAveragePool": 1, "Flatten": 1, "Gemm": 1}
    assert model_meta(graph)["stage"] == "inference_step"
    assert {node_meta(n, PHASE_KEY) for n in graph.graph.node} == {"forward"}
    assert node_meta(graph.graph.node[0], LAYER_KEY) == "stem/stem.0/Conv"
    workload = lower(decompose(graph))
    assert len(op_table(workload)) == 47  # the flatten is a view
    assert set(workload.tensors["kind"]) == {"input", "weight", "activation", "output"}
    # the training step's forward pass has training-mode BatchNorm split into element-wise ops, running statistics
    # written and a loss: many times the ops
    training = op_table(chain("resnet18_cifar", 2).workload, phases=("forward",))
    assert len(training) > 7 * 47


def test_batchnorm_without_a_convolution_stays_one_op_and_dropout_goes() -> None:
    name = factory_architecture(
        "tests.workloads:linear_bn_net", inputs=(InputSpec("x", (8,), "float32", 0, 3),), name="linear_bn_net"
    )
    graph = export_inference_step(name, batch=4, seed=0)
    types = Counter(node.op_type for node in graph.graph.node)
    assert types["BatchNormalization"] == 1 and "Dropout" not in types
    workload = lower(decompose(graph))
    assert workload.ops.set_index("op_type").loc["BatchNormalization", "kind"] == "norm"
    # the graph computes the module's eval-mode output (export checks it too; here against a module built anew)
    torch.manual_seed(0)
    module = models.build_model(name).eval()
    feeds = draw_tensors([InputSpec("x", (4, 8), "float32", 0, 3)], seed=1)
    with torch.no_grad():
        expected = module(torch.from_numpy(feeds["x"])).numpy()
    actual = Executable(graph).run(feeds, ["logits"])["logits"]
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-6)


def test_an_onnx_file_has_no_inference_export(tmp_path, capsys) -> None:
    from traincost.cli import main  # noqa: PLC0415

    path = tmp_path / "net.onnx"
    path.write_bytes(b"")
    assert main(["export", "--model", str(path), "--batch", "1", "--inference", "--out", str(tmp_path / "out.onnx")]) != 0
    assert "--inference: for a torch module" in capsys.readouterr().err
    assert not (tmp_path / "out.onnx").exists()
