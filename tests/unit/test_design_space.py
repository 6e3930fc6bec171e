"""The interactive design-space pages (``traincost.plots.design_space``): self-contained, every point's row in them,
and short enough for the report to show in Chromium.

The page's behaviour in a browser (hover, click two points, filter, offline) is checked by
``bench/report_screenshot.py`` in headless Chromium; these tests read the page as text.
"""

from __future__ import annotations

import itertools
import math
import re
from importlib.resources import files
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from traincost.analysis.edge_tpu import edge_tpu_resources
from traincost.errors import ConfigError
from traincost.hardware import config_id
from traincost.plots import design_space
from traincost.plots.design_space import (
    REPORT_URL_LIMIT,
    Axis,
    View,
    design_space_page,
    nsga_points,
    tiered_points,
    unpack,
    write_design_space_page,
)

REPO = Path(__file__).resolve().parents[2]

# a parameter of more than four significant digits (FuseMax's buffer bandwidth is 16,384 B/cycle) is kept whole
GRID = {
    "x_pes": [1, 4],
    "y_pes": [1, 4],
    "simd_units": [16, 64],
    "lanes": [1, 4],
    "local_memory_mb": [0.5, 2],
    "bw": [8192, 16384],
}
PARAMETERS = list(GRID)
# the cost columns of an Edge TPU sweep's inference step, as `traincost sweep` writes them
COSTS = (
    "latency_cycles",
    "energy_pj",
    "energy_mac_pj",
    "energy_register_file_pj",
    "energy_local_memory_pj",
    "energy_simd_memory_pj",
    "energy_bus_pj",
    "energy_offchip_pj",
    "energy_forward_pj",
    "offchip_bytes",
    "bus_bytes",
    "peak_onchip_bytes",
    "peak_offchip_bytes",
    "mac_pes",
)
VIEWS = [
    View("Figure 1", Axis("latency_cycles", "latency (cycles)"), Axis("energy_pj", "energy (pJ)"), Axis("total_compute", "c")),
    View("Figure 8", Axis("total_compute", "c"), Axis("energy_pj", "energy (pJ)"), Axis("pe_compute", "U·L", log=False)),
]


def _sweep(grid: dict[str, list[float]], *, seed: int = 0) -> pd.DataFrame:
    """Both steps of an Edge TPU sweep as ``traincost sweep`` writes them, with random costs: the training step has
    the per-phase columns the inference step lacks (NaN once concatenated)."""
    rng = np.random.default_rng(seed)
    configs = pd.DataFrame(list(itertools.product(*grid.values())), columns=list(grid), dtype=float)
    configs.insert(0, "config_id", [config_id("edge_tpu", row) for row in configs.to_dict("records")])
    steps = []
    for step in ("inference", "training"):
        n = len(configs)
        costs = {column: rng.uniform(1e6, 1e11, n) for column in COSTS}
        costs |= {"utilization": rng.uniform(0, 1, n), "fusion_fits": rng.uniform(0, 1, n) > 0.5}
        if step == "training":
            costs |= {"energy_backward_pj": rng.uniform(1e9, 4e10, n), "energy_optimizer_pj": rng.uniform(1e9, 3e10, n)}
        steps.append(configs.assign(workload="resnet18_cifar", hardware="edge_tpu", step=step, **costs))
    return edge_tpu_resources(pd.concat(steps, ignore_index=True))


def test_the_page_loads_nothing_from_elsewhere() -> None:
    page = design_space_page(_sweep(GRID), title="Figures 1 and 8", parameters=PARAMETERS, views=VIEWS)
    assert "http" not in page  # no URL at all: no script, style sheet, image or font from a network
    assert not re.search(r"\b(src|href)\s*=", page)  # nor from a file beside it
    assert page.count("<script") == 2 and "</script" not in files("traincost.plots").joinpath("design_space.js").read_text()


def test_every_point_carries_its_configuration_and_every_column_to_four_digits() -> None:
    table = _sweep(GRID)
    data = unpack(design_space_page(table, title="t", parameters=PARAMETERS, views=VIEWS))
    values = data["values"]
    assert data["parameters"] == PARAMETERS
    assert data["columns"][: 2 + len(PARAMETERS)] == ["config_id", "step", *PARAMETERS]
    assert set(data["columns"]) == set(table.columns) - {"workload", "hardware"}  # those two are named above the chart
    assert data["about"] == "workload resnet18_cifar, hardware edge_tpu"
    assert values["config_id"] == list(table["config_id"]) and values["step"] == list(table["step"])
    for parameter in PARAMETERS:
        assert values[parameter] == list(table[parameter])  # exact, 16,384 too
    assert values["fusion_fits"] == list(table["fusion_fits"])
    for column in (*COSTS, "utilization", "energy_backward_pj", "total_compute"):
        for ours, theirs in zip(values[column], table[column], strict=True):
            if math.isnan(theirs):
                assert ours is None, column  # the inference step has no backward energy
            else:
                assert ours == pytest.approx(theirs, rel=5e-4), column
    assert values["energy_backward_pj"].count(None) == len(table) // 2


