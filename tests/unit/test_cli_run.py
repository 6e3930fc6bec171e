"""The command line's parser: each subcommand declares the files it writes, and the check before any work reads them."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from traincost.cli.run import _check_outputs, _parser
from traincost.errors import ConfigError


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = _parser()
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices


@pytest.mark.parametrize("name", sorted(_subcommands()))
def test_each_declared_output_is_a_path_option_of_its_command(name: str) -> None:
    command = _subcommands()[name]
    options = {flag: action for action in command._actions for flag in action.option_strings}
    for flag in command.outputs:
        assert flag in options, f"{name}: declares {flag}, which it does not have"
        assert options[flag].type is Path, f"{name} {flag}: an output that takes no path"
    # the help says which options are outputs; an undeclared one would go unchecked
    described = [a.option_strings[0] for a in command._actions if (a.help or "").startswith(("output", "also write"))]
    assert set(described) <= set(command.outputs), f"{name}: outputs not declared: {set(described) - set(command.outputs)}"


def test_a_declared_output_that_is_an_input_is_refused_before_any_work(tmp_path: Path) -> None:
    ops = tmp_path / "ops.parquet"
    ops.write_bytes(b"")
    parser = _parser()
    args = parser.parse_args(["sweep", "--ops", str(ops), "--tensors", str(ops), "--hardware", "hw.yaml", "--step", "training",
                              "--out", str(ops)])  # fmt: skip
    with pytest.raises(ConfigError, match=r"--out .*ops.parquet: is the input --ops"):
        _check_outputs(parser, args)


def test_an_option_not_declared_is_not_checked_as_an_output(tmp_path: Path) -> None:
    parser = _parser()
    # concat declares --out: a directory there is refused; its input --in is not checked as one
    args = parser.parse_args(["concat", "--in", str(tmp_path / "a.parquet"), "--out", str(tmp_path)])
    with pytest.raises(ConfigError, match="is a directory; expected a file path"):
        _check_outputs(parser, args)
    args = parser.parse_args(["concat", "--in", str(tmp_path), "--out", str(tmp_path / "b.parquet")])
    _check_outputs(parser, args)
