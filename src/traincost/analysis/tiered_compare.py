"""TM-Training's reported numbers (``data/paper/tm_training.csv``) beside ours, with what we check of each.

Absolute values depend on our reconstructed system and simulator and are not expected to match. Each row
names its ``pivot``, 1 for ratios (``X_vs_B``), 0 for reductions (``X_reduction_vs_B``), and is judged by the one
rule of :mod:`traincost.analysis.verdicts`: ours on the same side of the pivot as the paper's, a tie within its
tolerance of the pivot, then the magnitude. Each row says in ``check`` what it compares and in ``note``
how ours was computed. The paper's "on average" over its workloads is taken as the geometric mean of
the per-workload ratios (reductions: 1 - geometric mean of the ratios), its "up to" as the maximum
over the ratios run, "regardless of the Tier 1 size" as holding at every ratio run. A row the study
cannot compute keeps ``ours`` = NaN and ``agrees`` = NA, with the reason in ``note``. Every row is a
``claim``, except a claim that a policy is less energy-efficient than HBM-only where our model's own ceiling
(:data:`CEILING_ROOM`) leaves it no room to fail: that row is ``informational``, the reason in ``note``; so is a claim
whose verdict turns on how re-reads of Tier 2 are priced, which the paper does not state (:func:`set_aside_by_accounting`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from functools import partial

import numpy as np
import pandas as pd

from traincost.analysis.paper_claims import claim_lines, said
from traincost.analysis.summary_stats import geometric_mean
from traincost.analysis.tiered_lookup import (
    OFFCHIP_ENERGY,
    PRIOR_WORK,
    NotInStudy,
    Ours,
    StudyLookup,
    Unavailable,
    over_workloads,
    policy_name,
    policy_ratio,
    quotient,
    ratio_text,
)
from traincost.analysis.tiered_sentences import sentence_rules
from traincost.analysis.verdicts import TIE_TOLERANCE, judge
from traincost.errors import ConfigError

__all__ = [
    "CEILING_ROOM",
    "compare_with_paper",
    "ordering_agreement",
    "PAPER_COLUMNS",
    "PRIOR_WORK",
    "SECTION2_WORKLOAD",
    "SUPERSEDED",
]

PAPER_COLUMNS = ("claim", "figure", "workload", "ratio", "baseline", "metric", "value", "source")
STUDY_COLUMNS = ("workload", "variant", "policy", "ratio", "samples_per_j", "samples_per_s", "migrated_bytes")
SECTION2_WORKLOAD = "palm_540b"
"""Section 2.1 does not name its workload; we use the one the motivation figures are drawn for."""
MAIN_RATIO = 25.0
"""Section 5.2's Tier 1 : model ratio (Tier 1 = 12.5 % of the memory), for claims that state none."""
_VARIANT_OF_FIGURE = {"Figure 13": "double_batch", "Figure 15": "half_tier2_bandwidth"}
_OUTPUT = (
    "claim",
    "kind",
    "figure",
    "workload",
    "ratio",
    "metric",
    "paper",
    "ours",
    "pivot",
    "ceiling",
    "check",
    "agrees",
    "note",
)
CEILING_ROOM = 0.05
"""A claim that a policy is less energy-efficient than HBM-only is decided by our model, not by the policy, where
the most any tiered memory can reach in it (``static_ceiling_vs_hbm``) lies less than this share above HBM-only:
the check could fail only in that sliver. Such a row is ``informational``."""


def _variant(row: pd.Series) -> str:
    return _VARIANT_OF_FIGURE.get(str(row["figure"]), "base")


def _ratio(row: pd.Series, default: float | None = None) -> float:
    if pd.notna(row["ratio"]):
        return float(row["ratio"])
    if default is None:
        raise Unavailable("the paper gives no ratio for this number")
    return default


def _section2_workload(row: pd.Series, workload: str) -> str:
    return workload if pd.isna(row["workload"]) or row["workload"] == "" else str(row["workload"])


# ---- Section 5.2: TM-Training against prior work ---------------------------------------------------


def _ceiling_vs_hbm(study: StudyLookup, row: pd.Series, subject: str, variant: str, ratio: float) -> tuple[float, str]:
    """The most our model lets ``subject``'s energy efficiency over HBM-only reach, over the row's workloads, and a note."""
    if "static_ceiling_vs_hbm" not in study.table.columns:
        return np.nan, ""
    ceiling, _ = over_workloads(
        study, row, variant, ratio, lambda w: study.value("static_ceiling_vs_hbm", w, variant, subject, ratio)
    )
    return ceiling, (
        f"; ceiling {ceiling:.4g}: the most a tiered memory can gain in our model (HBM-only's run with its HBM beyond "
        "Tier 1 swapped for flash: static power saved, no byte, joule or second added)"
    )


