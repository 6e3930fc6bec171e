"""The ablation heat map of one study: the checks that disagree (rows) against the assumptions changed (columns)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure

from traincost.plots.hardware_sweeps import save_figure, wrapped_suptitle
from traincost.tables import require_columns

__all__ = ["plot_ablations"]

# cell values: the check still fails, now holds (flipped), held and now fails, held and still holds
_COLOURS = ("#fca5a5", "#4ade80", "#f97316", "#dcfce7")
_LABELS = ("still disagrees", "flips: now agrees", "flips: now disagrees", "still agrees")


def plot_ablations(table: pd.DataFrame, outputs: Sequence[Path], *, title: str) -> None:
    """One cell per (check, assumption=variant): whether the check holds under the change and whether it flipped.

    Rows are the checks that disagree at baseline, then those an ablation breaks; agreeing checks no change
    touches are left out (their count is in the title). An empty table (no ablation, or nothing disagrees)
    draws a figure that says so.
    """
    require_columns(table, ("assumption", "variant", "check", "holds", "holds_baseline", "flips"), "ablations table")
    columns = [f"{a}={v}" for a, v in dict.fromkeys(zip(table["assumption"], table["variant"], strict=True))]
    data = table.assign(change=[f"{a}={v}" for a, v in zip(table["assumption"], table["variant"], strict=True)])
    failing = data.loc[~data["holds_baseline"], "check"].unique().tolist()
    broken = [c for c in data.loc[data["holds_baseline"] & data["flips"], "check"].unique() if c not in failing]
    rows = failing + broken
    untouched = data["check"].nunique() - len(rows)
    labels = [r if len(r) <= 70 else r[:69] + "…" for r in rows]
    label_in = 0.075 * max((len(label) for label in labels), default=10)  # small font: about 0.075 in per character
    width_in = label_in + 0.9 * max(1, len(columns)) + 2.6  # labels, cells, legend
    fig = Figure(figsize=(width_in, 2.2 + 0.28 * max(1, len(rows))), layout="constrained")
    ax = fig.subplots()
    if not rows or not columns:
        ax.axis("off")
        ax.text(0.5, 0.5, "no check disagrees, or no assumption was ablated", ha="center", va="center")
    else:
        held, holds = data["holds_baseline"].to_numpy(dtype=bool), data["holds"].to_numpy(dtype=bool)
        code = np.where(held, np.where(holds, 3, 2), np.where(holds, 1, 0))  # indices into _COLOURS
        grid = data.assign(code=code).pivot_table(index="check", columns="change", values="code", aggfunc="first")
        grid = grid.reindex(index=rows, columns=columns)
        ax.imshow(grid.to_numpy(dtype=float), cmap=ListedColormap(_COLOURS), vmin=-0.5, vmax=3.5, aspect="auto")
        ax.set_xticks(np.arange(len(columns)), columns, rotation=30, ha="right", fontsize="small")
        ax.set_yticks(np.arange(len(rows)), labels, fontsize="small")
        for (i, j), value in np.ndenumerate(grid.to_numpy(dtype=float)):
            if np.isfinite(value):
                ax.text(j, i, "✔" if value in (1, 3) else "✘", ha="center", va="center", fontsize="small")
        handles = [ax.scatter([], [], marker="s", color=c, label=label) for c, label in zip(_COLOURS, _LABELS, strict=True)]
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small", frameon=False)
    wrapped_suptitle(fig, f"{title} (not shown: {untouched} checks that agree under every change)")
    save_figure(fig, outputs)
