"""TM-Training's claims in words (``data/paper/tm_training_claims.csv``) as checks on the study table.

The paper's numbers are checked in :mod:`traincost.analysis.tiered_compare`; this module checks its sentences: an
ordering ("TM-Training generates less data traffic than prior work in all results"), a trend over the Tier 1 : model
ratio ("as the Tier 1 size decreases, the gap becomes wider") or a closeness ("nearly equivalent to the baseline").
Each rule names what it compares and fixes its reading before the results are read:

- "in all results", "for all configurations", "regardless of": at every run it names (workload or ratio), the worst
  run is the value shown; a difference is claimed, so the value is judged against a pivot of 1 with the tie tolerance.
- "as the Tier 1 size decreases, X grows": from the largest ratio run to the smallest, each step moves X the claimed
  way or stays within the tie tolerance, and the smallest ratio's X over the largest's lies beyond it (the value
  shown: the weakest policy's).
- "similar", "nearly equivalent", "negligible", "relatively small": within
  :data:`traincost.analysis.verdicts.CLOSE_TOLERANCE` of the reference.
- Section 2.1's trends over the ratio (Figures 2-4, 10, 11) are read on the workload the motivation figures are drawn
  for, the others (Figures 8, 9, 12-15) at section 5.2's 25:1 over the five workloads, as the paper's figures show them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from traincost.analysis.summary_stats import geometric_mean
from traincost.analysis.tiered_lookup import PRIOR_WORK, Ours, StudyLookup, Unavailable, policy_name, ratio_text
from traincost.analysis.verdicts import CLOSE_TOLERANCE, TIE_TOLERANCE

__all__ = ["MAIN_RATIO", "sentence_rules"]

MAIN_RATIO = 25.0
"""Section 5.2's Tier 1 : model ratio (Tier 1 = 12.5 % of the memory)."""
_SECTION2 = ("hor_off", "hor_on", "ver_off", "ver_on")
_ONLINE_SUBOPTIMAL = ("hor_on", "ver_off", "ver_on")
_SHOWN = 6
"""Values listed in a note before the rest are counted."""

Rule = Callable[[StudyLookup, str], Ours]
"""A sentence's check: the study, and the workload section 2.1's figures are drawn for."""


def _listed(values: Mapping[str, float]) -> str:
    items = [f"{k}: {v:.4g}" for k, v in values.items()]
    more = f" (+{len(items) - _SHOWN} more)" if len(items) > _SHOWN else ""
    return ", ".join(items[:_SHOWN]) + more


def _finite(values: Mapping[str, float], what: str) -> dict[str, float]:
    kept = {k: float(v) for k, v in values.items() if not np.isnan(v)}
    if not kept:
        raise Unavailable(f"{what}: undefined at every run (zero denominators)")
    return kept


def _every(values: Mapping[str, float], check: str, where: str, *, above: bool) -> Ours:
    """Every value above 1 (or below): the worst is shown, judged against the pivot 1 with the tie tolerance."""
    kept = _finite(values, check)
    worst = (min if above else max)(kept, key=kept.get)
    side, extreme = ("> 1", "lowest") if above else ("< 1", "highest")
    return Ours(
        kept[worst],
        check + f" ({side} at every run; the {extreme} shown)",
        f"{where}; {extreme} at {worst}; {_listed(kept)}",
        agrees=kept[worst] > 1.0 if above else kept[worst] < 1.0,
    )


def _all_above(values: Mapping[str, float], check: str, where: str) -> Ours:
    return _every(values, check, where, above=True)


def _all_below(values: Mapping[str, float], check: str, where: str) -> Ours:
    return _every(values, check, where, above=False)


def _all_close(values: Mapping[str, float], check: str, where: str) -> Ours:
    """Every value within the closeness tolerance of 1: the farthest is shown."""
    kept = _finite(values, check)
    worst = max(kept, key=lambda k: abs(kept[k] - 1.0))
    return Ours(
        kept[worst],
        check + f" (within {CLOSE_TOLERANCE:.0%} of 1 at every run; the farthest shown)",
        f"{where}; farthest at {worst}; {_listed(kept)}",
        pivot=np.nan,
        agrees=abs(kept[worst] - 1.0) <= CLOSE_TOLERANCE,
    )


def _trend(series: Mapping[str, Mapping[float, float]], *, rising: bool, check: str, where: str) -> Ours:
    """Per policy, a value against the ratio: it grows (``rising``) or falls as the Tier 1 size decreases.

    Each step from a larger ratio to the next smaller one moves the claimed way or stays within the tie tolerance, and
    the smallest ratio's value over the largest's lies beyond it; the weakest policy's end-to-end quotient is shown.
    """
    ends, steps_hold, shown = {}, True, []
    for policy, by_ratio in series.items():
        points = [(r, float(v)) for r, v in sorted(by_ratio.items(), reverse=True) if np.isfinite(v)]
        if len(points) < 2:
            raise Unavailable(f"{policy}: fewer than two ratios with a value")
        values = [v for _, v in points]
        for before, after in zip(values, values[1:], strict=False):
            moved = _relative_change(before, after)
            steps_hold &= moved >= -TIE_TOLERANCE if rising else moved <= TIE_TOLERANCE
        ends[policy] = _growth(values[0], values[-1])
        shown.append(f"{policy_name(policy)} " + " > ".join(f"{ratio_text(r)} {v:.4g}" for r, v in points))
    worst = min(ends, key=ends.get) if rising else max(ends, key=ends.get)
    end_holds = ends[worst] > 1.0 if rising else ends[worst] < 1.0
    direction = "grows" if rising else "falls"
    return Ours(
        ends[worst],
        f"{check}: {direction} as the Tier 1 size decreases (every step the claimed way or within the tie tolerance; "
        "value: the smallest ratio's over the largest's, the weakest policy)",
        f"{where}; {'; '.join(shown)}",
        agrees=bool(steps_hold and end_holds),
    )


def _relative_change(before: float, after: float) -> float:
    """(after - before) / before; from 0, an infinite rise (or none)."""
    if before:
        return (after - before) / abs(before)
    return 0.0 if after == before else float(np.sign(after - before)) * np.inf


def _growth(first: float, last: float) -> float:
    """last / first; from 0 to more, infinite; from 0 to 0, 1 (no change)."""
    if first:
        return last / first
    return 1.0 if last == first else float(np.sign(last)) * np.inf


def _ratios(study: StudyLookup, workload: str, variant: str) -> list[float]:
    """The ratios ``workload`` ran at in ``variant``, smallest first; Unavailable if none (the config does not run it)."""
    run = study.ratios(workload, variant)
    if not run:
        raise Unavailable(f"no {variant} run of {workload}")
    return run


