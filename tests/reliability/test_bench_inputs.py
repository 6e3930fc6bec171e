"""The benches a user runs by hand take what they list: ZigZag's bundled hardware with the mapping ZigZag ships for it,
and judge only what both tools cost."""

from __future__ import annotations

import importlib
import re
from datetime import date
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from tests.reliability.conftest import REPO
from tests.workloads import ZIGZAG_LAYERS, write_zigzag_loma_tables
from traincost.cost import op_table
from traincost.schedule import SchedulePlan, schedule
from traincost.workload import LOOP_DIMS


def test_the_crosscheck_bench_gives_zigzag_the_bundled_mapping_of_every_hardware_it_accepts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """ZigZag ships meta_prototype's mapping as ``meta_prototype_like.yaml``; the bench looked for ``meta_prototype.yaml``
    (a FileNotFoundError traceback) where the importer found the right one."""
    monkeypatch.syspath_prepend(str(REPO / "bench/crosscheck"))
    bench = importlib.import_module("zigzag_crosscheck")
    monkeypatch.setattr(bench, "zigzag_inputs", lambda: REPO / "tests/fixtures/hardware/zigzag")
    accepted = bench.importable()
    assert {"meta_prototype", "tpu_like", "eyeriss_like"} <= set(accepted)
    for hardware in accepted:
        assert bench.zigzag_mapping(hardware).is_file(), hardware
    assert bench.zigzag_mapping("meta_prototype").name == "meta_prototype_like.yaml"
    # ZigZag's mixed mappings, each with the hardware it is for: all five import (two had not: a served memory's
    # instances over the whole array, a dimension left to a hint dropped)
    assert set(bench.MIXED) <= set(accepted)
    assert bench.zigzag_mapping("meta_prototype_like_mixed").name == "meta_prototype_like_mixed.yaml"
    assert bench.hardware_file("meta_prototype_like_mixed").name == "meta_prototype.yaml"


def test_the_crosscheck_judges_only_the_layers_zigzag_maps(monkeypatch: pytest.MonkeyPatch) -> None:
    """``gemm_l1`` has no DRAM: ZigZag finds no loop order for a layer larger than its l1 (its row is NaN). The
    summary counts such layers apart and judges the rest; a pair with none mapped has no ratios."""
    monkeypatch.syspath_prepend(str(REPO / "bench/crosscheck"))
    bench = importlib.import_module("zigzag_crosscheck")
    rows = [
        {"layer": "fits", "zigzag_cycles": 100.0, "zigzag_pj": 10.0, "ours_cycles": 110.0, "ours_pj": 9.0},
        {"layer": "too big", "zigzag_cycles": np.nan, "zigzag_pj": np.nan, "ours_cycles": 5e5, "ours_pj": 7e4},
    ]
    table = pd.DataFrame(
        [
            row | {"network": net, "objective": objective, "judged": objective, "times": 1}
            for net in ("a", "b")
            for objective in ("latency", "energy")
            for row in rows
        ]
    )
    table = table[(table.network == "a") | (table.layer == "too big")]
    table["latency_ratio"] = table["ours_cycles"] / table["zigzag_cycles"]
    table["energy_ratio"] = table["ours_pj"] / table["zigzag_pj"]
    table["hardware"] = "gemm_l1"
    found = bench.summary(table).set_index("network")
    assert found.loc["a", "unmapped"] == 1 and found.loc["a", "layers"] == 1
    assert found.loc["a", "latency_network"] == pytest.approx(1.1) and found.loc["a", "energy_network"] == pytest.approx(0.9)
    assert found.loc["b", "unmapped"] == 1 and found.loc["b", "layers"] == 0 and np.isnan(found.loc["b", "latency_network"])
    assert bench.hints(table).tolist()[1] == "ZigZag finds no loop order that fits the layer in the memories"


