"""The one exception family traincost raises for bad input.

Every error names the file, node or field at fault and what was expected; the CLI prints it on one
line and exits non-zero.
"""

from __future__ import annotations

__all__ = ["TraincostError", "UnknownModelError", "GraphError", "UnsupportedOpError", "ConfigError"]


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
