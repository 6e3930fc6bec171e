"""Progress bars for the loops that take more than a few seconds (tqdm).

Bars go to standard error and only when it is a terminal: in Snakemake logs (stderr redirected to a
file) they stay silent. ``traincost --quiet`` silences them everywhere (the CLI calls ``set_quiet``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TypeVar

from tqdm import tqdm

__all__ = ["progress", "progress_bar", "set_quiet"]

_T = TypeVar("_T")
_quiet = False


def set_quiet(quiet: bool) -> None:
    """Silence (or allow) every progress bar of this process."""
    global _quiet  # noqa: PLW0603 - one process-wide switch, set once by the CLI
    _quiet = quiet


def progress(items: Iterable[_T], *, desc: str, total: int | None = None, unit: str = "it") -> Iterator[_T]:
    """``items`` with a progress bar labelled ``desc`` (none under --quiet or when stderr is not a terminal)."""
    yield from tqdm(items, desc=desc, total=total, unit=unit, leave=False, disable=True if _quiet else None)


def progress_bar(*, total: int, desc: str, unit: str = "it") -> tqdm:
    """A progress bar to advance by hand (``bar.update(1)``), for loops driven by a library; use it as a context manager."""
    return tqdm(total=total, desc=desc, unit=unit, leave=False, disable=True if _quiet else None)