def test_the_crosscheck_lists_the_memories_far_from_zigzags(monkeypatch: pytest.MonkeyPatch) -> None:
    """Per pair and memory over the layers judged on energy, each as many times as the network takes it: a register
    at 0.001x ZigZag's holding 5 % of its energy is listed first, a memory at 0.5x with 0.1 % and one at 1.1x are not,
    nor a memory the machine does not have (NaN) or a layer judged on latency alone."""
    monkeypatch.syspath_prepend(str(REPO / "bench/crosscheck"))
    bench = importlib.import_module("zigzag_crosscheck")
    layer = {"network": "n", "hardware": "h", "judged": "energy", "zigzag_pj": 100.0, "times": 2}
    layers = [
        layer
        | {"ours_pj_rf": 0.005, "zigzag_pj_rf": 5.0, "ours_pj_tiny": 0.05, "zigzag_pj_tiny": 0.1}
        | {"ours_pj_sram": 33.0, "zigzag_pj_sram": 30.0, "ours_pj_other": np.nan, "zigzag_pj_other": np.nan},
        layer | {"judged": "latency", "ours_pj_rf": 5.0, "zigzag_pj_rf": 5.0, "ours_pj_sram": 1.0, "zigzag_pj_sram": 30.0},
        layer | {"zigzag_pj": np.nan, "ours_pj_rf": 1.0, "zigzag_pj_rf": np.nan},
    ]
    listed = bench.memory_summary(pd.DataFrame(layers))
    assert listed["memory"].tolist() == ["rf"]
    assert listed.loc[0, "ratio"] == pytest.approx(0.001) and listed.loc[0, "zigzag_share"] == pytest.approx(0.05)
    assert listed.loc[0, "zigzag_pj"] == pytest.approx(10.0)
    assert bench.memory_summary(pd.DataFrame(layers), band=1.05)["memory"].tolist() == ["rf", "sram"]


def test_the_crosscheck_takes_per_layer_the_better_of_zigzags_searches(monkeypatch: pytest.MonkeyPatch) -> None:
    """``--engine best``: per layer, the evaluation of the search that found the cheaper one at the objective (ties by
    the other metric, then the first search's), a layer neither maps kept as the first's, in the layers' order."""
    monkeypatch.syspath_prepend(str(REPO / "bench/crosscheck"))
    bench = importlib.import_module("zigzag_crosscheck")

    def table(search: str, cycles: list[float], pj: list[float]) -> pd.DataFrame:
        layers = ["a", "b", "c", "d"]
        return pd.DataFrame({"layer": layers, "zigzag_cycles": cycles, "zigzag_pj": pj}).assign(
            network="n", hardware="h", zigzag_search=search
        )

    loma = table("lpf6", [10.0, 10.0, 10.0, np.nan], [5.0, 5.0, 5.0, np.nan])
    salsa = table("salsa", [12.0, 8.0, 10.0, np.nan], [4.0, 5.0, 5.0, np.nan])
    assert bench.best_of([loma, salsa], "energy")["zigzag_search"].tolist() == ["salsa", "salsa", "lpf6", "lpf6"]
    assert bench.best_of([loma, salsa], "latency")["zigzag_search"].tolist() == ["lpf6", "salsa", "lpf6", "lpf6"]
    assert bench.best_of([loma, salsa], "energy")["layer"].tolist() == ["a", "b", "c", "d"]
    with pytest.raises(ValueError, match="other layers"):
        bench.best_of([loma, salsa.iloc[::-1]], "energy")


def test_the_crosscheck_names_what_bounds_a_layer_it_times_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    """A latency row outside 1.3x says whether a memory inside the core or the off-chip link bounds each side:
    ``tesla_npu_like_mixed``'s ResNet-18 ``layer1`` took 1.75x our compute cycles behind the input buffer's port where
    ZigZag's took 1.00x, and its ``layer3`` sat on the link where ZigZag's cycles were 1.71x its own bytes over it."""
    monkeypatch.syspath_prepend(str(REPO / "bench/crosscheck"))
    bench = importlib.import_module("zigzag_crosscheck")
    row = {
        "zigzag_dram_bytes": 8_000.0,
        "ours_dram_bytes": 8_000.0,
        "offchip_bytes_per_cycle": 8.0,
        "zigzag_onloading_cycles": 0.0,
        "zigzag_offloading_cycles": 0.0,
        "ours_serial_cycles": 0.0,
        "zigzag_spatial_utilization": 0.5,
        "ours_utilization": 0.5,
        "ours_compute_cycles": 4_000.0,
    }
    inside = pd.Series(row | {"zigzag_cycles": 4_000.0, "ours_cycles": 7_000.0, "ours_offchip_cycles": 1_000.0})
    assert bench._latency_hints(inside) == [
        "cycles over our compute cycles: ours 1.75x, ZigZag's 1.00x (a memory inside the core bounds the larger)"
    ]
    link = pd.Series(
        row | {"zigzag_cycles": 1_500.0, "ours_cycles": 1_000.0, "ours_offchip_cycles": 1_000.0, "ours_compute_cycles": 500.0}
    )
    assert bench._latency_hints(link) == ["the off-chip link bounds ours; ZigZag's cycles are 1.50x its own bytes over it"]


