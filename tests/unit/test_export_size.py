"""A model whose weights one ONNX protobuf cannot hold is one error line before any tracing."""

from __future__ import annotations

import pytest
import torch

from traincost.errors import ConfigError
from traincost.frontend.onnx.export import _check_protobuf_size

pytestmark = pytest.mark.ort  # the ONNX front end throughout (tests/conftest.py: pytest_ignore_collect)


def test_a_model_too_large_for_one_onnx_protobuf_is_refused_before_tracing() -> None:
    """torchvision's RegNetY-128GF (2.5 GB of weights) failed deep in torch's exporter; it is refused up front, by
    size (built on the meta device: no memory taken)."""
    with pytest.raises(ConfigError, match=r"model 'big': its parameters and buffers take 2\.15 GB, more than the 2 GiB"):
        _check_protobuf_size(torch.nn.Linear(32768, 16385, device="meta"), "big")
    _check_protobuf_size(torch.nn.Linear(32768, 16383, device="meta"), "just_below")