def _value(study: StudyLookup, column: str, policy: str, workload: str, ratio: float, *, variant: str = "base") -> float:
    return study.value(column, workload, variant, policy, ratio)


def _over(study: StudyLookup, column: str, a: str, b: str, workload: str, *, ratio: float, variant: str = "base") -> float:
    """``column`` of policy ``a`` over ``b``'s at one run; NaN where ``b``'s is not positive."""
    num, den = (
        _value(study, column, a, workload, ratio, variant=variant),
        _value(study, column, b, workload, ratio, variant=variant),
    )
    return num / den if den > 0 else np.nan


def _same_or_ratio(study: StudyLookup, column: str, a: str, b: str, workload: str, *, ratio: float) -> float:
    """``a``'s ``column`` over ``b``'s, 1 where both are 0 (the same amount: none)."""
    num, den = _value(study, column, a, workload, ratio), _value(study, column, b, workload, ratio)
    return 1.0 if num == den == 0 else (num / den if den > 0 else np.inf)


def _geomean_over_workloads(study: StudyLookup, variant: str, ratio: float, per: Callable[[str], float]) -> float:
    values = [per(w) for w in study.workloads(variant, ratio)]
    kept = [v for v in values if np.isfinite(v) and v > 0]
    if not kept:
        raise Unavailable(f"no {variant} run at {ratio_text(ratio)} with a defined value")
    return geometric_mean(kept)


def _main(variant: str = "base") -> str:
    return f"{variant}, {ratio_text(MAIN_RATIO)}"


def _per_workload_vs_prior(study: StudyLookup, column: str, subject: str, variant: str, *, inverse: bool = False) -> dict:
    """``column`` of ``subject`` over each prior work's (or each prior's over the subject's), per workload at 25:1."""
    out = {}
    for workload in study.workloads(variant, MAIN_RATIO):
        for prior in PRIOR_WORK:
            a, b = (prior, subject) if inverse else (subject, prior)
            out[f"{workload} vs {prior}"] = _over(study, column, a, b, workload, ratio=MAIN_RATIO, variant=variant)
    return out


def _spread(
    study: StudyLookup, column: str, workload: str, ratio: float, policies: Sequence[str], *, variant: str = "base"
) -> float:
    values = [_value(study, column, p, workload, ratio, variant=variant) for p in policies]
    low = min(values)
    return max(values) / low if low > 0 else np.nan


def _gap(study: StudyLookup, workload: str, variant: str) -> float:
    """TM-Training's samples/J over the prior work's, geometric mean over the three, at 25:1."""
    return geometric_mean(
        [_over(study, "samples_per_j", "tm_training", p, workload, ratio=MAIN_RATIO, variant=variant) for p in PRIOR_WORK]
    )


def _extreme_on(values: Mapping[str, float], workload: str, check: str, where: str, *, largest: bool) -> Ours:
    """``workload``'s value over the largest (or smallest) of the other workloads': above (below) 1 when it is that."""
    kept = _finite(values, check)
    if workload not in kept or len(kept) < 2:
        raise Unavailable(f"{check}: needs {workload} and another workload")
    others = (max if largest else min)(v for k, v in kept.items() if k != workload)
    value = kept[workload] / others if others > 0 else np.inf
    which, side = ("largest", "> 1") if largest else ("smallest", "< 1")
    return Ours(
        value,
        check + f" ({workload}'s over the {which} of the others' {side})",
        f"{where}; {_listed(kept)}",
        agrees=value > 1.0 if largest else value < 1.0,
    )


def _spearman(x: Sequence[float], y: Sequence[float]) -> float:
    frame = pd.DataFrame({"x": x, "y": y}).dropna()
    return float(frame["x"].rank().corr(frame["y"].rank())) if len(frame) > 2 else np.nan


# ---- Section 1 (introduction) and section 2.1 (Figures 2-4): the four tiered systems over the ratio ---------------


def _section2_series(study: StudyLookup, workload: str, column: str, policies: Sequence[str]) -> dict:
    ratios = _ratios(study, workload, "base")
    return {p: {r: _value(study, column, p, workload, r) for r in ratios} for p in policies}


def _section2_trend(column: str, policies: Sequence[str], *, rising: bool, what: str) -> Rule:
    def rule(study: StudyLookup, workload: str) -> Ours:
        return _trend(_section2_series(study, workload, column, policies), rising=rising, check=what, where=f"{workload}, base")

    return rule


def _efficiency_vs_hbm_every_ratio(
    policies: Sequence[str], *, above: bool, ratios: Callable[[float], bool] | None = None
) -> Rule:
    def rule(study: StudyLookup, workload: str) -> Ours:
        run = [r for r in _ratios(study, workload, "base") if ratios is None or ratios(r)]
        if not run:
            raise Unavailable(f"no base ratio of {workload} in the range the sentence names")
        values = {
            f"{p} {ratio_text(r)}": _over(study, "samples_per_j", p, "hbm_only", workload, ratio=r) for p in policies for r in run
        }
        names = ", ".join(policy_name(p) for p in policies)
        check = f"energy efficiency of {names} over HBM-only"
        picked = (_all_above if above else _all_below)(values, check, f"{workload}, base")
        ceiling = max(_value(study, "static_ceiling_vs_hbm", p, workload, r) for p in policies for r in run)
        return Ours(picked.value, picked.check, picked.note, agrees=picked.agrees, ceiling=ceiling)

    return rule


def _hor_off_crossover(study: StudyLookup, workload: str) -> Ours:
    """Figure 2: above 25:1 Hor_Off beats HBM-only's energy efficiency, every other system stays below."""
    above = [r for r in _ratios(study, workload, "base") if r > MAIN_RATIO]
    if not above:
        raise Unavailable(f"no base ratio of {workload} above 25:1")
    hor_off = {ratio_text(r): _over(study, "samples_per_j", "hor_off", "hbm_only", workload, ratio=r) for r in above}
    others = {
        f"{p} {ratio_text(r)}": _over(study, "samples_per_j", p, "hbm_only", workload, ratio=r)
        for p in _ONLINE_SUBOPTIMAL
        for r in above
    }
    lowest = min(hor_off.values())
    return Ours(
        lowest,
        "above 25:1, Hor_Off more energy-efficient than HBM-only (> 1; the lowest shown) and Hor_On, Ver_Off, Ver_On less",
        f"{workload}, base; Hor_Off {_listed(hor_off)}; others {_listed(others)}",
        agrees=lowest > 1.0 and max(others.values()) < 1.0,
    )


def _horizontal_above_vertical(study: StudyLookup, workload: str) -> Ours:
    values = {}
    for r in _ratios(study, workload, "base"):
        horizontal = min(_value(study, "samples_per_j", p, workload, r) for p in ("hor_off", "hor_on"))
        vertical = max(_value(study, "samples_per_j", p, workload, r) for p in ("ver_off", "ver_on"))
        values[ratio_text(r)] = horizontal / vertical if vertical > 0 else np.nan
    return _all_above(
        values, "the less efficient horizontal system over the more efficient vertical one (samples/J)", f"{workload}, base"
    )


