"""Checks of option values shared by the model builders and the zoo registry.

Values may come straight from YAML, so each check takes ``object`` and raises
:class:`~traincost.errors.ConfigError` naming the field and the expected range.
"""

from __future__ import annotations

from traincost.errors import ConfigError

__all__ = ["check_dropout", "check_positive_int"]


def check_positive_int(value: object, *, field: str) -> int:
    """Return ``value`` if it is an int of at least 1.

    Args:
        value: The option value to check.
        field: The option name, quoted in the error message.

    Returns:
        The value, unchanged.

    Raises:
        ConfigError: ``value`` is not an int (bools are rejected) or is below 1.
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{field!r} must be a positive int, got {value!r}")
    return value


def check_dropout(value: object, *, field: str = "dropout") -> float:
    """Return ``value`` as a float if it is a valid dropout probability ``0 <= p < 1``.

    Args:
        value: The option value to check.
        field: The option name, quoted in the error message.

    Returns:
        The probability as a float.

    Raises:
        ConfigError: ``value`` is not a real number (bools are rejected) or lies outside ``[0, 1)``.
    """
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= value < 1.0:
        raise ConfigError(f"{field!r} must be a number p with 0 <= p < 1, got {value!r}")
    return float(value)
