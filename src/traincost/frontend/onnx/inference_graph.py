"""The inference step of a model: its eval-mode forward graph, as a deployment tool would run it.

MONET costs inference apart from training: "Fig. 10. Latency and energy for ResNet18 inference", and the
sweeps of Figures 1, 8 and 9 set "inference and training workloads" side by side. An inference graph is
not the training step's forward pass: BatchNorm is in inference form and folded into the convolution
before it where the pattern allows (torch's exporter does so in eval mode with constant folding, as
deployment tools do; elsewhere it stays one ``BatchNormalization`` op), it writes no running statistics,
dropout is gone and no loss is computed. The training step keeps its training-mode BatchNorm
(:mod:`traincost.frontend.onnx.export`).
"""

from __future__ import annotations

import logging

import onnx
import onnx_ir as ir
from onnx_ir.passes.common import LiftConstantsToInitializersPass
from onnxscript import optimizer

from traincost import models
from traincost.frontend.onnx.execute import record_shapes, weightless
from traincost.frontend.onnx.export import check_against_torch, record_signature, torch_export
from traincost.frontend.onnx.graph import set_model_meta, set_node_meta
from traincost.frontend.onnx.train_graph import forward_layer_name
from traincost.frontend.shared.torch_model import INFERENCE_STAGE, LOGITS, built_model, eval_output, label_spec

__all__ = ["export_inference_step", "INFERENCE_STAGE"]

log = logging.getLogger(__name__)

_FLOATS = (onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.DOUBLE, onnx.TensorProto.BFLOAT16)


def export_inference_step(
    name: models.Model, *, batch: int, seed: int, options: dict[str, object] | None = None
) -> onnx.ModelProto:
    """The inference step of model ``name`` (a zoo name or an architecture) at a fixed batch size, ready for
    ``decompose`` and ``lower``.

    The model is built under ``torch.manual_seed(seed)`` (the weights of the training step's export), put in
    eval mode and exported with the legacy exporter in inference mode with constant folding, at opset 17. Every
    node is annotated as forward with its layer, every tensor is typed, and the output ``logits`` must equal
    torch's eval-mode output within ``rounding.TOLERANCE``. Its ``parameters`` metadata lists the floating-point
    initializers (the folded weights, which the training step's parameter names no longer name).

    Raises:
        ConfigError: the module's forward fails on its inputs or returns no single tensor.
        GraphError: the exporter fails, or the graph's output differs from torch's.
    """
    options = dict(options or {})
    arch, specs, module, inputs = built_model(name, batch=batch, seed=seed, options=options)
    name = arch.name
    expected = eval_output(module, inputs, name)
    model = _folded(torch_export(module, inputs, output_name=LOGITS, name=name, training=False))
    params = [init.name for init in model.graph.initializer if init.data_type in _FLOATS]
    labels = label_spec(arch.loss, tuple(expected.shape), where=f"model {name!r}", given=arch.labels)
    record_signature(
        model, name=name, batch=batch, seed=seed, options=options, params=params, inputs=specs, labels=labels, loss=arch.loss
    )
    set_model_meta(model, stage=INFERENCE_STAGE)
    model.graph.name = f"{name}_{INFERENCE_STAGE}"
    for node in model.graph.node:
        set_node_meta(node, phase="forward", layer=forward_layer_name(node.name))
    record_shapes(model, seed=seed)
    onnx.checker.check_model(weightless(model))
    check_against_torch(model, expected.numpy(), {k: v.numpy() for k, v in inputs.items()}, name)
    log.info("inference step of %s: %d nodes, %d weights", name, len(model.graph.node), len(params))
    return model


def _folded(model: onnx.ModelProto) -> onnx.ModelProto:
    """``model`` without what the exporter's folding leaves: shape arithmetic on static shapes and Identity copies of
    weights (onnxscript's constant folding, with shape inference), and Constant nodes, which become initializers as
    in the training step (onnx-ir's LiftConstantsToInitializersPass, every size)."""
    graph = ir.serde.deserialize_model(model)
    optimizer.fold_constants(graph, onnx_shape_inference=True)
    LiftConstantsToInitializersPass(lift_all_constants=True, size_limit=0)(graph)
    return ir.serde.serialize_model(graph)