def _cause_of_falling_efficiency(study: StudyLookup, workload: str) -> Ours:
    """Figure 2: from the largest ratio to the smallest, off-chip energy per sample rises and throughput falls."""
    ratios = _ratios(study, workload, "base")
    if len(ratios) < 2:
        raise Unavailable(f"fewer than two base ratios of {workload}")
    small, large = ratios[0], ratios[-1]
    energy, throughput = {}, {}
    for p in _ONLINE_SUBOPTIMAL:
        per_sample = [
            _value(study, "offchip_energy_j", p, workload, r)
            / _value(study, "samples_per_s", p, workload, r)
            / _value(study, "iteration_s", p, workload, r)
            for r in (small, large)
        ]
        energy[p] = per_sample[0] / per_sample[1]
        throughput[p] = _value(study, "samples_per_s", p, workload, small) / _value(study, "samples_per_s", p, workload, large)
    lowest = min(energy.values())
    return Ours(
        lowest,
        f"from {ratio_text(large)} to {ratio_text(small)}, off-chip energy per sample rises (> 1; the lowest shown) and "
        "samples/s falls, for Hor_On, Ver_Off, Ver_On",
        f"{workload}, base; energy per sample {_listed(energy)}; samples/s {_listed(throughput)}",
        agrees=lowest > 1.0 and max(throughput.values()) < 1.0,
    )


def _more_migration_and_stalls(study: StudyLookup, workload: str) -> Ours:
    migration = _trend(
        _section2_series(study, workload, "migrated_bytes", _ONLINE_SUBOPTIMAL), rising=True, check="migrated bytes", where=""
    )
    stalls = _trend(
        _section2_series(study, workload, "stall_s", _ONLINE_SUBOPTIMAL), rising=True, check="stall seconds", where=""
    )
    return Ours(
        migration.value,
        migration.check + "; and so do the stall seconds",
        f"{workload}, base; migrated: {migration.note.lstrip('; ')}; stalls: {stalls.note.lstrip('; ')} (stalls' weakest "
        f"end-to-end {stalls.value:.4g})",
        agrees=bool(migration.agrees and stalls.agrees),
    )


def _migration_energy_correlation(study: StudyLookup, workload: str) -> Ours:
    table = study.table[(study.table["workload"] == workload) & (study.table["variant"] == "base")]
    runs = table[table["policy"].isin(_SECTION2)]
    rho = _spearman(runs["migrated_bytes"].tolist(), runs["energy_j"].tolist())
    return Ours(
        rho,
        "Spearman correlation of migrated bytes with energy over Hor/Ver x On/Off at every ratio (> 0)",
        f"{workload}, base, {len(runs)} runs",
        pivot=0.0,
        agrees=rho > 0.0,
    )


def _quotient(a: float, b: float) -> float:
    """``a / b``; infinite where only ``b`` is 0, NaN where both are."""
    return a / b if b > 0 else (np.inf if a > 0 else np.nan)


def _vertical_migrates_at_large_tier1(study: StudyLookup, workload: str) -> Ours:
    largest = _ratios(study, workload, "base")[-1]
    vertical = min(_value(study, "migrated_bytes", p, workload, largest) for p in ("ver_off", "ver_on"))
    horizontal = max(_value(study, "migrated_bytes", p, workload, largest) for p in ("hor_off", "hor_on"))
    value = _quotient(vertical, horizontal)
    return Ours(
        value,
        f"at the largest ratio ({ratio_text(largest)}), the vertical systems migrate more than the horizontal ones "
        "(min vertical / max horizontal migrated bytes > 1)",
        f"{workload}, base; vertical {vertical:.4g} B, horizontal {horizontal:.4g} B",
        agrees=vertical > horizontal,
    )


_GB = 1e9


def _evicts_below(study: StudyLookup, workload: str) -> Ours:
    """Figure 3: with Tier 1 below 24 GB, Hor_Off evicts and migrates; at or above, it holds everything."""
    rows = {r: _value(study, "tier1_bytes", "hor_off", workload, r) for r in _ratios(study, workload, "base")}
    small = [r for r, size in rows.items() if size < 24 * _GB]
    large = [r for r, size in rows.items() if size >= 24 * _GB]
    if not small:
        raise Unavailable(f"no base run of {workload} with Tier 1 below 24 GB")
    migrated = {ratio_text(r): _value(study, "migration_vs_data", "hor_off", workload, r) for r in small}
    lowest = min(migrated.values())
    sizes = ", ".join(f"{ratio_text(r)} {s / _GB:.3g} GB" for r, s in rows.items())
    above = (
        "; at or above 24 GB: "
        + _listed({ratio_text(r): _value(study, "migration_vs_data", "hor_off", workload, r) for r in large})
        if large
        else ""
    )
    return Ours(
        lowest,
        "Hor_Off migrates data (migrated bytes / data per iteration > 0, the lowest shown) at every ratio whose Tier 1 is "
        "below 24 GB",
        f"{workload}, base; Tier 1 {sizes}; below 24 GB: {_listed(migrated)}{above}",
        pivot=np.nan,
        agrees=lowest > 0.0,
    )


def _migration_share_largest_vertical(study: StudyLookup, workload: str) -> Ours:
    smallest = _ratios(study, workload, "base")[0]
    share = {p: _value(study, "migration_energy_share", p, workload, smallest) for p in _SECTION2}
    vertical, horizontal = min(share["ver_off"], share["ver_on"]), max(share["hor_off"], share["hor_on"])
    value = _quotient(vertical, horizontal)
    return Ours(
        value,
        f"at the smallest ratio ({ratio_text(smallest)}), migration's share of the off-chip energy is larger for both "
        "vertical systems than for both horizontal ones (min vertical / max horizontal > 1)",
        f"{workload}, base; {_listed(share)}",
        agrees=value > 1.0,
    )


def _vertical_sram_lower_tier_higher(study: StudyLookup, workload: str) -> Ours:
    sram, offchip = {}, {}
    for r in _ratios(study, workload, "base"):
        for v in ("ver_off", "ver_on"):
            for h in ("hor_off", "hor_on"):
                key = f"{v}/{h} {ratio_text(r)}"
                sram[key] = _over(study, "energy_tier_sram_j", v, h, workload, ratio=r)
                offchip[key] = _over(study, "offchip_energy_j", v, h, workload, ratio=r)
    sram, offchip = _finite(sram, "tier-to-SRAM energy"), _finite(offchip, "off-chip energy")
    highest = max(sram.values())
    return Ours(
        highest,
        "vertical over horizontal tier-to-SRAM energy < 1 (the highest shown) while their off-chip memory energy is > 1, "
        "for every vertical-horizontal pair at every ratio",
        f"{workload}, base; tier-to-SRAM {_listed(sram)}; off-chip {_listed(offchip)}",
        agrees=highest < 1.0 and min(offchip.values()) > 1.0,
    )


