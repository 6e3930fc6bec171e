"""The magnitude verdict shared by the three paper-vs-ours tables."""

from __future__ import annotations

import pandas as pd

from traincost.analysis.verdicts import MAGNITUDE_BAND, add_magnitude, magnitude_verdict


def test_magnitude_band_is_closed_and_only_for_numeric_claims() -> None:
    low, high = MAGNITUDE_BAND
    ours = pd.Series([low * 2.0, high * 2.0, 1.9, 1.71, 0.5, 1.0, "words", 1.0])
    paper = pd.Series([2.0, 2.0, 2.0, 1.04 * 1.71 / 1.04, 0.0, None, 1.0, 1.0])
    kind = pd.Series(["claim"] * 7 + ["timing"])
    got = magnitude_verdict(ours, paper, kind)
    assert list(got[:4]) == [True, True, True, True]
    assert got[4:].isna().all()  # paper 0, paper missing, a word, a timing row
    # 1.04x where the paper has 1.71x agrees in direction but not in magnitude
    assert not magnitude_verdict(pd.Series([1.04]), pd.Series([1.71]), pd.Series(["claim"]))[0]


def test_add_magnitude_writes_the_band_into_the_check_text() -> None:
    frame = pd.DataFrame({"ours": [1.0, 1.0], "paper": [1.2, None], "kind": ["claim", "claim"], "check": ["> 1", "> 1"]})
    out = add_magnitude(frame, ours="ours", paper="paper")
    assert out["check"][0] == "> 1; magnitude: ours / paper in 0.67-1.5x"
    assert out["check"][1] == "> 1"
    assert bool(out["magnitude"][0]) and out["magnitude"].isna()[1]
