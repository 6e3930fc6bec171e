"""``traincost``: the command line every Snakemake rule calls. One subcommand per stage.

The parser, the check of every output path before any work, and :func:`main`; each subcommand is
added by the ``*_commands`` function of its study's module in :mod:`traincost.cli`.

Handlers import the library lazily, so `traincost --help` does not load torch or ONNX Runtime.

Every subcommand reads its inputs, writes its outputs atomically (a temporary file renamed into
place) and, on bad input, prints one line ``traincost: error: …`` naming the file, node or field,
and exits with status 2; likewise where a user's code it runs calls ``sys.exit``. Ctrl-C is one line and
status 130, SIGTERM status 143, both with every output whole or absent.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from traincost import __version__
from traincost.cli.ablations import ablation_commands
from traincost.cli.arguments import positive_int
from traincost.cli.checkpoint import checkpoint_commands
from traincost.cli.cost import cost_commands
from traincost.cli.frontend import frontend_commands
from traincost.cli.fusion import fusion_commands
from traincost.cli.hardware import hardware_commands
from traincost.cli.memory import memory_commands
from traincost.cli.mtrain import mtrain_commands
from traincost.cli.summary import summary_commands
from traincost.cli.sweep import sweep_commands
from traincost.cli.tiered import tiered_commands
from traincost.errors import ConfigError, TraincostError, one_line
from traincost.io import same_file
from traincost.limits import MAX_TABLE_MIB

__all__ = ["main"]


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors on the one ``traincost: error:`` line every other error uses."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"traincost: error: {one_line(message)} (see `{self.prog} --help`)\n")


class _Subcommand(_Parser):
    """A subcommand's parser, which also holds the flags of the files the subcommand writes (``outputs``)."""

    def __init__(self, *args: Any, outputs: Sequence[str] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.outputs = tuple(outputs)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="traincost",
        description="Model what training a network costs on an accelerator (cycles, energy, memory, data moved): "
        "one subcommand per stage of the workflow. Every subcommand's --help gives its inputs and outputs with units.",
    )
    parser.add_argument("--version", action="version", version=f"traincost {__version__}")
    parser.add_argument("--quiet", action="store_true", help="log warnings and errors only, no progress bars")
    parser.add_argument(
        "--max-table-mib",
        type=positive_int,
        default=1024,
        help="largest Parquet table read, in MiB of memory as its footer foretells it (default 1024)",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_Subcommand)

    def command(
        name: str, handler: Callable[[argparse.Namespace], None], help_text: str, *, outputs: Sequence[str] = ()
    ) -> argparse.ArgumentParser:
        cmd = sub.add_parser(name, help=help_text, description=help_text, outputs=outputs)
        cmd.set_defaults(handler=handler)
        return cmd

    # `traincost --help` lists the subcommands in the order they are added
    groups = (
        frontend_commands,
        memory_commands,
        sweep_commands,
        fusion_commands,
        checkpoint_commands,
        cost_commands,
        mtrain_commands,
        tiered_commands,
        hardware_commands,
        summary_commands,
        ablation_commands,
    )
    for add in groups:
        add(command)
    return parser