def _migration_dominant(study: StudyLookup, workload: str) -> Ours:
    smallest = _ratios(study, workload, "base")[0]
    values = {}
    for p in _ONLINE_SUBOPTIMAL:
        parts = {
            c: _value(study, c, p, workload, smallest) for c in ("energy_tier_sram_j", "energy_migration_j", "energy_static_j")
        }
        rest = max(parts["energy_tier_sram_j"], parts["energy_static_j"])
        values[p] = parts["energy_migration_j"] / rest if rest > 0 else np.inf
    return _all_above(
        values,
        f"at {ratio_text(smallest)}, tier-to-tier migration energy over the larger other off-chip part",
        f"{workload}, base",
    )


def _constrained_over_twice(study: StudyLookup, workload: str) -> Ours:
    smallest = _ratios(study, workload, "base")[0]
    values = {p: _over(study, "offchip_energy_j", p, "hbm_only", workload, ratio=smallest) for p in _ONLINE_SUBOPTIMAL}
    highest = max(values.values())
    return Ours(
        highest,
        f"at {ratio_text(smallest)}, the off-chip memory energy of the costliest of Hor_On, Ver_Off, Ver_On over HBM-only's "
        "(> 2: 'more than twice')",
        f"{workload}, base; {_listed(values)}",
        pivot=2.0,
        agrees=highest > 2.0,
    )


def _tier2_surge(study: StudyLookup, workload: str) -> Ours:
    ratios = _ratios(study, workload, "base")
    values = {}
    for p in _ONLINE_SUBOPTIMAL:
        large = _value(study, "tier2_bytes", p, workload, ratios[-1])
        small = _value(study, "tier2_bytes", p, workload, ratios[0])
        values[p] = _quotient(small, large)
    return _all_above(
        values, f"Tier 2 bytes read and written at {ratio_text(ratios[0])} over at {ratio_text(ratios[-1])}", f"{workload}, base"
    )


def _hotness_suboptimal(study: StudyLookup, workload: str) -> Ours:
    ratios = _ratios(study, workload, "base")
    efficiency = {ratio_text(r): _over(study, "samples_per_j", "hor_on", "hor_off", workload, ratio=r) for r in ratios}
    migration = {ratio_text(r): _over(study, "migrated_bytes", "hor_on", "hor_off", workload, ratio=r) for r in ratios}
    picked = _all_below(
        efficiency, "Hor_On's samples/J over Hor_Off's (the hot/cold policy against the offline optimum)", f"{workload}, base"
    )
    migrates_more = all(v > 1.0 for v in _finite(migration, "migration").values())
    return Ours(
        picked.value,
        picked.check + "; and Hor_On migrates more at every ratio",
        f"{picked.note}; migrated {_listed(migration)}",
        agrees=bool(picked.agrees and migrates_more),
    )


def _vertical_drastic_drop(study: StudyLookup, workload: str) -> Ours:
    ratios = _ratios(study, workload, "base")
    value = _value(study, "samples_per_j", "ver_off", workload, ratios[0]) / _value(
        study, "samples_per_j", "ver_off", workload, ratios[-1]
    )
    return Ours(
        value,
        f"Ver_Off's samples/J at {ratio_text(ratios[0])} over at {ratio_text(ratios[-1])} (< 0.5: 'drastically lowers')",
        f"{workload}, base",
        pivot=np.nan,
        agrees=value < 0.5,
    )


def _energy_overhead_from_migration(study: StudyLookup, workload: str) -> Ours:
    """Sections 1 and 8: integrating tiered memory costs energy, mostly through migration between the tiers."""
    smallest = _ratios(study, workload, "base")[0]
    energy = {p: _over(study, "energy_j", p, "hbm_only", workload, ratio=smallest) for p in _ONLINE_SUBOPTIMAL}
    migration_leads = []
    for p in _ONLINE_SUBOPTIMAL:
        extra = {
            c: _value(study, c, p, workload, smallest) - _value(study, c, "hbm_only", workload, smallest)
            for c in ("energy_tier_sram_j", "energy_migration_j", "energy_static_j", "energy_accelerator_j")
        }
        migration_leads.append(max(extra, key=extra.get) == "energy_migration_j")
    lowest = min(energy.values())
    return Ours(
        lowest,
        f"at {ratio_text(smallest)}, the energy of Hor_On, Ver_Off, Ver_On over HBM-only's (> 1; the lowest shown), the "
        "largest part of each one's extra energy being tier-to-tier migration",
        f"{workload}, base; {_listed(energy)}; migration the largest extra: {sum(migration_leads)} of {len(migration_leads)}",
        agrees=lowest > 1.0 and all(migration_leads),
    )


# ---- Section 1 and 5.2 (Figures 8, 9, 12-15) over the five workloads at 25:1 -------------------------------------


def _vs_hbm_main(policies: Sequence[str], *, mode: str, variant: str = "base") -> Rule:
    """The geometric mean over workloads of each policy's samples/J over HBM-only's, at 25:1: all above, all below,
    or all within the closeness tolerance of 1."""

    def rule(study: StudyLookup, _: str) -> Ours:
        values = {
            p: _geomean_over_workloads(
                study,
                variant,
                MAIN_RATIO,
                lambda w, p=p: _over(study, "samples_per_j", p, "hbm_only", w, ratio=MAIN_RATIO, variant=variant),
            )
            for p in policies
        }
        names = ", ".join(policy_name(p) for p in policies)
        check = f"energy efficiency over HBM-only of {names}, geometric mean over workloads"
        picked = {"above": _all_above, "below": _all_below, "close": _all_close}[mode](values, check, _main(variant))
        ceiling = max(
            _geomean_over_workloads(
                study,
                variant,
                MAIN_RATIO,
                lambda w, p=p: _value(study, "static_ceiling_vs_hbm", p, w, MAIN_RATIO, variant=variant),
            )
            for p in policies
        )
        # the ceiling decides only a claim that the policies are less efficient than HBM-only
        return Ours(
            picked.value,
            picked.check,
            picked.note + f"; ceiling {ceiling:.4g}: the most a tiered memory can gain in our model",
            pivot=picked.pivot,
            agrees=picked.agrees,
            ceiling=ceiling if mode == "below" else np.nan,
        )

    return rule


