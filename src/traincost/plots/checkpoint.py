"""MONET Figure 11: what recomputing the first activations costs, and whether the costs add up."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure

from traincost.plots.hardware_sweeps import save_figure
from traincost.plots.paper_values import MARK_LABEL, PaperValue, paper_lines, write_under

__all__ = ["plot_additivity", "plot_checkpoint_front"]


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


def plot_checkpoint_front(
    nsga: pd.DataFrame,
    milp: pd.DataFrame,
    summary: pd.Series,
    outputs: Sequence[Path],
    *,
    title: str,
    paper: Sequence[PaperValue] = (),
) -> None:
    """Latency (left) and energy (right) change against activation memory saved, in percent of the
    all-saved baseline: every NSGA-II evaluation (grey), its final front (blue), the MILP solutions (red); the paper's
    saving (``paper``: MB saved within the tolerance) a star at the tolerance, listed under the plots with ours."""
    sns.set_theme(style="whitegrid", context="paper")
    fig = Figure(figsize=(11, 4.2), layout="constrained")
    axes = fig.subplots(1, 2)
    base = {k: float(summary[f"baseline_{k}"]) for k in ("latency_cycles", "energy_pj", "activation_bytes")}

    def percent(table: pd.DataFrame, column: str) -> pd.Series:
        return 100 * (table[column] / base[column] - 1)

    saved_mb = {name: (base["activation_bytes"] - t["activation_bytes"]) / 1e6 for name, t in (("nsga", nsga), ("milp", milp))}
    front = nsga["pareto"].to_numpy(dtype=bool)
    for ax, column, label in zip(axes, ("latency_cycles", "energy_pj"), ("latency change (%)", "energy change (%)"), strict=True):
        ax.scatter(saved_mb["nsga"][~front], percent(nsga, column)[~front], s=8, c="0.7", label="NSGA-II evaluations")
        ax.scatter(saved_mb["nsga"][front], percent(nsga, column)[front], s=14, c="tab:blue", label="NSGA-II front")
        ax.scatter(saved_mb["milp"], percent(milp, column), s=40, marker="x", c="tab:red", label="MILP (eq. 6)")
        ax.axhline(100 * summary["tolerance"], ls="--", c="0.4", lw=0.8)
        for value in paper:
            ax.scatter([value.paper], [100 * summary["tolerance"]], marker="*", s=120, c="black", zorder=5, label=MARK_LABEL)
        ax.set(xlabel="activation memory saved (MB, FP16)", ylabel=label)
    axes[0].legend(fontsize=7)
    saved = float(summary["saved_bytes"]) / 1e6
    fig.suptitle(f"{title} — largest saving within +{100 * summary['tolerance']:g} %: {saved:.2f} MB")
    write_under(fig, paper_lines(paper))
    save_figure(fig, outputs)
