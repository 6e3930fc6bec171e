"""``traincost.api`` on small cases: totals that are the sum of their parts, a grid where more bandwidth is never slower,
an imported ZigZag machine counted by hand, a study's table read back, and each bad option named."""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from traincost.api import cost_model, import_hardware, study_table, sweep
from traincost.errors import ConfigError, TraincostError
from traincost.frontend.shared.optimizer import OptimizerSpec
from traincost.hardware import HardwareError, load_hardware
from traincost.model_cost import ModelCost
from traincost.schedule import SchedulePlan

EDGE_TPU = "config/hardware/edge_tpu.yaml"
FUSEMAX = "config/hardware/fusemax.yaml"
ZIGZAG = Path("tests/fixtures/hardware/zigzag/hardware")
STREAM = Path("tests/fixtures/hardware/stream/hardware")


@pytest.fixture(scope="module")
def mlp_cost() -> ModelCost:
    """The zoo's MLP (64 → 10 classes), batch 2, Adam, on the Edge TPU: traced by torch, not checked (seconds)."""
    return cost_model("mlp", hardware=EDGE_TPU, batch=2, optimizer="adam", lr=0.001, verify=False)


def test_the_totals_are_the_sums_of_the_per_op_table(mlp_cost: ModelCost) -> None:
    total, ops = mlp_cost.summary.iloc[0], mlp_cost.ops
    # one row per op in program order, but views: a reshape or an alias moves nothing, its tensor is its input's
    workload = mlp_cost.workload.ops
    assert list(ops["op"]) == sorted(ops["op"]) and set(ops["op"]) <= set(workload["op"])
    views = workload[~workload["op"].isin(ops["op"])]
    assert len(views) > 0 and set(views["op_type"]) <= {"Identity", "Reshape", "Squeeze", "Unsqueeze"}
    assert total["energy_pj"] == pytest.approx(ops["energy_pj"].sum(), rel=1e-12)
    assert total["latency_cycles"] == ops["end_cycles"].max()
    # each op's energy is the sum of where it is spent; each phase's the sum of its ops'
    parts = [c for c in ops.columns if c.startswith("energy_") and c.endswith("_pj") and c != "energy_pj"]
    assert np.allclose(ops[parts].sum(axis=1), ops["energy_pj"], rtol=1e-12)
    by_phase = ops.groupby("phase")["energy_pj"].sum()
    assert mlp_cost.phases.set_index("phase")["energy_pj"].to_dict() == pytest.approx(by_phase.to_dict(), rel=1e-12)
    for phase, energy in by_phase.items():
        assert total[f"energy_{phase}_pj"] == pytest.approx(energy, rel=1e-12)


def test_the_step_is_the_one_asked_for(mlp_cost: ModelCost) -> None:
    meta = mlp_cost.workload.meta
    assert (meta["model"], meta["batch"], meta["optimizer"], meta["frontend"]) == ("mlp", "2", "adam", "torch")
    assert set(mlp_cost.phases["phase"]) == {"forward", "backward", "optimizer"}
    assert mlp_cost.peak_bytes == mlp_cost.memory["at_peak_bytes"].sum() > 0
    assert mlp_cost.verification.table().empty  # verify=False: nothing compared


def test_a_loaded_hardware_costs_as_its_file() -> None:
    by_path = cost_model("mlp", hardware=FUSEMAX, batch=1, verify=False)
    by_spec = cost_model("mlp", hardware=load_hardware(FUSEMAX), batch=1, verify=False)
    pd.testing.assert_frame_equal(by_path.summary, by_spec.summary)


@pytest.mark.parametrize(
    ("model", "options", "named"),
    [
        ("mlp", {"batch": 0}, "batch 0: expected an integer from 1"),
        ("mlp", {"batch": 2.0}, "batch 2.0: expected an integer"),
        ("mlp", {"seed": -1}, "seed -1: expected an integer from 0"),
        ("mlp", {"optimizer": "rmsprop"}, "kind 'rmsprop' is not one of sgd"),
        ("mlp", {"lr": -1.0}, "optimizer: lr"),
        ("mlp", {"optimizer": OptimizerSpec(kind="adam", lr=0.1), "lr": 0.2}, "lr 0.2: give it in the OptimizerSpec"),
        ("mlp", {"frontend": "jax"}, "frontend 'jax': expected one of torch, onnx"),
        ("mlp", {"attention": "fused"}, "attention 'fused': for the ONNX front end"),
        ("mlp", {"attention": "sparse"}, "attention 'sparse': expected one of torch"),
        ("my_nets:mobilenet", {}, "model 'my_nets:mobilenet': a factory path needs its inputs"),
        ("model.onnx", {"frontend": "torch"}, "model 'model.onnx': an ONNX graph is costed by the ONNX front end"),
        (42, {}, "model of type int: expected a zoo name"),
        ("mlp", {"hardware": "config/hardware/nowhere.yaml"}, "nowhere.yaml"),
    ],
)
def test_a_bad_option_is_named_before_any_tracing(model: object, options: dict[str, object], named: str) -> None:
    with pytest.raises(TraincostError) as caught:
        cost_model(model, **{"hardware": EDGE_TPU, **options})  # type: ignore[arg-type]
    assert named in str(caught.value)


