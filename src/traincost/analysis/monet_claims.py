"""MONET's claims as computable checks: section IV on our hardware sweeps, section V on the fusion
solver (Figure 10) and activation checkpointing (Figures 11, 12).

Each claim states, before looking at the numbers, what we compute and the threshold at which we
say it holds; the table reports our value and whether it holds. Nothing here is tuned to make a
claim hold. Section V's one number (memory saved within +4 %) comes from ``data/paper/monet.csv``
and also gets a magnitude verdict (:mod:`traincost.analysis.verdicts`).

Rows the paper does not claim are ``extension`` (Figure 10's training rows: "Fig. 10. Latency and energy for
ResNet18 inference", the text's results are inference only; the latency-only ranking of Figure 1, where the
paper speaks of the joint energy-latency distributions), rows true by construction of any model are
``invariant`` (a training step contains the forward pass). A corrected check is a new row; the row it
corrects stays, ``superseded``, so the change is visible.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence

import numpy as np
import pandas as pd

from traincost.analysis.edge_tpu import edge_tpu_resources
from traincost.analysis.monet_rows import Claim, judged_claims
from traincost.analysis.monet_sentences import checkpoint_claims, fusion_claims, memory_claims, node_claims, nsga_milp_claims
from traincost.analysis.paper_claims import claim_lines
from traincost.analysis.pareto import margin_front_mask, near_front_mask, pareto_mask
from traincost.analysis.verdicts import TIE_TOLERANCE
from traincost.errors import ConfigError

__all__ = [
    "Claim",
    "FRONT_MARGIN",
    "FRONT_TOLERANCE",
    "front_overlap",
    "monet_hardware_claims",
    "monet_section5_claims",
    "monet_unchecked",
    "NON_ADDITIVE_BAR",
]

NON_ADDITIVE_BAR = 0.05
"""Figure 11 holds when recomputing both activations differs from the sum of each alone by more than this
share of the combined change."""
FRONT_TOLERANCE = 0.001
"""Figure 8's superseded front checks: a point within this share of the Pareto front (its cost at most 1.001 times the
lowest at no more compute) counts as on it."""
FRONT_MARGIN = TIE_TOLERANCE
"""Figures 1 and 8's fronts: a point is off the front only if another dominates it by this share
(:func:`traincost.analysis.pareto.margin_front_mask`), so that a plateau of near-equal points is not decided by
rounding, nor by noise well below it: points within it of each other are ties, as in every verdict. On the full
config's sweeps, each front compared with itself after 1e-4 relative noise overlaps 0.92-1.0 (eight draws); at a
0.1 % margin the training energy-latency front overlapped itself only 0.40-0.57, too little to tell noise from a
difference."""
_BYTES_PER_MB = 1e6


def monet_hardware_claims(
    edge_inference: pd.DataFrame,
    edge_training: pd.DataFrame,
    gpt_inference: pd.DataFrame,
    gpt_training: pd.DataFrame,
    *,
    front_rule: str = "margin",
) -> pd.DataFrame:
    """Every claim of MONET section IV (Figures 1, 8, 9) on the four sweep tables.

    ``front_rule``: the front the counted Figure 1 and 8 rows use (``margin``, ``near`` or ``strict``: an ablation of the
    check's own rule; the rows keep their names so that the runs line up).

    Raises:
        ConfigError: an unknown ``front_rule``.
    """
    if front_rule not in FRONT_RULES:
        raise ConfigError(f"front rule {front_rule!r}: expected one of {', '.join(FRONT_RULES)}")
    inf, train = _aligned(edge_tpu_resources(edge_inference), edge_tpu_resources(edge_training))
    g_inf, g_train = _aligned(gpt_inference, gpt_training)
    largest_pe = inf["pe_compute"].max()
    upper_pe = np.median(np.unique(inf["pe_compute"]))
    claims = []

    for metric in ("latency_cycles", "energy_pj"):
        rho = inf[metric].rank().corr(train[metric].rank())
        latency_only = metric == "latency_cycles"
        claims.append(
            Claim(
                claim=f"inference_training_{metric}_rankings_differ",
                figure="1",
                paper_says="hardware that favours inference does not systematically favour training",
                check=f"Spearman correlation of {metric} between inference and training over the grid; holds if < 0.9"
                + (
                    "; ours, not the paper's: it claims the joint energy-latency distributions differ (the energy "
                    "ranking and the Pareto-front rows)"
                    if latency_only
                    else ""
                ),
                value=float(rho),
                holds=bool(rho < 0.9),
                kind="extension" if latency_only else "claim",
            )
        )
    claims += _front_overlap_claims(inf, train, front_rule)
    for table, step, metric in ((train, "training", "latency_cycles"), (inf, "inference", "energy_pj")):
        name = f"{step}_{metric.split('_')[0]}_front_has_no_largest_pe"
        for on_front, suffix, kind, how in _front_rules(name, front_rule):
            front = table[on_front(table["total_compute"], table[metric])]
            count = int((front["pe_compute"] == largest_pe).sum())
            claims.append(
                Claim(
                    claim=name + suffix,
                    figure="8",
                    paper_says=f"larger PEs do not appear on the {step} {metric.split('_')[0]} Pareto front",
                    check=f"Pareto points of ({metric}, U·L·n_PEs) with the largest U·L ({largest_pe:g}); holds if none; {how}",
                    value=float(count),
                    holds=count == 0,
                    kind=kind,
                )
            )
    name = "inference_latency_front_dominated_by_large_pes"
    for on_front, suffix, kind, how in _front_rules(name, front_rule):
        front = inf[on_front(inf["total_compute"], inf["latency_cycles"])]
        share = float((front["pe_compute"] > upper_pe).mean())
        claims.append(
            Claim(
                claim=name + suffix,
                figure="8",
                paper_says="for inference latency, larger PEs are strongly associated with the Pareto-optimal configurations",
                check=f"share of (latency, U·L·n_PEs) Pareto points with U·L above the median level ({upper_pe:g}); "
                f"holds if >= 0.5; {how}",
                value=share,
                holds=share >= 0.5,
                kind=kind,
            )
        )
    budget = train[train["total_compute"] >= train["total_compute"].quantile(0.9)]
    best = budget.loc[budget["energy_pj"].idxmin()]
    claims.append(
        Claim(
            claim="training_large_budget_energy_best_is_large_pe",
            figure="8",
            paper_says="during training, larger PEs are more efficient at very large total compute budgets",
            check="U·L of the lowest-energy training configuration in the top 10 % of U·L·n_PEs; holds if above the median level",
            value=float(best["pe_compute"]),
            holds=bool(best["pe_compute"] > upper_pe),
        )
    )
    optimum = train.loc[train["energy_pj"].idxmin()]
    claims.append(
        Claim(
            claim="training_energy_optimum_is_not_largest_pe",
            figure="8",
            paper_says="larger PEs are not the best designs in absolute training energy",
            check="U·L of the lowest-energy training configuration; holds if below the largest U·L",
            value=float(optimum["pe_compute"]),
            holds=bool(optimum["pe_compute"] < largest_pe),
        )
    )
    for step, edge, gpt in (("inference", inf, g_inf), ("training", train, g_train)):
        ratio_edge, ratio_gpt = _spread(edge["latency_cycles"]), _spread(gpt["latency_cycles"])
        claims.append(
            Claim(
                claim=f"gpt2_fusemax_{step}_more_concentrated",
                figure="9",
                paper_says="GPT-2 on FuseMax is more concentrated, less sensitive to architecture, than ResNet-18 on Edge TPU",
                check=f"p90/p10 latency spread, GPT-2 on FuseMax ({ratio_gpt:.2f}) vs ResNet-18 on Edge TPU ({ratio_edge:.2f}); "
                "value = GPT-2 spread / ResNet spread; holds if < 1",
                value=ratio_gpt / ratio_edge,
                holds=ratio_gpt < ratio_edge,
                pivot=1.0,
            )
        )
    claims += _bandwidth_claims(g_inf, g_train)
    claims.append(_larger_pes_reduce_latency(inf))
    claims += _gpt2_transfer_claims(g_inf, g_train)
    for name, a, b in (("edge_tpu_resnet18", inf, train), ("fusemax_gpt2", g_inf, g_train)):
        share = float(((b["latency_cycles"] > a["latency_cycles"]) & (b["energy_pj"] > a["energy_pj"])).mean())
        claims.append(
            Claim(
                claim=f"{name}_training_costs_more_than_inference",
                figure="1" if name.startswith("edge") else "9",
                paper_says="a training step costs more than inference on the same hardware",
                check="share of configurations where training latency and energy both exceed inference; holds if 1; "
                "true by construction: a training step contains the inference's forward pass",
                value=share,
                holds=share == 1.0,
                kind="invariant",
            )
        )
    return judged_claims(claims)


def _bandwidth_claims(g_inf: pd.DataFrame, g_train: pd.DataFrame) -> list[Claim]:
    """Figure 9: "memory bandwidth has a visible impact on performance" (latency lowered by more than 5 % from the
    lowest buffer bandwidth to the highest, training and inference) and its caption's "the impact of memory bandwidth
    on performance and energy efficiency" (energy moved by more than 5 % either way)."""
    moved = {}
    for step, table in (("training", g_train), ("inference", g_inf)):
        by_bandwidth = table.groupby("buffer_bandwidth")[["latency_cycles", "energy_pj"]].median()
        moved[step] = {c: float(by_bandwidth[c].iloc[-1] / by_bandwidth[c].iloc[0]) for c in ("latency_cycles", "energy_pj")}
    claims = [
        Claim(
            claim=f"gpt2_buffer_bandwidth_lowers_{step}_latency",
            figure="9",
            paper_says="memory (buffer) bandwidth has a visible impact on performance",
            check=f"median {step} latency at the highest buffer bandwidth / at the lowest; holds if < 0.95",
            value=moved[step]["latency_cycles"],
            holds=moved[step]["latency_cycles"] < 0.95,
        )
        for step in ("training", "inference")
    ]
    return claims + [
        Claim(
            claim=f"gpt2_buffer_bandwidth_moves_{step}_energy",
            figure="9",
            paper_says="the impact of memory bandwidth on ... energy efficiency (Figure 9 caption)",
            check=f"median {step} energy at the highest buffer bandwidth / at the lowest; holds if it differs from 1 by "
            "more than 5 % (the caption names no direction)",
            value=moved[step]["energy_pj"],
            holds=abs(moved[step]["energy_pj"] - 1.0) > 0.05,
        )
        for step in ("inference", "training")
    ]


REDUCES_SHARE = 0.9
"""Figure 8's "larger PEs almost always reduce execution time": the share of pairs that must."""


def _larger_pes_reduce_latency(inf: pd.DataFrame) -> Claim:
    """Figure 8: among configurations that differ only in how the same total compute is split into PEs, the share of
    pairs in which the larger PE has the lower inference latency (by more than the tie tolerance)."""
    fixed = ["total_compute", *(c for c in ("local_memory_mb", "register_file_kb") if c in inf.columns)]
    below = pairs = 0
    for _, group in inf.groupby(fixed):
        pe = group["pe_compute"].to_numpy(dtype=float)
        latency = group["latency_cycles"].to_numpy(dtype=float)
        larger = pe[:, None] > pe[None, :]
        below += int((larger & (latency[:, None] < latency[None, :] * (1 - TIE_TOLERANCE))).sum())
        pairs += int(larger.sum())
    share = below / pairs if pairs else np.nan
    return Claim(
        claim="inference_larger_pes_reduce_latency",
        figure="8",
        paper_says="for inference latency, larger PEs almost always reduce execution time",
        check="over pairs of inference configurations with the same U·L·n_PEs, local memory and register file but "
        f"different U·L ({pairs} pairs), the share where the larger U·L has a latency lower by more than "
        f"{TIE_TOLERANCE:.0%}; holds if >= {REDUCES_SHARE:g} ('almost always')",
        value=share,
        holds=bool(share >= REDUCES_SHARE) if pairs else None,
    )


def _gpt2_transfer_claims(g_inf: pd.DataFrame, g_train: pd.DataFrame) -> list[Claim]:
    """Section VI: "our experiments with ResNet-18 and GPT-2 demonstrate that architectures optimized for inference are
    not necessarily efficient for training": Figure 1's two measures on the FuseMax sweeps."""
    rho = g_inf["energy_pj"].rank().corr(g_train["energy_pj"].rank())
    jaccard = front_overlap(g_inf, g_train)
    says = "architectures optimized for inference are not necessarily efficient for training (GPT-2, section VI)"
    return [
        Claim(
            claim="gpt2_inference_training_energy_rankings_differ",
            figure="9",
            paper_says=says,
            check="Spearman correlation of energy_pj between inference and training over the FuseMax grid; holds if < 0.9",
            value=float(rho),
            holds=bool(rho < 0.9),
        ),
        Claim(
            claim="gpt2_energy_latency_fronts_differ_by_margin",
            figure="9",
            paper_says=says,
            check=f"Jaccard overlap of the FuseMax energy-latency fronts (configuration ids); holds if < 0.5; {_MARGIN}",
            value=jaccard,
            holds=jaccard < 0.5,
        ),
    ]


def _near_front(first: pd.Series, second: pd.Series) -> np.ndarray:
    return near_front_mask(first, second, tolerance=FRONT_TOLERANCE)


def _margin_front(first: pd.Series, second: pd.Series) -> np.ndarray:
    return margin_front_mask(first, second, margin=FRONT_MARGIN)


_NEAR = (
    f"a point within {FRONT_TOLERANCE:.1%} of the front counts as on it (its cost at most {1 + FRONT_TOLERANCE:g} x "
    "the lowest at no more compute)"
)
_MARGIN = (
    f"a point is off the front only if another dominates it by a {FRONT_MARGIN:.1%} margin (no worse within "
    f"{FRONT_MARGIN:.1%} in both objectives, better by more than {FRONT_MARGIN:.1%} in one)"
)
_FrontRule = Callable[[pd.Series, pd.Series], np.ndarray]
FRONT_RULES: dict[str, tuple[_FrontRule, str]] = {
    "margin": (_margin_front, _MARGIN),
    "near": (_near_front, _NEAR + " (an ablation of the check's rule)"),
    "strict": (pareto_mask, "the strict front, ties decided by rounding (an ablation of the check's rule)"),
}
"""The fronts the counted Figure 1 and 8 rows may use, and their check text: ``margin`` the study's."""


def _front_rules(name: str, front_rule: str = "margin") -> tuple[tuple[_FrontRule, str, str, str], ...]:
    """Figure 8's fronts, each rule with its row's suffix, kind and check text (the counted row's rule ``front_rule``):
    the strict front and the front near the best cost are superseded (ties decided by rounding; a point near the best
    cost at twice the compute counted on it)."""
    return (
        (pareto_mask, "", "superseded", f"superseded by {name}_within_tolerance (a strict front decides ties by rounding)"),
        (
            _near_front,
            "_within_tolerance",
            "superseded",
            f"{_NEAR}; superseded by {name}_by_margin: it counts a point near the best cost at no more compute "
            "however much more compute it uses",
        ),
        (FRONT_RULES[front_rule][0], "_by_margin", "claim", FRONT_RULES[front_rule][1]),
    )


def _front_overlap_claims(inf: pd.DataFrame, train: pd.DataFrame, front_rule: str = "margin") -> list[Claim]:
    """Figure 1: the overlap of the inference and training energy-latency fronts, strict (superseded) and by margin (or
    the counted row's ``front_rule``)."""
    claims = []
    for rule, name, kind, how in (
        (
            pareto_mask,
            "energy_latency_pareto_fronts_differ",
            "superseded",
            "superseded by energy_latency_fronts_differ_by_margin: fronts of a few points out of thousands, ties between "
            "mirrored configurations broken by order, so the overlap moves under 1e-4 noise",
        ),
        (FRONT_RULES[front_rule][0], "energy_latency_fronts_differ_by_margin", "claim", FRONT_RULES[front_rule][1]),
    ):
        jaccard = front_overlap(inf, train, rule)
        claims.append(
            Claim(
                claim=name,
                figure="1",
                paper_says="the energy/latency distributions of inference and training differ structurally",
                check=f"Jaccard overlap of the energy-latency Pareto fronts (configuration ids); holds if < 0.5; {how}",
                value=jaccard,
                holds=jaccard < 0.5,
                kind=kind,
            )
        )
    return claims


def front_overlap(first: pd.DataFrame, second: pd.DataFrame, rule: _FrontRule = _margin_front) -> float:
    """The Jaccard overlap of two sweeps' energy-latency fronts (by configuration id) under a front ``rule``."""
    fronts = [set(t["config_id"][rule(t["latency_cycles"], t["energy_pj"])]) for t in (first, second)]
    union = fronts[0] | fronts[1]
    return len(fronts[0] & fronts[1]) / len(union) if union else 1.0


def _aligned(inference: pd.DataFrame, training: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Both sweeps on the same configurations, in the same order."""
    common = inference.merge(training[["config_id"]], on="config_id")["config_id"]
    return tuple(t.set_index("config_id").loc[common].reset_index() for t in (inference, training))


def _spread(values: pd.Series) -> float:
    return float(values.quantile(0.9) / values.quantile(0.1))


def monet_section5_claims(
    fusion: Sequence[pd.DataFrame],
    additivity: pd.DataFrame | None,
    nsga_summary: pd.DataFrame | None,
    paper: pd.DataFrame,
    *,
    solver_runs: pd.DataFrame | None = None,
    nsga: pd.DataFrame | None = None,
    milp: pd.DataFrame | None = None,
    memory: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Section V's claims: fusion against no fusion and the manual fusion, the length limits and the graphs' sizes
    (Figure 10), recomputation is not additive (Figure 11), memory saved within +4 % latency and energy and NSGA-II's
    choices (Figure 12); and Figure 3's memory claims.

    Args:
        fusion: ``compare-fusion`` tables (one per step; strategies ``base``, ``manual`` and ``limit*``); may be empty.
        additivity: ``checkpoint-study``'s additivity table (scenarios AC00, AC10, AC01, AC11), or None.
        nsga_summary: ``checkpoint-nsga``'s summary (the largest saving within its tolerance), or None.
        paper: ``data/paper/monet.csv``.
        solver_runs: the fusion solver's runs (nodes and candidate subgraphs per step and limit), or None.
        nsga: ``checkpoint-nsga``'s evaluations (every choice, its front flag), or None.
        milp: ``checkpoint-study``'s MILP choices costed by the same model, or None.
        memory: Figure 3's memory comparison (ours and torch's bytes per category), or None.

    Raises:
        ConfigError: a table lacks the strategies or scenarios a check needs.
    """
    claims = [c for table in fusion for c in _fusion_claims(table) + fusion_claims(table)]
    if solver_runs is not None:
        claims += node_claims(solver_runs, paper)
    if additivity is not None:
        claims += _additivity_claims(additivity)
    if nsga_summary is not None:
        claims.append(_saving_claim(nsga_summary, paper))
        if nsga is not None:
            claims += checkpoint_claims(nsga, nsga_summary)
    if nsga is not None and milp is not None:
        claims += nsga_milp_claims(nsga, milp)
    if memory is not None:
        claims += memory_claims(memory)
    return judged_claims(claims)


def monet_unchecked(claims: pd.DataFrame, written: Collection[str]) -> pd.DataFrame:
    """A row of kind ``unchecked`` per sentence of ``data/paper/monet_claims.csv`` that no row of ``written`` checks:
    those no study can check (the reason given), and those whose rows this configuration does not run."""
    rows = []
    for line, names in claim_lines(claims):
        claim_id = line["id"]
        if names and any(n in written for n in names):
            continue
        reason = line["unchecked"] if not names else f"not run in this configuration (checked by {', '.join(names)})"
        rows.append(
            Claim(
                claim=claim_id,
                figure=str(line["figure"]).removeprefix("Figure ").strip(),
                paper_says=line["sentence"],
                check=reason,
                value=np.nan,
                holds=None,
                kind="unchecked",
            )
        )
    return judged_claims(rows)


def _fusion_claims(table: pd.DataFrame) -> list[Claim]:
    solver = table[table["strategy"].astype(str).str.startswith("limit")]
    manual = table[table["strategy"] == "manual"]
    if solver.empty or manual.empty:
        raise ConfigError(f"fusion comparison: needs a 'manual' and a 'limit*' strategy, got {sorted(set(table['strategy']))}")
    step = str(table["step"].iloc[0])
    fits = "fusion_fits" not in manual.columns or bool(manual["fusion_fits"].iloc[0])
    feasibility = (
        "the manual fusion fits on-chip memory (a point the solver may choose)"
        if fits
        else "some of the manual fusion's groups do not fit on-chip memory: infeasible for the solver, and run unfused"
    )
    inference = step == "inference"
    claims = []
    for metric in ("latency_cycles", "energy_pj"):
        best = solver.loc[solver[metric].idxmin()]
        ratio = float(best[metric] / manual[metric].iloc[0])
        claims.append(
            Claim(
                claim=f"fusion_solver_beats_manual_{step}_{metric.split('_')[0]}",
                figure="10",
                paper_says="our fusion algorithm reduces both latency and energy compared to manual fusion (most of the time)",
                check=f"{step}: best solver {metric} (over the limits run; here {best['strategy']}) / manual's; holds if < 1; "
                + feasibility
                + ("" if inference else "; ours, not the paper's: its Figure 10 and its text are ResNet-18 inference"),
                value=ratio,
                holds=ratio < 1,
                kind="claim" if inference else "extension",
                pivot=1.0,
            )
        )
    return claims


def _additivity_claims(table: pd.DataFrame) -> list[Claim]:
    by = table.set_index("scenario")
    missing = [s for s in ("AC00", "AC10", "AC01", "AC11") if s not in by.index]
    if missing:
        raise ConfigError(f"checkpoint additivity: missing scenario(s) {missing}")
    claims = []
    for metric in ("latency_cycles", "energy_pj"):
        base = float(by.loc["AC00", metric])
        first, second, both = (float(by.loc[s, metric]) - base for s in ("AC10", "AC01", "AC11"))
        deviation = abs(both - (first + second)) / abs(both) if both else (0.0 if first + second == 0 else np.inf)
        claims.append(
            Claim(
                claim=f"recomputation_not_additive_{metric.split('_')[0]}",
                figure="11",
                paper_says="the recomputation cost of two activations is not the sum of their individual recomputations",
                check=f"|change(AC11) - change(AC10) - change(AC01)| / |change(AC11)| in {metric}, each against AC00; "
                f"holds if > {NON_ADDITIVE_BAR:g}",
                value=float(deviation),
                holds=bool(deviation > NON_ADDITIVE_BAR),
            )
        )
    return claims


def _saving_claim(summary: pd.DataFrame, paper: pd.DataFrame) -> Claim:
    reported = paper[paper["claim"] == "checkpoint_saving_within_tolerance"].set_index("metric")["value"]
    if "saved_mb" not in reported.index:
        raise ConfigError("MONET paper numbers: no row checkpoint_saving_within_tolerance / saved_mb")
    row = summary.iloc[0]
    saved_mb = float(row["saved_bytes"]) / _BYTES_PER_MB
    total_mb = float(row["baseline_activation_bytes"]) / _BYTES_PER_MB
    paper_mb = float(reported["saved_mb"])
    return Claim(
        claim="checkpoint_saving_within_tolerance",
        figure="12",
        paper_says=f"up to {paper_mb:g} MB of activation memory saved for +{float(reported.get('tolerance', np.nan)):.0%} "
        "latency and energy",
        check=f"largest saving (MB, FP16) of the NSGA-II choices within +{float(row['tolerance']):.0%} of the baseline's "
        f"latency and energy; holds if > 0 (paper {paper_mb:g} MB). "
        f"Like with like: the paper's {paper_mb:g} MB is "
        f"a share of its total activation memory (Fig. 12 caption, FP16); ours is a share of the {total_mb:.1f} MB of FP16 "
        f"activations saved for the backward pass ({float(row['saved_fraction']):.0%} saved)"
        + (
            f"; the paper's {paper_mb:g} MB exceeds that whole total, "
            "so its total counts more tensors than those saved for backward"
            if paper_mb > total_mb
            else ""
        ),
        value=saved_mb,
        holds=saved_mb > 0,
        paper_value=paper_mb,
        ceiling=total_mb,
    )
