"""TM-Training Figures 2-4 (section 2.1's motivation) and 8-15 (section 5.2's evaluation), from the study table.

Every function reads the study table of ``traincost tiered-report`` (the rows of ``traincost.tiered.study.study_runs``
for every workload and variant: one per workload, variant, policy and Tier 1 : model ratio), draws one figure
with seaborn and writes it with ``save_figure``.
Each title says what the values are normalised to. Points that cannot be normalised (NaN, e.g.
``migration_vs_ideal`` where the ideal policy migrates nothing) are dropped and listed under the
plot; geometric means are taken over positive values only.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from traincost.analysis.summary_stats import geometric_mean
from traincost.errors import ConfigError
from traincost.plots.hardware_sweeps import save_figure, wrapped_suptitle
from traincost.plots.paper_values import PaperValue, mark_paper_values, paper_lines, paper_values, write_under
from traincost.tables import require_columns
from traincost.tiered.labels import POLICY_NAMES, WORKLOAD_NAMES

__all__ = [
    "FIGURES",
    "paper_mark",
    "plot_figure",
    "plot_motivation_efficiency",
    "plot_motivation_migration",
    "plot_motivation_energy_breakdown",
    "plot_efficiency_by_workload",
    "plot_migration_by_workload",
    "plot_efficiency_vs_ratio",
    "plot_migration_vs_ratio",
    "plot_throughput_vs_ratio",
]

_COLOURS = {
    "HBM-only": "#000000",
    "Hor_Off": "#4e79a7",
    "Hor_On": "#a0cbe8",
    "Ver_Off": "#b07aa1",
    "Ver_On": "#d4a6c8",
    "Sentinel": "#bab0ac",
    "AutoTM": "#76b7b2",
    "DeepTM": "#edc948",
    "TM-Training": "#e15759",
    "TM-Training_Off": "#f28e2b",
    "Ideal": "#59a14f",
}
"""Section 2.1's systems in blue (horizontal) and purple (vertical), dark = offline optimal; prior work muted."""
_MOTIVATION = ("hor_off", "hor_on", "ver_off", "ver_on")
_PRIOR_AND_OURS = ("sentinel", "autotm", "deeptm", "tm_training")
_WITH_IDEAL = (*_PRIOR_AND_OURS, "ideal")
_GEOMEAN = "Geomean"
FIGURES = ("fig2", "fig3", "fig4", "fig8", "fig9", "fig10", "fig11", "fig12", "fig13", "fig14", "fig15")
"""The figures :func:`plot_figure` draws: TM-Training Figures 2-4 and 8-15."""
_KEYS = ("workload", "variant", "policy", "ratio")
_LOG_SPAN = 30.0
"""Positive values spanning more than this factor are drawn on a logarithmic axis."""


def _ratio_label(ratio: float) -> str:
    return f"{ratio:g}:1"


def _workload_name(workload: str) -> str:
    return WORKLOAD_NAMES.get(workload, workload)


def _policy_name(policy: str) -> str:
    return POLICY_NAMES.get(policy, policy)


def _select(
    table: pd.DataFrame,
    figure: str,
    *,
    columns: Sequence[str],
    variant: str,
    policies: Sequence[str],
    workloads: Sequence[str] | None = None,
    ratio: float | None = None,
) -> pd.DataFrame:
    """The rows a figure draws; every requested (workload, policy) pair must be there.

    Raises:
        ConfigError: a missing column, or no rows for a required workload, variant, ratio or policy.
    """
    require_columns(table, [*_KEYS, *columns], f"{figure} (tiered study table)")
    rows = table[table["variant"] == variant]
    if rows.empty:
        raise ConfigError(f"{figure}: no rows of variant {variant!r} (have {sorted(table['variant'].unique())})")
    if ratio is not None:
        rows = rows[np.isclose(rows["ratio"], ratio)]
        if rows.empty:
            have = ", ".join(_ratio_label(r) for r in sorted(table.loc[table["variant"] == variant, "ratio"].unique()))
            raise ConfigError(f"{figure}: no {variant} rows at ratio {_ratio_label(ratio)} (have {have})")
    if workloads is not None:
        missing = [w for w in workloads if w not in set(rows["workload"])]
        if missing:
            raise ConfigError(f"{figure}: no {variant} rows for workload(s) {missing} (have {sorted(rows['workload'].unique())})")
        rows = rows[rows["workload"].isin(workloads)]
    rows = rows[rows["policy"].isin(policies)]
    present = set(zip(rows["workload"], rows["policy"], strict=True))
    wanted = workloads if workloads is not None else sorted(set(rows["workload"]))
    missing_pairs = [f"{w}/{p}" for w in wanted for p in policies if (w, p) not in present]
    if rows.empty or missing_pairs:
        raise ConfigError(f"{figure}: no {variant} rows for workload/policy {missing_pairs or list(policies)}")
    return rows.copy()


