"""The generated fidelity page (``traincost summary --markdown``) on small hand-made comparison tables."""

from __future__ import annotations

from pathlib import Path

from traincost.analysis.agreement import STUDIES, Agreement, read_comparison
from traincost.analysis.fidelity_page import NOT_ABLATED, StudyPage, fidelity_markdown

MONET = """claim,figure,paper_says,check,value,holds,kind,magnitude
rankings_differ,1,inference and training rankings differ,Spearman rho < 0.9,0.95,False,claim,
training_costs_more,1,a training step costs more than inference,share of configurations = 1,1.0,True,claim,
"""

TIERED = """claim,figure,workload,ratio,metric,paper,ours,check,agrees,magnitude,kind,note,why
offchip_share,2.1,all,,share,0.276,0.276,fitted,,,calibrated,,
only_tm_beats_hbm,9,bert,25,efficiency,1.09,1.01,TM > 1 | others <= 1,True,False,claim,,tier2_energy_factor=0.5
deeptm_behind,9,bert,25,efficiency,0.95,1.02,DeepTM < TM,False,,claim,,no single assumption flips it
hbm_only,9,t5,25,efficiency,1.0,1.0,equal,True,True,claim,,
"""


def _page(tmp_path: Path, key: str, text: str, **kwargs: object) -> StudyPage:
    path = tmp_path / f"{key}.csv"
    path.write_text(text)
    return StudyPage(STUDIES[key], path, read_comparison(path, STUDIES[key]), **kwargs)


def test_every_disagreeing_check_is_listed_with_its_why_and_the_counts_before_and_after(tmp_path: Path) -> None:
    uncalibrated = Agreement(agree=0, checked=3, rows=4, magnitude_agree=0, magnitude_checked=2)
    pages = [
        _page(tmp_path, "monet", MONET, before_note="the same (MONET pins none of our constants)"),
        _page(tmp_path, "tiered", TIERED, before=uncalibrated),
    ]
    text = fidelity_markdown(pages)
    lines = text.splitlines()
    assert lines[0] == "# Paper vs ours: counts and every disagreeing check"
    # MONET: 1 of 2 in direction, nothing judged in magnitude; its one failing claim, without a why (no ablations)
    monet = lines[lines.index("## MONET") : lines.index("## TM-Training")]
    assert "| after | 1 of 2 | 0 | 0 of 0 | none |" in monet
    assert "| before | the same (MONET pins none of our constants) | | | |" in monet
    assert "1 check disagrees:" in monet
    assert f"| rankings_differ | inference and training rankings differ | 0.95 | **differs** | – | {NOT_ABLATED} |" in monet
    assert not any(line.startswith("| training_costs_more") for line in monet)
    # TM-Training: the calibrated row is not counted; two of three claims fail, one in magnitude only
    tiered = lines[lines.index("## TM-Training") :]
    assert "| after | 2 of 3 | 0 | 1 of 2 | 1 calibrated |" in tiered
    assert "| before | 0 of 3 | 0 | 0 of 2 | none |" in tiered
    assert "2 checks disagree:" in tiered
    rows = [line for line in tiered if line.startswith("| only_tm") or line.startswith("| deeptm")]
    assert rows == [
        "| only_tm_beats_hbm | 1.09 | 1.01 | agrees | **differs** | tier2_energy_factor=0.5 |",
        "| deeptm_behind | 0.95 | 1.02 | **differs** | – | no single assumption flips it |",
    ]
    assert not any(line.startswith(("| offchip_share", "| hbm_only")) for line in tiered)


def test_a_study_with_no_disagreement_and_no_study_at_all(tmp_path: Path) -> None:
    agreeing = MONET.replace("0.95,False,claim", "0.5,True,claim")
    text = fidelity_markdown([_page(tmp_path, "monet", agreeing, before_note="not run")])
    assert "0 checks disagree." in text and "| check |" not in text
    assert "No comparison table found." in fidelity_markdown([])
