"""MONET Figure 10 (latency and energy per fusion strategy) and a picture of the fused subgraphs."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import networkx as nx
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure

from traincost.cost.optable import OpTable
from traincost.plots.hardware_sweeps import save_figure

__all__ = ["plot_fusion_strategies", "plot_fused_graph"]


def plot_fusion_strategies(table: pd.DataFrame, outputs: Sequence[Path], *, title: str) -> None:
    """Latency (left) and energy (right) per strategy, one bar colour per step (inference, training).

    A strategy whose fused groups do not fit on-chip memory (``fusion_fits`` False, the model the solver
    admits groups by) is labelled so, with the steps where it does not fit.
    """
    sns.set_theme(style="whitegrid", context="paper")
    fig = Figure(figsize=(11, 4), layout="constrained")
    axes = fig.subplots(1, 2)
    table = table.assign(strategy=_fit_labels(table))
    order = list(dict.fromkeys(table["strategy"]))
    for ax, (metric, label) in zip(axes, (("latency_cycles", "latency (cycles)"), ("energy_pj", "energy (pJ)")), strict=True):
        sns.barplot(data=table, x="strategy", y=metric, hue="step", order=order, ax=ax)
        ax.set(xlabel="", ylabel=label, yscale="log")
        ax.tick_params(axis="x", rotation=30)
        sns.move_legend(ax, "upper left", bbox_to_anchor=(1, 1), title="step", fontsize=7)
    fig.suptitle(title)
    save_figure(fig, outputs)


def _fit_labels(table: pd.DataFrame) -> pd.Series:
    """Each row's strategy, with "does not fit (steps)" appended where a step's groups overflow on-chip memory."""
    if "fusion_fits" not in table.columns:
        return table["strategy"]
    overflow = table[~table["fusion_fits"].astype(bool)].groupby("strategy")["step"].unique()
    return table["strategy"].map(lambda s: f"{s}\ndoes not fit:\n{', '.join(sorted(overflow[s]))}" if s in overflow.index else s)


def plot_fused_graph(table: OpTable, groups: Sequence[Sequence[int]], outputs: Sequence[Path], *, title: str) -> None:
    """The op graph drawn by topological generation, each fused subgraph in its own colour (grey: unfused)."""
    graph = nx.DiGraph()
    producer = table.producers()
    graph.add_nodes_from(range(len(table)))
    edges = ((producer[t], j) for j, ins in enumerate(table.inputs) for t in ins if producer[t] >= 0 and producer[t] != j)
    graph.add_edges_from(edges)
    position = {int(op): i for i, op in enumerate(table.op)}
    colour = np.full(len(table), -1)
    for g, members in enumerate(groups):
        colour[[position[op] for op in members if op in position]] = g
    for layer, nodes in enumerate(nx.topological_generations(graph)):
        for node in nodes:
            graph.nodes[node]["layer"] = layer
    layout = nx.multipartite_layout(graph, subset_key="layer")
    palette = sns.color_palette("husl", max(1, len(groups)))
    colours = [palette[c % len(palette)] if c >= 0 else (0.8, 0.8, 0.8) for c in colour]
    fig = Figure(figsize=(18, 6), layout="constrained")
    ax = fig.subplots()
    nx.draw_networkx_edges(graph, layout, ax=ax, width=0.3, alpha=0.4, arrows=False)
    nx.draw_networkx_nodes(graph, layout, ax=ax, node_size=12, node_color=colours, linewidths=0)
    ax.set_title(f"{title}: {len(groups)} fused subgraphs, {int((colour >= 0).sum())} of {len(table)} ops fused")
    ax.axis("off")
    save_figure(fig, outputs)
