"""Pareto fronts of two minimised objectives."""

from __future__ import annotations

import numpy as np

__all__ = ["pareto_mask"]


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
