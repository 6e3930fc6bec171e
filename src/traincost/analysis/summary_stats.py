"""Summary statistics the papers use to average over workloads."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

__all__ = ["geometric_mean"]


def geometric_mean(values: pd.Series | np.ndarray | Sequence[float]) -> float:
    """The geometric mean of the positive, finite values; NaN if there are none."""
    array = np.asarray(values, dtype=float)
    array = array[np.isfinite(array) & (array > 0)]
    return float(np.exp(np.log(array).mean())) if array.size else np.nan
