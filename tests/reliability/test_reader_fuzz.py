"""Mutated valid files, reader by reader (hypothesis, fixed seed): ZigZag's and Stream's hardware files and ZigZag's
mapping files through ``traincost hardware import``, a manual fusion file, the FPGA device catalog, MTrain's
training IPs, TM-Training's tiered system, a fused-groups JSON and a Parquet table's metadata through their
readers. Whatever value is put wherever, the reader succeeds (and the imported file loads) or says what is wrong in
one ``traincost: error:`` line; never a traceback.

Each example replaces one to three values of the file, at paths drawn from the file's own tree, by a value of
another kind or out of range: a string where a number or mapping belongs, a number where a list or string
belongs, 0 as a bandwidth, a negative, NaN, an integer past 64 bits, an empty list, None.
"""

from __future__ import annotations

import copy
import json
import math
import shutil
import subprocess
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.reliability.conftest import REPO, cli
from tests.workloads import conv_relu_workload
from traincost.errors import TraincostError
from traincost.fpga.devices import load_fpga_catalog
from traincost.fpga.ip_specs import load_ip_specs
from traincost.hardware import load_hardware
from traincost.schedule.manual_fusion import read_manual_fusion
from traincost.schedule.plan import read_fused_groups
from traincost.tiered.system import load_tiered_system
from traincost.workload import read_table

ZIGZAG = REPO / "tests/fixtures/hardware/zigzag/hardware/tpu_like.yaml"
STREAM = REPO / "tests/fixtures/hardware/stream/hardware"
READERS = settings(
    max_examples=60,  # 600 each pass too (58 s for the five)
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


def _read_or_one_error(read: Callable[[Path], object], path: Path) -> None:
    """``read(path)`` returns, or raises a traincost error of one line; any other exception fails the example."""
    try:
        read(path)
    except TraincostError as err:
        assert "\n" not in str(err), str(err)


# the other YAML readers, each on its shipped file: FPGA devices, MTrain's training IPs, TM-Training's tiered system
OTHER_YAML = {
    "fpga_devices": (REPO / "config/hardware/fpga/devices.yaml", load_fpga_catalog),
    "training_ips": (REPO / "data/fpga/training_ips.yaml", load_ip_specs),
    "tiered_system": (REPO / "config/hardware/tpuv4_tiered.yaml", load_tiered_system),
    "zigzag_mapping": (REPO / "tests/fixtures/hardware/zigzag/mapping/tpu_like.yaml", None),
}


@READERS
@given(data=st.data(), reader=st.sampled_from(sorted(OTHER_YAML)))
def test_every_other_yaml_reader_reads_a_mutated_file_or_gives_one_error(
    data: st.DataObject, reader: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    source, read = OTHER_YAML[reader]
    folder = tmp_path_factory.mktemp(reader)
    if read is None:  # a ZigZag mapping file, read with the core file it maps
        (folder / "hardware").mkdir()
        (folder / "mapping").mkdir()
        shutil.copy(ZIGZAG, folder / "hardware/tpu_like.yaml")
        path = _write(folder / "mapping/tpu_like.yaml", data.draw(mutations(yaml.safe_load(source.read_text()))))
        _imports_or_one_line("zigzag", folder / "hardware/tpu_like.yaml", folder / "imported.yaml")
        assert path.is_file()
        return
    _read_or_one_error(read, _write(folder / source.name, data.draw(mutations(yaml.safe_load(source.read_text())))))


GROUP_ITEMS = st.one_of(st.integers(-3, 5), st.booleans(), st.text(max_size=2), st.lists(st.integers(-2, 5), max_size=3))


@READERS
@given(groups=st.one_of(st.none(), st.integers(), st.text(max_size=5), st.lists(GROUP_ITEMS, max_size=4)))
def test_a_fused_groups_file_is_read_or_is_one_error(groups: Any, tmp_path_factory: pytest.TempPathFactory) -> None:
    path = tmp_path_factory.mktemp("groups") / "groups.json"
    path.write_text(json.dumps({"groups": groups}))
    _read_or_one_error(read_fused_groups, path)


@READERS
@given(
    metadata=st.one_of(
        st.binary(max_size=40),
        st.builds(
            lambda v: json.dumps(v).encode(),
            st.recursive(
                st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=4)),
                lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=3), inner, max_size=3)),
                max_leaves=6,
            ),
        ),
    )
)
def test_a_table_s_metadata_is_read_or_is_one_error(metadata: bytes, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Any bytes, or any JSON, as a Parquet table's traincost metadata: read as a mapping of strings, or one error."""
    path = tmp_path_factory.mktemp("meta") / "table.parquet"
    pq.write_table(pa.table({"op": [0, 1]}).replace_schema_metadata({b"traincost": metadata}), path)
    try:
        _, meta = read_table(path)
    except TraincostError as err:
        assert "\n" not in str(err), str(err)
        return
    assert isinstance(meta, dict) and all(isinstance(key, str) for key in meta)
