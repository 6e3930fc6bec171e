"""A script of ``bench/`` loaded as a module, for the tests that call its functions."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[1] / "bench"


def bench_script(relative: str, *, name: str | None = None) -> ModuleType:
    """``bench/<relative>`` executed as the module ``name`` (default: the file's stem), registered in ``sys.modules``
    first so that its dataclasses find their module."""
    name = name or Path(relative).stem
    spec = importlib.util.spec_from_file_location(name, BENCH / relative)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
