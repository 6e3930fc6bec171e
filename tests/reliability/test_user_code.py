"""A user's code cannot end traincost silently: ``sys.exit`` (or a ``KeyboardInterrupt`` it raises) in a user's
module, factory or forward is one line naming where it was called, status 2 and no tables; a user's module sees a
command line of its own; Ctrl-C is one line, status 130, with every output whole or absent."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.reliability.conftest import EDGE_TPU, cli, importable, slow_export

NETS = textwrap.dedent(
    """
    import sys
    from torch import nn

    class ExitingForward(nn.Linear):
        def forward(self, x):
            sys.exit("forward gave up")

    def exits():
        sys.exit(3)

    def interrupts():
        raise KeyboardInterrupt

    def exits_in_forward():
        return ExitingForward(8, 4)
    """
)


def _cost(model: str, out: Path) -> subprocess.CompletedProcess[str]:
    args = ("--input-shape", "8", "--batch", 2, "--hardware", EDGE_TPU, "--out-dir", out, "--frontend", "torch")
    return cli("cost", model, *args)


def _one_exit_line(result: subprocess.CompletedProcess[str], out: Path, *words: str) -> None:
    assert result.returncode == 2, (result.returncode, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("traincost: error: "), result.stderr
    for word in ("called sys.exit(", "wrote nothing", *words):
        assert word in lines[0], (word, lines[0])
    assert not out.exists() or not list(out.iterdir())


@pytest.mark.parametrize(
    ("source", "factory", "words"),
    [
        ("import sys\nsys.exit(0)\n", "net", ["sys.exit(0)", "exits_at_import.py:2"]),
        (NETS, "exits", ["sys.exit(3)", "(in exits)"]),
        (NETS, "exits_in_forward", ["sys.exit('forward gave up')", "(in forward)"]),
    ],
)
def test_sys_exit_in_a_users_code_is_one_line_naming_where(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str, factory: str, words: list[str]
) -> None:
    module = importable(tmp_path, monkeypatch, "exits_at_import" if factory == "net" else "exiting_nets", source)
    out = tmp_path / "cost"
    _one_exit_line(_cost(f"{module}:{factory}", out), out, *words)


def test_a_keyboard_interrupt_a_users_code_raises_is_not_taken_for_ctrl_c(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C at a terminal is status 130; a KeyboardInterrupt raised by a user's factory is one line naming where."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # as at a terminal (a test runner may ignore it)
    try:
        module = importable(tmp_path, monkeypatch, "interrupting_nets", NETS)
        out = tmp_path / "cost"
        result = _cost(f"{module}:interrupts", out)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert "code traincost ran raised KeyboardInterrupt at" in result.stderr and "(in interrupts)" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and (not out.exists() or not list(out.iterdir()))


def test_a_users_module_that_parses_the_command_line_sees_none_of_traincost_s(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = textwrap.dedent(
        """
        import argparse, sys
        from torch import nn

        parser = argparse.ArgumentParser()
        parser.add_argument("--width", type=int, default=8)
        ARGV, ARGS = list(sys.argv), parser.parse_args()

        def net():
            assert sys.argv == ["parsing_nets"], sys.argv
            return nn.Linear(ARGS.width, 4)
        """
    )
    module = importable(tmp_path, monkeypatch, "parsing_nets", source)
    result = _cost(f"{module}:net", tmp_path / "cost")
    assert result.returncode == 0, result.stderr
    assert sys.modules[module].ARGV == ["parsing_nets"]


def test_ctrl_c_is_one_line_status_130_and_leaves_no_file(tmp_path: Path) -> None:
    process = slow_export(tmp_path / "model.onnx")
    try:
        assert process.stdout.readline().strip() == "writing", process.stderr.read()
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=30) == 130
        stderr = process.stderr.read()
    finally:
        process.kill()
        process.wait()
    assert stderr.strip().splitlines() == ["traincost: interrupted (Ctrl-C); every output is whole or absent"], stderr
    assert not list(tmp_path.iterdir()), list(tmp_path.iterdir())
