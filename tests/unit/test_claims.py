"""Pareto fronts and the MONET claim checks on small tables whose answers are known."""

from __future__ import annotations

import numpy as np
import pandas as pd

from traincost.analysis.monet_claims import monet_hardware_claims
from traincost.analysis.pareto import pareto_mask


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
