"""Pareto fronts of two minimised objectives: strict, near the best cost, and dominated only by a margin."""

from __future__ import annotations

import numpy as np

__all__ = ["margin_front_mask", "near_front_mask", "pareto_mask"]


def pareto_mask(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """True for the points no other point beats on both objectives (both minimised; ties keep one point)."""
    first, second = np.asarray(first, dtype=np.float64), np.asarray(second, dtype=np.float64)
    order = np.lexsort((second, first))
    best = np.minimum.accumulate(second[order])
    keep_sorted = np.empty(len(order), dtype=bool)
    keep_sorted[0] = True
    keep_sorted[1:] = second[order][1:] < best[:-1]
    mask = np.zeros(len(order), dtype=bool)
    mask[order[keep_sorted]] = True
    return mask


def near_front_mask(first: np.ndarray, second: np.ndarray, *, tolerance: float) -> np.ndarray:
    """True for the points within ``tolerance`` (a fraction) of the front: whose ``second`` is at most ``1 + tolerance``
    times the lowest ``second`` of the points with no larger ``first`` (both minimised, ``second`` positive). With
    ``tolerance`` 0, the front's points and their exact ties."""
    first, second = np.asarray(first, dtype=np.float64), np.asarray(second, dtype=np.float64)
    levels, level_of = np.unique(first, return_inverse=True)
    lowest = np.full(len(levels), np.inf)
    np.minimum.at(lowest, level_of, second)
    return second <= np.minimum.accumulate(lowest)[level_of] * (1.0 + tolerance)


def _lowest_below(keys: np.ndarray, values: np.ndarray, bounds: np.ndarray, *, inclusive: bool) -> np.ndarray:
    """Per bound, the lowest value among the points whose key is below it (at most it if ``inclusive``); inf if none."""
    order = np.argsort(keys, kind="stable")
    prefix = np.minimum.accumulate(values[order])
    count = np.searchsorted(keys[order], bounds, side="right" if inclusive else "left")
    return np.where(count > 0, prefix[np.maximum(count - 1, 0)], np.inf)


def margin_front_mask(first: np.ndarray, second: np.ndarray, *, margin: float) -> np.ndarray:
    """True for the points no other point dominates by ``margin`` (a fraction; both objectives minimised and positive).

    A point ``q`` dominates ``p`` by the margin when it is no worse than ``p`` within the margin in both objectives
    (``q <= p * (1 + margin)``) and better by more than the margin in at least one (``q < p * (1 - margin)``). Points
    that differ by less than the margin in both objectives do not remove each other, so a plateau of near-equal
    points is not decided by rounding; and a point whose cost is within the margin of another's at much larger
    compute is removed, where :func:`near_front_mask` keeps it. Noise well below the margin moves only the points
    whose dominance lies within that noise of the margin. With ``margin`` 0, the strict front with its exact ties.
    """
    first, second = np.asarray(first, dtype=np.float64), np.asarray(second, dtype=np.float64)
    low, high = 1.0 - margin, 1.0 + margin
    # better by the margin in the first objective, within it in the second; and the other way round
    by_first = _lowest_below(first, second, first * low, inclusive=False) <= second * high
    by_second = _lowest_below(first, second, first * high, inclusive=True) < second * low
    return ~(by_first | by_second)
