"""Derived measures of an Edge TPU hardware sweep, shared by MONET's claims and its figures."""

from __future__ import annotations

import pandas as pd

from traincost.tables import require_columns

__all__ = ["edge_tpu_resources"]


def edge_tpu_resources(table: pd.DataFrame) -> pd.DataFrame:
    """Add the Edge TPU's compute measures of MONET Fig. 8: ``pe_compute`` = U·L and ``total_compute`` = U·L·n_PEs."""
    require_columns(table, ["simd_units", "lanes", "x_pes", "y_pes"], "an Edge TPU sweep")
    pe = table["simd_units"] * table["lanes"]
    return table.assign(pe_compute=pe, total_compute=pe * table["x_pes"] * table["y_pes"])
