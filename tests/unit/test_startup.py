"""What a ``traincost`` process imports before its command works.

Every workflow job is a process of its own, so what its imports cost, it costs every time: torch takes
3 to 4 CPU seconds, ONNX Runtime 4 to 5 with the ORTModule its training wheel imports to validate its
build (torch among it), pandas about 1. The parser imports none of them; decompose, lower and the
decomposition check, which run graphs in ONNX Runtime but train nothing, do not import torch (their batches
are drawn with numpy; bench/frontend.py --startup measures each).
"""

from __future__ import annotations

import subprocess
import sys

import onnx
import pytest

from traincost.analysis.agreement import STUDIES
from traincost.cli.summary import STUDY_KEYS


def _imported(module: str) -> set[str]:
    """The modules a fresh interpreter has loaded after importing ``module`` (not those marked absent)."""
    code = f"import sys, {module}; print(' '.join(name for name, loaded in sys.modules.items() if loaded is not None))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(result.stdout.split())


def test_the_command_line_imports_no_library_until_a_command_runs() -> None:
    assert not {"torch", "onnxruntime", "onnx", "pandas", "numpy"} & _imported("traincost.cli")


@pytest.mark.ort
@pytest.mark.parametrize("module", ["traincost.frontend.onnx.decompose", "traincost.frontend.onnx.lower"])
def test_decompose_and_lower_run_onnx_runtime_without_torch(module: str) -> None:
    loaded = _imported(module)
    assert "onnxruntime" in loaded
    assert "torch" not in loaded and "onnxruntime.training.ortmodule" not in loaded


def test_the_decomposition_check_draws_its_batch_and_runs_without_torch(chain, tmp_path) -> None:
    built = chain("mlp", 2)
    onnx.save(built.train_step, tmp_path / "train_step.onnx")
    onnx.save(built.decomposed, tmp_path / "decomposed.onnx")
    code = (
        "import sys, onnx; from traincost.frontend.onnx.verification import verify_decomposition; "
        f"verify_decomposition(onnx.load({str(tmp_path / 'train_step.onnx')!r}), "
        f"onnx.load({str(tmp_path / 'decomposed.onnx')!r}), seed=0); print('torch' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.split()[-1] == "False"


def test_the_summarys_study_choices_are_the_studies() -> None:
    assert STUDY_KEYS == tuple(sorted(STUDIES))