def _check_outputs(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Every output path can be written, before any work: not a directory, in a directory we may create and write,
    and not one of the command's input files (the same file after links are resolved), which writing would replace.

    The outputs of a command are the options it declares (``command(..., outputs=...)``); its inputs, its other
    options and arguments that take paths.
    """
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    subcommand = commands.choices[args.command]
    declared = set(subcommand.outputs)
    actions = subcommand._actions
    outputs = [a for a in actions if declared.intersection(a.option_strings)]
    inputs = [(a, path) for a in actions if a not in outputs for path in _paths(getattr(args, a.dest, None))]
    for action in outputs:
        for path in _paths(getattr(args, action.dest)):
            flag = action.option_strings[0]
            if path.is_dir():
                raise ConfigError(f"{flag} {path}: is a directory; expected a file path")
            parent = next(p for p in (path.absolute().parent, *path.absolute().parents) if p.exists())
            if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
                raise ConfigError(f"{flag} {path}: cannot write in {parent} (permission denied or not a directory)")
            for source, given in inputs:
                if same_file(path, given):
                    name = f"{source.option_strings[0]} " if source.option_strings else ""
                    raise ConfigError(f"{flag} {path}: is the input {name}{given}; writing it would replace the input")


def _paths(value: object) -> list[Path]:
    """The paths an argument's value names (one, a list, or none)."""
    values = value if isinstance(value, list) else [value]
    return [v for v in values if isinstance(v, Path)]


class _Terminated(SystemExit):
    """SIGTERM, raised by traincost's own handler: the one exit traincost itself raises while a command runs."""


def _on_sigterm(signum: int, _frame: object) -> None:
    """SIGTERM (timeout, SLURM, Snakemake) unwinds like Ctrl-C: temporary files are removed on the way out."""
    raise _Terminated(128 + signum)


class _Interrupted(KeyboardInterrupt):
    """Ctrl-C, raised by traincost's own SIGINT handler (a KeyboardInterrupt raised by code is not one)."""


def _on_sigint(_signum: int, _frame: object) -> None:
    raise _Interrupted


def _stopped_line(err: BaseException, did: str) -> str:
    """One line for an exit or interrupt that code other than traincost's raised while a command ran (a user's module,
    factory or forward calling ``sys.exit`` or raising ``KeyboardInterrupt``, or its ``argparse`` giving up): where,
    and what it ``did``."""
    frames = traceback.extract_tb(err.__traceback__)
    where = f" at {frames[-1].filename}:{frames[-1].lineno} (in {frames[-1].name})" if frames else ""
    return f"traincost: error: code traincost ran {did}{where}; the command stopped there and wrote nothing"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the traincost command line; returns the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    level = logging.WARNING if args.quiet else logging.INFO
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    logger = logging.getLogger("traincost")
    logged = logger.level
    logger.setLevel(level)  # also the progress bars' switch (traincost.progress); restored on return
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _on_sigterm) if main_thread else None
    # Ctrl-C told from a KeyboardInterrupt raised by code; a SIGINT the caller ignores stays ignored
    interrupting = main_thread and signal.getsignal(signal.SIGINT) is signal.default_int_handler
    previous_int = signal.signal(signal.SIGINT, _on_sigint) if interrupting else None
    table_limit = MAX_TABLE_MIB.set(args.max_table_mib)
    try:
        _check_outputs(parser, args)
        args.handler(args)
    except TraincostError as err:
        print(f"traincost: error: {one_line(str(err))}", file=sys.stderr)
        return 2
    except OSError as err:  # disk full, permissions, a path that vanished: one line naming the path
        where = f"{err.filename}: " if err.filename else ""
        print(f"traincost: error: {one_line(f'{where}{err.strerror or err}')}", file=sys.stderr)
        return 2
    except _Terminated:
        raise
    except SystemExit as err:  # traincost raises no other: a user's code exited
        print(one_line(_stopped_line(err, f"called sys.exit({err.code!r})")), file=sys.stderr)
        return 2
    except KeyboardInterrupt as err:  # temporaries were removed on the way out, outputs are whole or absent
        if isinstance(err, _Interrupted) or not interrupting:
            print("traincost: interrupted (Ctrl-C); every output is whole or absent", file=sys.stderr)
            return 130
        print(one_line(_stopped_line(err, "raised KeyboardInterrupt")), file=sys.stderr)
        return 2
    finally:
        MAX_TABLE_MIB.reset(table_limit)
        logger.setLevel(logged)
        if main_thread:
            signal.signal(signal.SIGTERM, previous)
        if interrupting:
            signal.signal(signal.SIGINT, previous_int)
    return 0
