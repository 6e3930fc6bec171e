"""MONET Figures 1, 8 and 9: hardware sweeps for inference and training, one point per configuration.

Each function reads the sweep tables written by ``traincost sweep`` (merged over shards) and draws
the paper's axes and colour coding with seaborn. Axes are logarithmic: the grids span two to three
orders of magnitude of compute.
"""

from __future__ import annotations

import logging
import math
import textwrap
from collections.abc import Sequence
from pathlib import Path

import pandas as pd
import seaborn as sns
from matplotlib.axes import Axes
from matplotlib.axis import Axis
from matplotlib.backend_bases import FigureCanvasBase
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import LogNorm
from matplotlib.figure import Figure
from matplotlib.text import Text
from matplotlib.ticker import Locator, LogFormatterSciNotation, LogLocator, MaxNLocator, NullFormatter

from traincost.analysis.edge_tpu import edge_tpu_resources
from traincost.errors import ConfigError
from traincost.io import atomic_path
from traincost.plots.paper_values import write_under
from traincost.tables import require_columns

__all__ = [
    "plot_energy_latency",
    "plot_compute_resources",
    "overlapping_tick_labels",
    "readable_log_ticks",
    "save_figure",
    "fusion_lines",
    "wrapped_suptitle",
]

log = logging.getLogger(__name__)


def plot_energy_latency(
    steps: Sequence[tuple[str, pd.DataFrame]],
    *,
    hue: str,
    hue_label: str,
    outputs: Sequence[Path],
    title: str,
    log_hue: bool = True,
) -> None:
    """Energy (pJ) against latency (cycles), one panel per step, coloured by ``hue`` (Figures 1 and 9)."""
    sns.set_theme(style="whitegrid", context="paper")
    fig = Figure(figsize=(5.2 * len(steps), 4.2), layout="constrained")
    axes = fig.subplots(1, len(steps), squeeze=False)[0]
    values = pd.concat([table[hue] for _, table in steps])
    norm = LogNorm(values.min(), values.max()) if log_hue else None
    for ax, (step, table) in zip(axes, steps, strict=True):
        require_columns(table, ["latency_cycles", "energy_pj", hue], f"the {step} sweep")
        shown = table if log_hue else table.assign(**{hue: table[hue].map("{:g}".format)})
        _scatter(ax, shown, x="latency_cycles", y="energy_pj", hue=hue, norm=norm, discrete=not log_hue)
        ax.set(
            xscale="log",
            yscale="log",
            xlabel="latency (cycles)",
            ylabel="energy (pJ)",
            title=f"{step} ({len(table)} configurations)",
        )
        readable_log_ticks(ax)
        ax.legend(title=hue_label, fontsize=6, title_fontsize=7, loc="upper right")
        _whole_number_legend(ax)
    fig.suptitle(title)
    write_under(fig, fusion_lines(steps))
    save_figure(fig, outputs)


def plot_compute_resources(steps: Sequence[tuple[str, pd.DataFrame]], *, outputs: Sequence[Path], title: str) -> None:
    """Figure 8: energy (top) and latency (bottom) against U·L·n_PEs, coloured by U·L, per step."""
    sns.set_theme(style="whitegrid", context="paper")
    fig = Figure(figsize=(5.2 * len(steps), 7.6), layout="constrained")
    axes = fig.subplots(2, len(steps), squeeze=False)
    for column, (step, raw) in enumerate(steps):
        table = edge_tpu_resources(raw)
        norm = LogNorm(table["pe_compute"].min(), table["pe_compute"].max())
        for row, (metric, label) in enumerate((("energy_pj", "energy (pJ)"), ("latency_cycles", "latency (cycles)"))):
            ax = axes[row][column]
            _scatter(ax, table, x="total_compute", y=metric, hue="pe_compute", norm=norm, discrete=False)
            ax.set(xscale="log", yscale="log", xlabel="compute resources U·L·n_PEs", ylabel=label, title=step)
            readable_log_ticks(ax)
            ax.legend(title="U·L per PE", fontsize=6, title_fontsize=7, loc="upper right")
            _whole_number_legend(ax)
    fig.suptitle(title)
    write_under(fig, fusion_lines(steps))
    save_figure(fig, outputs)


def fusion_lines(steps: Sequence[tuple[str, pd.DataFrame]]) -> list[str]:
    """Per step of a sweep with fused groups: at how many configurations every group fits (and so is fused), and how
    many groups fit at the fewest and the most; the figure never claims a fusion that was not applied."""
    lines = []
    for step, table in steps:
        if "fitting_groups" not in table.columns or not table["fitting_groups"].max():
            continue
        low, high = int(table["fitting_groups"].min()), int(table["fitting_groups"].max())
        fitting = f"{low}" if low == high else f"{low} to {high}"
        lines.append(
            f"{step}: every fused group fits, and runs fused, at {int(table['fusion_fits'].sum()):,} of {len(table):,} "
            f"configurations; {fitting} groups fit per configuration, the others run unfused"
        )
    return lines


