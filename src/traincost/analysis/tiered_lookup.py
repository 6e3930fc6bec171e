"""Look-ups into TM-Training's study table shared by the paper-vs-ours rules: one run's value, a policy over another,
the geometric mean over workloads, and the result a rule returns (:class:`Ours`).

A rule that cannot be computed from the study (a missing run, column or a zero denominator) raises :class:`Unavailable`
with the reason; its row then keeps ``ours`` empty and says why.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from traincost.analysis.summary_stats import geometric_mean
from traincost.tiered.labels import POLICY_NAMES, WORKLOAD_NAMES

__all__ = [
    "OFFCHIP_ENERGY",
    "PRIOR_WORK",
    "NotInStudy",
    "Ours",
    "StudyLookup",
    "Unavailable",
    "over_workloads",
    "policy_name",
    "policy_ratio",
    "quotient",
    "ratio_text",
]


PRIOR_WORK = ("sentinel", "autotm", "deeptm")
OFFCHIP_ENERGY = ("energy_tier_sram_j", "energy_migration_j", "energy_static_j")
"""The off-chip memory's energy: tier-to-SRAM traffic, tier-to-tier migration, static."""


class Unavailable(Exception):  # noqa: N818 (a reason, not a failure)
    """The study lacks what a paper row needs; the message says what."""


class NotInStudy(Unavailable):
    """No run of the study can answer the paper row, whatever it holds: the row is ``unchecked``."""


@dataclass(frozen=True, slots=True)
class Ours:
    """Our value of a paper row, what is checked, and the side of ``pivot`` the paper's value should share."""

    value: float
    check: str
    note: str
    pivot: float = 1.0
    """NaN where the check is not a difference from a pivot (then ``agrees`` is set)."""
    agrees: bool | None = None
    """Set where the check is not "same side of the pivot" (e.g. "at every ratio")."""
    ceiling: float = np.nan
    """The most our model lets the subject's energy efficiency over HBM-only reach (``static_ceiling_vs_hbm``),
    where the row compares with HBM-only."""


def policy_name(policy: str) -> str:
    return POLICY_NAMES.get(policy, policy)


def ratio_text(ratio: float) -> str:
    return f"{ratio:g}:1"


class StudyLookup:
    """Look-ups into the study table that raise ``Unavailable`` naming the missing run."""

    def __init__(self, table: pd.DataFrame) -> None:
        self.table = table.assign(**_derived(table)).reset_index(drop=True)
        keys = zip(self.table["workload"], self.table["variant"], self.table["policy"], self.table["ratio"], strict=True)
        self._at: dict[tuple[str, str, str, float], int] = {}
        for index, (workload, variant, policy, ratio) in enumerate(keys):
            self._at.setdefault((workload, variant, policy, _key(ratio)), index)
        runs = self.table.groupby(["workload", "variant"])["ratio"].unique()
        self._ratios = {key: sorted(float(r) for r in values) for key, values in runs.items()}

    def row(self, workload: str, variant: str, policy: str, ratio: float) -> pd.Series:
        index = self._at.get((workload, variant, policy, _key(ratio)))
        if index is None:
            raise Unavailable(f"no {variant} run of {policy} on {workload} at {ratio_text(ratio)}")
        return self.table.iloc[index]

    def value(self, column: str, workload: str, variant: str, policy: str, ratio: float) -> float:
        if column not in self.table.columns:
            raise Unavailable(f"the study table has no column {column!r}")
        index = self._at.get((workload, variant, policy, _key(ratio)))
        if index is None:
            raise Unavailable(f"no {variant} run of {policy} on {workload} at {ratio_text(ratio)}")
        return float(self.table[column].iat[index])

    def workloads(self, variant: str, ratio: float) -> list[str]:
        run = {w for (w, v), ratios in self._ratios.items() if v == variant and any(np.isclose(r, ratio) for r in ratios)}
        known = [w for w in WORKLOAD_NAMES if w in run]
        return known + sorted(run - set(known))

    def ratios(self, workload: str, variant: str) -> list[float]:
        return list(self._ratios.get((workload, variant), []))


def _key(ratio: float) -> float:
    """A ratio as a look-up key: the paper's ratios are whole or simple fractions, equal to 9 decimals."""
    return round(float(ratio), 9)


def _derived(table: pd.DataFrame) -> dict[str, pd.Series]:
    """Columns the rules read beside the study's own, where their sources are there: the off-chip energy, the migration's
    share of it, the bytes moved through Tier 2 and the joules per sample."""
    out = {}
    if set(OFFCHIP_ENERGY) <= set(table.columns):
        offchip = table[list(OFFCHIP_ENERGY)].sum(axis=1)
        out["offchip_energy_j"] = offchip
        out["migration_energy_share"] = table["energy_migration_j"] / offchip.where(offchip > 0)
    if {"tier2_read_bytes", "tier2_write_bytes"} <= set(table.columns):
        out["tier2_bytes"] = table["tier2_read_bytes"] + table["tier2_write_bytes"]
    if "samples_per_j" in table.columns:
        out["joules_per_sample"] = 1.0 / table["samples_per_j"].where(table["samples_per_j"] > 0)
    return out


def quotient(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator > 0 and np.isfinite(numerator) else np.nan


def policy_ratio(
    study: StudyLookup, column: str, subject: str, baseline: str, *, workload: str, variant: str, ratio: float
) -> float:
    """``column`` of ``subject`` over ``baseline``'s at one run; NaN if the baseline's is 0."""
    return quotient(
        study.value(column, workload, variant, subject, ratio), study.value(column, workload, variant, baseline, ratio)
    )


def over_workloads(
    study: StudyLookup, row: pd.Series, variant: str, ratio: float, per: Callable[[str], float]
) -> tuple[float, str]:
    """``per(workload)`` at the row's workload, or the geometric mean over all (``average``, ``geomean`` or none named)."""
    workload = "" if pd.isna(row["workload"]) else str(row["workload"])
    if workload not in ("average", "geomean", ""):
        value = per(workload)
        if not np.isfinite(value):
            raise Unavailable(f"undefined on {workload} at {ratio_text(ratio)} (a zero denominator)")
        return value, f"{workload}, {variant}, {ratio_text(ratio)}"
    workloads = study.workloads(variant, ratio)
    if not workloads:
        raise Unavailable(f"no {variant} runs at {ratio_text(ratio)}")
    values = {w: per(w) for w in workloads}
    used = [w for w, v in values.items() if np.isfinite(v) and v > 0]
    if not used:
        raise Unavailable(f"undefined on every workload at {ratio_text(ratio)} ({variant}): zero denominators")
    note = f"geometric mean over {len(used)} workload(s) ({', '.join(used)}), {variant}, {ratio_text(ratio)}"
    if len(used) < len(WORKLOAD_NAMES):
        note += f"; the paper averages over its {len(WORKLOAD_NAMES)}"
    if not workload:
        note += "; the paper names no workload, taken as its average"
    skipped = sorted(set(workloads) - set(used))
    if skipped:
        note += f"; left out (undefined): {', '.join(skipped)}"
    return geometric_mean([values[w] for w in used]), note
