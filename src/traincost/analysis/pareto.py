"""Pareto fronts of two minimised objectives."""

from __future__ import annotations

import numpy as np

__all__ = ["near_front_mask", "pareto_mask"]


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
