"""MTrain Figures 8-12 and Table III, from the study tables."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure

from traincost.errors import ConfigError
from traincost.plots.hardware_sweeps import save_figure, wrapped_suptitle
from traincost.plots.paper_values import PaperValue, paper_lines, write_under
from traincost.tables import require_columns

__all__ = ["plot_steps", "plot_methods", "plot_scaling", "table3_markdown"]

_METHOD_ORDER = ("MTrain", "HAP", "Alpa", "single DarkFPGA", "single EF-Train")


def _require(table: pd.DataFrame, columns: Sequence[str], what: str) -> None:
    require_columns(table, columns, what)
    if table.empty:
        raise ConfigError(f"{what}: no rows")


def _line_panels(data: pd.DataFrame, *, by: str, width_in: float, line: dict[str, object], axes_set: dict[str, object]) -> Figure:
    """One seaborn line plot per value of ``by``, side by side, the legend beside the last panel."""
    groups = sorted(data[by].unique())
    fig = Figure(figsize=(width_in * len(groups), 3.8), layout="constrained")
    axes = fig.subplots(1, len(groups), squeeze=False)[0]
    for ax, group in zip(axes, groups, strict=True):
        sns.lineplot(data=data[data[by] == group], markers=True, ax=ax, legend=ax is axes[-1], **line)
        ax.set(title=group, **axes_set)
    if axes[-1].get_legend() is not None:
        sns.move_legend(axes[-1], "upper left", bbox_to_anchor=(1.02, 1), fontsize="small")
    return fig


def plot_steps(study: pd.DataFrame, outputs: Sequence[Path], *, title: str, paper: Sequence[PaperValue] = ()) -> None:
    """Figure 8: MTrain's throughput after each step, one panel per cluster, one line per model and bandwidth; the
    paper's numbers for it listed under the panels."""
    _require(study, ["method", "step", "cluster", "model", "bandwidth_gb_per_s", "throughput_gflops"], "Figure 8 table")
    sns.set_theme(style="whitegrid", context="paper")
    steps = study[study["method"] == "MTrain"].copy()
    steps["P2P GB/s"] = steps["bandwidth_gb_per_s"].map("{:g}".format)
    fig = _line_panels(
        steps,
        by="cluster",
        width_in=4.2,
        line={"x": "step", "y": "throughput_gflops", "hue": "model", "style": "P2P GB/s"},
        axes_set={"xlabel": "after step", "ylabel": "throughput (GFLOPS)", "xticks": [1, 2, 3, 4]},
    )
    wrapped_suptitle(fig, title or "MTrain: throughput after each optimisation step")
    write_under(fig, paper_lines(paper))
    save_figure(fig, outputs)


def plot_methods(
    study: pd.DataFrame, outputs: Sequence[Path], *, cluster: str, title: str, paper: Sequence[PaperValue] = ()
) -> None:
    """Figures 9-11: MTrain, Alpa, HAP and the single-FPGA IPs across P2P bandwidths, one panel per model; the paper's
    numbers for them listed under the panels."""
    _require(study, ["method", "step", "cluster", "model", "bandwidth_gb_per_s", "throughput_gflops"], "Figures 9-11 table")
    shown = study[(study["cluster"] == cluster) & ((study["method"] != "MTrain") | (study["step"] == 4))]
    if shown.empty:
        raise ConfigError(f"Figures 9-11: no rows for cluster {cluster!r} (have {sorted(study['cluster'].unique())})")
    sns.set_theme(style="whitegrid", context="paper")
    order = [m for m in _METHOD_ORDER if m in set(shown["method"])]
    fig = _line_panels(
        shown,
        by="model",
        width_in=3.4,
        line={
            "x": "bandwidth_gb_per_s",
            "y": "throughput_gflops",
            "hue": "method",
            "hue_order": order,
            "style": "method",
            "style_order": order,
        },
        axes_set={"xscale": "log", "xlabel": "P2P bandwidth (GB/s)", "ylabel": "throughput (GFLOPS)"},
    )
    wrapped_suptitle(fig, title or f"{cluster}: MTrain against DP/TP sharding and single FPGAs")
    write_under(fig, paper_lines(paper))
    save_figure(fig, outputs)


