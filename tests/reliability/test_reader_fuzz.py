"""Mutated valid files, reader by reader (hypothesis, fixed seed): ZigZag's and Stream's hardware files through
``traincost hardware import``, and a manual fusion file through ``traincost compare-fusion``'s reader. Whatever value
is put wherever, the reader succeeds (and the imported file loads) or says what is wrong in one
``traincost: error:`` line; never a traceback.

Each example replaces one to three values of the file, at paths drawn from the file's own tree, by a value of
another kind or out of range: a string where a number or mapping belongs, a number where a list or string
belongs, 0 as a bandwidth, a negative, NaN, an integer past 64 bits, an empty list, None.
"""

from __future__ import annotations

import copy
import math
import shutil
import subprocess
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.reliability.conftest import REPO, cli
from tests.workloads import conv_relu_workload
from traincost.errors import TraincostError
from traincost.hardware import load_hardware
from traincost.schedule.manual_fusion import read_manual_fusion

ZIGZAG = REPO / "tests/fixtures/hardware/zigzag/hardware/tpu_like.yaml"
STREAM = REPO / "tests/fixtures/hardware/stream/hardware"
READERS = settings(
    max_examples=60,  # 500 each pass too (37 s for the three)
    derandomize=True,
    deadline=timedelta(seconds=20),
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
ODD_VALUES = st.sampled_from(
    ["text", "", 0, -1, 0.5, 2**70, math.nan, None, True, [], [1, "a"], {}, {"a": 1}, 1e300, "1 +", "x_pes"]
)


def _paths(data: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path in ``data``'s tree, its root excluded."""
    found = [path] if path else []
    items = data.items() if isinstance(data, dict) else enumerate(data) if isinstance(data, list) else ()
    for key, value in items:
        found += _paths(value, (*path, key))
    return found


def _put(data: Any, path: tuple[Any, ...], value: Any) -> None:
    *parents, last = path
    for key in parents:
        data = data[key]
    data[last] = value


@st.composite
def mutations(draw: st.DrawFn, data: Any) -> Any:
    for _ in range(draw(st.integers(1, 3))):
        paths = _paths(data)  # anew: a value put before may have replaced a branch
        if paths:
            _put(data, draw(st.sampled_from(paths)), copy.deepcopy(draw(ODD_VALUES)))  # never one list twice
    return data


def _one_line_or_success(result: subprocess.CompletedProcess[str]) -> None:
    assert result.returncode in (0, 2), result.stderr[-3000:]
    if result.returncode == 2:
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("traincost: error: "), result.stderr[-3000:]


def _write(path: Path, data: Any) -> Path:
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    return path


def _imports_or_one_line(tool: str, source: Path, out: Path) -> None:
    """``traincost hardware import TOOL SOURCE`` succeeds, its file loading or refused by the loader in one error, or
    fails in one line."""
    result = cli("hardware", "import", tool, source, "--out", out)
    _one_line_or_success(result)
    if result.returncode == 0:
        try:
            load_hardware(out)
        except TraincostError as err:
            assert "\n" not in str(err)


@READERS
@given(data=st.data())
def test_a_mutated_zigzag_file_imports_or_is_one_line(data: st.DataObject, tmp_path_factory: pytest.TempPathFactory) -> None:
    folder = tmp_path_factory.mktemp("zigzag")
    source = _write(folder / "core.yaml", data.draw(mutations(yaml.safe_load(ZIGZAG.read_text()))))
    _imports_or_one_line("zigzag", source, folder / "imported.yaml")


@READERS
@given(data=st.data(), core=st.booleans())
def test_a_mutated_stream_file_imports_or_is_one_line(
    data: st.DataObject, core: bool, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The accelerator file, or one of its core files, mutated."""
    folder = tmp_path_factory.mktemp("stream")
    shutil.copytree(STREAM, folder / "hardware")
    accelerator = folder / "hardware/tpu_like_quad_core.yaml"
    target = folder / "hardware/cores/tpu_like.yaml" if core else accelerator
    _write(target, data.draw(mutations(yaml.safe_load(target.read_text()))))
    _imports_or_one_line("stream", accelerator, folder / "imported.yaml")


@READERS
@given(data=st.data())
def test_a_mutated_fusion_file_is_read_or_is_one_error(data: st.DataObject, tmp_path_factory: pytest.TempPathFactory) -> None:
    ops = conv_relu_workload().ops.assign(layer=["block/conv", "block/relu"])
    valid = {"phases": ["forward", "backward"], "prefixes": ["block"]}
    path = _write(tmp_path_factory.mktemp("fusion") / "fusion.yaml", data.draw(mutations(valid)))
    try:
        groups = read_manual_fusion(path, ops)
    except TraincostError as err:
        assert "\n" not in str(err)
        return
    assert all(isinstance(op, int) for group in groups for op in group)
