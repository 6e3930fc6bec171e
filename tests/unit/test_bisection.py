"""The calibrations' one bisection, on a step whose point is known."""

from __future__ import annotations

import math

from traincost.bisection import bisect


def test_the_bracket_closes_on_the_step_from_both_sides() -> None:
    low, high = bisect(lambda x: x * x >= 2.0, 0.0, 2.0, steps=40)
    assert low < math.sqrt(2.0) <= high and high - low == 2.0 / 2**40


def test_zero_steps_leave_the_bracket_as_given() -> None:
    assert bisect(lambda x: x >= 1.0, 0.0, 4.0, steps=0) == (0.0, 4.0)