def _workloads_in(rows: pd.DataFrame) -> list[str]:
    known = [w for w in WORKLOAD_NAMES if w in set(rows["workload"])]
    return known + sorted(set(rows["workload"]) - set(known))


def _short(value: float) -> str:
    """A bar label: three decimals near 1 (efficiencies differ in the second or third), else three digits."""
    return f"{value:.3f}" if 0.1 <= abs(value) < 10 else f"{value:.3g}"


def _where(rows: pd.DataFrame) -> str:
    return ", ".join(f"{_policy_name(r.policy)} {_workload_name(r.workload)} {_ratio_label(r.ratio)}" for r in rows.itertuples())


def _prepare(rows: pd.DataFrame, column: str, *, label: str) -> tuple[pd.DataFrame, list[str], bool]:
    """The rows to draw, notes on those left out, and whether the value axis is logarithmic.

    NaN values (an undefined normalisation) are dropped. The axis is logarithmic if the positive
    values span more than ``_LOG_SPAN``; zeros, which a log axis cannot show, are then dropped too.
    """
    values = rows[column].astype(float)
    notes = []
    undefined = ~np.isfinite(values)
    if undefined.any():
        notes.append(f"not shown, {label} undefined: {_where(rows[undefined])}")
    positive = values[~undefined & (values > 0)]
    log = len(positive) > 1 and positive.max() / positive.min() > _LOG_SPAN
    keep = ~undefined
    if log and (values[keep] <= 0).any():
        notes.append(f"not shown on the log axis, {label} = 0: {_where(rows[keep & (values <= 0)])}")
        keep &= values > 0
    return rows[keep], notes, log


def _value_axis(ax: Axes, *, log: bool, label: str) -> None:
    if log:
        ax.set_yscale("log")
    ax.set_ylabel(f"{label}{' (log scale)' if log else ''}")


def _reference_line(ax: Axes, label: str) -> None:
    ax.axhline(1.0, color="black", linestyle="--", linewidth=1.0, label=label, zorder=0)


