"""What each swept parameter of a hardware grid moves: a table per sweep of the full run.

For every parameter of a sweep's grid, the configurations are grouped by the values of all the other parameters;
within a group only that parameter changes. The table gives, per output (latency, energy and each of its parts,
off-chip bytes, peak on-chip bytes, the fused groups that fit), the share of groups in which the output takes more
than one value: 0 means the parameter never moves it, 1 that it always does. A swept dimension that moves nothing
but its own access energy shows up as a row of zeros beside one energy column.

    python bench/swept_parameters.py                          # results/monet/sweeps/* of the last run
    python bench/swept_parameters.py results/monet/sweeps/edge_tpu_resnet18/training.parquet
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

_OUTPUTS = ("latency_cycles", "energy_pj", "offchip_bytes", "bus_bytes", "peak_onchip_bytes", "fitting_groups")
_RELATIVE = 1e-9  # two values differ when they differ by more than this share


def moved_by(table: pd.DataFrame, parameters: list[str]) -> pd.DataFrame:
    """Per parameter (rows) and output (columns): the share of groups of configurations differing only in that
    parameter in which the output takes more than one value."""
    outputs = [c for c in table.columns if c in _OUTPUTS or (c.startswith("energy_") and c.endswith("_pj"))]
    rows = {}
    for parameter in parameters:
        others = [p for p in parameters if p != parameter]
        grouped = table.groupby(others, sort=False)[outputs] if others else table[outputs].groupby(lambda _: 0)
        spread = (grouped.max() - grouped.min()).abs() > _RELATIVE * grouped.max().abs().clip(lower=1.0)
        rows[parameter] = spread.mean()
    return pd.DataFrame(rows).T


def main(paths: list[Path]) -> None:
    for path in paths:
        table = pd.read_parquet(path)
        parameters = _grid_columns(table)
        print(f"\n{path} ({len(table):,} configurations)")
        print(moved_by(table, parameters).round(2).to_string())


def _grid_columns(table: pd.DataFrame) -> list[str]:
    """The swept parameters of a sweep table: the numeric columns the sweep writes before its costs, with more than
    one value."""
    columns = list(table.columns)
    head = table[columns[: columns.index("latency_cycles")]]
    return [c for c in head.select_dtypes("number").columns if c != "config_id" and head[c].nunique() > 1]


if __name__ == "__main__":
    given = [Path(p) for p in sys.argv[1:]]
    main(given or sorted(Path("results/monet/sweeps").glob("*/*.parquet")))
