"""One row of MONET's paper-vs-ours table (:class:`Claim`) and the table of such rows, judged by the one verdict rule."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields

import numpy as np
import pandas as pd

from traincost.analysis.verdicts import judge

__all__ = ["Claim", "judged_claims"]


@dataclass(frozen=True, slots=True)
class Claim:
    """One claim of the paper, how we test it, and what we found."""

    claim: str
    figure: str
    paper_says: str
    check: str
    value: float
    holds: bool | None
    """The direction test; None where the row has none (``unchecked``)."""
    kind: str = "claim"
    pivot: float = np.nan
    """Where the paper claims a difference from it (1 for a ratio to a baseline): within the tie tolerance is a tie."""
    paper_value: float = np.nan
    """The paper's number, where it states one (most MONET claims are in words): weighed by the magnitude verdict."""
    ceiling: float = np.nan
    """The most our model can reach of the value (e.g. a saving can be no larger than the whole it is taken from)."""


def judged_claims(claims: Sequence[Claim]) -> pd.DataFrame:
    """The claims as a table, judged by the one verdict rule (:func:`traincost.analysis.verdicts.judge`)."""
    frame = pd.DataFrame([asdict(c) for c in claims], columns=[f.name for f in fields(Claim)])
    frame["holds"] = frame["holds"].astype("boolean")
    return judge(frame, ours="value", paper="paper_value", agrees="holds")
