"""Figures 1 and 8 say under the plot where the manual fusion ran fused: never a fusion that was not applied."""

from __future__ import annotations

import pandas as pd

from traincost.plots.hardware_sweeps import fusion_lines


def test_the_lines_count_the_configurations_where_every_group_fits() -> None:
    inference = pd.DataFrame({"fusion_fits": [True, False, True], "fitting_groups": [9, 3, 9]})
    training = pd.DataFrame({"fusion_fits": [False, False], "fitting_groups": [2, 2]})
    assert fusion_lines([("inference", inference), ("training", training)]) == [
        "inference: every fused group fits, and runs fused, at 2 of 3 configurations; 3 to 9 groups fit per "
        "configuration, the others run unfused",
        "training: every fused group fits, and runs fused, at 0 of 2 configurations; 2 groups fit per configuration, "
        "the others run unfused",
    ]


def test_a_sweep_without_fusion_says_nothing() -> None:
    unfused = pd.DataFrame({"fusion_fits": [True, True], "fitting_groups": [0, 0]})
    assert fusion_lines([("inference", unfused), ("training", pd.DataFrame({"latency_cycles": [1.0]}))]) == []