def _efficiency_vs(
    study: StudyLookup, row: pd.Series, *, subject: str = "tm_training", reduction: bool = False, gain: bool = False
) -> Ours:
    """``energy_efficiency_vs_B`` = samples/J of the subject over B's; ``_reduction_vs_B`` = 1 minus that;
    ``_gain_vs_B`` = that minus 1. Against HBM-only, also the ceiling our model allows (``static_ceiling_vs_hbm``)."""
    variant, ratio, baseline = _variant(row), _ratio(row, MAIN_RATIO), str(row["baseline"])
    value, how = over_workloads(
        study,
        row,
        variant,
        ratio,
        lambda w: policy_ratio(study, "samples_per_j", subject, baseline, workload=w, variant=variant, ratio=ratio),
    )
    if pd.isna(row["ratio"]):
        how += " (the paper states no ratio; section 5.2's 25:1 used)"
    ceiling = np.nan
    if baseline == "hbm_only":
        ceiling, said = _ceiling_vs_hbm(study, row, subject, variant, ratio)
        how += said
    if reduction:
        return Ours(
            1.0 - value,
            f"{policy_name(subject)} less energy-efficient than {policy_name(baseline)} (> 0)",
            f"1 - samples/J({subject}) / samples/J({baseline}); {how}",
            pivot=0.0,
            ceiling=ceiling,
        )
    if gain:
        return Ours(
            value - 1.0,
            f"{policy_name(subject)} more energy-efficient than {policy_name(baseline)} (> 0)",
            f"samples/J({subject}) / samples/J({baseline}) - 1; {how}",
            pivot=0.0,
        )
    return Ours(
        value,
        f"{policy_name(subject)} more energy-efficient than {policy_name(baseline)} (> 1)",
        f"samples/J({subject}) / samples/J({baseline}); {how}",
        ceiling=ceiling,
    )


def _migration_reduction(study: StudyLookup, row: pd.Series) -> Ours:
    """``migration_reduction_vs_B`` = 1 - migrated bytes of TM-Training / B's."""
    variant, ratio, baseline = _variant(row), _ratio(row), str(row["baseline"])
    value, how = over_workloads(
        study,
        row,
        variant,
        ratio,
        lambda w: policy_ratio(study, "migrated_bytes", "tm_training", baseline, workload=w, variant=variant, ratio=ratio),
    )
    return Ours(
        1.0 - value,
        f"TM-Training migrates less than {policy_name(baseline)} (> 0)",
        f"1 - migrated(tm_training) / migrated({baseline}); {how}",
        pivot=0.0,
    )


def _migration_vs_tm_training(study: StudyLookup, row: pd.Series, *, subject: str) -> Ours:
    """Figure 11: migrated bytes of ``subject`` over TM-Training's, at one ratio or at every ratio run."""
    workload, variant = str(row["workload"]), _variant(row)
    check = f"{policy_name(subject)} migrates more than TM-Training (> 1)"
    if pd.notna(row["ratio"]):
        ratio = float(row["ratio"])
        value = policy_ratio(study, "migrated_bytes", subject, "tm_training", workload=workload, variant=variant, ratio=ratio)
        if not np.isfinite(value):
            raise Unavailable(f"TM-Training migrates nothing on {workload} at {ratio_text(ratio)}")
        return Ours(value, check, f"migrated({subject}) / migrated(tm_training); {workload}, {variant}, {ratio_text(ratio)}")
    per_ratio = {
        r: policy_ratio(study, "migrated_bytes", subject, "tm_training", workload=workload, variant=variant, ratio=r)
        for r in study.ratios(workload, variant)
    }
    defined = {r: v for r, v in per_ratio.items() if np.isfinite(v) and v > 0}
    if not defined:
        raise Unavailable(f"TM-Training migrates nothing on {workload} ({variant}) at any ratio run")
    shown = ", ".join(f"{ratio_text(r)}: {v:.3g}" for r, v in defined.items())
    note = f"migrated({subject}) / migrated(tm_training), {workload}, {variant}; geometric mean over ratios ({shown})"
    undefined = sorted(set(per_ratio) - set(defined))
    if undefined:
        note += f"; undefined (TM-Training migrates nothing) at {', '.join(ratio_text(r) for r in undefined)}"
    ties = [r for r, v in defined.items() if abs(v - 1.0) <= TIE_TOLERANCE]
    if ties:
        note += f"; a tie (within {TIE_TOLERANCE:.0%} of 1) at {', '.join(ratio_text(r) for r in ties)}"
    return Ours(
        geometric_mean(list(defined.values())),
        check + f" at every ratio, each by more than the tie tolerance ({TIE_TOLERANCE:.0%})",
        note,
        agrees=all(v > 1.0 + TIE_TOLERANCE for v in defined.values()),
    )


def _per_prior(study: StudyLookup, row: pd.Series, column: str, subject: str | None) -> tuple[dict[str, float], str]:
    """Per prior work, the geometric mean over workloads of ``column`` of ``subject`` over the prior work's
    (``subject`` None: of the prior work over HBM-only's); and how the mean was taken."""
    variant, ratio = _variant(row), _ratio(row)
    per_prior, how = {}, ""
    for prior in PRIOR_WORK:
        numerator, denominator = (subject, prior) if subject else (prior, "hbm_only")
        per_prior[prior], how = over_workloads(
            study,
            row,
            variant,
            ratio,
            lambda w, a=numerator, b=denominator: policy_ratio(study, column, a, b, workload=w, variant=variant, ratio=ratio),
        )
    return per_prior, how


