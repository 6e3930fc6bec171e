"""How MTrain's answer shares the batch, per model, cluster and P2P bandwidth: the report's table of its mechanism.

A row per cell of the study (MTrain's final step): the ratio, how many FPGAs are given a share of the batch and how many
are busy (MTrain-Mapping may run a branch's sub-operations, or a batch-wise one, on another FPGA), the design each FPGA
runs at its share, which candidate the search kept (its own answer, ``single``, or a lower bandwidth's answer
re-timed), and its throughput over the best single FPGA's.
"""

from __future__ import annotations

import pandas as pd

from traincost.analysis.mtrain_sentences import SINGLE_METHODS
from traincost.tables import require_columns

__all__ = ["SPLIT_COLUMNS", "split_table"]

SPLIT_COLUMNS = (
    "model",
    "cluster",
    "bandwidth_gb_per_s",
    "ratio",
    "sharing_fpgas",
    "busy_fpgas",
    "share_designs",
    "kept",
    "throughput_gflops",
    "best_single_gflops",
    "over_best_single",
)


def split_table(study: pd.DataFrame) -> pd.DataFrame:
    """``SPLIT_COLUMNS`` for each cell of ``study`` (``traincost mtrain-study``'s tables, merged).

    Raises:
        ConfigError: the study lacks a column the table reads.
    """
    require_columns(
        study,
        ("model", "cluster", "bandwidth_gb_per_s", "method", "step", "throughput_gflops", *SPLIT_COLUMNS[3:8]),
        "MTrain study table",
    )
    cell = ["model", "cluster", "bandwidth_gb_per_s"]
    final = study[(study["method"] == "MTrain") & (study["step"] == 4)][list(SPLIT_COLUMNS[:9])]
    singles = study[study["method"].isin(SINGLE_METHODS)]
    single = singles.groupby(cell, as_index=False)["throughput_gflops"].max()
    single = single.rename(columns={"throughput_gflops": "best_single_gflops"})
    table = final.merge(single, on=cell, how="left")
    table["over_best_single"] = table["throughput_gflops"] / table["best_single_gflops"]
    for column in ("sharing_fpgas", "busy_fpgas"):
        table[column] = table[column].astype(int)
    return table.sort_values(cell, ignore_index=True)[list(SPLIT_COLUMNS)]
