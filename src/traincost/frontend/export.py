"""torch → ONNX export of a zoo model, checked against torch before it is written."""

from __future__ import annotations

import copy
import io
import json
import logging
import warnings

import numpy as np
import onnx
import torch
from onnx import helper, numpy_helper

from traincost import models
from traincost.errors import GraphError
from traincost.frontend.execute import max_relative_error, run
from traincost.frontend.onnx_graph import IR_VERSION, OPSET, set_model_meta

__all__ = ["export_model", "EXPORT_TOLERANCE"]

log = logging.getLogger(__name__)

# Largest relative difference allowed between the ONNX and the torch output.
EXPORT_TOLERANCE = 1e-4


def export_model(name: str, *, batch: int, seed: int, options: dict[str, object] | None = None) -> onnx.ModelProto:
    """Export zoo model ``name`` for training at a fixed batch size.

    The model is built under ``torch.manual_seed(seed)``, exported with the legacy exporter in
    training mode (so BatchNorm stays a training-mode op), shape-inferred and checked with
    ``onnx.checker``; its output on a batch made with ``seed`` must equal torch's within
    ``EXPORT_TOLERANCE`` (Dropout is disabled in both for that check only).

    Returns:
        The forward graph: input ``input``, output ``logits``, parameters and buffers as
        initializers with their initial values, and traincost metadata (model, batch, options,
        seed, parameters, input_shape).
    """
    options = dict(options or {})
    torch.manual_seed(seed)
    module = models.build_model(name, options=options)
    module.train()
    reference = copy.deepcopy(module)
    inputs, _ = models.make_batch(name, batch=batch, seed=seed, options=options)
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            module,
            (inputs,),
            buffer,
            dynamo=False,
            training=torch.onnx.TrainingMode.TRAINING,
            do_constant_folding=False,
            opset_version=OPSET,
            input_names=["input"],
            output_names=["logits"],
        )
    model = onnx.load_from_string(buffer.getvalue())
    # Tracing ran the model in training mode and moved the BatchNorm statistics: restore them.
    state = {k: v.detach().numpy() for k, v in reference.state_dict().items()}
    for init in model.graph.initializer:
        if init.name in state:
            init.CopyFrom(numpy_helper.from_array(np.ascontiguousarray(state[init.name]), init.name))
    params = [n for n, _ in reference.named_parameters()]
    names = {init.name for init in model.graph.initializer}
    missing = [p for p in params if p not in names]
    if missing:
        raise GraphError(f"export of {name}: parameters {missing} are not initializers of the ONNX graph")
    # A seeded Dropout draws the same mask in every session, so graphs can be compared by execution.
    for index, node in enumerate(n for n in model.graph.node if n.op_type == "Dropout"):
        node.attribute.append(helper.make_attribute("seed", seed + index))
    model.ir_version = IR_VERSION
    model.graph.name = name
    set_model_meta(
        model,
        model=name,
        batch=str(batch),
        seed=str(seed),
        options=json.dumps(options, sort_keys=True),
        parameters=json.dumps(params),
        input_shape=json.dumps(list(inputs.shape)),
        sample=json.dumps(_sample_meta(name, options)),
        stage="model",
    )
    model = onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    onnx.checker.check_model(model, full_check=True)
    _check_against_torch(model, reference, inputs, name)
    log.info("exported %s: %d nodes, %d parameters", name, len(model.graph.node), len(params))
    return model


def _sample_meta(name: str, options: dict[str, object]) -> dict[str, object]:
    """What later stages need to draw this graph's batches without the zoo entry it came from."""
    kind, spec = models.sample_spec(name, options=options)
    return {"input_kind": kind, "shape": list(spec.shape), "rows": spec.rows, "num_classes": spec.num_classes}


def _check_against_torch(model: onnx.ModelProto, reference: torch.nn.Module, inputs: torch.Tensor, name: str) -> None:
    for sub in reference.modules():
        if isinstance(sub, torch.nn.Dropout):
            sub.eval()
    with torch.no_grad():
        expected = reference(inputs).numpy()
    checked = onnx.ModelProto()
    checked.CopyFrom(model)
    for node in checked.graph.node:
        if node.op_type == "Dropout":
            del node.input[1:]
    actual = run(checked, {"input": inputs.numpy()})["logits"]
    error = max_relative_error(expected, actual)
    if error > EXPORT_TOLERANCE:
        raise GraphError(f"export of {name}: ONNX output differs from torch by {error:.2e} (> {EXPORT_TOLERANCE})")
