"""ONNX Runtime, imported without ORTModule.

``import onnxruntime`` from the onnxruntime-training wheel validates its build by importing
``onnxruntime.training.ortmodule``, and with it torch, torch._dynamo's pieces and ORTModule's patches of
torch: 4 to 5 CPU seconds and 250 MB in every process, before any graph is read. traincost runs
graphs in an ``InferenceSession`` and builds gradients with ``onnxruntime.training.artifacts``; neither
needs ORTModule. Marking that module absent in ``sys.modules`` (None: Python's documented way to make
an import fail) sends ONNX Runtime down its own "ORTModule not present" path: ``import onnxruntime``
then takes 0.3 s and does not import torch. A process that imported ORTModule before keeps it.

Every traincost module imports ONNX Runtime from here. It is the ``ort`` extra (``pip install -e '.[ort]'``, Python
3.11: the package's last release has no wheels for later Pythons); without it, a command that needs the ONNX front end
says so in one line.
"""

from __future__ import annotations

import sys

from traincost.errors import ConfigError

sys.modules.setdefault("onnxruntime.training.ortmodule", None)

try:
    import onnxruntime
except ModuleNotFoundError as err:
    raise ConfigError(
        "the ONNX front end needs ONNX Runtime Training, which is not installed: pip install -e '.[ort]' (Python 3.11), "
        "or cost a torch module with the torch front end (--frontend torch, the workload key frontend: torch)"
    ) from err

__all__ = ["onnxruntime"]
