"""MONET Figure 11: what recomputing the first activations costs, and whether the costs add up."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure

from traincost.plots.hardware_sweeps import save_figure

__all__ = ["plot_additivity"]


def plot_additivity(table: pd.DataFrame, outputs: Sequence[Path], *, title: str) -> None:
    """Energy (hatched) and latency (solid) of each scenario relative to AC00, in percent above it;
    "AC11 linear" is AC10 + AC01 - AC00, the prediction of an additive (MILP) model."""
    sns.set_theme(style="whitegrid", context="paper")
    shown = table[table["scenario"] != "AC00"]
    long = pd.concat(
        [
            pd.DataFrame({"scenario": shown["scenario"], "metric": "energy", "percent": 100 * (shown["relative_energy_pj"] - 1)}),
            pd.DataFrame(
                {"scenario": shown["scenario"], "metric": "latency", "percent": 100 * (shown["relative_latency_cycles"] - 1)}
            ),
        ]
    )
    fig = Figure(figsize=(6.5, 4), layout="constrained")
    ax = fig.subplots()
    sns.barplot(data=long, x="scenario", y="percent", hue="metric", ax=ax)
    for bar in ax.containers[0]:
        bar.set_hatch("//")
    ax.set(xlabel="", ylabel="change vs AC00 (%)")
    ax.set_title(title or "Recomputing the first activations (relative to saving all)")
    save_figure(fig, outputs)
