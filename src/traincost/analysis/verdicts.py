"""The one verdict rule of the three paper-vs-ours tables, and the kinds of row they hold.

Every row of ``monet/claims.csv``, ``mtrain/compare.csv`` and ``tiered/compare.csv`` has a ``kind``:

- ``claim``: a statement of the paper judged on our numbers; the only kind counted as agreement.
- ``invariant``: true by construction of our method (e.g. a search that only accepts improvements, or a set
  of candidates that contains another's); shown, never counted.
- ``timing``: our wall-clock seconds beside the paper's; a different machine, so never counted. The
  paper's own relative timing claims (e.g. DFS time / Converting time) are ``claim`` rows.
- ``calibrated``: a paper aggregate one of our constants was fitted to; shown, never counted.
- ``extension``: a check of ours beside the paper's claims (a setting the paper does not report, or a
  narrower reading of a claim); shown, never counted.
- ``superseded``: a check that a corrected row replaces (named in its check text); kept so that the
  change is visible, never counted.
- ``informational``: a number that carries no evidence either way: one no rule stated in the paper's text
  reproduces, a comparison neither side of which exercises the mechanism, or a claim our model's own bound
  decides (the note says which); shown beside ours, never counted.
- ``unchecked``: a claim of the paper our study cannot compute; the check text says why. Shown, never counted.

A ``claim`` is judged by :func:`judge`, in this order:

1. **Direction.** The study's own test (``agrees``), or, where the row names a ``pivot`` (1 for a ratio to a
   baseline, 0 for a reduction) and the study gives no test, ours on the same side of the pivot as the paper's
   number.
2. **Tie.** Where the row names a pivot, the paper claims a difference from it. Ours within
   :data:`TIE_TOLERANCE` of the pivot (``|ours - pivot| <= TIE_TOLERANCE * max(1, |pivot|)``) meets that claim
   only by rounding: the row is a ``tie``, shown and counted as not agreeing in direction.
3. **Magnitude**, where both sides are numbers: ours / paper within :data:`MAGNITUDE_BAND`. It is judged only for
   rows that agree in direction or have no direction test; a row that disagrees in direction, or ties, is
   ``magnitude: false``: a number on the wrong side of the pivot is never "about the paper's".

The whole ``verdict`` of a claim is then ``agrees``, ``tie``, ``differs`` (direction fails) or ``magnitude`` (the
direction holds or is not tested, the magnitude fails); rows of other kinds, and claims with no test at all, have
an empty verdict. The report colours each row by it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = [
    "CLOSE_TOLERANCE",
    "KINDS",
    "MAGNITUDE_BAND",
    "MAGNITUDE_TEXT",
    "TIE_TEXT",
    "TIE_TOLERANCE",
    "VERDICTS",
    "judge",
    "magnitude_verdict",
    "whole_verdict",
]

KINDS = ("claim", "invariant", "timing", "calibrated", "extension", "superseded", "informational", "unchecked")
MAGNITUDE_BAND = (0.67, 1.5)
"""Ours / paper inside this closed interval is a magnitude agreement."""
MAGNITUDE_TEXT = f"magnitude: ours / paper in {MAGNITUDE_BAND[0]:g}-{MAGNITUDE_BAND[1]:g}x"
TIE_TOLERANCE = 0.01
"""Ours within this share of the pivot (at least 1 absolute: 0.01 around a pivot of 0) is a tie."""
TIE_TEXT = f"tie: ours within {TIE_TOLERANCE:.0%} of the pivot"
CLOSE_TOLERANCE = 0.05
"""A claim of closeness ("similar", "nearly equivalent", "negligible", "relatively small", "close to") holds within this
share of its reference; one reading for all three papers, fixed before the results were read."""
VERDICTS = ("agrees", "tie", "differs", "magnitude", "")
"""The whole verdict of a row: its colour in the report, its line in ``traincost summary``."""


def _numbers(values: pd.Series) -> np.ndarray:
    return pd.to_numeric(values, errors="coerce").to_numpy(dtype=float)


def _near_pivot(values: np.ndarray, pivot: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return np.abs(values - pivot) <= TIE_TOLERANCE * np.maximum(1.0, np.abs(pivot))


def magnitude_verdict(ours: pd.Series, paper: pd.Series, kind: pd.Series) -> pd.Series:
    """Whether ours / paper lies in :data:`MAGNITUDE_BAND`, per row (nullable boolean), the direction aside.

    NA where the row is not a ``claim``, either side is missing or not a number, or the paper's value is 0
    (a ratio to 0 has no magnitude). :func:`judge` adds the direction.
    """
    ours_v, paper_v = _numbers(ours), _numbers(paper)
    defined = np.isfinite(ours_v) & np.isfinite(paper_v) & (paper_v != 0) & (kind.to_numpy() == "claim")
    with np.errstate(divide="ignore", invalid="ignore"):
        quotient = ours_v / paper_v
    holds = (quotient >= MAGNITUDE_BAND[0]) & (quotient <= MAGNITUDE_BAND[1])
    return pd.Series(pd.array(np.where(defined, holds, None), dtype="boolean"), index=ours.index)


def whole_verdict(agrees: pd.Series, tie: pd.Series, magnitude: pd.Series, kind: pd.Series) -> pd.Series:
    """Per row, one of :data:`VERDICTS` from its direction, tie and magnitude verdicts (nullable booleans)."""

    def flags(values: pd.Series) -> list[bool | None]:
        return [None if v is pd.NA or v is None else bool(v) for v in values.astype(object)]

    out = []
    for a, t, m, k in zip(flags(agrees), flags(tie), flags(magnitude), kind, strict=True):
        if k != "claim" or (a is None and m is None):
            out.append("")
        elif t:
            out.append("tie")
        elif a is False:
            out.append("differs")
        elif m is False:
            out.append("magnitude")
        else:
            out.append("agrees")
    return pd.Series(out, index=agrees.index, dtype=object)


def judge(frame: pd.DataFrame, *, ours: str, paper: str, agrees: str, pivot: str = "pivot") -> pd.DataFrame:
    """``frame`` with its claims judged by the one rule (module docstring).

    Args:
        frame: one row per check, with ``kind`` and ``check`` columns.
        ours: the column of our value.
        paper: the column of the paper's number (non-numbers, e.g. a statement in words, have no magnitude).
        agrees: the column of the study's own direction test (nullable boolean; NA where it has none).
        pivot: the column of the pivot a claimed difference is measured from (NaN where the claim is not a
            difference, e.g. a threshold of its own).

    Returns:
        A copy with ``agrees`` completed from the pivot (every kind) and set False for a claim's tie, and the columns ``tie``,
        ``magnitude`` and ``verdict``; each judged claim's ``check`` names the tie tolerance and the magnitude band
        it was judged by.
    """
    out = frame.copy()
    claim = (out["kind"] == "claim").to_numpy()
    ours_v, paper_v, pivot_v = _numbers(out[ours]), _numbers(out[paper]), _numbers(out[pivot])
    direction = pd.array(out[agrees].astype(object).where(out[agrees].notna(), None), dtype="boolean")
    given = ~direction.isna()
    with np.errstate(invalid="ignore"):
        same_side = np.sign(ours_v - pivot_v) == np.sign(paper_v - pivot_v)
    # every kind shows its direction (a superseded row, what its old check said); only claims get a verdict
    from_pivot = ~given & np.isfinite(ours_v) & np.isfinite(paper_v) & np.isfinite(pivot_v)
    direction[from_pivot] = same_side[from_pivot]
    # the paper claims a difference from the pivot unless its own number sits on it
    difference = np.isfinite(pivot_v) & ~(np.isfinite(paper_v) & _near_pivot(paper_v, pivot_v))
    tie = claim & ~direction.isna() & difference & np.isfinite(ours_v) & _near_pivot(ours_v, pivot_v)
    direction[tie] = False
    magnitude = magnitude_verdict(out[ours], out[paper], out["kind"])
    wrong_way = (~direction).fillna(False).to_numpy(dtype=bool)
    magnitude[wrong_way & magnitude.notna().to_numpy()] = False
    out[agrees] = direction
    out["tie"] = pd.array(np.where(claim & ~direction.isna(), tie, None), dtype="boolean")
    out["magnitude"] = magnitude
    out["verdict"] = whole_verdict(out[agrees], out["tie"], out["magnitude"], out["kind"])
    texts = []
    for text, has_pivot, judged_magnitude, is_claim in zip(
        out["check"].fillna("").astype(str), np.isfinite(pivot_v) & difference, magnitude.notna(), claim, strict=True
    ):
        parts = [text] if text else []
        if is_claim and has_pivot:
            parts.append(TIE_TEXT)
        if judged_magnitude:
            parts.append(MAGNITUDE_TEXT)
        texts.append("; ".join(parts))
    out["check"] = texts
    return out
