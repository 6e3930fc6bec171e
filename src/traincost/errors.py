"""The one exception family traincost raises for bad input.

Every error names the file, node or field at fault and what was expected; the CLI prints it on one
line and exits non-zero.
"""

from __future__ import annotations

import graphlib
import os
from collections.abc import Hashable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TypeVar

from traincost.limits import MAX_LINE_CHARS

__all__ = [
    "TraincostError",
    "UnknownModelError",
    "GraphError",
    "UnsupportedOpError",
    "ConfigError",
    "DramError",
    "cycle_text",
    "find_cycle",
    "in_file",
    "one_line",
]


class TraincostError(Exception):
    """Bad input to a traincost stage: the message names what is wrong and where."""


class UnknownModelError(TraincostError):
    """A model name that is not in the zoo."""


class ConfigError(TraincostError):
    """A configuration value of the wrong type or range."""


class DramError(ConfigError):
    """A training step that the DRAM of a cluster's FPGAs cannot hold (at a ratio, or at every ratio)."""


class GraphError(TraincostError):
    """An ONNX file that cannot be read or does not have the structure a stage expects."""


class UnsupportedOpError(GraphError):
    """Operators that a graph pass has no rule for."""


@contextmanager
def in_file(path: str | os.PathLike[str]) -> Iterator[None]:
    """Name ``path`` in a TraincostError raised within, unless the message names it already (a graph
    pass knows the graph and node at fault, not the file they came from)."""
    try:
        yield
    except TraincostError as err:
        if str(path) in str(err):
            raise
        raise type(err)(f"{path}: {err}") from err


_Node = TypeVar("_Node", bound=Hashable)


def find_cycle(predecessors: Mapping[_Node, Iterable[_Node]]) -> list[_Node]:
    """A cycle of the graph ``predecessors`` gives (each node → the nodes it comes after), in the order its edges run,
    the first node repeated last; ``[]`` if the graph has none."""
    try:
        graphlib.TopologicalSorter(predecessors).prepare()
    except graphlib.CycleError as err:
        return list(err.args[1])
    return []


def cycle_text(names: Sequence[str], *, shown: int = 6) -> str:
    """The members of a cycle (the first repeated last) joined by arrows, the middle left out past ``shown``."""
    if len(names) > shown:
        names = [*names[:3], f"… {len(names) - 5} more …", *names[-2:]]
    return " → ".join(names)


def one_line(message: str, *, limit: int = MAX_LINE_CHARS) -> str:
    """``message`` on one line; past ``limit`` characters its middle is cut (the start and the end are kept)."""
    flat = " ".join(message.split())
    if len(flat) <= limit:
        return flat
    keep = limit // 2
    return f"{flat[:keep]} … ({len(flat) - 2 * keep} characters cut) … {flat[-keep:]}"
