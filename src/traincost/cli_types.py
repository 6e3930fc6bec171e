"""Argument types of the command line: each checks the range the workflow config's schema allows.

argparse reports a value these refuse as ``argument --flag: 'value': expected …``, naming the flag as
the user typed it, before any work starts; the ranges are those of ``workflow/schemas/config.schema.yaml``
for the same setting, so a value the workflow refuses is refused here too.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

__all__ = ["fraction", "non_negative_number", "positive_int", "positive_number", "unit_interval_open"]


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a number") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r}: expected a finite number")
    return value


def _checked(accept: Callable[[float], bool], expected: str) -> Callable[[str], float]:
    def parse(text: str) -> float:
        value = _number(text)
        if not accept(value):
            raise argparse.ArgumentTypeError(f"{text!r}: expected {expected}")
        return value

    parse.__name__ = expected
    return parse


positive_number = _checked(lambda v: v > 0, "a number > 0")
non_negative_number = _checked(lambda v: v >= 0, "a number >= 0")
fraction = _checked(lambda v: 0 <= v <= 1, "a fraction in [0, 1]")
unit_interval_open = _checked(lambda v: 0 <= v < 1, "a number in [0, 1)")


def positive_int(text: str) -> int:
    """An integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected an integer >= 1") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: expected an integer >= 1")
    return value