def test_every_view_names_columns_of_the_page() -> None:
    data = unpack(design_space_page(_sweep(GRID), title="t", parameters=PARAMETERS, views=VIEWS))
    assert [view["name"] for view in data["views"]] == ["Figure 1", "Figure 8"]
    drawn = {view[axis]["column"] for view in data["views"] for axis in ("x", "y", "color")}
    assert drawn <= set(data["columns"])
    assert data["steps"] == ["inference", "training"]


def test_the_full_configs_edge_tpu_sweep_fits_the_reports_url(tmp_path) -> None:
    """Table II's 10,000 configurations per step (config/config.yaml), each cost a random 16-digit float: the
    report's data: URL of the page stays under the 2 MB Chromium opens (1.6 MB on 27 November 2026)."""
    config = yaml.safe_load((REPO / "config/config.yaml").read_text())
    grid = config["hardware_sweeps"][config["monet_hardware"]["edge_tpu"]]["grid"]
    table = _sweep(grid)
    assert len(table) == 20_000 and len(table.columns) == 30  # as the full run's two tables, with Figure 8's two
    out = tmp_path / "figures1_8.html"
    write_design_space_page(table, out, title="t", parameters=list(grid), views=VIEWS[:1])
    url = len("data:text/html;charset=utf8;base64,") + 4 * math.ceil(out.stat().st_size / 3)
    print(f"{url:,} characters")
    assert url < REPORT_URL_LIMIT, url


def test_a_page_too_long_for_the_report_is_refused(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(design_space, "REPORT_URL_LIMIT", 10_000)
    with pytest.raises(ConfigError, match="over the 10,000 Chromium opens"):
        write_design_space_page(_sweep(GRID), tmp_path / "p.html", title="t", parameters=PARAMETERS, views=VIEWS)
    assert not (tmp_path / "p.html").exists()


def test_a_missing_column_or_an_infinite_cost_is_named() -> None:
    table = _sweep(GRID)
    with pytest.raises(ConfigError, match="register_file_kb"):
        design_space_page(table, title="t", parameters=[*PARAMETERS, "register_file_kb"], views=VIEWS)
    table.loc[3, "energy_pj"] = math.inf
    with pytest.raises(ConfigError, match="energy_pj"):
        design_space_page(table, title="t", parameters=PARAMETERS, views=VIEWS)
    with pytest.raises(ConfigError, match="at least one view"):
        design_space_page(table, title="t", parameters=PARAMETERS, views=[])


def test_figure_12s_points_are_each_recompute_choice_against_the_baseline() -> None:
    """Two NSGA-II evaluations against a baseline of 100 cycles, 1,000 pJ and 4 MB of activations."""
    nsga = pd.DataFrame(
        {
            "latency_cycles": [100.0, 103.0],
            "energy_pj": [1000.0, 1020.0],
            "activation_bytes": [4e6, 1.5e6],
            "recompute_flops": [0.0, 5e5],
            "recomputed": [0, 2],
            "recompute": ["", "relu_1|relu_2"],
            "pareto": [True, True],
        }
    )
    base = pd.Series({"baseline_latency_cycles": 100.0, "baseline_energy_pj": 1000.0, "baseline_activation_bytes": 4e6})
    points = nsga_points(nsga, base)
    assert list(points["saved_mb"]) == [0.0, 2.5]
    assert list(points["latency_change_percent"]) == pytest.approx([0.0, 3.0])
    assert list(points["energy_change_percent"]) == pytest.approx([0.0, 2.0])
    assert points["config_id"].str.fullmatch(r"[0-9a-f]{12}").all() and points["config_id"].nunique() == 2
    assert set(points["step"]) == {"training"}
    views = [
        View(
            "Figure 12",
            Axis("saved_mb", "MB", log=False),
            Axis("latency_change_percent", "%", log=False),
            Axis("recomputed", "n", log=False),
        )
    ]
    values = unpack(design_space_page(points, title="t", parameters=["pareto", "recomputed"], views=views))["values"]
    assert values["recompute"] == ["", "relu_1|relu_2"] and values["config_id"] == list(points["config_id"])


def test_tm_training_figure_12s_points_are_each_run_of_the_variant() -> None:
    study = pd.DataFrame(
        {
            "workload": ["bert_large", "bert_large", "palm_540b", "palm_540b"],
            "variant": ["base", "base", "base", "double_batch"],
            "policy": ["tm_training", "sentinel", "tm_training", "tm_training"],
            "ratio": [25.0, 25.0, 5.0, 5.0],
            "throughput_vs_hbm": [0.9, 0.7, 0.5, 0.6],
            "energy_efficiency_vs_hbm": [0.8, 0.6, 0.4, 0.5],
        }
    )
    points = tiered_points(study)
    assert list(points["step"]) == ["bert_large", "bert_large", "palm_540b"]  # a panel per workload, base runs only
    assert points["config_id"].nunique() == 3
    views = [
        View("Figure 12", Axis("ratio", "r"), Axis("throughput_vs_hbm", "t", log=False), Axis("policy", "p", categorical=True))
    ]
    data = unpack(design_space_page(points, title="t", parameters=["policy", "ratio"], views=views))
    assert data["values"]["workload"] == list(points["workload"])  # kept: it differs between rows
    assert data["views"][0]["color"]["categorical"] is True
    with pytest.raises(ConfigError, match="no run of variant 'half'"):
        tiered_points(study, variant="half")
