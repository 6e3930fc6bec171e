"""Arithmetic over template parameters: how a hardware YAML says ``count: x_pes * y_pes``.

A numeric field of a hardware description is a number or a string expression over the template's
parameters, built from numbers, parameter names, ``+ - * / // ** %``, parentheses, ``min`` and ``max`` (of
one or more values), ``sqrt`` (of one) and the size constants ``KiB`` and ``MiB``. Nothing else is evaluated (no attributes, no
calls to anything but those three functions), so a YAML file cannot run code.

Parameters may be numpy arrays (one value per configuration of a sweep); the expression is then
evaluated once for the whole sweep.

Limits keep a hostile file from hanging the evaluator: an expression is at most
``MAX_EXPRESSION_CHARS`` characters, an exponent at most ``MAX_EXPONENT`` in magnitude, and powers are
taken in floating point (a result too large for a float becomes inf, which the loader rejects as out
of range) instead of as exact integers, whose ``**`` chains can take hours and all the memory.
"""

from __future__ import annotations

import ast
import functools
import operator
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from traincost.limits import MAX_EXPONENT, MAX_EXPRESSION_CHARS

__all__ = ["evaluate", "names_in", "ExpressionError", "CONSTANTS"]

CONSTANTS = {"KiB": 1024, "MiB": 1024 * 1024}

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}
# each function: (least, most arguments; None = any number), what it computes element-wise over configurations
_FUNCTIONS: dict[str, tuple[int, int | None, Callable[..., Any]]] = {
    "min": (1, None, lambda *values: functools.reduce(np.minimum, values)),
    "max": (1, None, lambda *values: functools.reduce(np.maximum, values)),
    "sqrt": (1, 1, np.sqrt),
}


class ExpressionError(ValueError):
    """An expression that is not plain arithmetic over known names."""


def names_in(text: str) -> set[str]:
    """The parameter names an expression reads (constants and functions excluded)."""
    tree = _parse(text)
    found = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    return found - set(CONSTANTS) - set(_FUNCTIONS)


def evaluate(value: float | str, parameters: Mapping[str, Any]) -> Any:
    """Evaluate a number or an expression string with ``parameters`` bound.

    Raises:
        ExpressionError: the text is not allowed arithmetic, or names an unknown parameter.
    """
    if isinstance(value, bool):
        raise ExpressionError(f"expected a number or an arithmetic expression, got {value!r}")
    if isinstance(value, int | float):
        return value
    try:
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):  # inf and NaN are refused by the loader
            return _eval(_parse(value).body, {**CONSTANTS, **parameters}, value)
    except (ZeroDivisionError, OverflowError) as err:  # Python numbers; numpy arrays give inf, which the loader refuses
        raise ExpressionError(f"{value!r}: {err}") from err


def _parse(text: str) -> ast.Expression:
    if len(text) > MAX_EXPRESSION_CHARS:
        raise ExpressionError(
            f"{text[:60]!r}… has {len(text)} characters; an expression may have at most "
            f"{MAX_EXPRESSION_CHARS} (traincost.limits.MAX_EXPRESSION_CHARS)"
        )
    try:
        return ast.parse(text, mode="eval")
    except SyntaxError as err:
        raise ExpressionError(f"{text!r} is not an arithmetic expression ({err.msg})") from err
    except (RecursionError, MemoryError) as err:
        raise ExpressionError(f"{text[:60]!r}… is nested too deeply to evaluate") from err


def _power(base: Any, exponent: Any, text: str) -> Any:
    """``base ** exponent`` in floating point, refusing exponents beyond ``MAX_EXPONENT``."""
    if np.any(np.abs(exponent) > MAX_EXPONENT):
        raise ExpressionError(
            f"{text!r}: an exponent of {np.max(np.abs(exponent)):g} is beyond the limit of {MAX_EXPONENT} "
            "(traincost.limits.MAX_EXPONENT)"
        )
    return np.power(np.asarray(base, dtype=np.float64), exponent)


def _eval(node: ast.AST, scope: Mapping[str, Any], text: str) -> Any:
    match node:
        case ast.Constant(value=int() | float() as number) if not isinstance(number, bool):
            return number
        case ast.Name(id=name):
            if name not in scope:
                known = ", ".join(sorted(set(scope) - set(CONSTANTS))) or "none"
                raise ExpressionError(f"{text!r}: unknown parameter {name!r} (parameters: {known})")
            return scope[name]
        case ast.BinOp(left=left, op=ast.Pow(), right=right):
            return _power(_eval(left, scope, text), _eval(right, scope, text), text)
        case ast.BinOp(left=left, op=op, right=right) if type(op) in _BINARY:
            return _BINARY[type(op)](_eval(left, scope, text), _eval(right, scope, text))
        case ast.UnaryOp(op=ast.USub(), operand=operand):
            return -_eval(operand, scope, text)
        case ast.Call(func=ast.Name(id=name), args=args, keywords=[]) if name in _FUNCTIONS:
            least, most, function = _FUNCTIONS[name]
            if len(args) < least or (most is not None and len(args) > most):
                takes = "one argument" if most == 1 else "one or more arguments"
                raise ExpressionError(f"{text!r}: {name}() takes {takes}, given {len(args)}")
            return function(*(_eval(arg, scope, text) for arg in args))
    raise ExpressionError(f"{text!r}: only numbers, parameter names, + - * / // ** %, min, max and sqrt are allowed")