def _scatter(ax: Axes, table: pd.DataFrame, *, x: str, y: str, hue: str, norm: LogNorm | None, discrete: bool) -> None:
    palette = "viridis" if not discrete else sns.color_palette("deep", table[hue].nunique())
    sns.scatterplot(
        data=table, x=x, y=y, hue=hue, hue_norm=norm, palette=palette, s=6, linewidth=0, alpha=0.6, ax=ax, rasterized=True
    )


def _whole_number_legend(ax: Axes) -> None:
    """Legend values that are whole numbers written as such: seaborn labels a continuous hue "16.0", "64.0"."""
    for text in ax.get_legend().get_texts():
        try:
            value = float(text.get_text())
        except ValueError:
            continue
        if value.is_integer():
            text.set_text(f"{int(value):,}")


# log-axis tick positions per decade, by how many decades the axis spans: the fewer decades, the more positions, so
# that a sweep spanning less than a decade still gets two or more labels (matplotlib's default labels only the one
# power of ten inside it, or crowds the minor ticks with labels)
_LOG_SUBS_BY_DECADES = ((2.0, (1.0,)), (0.7, (1.0, 2.0, 5.0)), (0.3, (1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0)))


def _log_locator(decades: float) -> Locator:
    """Ticks for a log axis spanning ``decades``; under a third of a decade the axis is nearly linear: four steps."""
    for least, subs in _LOG_SUBS_BY_DECADES:
        if decades >= least:
            return LogLocator(subs=subs)
    return MaxNLocator(nbins=4)


def readable_log_ticks(ax: Axes) -> None:
    """Label the log axes of ``ax`` as their span needs (at least two labels, none crowded), minor ticks unlabelled."""
    for axis, (low, high) in ((ax.xaxis, ax.get_xlim()), (ax.yaxis, ax.get_ylim())):
        if axis.get_scale() != "log" or low <= 0 or high <= 0:
            continue
        axis.set_major_locator(_log_locator(abs(math.log10(high / low))))
        # thresholds at infinity: label every tick the locator places, not only the powers of ten
        axis.set_major_formatter(LogFormatterSciNotation(labelOnlyBase=False, minor_thresholds=(math.inf, math.inf)))
        axis.set_minor_formatter(NullFormatter())


def _drawn_tick_labels(axis: Axis) -> list[Text]:
    """The tick labels of ``axis`` a drawing shows: visible, with text, at a tick inside the view."""
    low, high = sorted(axis.get_view_interval())
    ticks = axis.get_major_ticks(len(axis.get_majorticklocs())) + axis.get_minor_ticks(len(axis.get_minorticklocs()))
    labels = [(tick.label1, tick.label2) for tick in ticks if low <= tick.get_loc() <= high]
    return [label for pair in labels for label in pair if label.get_visible() and label.get_text()]


def overlapping_tick_labels(fig: Figure) -> list[str]:
    """Every pair of tick labels of ``fig`` whose boxes overlap once drawn, as "panel title, x axis: 'a' and 'b'"."""
    canvas = FigureCanvasAgg(fig)  # a figure made as Figure() has no renderer to measure text with
    canvas.draw()
    renderer = canvas.get_renderer()
    found = []
    for ax in fig.axes:
        for name, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
            boxes = [(label.get_text(), label.get_window_extent(renderer)) for label in _drawn_tick_labels(axis)]
            for i, (text, box) in enumerate(boxes):
                found += [
                    f"{ax.get_title() or 'untitled panel'}, {name} axis: {text!r} and {other!r}"
                    for other, other_box in boxes[i + 1 :]
                    if box.overlaps(other_box)
                ]
    return found


_TITLE_CHARS_PER_IN = {"medium": 12.5, "large": 10.0}  # characters of a suptitle per inch of figure, with margin


def wrapped_suptitle(fig: Figure, title: str, *, fontsize: str = "large") -> None:
    """``title`` over the figure, wrapped to its width: a narrow figure wraps a long title instead of cutting it."""
    width = int(fig.get_figwidth() * _TITLE_CHARS_PER_IN[fontsize])
    fig.suptitle(textwrap.fill(title, width=width, break_on_hyphens=False), fontsize=fontsize)


def save_figure(fig: Figure, outputs: Sequence[Path]) -> None:
    """Write ``fig`` to every path, atomically, in the format its suffix names.

    Raises:
        ConfigError: a suffix that is not a figure format matplotlib writes (checked before any file is written).
    """
    formats = FigureCanvasBase.get_supported_filetypes()
    for path in outputs:
        if Path(path).suffix.lstrip(".").lower() not in formats:
            raise ConfigError(f"{path}: {Path(path).suffix or 'no suffix'} is not a figure format ({', '.join(sorted(formats))})")
    for overlap in overlapping_tick_labels(fig):
        log.warning("%s: tick labels overlap (%s)", Path(outputs[0]).name if outputs else "figure", overlap)
    for path in outputs:
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format=Path(path).suffix.lstrip("."), dpi=200)
