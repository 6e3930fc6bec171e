"""MONET Figure 10 (latency and energy per fusion strategy) and a picture of the fused subgraphs."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure

from traincost.cost.optable import OpTable
from traincost.plots.hardware_sweeps import readable_log_ticks, save_figure, wrapped_suptitle

__all__ = ["module_blocks", "plot_fusion_strategies", "plot_fused_graph"]


def plot_fusion_strategies(table: pd.DataFrame, outputs: Sequence[Path], *, title: str) -> None:
    """Latency (left) and energy (right) per strategy, one bar colour per step (inference, training).

    A strategy whose fused groups do not fit on-chip memory (``fusion_fits`` False, the model the solver
    admits groups by) is marked † on the axis; a note under the panels names it with the steps where it does not fit
    (written into the tick label, that text overlapped the neighbouring labels).
    """
    sns.set_theme(style="whitegrid", context="paper")
    fig = Figure(figsize=(11, 4.4), layout="constrained")
    axes = fig.subplots(1, 2)
    note = _overflow_note(table)
    table = table.assign(strategy=_fit_labels(table))
    order = list(dict.fromkeys(table["strategy"]))
    for ax, (metric, label) in zip(axes, (("latency_cycles", "latency (cycles)"), ("energy_pj", "energy (pJ)")), strict=True):
        sns.barplot(data=table, x="strategy", y=metric, hue="step", order=order, ax=ax)
        ax.set(xlabel="", ylabel=label, yscale="log")
        ax.tick_params(axis="x", rotation=90)  # vertical: a dozen strategy names side by side do not overlap
        readable_log_ticks(ax)
        sns.move_legend(ax, "upper left", bbox_to_anchor=(1, 1), title="step", fontsize=7)
    if note:
        fig.supxlabel(textwrap.fill(note, width=160), fontsize="small")
    fig.suptitle(title)
    save_figure(fig, outputs)


def _overflow(table: pd.DataFrame) -> pd.Series:
    """Per strategy whose groups overflow on-chip memory in some step: those steps, sorted."""
    if "fusion_fits" not in table.columns:
        return pd.Series(dtype=object)
    return table[~table["fusion_fits"].astype(bool)].groupby("strategy", sort=False)["step"].unique().map(sorted)


def _fit_labels(table: pd.DataFrame) -> pd.Series:
    """Each row's strategy, marked "†" where a step's groups overflow on-chip memory."""
    overflow = _overflow(table)
    return table["strategy"].map(lambda s: f"{s} †" if s in overflow.index else s)


def _overflow_note(table: pd.DataFrame) -> str:
    """What † means, with each strategy marked and the steps where its groups do not fit; empty if every one fits."""
    overflow = _overflow(table)
    if overflow.empty:
        return ""
    marked = "; ".join(f"{strategy} ({', '.join(steps)})" for strategy, steps in overflow.items())
    return f"† its fused groups do not fit on-chip memory (their groups run unfused): {marked}"


# most module blocks the fused-graph picture has rows for: the deepest module level with no more than this many
_MAX_BLOCKS = 24
_MIN_PANEL_OPS = 16  # a phase with few ops per block (the optimizer's) still gets a panel as wide as its title
_OPS_PER_TICK = 10
_MIN_WIDTH_IN = 8.0  # inference has one panel: the title and the axis label still fit
_MAX_WIDTH_IN = 24.0
_UNFUSED = (0.85, 0.85, 0.85, 1.0)
_EMPTY = (1.0, 1.0, 1.0, 0.0)


def module_blocks(layers: Sequence[str], *, max_blocks: int = _MAX_BLOCKS) -> list[str]:
    """Per op, the module block it belongs to: its layer path cut at the deepest level with at most ``max_blocks`` blocks.

    ResNet-18's ``stages/stages.0/stages.0.1/conv1/Conv`` becomes ``stages.0.1`` (a parent whose name the child
    repeats is dropped), so the picture has one row per residual block.
    """
    parts = [layer.strip("/").split("/") for layer in layers]
    depth = 1
    while depth < max(map(len, parts)) and len({tuple(p[: depth + 1]) for p in parts}) <= max_blocks:
        depth += 1
    return [_block_name(p[:depth]) for p in parts]


def _block_name(path: Sequence[str]) -> str:
    """``path`` joined without the parents whose names their child repeats (``stages/stages.0`` → ``stages.0``)."""
    kept = [name for name, child in zip(path, [*path[1:], ""], strict=True) if not child.startswith(name)]
    return "/".join(kept) or "/".join(path)


def plot_fused_graph(
    table: OpTable, layers: Sequence[str], groups: Sequence[Sequence[int]], outputs: Sequence[Path], *, title: str
) -> None:
    """The step's ops laid out by module block (rows) and phase (panels), each fused subgraph in its own colour.

    Within a row the block's ops of that phase run left to right in execution order; a subgraph is a run of one
    colour (colours repeat, neighbours differ), grey ops are unfused. ``layers`` is each op's layer path, in the
    table's order.
    """
    sns.set_theme(style="white", context="paper")
    frame = pd.DataFrame({"block": module_blocks(layers), "phase": table.phase, "group": _group_of(table, groups)})
    blocks = list(dict.fromkeys(frame["block"]))
    phases = list(dict.fromkeys(frame["phase"]))
    frame["row"] = frame["block"].map({b: i for i, b in enumerate(blocks)})
    frame["column"] = frame.groupby(["phase", "block"], sort=False).cumcount()
    # panel widths in ops, at least enough for the panel's title: one op per cell at the same size in every panel
    widths = [max(_MIN_PANEL_OPS, int(frame.loc[frame["phase"] == phase, "column"].max()) + 1) for phase in phases]
    palette = sns.color_palette("tab10")
    width_in = min(_MAX_WIDTH_IN, max(_MIN_WIDTH_IN, 3.0 + 0.1 * sum(widths)))
    fig = Figure(figsize=(width_in, 1.5 + 0.28 * len(blocks)), layout="constrained")
    axes = fig.subplots(1, len(phases), squeeze=False, sharey=True, width_ratios=widths)[0]
    for ax, phase, width in zip(axes, phases, widths, strict=True):
        image = np.tile(np.array(_EMPTY), (len(blocks), width, 1))
        ops = frame[frame["phase"] == phase]
        for row, column, group in zip(ops["row"], ops["column"], ops["group"], strict=True):
            image[row, column] = (*palette[group % len(palette)], 1.0) if group >= 0 else _UNFUSED
        ax.imshow(image, aspect="auto", interpolation="nearest")
        ax.set_title(f"{phase} ({len(ops)} ops)")
        ax.set_yticks(range(len(blocks)), blocks)
        ax.set_xticks(range(0, width, _OPS_PER_TICK))
    fused = int((frame["group"] >= 0).sum())
    fig.supxlabel("op of the module block, in execution order (one cell per op)")
    wrapped_suptitle(fig, f"{title}: {len(groups)} fused subgraphs, {fused} of {len(table)} ops fused (grey: unfused)")
    save_figure(fig, outputs)


def _group_of(table: OpTable, groups: Sequence[Sequence[int]]) -> np.ndarray:
    """Per op of ``table``: the index of its fused subgraph, numbered in execution order; -1 if unfused."""
    position = {int(op): i for i, op in enumerate(table.op)}
    members = [[position[op] for op in group if op in position] for group in groups]
    group = np.full(len(table), -1)
    for g, rows in enumerate(sorted((m for m in members if m), key=min)):
        group[rows] = g
    return group
