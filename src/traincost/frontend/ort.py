"""ONNX Runtime, imported without ORTModule.

``import onnxruntime`` from the onnxruntime-training wheel validates its build by importing
``onnxruntime.training.ortmodule``, and with it torch, torch._dynamo's pieces and ORTModule's patches of
torch: 4 to 5 CPU seconds and 250 MB in every process, before any graph is read. traincost runs
graphs in an ``InferenceSession`` and builds gradients with ``onnxruntime.training.artifacts``; neither
needs ORTModule. Marking that module absent in ``sys.modules`` (None: Python's documented way to make
an import fail) sends ONNX Runtime down its own "ORTModule not present" path: ``import onnxruntime``
then takes 0.3 s and does not import torch. A process that imported ORTModule before keeps it.

Every traincost module imports ONNX Runtime from here.
"""

from __future__ import annotations

import sys

sys.modules.setdefault("onnxruntime.training.ortmodule", None)

import onnxruntime  # noqa: E402

__all__ = ["onnxruntime"]