def _picked(per_prior: dict[str, float], pick: Callable[[Sequence[float]], float]) -> tuple[float, str]:
    """The value ``pick`` chooses, and a note listing every prior work's and which was chosen."""
    chosen = pick(per_prior.values())
    which = next(p for p, v in per_prior.items() if v == chosen)
    shown = ", ".join(f"{p}: {v:.3g}" for p, v in per_prior.items())
    return chosen, f"per prior work {shown}; {pick.__name__} is {which}"


def _throughput_vs_prior(study: StudyLookup, row: pd.Series, *, pick: Callable[[Sequence[float]], float]) -> Ours:
    """Figure 12: the geometric mean over workloads of TM-Training's samples/s over each prior work's; min or max of those."""
    per_prior, how = _per_prior(study, row, "samples_per_s", "tm_training")
    chosen, shown = _picked(per_prior, pick)
    return Ours(
        chosen,
        f"TM-Training's throughput above prior work's (> 1; {pick.__name__} over Sentinel, AutoTM, DeepTM)",
        f"samples/s(tm_training) / samples/s(prior), {how}; {shown}",
    )


def _prior_reduction_vs_hbm(study: StudyLookup, row: pd.Series, *, pick: Callable[[Sequence[float]], float]) -> Ours:
    """Figure 13: 1 - energy efficiency of each prior work over HBM-only (geometric mean over workloads); min or max."""
    per_prior, how = _per_prior(study, row, "samples_per_j", None)
    reductions = {p: 1.0 - v for p, v in per_prior.items()}
    chosen, shown = _picked(reductions, pick)
    which = next(p for p, v in reductions.items() if v == chosen)
    ceiling, said = _ceiling_vs_hbm(study, row, which, _variant(row), _ratio(row))
    return Ours(
        chosen,
        f"prior work less energy-efficient than HBM-only (> 0; {pick.__name__} over Sentinel, AutoTM, DeepTM)",
        f"1 - samples/J(prior) / samples/J(hbm_only), {how}; {shown}{said}",
        pivot=0.0,
        ceiling=ceiling,
    )


def _best_vs_prior(study: StudyLookup, row: pd.Series) -> Ours:
    """Abstract: "up to 55 % higher throughput per watt than prior work", as the largest margin over the best prior work."""
    table = study.table[study.table["variant"] == "base"]
    margins = {}
    for (workload, ratio), runs in table.groupby(["workload", "ratio"]):
        spj = runs.set_index("policy")["samples_per_j"]
        prior = spj.reindex(list(PRIOR_WORK)).dropna()
        if "tm_training" in spj.index and len(prior) and prior.max() > 0:
            margins[(workload, ratio)] = float(spj["tm_training"] / prior.max())
    if not margins:
        raise Unavailable("no base runs with TM-Training and a prior work")
    (workload, ratio), value = max(margins.items(), key=lambda item: item[1])
    return Ours(
        value,
        "TM-Training more energy-efficient than the best prior work somewhere (> 1)",
        f"max over workloads and base ratios of samples/J(tm_training) / max over Sentinel, AutoTM, DeepTM; "
        f"reached on {workload} at {ratio_text(ratio)} ({len(margins)} runs)",
    )


# ---- Section 2.1: the four tiered systems -----------------------------------------------------------


def _migration_vs_data(study: StudyLookup, row: pd.Series, *, subject: str, workload: str) -> Ours:
    """Figure 3: bytes migrated between tiers over the data one iteration touches."""
    wl, ratio = _section2_workload(row, workload), _ratio(row)
    value = study.value("migration_vs_data", wl, "base", subject, ratio)
    return Ours(
        value,
        f"{policy_name(subject)} migrates more than the data one iteration uses (> 1)",
        f"migrated({subject}) / data touched per iteration; {wl}, base, {ratio_text(ratio)} "
        "(the paper does not name its workload)",
    )


def _migration_vs_policy(study: StudyLookup, row: pd.Series, *, subject: str, workload: str) -> Ours:
    """Figure 3: bytes ``subject`` migrates between tiers over the row's baseline policy's, at the row's ratio."""
    wl, ratio, baseline = _section2_workload(row, workload), _ratio(row), str(row["baseline"])
    value = policy_ratio(study, "migrated_bytes", subject, baseline, workload=wl, variant="base", ratio=ratio)
    if not np.isfinite(value):
        raise Unavailable(f"{policy_name(baseline)} migrates nothing on {wl} at {ratio_text(ratio)}")
    return Ours(
        value,
        f"{policy_name(subject)} migrates more than {policy_name(baseline)} (> 1)",
        f"migrated({subject}) / migrated({baseline}); {wl}, base, {ratio_text(ratio)} (the paper does not name its workload)",
    )


