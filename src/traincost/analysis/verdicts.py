"""What kind of row a paper-vs-ours table holds, and the magnitude verdict shared by the three studies.

Every row of ``monet/claims.csv``, ``mtrain/compare.csv`` and ``tiered/compare.csv`` has a ``kind``:

- ``claim``: a statement of the paper judged on our numbers; the only kind counted as agreement.
- ``invariant``: true by construction of our method (e.g. a search that only accepts improvements);
  shown, never counted.
- ``timing``: our wall-clock seconds beside the paper's; a different machine, so never counted. The
  paper's own relative timing claims (e.g. DFS time / Converting time) are ``claim`` rows.
- ``calibrated``: a paper aggregate one of our constants was fitted to; shown, never counted.
- ``extension``: a check of ours beside the paper's claims (a setting the paper does not report, or a
  narrower reading of a claim); shown, never counted.
- ``superseded``: a check that a corrected row replaces (named in its check text); kept so that the
  change is visible, never counted.
- ``informational``: a number the paper reports that no rule stated in its text reproduces (the check
  text says which rules were tried); shown beside ours, never counted.

A judged claim with a number on both sides also gets a magnitude verdict: ours / paper within
:data:`MAGNITUDE_BAND`, fixed before looking at the results and written in the check text.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["KINDS", "MAGNITUDE_BAND", "MAGNITUDE_TEXT", "add_magnitude", "magnitude_verdict"]

KINDS = ("claim", "invariant", "timing", "calibrated", "extension", "superseded", "informational")
MAGNITUDE_BAND = (0.67, 1.5)
"""Ours / paper inside this closed interval is a magnitude agreement."""
MAGNITUDE_TEXT = f"magnitude: ours / paper in {MAGNITUDE_BAND[0]:g}-{MAGNITUDE_BAND[1]:g}x"


def magnitude_verdict(ours: pd.Series, paper: pd.Series, kind: pd.Series) -> pd.Series:
    """Whether ours / paper lies in :data:`MAGNITUDE_BAND`, per row (nullable boolean).

    NA where the row is not a ``claim``, either side is missing or not a number, or the paper's value is 0
    (a ratio to 0 has no magnitude).
    """
    ours_v = pd.to_numeric(ours, errors="coerce").to_numpy(dtype=float)
    paper_v = pd.to_numeric(paper, errors="coerce").to_numpy(dtype=float)
    defined = np.isfinite(ours_v) & np.isfinite(paper_v) & (paper_v != 0) & (kind.to_numpy() == "claim")
    with np.errstate(divide="ignore", invalid="ignore"):
        quotient = ours_v / paper_v
    holds = (quotient >= MAGNITUDE_BAND[0]) & (quotient <= MAGNITUDE_BAND[1])
    return pd.Series(pd.array(np.where(defined, holds, None), dtype="boolean"), index=ours.index)


def add_magnitude(frame: pd.DataFrame, *, ours: str, paper: str) -> pd.DataFrame:
    """``frame`` with a ``magnitude`` column, the band appended to ``check`` wherever a magnitude is judged."""
    out = frame.copy()
    out["magnitude"] = magnitude_verdict(out[ours], out[paper], out["kind"])
    judged = out["magnitude"].notna().to_numpy()
    out.loc[judged, "check"] = [f"{c}; {MAGNITUDE_TEXT}" if c else MAGNITUDE_TEXT for c in out.loc[judged, "check"]]
    return out