def test_more_bandwidth_is_never_slower(mlp_cost: ModelCost) -> None:
    bandwidths = [64.0, 256.0, 1024.0, 4096.0, 8192.0]
    table = sweep(mlp_cost.workload, hardware=FUSEMAX, grid={"buffer_bandwidth": bandwidths, "offchip_bandwidth": [64.0, 2048.0]})
    assert len(table) == 10 and table["config_id"].is_unique
    assert set(table["buffer_bandwidth"]) == set(bandwidths) and (table["workload"] == "mlp").all()
    for _, rows in table.groupby("offchip_bandwidth"):
        latency = rows.sort_values("buffer_bandwidth")["latency_cycles"].to_numpy()
        assert (np.diff(latency) <= 0).all(), latency
    for _, rows in table.groupby("buffer_bandwidth"):
        assert rows.sort_values("offchip_bandwidth")["latency_cycles"].is_monotonic_decreasing


def test_shards_of_a_sweep_are_the_sweep(mlp_cost: ModelCost) -> None:
    grid = {"x_pes": [2.0, 4.0, 8.0], "y_pes": [2.0, 4.0]}
    whole = sweep(mlp_cost.workload, hardware=EDGE_TPU, grid=grid, plan="layer_by_layer")
    shards = [sweep(mlp_cost.workload, hardware=EDGE_TPU, grid=grid, plan="layer_by_layer", shard=(i, 4)) for i in range(4)]
    pd.testing.assert_frame_equal(pd.concat(shards, ignore_index=True), whole)
    # the forward ops alone cost less than the whole step, one row per configuration either way
    forward = sweep(
        mlp_cost.workload, hardware=EDGE_TPU, grid=grid, step="inference", plan=SchedulePlan.from_mode("layer_by_layer")
    )
    assert (forward["energy_pj"].to_numpy() < whole["energy_pj"].to_numpy()).all()


def test_the_default_configuration_is_a_sweep_of_one(mlp_cost: ModelCost) -> None:
    (row,) = sweep(mlp_cost.workload, hardware=EDGE_TPU).itertuples()
    assert row.latency_cycles == mlp_cost.summary.iloc[0]["latency_cycles"]
    assert row.energy_pj == pytest.approx(mlp_cost.summary.iloc[0]["energy_pj"], rel=1e-12)


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"step": "finetune"}, "step 'finetune'"),
        ({"plan": "round_robin"}, "schedule mode 'round_robin'"),
        ({"shard": (2, 2)}, "shard 2 of 2"),
        ({"max_configs": 0}, "max_configs 0"),
        ({"grid": {"x_pes": [1.0, 2.0, 4.0]}, "max_configs": 2}, "3 configurations (3 x_pes) is more than the limit of 2"),
        ({"grid": {"pes": [1.0]}}, "'pes' is not a parameter"),
        ({"hardware": load_hardware(EDGE_TPU)}, "expected the template's path"),
    ],
)
def test_a_bad_sweep_option_is_named(mlp_cost: ModelCost, options: dict[str, object], named: str) -> None:
    with pytest.raises(TraincostError) as caught:
        sweep(mlp_cost.workload, **{"hardware": EDGE_TPU, **options})  # type: ignore[arg-type]
    assert named in str(caught.value)


def test_an_imported_zigzag_machine_counted_by_hand(tmp_path: Path) -> None:
    source = yaml.safe_load((ZIGZAG / "tpu_like.yaml").read_text())
    out = tmp_path / "tpu_like.yaml"
    hw = import_hardware(ZIGZAG / "tpu_like.yaml", kind="zigzag", out=out)
    # ZigZag's rf_128B, rf_2B and sram_2MB on chip; its dram becomes the off-chip link
    assert list(source["memories"]) == ["rf_128B", "rf_2B", "sram_2MB", "dram"]
    assert len(hw.memories) == 3 and hw.source == out
    (core,) = hw.cores
    assert int(core.pes[0]) == np.prod(source["operational_array"]["sizes"]) == 1024
    assert hw.description.startswith("imported from ZigZag tpu_like.yaml")
    # the file it wrote is the machine it returned
    again = load_hardware(out)
    assert (again.name, list(again.memories), again.description) == (hw.name, list(hw.memories), hw.description)


def test_an_imported_stream_machine_keeps_its_core_counts(tmp_path: Path) -> None:
    hw = import_hardware(STREAM / "tpu_like_quad_core.yaml", kind="stream", out=tmp_path / "quad.yaml", operand_bits=8)
    counts = {core.name: int(core.count[0]) for core in hw.cores}
    assert counts["tpu_like"] == 4  # four identical compute cores listed in the accelerator file become one kind of four