def _up_to_over_ratios(
    study: StudyLookup, row: pd.Series, *, workload: str, column: str, subject: str, baseline: str, reduction: bool, check: str
) -> Ours:
    """Section 2.1's "up to": the extreme over the base ratios of ``column``(subject) / (baseline)."""
    wl = _section2_workload(row, workload)
    per_ratio = {
        r: policy_ratio(study, column, subject, baseline, workload=wl, variant="base", ratio=r) for r in study.ratios(wl, "base")
    }
    defined = {r: (1.0 - v if reduction else v) for r, v in per_ratio.items() if np.isfinite(v)}
    if not defined:
        raise Unavailable(f"{column} of {baseline} is 0 at every base ratio of {wl}")
    ratio, value = max(defined.items(), key=lambda item: item[1])
    formula = f"1 - {column}({subject}) / {column}({baseline})" if reduction else f"{column}({subject}) / {column}({baseline})"
    note = f"max over base ratios of {formula}, reached at {ratio_text(ratio)}; {wl} (the paper does not name its workload)"
    undefined = sorted(set(per_ratio) - set(defined))
    if undefined:
        note += f"; undefined at {', '.join(ratio_text(r) for r in undefined)}"
    return Ours(value, check, note, pivot=0.0 if reduction else 1.0)


def _ver_efficiency(study: StudyLookup, row: pd.Series, *, pick: Callable[[Sequence[float]], float], workload: str) -> Ours:
    """Figure 2: the energy efficiency of Ver_Off and Ver_On over HBM-only; the smaller or larger."""
    wl, ratio = _section2_workload(row, workload), _ratio(row)
    values = {
        p: policy_ratio(study, "samples_per_j", p, "hbm_only", workload=wl, variant="base", ratio=ratio)
        for p in ("ver_off", "ver_on")
    }
    chosen = pick(values.values())
    which = next(p for p, v in values.items() if v == chosen)
    shown = ", ".join(f"{p}: {v:.3g}" for p, v in values.items())
    ceiling = study.value("static_ceiling_vs_hbm", wl, "base", which, ratio) if "static_ceiling_vs_hbm" in study.table else np.nan
    return Ours(
        chosen,
        "vertical tiering less energy-efficient than HBM-only (< 1)",
        f"samples/J(ver) / samples/J(hbm_only), {pick.__name__} of {shown}; {wl}, base, {ratio_text(ratio)}"
        + (f"; ceiling {ceiling:.4g}: the most a tiered memory can gain in our model" if np.isfinite(ceiling) else ""),
        ceiling=ceiling,
    )


def _energy_vs_hor_off(
    study: StudyLookup, row: pd.Series, *, columns: Sequence[str], what: str, reduction: bool, workload: str
) -> Ours:
    """Figure 4: an off-chip energy of Ver_Off over Hor_Off's (or 1 minus that)."""
    wl, ratio = _section2_workload(row, workload), _ratio(row)
    subject = sum(study.value(c, wl, "base", "ver_off", ratio) for c in columns)
    baseline = sum(study.value(c, wl, "base", "hor_off", ratio) for c in columns)
    value = quotient(subject, baseline)
    if not np.isfinite(value):
        raise Unavailable(f"Hor_Off's {what} energy is 0 on {wl} at {ratio_text(ratio)}")
    formula = " + ".join(columns)
    where = f"{wl}, base, {ratio_text(ratio)} (the paper does not name its workload)"
    if reduction:
        return Ours(
            1.0 - value,
            f"Ver_Off spends less {what} energy than Hor_Off (> 0)",
            f"1 - ({formula})(ver_off) / (hor_off); {where}",
            pivot=0.0,
        )
    return Ours(value, f"Ver_Off spends more {what} energy than Hor_Off (> 1)", f"({formula})(ver_off) / (hor_off); {where}")


def _hbm_offchip(study: StudyLookup, row: pd.Series, *, share: bool) -> Ours:
    """Section 2.1: HBM-only's off-chip memory energy as a share of the total, or the accelerator's over it."""
    table = study.table[(study.table["policy"] == "hbm_only") & (study.table["variant"] == "base")]
    if table.empty:
        raise Unavailable("no base HBM-only runs")
    per_workload = table.groupby("workload").first()
    offchip = per_workload["offchip_energy_j"]
    used = ", ".join(per_workload.index)
    if share:
        value = float((offchip / per_workload["energy_j"]).mean())
        return Ours(
            value,
            "the accelerator, not off-chip memory, dominates HBM-only's energy (share < 0.5)",
            f"(tier-to-SRAM + migration + static) / total energy of hbm_only, arithmetic mean over {used}",
            pivot=0.5,
        )
    value = geometric_mean(per_workload["energy_accelerator_j"] / offchip)
    return Ours(
        value,
        "HBM-only's accelerator spends more energy than its off-chip memory (> 1)",
        f"accelerator energy / off-chip memory energy of hbm_only, geometric mean over {used}",
    )


def _constrained_share(study: StudyLookup, row: pd.Series, *, workload: str) -> Ours:
    """Section 2.1: with a small Tier 1 and a suboptimal policy, the off-chip share rises (the paper: 27.6 % to 43.3 %)."""
    wl = _section2_workload(row, workload)
    ratios = study.ratios(wl, "base")
    if not ratios:
        raise Unavailable(f"no base runs of {wl}")
    ratio = ratios[0]

    def offchip_share(policy: str) -> float:
        return study.value("offchip_energy_j", wl, "base", policy, ratio) / study.value("energy_j", wl, "base", policy, ratio)

    shares = {p: offchip_share(p) for p in ("hor_off", "hor_on", "ver_off", "ver_on")}
    baseline = offchip_share("hbm_only")
    policy, value = max(shares.items(), key=lambda item: item[1])
    return Ours(
        value,
        "off-chip memory's share of the energy rises above HBM-only's",
        f"max over Hor/Ver x On/Off of off-chip / total energy at the smallest ratio {ratio_text(ratio)} ({policy}); "
        f"HBM-only's share {baseline:.3g}; {wl}",
        pivot=np.nan,
        agrees=bool(value > baseline),
    )


