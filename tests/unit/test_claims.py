"""Pareto fronts and the MONET claim checks on small tables whose answers are known."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from traincost.analysis.monet_claims import monet_hardware_claims, monet_section5_claims
from traincost.analysis.pareto import near_front_mask, pareto_mask
from traincost.errors import ConfigError

PAPER = pd.DataFrame(
    {
        "claim": ["checkpoint_saving_within_tolerance"] * 2,
        "figure": [12, 12],
        "metric": ["saved_mb", "tolerance"],
        "value": [13, 0.04],
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
    assert set(claims["holds"].map(type)) == {bool}
    assert claims["magnitude"].isna().all()  # stated in words: no magnitude
    kinds = claims["kind"]
    assert kinds["inference_training_latency_cycles_rankings_differ"] == "extension"  # the paper's claim is joint
    assert set(kinds[kinds == "invariant"].index) == {
        "edge_tpu_resnet18_training_costs_more_than_inference",
        "fusemax_gpt2_training_costs_more_than_inference",
    }
    # every strict-front row of Figure 8 is superseded by its row with a tolerance, named in its check
    superseded = kinds[kinds == "superseded"].index
    assert len(superseded) == 3
    for name in superseded:
        assert kinds[f"{name}_within_tolerance"] == "claim" and f"{name}_within_tolerance" in claims.loc[name, "check"]


def test_a_point_within_the_tolerance_of_the_front_counts_as_on_it() -> None:
    compute = np.array([1.0, 2.0, 2.0, 3.0, 4.0])
    latency = np.array([10.0, 8.0, 8.004, 8.0, 9.0])
    # (2, 8.004) is 0.05 % above (2, 8); (3, 8) ties the best at no more compute; (4, 9) is 12.5 % above it
    assert list(pareto_mask(compute, latency)) == [True, True, False, False, False]
    assert list(near_front_mask(compute, latency, tolerance=0.0)) == [True, True, False, True, False]
    assert list(near_front_mask(compute, latency, tolerance=0.001)) == [True, True, True, True, False]


def test_figure8_front_checks_with_and_without_tolerance() -> None:
    # the largest U·L (128) is the best training latency at the largest compute by 0.01 %: on the strict front, and
    # within 0.1 % of a smaller PE's latency, so on the front with the tolerance too; it never leaves the front
    inference = _edge([10, 8, 6, 4], [5, 6, 7, 8], [16, 32, 64, 128])
    training = _edge([40, 30, 20.002, 20.0], [20, 24, 28, 32], [16, 32, 64, 128])
    g = _gpt([1.0, 1.1, 0.9, 1.0], [8192, 8192, 16384, 16384])
    claims = monet_hardware_claims(inference, training, g, g).set_index("claim")
    assert claims.loc["training_latency_front_has_no_largest_pe", "value"] == 1
    assert claims.loc["training_latency_front_has_no_largest_pe_within_tolerance", "value"] == 1
    # a larger PE 0.5 % worse than a smaller one at more compute: off the strict front and off the tolerant one
    training = _edge([40, 30, 20.0, 20.1], [20, 24, 28, 32], [16, 32, 64, 128])
    claims = monet_hardware_claims(inference, training, g, g).set_index("claim")
    assert claims.loc["training_latency_front_has_no_largest_pe", "value"] == 0
    assert claims.loc["training_latency_front_has_no_largest_pe_within_tolerance", "value"] == 0
    # 0.05 % worse: off the strict front, on the tolerant one
    training = _edge([40, 30, 20.0, 20.01], [20, 24, 28, 32], [16, 32, 64, 128])
    claims = monet_hardware_claims(inference, training, g, g).set_index("claim")
    assert claims.loc["training_latency_front_has_no_largest_pe", "value"] == 0
    assert claims.loc["training_latency_front_has_no_largest_pe_within_tolerance", "value"] == 1


def _fusion(step: str, manual: tuple[float, float], limits: dict[str, tuple[float, float]]) -> pd.DataFrame:
    rows = [("manual", *manual)] + [(name, *values) for name, values in limits.items()]
    return pd.DataFrame([{"strategy": n, "step": step, "latency_cycles": lat, "energy_pj": e} for n, lat, e in rows])


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
    # the paper's Figure 10 is inference: the same check on the training step is ours
    training = monet_section5_claims([fusion.assign(step="training")], None, None, PAPER).set_index("claim")
    assert set(training["kind"]) == {"extension"}
    assert (
        claims.loc["recomputation_not_additive_latency", "value"] == 0
        and not claims.loc["recomputation_not_additive_latency", "holds"]
    )
    assert claims.loc["recomputation_not_additive_energy", "value"] == pytest.approx(0.5)  # |4 - 2| / 4
    assert claims.loc["recomputation_not_additive_energy", "holds"]
    saving = claims.loc["checkpoint_saving_within_tolerance"]
    assert saving["value"] == pytest.approx(12.0) and saving["holds"] and saving["magnitude"]  # 12 / 13 in the band
    assert "0.67-1.5x" in saving["check"] and "exceeds" not in saving["check"]
    small = summary.assign(saved_bytes=2e6, baseline_activation_bytes=5e6)
    saving = monet_section5_claims([], None, small, PAPER).iloc[0]
    assert not saving["magnitude"] and "exceeds that whole total" in saving["check"]  # 13 MB > our 5 MB of activations
    assert monet_section5_claims([], None, None, PAPER).empty


def test_section5_claims_name_what_is_missing() -> None:
    with pytest.raises(ConfigError, match="'manual'"):
        monet_section5_claims([_fusion("training", (1.0, 1.0), {}).iloc[:1].assign(strategy="base")], None, None, PAPER)
    with pytest.raises(ConfigError, match="AC11"):
        monet_section5_claims([], pd.DataFrame({"scenario": ["AC00", "AC10", "AC01"], "latency_cycles": 1.0}), None, PAPER)
