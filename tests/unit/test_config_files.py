"""The strict reader of configuration files: duplicate keys with their lines, aliases, NaN, huge integers, size,
nesting, special files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from traincost.config_files import parse_json, read_json, read_text, read_yaml
from traincost.errors import ConfigError
from traincost.limits import MAX_FILE_BYTES, MAX_YAML_BYTES


def _yaml(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("a: 1\nb:\n  c: 2\n  c: 3\n", "duplicate key 'c' at line 4 (first at line 3)"),
        ("x: {a: 1, a: 2}\n", "duplicate key 'a' twice on line 1"),  # a flow mapping on one line
        ("a: &x [1, 2]\nb: *x\n", "line 2: the alias *x is not allowed"),
        ("a:\n  b: [1, .nan]\n", "a.b[1] is nan"),
        ("a: -.inf\n", "a is -inf"),
        ("[" * 200_000 + "]" * 200_000, "nested more than 100 deep"),  # libyaml's composer crashed on it
        ("a: [1, 2\n", "not valid YAML"),
        ("a:\n  b: " + "9" * 400 + "\n", "a.b is an integer of 400 digits"),
        ("a: [-" + "9" * 5000 + "]\n", "a[0] is an integer of 5000 digits"),  # longer than Python's int() reads
        ("a: 9223372036854775808\n", "a is an integer of 19 digits"),  # 2**63: one past int64
    ],
)
def test_a_bad_yaml_file_is_one_error_naming_the_file(tmp_path: Path, text: str, words: str) -> None:
    path = _yaml(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        read_yaml(path)
    assert str(info.value).startswith(f"{path}: ") and words in str(info.value)


def test_a_valid_yaml_file_reads_as_safe_load_would(tmp_path: Path) -> None:
    assert read_yaml(_yaml(tmp_path, "a: 1\nb: {c: [1.5, x], d: null}\n")) == {"a": 1, "b": {"c": [1.5, "x"], "d": None}}
    assert read_yaml(_yaml(tmp_path, "a: 0x1f\nb: 1_000\nc: -9223372036854775807\n")) == {"a": 31, "b": 1000, "c": -(2**63 - 1)}


def test_another_tools_file_keeps_the_last_of_a_repeated_key_and_nothing_else_relaxed(tmp_path: Path) -> None:
    """ZigZag's tpu_like.yaml gives ``ports`` twice; ZigZag (yaml.safe_load) keeps the second."""
    assert read_yaml(_yaml(tmp_path, "a: 1\na: 2\n"), last_key_wins=True) == {"a": 2}
    with pytest.raises(ConfigError, match="alias"):
        read_yaml(_yaml(tmp_path, "a: &x [1]\nb: *x\n"), last_key_wins=True)


def test_only_a_regular_file_is_read(tmp_path: Path) -> None:
    """/dev/zero would be read without end, a FIFO would block for a writer: both are refused unopened."""
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    for path, kind in ((Path("/dev/zero"), "a special file"), (fifo, "a FIFO"), (tmp_path, "a directory")):
        with pytest.raises(ConfigError, match=f"^{path}: is {kind}; expected a regular file"):
            read_yaml(path)


def test_a_file_whose_size_says_zero_is_still_read_within_the_limit() -> None:
    """Files under /proc report a size of 0 bytes: the limit holds on what is read, not on what stat says."""
    assert os.stat("/proc/self/status").st_size == 0
    assert "Name:" in read_text("/proc/self/status")


def test_a_file_larger_than_the_limit_is_refused_unread(tmp_path: Path) -> None:
    path = _yaml(tmp_path, "a: 1\n" + "#" * MAX_YAML_BYTES)
    with pytest.raises(ConfigError, match="MAX_YAML_BYTES = 1 MiB"):
        read_yaml(path)
    path = tmp_path / "big.json"
    path.write_text('{"a": 1}' + " " * MAX_FILE_BYTES)
    with pytest.raises(ConfigError, match="MAX_FILE_BYTES = 8 MiB"):
        read_json(path)
    path.write_text('{"a": [' + "1, " * (MAX_YAML_BYTES // 3) + "1]}")  # JSON past the YAML limit is read
    assert len(read_json(path)["a"]) == MAX_YAML_BYTES // 3 + 1


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ('{"a": [1, 2],\n "a": [4]}', "duplicate key 'a' at line 2 (first at line 1)"),
        ('{"x_pes": [1], "x_pes": [4]}', "duplicate key 'x_pes' twice on line 1"),
        ('{"a": NaN}', "NaN is not a number"),
        ('{"a": Infinity}', "Infinity is not a number"),
        ('{"a": [1, }', "not valid JSON"),
        ('{"a": {"b": 1e400}}', "a.b is inf"),
        ('{"a": ' + "9" * 5000 + "}", "a is an integer of 5000 digits"),
    ],
)
def test_bad_json_is_one_error_naming_where_it_came_from(text: str, words: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_json(text, "--grid")
    assert str(info.value).startswith("--grid: ") and words in str(info.value)