def test_the_crosscheck_can_size_a_fractional_unrollings_input_exactly(monkeypatch: pytest.MonkeyPatch) -> None:
    """ZigZag unrolls 14 output columns on 4 PEs as 3.5 a step and, as shipped, sizes the step's input from int(3.5):
    3 columns under a 1-wide filter, 5 under a 3-wide one. ``--zigzag-sizes exact`` takes 3.5 and 5.5 (the unique
    indices of ix = ox + fx, ZigZag's ``calc_pr_dimension_size``), clipped to the padded input, and caches apart."""
    monkeypatch.syspath_prepend(str(REPO / "bench/crosscheck"))
    bench = importlib.import_module("zigzag_crosscheck")

    def unique(sa: int, a: float, sb: int, b: float) -> float:  # ZigZag's count of c = sa * a + sb * b (gcd 1)
        return a * b - max(0, b - sa) * (a - sb)

    def layer(fx: int) -> SimpleNamespace:
        return SimpleNamespace(
            name="conv",
            pr_loop={"IX": ["OX", "FX"]},
            pr_scaling_factors={"IX": [("OX", 1), ("FX", 1)]},
            pr_layer_dim_sizes={"IX": 13 + fx},
            layer_dim_sizes={"OX": 14, "FX": fx, "C": 8},
            calc_pr_dimension_size=unique,
        )

    assert bench._exact_tensor_dim(layer(1), "IX", {"OX": 3.5, "FX": 1}) == 3.5
    assert bench._exact_tensor_dim(layer(3), "IX", {"OX": 3.5, "FX": 3}) == 5.5
    assert bench._exact_tensor_dim(layer(3), "IX", {"OX": 56, "FX": 3}) == 16  # no more than the padded input
    assert bench._exact_tensor_dim(layer(3), "OX", {"OX": 3.5, "FX": 3}) == 3.5
    assert bench._exact_tensor_dim(layer(3), "C", {"OX": 3.5}) == 1  # a loop of the layer the tile does not take
    with pytest.raises(ValueError, match="no loop"):
        bench._exact_tensor_dim(layer(3), "G", {"OX": 3.5})
    assert bench._lpf_limit("lpf6-exact") == 6 and bench._engine("salsa-exact") == "salsa"
    assert bench.cache_path("resnet18", "edge_tpu_like", "lpf6-exact", "latency") != bench.cache_path(
        "resnet18", "edge_tpu_like", "lpf6", "latency"
    )
    with pytest.raises(ValueError, match="expected lpfN"):
        bench._lpf_limit("lpf6-floored")


def test_the_crosscheck_names_a_fractional_unrolling_zigzag_floors(monkeypatch: pytest.MonkeyPatch) -> None:
    """``edge_tpu_like`` unrolls OX and OY 4 each: on MobileNetV2's 14 x 14 layers ZigZag takes 3.5 a step and sizes
    the input from int(3.5); 56 x 56 takes 14 equal steps, and ``tesla_npu_like``'s OX 8 takes 14 as two of 7."""
    monkeypatch.syspath_prepend(str(REPO / "bench/crosscheck"))
    bench = importlib.import_module("zigzag_crosscheck")
    row = {"ours_spatial": "D1_K=K8 D2_C=C8 D3_OX=OX4 D4_OY=OY4", "OX": 14, "OY": 7, "FX": 1, "FY": 1}
    assert bench._fractional_hints(pd.Series(row)) == [
        "ZigZag unrolls OX 14 as 3.5 a step and sizes its input from int(3.5)",
        "ZigZag unrolls OY 7 as 3.5 a step and sizes its input from int(3.5)",
    ]
    assert bench._fractional_hints(pd.Series(row | {"OX": 56, "OY": 56})) == []
    tesla = row | {"ours_spatial": "D1_K=K32 D2_OX=OX8 D3_OY=OY4", "OY": 8}
    assert bench._fractional_hints(pd.Series(tesla)) == []
    # edge_tpu_like_mixed: OX 2 on D3 and 2 on D4 are 4 a step
    mixed = {"ours_spatial": "D1_K=K8 D2_C=C2 D2_FX=FX2 D2_FY=FY2 D3_OX=OX2 D4_OX=OX2", "OX": 7, "OY": 7, "FX": 3, "FY": 1}
    assert bench._fractional_hints(pd.Series(mixed)) == [
        "ZigZag unrolls FX 3 as 1.5 a step and sizes its input from int(1.5)",
        "ZigZag unrolls OX 7 as 3.5 a step and sizes its input from int(3.5)",
    ]


