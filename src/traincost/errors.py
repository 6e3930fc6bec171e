"""The one exception family traincost raises for bad input.

Every error names the file, node or field at fault and what was expected; the CLI prints it on one
line and exits non-zero.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["TraincostError", "UnknownModelError", "GraphError", "UnsupportedOpError", "ConfigError", "in_file"]


class TraincostError(Exception):
    """Bad input to a traincost stage: the message names what is wrong and where."""


class UnknownModelError(TraincostError):
    """A model name that is not in the zoo."""


class ConfigError(TraincostError):
    """A configuration value of the wrong type or range."""


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
