"""Reading the YAML and JSON a user writes: strict, bounded and finite.

Every configuration file of traincost (hardware and FPGA descriptions, manual fusion groups, the
workflow config, ``--grid`` JSON, schedule plans) is read through here, so the same limits hold
everywhere and each is named in its error:

* only regular files are read (a FIFO, ``/dev/zero`` or a directory is refused before it is
  opened for reading), and never more than ``MAX_YAML_BYTES`` of YAML or ``MAX_FILE_BYTES`` of JSON: a
  larger file is refused whatever its size on disk says;
* a key given twice in one mapping is an error naming the key and both lines (YAML and JSON both
  let the last one win silently); a file of another tool (ZigZag, Stream) is read as that tool
  reads it, the last one winning (``last_key_wins``);
* YAML aliases (``*name``) are refused: a few lines of nested aliases expand to billions of values
  for whatever walks the data (the schema validator, an error message); so is nesting deeper than
  ``MAX_DEPTH``; YAML is parsed by libyaml, so a file of the size limit takes seconds
  (``bench/yaml_reader.py``);
* a number that is NaN or infinite (YAML ``.nan`` / ``.inf``, JSON ``NaN`` / ``Infinity``, a float
  past the float range such as ``1e400``) or an integer that 64-bit arithmetic cannot hold is an
  error naming its key path: NaN passes every ``<= 0`` check, and a 400-digit integer overflows
  the first float it meets;
* messages that quote a value are cut to ``MAX_MESSAGE_CHARS``.
"""

from __future__ import annotations

import json
import math
import os
import stat
from pathlib import Path
from typing import Any

import yaml

from traincost.errors import ConfigError, TraincostError
from traincost.limits import MAX_DEPTH, MAX_FILE_BYTES, MAX_INTEGER, MAX_MESSAGE_CHARS, MAX_YAML_BYTES

__all__ = [
    "check_numbers",
    "parse_json",
    "read_json",
    "read_text",
    "read_yaml",
    "shorten",
]


class _StrictnessError(Exception):
    """A strictness rule broken while parsing; the caller adds the file."""


class _HugeInteger(int):
    """An integer literal longer than Python converts (``sys.get_int_max_str_digits``): ``check_numbers`` names its key."""

    digits: int

    def __new__(cls, text: str) -> _HugeInteger:
        value = super().__new__(cls, MAX_INTEGER + 1)
        value.digits = sum(char.isdigit() for char in text)
        return value


def _integer(text: str) -> int:
    """JSON's integer literal ``text`` as an int, or a ``_HugeInteger`` where Python refuses its length."""
    try:
        return int(text)
    except ValueError:
        return _HugeInteger(text)