def _layer_footprint(study: StudyLookup, row: pd.Series) -> Ours:
    """Sections 2.1 and 5.2: the data one layer creates or uses per chip in a forward (``layer_forward_gb``) or backward
    (``layer_backward_gb``) pass, in GB (``tiered.study.layer_footprint_bytes``)."""
    phase = {"layer_forward_gb": "forward", "layer_backward_gb": "backward"}[str(row["metric"])]
    workload = str(row["workload"])
    rows = study.table[(study.table["workload"] == workload) & (study.table["variant"] == "base")]
    column = f"layer_{phase}_bytes"
    if rows.empty or column not in rows.columns:
        raise Unavailable(f"no base runs of {workload} with {column}")
    return Ours(
        float(rows[column].iloc[0]) / 1e9,
        f"one layer's {phase} pass creates or uses about the paper's GB per chip (shown beside it, not judged)",
        f"bytes of every tensor the chip's first block reads or writes in one {phase} pass"
        + (" (its recomputation included)" if phase == "backward" else "")
        + f", {workload}; {LAYOUT_PINS[str(row['claim'])]}",
        pivot=np.nan,
    )


def _not_in_study(reason: str) -> Callable[[StudyLookup, pd.Series], Ours]:
    def rule(study: StudyLookup, row: pd.Series) -> Ours:
        raise NotInStudy(reason)

    return rule


def _rules(section2_workload: str) -> dict[str, Callable[[StudyLookup, pd.Series], Ours]]:
    s2 = {"workload": section2_workload}
    rules: dict[str, Callable[[StudyLookup, pd.Series], Ours]] = {
        "fig9_migration_avg": _migration_reduction,
        "fig9_migration_bert": _migration_reduction,
        "fig8_energy_efficiency_avg": _efficiency_vs,
        "fig10_palm_energy_efficiency_100to1": _efficiency_vs,
        "fig10_palm_energy_efficiency_5to1": _efficiency_vs,
        "fig11_palm_migration_autotm": partial(_migration_vs_tm_training, subject="autotm"),
        "fig11_palm_migration_deeptm": partial(_migration_vs_tm_training, subject="deeptm"),
        "fig11_palm_migration_sentinel_approx": partial(_migration_vs_tm_training, subject="sentinel"),
        "fig12_throughput_vs_prior_min": partial(_throughput_vs_prior, pick=min),
        "fig12_throughput_vs_prior_max": partial(_throughput_vs_prior, pick=max),
        "fig13_double_batch_energy_efficiency": _efficiency_vs,
        "fig13_double_batch_prior_vs_hbm_min": partial(_prior_reduction_vs_hbm, pick=min),
        "fig13_double_batch_prior_vs_hbm_max": partial(_prior_reduction_vs_hbm, pick=max),
        "fig14_tm_training_off": partial(_efficiency_vs, subject="tm_training_off"),
        "fig14_tm_training_vs_ideal": partial(_efficiency_vs, reduction=True),
        "fig15_half_tier2_bw_energy_efficiency": _efficiency_vs,
        "fig15_half_tier2_bw_vs_hbm": partial(_efficiency_vs, reduction=True),
        "fig15_half_tier2_bw_palm": _efficiency_vs,
        "fig3_migration_hor_on_vs_hor_off_max": partial(
            _up_to_over_ratios,
            column="migrated_bytes",
            subject="hor_on",
            baseline="hor_off",
            reduction=False,
            check="Hor_On migrates more than Hor_Off (> 1)",
            **s2,
        ),
        "fig2_hor_on_vs_hor_off_max": partial(
            _up_to_over_ratios,
            column="samples_per_j",
            subject="hor_on",
            baseline="hor_off",
            reduction=True,
            check="Hor_On less energy-efficient than Hor_Off (> 0)",
            **s2,
        ),
        "fig2_ver_efficiency_min": partial(_ver_efficiency, pick=min, **s2),
        "fig2_ver_efficiency_max": partial(_ver_efficiency, pick=max, **s2),
        "fig4_ver_off_tier_migration_energy": partial(
            _energy_vs_hor_off, columns=["energy_migration_j"], what="tier-to-tier migration", reduction=False, **s2
        ),
        "fig4_ver_off_memory_energy": partial(
            _energy_vs_hor_off, columns=list(OFFCHIP_ENERGY), what="off-chip memory", reduction=False, **s2
        ),
        "fig4_ver_off_offchip_to_sram_energy": partial(
            _energy_vs_hor_off, columns=["energy_tier_sram_j"], what="tier-to-SRAM", reduction=True, **s2
        ),
        "sec2_offchip_energy_share_hbm_only": partial(_hbm_offchip, share=True),
        "sec2_accelerator_vs_offchip_energy_hbm_only": partial(_hbm_offchip, share=False),
        "sec2_offchip_energy_share_constrained_min": partial(_constrained_share, **s2),
        "intro_tier_migration_energy_vs_ideal_max": _not_in_study(
            "its subject is an unnamed 'two-tier memory system' (no policy of the study), and the ideal policy's "
            "migration energy is 0 wherever Tier 1 holds everything, so 'up to' has no finite maximum"
        ),
        "abstract_energy_efficiency_vs_prior_max": _best_vs_prior,
        "intro_energy_efficiency_vs_hbm": _efficiency_vs,
        "palm_layer_footprint": _layer_footprint,
    }
    for system in ("hor_off", "hor_on", "ver_off", "ver_on"):
        rules[f"fig3_migration_{system}"] = partial(_migration_vs_data, subject=system, **s2)
    for vertical in ("ver_off", "ver_on"):
        for horizontal in ("hor_off", "hor_on"):
            rules[f"fig3_{vertical}_vs_{horizontal}"] = partial(_migration_vs_policy, subject=vertical, **s2)
    for ratio in ("5to1", "25to1", "100to1"):
        rules[f"fig11_palm_migration_sentinel_{ratio}"] = partial(_migration_vs_tm_training, subject="sentinel")
    rules["fig14_tm_training_off_gain"] = partial(_efficiency_vs, subject="tm_training_off", gain=True)
    return rules