def test_the_crosscheck_costs_its_layers_with_the_scheduler(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The cross-check's side (``ours``) is what ``traincost cost`` runs: per layer, the scheduler's cycles, energy
    and energy per memory under the default plan at the cross-check's objective (the layers share no tensor)."""
    monkeypatch.syspath_prepend(str(REPO / "bench/crosscheck"))
    bench = importlib.import_module("zigzag_crosscheck")
    monkeypatch.setattr(bench, "zigzag_inputs", lambda: REPO / "tests/fixtures/hardware/zigzag")
    windows = {"stride_y": 1, "stride_x": 1, "dilation_y": 1, "dilation_x": 1}
    layers = pd.DataFrame(
        [
            {"layer": layer["name"], "kind": layer["kind"], **{dim: layer[dim] for dim in LOOP_DIMS}}
            | windows
            | {"stride_y": layer["stride"], "stride_x": layer["stride"]}
            | {"IY": (layer["OY"] - 1) * layer["stride"] + layer["FY"], "IX": (layer["OX"] - 1) * layer["stride"] + layer["FX"]}
            | {"macs": layer["B"] * layer["K"] * layer["G"] * layer["C"] * layer["OY"] * layer["OX"] * layer["FY"] * layer["FX"]}
            for layer in ZIGZAG_LAYERS
        ]
    )
    hw = bench.imported("meta_prototype", tmp_path)
    mine = bench.ours(layers, hw, "energy")
    ops = schedule(op_table(bench.as_workload(layers)), hw, SchedulePlan(mapping_objective="energy"), per_op=True).ops
    assert mine["ours_pj"].to_numpy() == pytest.approx(ops["energy_pj"].to_numpy(), rel=1e-12)
    assert mine["ours_cycles"].to_numpy() == pytest.approx((ops["end_cycles"] - ops["start_cycles"]).to_numpy(), rel=1e-12)
    for name in hw.memories:
        assert mine[f"ours_pj_{name}"].to_numpy() == pytest.approx(ops[f"energy_{name}_pj"].to_numpy(), rel=1e-12), name


def test_the_crosscheck_page_judges_the_cached_pairs_and_marks_the_others_not_computed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``bench/crosscheck/zigzag_page.py`` writes the page from ZigZag's cached tables alone, ours costed again: a pair whose
    LOMA tables are cached gets its ratios (ZigZag's ResNet-18 ``layer1.0.conv1`` on ``tpu_like``, its numbers as
    ZigZag 3.9.1 gave them; one layer, so its median is its worst), one whose tables are missing, or whose SALSA
    tables are, is marked not computed, and so is an order ZigZag was not run in. No search is started, and the
    prose keeps to 120 columns, no wrapped line read as a list item."""
    monkeypatch.syspath_prepend(str(REPO / "bench/crosscheck"))
    page = importlib.import_module("zigzag_page")
    monkeypatch.setattr(page.crosscheck, "zigzag_inputs", lambda: REPO / "tests/fixtures/hardware/zigzag")
    monkeypatch.setattr(page.crosscheck, "run_zigzag", lambda *args: pytest.fail(f"ZigZag searched {args}"))
    write_zigzag_loma_tables(tmp_path)
    text = page.page(
        tmp_path, [("resnet18", "tpu_like"), ("gpt2_block", "tpu_like")], run_in_order=False, today=date(2026, 12, 6)
    )
    loma, best = text.split("## Against ZigZag's better search")[0], text.split("## In our order")[0]
    found = re.search(
        r"\| ResNet-18 \| tpu_like \| 1 of 1 \| (\d\.\d\d) / (\d\.\d\d) / \S+ \| (\d\.\d\d) / (\d\.\d\d) / \S+ \| 38 \|", loma
    )
    assert found and found[1] == found[2] and found[3] == found[4], loma  # one layer: its median is its worst
    assert "| GPT-2 block | tpu_like | not computed (lpf6) |" in loma
    assert "| ResNet-18 | tpu_like | not computed (salsa) |" in best
    assert "1 of the 1 pairs computed and judged" in loma and "on 6 December 2026" in text
    assert "| tesla_npu_like | GPT-2 block | `qkv` | `C32 OY2 OY128 C24 K72` | not computed |" in text
    assert not [line for line in text.splitlines() if len(line) > 120 and not line.startswith("|")]
    assert not [line for line in text.splitlines() if re.match(r"\s*(\+ |\d+\. )", line)]  # no list made by a wrap
