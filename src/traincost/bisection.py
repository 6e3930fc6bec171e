"""Bisection of a monotone step: the one root-bracketing loop of the calibrations (TM-Training's energy scale,
MTrain's IP clocks)."""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["bisect"]


def bisect(reached: Callable[[float], bool], low: float, high: float, *, steps: int) -> tuple[float, float]:
    """The bracket ``(low, high)`` halved ``steps`` times around where ``reached`` turns true.

    Args:
        reached: false at ``low``, true at ``high``, and true from some point between them on (monotone).
        low, high: the bracket; the caller checks that it holds the point.
        steps: halvings; the bracket narrows by ``2**steps`` (60 to 100 reach float precision).

    Returns:
        The last bracket: ``reached`` is false at its low end and true at its high end.
    """
    for _ in range(steps):
        mid = (low + high) / 2
        if reached(mid):
            high = mid
        else:
            low = mid
    return low, high