LAYOUT_PINS: Mapping[str, str] = {
    "palm_layer_footprint": "PaLM's 12 model-parallel chips run as pipeline stages because this statement puts a "
    "whole layer on a chip (traincost.models.tm_training_workloads): the layout was chosen by it, so the row is "
    "'calibrated', shown and not counted; as 12 tensor-parallel chips the same layer is 2.8 and 5.5 GB",
}
"""Rows a workload's layout was chosen by (as a constant fitted to them): ``calibrated``, never counted."""

SUPERSEDED: Mapping[str, str] = {
    **{
        f"fig3_migration_{system}": "superseded by fig3_ver_*_vs_hor_*: the paper's claim is that vertical tiering migrates "
        "more than horizontal ('regardless of the data placement policy'), not that each migrates more than the data"
        for system in ("hor_off", "hor_on", "ver_off", "ver_on")
    },
    "fig11_palm_migration_sentinel_approx": "superseded by fig11_palm_migration_sentinel_{5to1,25to1,100to1}: 'almost 2x "
    "... regardless of the Tier 1 size' is read at each Tier 1 size, not as a mean over them",
    "fig14_tm_training_off": "superseded by fig14_tm_training_off_gain: the gap (1.05x - 1) is judged on the scale of "
    "fig14_tm_training_vs_ideal's (4 %), so that one gap is not judged on two scales",
}
"""Rows a corrected row replaces, and why: kept in the table as ``superseded`` (never counted) so the change is visible."""


def _ceiling_decides(ours: Ours, paper_value: float, claims_below: bool | None = None) -> str:
    """Why a claim that the subject is less energy-efficient than HBM-only is decided by our model's ceiling, or "".

    ``claims_below``: whether the row claims so; read from the paper's number (below 1, or a reduction above 0) if None.
    """
    if not np.isfinite(ours.ceiling) or ours.ceiling - 1.0 >= CEILING_ROOM:
        return ""
    if claims_below is None:
        claims_below = paper_value < 1.0 if ours.pivot == 1.0 else paper_value > 0.0
    if not claims_below:
        return ""
    return (
        f"decided by our model, not by the policy: no tiered memory can reach more than {ours.ceiling:.4g}x HBM-only's "
        f"energy efficiency in it, so 'less efficient than HBM-only' could fail only in the {ours.ceiling - 1.0:.2%} "
        f"above (less than {CEILING_ROOM:.0%}; informational, not counted)"
    )


def compare_with_paper(
    study: pd.DataFrame,
    paper: pd.DataFrame,
    *,
    claims: pd.DataFrame | None = None,
    section2_workload: str = SECTION2_WORKLOAD,
    calibrated: Collection[str] = (),
) -> pd.DataFrame:
    """One row per number of ``paper`` and per sentence of ``claims``: the paper's value, ours, what is checked and the
    verdict.

    Args:
        study: the tiered study table (``traincost.tiered.study``), every workload and variant in one.
        paper: ``data/paper/tm_training.csv``.
        claims: ``data/paper/tm_training_claims.csv`` (:func:`traincost.analysis.paper_claims.read_paper_claims`): each
            sentence checked by a rule of :mod:`traincost.analysis.tiered_sentences` gets its row (``paper`` empty, the
            sentence in ``note``), each one no row checks an ``unchecked`` row with the reason.
        section2_workload: the workload section 2.1's numbers (Figures 2-4) are compared on.
        calibrated: claims a constant was fitted to (``traincost calibrate``): their rows are ``calibrated``,
            shown and never counted.

    Returns:
        Columns ``claim``, ``kind``, ``figure``, ``workload``, ``ratio``, ``metric``, ``paper``, ``ours``, ``pivot``,
        ``ceiling``, ``check``, ``agrees``, ``note`` (how ours was computed, or why it could not be), then ``tie``,
        ``magnitude`` and ``verdict`` (:func:`traincost.analysis.verdicts.judge`).

    Raises:
        ConfigError: ``paper`` or ``study`` lacks a required column, or a claim's rows name no rule.
    """
    for table, columns, what in ((paper, PAPER_COLUMNS, "paper numbers"), (study, STUDY_COLUMNS, "tiered study")):
        missing = [c for c in columns if c not in table.columns]
        if missing:
            raise ConfigError(f"{what}: missing columns {missing} (expected {list(columns)})")
    lookup = StudyLookup(study)
    rules = _rules(section2_workload)
    rows = []
    for _, reported in paper.iterrows():
        paper_value = float(reported["value"])
        out = {
            "claim": reported["claim"],
            "kind": _kind(str(reported["claim"]), calibrated),
            "figure": reported["figure"],
            "workload": "" if pd.isna(reported["workload"]) else reported["workload"],
            "ratio": float(reported["ratio"]) if pd.notna(reported["ratio"]) else np.nan,
            "metric": reported["metric"],
            "paper": paper_value,
        }
        rule = rules.get(str(reported["claim"]))
        rows.append(_judged_row(out, lambda rule=rule, reported=reported: _number_rule(rule, lookup, reported), paper_value))
    if claims is not None:
        rows += _sentence_rows(lookup, claims, section2_workload, known=set(rules))
    frame = pd.DataFrame(rows, columns=list(_OUTPUT))
    frame["agrees"] = frame["agrees"].astype("boolean")
    return judge(frame, ours="ours", paper="paper", agrees="agrees")


