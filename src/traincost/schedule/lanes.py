"""The per-configuration values of the scheduler: numpy arrays over a chunk of configurations, or Python scalars.

The scheduler visits ops one at a time and works, per op, on values that have one lane per hardware
configuration (a start cycle, the bytes an input moves, whether a tensor fits). Over a grid they are
numpy arrays, and one numpy call covers every configuration; for a single configuration (NSGA-II's
thousands of schedules on one template) each call would cost about a microsecond to work on one
number. ``lanes_for`` gives the scheduler the operations it needs for either form: ``VectorLanes``
(numpy, one lane per configuration) or ``ScalarLanes`` (Python ``float``, ``int`` and ``bool`` for one
configuration). The scheduling logic is written once, against these operations and the arithmetic
operators, which both forms share.

Both give the same numbers bit for bit: every operation is the same IEEE-754 double operation on each
lane, a float32 store rounds the same way (numpy's cast and ``array('f')`` are both C's double-to-float
conversion), and sums over pools follow numpy's order (sequential below 8 terms, numpy itself above).
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["Lane", "Lanes", "VectorLanes", "ScalarLanes", "lanes_for"]

Lane = Any  # a numpy array with one entry per configuration, or a Python scalar for one configuration
_PAIRWISE = 8  # numpy sums fewer terms than this one after another, from the first


class VectorLanes:
    """Lanes as numpy arrays of length ``n`` (the configurations of a chunk)."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.rows = np.arange(n)

    maximum = staticmethod(np.maximum)
    where = staticmethod(np.where)
    logical_not = staticmethod(np.logical_not)

    @staticmethod
    def any(mask: Lane) -> bool:
        return bool(mask.any()) if isinstance(mask, np.ndarray) else bool(mask)  # the method: a third of np.any's call

    def zeros(self) -> np.ndarray:
        return np.zeros(self.n)

    def lane(self, values: np.ndarray) -> np.ndarray:
        """A per-configuration array (``n``,) as a lane."""
        return values

    def columns(self, values: np.ndarray) -> np.ndarray:
        """A (configurations, k) array as k lanes, indexable by column: each a view into ``values``."""
        return values.T

    def state(self, count: int, fill: float, dtype: str) -> np.ndarray:
        """``count`` writable lanes (rows of one array) of ``dtype`` (``int16`` or ``float32``), each ``fill``."""
        return np.full((count, self.n), fill, dtype=dtype)

    @staticmethod
    def total(columns: np.ndarray) -> np.ndarray:
        """The sum of lanes made by ``columns`` (each lane's terms in numpy's order)."""
        return columns.T.sum(axis=1)

    def add_at(self, lanes: np.ndarray, index: Lane, amount: Lane) -> None:
        """``lanes[index] += amount`` in each configuration, for lanes made by ``columns`` (adding zero elsewhere)."""
        for k in range(len(lanes)):
            lanes[k] += amount * (index == k)

    def at(self, lanes: np.ndarray, index: Lane) -> np.ndarray:
        """Per configuration, the value of ``lanes`` (made by ``columns``) at ``index``."""
        return lanes.T[self.rows, index]

    def array(self, value: Lane) -> np.ndarray:
        """A lane as an array (``n``,)."""
        return np.broadcast_to(value, (self.n,)).astype(np.float64)

    def stack(self, lanes: Sequence[Lane]) -> np.ndarray:
        """Lanes (one per op) as a (configurations, ops) array."""
        out = np.empty((self.n, len(lanes)))
        for i, value in enumerate(lanes):
            out[:, i] = value
        return out

    def slots(self, count: np.ndarray) -> np.ndarray:
        """When each instance of a core is free: (configurations, most instances), infinite past a configuration's count."""
        return np.where(np.arange(int(count.max()))[None, :] < count[:, None], 0.0, np.inf)

    @staticmethod
    def latest(slots: np.ndarray) -> np.ndarray:
        """When the last instance is free."""
        return np.where(np.isfinite(slots), slots, -np.inf).max(axis=1)

    def earliest(self, slots: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The first instance to be free (the lowest index among ties) and when."""
        pick = slots.argmin(axis=1)
        return pick, slots[self.rows, pick]

    def occupy(self, slots: np.ndarray, pick: np.ndarray, until: np.ndarray) -> None:
        """Instance ``pick`` is busy until ``until``."""
        slots[self.rows, pick] = until

    @staticmethod
    def occupy_all(slots: np.ndarray, until: np.ndarray) -> np.ndarray:
        """Every instance is busy until ``until``."""
        return np.where(np.isfinite(slots), until[:, None], np.inf)

    def occupy_some(self, slots: np.ndarray, pick: np.ndarray, until: np.ndarray, *, every: Any) -> np.ndarray:
        """Every instance is busy until ``until`` where ``every``, instance ``pick`` elsewhere."""
        every = np.broadcast_to(every, (self.n,))
        busy = np.where(every[:, None] & np.isfinite(slots), until[:, None], slots)
        one = ~every
        busy[self.rows[one], pick[one]] = until[one]
        return busy


class ScalarLanes:
    """Lanes as Python scalars: one configuration."""

    n = 1
    maximum = staticmethod(max)

    @staticmethod
    def where(mask: bool, yes: Any, no: Any) -> Any:
        return yes if mask else no

    @staticmethod
    def logical_not(mask: bool) -> bool:
        return not mask

    @staticmethod
    def any(mask: bool) -> bool:
        return bool(mask)

    @staticmethod
    def zeros() -> float:
        return 0.0

    @staticmethod
    def lane(values: np.ndarray) -> Any:
        return values[0].item()

    @staticmethod
    def columns(values: np.ndarray) -> list[Any]:
        return values[0].tolist()

    @staticmethod
    def state(count: int, fill: float, dtype: str) -> array:
        return array({"int16": "h", "float32": "f"}[dtype], [fill]) * count

    @staticmethod
    def total(columns: list[float]) -> float:
        if len(columns) < _PAIRWISE:
            return sum(columns, 0.0)
        return float(np.asarray([columns]).sum(axis=1)[0])

    @staticmethod
    def add_at(lanes: list[float], index: int, amount: float) -> None:
        lanes[index] += amount

    @staticmethod
    def at(lanes: list[Any], index: int) -> Any:
        return lanes[index]

    @staticmethod
    def array(value: float) -> np.ndarray:
        return np.array([value], dtype=np.float64)

    @staticmethod
    def stack(lanes: Sequence[float]) -> np.ndarray:
        return np.array(lanes, dtype=np.float64)[None, :]

    @staticmethod
    def slots(count: np.ndarray) -> list[float]:
        return [0.0] * int(count[0])

    @staticmethod
    def latest(slots: list[float]) -> float:
        return max(slots)

    @staticmethod
    def earliest(slots: list[float]) -> tuple[int, float]:
        free = min(slots)
        return slots.index(free), free

    @staticmethod
    def occupy(slots: list[float], pick: int, until: float) -> None:
        slots[pick] = until

    @staticmethod
    def occupy_all(slots: list[float], until: float) -> list[float]:
        return [until] * len(slots)

    @staticmethod
    def occupy_some(slots: list[float], pick: int, until: float, *, every: bool) -> list[float]:
        if every:
            return [until] * len(slots)
        slots[pick] = until
        return slots


Lanes = VectorLanes | ScalarLanes


def lanes_for(n_configs: int) -> Lanes:
    """Scalars for one configuration, numpy arrays for more."""
    return ScalarLanes() if n_configs == 1 else VectorLanes(n_configs)