def _better_than_hbm_and_prior(study: StudyLookup, _: str) -> Ours:
    values = {
        b: _geomean_over_workloads(
            study, "base", MAIN_RATIO, lambda w, b=b: _over(study, "samples_per_j", "tm_training", b, w, ratio=MAIN_RATIO)
        )
        for b in ("hbm_only", *PRIOR_WORK)
    }
    return _all_above(
        values, "TM-Training's samples/J over HBM-only's and each prior work's, geometric mean over workloads", _main()
    )


def _only_tm_above_hbm(study: StudyLookup, workload: str) -> Ours:
    tm = _vs_hbm_main(("tm_training",), mode="above")(study, workload)
    prior = _vs_hbm_main(PRIOR_WORK, mode="below")(study, workload)
    return Ours(
        tm.value,
        "TM-Training more energy-efficient than HBM-only (> 1, geometric mean over workloads) and every prior work less (< 1)",
        f"{tm.note}; prior work: {prior.note}",
        agrees=bool(tm.agrees and prior.agrees),
    )


def _tm_vs_prior_every_workload(column: str, *, above: bool, variant: str = "base", subject: str = "tm_training") -> Rule:
    def rule(study: StudyLookup, _: str) -> Ours:
        values = _per_workload_vs_prior(study, column, subject, variant)
        what = "samples/J" if column == "samples_per_j" else "migrated bytes"
        return (_all_above if above else _all_below)(
            values, f"{policy_name(subject)}'s {what} over each prior work's, per workload", _main(variant)
        )

    return rule


def _less_migration_every_base_run(study: StudyLookup, _: str) -> Ours:
    values = {}
    for workload in study.workloads("base", MAIN_RATIO):
        for r in _ratios(study, workload, "base"):
            for prior in PRIOR_WORK:
                values[f"{workload} {ratio_text(r)} vs {prior}"] = _over(
                    study, "migrated_bytes", "tm_training", prior, workload, ratio=r
                )
    return _all_below(values, "TM-Training's migrated bytes over each prior work's, every workload and base ratio", "base")


def _spread_extreme_on(workload_name: str, column: str, *, largest: bool) -> Rule:
    """Whether ``workload_name`` has the largest (or smallest) max / min of ``column`` over TM-Training and the prior
    work of the five workloads at 25:1."""

    def rule(study: StudyLookup, _: str) -> Ours:
        values = {
            w: _spread(study, column, w, MAIN_RATIO, ("tm_training", *PRIOR_WORK)) for w in study.workloads("base", MAIN_RATIO)
        }
        what = f"max / min {column} over TM-Training and the prior work, per workload"
        return _extreme_on(values, workload_name, what, _main(), largest=largest)

    return rule


def _prior_migration_lowers_efficiency(study: StudyLookup, _: str) -> Ours:
    values = {}
    for w in study.workloads("base", MAIN_RATIO):
        policies = ("tm_training", *PRIOR_WORK)
        migrated = [_value(study, "migrated_bytes", p, w, MAIN_RATIO) for p in policies]
        efficiency = [_value(study, "samples_per_j", p, w, MAIN_RATIO) for p in policies]
        values[w] = _spearman(migrated, efficiency)
    kept = _finite(values, "Spearman")
    median = float(np.median(list(kept.values())))
    return Ours(
        median,
        "Spearman correlation, per workload, of migrated bytes with samples/J over TM-Training and the prior work (< 0: "
        "more migration, less efficiency; the median over workloads shown)",
        f"{_main()}; {_listed(kept)}",
        pivot=0.0,
        agrees=median < 0.0,
    )


def _smallest_gap_on(workload_name: str, variants: Sequence[str]) -> Rule:
    def rule(study: StudyLookup, _: str) -> Ours:
        results = [
            _extreme_on(
                {w: _gap(study, w, v) for w in study.workloads(v, MAIN_RATIO)},
                workload_name,
                f"TM-Training's samples/J over the prior work's (geometric mean over the three), {v}",
                _main(v),
                largest=False,
            )
            for v in variants
        ]
        worst = max(results, key=lambda o: o.value)
        return Ours(
            worst.value,
            worst.check + (" in every variant named" if len(results) > 1 else ""),
            "; ".join(o.note for o in results),
            agrees=all(o.value < 1.0 for o in results),
        )

    return rule


def _benefit_grows_with_data(study: StudyLookup, _: str) -> Ours:
    workloads = study.workloads("base", MAIN_RATIO)
    gain = [
        geometric_mean([_over(study, "samples_per_j", "tm_training", p, w, ratio=MAIN_RATIO) for p in ("autotm", "deeptm")])
        for w in workloads
    ]
    data = [_value(study, "data_bytes", "tm_training", w, MAIN_RATIO) for w in workloads]
    rho = _spearman(data, gain)
    return Ours(
        rho,
        "Spearman correlation over workloads of TM-Training's samples/J over AutoTM's and DeepTM's (no splitting; "
        "geometric mean) with the data per iteration (> 0)",
        f"{_main()}; {', '.join(f'{w} {g:.4g}' for w, g in zip(workloads, gain, strict=True))}",
        pivot=0.0,
        agrees=rho > 0.0,
    )


def _throughput_close_to_hbm(*, above: float | None = None) -> Rule:
    """Figure 12: the geometric mean over workloads of TM-Training's samples/s over HBM-only's, at ratios above ``above``
    (every ratio all workloads ran if None): within the closeness tolerance of 1 ("negligible degradation")."""

    def rule(study: StudyLookup, _: str) -> Ours:
        values = {}
        for r in _common_ratios(study):
            if above is None or r > above:
                values[ratio_text(r)] = _geomean_over_workloads(
                    study, "base", r, lambda w, r=r: _over(study, "samples_per_s", "tm_training", "hbm_only", w, ratio=r)
                )
        if not values:
            raise Unavailable(f"no ratio above {ratio_text(above or 0)} run for every workload")
        lowest = min(values, key=values.get)
        return Ours(
            values[lowest],
            f"TM-Training's samples/s over HBM-only's, geometric mean over workloads, at ratios above {ratio_text(above or 0)} "
            f"(>= {1 - CLOSE_TOLERANCE:g}: a degradation within {CLOSE_TOLERANCE:.0%}; the lowest shown)",
            f"base; {_listed(values)}",
            pivot=np.nan,
            agrees=values[lowest] >= 1.0 - CLOSE_TOLERANCE,
        )

    return rule


def _common_ratios(study: StudyLookup, variant: str = "base") -> list[float]:
    table = study.table[study.table["variant"] == variant]
    per = [set(np.round(g["ratio"].to_numpy(dtype=float), 9)) for _, g in table.groupby("workload")]
    return sorted(set.intersection(*per)) if per else []


