"""torchvision beside a torch its compiled operators were not built for: its import finishes after
``declare_unloadable_ops``, and its networks build and run (a fresh process: the import happens once)."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
from traincost.models.torchvision_ops import declare_unloadable_ops
import torch
declared = declare_unloadable_ops()
import torchvision
from torchvision import extension
assert declared == (not extension._has_ops()), (declared, extension._has_ops())  # only where the operators do not load
assert not declare_unloadable_ops()  # once, and never after the import
print(torchvision.models.resnet18(num_classes=3)(torch.randn(2, 3, 32, 32)).shape)
"""


def test_torchvision_imports_and_runs_after_the_schemas_are_declared() -> None:
    result = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "torch.Size([2, 3])"