def plot_scaling(
    scaling: pd.DataFrame,
    outputs: Sequence[Path],
    *,
    search_bandwidth_gb_per_s: float,
    title: str,
    paper: Sequence[PaperValue] = (),
) -> None:
    """Figure 12: (a) throughput per number of FPGAs at each bandwidth, each point labelled with the FPGAs MTrain keeps
    busy, (b) MTrain's search time per size; the paper's numbers for it listed under the panels."""
    _require(scaling, ["fpgas", "bandwidth_gb_per_s", "throughput_gflops", "search_s", "busy_fpgas"], "Figure 12 table")
    sns.set_theme(style="whitegrid", context="paper")
    fig = Figure(figsize=(9, 3.6), layout="constrained")
    left, right = fig.subplots(1, 2)
    table = scaling.assign(bandwidth=scaling["bandwidth_gb_per_s"].map(lambda b: f"{b:g} GB/s"))
    sns.lineplot(data=table, x="fpgas", y="throughput_gflops", hue="bandwidth", marker="o", ax=left)
    for row in table.itertuples():
        left.annotate(
            f"{row.busy_fpgas}",
            (row.fpgas, row.throughput_gflops),
            textcoords="offset points",
            xytext=(0, 4),
            ha="center",
            fontsize=7,
        )
    left.set(title="(a) throughput (labels: FPGAs busy)", xlabel="FPGAs", ylabel="throughput (GFLOPS)")
    left.set_xticks(sorted(table["fpgas"].unique()))
    at = table[table["bandwidth_gb_per_s"] == search_bandwidth_gb_per_s]
    if at.empty:
        raise ConfigError(f"Figure 12: no rows at {search_bandwidth_gb_per_s:g} GB/s for the search time")
    sns.lineplot(data=at, x="fpgas", y="search_s", marker="o", ax=right)
    right.set(title=f"(b) search time at {search_bandwidth_gb_per_s:g} GB/s", xlabel="FPGAs", ylabel="MTrain search (s)")
    fig.suptitle(title or "MTrain scaling from 2 to 8 FPGAs")
    write_under(fig, paper_lines(paper))
    save_figure(fig, outputs)


def table3_markdown(table3: pd.DataFrame, paper: pd.DataFrame | None = None) -> str:
    """Table III as Markdown: DFS optimum and MTrain-Converting, throughput and search time; beside each throughput,
    the paper's where ``paper`` (``data/paper/mtrain.csv``) states one for the cell."""
    _require(table3, ["model", "cluster", "dfs_gflops", "dfs_s", "converting_gflops", "converting_s"], "Table III")
    lines = [
        "| Model | Cluster | DFS GFLOPS | DFS search (s) | ratios | Converting GFLOPS | Converting search (s) |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]

    def reported(row: pd.Series, metric: str) -> str:
        if paper is None:
            return ""
        found = paper[
            (paper["claim"] == "table3")
            & (paper["model"] == row["model"])
            & (paper["cluster"] == row["cluster"])
            & (paper["metric"] == metric)
        ]
        return f"paper {float(found['value'].iloc[0]):g}" if len(found) else "paper –"

    for _, row in table3.sort_values(["model", "cluster"]).iterrows():
        dfs, converting = reported(row, "dfs_gflops"), reported(row, "converting_gflops")
        if not row["dfs_gflops"] > 0:  # the cluster's DRAM cannot hold the step (traincost.fpga.study.table3_row)
            lines.append(
                f"| {row['model']} | {row['cluster']} | does not fit ({dfs}) | – | – | does not fit ({converting}) | – |"
            )
            continue
        share = f"{row['converting_gflops'] / row['dfs_gflops']:.2f}x"
        lines.append(
            f"| {row['model']} | {row['cluster']} | {row['dfs_gflops']:.1f}{f' ({dfs})' if dfs else ''} | {row['dfs_s']:.1f} "
            f"({row['dfs_s'] / row['converting_s']:.1f}x) | {row['dfs_ratios_mapped']} | {row['converting_gflops']:.1f} "
            f"({share}{f'; {converting}' if converting else ''}) | {row['converting_s']:.2f} |"
        )
    return "\n".join(lines) + "\n"