def _throughput_similar_or_higher(study: StudyLookup, _: str) -> Ours:
    values = {}
    for r in _common_ratios(study):
        if r < 100.0:
            for prior in PRIOR_WORK:
                values[f"{ratio_text(r)} vs {prior}"] = _geomean_over_workloads(
                    study, "base", r, lambda w, r=r, prior=prior: _over(study, "samples_per_s", "tm_training", prior, w, ratio=r)
                )
    kept = _finite(values, "throughput")
    lowest = min(kept, key=kept.get)
    return Ours(
        kept[lowest],
        f"TM-Training's samples/s over each prior work's below 100:1, geometric mean over workloads (>= {1 - CLOSE_TOLERANCE:g}: "
        "similar or higher; the lowest shown)",
        f"base; {_listed(kept)}",
        pivot=np.nan,
        agrees=kept[lowest] >= 1.0 - CLOSE_TOLERANCE,
    )


def _smaller_degradation(study: StudyLookup, _: str) -> Ours:
    """Figure 12's caption: wherever a prior work loses throughput against HBM-only, TM-Training loses less."""
    values = {}
    for r in _common_ratios(study):
        tm = _geomean_over_workloads(
            study, "base", r, lambda w, r=r: _over(study, "samples_per_s", "tm_training", "hbm_only", w, ratio=r)
        )
        for prior in PRIOR_WORK:
            theirs = _geomean_over_workloads(
                study, "base", r, lambda w, r=r, prior=prior: _over(study, "samples_per_s", prior, "hbm_only", w, ratio=r)
            )
            if theirs < 1.0 - TIE_TOLERANCE:
                values[f"{ratio_text(r)} vs {prior}"] = tm / theirs
    if not values:
        raise Unavailable("no ratio at which a prior work loses throughput against HBM-only beyond the tie tolerance")
    return _all_above(
        values,
        "TM-Training's throughput over HBM-only's, over a prior work's, wherever that prior work degrades",
        "base, geometric mean over workloads",
    )


def _disparity_increases(study: StudyLookup, _: str) -> Ours:
    values = {}
    for prior in PRIOR_WORK:
        doubled = _geomean_over_workloads(
            study,
            "double_batch",
            MAIN_RATIO,
            lambda w, prior=prior: _over(
                study, "samples_per_j", "tm_training", prior, w, ratio=MAIN_RATIO, variant="double_batch"
            ),
        )
        base = _geomean_over_workloads(
            study,
            "base",
            MAIN_RATIO,
            lambda w, prior=prior: _over(study, "samples_per_j", "tm_training", prior, w, ratio=MAIN_RATIO),
        )
        values[prior] = doubled / base
    return _all_above(
        values,
        "TM-Training's samples/J over each prior work's, batch doubled over base (geometric means)",
        f"{ratio_text(MAIN_RATIO)}",
    )


def _orthogonal_to_replacement(study: StudyLookup, _: str) -> Ours:
    values = {}
    for subject in ("tm_training", "tm_training_off"):
        for key, v in _per_workload_vs_prior(study, "samples_per_j", subject, "base").items():
            values[f"{subject}: {key}"] = v
    return _all_above(values, "TM-Training's and TM-Training_Off's samples/J over each prior work's, per workload", _main())


def _close_per_workload(a: str, b: str, *, geomean: bool) -> Rule:
    def rule(study: StudyLookup, _: str) -> Ours:
        per = {w: _over(study, "samples_per_j", a, b, w, ratio=MAIN_RATIO) for w in study.workloads("base", MAIN_RATIO)}
        values = {"geometric mean": geometric_mean(list(_finite(per, "samples/J").values()))} if geomean else per
        return _all_close(
            values,
            f"{policy_name(a)}'s samples/J over {policy_name(b)}'s"
            + (", geometric mean over workloads" if geomean else ", per workload"),
            _main(),
        )

    return rule


def _half_over_base(column: str, policies: Sequence[str], *, rising: bool, what: str) -> Rule:
    """Figure 15: the half-bandwidth runs' ``column`` over the base runs', per policy at 25:1: bytes summed over the
    workloads (a policy may move none on some), rates as geometric means."""

    def total(study: StudyLookup, policy: str, variant: str) -> float:
        per = [_value(study, column, policy, w, MAIN_RATIO, variant=variant) for w in study.workloads(variant, MAIN_RATIO)]
        if column.endswith("_bytes"):
            return float(np.sum(per))
        kept = [v for v in per if np.isfinite(v) and v > 0]
        if not kept:
            raise Unavailable(f"no {variant} run at {ratio_text(MAIN_RATIO)} with a positive {column}")
        return geometric_mean(kept)

    def rule(study: StudyLookup, _: str) -> Ours:
        values = {p: _growth(total(study, p, "base"), total(study, p, "half_tier2_bandwidth")) for p in policies}
        how = "sums over workloads" if column.endswith("_bytes") else "geometric means over workloads"
        return (_all_above if rising else _all_below)(
            values, f"{what}, Tier 2 bandwidth halved over base ({how})", f"{ratio_text(MAIN_RATIO)}"
        )

    return rule


def _promotions_and_energy_rise(study: StudyLookup, workload: str) -> Ours:
    tiered = ("tm_training", *PRIOR_WORK)
    promoted = _half_over_base("promoted_bytes", tiered, rising=True, what="promoted bytes")(study, workload)
    energy = _half_over_base("joules_per_sample", tiered, rising=True, what="joules per sample")(study, workload)
    return Ours(
        promoted.value,
        promoted.check + "; and so do the joules per sample",
        f"{promoted.note}; energy: {energy.note}",
        agrees=bool(promoted.agrees and energy.agrees),
    )


def _mitigates_better(study: StudyLookup, _: str) -> Ours:
    def change(policy: str, column: str) -> float:
        half = _geomean_over_workloads(
            study,
            "half_tier2_bandwidth",
            MAIN_RATIO,
            lambda w: _value(study, column, policy, w, MAIN_RATIO, variant="half_tier2_bandwidth"),
        )
        return half / _geomean_over_workloads(study, "base", MAIN_RATIO, lambda w: _value(study, column, policy, w, MAIN_RATIO))

    throughput = {p: change("tm_training", "samples_per_s") / change(p, "samples_per_s") for p in PRIOR_WORK}
    energy = {p: change(p, "joules_per_sample") / change("tm_training", "joules_per_sample") for p in PRIOR_WORK}
    picked = _all_above(throughput, "halving Tier 2's bandwidth, TM-Training's samples/s change over each prior work's", _main())
    return Ours(
        picked.value,
        picked.check + "; and its joules per sample grow less than each prior work's",
        f"{picked.note}; energy growth, prior over TM-Training: {_listed(energy)}",
        agrees=bool(picked.agrees and min(energy.values()) > 1.0),
    )


