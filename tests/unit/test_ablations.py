"""Ablations: the --assume switches reach the models, and the ablation table and `why` column say what flips."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

from tests.unit.test_tiered import HARDWARE, _hand_trace, _simple_system
from traincost.analysis.ablations import ASSUMPTIONS, NO_SINGLE, ablation_table, check_holds, parse_assume, why_column
from traincost.analysis.agreement import STUDIES, read_comparison
from traincost.analysis.mtrain_compare import dfs_ratio_count
from traincost.errors import ConfigError
from traincost.fpga.converting import ratios
from traincost.plots.ablations import plot_ablations
from traincost.tiered.assumptions import assumed_system, calibrated, study_system
from traincost.tiered.engine import Simulator
from traincost.tiered.policies import make_policy
from traincost.tiered.system import TieredSystem, load_tiered_system
from traincost.tiered.walk import Walk


@pytest.fixture(scope="module")
def system() -> TieredSystem:
    return load_tiered_system(HARDWARE)


def test_parse_assume_accepts_known_values_and_names_what_is_wrong() -> None:
    assert parse_assume("tiered", ["stall_static_power=false", "tier2_energy_factor=2"]) == {
        "stall_static_power": "false",
        "tier2_energy_factor": "2",
    }
    assert parse_assume("mtrain", None) == {}
    assert parse_assume("mtrain", ["calibrated=false"]) == {"calibrated": "false"}
    with pytest.raises(ConfigError, match="unknown tiered assumption 'stall'"):
        parse_assume("tiered", ["stall=false"])
    with pytest.raises(ConfigError, match=r"tier2_energy_factor='3': expected one of 1, 0.5, 2"):
        parse_assume("tiered", ["tier2_energy_factor=3"])
    with pytest.raises(ConfigError, match="expected NAME=VALUE"):
        parse_assume("tiered", ["stall_static_power"])
    with pytest.raises(ConfigError, match="given twice"):
        parse_assume("mtrain", ["dfs_ratio_rule=all", "dfs_ratio_rule=positive"])
    known = r"\(known: resident_fraction, bn_epilogue, fusion_tiling, allocation, front_rule\)"
    with pytest.raises(ConfigError, match=r"unknown monet assumption .bn. " + known):
        parse_assume("monet", ["bn=folded"])
    with pytest.raises(ConfigError, match=r"fp32_mac_dsp='4': expected one of 5, 3"):
        parse_assume("mtrain", ["fp32_mac_dsp=4"])
    assert parse_assume("mtrain", ["ip_dram_efficiency=0.5"]) == {"ip_dram_efficiency": "0.5"}
    assert parse_assume("monet", ["bn_epilogue=true"]) == {"bn_epilogue": "true"}


def test_stall_static_power_switch_charges_static_power_over_compute_time_only(system: TieredSystem) -> None:
    # the hand trace of test_tiered: 6.5 s per iteration, 3.5 s of it stalled, under Hor_On with 300 B of Tier 1
    chip = replace(_simple_system(system), accelerator_static_w=2.0)
    runs = {}
    for value in ("true", "false"):
        assumed = assumed_system(chip, parse_assume("tiered", [f"stall_static_power={value}"]))
        runs[value] = Simulator(Walk.of(_hand_trace(), 1), assumed, make_policy("hor_on"), tier1_bytes=300.0).run()
    assert runs["true"].iteration_s == runs["false"].iteration_s == pytest.approx(6.5)
    assert runs["true"].energy_accelerator_j == pytest.approx(2.0 * 6.5)
    assert runs["false"].energy_accelerator_j == pytest.approx(2.0 * (6.5 - 3.5))


def test_tier2_energy_factor_scales_only_tier2_energy(system: TieredSystem) -> None:
    chip = _simple_system(system)
    base = Simulator(Walk.of(_hand_trace(), 1), chip, make_policy("hor_on"), tier1_bytes=300.0).run()
    doubled_chip = assumed_system(chip, parse_assume("tiered", ["tier2_energy_factor=2"]))
    doubled = Simulator(Walk.of(_hand_trace(), 1), doubled_chip, make_policy("hor_on"), tier1_bytes=300.0).run()
    # promotions read Tier 2 (10 -> 20 pJ/B) and write Tier 1 (1 pJ/B); demotions the reverse
    assert doubled.energy_migration_j == pytest.approx((300 * (20 + 1) + 100 * (1 + 20)) * 1e-12)
    assert base.energy_migration_j == pytest.approx((300 * (10 + 1) + 100 * (1 + 10)) * 1e-12)
    assert doubled.iteration_s == base.iteration_s


def test_baseline_assumptions_leave_the_system_as_it_was(system: TieredSystem) -> None:
    assert assumed_system(system, {}) == system
    # the registry's baselines, each named, are the system as loaded (at the calibrated scale)
    baselines = {a.name: a.baseline for a in ASSUMPTIONS["tiered"]}
    assert calibrated({}) is calibrated(baselines) is True
    assert study_system(system, baselines, accelerator_energy_scale=0.5) == system.with_accelerator_energy_scale(0.5)
    assert study_system(system, {"calibrated": "false"}, accelerator_energy_scale=0.5) == system


@pytest.mark.parametrize(
    ("name", "value"), [(a.name, v) for a in ASSUMPTIONS["tiered"] if a.name != "calibrated" for v in a.variants]
)
def test_every_variant_of_an_assumption_changes_the_system(system: TieredSystem, name: str, value: str) -> None:
    assert assumed_system(system, {name: value}) != system


def test_an_assumption_the_system_does_not_take_is_named(system: TieredSystem) -> None:
    with pytest.raises(ConfigError, match="tiered assumption 'calibrated': not a switch of the system"):
        assumed_system(system, {"calibrated": "false"})
    with pytest.raises(ConfigError, match="stall_static_power='yes': expected true or false"):
        assumed_system(system, {"stall_static_power": "yes"})
    with pytest.raises(ConfigError, match="tier2_energy_factor='two': expected a number"):
        assumed_system(system, {"tier2_energy_factor": "two"})


@pytest.mark.parametrize(("batch", "parts", "step"), [(32, 2, 1), (16, 3, 2), (12, 4, 3), (7, 2, 2)])
def test_dfs_ratio_rules_count_what_the_search_enumerates(batch: int, parts: int, step: int) -> None:
    every = ratios(batch, parts, step)
    cell = pd.Series(
        {"batch": batch, "ratio_step": step, "dfs_ratio": "|".join(["1"] * parts), "dfs_ratios_mapped": len(every)}
        | {"ratios_feasible": 5}
    )
    assert dfs_ratio_count(cell, "all") == len(every)
    assert dfs_ratio_count(cell, "positive") == sum(all(s >= step for s in r) for r in every)
    assert dfs_ratio_count(cell, "feasible") == 5
    with pytest.raises(ConfigError, match="DFS ratio rule 'some'"):
        dfs_ratio_count(cell, "some")


def _compare(path: Path, agrees: list[object], magnitude: list[object], ours: list[float]) -> Path:
    """A small tiered-shaped comparison: three claims on one workload, one timing row."""
    n = len(agrees)
    frame = pd.DataFrame(
        {
            "figure": ["f8"] * n,
            "workload": [f"w{i}" for i in range(n)],
            "ratio": [25] * n,
            "metric": ["m"] * n,
            "claim": ["c"] * (n - 1) + ["t"],
            "paper": [1.0] * n,
            "ours": ours,
            "check": ["ours > 1"] * n,
            "agrees": agrees,
            "kind": ["claim"] * (n - 1) + ["timing"],
            "magnitude": magnitude,
            "note": [""] * n,
        }
    )
    frame.to_csv(path, index=False)
    return path


def test_ablation_table_and_why_name_the_change_that_flips_a_check(tmp_path: Path) -> None:
    study = STUDIES["tiered"]
    # baseline: w0 holds, w1 fails in direction, w2 holds in direction but not in magnitude, w3 is timing
    base = read_comparison(
        _compare(tmp_path / "b.csv", [True, False, True, None], [True, None, False, None], [1, 0, 3, 9]), study
    )
    fixes_w1 = read_comparison(
        _compare(tmp_path / "a.csv", [True, True, True, None], [True, None, False, None], [1, 2, 3, 9]), study
    )
    breaks_w0 = read_comparison(
        _compare(tmp_path / "c.csv", [False, False, True, None], [None, None, False, None], [0, 0, 3, 9]), study
    )
    assert list(check_holds(base).astype(object)) == [True, False, False, pd.NA]
    table = ablation_table(study, base, [("x", "1", fixes_w1), ("y", "2", breaks_w0)])
    assert len(table) == 6  # three judged claims per run; the timing row is not judged
    flips = table[table["flips"]][["assumption", "check"]].to_numpy().tolist()
    assert flips == [["x", "c w1"], ["y", "c w0"]]
    why = why_column(study, base, table)
    # "no single assumption" says which were tried
    assert list(why) == ["", "x=1", f"{NO_SINGLE} (tried: x=1, y=2)", ""]
    out = [tmp_path / "h.png"]
    plot_ablations(table, out, title="t")
    assert out[0].stat().st_size > 0


def test_why_names_a_paper_value_above_our_models_ceiling(tmp_path: Path) -> None:
    study = STUDIES["tiered"]
    path = _compare(tmp_path / "b.csv", [False, False, True, None], [None, None, None, None], [0.8, 0.9, 1.1, 9])
    frame = pd.read_csv(path).assign(paper=[1.09, 1.0, 1.0, 1.0], ceiling=[1.014, 2.0, None, None])
    frame.to_csv(path, index=False)
    base = read_comparison(path, study)
    why = why_column(study, base, ablation_table(study, base, [("x", "1", base)]))
    bound = "a bound of our model: the paper's 1.09 is above the most it can reach, 1.014 (see check)"
    assert why[0] == f"{bound}; {NO_SINGLE} (tried: x=1)"
    assert list(why[1:]) == [f"{NO_SINGLE} (tried: x=1)", "", ""]  # a ceiling above the paper's value is no reason


def test_ablation_runs_must_judge_every_baseline_check_and_may_judge_more(tmp_path: Path) -> None:
    study = STUDIES["tiered"]
    base = read_comparison(_compare(tmp_path / "b.csv", [True, False, None], [None, None, None], [1, 0, 9]), study)
    more = read_comparison(_compare(tmp_path / "m.csv", [True, False, True, None], [None, None, None, None], [1, 0, 1, 9]), study)
    fewer = read_comparison(_compare(tmp_path / "f.csv", [True, None], [None, None], [1, 9]), study)
    table = ablation_table(study, base, [("calibrated", "false", more)])  # an uncalibrated run judges a target too
    assert sorted(table["check"]) == ["c w0", "c w1"]
    with pytest.raises(ConfigError, match="ablation x=1 of TM-Training: the run misses"):
        ablation_table(study, base, [("x", "1", fewer)])
    # a check the run has but does not judge (informational there) is left out of that run, not a flip
    path = _compare(tmp_path / "i.csv", [False, True, None], [None, None, None], [0, 1, 9])
    frame = pd.read_csv(path)
    frame.loc[0, "kind"] = "informational"
    frame.to_csv(path, index=False)
    table = ablation_table(study, base, [("x", "1", read_comparison(path, study))])
    assert table["check"].tolist() == ["c w1"]  # w0 is not judged in the run: left out, whatever it says


def test_positive_rule_is_the_binomial_count() -> None:
    # 32 samples over 2 FPGAs in steps of 1: 33 splits, 31 of them give each FPGA a sample
    cell = pd.Series({"batch": 32, "ratio_step": 1, "dfs_ratio": "16|16", "dfs_ratios_mapped": 33, "ratios_feasible": 33})
    assert dfs_ratio_count(cell, "positive") == 31
    assert dfs_ratio_count(cell, "all") == 33


def test_why_names_a_bound_below_the_papers_number_where_the_paper_states_it_beside_words(tmp_path: Path) -> None:
    # MONET states its claims in words; its one number (13 MB saved) is in paper_value, our total (10.4 MB) the bound
    path = tmp_path / "claims.csv"
    pd.DataFrame(
        {
            "claim": ["saving"],
            "figure": ["12"],
            "paper_says": ["up to 13 MB saved"],
            "check": ["> 0"],
            "value": [8.3],
            "holds": [True],
            "kind": ["claim"],
            "magnitude": [False],
            "paper_value": [13.0],
            "ceiling": [10.4],
        }
    ).to_csv(path, index=False)
    study = STUDIES["monet"]
    base = read_comparison(path, study)
    why = why_column(study, base, ablation_table(study, base, [("bn_epilogue", "true", base)]))
    assert why[0].startswith("a bound of our model: the paper's 13 is above the most it can reach, 10.4")
