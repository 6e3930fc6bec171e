"""Checks of the tables that stages pass between them (Parquet read back into pandas)."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from traincost.errors import ConfigError

__all__ = ["require_columns"]


def require_columns(table: pd.DataFrame, columns: Sequence[str], what: str) -> None:
    """Raise a ``ConfigError`` naming ``what`` and every column of ``columns`` that ``table`` lacks."""
    missing = [c for c in columns if c not in table.columns]
    if missing:
        raise ConfigError(f"{what}: missing columns {missing}")
