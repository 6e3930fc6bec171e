"""MONET Figure 3: peak training memory and its breakdown, next to torch's measurement."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure

from traincost.memory.liveness import CATEGORIES
from traincost.plots.hardware_sweeps import save_figure

__all__ = ["plot_memory_breakdown"]

_LABELS = {
    "weights": "weights",
    "gradients": "gradients",
    "optimizer_states": "optimizer states",
    "saved_activations": "saved activations",
    "other": "other temporaries",
}


def plot_memory_breakdown(table: pd.DataFrame, outputs: Sequence[Path]) -> None:
    """Left: our peak memory per workload, stacked by category (GB). Right: totals per category,
    ours vs torch (GB), the check behind the left panel.

    Args:
        table: the output of ``traincost compare-memory``.
        outputs: figure files to write (format from the suffix: .png, .pdf).
    """
    sns.set_theme(style="whitegrid", context="paper")
    palette = dict(zip(CATEGORIES, sns.color_palette("deep", len(CATEGORIES)), strict=True))
    workloads = list(dict.fromkeys(table["workload"]))
    fig = Figure(figsize=(11, 5.0))
    left, right = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1, 1.4]})

    bottom = pd.Series(0.0, index=workloads)
    for category in CATEGORIES:
        values = (
            table[table["category"] == category].set_index("workload")["ours_at_peak_bytes"].reindex(workloads).fillna(0) / 1e9
        )
        left.bar(range(len(workloads)), values, bottom=bottom, color=palette[category], label=_LABELS[category])
        bottom += values
    left.set_xticks(range(len(workloads)), [w.replace(" batch", "\nbatch") for w in workloads], fontsize=7)
    left.set_ylabel("peak memory (GB)")
    left.set_title("Peak memory breakdown (our liveness analysis)")
    # legends below the panels, where they hide no bar
    left.legend(fontsize=7, ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.16))

    compared = table[table["category"] != "other"].copy()
    compared["ours (GB)"] = compared["ours_total_bytes"] / 1e9
    compared["torch (GB)"] = compared["torch_bytes"] / 1e9
    long = compared.melt(
        id_vars=["workload", "category"], value_vars=["ours (GB)", "torch (GB)"], var_name="source", value_name="GB"
    )
    long["bar"] = long["category"].map(_LABELS).astype(str) + "\n" + long["source"].str.split(" ").str[0]
    order = [f"{_LABELS[c]}\n{source}" for c in CATEGORIES if c != "other" for source in ("ours", "torch")]
    sns.barplot(data=long, x="workload", y="GB", hue="bar", hue_order=order, ax=right, palette="Paired")
    right.set_xticks(range(len(workloads)), [w.replace(" batch", "\nbatch") for w in workloads], fontsize=7)
    right.set_xlabel("")
    right.set_ylabel("bytes over the step (GB)")
    right.set_title("Ours vs torch (measured on CPU)")
    right.legend(fontsize=6, ncol=4, loc="upper center", bbox_to_anchor=(0.5, -0.16))
    fig.tight_layout()
    save_figure(fig, outputs)
