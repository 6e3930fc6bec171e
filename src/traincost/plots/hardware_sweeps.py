"""MONET Figures 1, 8 and 9: hardware sweeps for inference and training, one point per configuration.

Each function reads the sweep tables written by ``traincost sweep`` (merged over shards) and draws
the paper's axes and colour coding with seaborn. Axes are logarithmic: the grids span two to three
orders of magnitude of compute.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from pathlib import Path

import pandas as pd
import seaborn as sns
from matplotlib.axes import Axes
from matplotlib.backend_bases import FigureCanvasBase
from matplotlib.colors import LogNorm
from matplotlib.figure import Figure

from traincost.analysis.edge_tpu import edge_tpu_resources
from traincost.errors import ConfigError
from traincost.io import atomic_path
from traincost.tables import require_columns

__all__ = [
    "plot_energy_latency",
    "plot_compute_resources",
    "save_figure",
    "wrapped_suptitle",
]


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
        ax.legend(title=hue_label, fontsize=6, title_fontsize=7, loc="upper right")
    fig.suptitle(title)
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
            ax.legend(title="U·L per PE", fontsize=6, title_fontsize=7, loc="upper right")
    fig.suptitle(title)
    save_figure(fig, outputs)


def _scatter(ax: Axes, table: pd.DataFrame, *, x: str, y: str, hue: str, norm: LogNorm | None, discrete: bool) -> None:
    palette = "viridis" if not discrete else sns.color_palette("deep", table[hue].nunique())
    sns.scatterplot(
        data=table, x=x, y=y, hue=hue, hue_norm=norm, palette=palette, s=6, linewidth=0, alpha=0.6, ax=ax, rasterized=True
    )


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
    for path in outputs:
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format=Path(path).suffix.lstrip("."), dpi=200)
