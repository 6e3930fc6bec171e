"""The inference step of a model: its eval-mode forward graph, as a deployment tool would run it.

MONET costs inference apart from training: "Fig. 10. Latency and energy for ResNet18 inference", and the
sweeps of Figures 1, 8 and 9 set "inference and training workloads" side by side. An inference graph is
not the training step's forward pass: BatchNorm is in inference form and folded into the convolution
before it where the pattern allows (torch's exporter does so in eval mode with constant folding, as
deployment tools do; elsewhere it stays one ``BatchNormalization`` op), it writes no running statistics,
dropout is gone and no loss is computed. The training step keeps its training-mode BatchNorm
(:mod:`traincost.frontend.export`).
"""

from __future__ import annotations

import logging

import onnx
from onnx import helper
from onnxscript import optimizer

from traincost.errors import ConfigError
from traincost.frontend.execute import record_shapes, weightless
from traincost.frontend.export import (
    LOGITS,
    built_model,
    check_against_torch,
    label_spec,
    probe_output,
    record_signature,
    torch_export,
)
from traincost.frontend.onnx_graph import set_model_meta, set_node_meta
from traincost.frontend.train_graph import forward_layer_name

__all__ = ["export_inference_step", "INFERENCE_STAGE"]

log = logging.getLogger(__name__)

INFERENCE_STAGE = "inference_step"
_LISTS = {
    "value_int": onnx.TensorProto.INT64,
    "value_ints": onnx.TensorProto.INT64,
    "value_float": onnx.TensorProto.FLOAT,
    "value_floats": onnx.TensorProto.FLOAT,
}
_FLOATS = (onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.DOUBLE, onnx.TensorProto.BFLOAT16)


def export_inference_step(name: str, *, batch: int, seed: int, options: dict[str, object] | None = None) -> onnx.ModelProto:
    """The inference step of registered model ``name`` at a fixed batch size, ready for ``decompose`` and ``lower``.

    The model is built under ``torch.manual_seed(seed)`` (the weights of the training step's export), put in
    eval mode and exported with the legacy exporter in inference mode with constant folding, at opset 17. Every
    node is annotated as forward with its layer, every tensor is typed, and the output ``logits`` must equal
    torch's eval-mode output within ``EXPORT_TOLERANCE``. Its ``parameters`` metadata lists the floating-point
    initializers (the folded weights, which the training step's parameter names no longer name).

    Raises:
        ConfigError: the module's forward fails on its inputs or returns no single tensor.
        GraphError: the exporter fails, or the graph's output differs from torch's.
    """
    options = dict(options or {})
    arch, specs, module, inputs = built_model(name, batch=batch, seed=seed, options=options)
    module.eval()
    expected = probe_output(module, inputs, name)
    model = torch_export(module, inputs, output_name=LOGITS, name=name, training=False)
    # what the exporter's folding leaves: shape arithmetic on static shapes, Identity copies of weights (onnxscript's
    # constant folding, with shape inference), and Constant nodes, which become initializers as in the training step
    optimizer.fold_constants(model, onnx_shape_inference=True)
    _constants_to_initializers(model.graph)
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
    if expected.dim() == 0:
        raise ConfigError(f"model {name!r}: its forward returns a scalar; an inference step needs the model's output")
    check_against_torch(model, expected.numpy(), {k: v.numpy() for k, v in inputs.items()}, name)
    log.info("inference step of %s: %d nodes, %d weights", name, len(model.graph.node), len(params))
    return model


def _constants_to_initializers(graph: onnx.GraphProto) -> None:
    """Every ``Constant`` node becomes an initializer of its output's name (a tensor, or ints and floats)."""
    kept = []
    for node in graph.node:
        if node.op_type != "Constant" or len(node.attribute) != 1:
            kept.append(node)
            continue
        attribute = node.attribute[0]
        if attribute.name == "value":
            tensor = onnx.TensorProto()
            tensor.CopyFrom(attribute.t)
            tensor.name = node.output[0]
        elif attribute.name in _LISTS:
            elem, values = _LISTS[attribute.name], helper.get_attribute_value(attribute)
            scalar = not attribute.name.endswith("s")
            tensor = helper.make_tensor(node.output[0], elem, [] if scalar else [len(values)], [values] if scalar else values)
        else:
            kept.append(node)
            continue
        graph.initializer.append(tensor)
    del graph.node[:]
    graph.node.extend(kept)