def shorten(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """``text`` on one line, cut to ``limit`` characters with the number cut said."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else f"{flat[:limit]}… ({len(flat) - limit} more characters)"


class _StrictLoader(yaml.CSafeLoader):
    """PyYAML's safe loader on libyaml's parser (``CSafeLoader``: a file of the size limit parses in seconds, where
    the pure-Python parser took minutes and gigabytes), without aliases and past ``MAX_DEPTH`` nothing
    (``_check_events``, called first) and without duplicate keys (or, with ``last_key_wins``, the last kept)."""

    last_key_wins = False

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        try:
            return super().construct_yaml_int(node)
        except ValueError:
            return _HugeInteger(str(node.value))

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        if self.last_key_wins:
            return super().construct_mapping(node, deep=deep)
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            try:
                first = seen.get(key)
            except TypeError:  # an unhashable key: the safe loader reports it
                break
            if first is not None:
                where = f"twice on line {line}" if first == line else f"at line {line} (first at line {first})"
                raise _StrictnessError(f"duplicate key {shorten(repr(key))} {where}; keep one")
            seen[key] = line
        return super().construct_mapping(node, deep=deep)


_StrictLoader.add_constructor("tag:yaml.org,2002:int", _StrictLoader.construct_yaml_int)


def _check_events(text: str) -> None:
    """Raise on the first alias of ``text``, or its first collection nested deeper than ``MAX_DEPTH``, from
    libyaml's events (a loop, no recursion) before any node is composed: an alias bomb expands without bound, and
    libyaml composes nodes recursively (200,000 nested lists crash the interpreter)."""
    depth = 0
    for event in yaml.parse(text, Loader=yaml.CSafeLoader):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                raise _StrictnessError(
                    f"line {event.start_mark.line + 1}: nested more than {MAX_DEPTH} deep (traincost.limits.MAX_DEPTH)"
                )
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
        elif isinstance(event, yaml.AliasEvent):
            raise _StrictnessError(
                f"line {event.start_mark.line + 1}: the alias *{event.anchor} is not allowed "
                "(aliases can expand without bound; write the value out)"
            )


_JSON_LIMIT = ("MAX_FILE_BYTES", MAX_FILE_BYTES)


def read_text(
    path: str | os.PathLike[str], *, error: type[TraincostError] = ConfigError, limit: tuple[str, int] = _JSON_LIMIT
) -> str:
    """The text of the regular file ``path``, at most ``limit`` bytes of it (its name in ``traincost.limits``, its value);
    anything else raises ``error``."""
    file = Path(path)
    try:
        mode = file.stat().st_mode
        if not stat.S_ISREG(mode):
            kind = "a directory" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else "a special file"
            raise error(f"{file}: is {kind}; expected a regular file")
        name, most = limit
        with file.open("rb") as handle:
            data = handle.read(most + 1)
        if len(data) > most:
            raise error(f"{file}: larger than a configuration file may be (traincost.limits.{name} = {most / 2**20:g} MiB)")
        return data.decode()
    except (OSError, UnicodeDecodeError) as err:
        raise error(f"{file}: cannot read ({getattr(err, 'strerror', None) or err})") from err


def read_yaml(path: str | os.PathLike[str], *, error: type[TraincostError] = ConfigError, last_key_wins: bool = False) -> Any:
    """The data of a YAML file, read strictly (see the module docstring); problems raise ``error``.

    ``last_key_wins`` reads a key given twice as PyYAML's safe loader does (the last value), for the files
    of tools that read them so; everything else stays strict.
    """
    file = Path(path)
    text = read_text(file, error=error, limit=("MAX_YAML_BYTES", MAX_YAML_BYTES))
    loader = _StrictLoader(text)
    loader.last_key_wins = last_key_wins
    try:
        _check_events(text)
        data = loader.get_single_data()
    except _StrictnessError as err:
        raise error(f"{file}: {err}") from err
    except yaml.YAMLError as err:
        raise error(f"{file}: not valid YAML ({shorten(str(err))})") from err
    except RecursionError as err:
        raise error(f"{file}: nested deeper than the YAML reader can follow") from err
    finally:
        loader.dispose()
    check_numbers(data, str(file), error=error)
    return data


def read_json(path: str | os.PathLike[str], *, error: type[TraincostError] = ConfigError) -> Any:
    """The data of a JSON file, read strictly (see ``parse_json``); problems raise ``error``."""
    file = Path(path)
    return parse_json(read_text(file, error=error), str(file), error=error)


def parse_json(text: str, where: str, *, error: type[TraincostError] = ConfigError) -> Any:
    """The data of JSON ``text`` (``where`` names it in errors): no duplicate keys, numbers as ``check_numbers`` allows."""
    if len(text) > MAX_FILE_BYTES:
        raise error(f"{where}: {len(text)} characters of JSON is more than the {MAX_FILE_BYTES // 2**20} MiB allowed")

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        data: dict[str, Any] = {}
        for key, value in items:
            if key in data:
                raise _StrictnessError(f"duplicate key {shorten(repr(key))}; keep one")
            data[key] = value
        return data

    def constant(name: str) -> float:
        raise _StrictnessError(f"{name} is not a number; expected a finite number")

    try:
        data = json.loads(text, object_pairs_hook=pairs, parse_constant=constant, parse_int=_integer)
    except RecursionError as err:
        raise error(f"{where}: JSON nested deeper than the reader can follow") from err
    except _StrictnessError as err:
        raise error(f"{where}: {_with_lines(text) or err}") from err
    except json.JSONDecodeError as err:
        raise error(f"{where}: not valid JSON ({err.msg} at line {err.lineno}, column {err.colno})") from err
    check_numbers(data, where, error=error)
    return data


def _with_lines(text: str) -> str | None:
    """The YAML reader's account of a duplicate key in JSON ``text`` (JSON is YAML), with both lines."""
    loader = _StrictLoader(text)
    try:
        _check_events(text)
        loader.get_single_data()
    except _StrictnessError as err:
        return str(err)
    except (yaml.YAMLError, RecursionError):
        return None
    finally:
        loader.dispose()
    return None


def check_numbers(data: Any, where: str, *, error: type[TraincostError] = ConfigError) -> None:
    """Raise ``error`` naming the key path of the first NaN or infinite number, or integer beyond ``MAX_INTEGER``, in ``data``."""
    stack: list[tuple[str, Any]] = [("", data)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, float) and not math.isfinite(value):
            raise error(f"{where}: {path or 'the value'} is {value}; expected a finite number")
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_INTEGER:
            digits = value.digits if isinstance(value, _HugeInteger) else len(str(abs(value)))
            raise error(
                f"{where}: {path or 'the value'} is an integer of {digits} digits; expected at most {MAX_INTEGER:,} in magnitude"
            )
        if isinstance(value, dict):
            stack += [(f"{path}.{key}" if path else str(key), item) for key, item in reversed(value.items())]
        elif isinstance(value, list):
            stack += [(f"{path}[{index}]", item) for index, item in reversed(list(enumerate(value)))]