def _gap_grows_with_model_size(study: StudyLookup, _: str) -> Ours:
    workloads = study.workloads("half_tier2_bandwidth", MAIN_RATIO)
    gap = [_gap(study, w, "half_tier2_bandwidth") for w in workloads]
    size = [_value(study, "model_bytes", "tm_training", w, MAIN_RATIO, variant="half_tier2_bandwidth") for w in workloads]
    rho = _spearman(size, gap)
    return Ours(
        rho,
        "Spearman correlation over workloads of TM-Training's samples/J over the prior work's (geometric mean) with the model "
        "size, Tier 2 bandwidth halved (> 0)",
        f"{_main('half_tier2_bandwidth')}; {', '.join(f'{w} {g:.4g}' for w, g in zip(workloads, gap, strict=True))}",
        pivot=0.0,
        agrees=rho > 0.0,
    )


# ---- Figures 10 and 11: PaLM over the ratio -----------------------------------------------------------------------


def _palm_vs_prior_every_ratio(
    column: str,
    *,
    above: bool,
    inverse: bool = False,
    priors: Sequence[str] = PRIOR_WORK,
    ratios: Callable[[float], bool] | None = None,
) -> Rule:
    def rule(study: StudyLookup, workload: str) -> Ours:
        values = {}
        for r in _ratios(study, workload, "base"):
            if ratios is None or ratios(r):
                for prior in priors:
                    a, b = (prior, "tm_training") if inverse else ("tm_training", prior)
                    values[f"{ratio_text(r)} vs {prior}"] = _over(study, column, a, b, workload, ratio=r)
        if not values:
            raise Unavailable(f"no base ratio of {workload} in the range the sentence names")
        subject = "each prior work's" if inverse else "TM-Training's"
        other = "TM-Training's" if inverse else "each prior work's"
        return (_all_above if above else _all_below)(values, f"{subject} {column} over {other}", f"{workload}, base")

    return rule


def _peak_at(ratio: float) -> Rule:
    def rule(study: StudyLookup, workload: str) -> Ours:
        values = {
            r: _over(study, "samples_per_j", "tm_training", "hbm_only", workload, ratio=r)
            for r in _ratios(study, workload, "base")
        }
        if not any(np.isclose(r, ratio) for r in values):
            raise Unavailable(f"no base run of {workload} at {ratio_text(ratio)}")
        at = next(v for r, v in values.items() if np.isclose(r, ratio))
        best_other = max(v for r, v in values.items() if not np.isclose(r, ratio))
        return Ours(
            at / best_other,
            f"TM-Training's energy efficiency over HBM-only at {ratio_text(ratio)} over its best at any other ratio (>= 1 within "
            "the tie tolerance: the highest)",
            f"{workload}, base; {_listed({ratio_text(r): v for r, v in values.items()})}",
            pivot=np.nan,
            agrees=at / best_other >= 1.0 - TIE_TOLERANCE,
        )

    return rule


def _gap_widens(column: str, subjects: Sequence[str], *, what: str) -> Rule:
    """TM-Training's ``column`` over each of ``subjects`` (or theirs over TM-Training's for migration) grows as Tier 1 shrinks."""

    def rule(study: StudyLookup, workload: str) -> Ours:
        ratios = _ratios(study, workload, "base")
        series = {}
        for s in subjects:
            a, b = (s, "tm_training") if column in ("migrated_bytes", "energy_j") else ("tm_training", s)
            series[s] = {r: _over(study, column, a, b, workload, ratio=r) for r in ratios}
        return _trend(series, rising=True, check=what, where=f"{workload}, base")

    return rule


def _close_to_ideal(study: StudyLookup, workload: str) -> Ours:
    values = {}
    for r in _ratios(study, workload, "base"):
        ideal = _value(study, "migrated_bytes", "ideal", workload, r)
        ours = _value(study, "migrated_bytes", "tm_training", workload, r)
        values[ratio_text(r)] = ours / ideal if ideal > 0 else (1.0 if ours == 0 else np.inf)
    return _all_close(values, "TM-Training's migrated bytes over the ideal policy's (both 0 counted as 1)", f"{workload}, base")


def _sentinel_excessive_below(study: StudyLookup, workload: str) -> Ours:
    run = [r for r in _ratios(study, workload, "base") if _value(study, "tier1_bytes", "sentinel", workload, r) < 32 * _GB]
    if not run:
        raise Unavailable(f"no base run of {workload} with Tier 1 below 32 GB")
    values = {ratio_text(r): _over(study, "migrated_bytes", "sentinel", "tm_training", workload, ratio=r) for r in run}
    return _all_above(values, "Sentinel's migrated bytes over TM-Training's wherever Tier 1 is below 32 GB", f"{workload}, base")


def _similar_above(ratio: float) -> Rule:
    def rule(study: StudyLookup, workload: str) -> Ours:
        values = {
            f"{p} {ratio_text(r)}": _same_or_ratio(study, "migrated_bytes", p, "tm_training", workload, ratio=r)
            for r in _ratios(study, workload, "base")
            if r > ratio
            for p in ("autotm", "deeptm")
        }
        if not values:
            raise Unavailable(f"no base ratio of {workload} above {ratio_text(ratio)}")
        return _all_close(values, "AutoTM's and DeepTM's migrated bytes over TM-Training's", f"{workload}, base")

    return rule


def _everything_in_tier1(study: StudyLookup, workload: str) -> Ours:
    run = [r for r in _ratios(study, workload, "base") if _value(study, "tier1_bytes", "tm_training", workload, r) > 22.5 * _GB]
    if not run:
        raise Unavailable(f"no base run of {workload} with Tier 1 above 22.5 GB")
    values = {ratio_text(r): _over(study, "samples_per_s", "tm_training", "hbm_only", workload, ratio=r) for r in run}
    lowest = min(values.values())
    return Ours(
        lowest,
        f"with Tier 1 above 22.5 GB, TM-Training's samples/s over HBM-only's (>= {1 - TIE_TOLERANCE:g}: no stall, everything "
        "in Tier 1; the lowest shown)",
        f"{workload}, base; {_listed(values)}",
        pivot=np.nan,
        agrees=lowest >= 1.0 - TIE_TOLERANCE,
    )


def _policy_gap_widens(study: StudyLookup, workload: str) -> Ours:
    ratios = _ratios(study, workload, "base")
    series = {"spread": {r: _spread(study, "samples_per_j", workload, r, ("tm_training", *PRIOR_WORK)) for r in ratios}}
    return _trend(series, rising=True, check="max / min samples/J over TM-Training and the prior work", where=f"{workload}, base")


