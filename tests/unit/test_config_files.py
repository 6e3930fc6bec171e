"""The strict reader of configuration files: duplicate keys with their lines, aliases, NaN, size, nesting."""

from __future__ import annotations

from pathlib import Path

import pytest

from traincost.config_files import MAX_FILE_BYTES, parse_json, read_yaml
from traincost.errors import ConfigError


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
        ("[" * 20_000 + "]" * 20_000, "nested deeper"),
        ("a: [1, 2\n", "not valid YAML"),
    ],
)
def test_a_bad_yaml_file_is_one_error_naming_the_file(tmp_path: Path, text: str, words: str) -> None:
    path = _yaml(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        read_yaml(path)
    assert str(info.value).startswith(f"{path}: ") and words in str(info.value)


def test_a_valid_yaml_file_reads_as_safe_load_would(tmp_path: Path) -> None:
    assert read_yaml(_yaml(tmp_path, "a: 1\nb: {c: [1.5, x], d: null}\n")) == {"a": 1, "b": {"c": [1.5, "x"], "d": None}}


def test_a_file_larger_than_the_limit_is_refused_unread(tmp_path: Path) -> None:
    path = _yaml(tmp_path, "a: 1\n" + "#" * MAX_FILE_BYTES)
    with pytest.raises(ConfigError, match="MAX_FILE_BYTES"):
        read_yaml(path)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ('{"a": [1, 2],\n "a": [4]}', "duplicate key 'a' at line 2 (first at line 1)"),
        ('{"x_pes": [1], "x_pes": [4]}', "duplicate key 'x_pes' twice on line 1"),
        ('{"a": NaN}', "NaN is not a number"),
        ('{"a": Infinity}', "Infinity is not a number"),
        ('{"a": [1, }', "not valid JSON"),
    ],
)
def test_bad_json_is_one_error_naming_where_it_came_from(text: str, words: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_json(text, "--grid")
    assert str(info.value).startswith("--grid: ") and words in str(info.value)
