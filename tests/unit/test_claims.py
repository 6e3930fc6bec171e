"""Pareto fronts and the MONET claim checks on small tables whose answers are known."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from traincost.analysis.monet_claims import FRONT_MARGIN, front_overlap, monet_hardware_claims, monet_section5_claims
from traincost.analysis.pareto import margin_front_mask, near_front_mask, pareto_mask
from traincost.errors import ConfigError

PAPER = pd.DataFrame(
    {
        "claim": ["checkpoint_saving_within_tolerance"] * 2 + ["inference_graph_nodes", "training_graph_nodes"],
        "figure": [12, 12, 10, 10],
        "metric": ["saved_mb", "tolerance", "nodes", "nodes"],
        "value": [13, 0.04, 100, 500],
    }
)


def test_pareto_front_by_hand() -> None:
    latency = np.array([1.0, 2.0, 3.0, 2.0, 4.0])
    energy = np.array([5.0, 3.0, 1.0, 4.0, 1.0])
    # (2,4) is beaten by (2,3); (4,1) by (3,1)
    assert list(pareto_mask(latency, energy)) == [True, True, True, False, False]


def _edge(latency: list[float], energy: list[float], pe: list[int]) -> pd.DataFrame:
    n = len(latency)
    return pd.DataFrame(
        {
            "config_id": [f"c{i}" for i in range(n)],
            "x_pes": [1 + i % 2 for i in range(n)],
            "y_pes": 1,
            "simd_units": pe,
            "lanes": 1,
            "latency_cycles": latency,
            "energy_pj": energy,
        }
    )


def _gpt(latency: list[float], bandwidth: list[int]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "config_id": [f"g{i}" for i in range(len(latency))],
            "buffer_bandwidth": bandwidth,
            "latency_cycles": latency,
            "energy_pj": latency,
        }
    )


def test_claims_report_values_and_verdicts() -> None:
    inference = _edge([10, 8, 6, 4], [5, 6, 7, 8], [16, 16, 128, 128])
    training = _edge([40, 32, 24, 16], [20, 24, 28, 32], [16, 16, 128, 128])  # same ranking: claims of difference fail
    gpt_inference = _gpt([1.0, 1.1, 0.9, 1.0], [8192, 8192, 16384, 16384])
    gpt_training = _gpt([2.0, 2.2, 1.0, 1.1], [8192, 8192, 16384, 16384])
    claims = monet_hardware_claims(inference, training, gpt_inference, gpt_training).set_index("claim")
    assert claims.loc["inference_training_latency_cycles_rankings_differ", "value"] == 1.0
    assert not claims.loc["inference_training_latency_cycles_rankings_differ", "holds"]
    assert claims.loc["edge_tpu_resnet18_training_costs_more_than_inference", "holds"]
    # median training latency 2.1 at 8192 B/cycle, 1.05 at 16384: ratio 0.5
    assert claims.loc["gpt2_buffer_bandwidth_lowers_training_latency", "value"] == 0.5
    counted = claims[claims["kind"] == "claim"].drop(index="inference_larger_pes_reduce_latency")  # no pairs to compare here
    assert counted["holds"].notna().all() and counted["magnitude"].isna().all()  # stated in words: no magnitude
    kinds = claims["kind"]
    assert kinds["inference_training_latency_cycles_rankings_differ"] == "extension"  # the paper's claim is joint
    assert set(kinds[kinds == "invariant"].index) == {
        "edge_tpu_resnet18_training_costs_more_than_inference",
        "fusemax_gpt2_training_costs_more_than_inference",
    }
    # every Figure 8 front row is kept in three forms: strict and near-the-best superseded, by margin counted
    for name in ("training_latency_front_has_no_largest_pe", "inference_energy_front_has_no_largest_pe"):
        assert kinds[name] == kinds[f"{name}_within_tolerance"] == "superseded"
        assert kinds[f"{name}_by_margin"] == "claim" and f"{name}_by_margin" in claims.loc[f"{name}_within_tolerance", "check"]
    assert kinds["energy_latency_pareto_fronts_differ"] == "superseded"
    assert kinds["energy_latency_fronts_differ_by_margin"] == "claim"


def test_a_point_within_the_tolerance_of_the_front_counts_as_on_it() -> None:
    compute = np.array([1.0, 2.0, 2.0, 3.0, 4.0])
    latency = np.array([10.0, 8.0, 8.004, 8.0, 9.0])
    # (2, 8.004) is 0.05 % above (2, 8); (3, 8) ties the best at no more compute; (4, 9) is 12.5 % above it
    assert list(pareto_mask(compute, latency)) == [True, True, False, False, False]
    assert list(near_front_mask(compute, latency, tolerance=0.0)) == [True, True, False, True, False]
    assert list(near_front_mask(compute, latency, tolerance=0.001)) == [True, True, True, True, False]


def test_a_point_is_off_the_margin_front_only_when_dominated_by_the_margin() -> None:
    compute = np.array([32768.0, 65536.0, 65536.0, 1024.0, 2048.0])
    latency = np.array([100.0, 100.004, 99.5, 150.0, 149.0])
    # (65536, 100.004) costs 0.004 % more than (32768, 100) at twice the compute: dominated by the margin, though
    # near the best cost at no more compute (the 15 largest-PE points); so is (65536, 99.5): 0.5 % better is a
    # tie within 1 %, at twice the compute; (2048, 149) is within 1 % of (1024, 150) at twice its compute: removed
    on_front = margin_front_mask(compute, latency, margin=0.01)
    assert list(on_front) == [True, False, False, True, False]
    # 2 % better at twice the compute is a trade-off: kept
    assert margin_front_mask(compute, np.array([100.0, 100.004, 98.0, 150.0, 149.0]), margin=0.01)[2]
    # the case alone: near the best cost (0.004 %) at twice the compute is on the near front, off the margin one
    pair = (np.array([32768.0, 65536.0]), np.array([100.0, 100.004]))
    assert list(near_front_mask(*pair, tolerance=0.001)) == [True, True]
    assert list(margin_front_mask(*pair, margin=0.01)) == [True, False]
    # with no margin, the strict front with its exact ties
    assert list(margin_front_mask(compute, latency, margin=0.0)) == [True, False, True, True, True]
    # brute force on random points, three margins
    rng = np.random.default_rng(0)
    for margin in (0.0, 0.01, 0.1):
        a, b = rng.choice([1.0, 2.0, 3.0], 40) * rng.choice([1.0, 1.004], 40), rng.uniform(1, 2, 40).round(2)
        expected = [
            not any(
                a[q] <= a[p] * (1 + margin)
                and b[q] <= b[p] * (1 + margin)
                and (a[q] < a[p] * (1 - margin) or b[q] < b[p] * (1 - margin))
                for q in range(40)
            )
            for p in range(40)
        ]
        assert list(margin_front_mask(a, b, margin=margin)) == expected


def _grid(seed: int = 0) -> pd.DataFrame:
    """A sweep with mirrored configurations (x and y PEs swapped cost the same) and a smooth energy-latency trade-off."""
    rng = np.random.default_rng(seed)
    rows = []
    for x in (1, 2, 4, 6, 8):
        for y in (1, 2, 4, 6, 8):
            for unit in (16, 32, 64, 128):
                for memory in (0.5, 1, 2, 3, 4):
                    compute = x * y * unit
                    latency = 1e6 / compute**0.7 * (1 + 0.05 / memory) * (1 + 0.02 * rng.random())
                    energy = 1e9 * (compute**0.3) * (1 + 0.1 * memory) * (1 + 0.02 * rng.random())
                    rows.append((x, y, unit, memory, latency, energy))
    frame = pd.DataFrame(rows, columns=["x_pes", "y_pes", "simd_units", "local_memory_mb", "latency_cycles", "energy_pj"])
    frame = frame.assign(lanes=1, config_id=[f"c{i}" for i in range(len(frame))])
    mirrored = frame.set_index(["x_pes", "y_pes", "simd_units", "local_memory_mb"])
    for column in ("latency_cycles", "energy_pj"):  # y x swapped costs what x y does
        frame[column] = [
            mirrored.loc[(min(x, y), max(x, y), u, m), column] for x, y, u, m in frame.iloc[:, :4].itertuples(index=False)
        ]
    return frame


def test_the_front_overlap_is_stable_under_noise_and_sees_a_real_difference() -> None:
    sweep = _grid()
    for seed in range(5):
        rng = np.random.default_rng(seed)
        noisy = sweep.assign(
            latency_cycles=sweep["latency_cycles"] * (1 + 1e-4 * rng.standard_normal(len(sweep))),
            energy_pj=sweep["energy_pj"] * (1 + 1e-4 * rng.standard_normal(len(sweep))),
        )
        # the sweep against itself with noise: the check must say the fronts agree (not differ, Jaccard >= 0.5)
        assert front_overlap(sweep, noisy) >= 0.5
    # a sweep whose trade-off runs the other way differs
    other = sweep.assign(energy_pj=1e18 / sweep["energy_pj"])
    assert front_overlap(sweep, other) < 0.5
    assert FRONT_MARGIN == 0.01


def test_figure8_front_checks_can_fail_and_hold() -> None:
    inference = _edge([10, 8, 6, 4], [5, 6, 7, 8], [16, 32, 64, 128])
    g = _gpt([1.0, 1.1, 0.9, 1.0], [8192, 8192, 16384, 16384])
    # the largest U·L (128) has the best training latency by 5 %: on every front, the claim fails
    training = _edge([40, 30, 21.0, 20.0], [20, 24, 28, 32], [16, 32, 64, 128])
    claims = monet_hardware_claims(inference, training, g, g).set_index("claim")
    assert claims.loc["training_latency_front_has_no_largest_pe_by_margin", "value"] == 1
    assert claims.loc["training_latency_front_has_no_largest_pe_by_margin", "verdict"] == "differs"
    # within 1 % of a smaller PE's latency at more compute: dominated by the margin, the claim holds; the superseded
    # near-the-best front counted it as on the front
    training = _edge([40, 30, 20.0, 20.002], [20, 24, 28, 32], [16, 32, 64, 128])
    claims = monet_hardware_claims(inference, training, g, g).set_index("claim")
    assert claims.loc["training_latency_front_has_no_largest_pe_within_tolerance", "value"] == 1
    assert claims.loc["training_latency_front_has_no_largest_pe_by_margin", "value"] == 0
    assert claims.loc["training_latency_front_has_no_largest_pe_by_margin", "verdict"] == "agrees"


def _fusion(
    step: str, manual: tuple[float, float], limits: dict[str, tuple[float, float]], base: tuple[float, float] = (200.0, 20.0)
) -> pd.DataFrame:
    rows = [("base", *base), ("manual", *manual)] + [(name, *values) for name, values in limits.items()]
    frame = pd.DataFrame([{"strategy": n, "step": step, "latency_cycles": lat, "energy_pj": e} for n, lat, e in rows])
    return frame.assign(peak_onchip_bytes=100.0, peak_offchip_bytes=1000.0)


def test_section5_claims_by_hand() -> None:
    # Figure 10: limit6 has the lowest latency (90 of manual's 100), limit4 the lowest energy (12 of manual's 10)
    fusion = _fusion("inference", (100.0, 10.0), {"limit4": (120.0, 12.0), "limit6": (90.0, 13.0)})
    # Figure 11: latency changes 1 and 2 alone, 3 together (additive); energy 1 and 1 alone, 4 together (not)
    additivity = pd.DataFrame(
        {"scenario": ["AC00", "AC10", "AC01", "AC11"], "latency_cycles": [10.0, 11, 12, 13], "energy_pj": [5.0, 6, 6, 9]}
    )
    summary = pd.DataFrame([{"tolerance": 0.04, "saved_bytes": 12e6, "saved_fraction": 0.4, "baseline_activation_bytes": 30e6}])
    claims = monet_section5_claims([fusion], additivity, summary, PAPER).set_index("claim")
    assert claims.loc["fusion_solver_beats_manual_inference_latency", "value"] == pytest.approx(0.9)
    assert claims.loc["fusion_solver_beats_manual_inference_latency", "holds"]
    assert claims.loc["fusion_solver_beats_manual_inference_energy", "value"] == pytest.approx(1.2)
    assert not claims.loc["fusion_solver_beats_manual_inference_energy", "holds"]
    assert claims.loc["fusion_solver_beats_manual_inference_energy", "kind"] == "claim"
    # neither limit is below manual in both: "most of the time" fails, "consistently" too (13 / 10 the largest)
    assert claims.loc["fusion_solver_beats_manual_most_of_the_time", "value"] == 0.0
    assert claims.loc["fusion_solver_consistently_beats_manual", "value"] == pytest.approx(1.3)
    assert claims.loc["fusion_solver_beats_base_inference", "value"] == pytest.approx(0.65)  # 13 / 20
    # the paper's Figure 10 is inference: the same check on the training step is ours
    training = monet_section5_claims([fusion.assign(step="training")], None, None, PAPER).set_index("claim")
    assert set(training.loc[training.index.str.startswith("fusion_solver_beats_manual"), "kind"]) == {"extension"}
    assert training.loc["optimizer_fusion_reduces_memory", "verdict"] == "tie"  # the same peak memory: no saving
    assert (
        claims.loc["recomputation_not_additive_latency", "value"] == 0
        and not claims.loc["recomputation_not_additive_latency", "holds"]
    )
    assert claims.loc["recomputation_not_additive_energy", "value"] == pytest.approx(0.5)  # |4 - 2| / 4
    assert claims.loc["recomputation_not_additive_energy", "holds"]
    saving = claims.loc["checkpoint_saving_within_tolerance"]
    assert saving["value"] == pytest.approx(12.0) and saving["holds"] and saving["magnitude"]  # 12 / 13 in the band
    assert "0.67-1.5x" in saving["check"] and "exceeds" not in saving["check"] and saving["ceiling"] == pytest.approx(30.0)
    small = summary.assign(saved_bytes=2e6, baseline_activation_bytes=5e6)
    saving = monet_section5_claims([], None, small, PAPER).iloc[0]
    assert not saving["magnitude"] and "exceeds that whole total" in saving["check"]  # 13 MB > our 5 MB of activations
    assert monet_section5_claims([], None, None, PAPER).empty


def test_the_length_limit_claims_need_a_difference() -> None:
    limits = {f"limit{n}_free": (100.0, 10.0) for n in (4, 5, 6, 7, 8)}
    claims = monet_section5_claims([_fusion("inference", (120.0, 12.0), limits)], None, None, PAPER).set_index("claim")
    # every length gives the same fusion: 6 is not "the optimal", it ties; 4 is "similar" to it
    assert claims.loc["fusion_limit6_best_without_type_limits", "verdict"] == "tie"
    assert claims.loc["fusion_limit4_latency_similar_to_limit6", "verdict"] == "agrees"
    limits["limit6_free"] = (90.0, 9.0)
    claims = monet_section5_claims([_fusion("inference", (120.0, 12.0), limits)], None, None, PAPER).set_index("claim")
    assert claims.loc["fusion_limit6_best_without_type_limits", "verdict"] == "agrees"
    assert claims.loc["fusion_limit4_latency_similar_to_limit6", "verdict"] == "differs"  # 100 / 90: 11 % apart


def test_checkpoint_and_graph_claims_by_hand() -> None:
    summary = pd.DataFrame(
        [
            {
                "tolerance": 0.04,
                "saved_bytes": 5.0,
                "saved_fraction": 0.5,
                "baseline_activation_bytes": 10.0,
                "baseline_latency_cycles": 100.0,
                "baseline_energy_pj": 100.0,
            }
        ]
    )
    # one choice saves memory and latency but costs energy; the front trades memory for latency
    nsga = pd.DataFrame(
        {
            "activation_bytes": [10.0, 6.0, 2.0, 1.0],
            "latency_cycles": [100.0, 95.0, 104.0, 110.0],
            "energy_pj": [100.0, 101.0, 103.0, 105.0],
            "pareto": [True, True, True, True],
        }
    )
    claims = monet_section5_claims([], None, summary, PAPER, nsga=nsga).set_index("claim")
    assert claims.loc["checkpoint_lower_memory_and_latency_not_energy", "verdict"] == "agrees"
    assert claims.loc["checkpointing_with_fusion_reduces_cost", "value"] == pytest.approx(0.95)
    assert claims.loc["nsga_front_balances_objectives", "value"] == pytest.approx(1.1)  # 110 / 100
    # a MILP choice that beats every front point by more than the margin: the genetic algorithm is not "improved"
    milp = pd.DataFrame({"activation_bytes": [0.5], "latency_cycles": [90.0], "energy_pj": [90.0]})
    claims = monet_section5_claims([], None, summary, PAPER, nsga=nsga, milp=milp).set_index("claim")
    assert (
        claims.loc["conclusion_nsga_improved_pareto", "value"] == 4
        and claims.loc["conclusion_nsga_improved_pareto", "verdict"] == "differs"
    )
    milp = milp.assign(latency_cycles=200.0)
    claims = monet_section5_claims([], None, summary, PAPER, nsga=nsga, milp=milp).set_index("claim")
    assert claims.loc["conclusion_nsga_improved_pareto", "verdict"] == "agrees"
    runs = pd.DataFrame({"step": ["inference", "training"], "max_length": [4, 4], "nodes": [47, 993], "candidates": [119, 1511]})
    claims = monet_section5_claims([], None, None, PAPER, solver_runs=runs).set_index("claim")
    # the paper's numbers are weighed in magnitude only: 47 of about 100 nodes is outside 0.67-1.5x
    assert claims.loc["inference_graph_nodes", "verdict"] == "magnitude" and pd.isna(claims.loc["inference_graph_nodes", "holds"])
    assert claims.loc["training_graph_nodes", "paper_value"] == 500
    assert claims.loc["training_graph_several_times_more_nodes", "value"] == pytest.approx(993 / 47)


def test_section5_claims_name_what_is_missing() -> None:
    with pytest.raises(ConfigError, match="'manual'"):
        monet_section5_claims([_fusion("training", (1.0, 1.0), {}).iloc[:1]], None, None, PAPER)
    with pytest.raises(ConfigError, match="AC11"):
        monet_section5_claims([], pd.DataFrame({"scenario": ["AC00", "AC10", "AC01"], "latency_cycles": 1.0}), None, PAPER)