def set_aside_by_accounting(compare: pd.DataFrame, alternative: pd.DataFrame) -> pd.DataFrame:
    """``compare`` with each counted claim whose verdict differs in ``alternative`` made ``informational``.

    ``alternative`` is the same comparison on the study priced with each byte stored in Tier 2 read once
    (``tiered.study.tier2_reads_once``). Section 5.1's simulator counts SCALE-Sim's "number of memory accesses", and
    Algorithm 3 charges a Tier 2 share one read, "(1 - r) x D x T2ReadEnergy"; the paper says neither how its simulator
    prices a re-read of flash data nor whether the SSD's DRAM buffer serves it. A verdict that turns on that choice is
    shown, with the other one in ``note``, and not counted.

    Raises:
        ConfigError: the two comparisons are not of the same rows.
    """
    if list(compare["claim"]) != list(alternative["claim"]) or list(compare["metric"]) != list(alternative["metric"]):
        raise ConfigError("the comparison priced once per store has other rows than the comparison priced per access")
    out = compare.copy()
    turns = (out["kind"] == "claim") & (out["verdict"].astype(str) != alternative["verdict"].astype(str))
    for i in np.flatnonzero(turns.to_numpy()):
        other, row = alternative.iloc[i], out.index[i]
        out.loc[row, "note"] = _joined(
            {"note": out["note"].iloc[i]},
            f"the verdict turns on how re-reads of Tier 2 are priced, which the paper does not state: per access "
            f"{out['verdict'].iloc[i]}, each stored byte read once {other['verdict']} (ours {other['ours']:.4g}); "
            "informational, not counted",
        )
        out.loc[row, ["kind", "verdict"]] = ["informational", ""]
        out.loc[row, "tie"] = pd.NA
    return out


def _number_rule(rule: Callable[[StudyLookup, pd.Series], Ours] | None, lookup: StudyLookup, reported: pd.Series) -> Ours:
    if rule is None:
        raise Unavailable(f"no rule computes claim {reported['claim']!r} from the study")
    return rule(lookup, reported)


def _judged_row(out: dict, compute: Callable[[], Ours], paper_value: float, *, claims_below: bool | None = None) -> dict:
    """``out`` completed with ours, the check and the note, or the reason ours could not be computed.

    ``claims_below``: whether the row claims a policy is less efficient than HBM-only (read from the paper's number
    where None), so that a ceiling that decides it makes the row ``informational``.
    """
    try:
        ours = compute()
    except NotInStudy as reason:
        kind = "unchecked" if out["kind"] == "claim" else out["kind"]
        unanswerable = {"kind": kind, "ours": np.nan, "pivot": np.nan, "check": str(reason), "agrees": pd.NA}
        return out | unanswerable | {"note": out.get("note", "")}
    except Unavailable as reason:
        return out | {
            "ours": np.nan,
            "pivot": np.nan,
            "check": "",
            "agrees": pd.NA,
            "note": _joined(out, f"not computed: {reason}"),
        }
    if np.isnan(ours.value):
        undefined = {"ours": np.nan, "pivot": ours.pivot, "check": ours.check, "agrees": pd.NA}
        return out | undefined | {"note": _joined(out, f"undefined: {ours.note}")}
    note = ours.note
    if np.isfinite(ours.ceiling) and ours.pivot == 1.0 and ours.ceiling < paper_value:
        note += f"; the paper's {paper_value:g} is above that ceiling: unreachable with the stated constants"
    decided = _ceiling_decides(ours, paper_value, claims_below)
    if decided and out["kind"] == "claim":
        out = out | {"kind": "informational"}
        note += f"; {decided}"
    check = ours.check
    if out["kind"] == "superseded":
        check = f"{check}; {SUPERSEDED[str(out['claim'])]}"
    judged = {"ours": float(ours.value), "pivot": ours.pivot, "ceiling": ours.ceiling, "check": check}
    return out | judged | {"agrees": ours.agrees, "note": _joined(out, note)}


