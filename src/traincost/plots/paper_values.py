"""The paper's numbers drawn beside ours on a figure.

Every figure for which its paper states numbers lists them under the plot, each with ours and the verdict of the
paper-vs-ours table (``agrees``, ``tie``, ``differs``, ``magnitude``; empty for a row not counted); where the figure
draws the same quantity (a bar of one policy in one group), a star marks the paper's value on it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

__all__ = ["PaperValue", "mark_paper_values", "paper_lines", "paper_values", "write_under"]

MARK_LABEL = "the paper's value"


@dataclass(frozen=True, slots=True)
class PaperValue:
    """One number the paper states for a figure, ours beside it.

    Attributes:
        label: what the number is (the comparison row's claim and context).
        paper: the paper's number.
        ours: ours (NaN where the study could not compute it).
        verdict: the row's whole verdict, or its kind where it is not counted.
        at: (group, hue) of the bar that draws the same quantity, or None.
    """

    label: str
    paper: float
    ours: float
    verdict: str
    at: tuple[str, str] | None = None


def paper_values(
    frame: pd.DataFrame, figures: Sequence[str], *, at: Callable[[pd.Series], tuple[str, str] | None] | None = None
) -> list[PaperValue]:
    """The numbers of ``figures`` in a comparison (the common shape of ``traincost.analysis.agreement.read_comparison``):
    its rows whose ``figure`` is one of them (or, in a comparison without a figure column, whose claim is) and whose
    paper side is a number, superseded rows too (their number is the paper's all the same). ``at`` gives the bar a row
    marks, if any."""
    column = "figure" if "figure" in frame.columns else "claim_name"
    rows = frame[frame[column].astype(str).isin(figures)]
    out = []
    for _, row in rows.iterrows():
        paper = row["paper"]
        if not isinstance(paper, float) or math.isnan(paper):
            continue
        label = str(row["claim"])
        ours = row["ours"] if isinstance(row["ours"], float) else math.nan
        out.append(PaperValue(label, paper, ours, row["verdict"] or row["kind"], at(row) if at else None))
    return out


def paper_lines(values: Sequence[PaperValue]) -> list[str]:
    """The box under the figure: one line per number, paper and ours and the verdict."""
    if not values:
        return []
    lines = [f"The paper's numbers for this figure, ours beside them ({MARK_LABEL}: a star where the figure draws it):"]
    for v in values:
        ours = "not computed" if math.isnan(v.ours) else f"{v.ours:.3g}"
        lines.append(f"{v.label}: paper {v.paper:.3g}, ours {ours} ({v.verdict})")
    return lines


def mark_paper_values(ax: Axes, values: Sequence[PaperValue], positions: Mapping[tuple[str, str], float]) -> None:
    """A star at the paper's value on each bar that draws the same quantity (``positions``: (group, hue) -> x)."""
    marked = False
    for v in values:
        if v.at is not None and v.at in positions:
            ax.scatter(
                [positions[v.at]], [v.paper], marker="*", s=90, color="black", zorder=6, label=None if marked else MARK_LABEL
            )
            marked = True


LINE_IN = 0.13
"""Height of a line of x-small text under a figure, in inches."""


def write_under(fig: Figure, lines: Sequence[str]) -> None:
    """``lines`` of small text under the figure's plots, the figure made taller so that the plots keep their height."""
    if lines:
        fig.set_figheight(fig.get_figheight() + LINE_IN * len(lines))
        fig.supxlabel("\n".join(lines), fontsize="x-small", ha="left", x=0.01)
