"""Our memory accounting next to torch's measurement of the same step (MONET Figure 3 check)."""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np
import pandas as pd

from traincost.errors import GraphError
from traincost.memory.liveness import CATEGORIES
from traincost.workload import read_table

__all__ = ["TOLERANCES", "compare_memory"]

# Largest relative difference accepted per category: weights, gradients and optimizer states are
# sizes of the same tensors and must agree exactly; saved activations depend on which tensors each
# framework chooses to keep (torch also keeps max-pool inputs, for instance).
TOLERANCES = {"weights": 0.0, "gradients": 0.0, "optimizer_states": 0.0, "saved_activations": 0.10}


def compare_memory(pairs: Sequence[tuple[str | os.PathLike[str], str | os.PathLike[str]]]) -> pd.DataFrame:
    """One row per (workload, category): ours at the peak, ours in total, torch, and agreement.

    Args:
        pairs: (memory.parquet from ``traincost memory``, torch_memory.parquet from
            ``traincost measure-memory``) per workload.
    """
    rows = []
    for ours_path, torch_path in pairs:
        ours, meta = read_table(ours_path)
        measured, torch_meta = read_table(torch_path)
        mismatch = [k for k in ("model", "batch", "optimizer") if str(meta.get(k)) != str(torch_meta.get(k))]
        if mismatch:
            raise GraphError(f"{ours_path} and {torch_path} describe different workloads (differ in {mismatch})")
        torch_bytes = dict(zip(measured["category"], measured["bytes"], strict=True))
        label = f"{meta['model']} batch {meta['batch']} {meta['optimizer']}"
        for row in ours.itertuples():
            theirs = torch_bytes.get(row.category)
            tolerance = TOLERANCES.get(row.category)
            difference = (
                (row.total_bytes - theirs) / theirs if theirs else (0.0 if theirs == 0 and row.total_bytes == 0 else np.nan)
            )
            rows.append(
                {
                    "workload": label,
                    "model": meta["model"],
                    "batch": int(meta["batch"]),
                    "optimizer": meta["optimizer"],
                    "peak_bytes": int(meta["peak_bytes"]),
                    "category": row.category,
                    "ours_at_peak_bytes": int(row.at_peak_bytes),
                    "ours_total_bytes": int(row.total_bytes),
                    "torch_bytes": float(theirs) if theirs is not None else np.nan,
                    "relative_difference": difference,
                    "tolerance": tolerance if tolerance is not None else np.nan,
                    "agrees": None if tolerance is None else bool(abs(difference) <= tolerance),
                }
            )
    table = pd.DataFrame(rows)
    table["category"] = pd.Categorical(table["category"], categories=list(CATEGORIES))
    return table.sort_values(["model", "batch", "optimizer", "category"], kind="stable").reset_index(drop=True)
