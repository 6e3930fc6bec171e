"""Progress bars for the loops that take more than a few seconds (tqdm).

Bars go to standard error, only when it is a terminal (in Snakemake logs, stderr redirected to a file,
they stay silent) and only while traincost logs at INFO: ``traincost --quiet`` (warnings and errors only)
silences them with the log. No state of this module changes: the logging configuration decides.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from typing import TypeVar

from tqdm import tqdm

__all__ = ["progress", "progress_bar"]

_T = TypeVar("_T")
_log = logging.getLogger("traincost")


def _disabled() -> bool | None:
    """tqdm's ``disable``: True when traincost does not log at INFO, else None (a bar only on a terminal)."""
    return None if _log.isEnabledFor(logging.INFO) else True


def progress(items: Iterable[_T], *, desc: str, total: int | None = None, unit: str = "it") -> Iterator[_T]:
    """``items`` with a progress bar labelled ``desc`` (none under --quiet or when stderr is not a terminal)."""
    yield from tqdm(items, desc=desc, total=total, unit=unit, leave=False, disable=_disabled())


def progress_bar(*, total: int, desc: str, unit: str = "it") -> tqdm:
    """A progress bar to advance by hand (``bar.update(1)``), for loops driven by a library; use it as a context manager."""
    return tqdm(total=total, desc=desc, unit=unit, leave=False, disable=_disabled())
