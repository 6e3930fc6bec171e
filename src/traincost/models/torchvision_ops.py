"""torchvision beside a torch its compiled operators were not built for.

torchvision's import registers shape functions for its compiled operators (``torchvision::nms``, ``qnms``), and fails
(``operator torchvision::nms does not exist``) when its ``_C`` library cannot load: the PyPI wheel of torchvision
0.28.0 links CUDA's torch libraries, which the CPU build of torch 2.13.0 does not have. Every module that imports
torchvision then fails to import too (Hugging Face ``transformers`` among them), though no network in it calls those
operators. :func:`declare_unloadable_ops` declares their two schemas before the import, so that it finishes; a
network that does call them (a detection head's ``nms``) then fails on that call, naming the operator.
"""

from __future__ import annotations

import importlib.util
import logging
import sys
from pathlib import Path

import torch

__all__ = ["declare_unloadable_ops"]

log = logging.getLogger(__name__)

_SCHEMAS = (
    "nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
)
_declared: list[torch.library.Library] = []  # kept alive: a schema lives as long as its library


def declare_unloadable_ops() -> bool:
    """Declare torchvision's operator schemas if torchvision is installed, not yet imported, and its compiled
    operators cannot load beside this torch. Returns whether it declared them (once per process)."""
    if _declared or _loads_or_absent():
        return False
    library = torch.library.Library("torchvision", "DEF")
    for schema in _SCHEMAS:
        library.define(schema)
    _declared.append(library)
    log.warning(
        "torchvision's compiled operators do not load beside torch %s (a wheel built for another torch); its "
        "networks load, but nms, roi_align and the other detection operators are unavailable",
        torch.__version__,
    )
    return True


def _loads_or_absent() -> bool:
    """Whether torchvision is absent, already imported, or its ``_C`` library loads."""
    if "torchvision" in sys.modules:
        return True
    spec = importlib.util.find_spec("torchvision")
    if spec is None or not spec.submodule_search_locations:
        return True
    libraries = sorted(Path(next(iter(spec.submodule_search_locations))).glob("_C.*"))
    if not libraries:
        return True
    try:
        torch.ops.load_library(str(libraries[0]))
    except OSError:
        return False
    return True