def _joined(out: dict, note: str) -> str:
    """The note, after the paper's sentence where the row checks one."""
    return f"{out['note']}; {note}" if out.get("note") else note


def _sentence_rows(lookup: StudyLookup, claims: pd.DataFrame, section2_workload: str, *, known: Collection[str]) -> list[dict]:
    """A row per sentence a rule of :mod:`traincost.analysis.tiered_sentences` checks, and per unchecked sentence."""
    sentences = sentence_rules()
    rows = []
    for line, names in claim_lines(claims, known=set(sentences) | set(known), paper="TM-Training"):
        claim_id = line["id"]
        base = {
            "claim": claim_id,
            "figure": line["figure"],
            "workload": "",
            "ratio": np.nan,
            "metric": "sentence",
            "paper": np.nan,
            "note": said(line["sentence"]),
        }
        if not names:
            rows.append(
                base | {"kind": "unchecked", "ours": np.nan, "pivot": np.nan, "check": line["unchecked"], "agrees": pd.NA}
            )
        elif claim_id in names and claim_id in sentences:
            rule = sentences[claim_id]
            rows.append(
                _judged_row(
                    base | {"kind": "claim"}, lambda rule=rule: rule(lookup, section2_workload), np.nan, claims_below=True
                )
            )
    return rows


def _kind(claim: str, calibrated: Collection[str]) -> str:
    if claim in calibrated or claim in LAYOUT_PINS:
        return "calibrated"
    return "superseded" if claim in SUPERSEDED else "claim"


def _ordering(spj: pd.Series, rtol: float) -> str:
    """Policies by samples/J, best first: ``A > B = C`` (``=`` within ``rtol``)."""
    ranked = spj.sort_values(ascending=False, kind="stable")
    text = policy_name(ranked.index[0])
    for (_, better), (policy, value) in zip(ranked.items(), list(ranked.items())[1:], strict=False):
        text += f" {'=' if np.isclose(value, better, rtol=rtol, atol=0.0) else '>'} {policy_name(policy)}"
    return text


def ordering_agreement(study: pd.DataFrame, *, rtol: float = 1e-6) -> pd.DataFrame:
    """Per (workload, variant, ratio): whether TM-Training is more energy-efficient than Sentinel, AutoTM and DeepTM.

    Args:
        study: the tiered study table.
        rtol: samples/J within this relative difference count as a tie (not "above").

    Returns:
        Columns ``workload``, ``variant``, ``ratio``, ``vs_<prior>`` (TM-Training's samples/J over the
        prior work's) and ``above_<prior>`` for each prior work, ``ordering`` (the policies by samples/J,
        best first), ``agrees`` (TM-Training above every prior work run; NA where all are tied, e.g.
        nothing migrates) and ``note``.

    Raises:
        ConfigError: ``study`` lacks a required column.
    """
    missing = [c for c in ("workload", "variant", "policy", "ratio", "samples_per_j") if c not in study.columns]
    if missing:
        raise ConfigError(f"tiered study: missing columns {missing}")
    rows = []
    for (workload, variant, ratio), runs in study.groupby(["workload", "variant", "ratio"], sort=True):
        spj = runs.drop_duplicates("policy").set_index("policy")["samples_per_j"].astype(float)
        if "tm_training" not in spj.index:
            continue
        ours = spj["tm_training"]
        prior = spj.reindex(list(PRIOR_WORK)).dropna()
        row: dict[str, object] = {"workload": workload, "variant": variant, "ratio": float(ratio)}
        for name in PRIOR_WORK:
            if name in prior.index:
                row[f"vs_{name}"] = float(ours / prior[name])
                row[f"above_{name}"] = bool(ours > prior[name] * (1 + rtol))
            else:
                row[f"vs_{name}"] = np.nan
                row[f"above_{name}"] = pd.NA
        row["ordering"] = _ordering(spj.reindex(["tm_training", *prior.index]), rtol)
        if prior.empty:
            row["agrees"], row["note"] = pd.NA, "no prior work run"
        elif np.allclose(prior.to_numpy(), ours, rtol=rtol, atol=0.0):
            row["agrees"], row["note"] = pd.NA, "all tied (within rtol): no ordering to compare"
        else:
            row["agrees"] = bool(all(row[f"above_{p}"] is True for p in prior.index))
            missed = [p for p in PRIOR_WORK if row[f"above_{p}"] is False]
            row["note"] = "" if not missed else f"not above {', '.join(policy_name(p) for p in missed)}"
            if len(prior) < len(PRIOR_WORK):
                row["note"] = f"{row['note']}; only {', '.join(prior.index)} run".lstrip("; ")
        rows.append(row)
    columns = [
        "workload",
        "variant",
        "ratio",
        *[f"vs_{p}" for p in PRIOR_WORK],
        *[f"above_{p}" for p in PRIOR_WORK],
        "ordering",
        "agrees",
        "note",
    ]
    frame = pd.DataFrame(rows, columns=columns)
    for column in [*[f"above_{p}" for p in PRIOR_WORK], "agrees"]:
        frame[column] = frame[column].astype("boolean")
    return frame