@pytest.mark.parametrize(
    ("kind", "options", "named"),
    [
        ("eyeriss", {}, "kind 'eyeriss': expected zigzag or stream"),
        ("zigzag", {"operand_bits": 8}, "operand_bits: applies to stream files"),
        ("stream", {"offchip": "dram"}, "mapping and offchip: apply to zigzag files"),
        ("zigzag", {"unroll": "D1"}, "'D1': expected Dn=DIM"),
    ],
)
def test_a_bad_import_option_is_named_and_nothing_written(
    kind: str, options: dict[str, object], named: str, tmp_path: Path
) -> None:
    source = (ZIGZAG if kind != "stream" else STREAM) / ("tpu_like.yaml" if kind != "stream" else "tpu_like_quad_core.yaml")
    with pytest.raises(TraincostError) as caught:
        import_hardware(source, kind=kind, out=tmp_path / "out.yaml", **options)  # type: ignore[arg-type]
    assert named in str(caught.value)
    assert not (tmp_path / "out.yaml").exists()


def test_a_missing_zigzag_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(HardwareError, match="nowhere.yaml"):
        import_hardware(tmp_path / "nowhere.yaml", kind="zigzag", out=tmp_path / "out.yaml")


_COMPARE = """claim,kind,figure,workload,ratio,metric,paper,ours,pivot,ceiling,check,agrees,note,tie,magnitude,verdict
fig8_avg,claim,Figure 8,average,25,efficiency_vs_hbm,1.09,0.9,1,,TM-Training above HBM-only,False,,False,True,disagrees
fig8_bert,claim,Figure 8,bert_large,25,efficiency_vs_hbm,1.2,1.3,1,,TM-Training above HBM-only,True,,False,True,agrees
sec2_share,calibrated,Section 2.1,average,,offchip_memory_energy_share,0.276,0.276,,,,,fitted,,,
"""


@pytest.fixture
def results(tmp_path: Path) -> Path:
    """A run's results folder holding TM-Training's comparison (two claims and a calibrated row)."""
    (tmp_path / "tiered").mkdir()
    (tmp_path / "tiered/compare.csv").write_text(_COMPARE)
    return tmp_path


def test_a_studys_table_is_read_back_in_the_common_shape(results: Path) -> None:
    table = study_table(results, "tiered")
    assert list(table["claim_name"]) == ["fig8_avg", "fig8_bert", "sec2_share"]
    assert list(table["agrees"]) == [False, True, pd.NA] and list(table["kind"]) == ["claim", "claim", "calibrated"]
    assert {"check", "paper", "ours", "magnitude", "verdict", "workload", "ratio"} <= set(table.columns)


def test_the_ablations_copy_with_a_why_column_is_read_where_it_is_as_new(results: Path) -> None:
    why = results / "tiered/compare_why.csv"
    why.write_text(_COMPARE.replace("verdict\n", "verdict,why\n", 1).replace("\n", ",\n").replace("verdict,why,", "verdict,why"))
    os.utime(why, (os.path.getmtime(results / "tiered/compare.csv") + 1,) * 2)
    assert "why" in study_table(results, "tiered").columns
    os.utime(why, (os.path.getmtime(results / "tiered/compare.csv") - 10,) * 2)  # older than the comparison: left
    assert "why" not in study_table(results, "tiered").columns


def test_a_missing_study_or_folder_is_named(results: Path) -> None:
    with pytest.raises(ConfigError, match="study 'gpt': expected one of monet, mtrain, tiered"):
        study_table(results, "gpt")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"mtrain/compare.csv: no such file"):
        study_table(results, "mtrain")
    with pytest.raises(ConfigError, match=r"ablations/tiered/calibrated/false/compare.csv: no such file"):
        study_table(results, "tiered", calibrated=False)
    with pytest.raises(ConfigError, match="no such folder"):
        study_table(results / "nowhere", "tiered")


def test_the_api_page_runs_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/api.md's python blocks, in order in one namespace, from a copy of the checkout's layout whose results folder
    holds TM-Training's comparison (a workflow run's, in small)."""
    root = Path(__file__).resolve().parents[2]
    for name in ("config", "data", "tests"):
        (tmp_path / name).symlink_to(root / name)
    (tmp_path / "results/tiered").mkdir(parents=True)
    (tmp_path / "results/tiered/compare.csv").write_text(_COMPARE)
    monkeypatch.chdir(tmp_path)
    blocks = re.findall(r"^```python\n(.*?)^```", (root / "docs/api.md").read_text(), flags=re.MULTILINE | re.DOTALL)
    assert len(blocks) >= 8
    namespace: dict[str, object] = {}
    for i, block in enumerate(blocks):
        exec(compile(block, f"docs/api.md, python block {i + 1}", "exec"), namespace)
    assert (tmp_path / "results/api/tpu_like.yaml").is_file()