def sentence_rules() -> dict[str, Rule]:
    """The check of each sentence of ``data/paper/tm_training_claims.csv`` that has one, by its id."""
    palm_rising = _section2_trend
    return {
        "intro_prior_below_hbm": _vs_hbm_main(PRIOR_WORK, mode="below"),
        "intro_significantly_better_than_hbm_and_prior": _better_than_hbm_and_prior,
        "intro_same_efficiency_as_hbm_at_12_5pct": _vs_hbm_main(("tm_training",), mode="close"),
        "intro_suboptimal_migration_grows_as_tier1_shrinks": palm_rising(
            "migration_vs_data", PRIOR_WORK, rising=True, what="migrated bytes / data per iteration of Sentinel, AutoTM, DeepTM"
        ),
        "intro_tiered_energy_overhead_from_migration": _energy_overhead_from_migration,
        "sec2_tier_traffic_share_grows_as_tier1_shrinks": palm_rising(
            "migration_vs_data", _SECTION2, rising=True, what="migrated bytes / data per iteration of Hor/Ver x On/Off"
        ),
        "fig2_hor_off_above_hbm_beyond_25to1": _hor_off_crossover,
        "fig2_horizontal_above_vertical_every_ratio": _horizontal_above_vertical,
        "fig2_efficiency_falls_with_ratio_except_hor_off": palm_rising(
            "samples_per_j", _ONLINE_SUBOPTIMAL, rising=False, what="samples/J of Hor_On, Ver_Off, Ver_On"
        ),
        "fig2_cause_memory_energy_and_throughput": _cause_of_falling_efficiency,
        "fig2_smaller_tier1_more_migration_and_stalls": _more_migration_and_stalls,
        "fig2_migration_raises_energy": _migration_energy_correlation,
        "fig2_vertical_low_efficiency_every_ratio": _efficiency_vs_hbm_every_ratio(("ver_off", "ver_on"), above=False),
        "fig3_vertical_migration_even_large_tier1": _vertical_migrates_at_large_tier1,
        "fig3_tier1_below_24gb_evicts": _evicts_below,
        "fig4_migration_share_grows_as_tier1_shrinks": palm_rising(
            "migration_energy_share", _SECTION2, rising=True, what="migration's share of the off-chip energy of Hor/Ver x On/Off"
        ),
        "fig4_migration_share_largest_vertical": _migration_share_largest_vertical,
        "fig4_vertical_sram_lower_but_tier_higher": _vertical_sram_lower_tier_higher,
        "fig4_caption_tier_traffic_dominant": _migration_dominant,
        "sec2_constrained_memory_energy_over_2x_hbm": _constrained_over_twice,
        "sec2_tier2_traffic_surge": _tier2_surge,
        "sec2_hotness_policy_suboptimal": _hotness_suboptimal,
        "sec3_vertical_efficiency_drops_with_tier1": _vertical_drastic_drop,
        "sec5_no_critical_perf_degradation": _throughput_close_to_hbm(above=MAIN_RATIO - 1.0),
        "fig8_gpt3_largest_policy_variation": _spread_extreme_on("gpt3_175b", "samples_per_j", largest=True),
        "fig8_caption_tm_above_prior_all": _tm_vs_prior_every_workload("samples_per_j", above=True),
        "fig8_only_tm_above_hbm": _only_tm_above_hbm,
        "fig8_prior_migration_lowers_efficiency": _prior_migration_lowers_efficiency,
        "fig8_bert_small_improvement": _smallest_gap_on("bert_large", ("base",)),
        "fig8_splitting_benefit_grows_with_data": _benefit_grows_with_data,
        "fig9_caption_tm_less_traffic_all": _tm_vs_prior_every_workload("migrated_bytes", above=False),
        "fig9_consistent_reduction": _less_migration_every_base_run,
        "fig9_bert_marginal_differences": _spread_extreme_on("bert_large", "migrated_bytes", largest=False),
        "fig10_tm_above_prior_every_ratio": _palm_vs_prior_every_ratio("samples_per_j", above=True),
        "fig10_tm_peak_at_100to1": _peak_at(100.0),
        "fig10_gap_widens_as_tier1_shrinks": _gap_widens(
            "samples_per_j", PRIOR_WORK, what="TM-Training's samples/J over each prior work's"
        ),
        "fig11_tm_close_to_ideal": _close_to_ideal,
        "fig11_sentinel_excessive_below_32gb": _sentinel_excessive_below,
        "fig11_caption_prior_more_traffic": _palm_vs_prior_every_ratio("migrated_bytes", above=True, inverse=True),
        "fig11_autotm_deeptm_similar_above_100to1": _similar_above(100.0),
        "fig11_autotm_deeptm_more_as_tier1_shrinks": _gap_widens(
            "migrated_bytes", ("autotm", "deeptm"), what="AutoTM's and DeepTM's migrated bytes over TM-Training's"
        ),
        "fig11_no_split_migration_energy_grow": _gap_widens(
            "energy_j", ("autotm", "deeptm"), what="AutoTM's and DeepTM's energy over TM-Training's"
        ),
        "fig11_drl_less_than_splitting": _palm_vs_prior_every_ratio("samples_per_j", above=True, priors=("deeptm",)),
        "fig11_all_in_tier1_above_22_5gb": _everything_in_tier1,
        "fig11_policy_gap_widens": _policy_gap_widens,
        "fig12_negligible_degradation_above_100to1": _throughput_close_to_hbm(above=100.0),
        "fig12_similar_or_higher_than_prior_small_ratio": _throughput_similar_or_higher,
        "fig12_caption_smaller_degradation_closer_to_ideal": _smaller_degradation,
        "fig13_disparity_increases": _disparity_increases,
        "fig13_tm_nearly_equivalent_to_hbm": _vs_hbm_main(("tm_training",), mode="close", variant="double_batch"),
        "fig13_caption_tm_above_prior": _tm_vs_prior_every_workload("samples_per_j", above=True, variant="double_batch"),
        "fig14_orthogonal_to_replacement_policy": _orthogonal_to_replacement,
        "fig14_ideal_vs_tm_off_negligible": _close_per_workload("tm_training_off", "ideal", geomean=True),
        "fig14_caption_small_policy_differences": _close_per_workload("tm_training_off", "tm_training", geomean=False),
        "fig15_throughput_declines": _half_over_base(
            "samples_per_s", ("tm_training", *PRIOR_WORK), rising=False, what="samples/s"
        ),
        "fig15_less_direct_prefetch": _half_over_base(
            "tier2_read_bytes", ("tm_training",), rising=False, what="TM-Training's Tier 2 reads"
        ),
        "fig15_more_promotions_more_energy": _promotions_and_energy_rise,
        "fig15_tm_mitigates_better": _mitigates_better,
        "fig15_gap_grows_with_model_size": _gap_grows_with_model_size,
        "fig15_caption_tm_above_prior_all": _tm_vs_prior_every_workload(
            "samples_per_j", above=True, variant="half_tier2_bandwidth"
        ),
        "sec6_small_models_smaller_gap": _smallest_gap_on("bert_large", ("base", "double_batch")),
    }
