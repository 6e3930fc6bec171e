"""The recompute check's table where there is nothing to check it on: a workload the torch front end built."""

from __future__ import annotations

import subprocess
import sys


def test_a_workload_with_no_onnx_graph_gets_an_empty_recompute_check_without_onnx_runtime() -> None:
    """A torch-built workload has no ONNX graph to run the rewrites on: its check table has the check's columns and no
    rows, made without ONNX Runtime (Python 3.12 and later have none)."""
    code = (
        "import sys; sys.modules['onnxruntime'] = None\n"
        "from traincost.optimize.checkpoint import RECOMPUTE_CHECK_COLUMNS, unchecked_recompute\n"
        "table = unchecked_recompute()\n"
        "assert list(table.columns) == list(RECOMPUTE_CHECK_COLUMNS) and table.empty\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-1000:]
