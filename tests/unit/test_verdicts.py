"""The one verdict rule of the three paper-vs-ours tables: direction, tie, magnitude, and the whole verdict."""

from __future__ import annotations

import numpy as np
import pandas as pd

from traincost.analysis.verdicts import MAGNITUDE_BAND, MAGNITUDE_TEXT, TIE_TEXT, judge, magnitude_verdict


def _judge(rows: list[dict]) -> pd.DataFrame:
    frame = pd.DataFrame(rows)
    for column, default in (("kind", "claim"), ("check", "> 1"), ("agrees", None), ("pivot", np.nan), ("paper", np.nan)):
        if column not in frame:
            frame[column] = default
    frame["agrees"] = frame["agrees"].astype("boolean")
    return judge(frame, ours="ours", paper="paper", agrees="agrees")


def test_magnitude_band_is_closed_and_only_for_numeric_claims() -> None:
    low, high = MAGNITUDE_BAND
    ours = pd.Series([low * 2.0, high * 2.0, 1.9, 1.71, 0.5, 1.0, "words", 1.0])
    paper = pd.Series([2.0, 2.0, 2.0, 1.71, 0.0, None, 1.0, 1.0])
    kind = pd.Series(["claim"] * 7 + ["timing"])
    got = magnitude_verdict(ours, paper, kind)
    assert list(got[:4]) == [True, True, True, True]
    assert got[4:].isna().all()  # paper 0, paper missing, a word, a timing row


def test_direction_comes_from_the_pivot_where_the_study_gives_none() -> None:
    out = _judge(
        [
            {"ours": 1.3, "paper": 1.26, "pivot": 1.0},  # both above 1
            {"ours": 0.88, "paper": 1.26, "pivot": 1.0},  # the other side: differs
            {"ours": 0.3, "paper": 0.4, "pivot": 0.0},  # a reduction, both above 0
        ]
    )
    assert list(out["agrees"]) == [True, False, True]
    assert list(out["verdict"]) == ["agrees", "differs", "agrees"]


def test_a_row_on_the_wrong_side_never_agrees_in_magnitude() -> None:
    # 0.88 is within 0.67-1.5x of 1.26, but on the other side of 1: magnitude false, never true
    out = _judge([{"ours": 0.88, "paper": 1.26, "pivot": 1.0}, {"ours": 0.90, "paper": 1.07, "agrees": False}])
    assert list(out["magnitude"]) == [False, False]
    assert list(out["verdict"]) == ["differs", "differs"]


def test_magnitude_is_judged_where_the_direction_holds_or_is_not_tested() -> None:
    out = _judge(
        [
            {"ours": 1.04, "paper": 1.71, "pivot": 1.0},  # right side, 0.61x of the paper: magnitude fails
            {"ours": 300.0, "paper": 683.0},  # an absolute value: magnitude only
            {"ours": 600.0, "paper": 683.0},
        ]
    )
    assert list(out["magnitude"]) == [False, False, True]
    assert list(out["verdict"]) == ["magnitude", "magnitude", "agrees"]
    assert out["agrees"].isna().tolist() == [False, True, True]


def test_a_claimed_difference_met_only_within_the_tie_tolerance_is_a_tie() -> None:
    out = _judge(
        [
            {"ours": 1.009, "agrees": True, "pivot": 1.0},  # 'significantly improves' by 0.9 %: a tie
            {"ours": 1.00015, "agrees": True, "pivot": 1.0},
            {"ours": 0.995, "agrees": False, "pivot": 1.0},  # within the tolerance on the wrong side: a tie too
            {"ours": 0.005, "paper": 0.4, "pivot": 0.0},  # a reduction of 0.5 %: a tie around 0
            {"ours": 1.02, "agrees": True, "pivot": 1.0},  # beyond the tolerance: agrees
        ]
    )
    assert list(out["verdict"]) == ["tie", "tie", "tie", "tie", "agrees"]
    assert list(out["agrees"]) == [False, False, False, False, True]  # a tie is counted as not agreeing
    assert out["magnitude"][3] == False  # noqa: E712 (a nullable boolean): a tie is not "about the paper's"
    assert TIE_TEXT in out["check"][0]


def test_no_tie_where_the_paper_itself_sits_on_the_pivot_or_the_row_names_none() -> None:
    out = _judge(
        [
            {"ours": 1.005, "paper": 1.0, "pivot": 1.0},  # the paper claims no difference
            {"ours": 1.005, "agrees": True},  # a threshold of its own, no pivot
        ]
    )
    assert not out["tie"].fillna(False).any()
    assert TIE_TEXT not in out["check"][1]


def test_rows_other_than_claims_get_no_verdict() -> None:
    out = _judge(
        [
            {"ours": 0.9, "paper": 1.3, "pivot": 1.0, "kind": "invariant"},
            {"ours": np.nan, "kind": "unchecked", "check": "not measured"},
            {"ours": 2.0, "paper": 1.0, "kind": "timing"},
        ]
    )
    assert list(out["verdict"]) == ["", "", ""]
    assert out["magnitude"].isna().all() and out["tie"].isna().all()
    assert MAGNITUDE_TEXT not in out["check"][2]


def test_the_check_text_states_the_band_where_a_magnitude_is_judged() -> None:
    out = _judge([{"ours": 1.0, "paper": 1.2, "check": "> 1"}, {"ours": 1.0, "check": "> 1", "agrees": True}])
    assert out["check"][0] == f"> 1; {MAGNITUDE_TEXT}"
    assert out["check"][1] == "> 1"
