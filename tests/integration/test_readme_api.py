"""The README's Python API in five lines runs as written, from the repository's root."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow  # 20 CPU s: ResNet-18 (CIFAR) traced, checked in float64 and costed
def test_the_readmes_python_snippet_costs_its_model() -> None:
    text = (REPO / "README.md").read_text()
    section = text.split("\n## The Python API in five lines\n", 1)[1].split("\n## ", 1)[0]
    [snippet] = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(snippet.strip().splitlines()) <= 5
    result = subprocess.run([sys.executable, "-c", snippet], cwd=REPO, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "latency_cycles" in result.stdout and "optimizer" in result.stdout and "saved_activations" in result.stdout
