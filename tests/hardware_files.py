"""Hardware files for tests: ``tiny.yaml``, whose costs are worked out by hand in ``tests/unit/test_core_cost.py``,
and variants of it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import yaml

from traincost.hardware import HardwareSpec, load_hardware

TINY = Path(__file__).resolve().parent / "fixtures/hardware/tiny.yaml"


def tiny_variant(tmp_path: Path, change: Callable[[dict], None]) -> HardwareSpec:
    """``tiny.yaml`` with its data edited by ``change``, written into ``tmp_path`` and loaded."""
    data = yaml.safe_load(TINY.read_text())
    change(data)
    path = tmp_path / "variant.yaml"
    path.write_text(yaml.safe_dump(data))
    return load_hardware(path)