def _finish(
    fig: Figure,
    ax: Axes,
    title: str,
    notes: Sequence[str],
    outputs: Sequence[Path],
    *,
    legend_title: str,
    paper: Sequence[PaperValue] = (),
    positions: Mapping[tuple[str, str], float] | None = None,
) -> None:
    """Legend, title, the notes and the paper's numbers under the plot (a star on the bars that draw them), saved."""
    mark_paper_values(ax, paper, positions or {})
    notes = [*notes, *paper_lines(paper)]
    ax.legend(title=legend_title, fontsize="small", title_fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    wrapped_suptitle(fig, title, fontsize="medium")
    width = int(fig.get_figwidth() * 17)
    write_under(fig, [line for n in notes for line in textwrap.fill(n, width=width, break_on_hyphens=False).splitlines()])
    save_figure(fig, outputs)


def _bars(
    ax: Axes, data: pd.DataFrame, *, x: str, y: str, order: Sequence[str], hue_order: Sequence[str]
) -> dict[tuple[str, str], float]:
    """Grouped bars coloured by ``Policy``, each labelled with its value; the x of each bar by (group, policy)."""
    sns.barplot(
        data=data,
        x=x,
        y=y,
        hue="Policy",
        order=order,
        hue_order=hue_order,
        palette=_COLOURS,
        errorbar=None,
        edgecolor="black",
        linewidth=0.4,
        ax=ax,
    )
    positions = {}
    for policy, bars in zip(hue_order, ax.containers, strict=False):
        for text in ax.bar_label(bars, fmt=_short, fontsize=5.5, rotation=90, padding=2):
            text.set_bbox({"facecolor": "white", "alpha": 0.7, "edgecolor": "none", "pad": 0.3})
        for patch in bars:
            centre = patch.get_x() + patch.get_width() / 2
            group = int(round(centre))
            if 0 <= group < len(order):
                positions[(order[group], policy)] = centre
    ax.margins(y=0.12)
    ax.set_xlabel("")
    return positions


def _lines_vs_ratio(ax: Axes, rows: pd.DataFrame, *, y: str, policies: Sequence[str], ratios: Sequence[float]) -> None:
    """One line per policy against the ratio (log axis: the paper's ratios double and halve)."""
    data = rows.assign(Policy=rows["policy"].map(_policy_name))
    order = [_policy_name(p) for p in policies]
    sns.lineplot(
        data=data,
        x="ratio",
        y=y,
        hue="Policy",
        hue_order=order,
        style="Policy",
        style_order=order,
        palette=_COLOURS,
        markers=True,
        dashes=True,
        markersize=7,
        linewidth=1.6,
        ax=ax,
    )
    ax.set_xscale("log")
    ax.set_xticks(list(ratios), [_ratio_label(r) for r in ratios])
    ax.minorticks_off()
    ax.set_xlim(min(ratios) / 1.3, max(ratios) * 1.3)
    ax.set_xlabel("Tier 1 size : model size")


def _motivation_bars(
    table: pd.DataFrame,
    outputs: Sequence[Path],
    *,
    figure: str,
    workload: str,
    column: str,
    label: str,
    reference: str | None,
    title: str,
    paper: Sequence[PaperValue] = (),
) -> None:
    """Figures 2 and 3: bars per ratio, one per section 2.1 system, on the base variant."""
    rows = _select(table, figure, columns=[column], variant="base", policies=_MOTIVATION, workloads=[workload])
    ratios = sorted(rows["ratio"].unique())
    rows, notes, log = _prepare(rows, column, label=label)
    sns.set_theme(style="whitegrid", context="paper")
    fig = Figure(figsize=(6.4, 4.0), layout="constrained")
    ax = fig.subplots()
    positions = _bars(
        ax,
        rows.assign(Policy=rows["policy"].map(_policy_name), Ratio=rows["ratio"].map(_ratio_label)),
        x="Ratio",
        y=column,
        order=[_ratio_label(r) for r in ratios],
        hue_order=[_policy_name(p) for p in _MOTIVATION],
    )
    if reference is not None:
        _reference_line(ax, reference)
    _value_axis(ax, log=log, label=label)
    ax.set_xlabel("Tier 1 size : model size")
    _finish(fig, ax, title, notes, outputs, legend_title="system", paper=paper, positions=positions)


def plot_motivation_efficiency(
    table: pd.DataFrame, outputs: Sequence[Path], *, workload: str = "palm_540b", paper: Sequence[PaperValue] = ()
) -> None:
    """Figure 2: energy efficiency over HBM-only against the Tier 1 : model ratio, the four section 2.1 systems.

    Raises:
        ConfigError: no base-variant rows of ``workload`` for one of Hor/Ver × On/Off.
    """
    _motivation_bars(
        table,
        outputs,
        figure="Figure 2",
        workload=workload,
        column="energy_efficiency_vs_hbm",
        label="energy efficiency / HBM-only",
        reference="HBM-only (= 1)",
        title=f"Figure 2: {_workload_name(workload)}, energy efficiency (samples/J) normalised to the 32 GB HBM-only system",
        paper=paper,
    )


def plot_motivation_migration(
    table: pd.DataFrame, outputs: Sequence[Path], *, workload: str = "palm_540b", paper: Sequence[PaperValue] = ()
) -> None:
    """Figure 3: bytes migrated between tiers over the data one iteration touches, against the ratio.

    Raises:
        ConfigError: no base-variant rows of ``workload`` for one of Hor/Ver × On/Off.
    """
    _motivation_bars(
        table,
        outputs,
        figure="Figure 3",
        workload=workload,
        column="migration_vs_data",
        label="migrated bytes / data per iteration",
        reference=None,
        title=f"Figure 3: {_workload_name(workload)}, Tier 1 <-> Tier 2 migration normalised to the data one iteration uses",
        paper=paper,
    )


_ENERGY_PARTS = {
    "energy_migration_j": "tier-to-tier migration",
    "energy_tier_sram_j": "tier-to-SRAM traffic",
    "energy_static_j": "static (both tiers)",
}


def plot_motivation_energy_breakdown(
    table: pd.DataFrame, outputs: Sequence[Path], *, workload: str = "palm_540b", paper: Sequence[PaperValue] = ()
) -> None:
    """Figure 4: off-chip memory energy in three parts, over HBM-only's off-chip memory energy; a panel per ratio.

    Raises:
        ConfigError: no base-variant rows of ``workload`` for HBM-only or one of Hor/Ver × On/Off.
    """
    figure = "Figure 4"
    policies = ("hbm_only", *_MOTIVATION)
    rows = _select(table, figure, columns=list(_ENERGY_PARTS), variant="base", policies=policies, workloads=[workload])
    baseline = rows[rows["policy"] == "hbm_only"]
    reference = float(baseline[list(_ENERGY_PARTS)].sum(axis=1).iloc[0])
    if not reference > 0:
        raise ConfigError(f"{figure}: HBM-only's off-chip memory energy of {workload} is {reference} J; nothing to normalise to")
    systems = rows[rows["policy"].isin(_MOTIVATION)]
    ratios = sorted(systems["ratio"].unique())
    sns.set_theme(style="whitegrid", context="paper")
    columns = min(len(ratios), 3)
    lines = -(-len(ratios) // columns)
    fig = Figure(figsize=(2.4 * columns + 0.8, 2.9 * lines + 1.2), layout="constrained")
    axes = fig.subplots(lines, columns, squeeze=False, sharey=True)
    colours = sns.color_palette("Set2", len(_ENERGY_PARTS))
    names = [_policy_name(p) for p in _MOTIVATION]
    for ax, ratio in zip(axes.ravel(), ratios, strict=False):
        at = systems[np.isclose(systems["ratio"], ratio)].set_index("policy").reindex(list(_MOTIVATION))
        bottom = np.zeros(len(_MOTIVATION))
        for colour, (column, label) in zip(colours, _ENERGY_PARTS.items(), strict=True):
            height = np.nan_to_num(at[column].to_numpy(dtype=float) / reference)
            ax.bar(names, height, bottom=bottom, color=colour, edgecolor="black", linewidth=0.4, label=label)
            bottom += height
        for x, total in enumerate(bottom):
            ax.annotate(f"{total:.3g}", (x, total), ha="center", va="bottom", fontsize="x-small")
        _reference_line(ax, "HBM-only (= 1)")
        ax.set_title(f"ratio {_ratio_label(ratio)}", fontsize="small")
        ax.tick_params(axis="x", labelrotation=35, labelsize="small")
        ax.margins(y=0.1)
    for ax in axes[:, 0]:
        ax.set_ylabel("off-chip memory energy / HBM-only's")
    for ax in axes.ravel()[len(ratios) :]:
        ax.set_visible(False)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    lines = paper_lines(paper)
    if lines:  # the paper's numbers go under the panels, the legend beside them
        fig.legend(handles[::-1], labels[::-1], fontsize="small", loc="outside right center")
    else:
        fig.legend(handles[::-1], labels[::-1], fontsize="small", loc="outside lower center", ncols=len(handles))
    write_under(fig, lines)
    wrapped_suptitle(
        fig,
        f"{figure}: {_workload_name(workload)}, off-chip memory energy (tier-to-tier, tier-to-SRAM, static) "
        f"normalised to HBM-only's ({reference:.3g} J per iteration = 1)",
        fontsize="medium",
    )
    save_figure(fig, outputs)


def _figure_of(variant: str, policies: Sequence[str]) -> str:
    match variant:
        case "double_batch":
            return "Figure 13"
        case "half_tier2_bandwidth":
            return "Figure 15"
        case _:
            return "Figure 14" if "tm_training_off" in policies else "Figure 8"


_VARIANT_NOTES = {
    "base": "",
    "double_batch": ", batch doubled (so are Tier 2 and the HBM-only baseline's HBM)",
    "half_tier2_bandwidth": ", Tier 2 bandwidth halved",
}


def _by_workload(
    table: pd.DataFrame,
    outputs: Sequence[Path],
    *,
    figure: str,
    column: str,
    label: str,
    reference: str,
    variant: str,
    ratio: float,
    policies: Sequence[str],
    workloads: Sequence[str] | None,
    title: str,
    paper: Sequence[PaperValue] = (),
) -> None:
    """Bars of ``column`` per workload and a geometric-mean group, one bar per policy."""
    rows = _select(table, figure, columns=[column], variant=variant, policies=policies, workloads=workloads, ratio=ratio)
    names = _workloads_in(rows)
    rows, notes, log = _prepare(rows, column, label=label)
    data = rows.assign(Policy=rows["policy"].map(_policy_name), Workload=rows["workload"].map(_workload_name))
    means = []
    for policy, values in rows.groupby("policy")[column]:
        positive = values[values > 0]
        means.append({"Policy": _policy_name(policy), "Workload": _GEOMEAN, column: geometric_mean(positive)})
        if len(positive) < len(names):
            notes.append(
                f"{_GEOMEAN} of {_policy_name(policy)} over {len(positive)} of {len(names)} workloads (positive values only)"
            )
    data = pd.concat([data, pd.DataFrame(means)], ignore_index=True)
    sns.set_theme(style="whitegrid", context="paper")
    fig = Figure(figsize=(max(1.25 * (len(names) + 1) + 2.4, 6.4), 4.0), layout="constrained")
    ax = fig.subplots()
    positions = _bars(
        ax,
        data,
        x="Workload",
        y=column,
        order=[*[_workload_name(w) for w in names], _GEOMEAN],
        hue_order=[_policy_name(p) for p in policies],
    )
    _reference_line(ax, reference)
    _value_axis(ax, log=log, label=label)
    _finish(fig, ax, title, notes, outputs, legend_title="policy", paper=paper, positions=positions)


def plot_efficiency_by_workload(
    table: pd.DataFrame,
    outputs: Sequence[Path],
    *,
    variant: str = "base",
    ratio: float = 25.0,
    policies: Sequence[str] = _PRIOR_AND_OURS,
    workloads: Sequence[str] | None = None,
    figure: str | None = None,
    paper: Sequence[PaperValue] = (),
) -> None:
    """Figures 8, 13, 14, 15: energy efficiency over HBM-only per workload and its geometric mean.

    Args:
        table: the study table.
        outputs: figure files (``.png``, ``.pdf``).
        variant: ``base`` (Figures 8, 14), ``double_batch`` (13) or ``half_tier2_bandwidth`` (15).
        ratio: the Tier 1 : model ratio (the paper's 25:1).
        policies: one bar each; Figure 14 passes TM-Training, TM-Training_Off and Ideal.
        workloads: the workloads required; every one in the variant if None.
        figure: the name used in the title and errors; by default inferred from variant and policies.
        paper: the paper's numbers for the figure, listed under it (a star where a bar draws the same quantity).

    Raises:
        ConfigError: no rows of ``variant`` at ``ratio``, or a workload without one of ``policies``.
    """
    figure = figure or _figure_of(variant, policies)
    title = (
        f"{figure}: energy efficiency (samples/J) normalised to HBM-only, "
        f"Tier 1 : model {_ratio_label(ratio)}{_VARIANT_NOTES.get(variant, f', {variant}')}"
    )
    _by_workload(
        table,
        outputs,
        figure=figure,
        column="energy_efficiency_vs_hbm",
        label="energy efficiency / HBM-only",
        reference="HBM-only (= 1)",
        variant=variant,
        ratio=ratio,
        policies=policies,
        workloads=workloads,
        title=title,
        paper=paper,
    )


def plot_migration_by_workload(
    table: pd.DataFrame,
    outputs: Sequence[Path],
    *,
    variant: str = "base",
    ratio: float = 25.0,
    policies: Sequence[str] = _PRIOR_AND_OURS,
    workloads: Sequence[str] | None = None,
    paper: Sequence[PaperValue] = (),
) -> None:
    """Figure 9: bytes migrated between tiers over the ideal policy's, per workload and geometric mean.

    Raises:
        ConfigError: no rows of ``variant`` at ``ratio``, or a workload without one of ``policies``.
    """
    figure = "Figure 9"
    title = (
        f"{figure}: Tier 1 <-> Tier 2 migration normalised to the ideal policy's, "
        f"Tier 1 : model {_ratio_label(ratio)}{_VARIANT_NOTES.get(variant, f', {variant}')}"
    )
    _by_workload(
        table,
        outputs,
        figure=figure,
        column="migration_vs_ideal",
        label="migrated bytes / ideal's",
        reference="Ideal (= 1)",
        variant=variant,
        ratio=ratio,
        policies=policies,
        workloads=workloads,
        title=title,
        paper=paper,
    )


def _vs_ratio(
    table: pd.DataFrame,
    outputs: Sequence[Path],
    *,
    figure: str,
    workload: str,
    variant: str,
    policies: Sequence[str],
    column: str,
    label: str,
    reference: str | None,
    title: str,
    paper: Sequence[PaperValue] = (),
) -> None:
    rows = _select(table, figure, columns=[column], variant=variant, policies=policies, workloads=[workload])
    ratios = sorted(rows["ratio"].unique())
    rows, notes, log = _prepare(rows, column, label=label)
    sns.set_theme(style="whitegrid", context="paper")
    fig = Figure(figsize=(6.4, 4.0), layout="constrained")
    ax = fig.subplots()
    _lines_vs_ratio(ax, rows, y=column, policies=policies, ratios=ratios)
    if reference is not None:
        _reference_line(ax, reference)
    _value_axis(ax, log=log, label=label)
    _finish(fig, ax, title, notes, outputs, legend_title="policy", paper=paper)


def plot_efficiency_vs_ratio(
    table: pd.DataFrame,
    outputs: Sequence[Path],
    *,
    workload: str = "palm_540b",
    variant: str = "base",
    policies: Sequence[str] = _WITH_IDEAL,
    paper: Sequence[PaperValue] = (),
) -> None:
    """Figure 10: energy efficiency over HBM-only against the Tier 1 : model ratio, one workload.

    Raises:
        ConfigError: no rows of ``workload`` in ``variant`` for one of ``policies``.
    """
    figure = "Figure 10"
    _vs_ratio(
        table,
        outputs,
        figure=figure,
        workload=workload,
        variant=variant,
        policies=policies,
        column="energy_efficiency_vs_hbm",
        label="energy efficiency / HBM-only",
        reference="HBM-only (= 1)",
        title=f"{figure}: {_workload_name(workload)}, energy efficiency (samples/J) normalised to the HBM-only system",
        paper=paper,
    )


def plot_migration_vs_ratio(
    table: pd.DataFrame,
    outputs: Sequence[Path],
    *,
    workload: str = "palm_540b",
    variant: str = "base",
    policies: Sequence[str] = _WITH_IDEAL,
    paper: Sequence[PaperValue] = (),
) -> None:
    """Figure 11: bytes migrated between tiers over the data one iteration touches, against the ratio.

    Raises:
        ConfigError: no rows of ``workload`` in ``variant`` for one of ``policies``.
    """
    figure = "Figure 11"
    _vs_ratio(
        table,
        outputs,
        figure=figure,
        workload=workload,
        variant=variant,
        policies=policies,
        column="migration_vs_data",
        label="migrated bytes / data per iteration",
        reference=None,
        title=f"{figure}: {_workload_name(workload)}, Tier 1 <-> Tier 2 migration normalised to the data one iteration uses",
        paper=paper,
    )


def plot_throughput_vs_ratio(
    table: pd.DataFrame,
    outputs: Sequence[Path],
    *,
    variant: str = "base",
    policies: Sequence[str] = _WITH_IDEAL,
    workloads: Sequence[str] | None = None,
    paper: Sequence[PaperValue] = (),
) -> None:
    """Figure 12: the geometric mean over workloads of throughput over HBM-only, against the ratio.

    Only ratios every workload was run at are drawn (a mean over a different set of workloads would
    not be comparable); the others are listed under the plot.

    Raises:
        ConfigError: a workload without one of ``policies``, or no ratio common to all workloads.
    """
    figure = "Figure 12"
    column = "throughput_vs_hbm"
    rows = _select(table, figure, columns=[column], variant=variant, policies=policies, workloads=workloads)
    names = _workloads_in(rows)
    rounded = rows["ratio"].round(9)
    common = set.intersection(*(set(rounded[rows["workload"] == w]) for w in names))
    if not common:
        raise ConfigError(f"{figure}: no Tier 1 ratio common to workloads {names}")
    notes = []
    skipped = sorted(set(rounded) - common)
    if skipped:
        notes.append(f"ratios not run for every workload, not shown: {', '.join(_ratio_label(r) for r in skipped)}")
    rows = rows[rounded.isin(common)]
    undefined = ~np.isfinite(rows[column]) | (rows[column] <= 0)
    if undefined.any():
        notes.append(f"left out of the geometric mean (not positive): {_where(rows[undefined])}")
    means = (
        rows[~undefined]
        .groupby(["policy", "ratio"])[column]
        .agg(["size", geometric_mean])
        .rename(columns={"geometric_mean": column})
        .reset_index()
    )
    partial = means[means["size"] < len(names)]
    if len(partial):
        notes.append(
            "geometric mean over fewer workloads for: "
            + ", ".join(f"{_policy_name(r.policy)} {_ratio_label(r.ratio)}" for r in partial.itertuples())
        )
    sns.set_theme(style="whitegrid", context="paper")
    fig = Figure(figsize=(6.4, 4.0), layout="constrained")
    ax = fig.subplots()
    _lines_vs_ratio(ax, means, y=column, policies=policies, ratios=sorted(common))
    _reference_line(ax, "HBM-only (= 1)")
    _value_axis(ax, log=False, label="throughput / HBM-only (geometric mean)")
    title = (
        f"{figure}: throughput (samples/s) normalised to HBM-only, "
        f"geometric mean over {', '.join(_workload_name(w) for w in names)}"
        f"{_VARIANT_NOTES.get(variant, f', {variant}')}"
    )
    _finish(fig, ax, title, notes, outputs, legend_title="policy", paper=paper)


def paper_mark(row: pd.Series) -> tuple[str, str] | None:
    """The bar of a TM-Training figure that draws the same quantity as a paper-vs-ours row: TM-Training's geometric mean
    of energy efficiency over HBM-only (Figures 8, 13-15), a section 2.1 system's migration over the data (Figure 3)."""
    metric, claim = str(row["metric"]), str(row["claim_name"])
    if metric == "energy_efficiency_vs_hbm_only" and row["workload"] == "average":
        return (_GEOMEAN, POLICY_NAMES["tm_training"])
    system = claim.removeprefix("fig3_migration_")
    if metric == "migration_normalised_to_total_data" and system in POLICY_NAMES and row["ratio"]:
        return (f"{float(row['ratio']):g}:1", POLICY_NAMES[system])
    return None


def plot_figure(
    figure: str,
    table: pd.DataFrame,
    outputs: Sequence[Path],
    *,
    workload: str = "palm_540b",
    ratio: float = 25.0,
    comparison: pd.DataFrame | None = None,
) -> None:
    """One of :data:`FIGURES` from the study table, as the paper draws it: its workload (Figures 2-4, 10, 11) or Tier 1 :
    model ratio (Figures 8, 9, 13-15), and its policies (prior work and TM-Training; the ideal policy where the paper
    draws it; Figure 14 TM-Training against its offline forms).

    ``comparison``: the study's paper-vs-ours table (``analysis.agreement.read_comparison``); the paper's numbers for
    the figure are drawn beside ours, starred on the bar that draws the same quantity (:func:`paper_mark`).

    Raises:
        ConfigError: an unknown figure, or a table without what the figure needs.
    """
    paper = paper_values(comparison, [f"Figure {figure.removeprefix('fig')}"], at=paper_mark) if comparison is not None else []
    prior = ["sentinel", "autotm", "deeptm", "tm_training"]
    with_ideal = [*prior, "ideal"]
    match figure:
        case "fig2":
            plot_motivation_efficiency(table, outputs, workload=workload, paper=paper)
        case "fig3":
            plot_motivation_migration(table, outputs, workload=workload, paper=paper)
        case "fig4":
            plot_motivation_energy_breakdown(table, outputs, workload=workload, paper=paper)
        case "fig8":
            plot_efficiency_by_workload(table, outputs, variant="base", ratio=ratio, policies=prior, paper=paper)
        case "fig9":
            plot_migration_by_workload(table, outputs, ratio=ratio, policies=prior, paper=paper)
        case "fig10":
            plot_efficiency_vs_ratio(table, outputs, workload=workload, policies=with_ideal, paper=paper)
        case "fig11":
            plot_migration_vs_ratio(table, outputs, workload=workload, policies=with_ideal, paper=paper)
        case "fig12":
            plot_throughput_vs_ratio(table, outputs, policies=with_ideal, paper=paper)
        case "fig13":
            plot_efficiency_by_workload(table, outputs, variant="double_batch", ratio=ratio, policies=prior, paper=paper)
        case "fig14":
            policies = ["tm_training", "tm_training_off", "ideal"]
            plot_efficiency_by_workload(table, outputs, variant="base", ratio=ratio, policies=policies, paper=paper)
        case "fig15":
            plot_efficiency_by_workload(table, outputs, variant="half_tier2_bandwidth", ratio=ratio, policies=prior, paper=paper)
        case _:
            raise ConfigError(f"TM-Training figure {figure!r}: expected one of {', '.join(FIGURES)}")
