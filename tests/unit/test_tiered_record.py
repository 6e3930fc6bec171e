"""A study's record: re-used by an ablation it gives the table of running the study again, to the bit; it reads back
as written; a record of another study, or one without a run the study needs, is refused."""

from __future__ import annotations

from dataclasses import asdict, replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from traincost.analysis.ablations import ASSUMPTIONS
from traincost.errors import ConfigError
from traincost.tiered import study as study_module
from traincost.tiered.assumptions import study_system
from traincost.tiered.record import Record, read_record, write_record
from traincost.tiered.study import StudyRuns, resimulated, study_runs
from traincost.tiered.system import TieredSystem, load_tiered_system
from traincost.workload import Workload

HARDWARE = "config/hardware/tpuv4_tiered.yaml"
RATIOS = [3.0]  # Tier 1 about a third of the tiny model's live peak: every policy migrates
CALIBRATED_SCALE = 0.5  # the study's fitted accelerator energy scale (calibrated=false runs at 1)
ABLATIONS = [(a.name, value) for a in ASSUMPTIONS["tiered"] for value in a.variants]


@pytest.fixture(scope="module")
def loaded() -> TieredSystem:
    return load_tiered_system(HARDWARE)


def _system(loaded: TieredSystem, assumed: dict[str, str]) -> TieredSystem:
    """As ``traincost tiered-study`` builds it: the calibrated scale unless calibrated=false, then the assumptions."""
    return study_system(loaded, assumed, accelerator_energy_scale=CALIBRATED_SCALE)


def _study(workload: Workload, system: TieredSystem, **reuse: object) -> StudyRuns:
    return study_runs(workload, system, variant="base", ratios=RATIOS, policies=list(study_module.POLICIES), **reuse)


@pytest.fixture(scope="module")
def recorded(tiny_transformer: Workload, loaded: TieredSystem) -> StudyRuns:
    return _study(tiny_transformer, _system(loaded, {}))


def test_the_study_table_is_its_own_without_a_record(
    recorded: StudyRuns, tiny_transformer: Workload, loaded: TieredSystem
) -> None:
    again = _study(tiny_transformer, _system(loaded, {}), record=recorded.record, recorded_on=_system(loaded, {}))
    pd.testing.assert_frame_equal(again.table, recorded.table, check_exact=True)


@pytest.mark.parametrize("ablation", ABLATIONS, ids=[f"{a}={v}" for a, v in ABLATIONS])
def test_an_ablation_on_the_record_equals_the_ablation_run_again(
    ablation: tuple[str, str],
    recorded: StudyRuns,
    tiny_transformer: Workload,
    loaded: TieredSystem,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assumption, value = ablation
    system = _system(loaded, {assumption: value})
    again = _study(tiny_transformer, system)
    calls = {"simulations": 0}
    simulate = study_module.simulate_tally

    def counted_simulation(*args: object, **kwargs: object) -> object:
        calls["simulations"] += 1
        return simulate(*args, **kwargs)

    monkeypatch.setattr(study_module, "simulate_tally", counted_simulation)
    reused = _study(tiny_transformer, system, record=recorded.record, recorded_on=_system(loaded, {}))
    pd.testing.assert_frame_equal(reused.table, again.table, check_exact=True)
    # the shortcut was taken: only the policies whose simulation the assumption changes simulated
    expected = {
        "calibrated": 0,
        "stall_static_power": 0,
        "deeptm_eviction_costs_time": 1,
        "split_only_if_evicted": 2,
        "split_ratio_reading": 2,
        "hot_promotion": 3,
        "autotm_lookahead": 2,
        "split_energy": 3,
        "tier2_read_energy": 0,
    }.get(assumption, len(recorded.record.runs))
    assert calls == {"simulations": expected}
    assert not (reused.table["energy_j"].to_numpy() == recorded.table["energy_j"].to_numpy()).all()  # the assumption tells


def test_the_record_reads_back_as_written(recorded: StudyRuns, tmp_path: Path) -> None:
    write_record(recorded.record, tmp_path / "record.parquet", {"model": "tiny"})
    back = read_record(tmp_path / "record.parquet")
    assert back.key == recorded.record.key and back.source == str(tmp_path / "record.parquet")
    assert back.runs.keys() == recorded.record.runs.keys()
    for key, tally in recorded.record.runs.items():
        back_fields, fields = asdict(back.runs[key]), asdict(tally)
        for name, value in fields.items():  # NaN (no split ratios) reads back as NaN
            assert back_fields[name] == value or (np.isnan(back_fields[name]) and np.isnan(value)), (key, name)


def test_a_record_of_another_study_or_without_a_run_is_refused(
    recorded: StudyRuns, tiny_transformer: Workload, loaded: TieredSystem
) -> None:
    system = _system(loaded, {"stall_static_power": "false"})
    with pytest.raises(ConfigError, match=r"record \(given\) is of another trace or system"):
        _study(tiny_transformer, system, record=recorded.record, recorded_on=_system(loaded, {}).with_tier2_bandwidth(0.5))
    runs = {key: run for key, run in recorded.record.runs.items() if key[1] != "sentinel"}
    partial = Record(key=recorded.record.key, runs=runs, source="partial.parquet")
    with pytest.raises(ConfigError, match=r"record partial.parquet has no sentinel run at .* GB of Tier 1"):
        _study(tiny_transformer, system, record=partial, recorded_on=_system(loaded, {}))


def test_only_what_a_simulation_reads_makes_it_run_again(loaded: TieredSystem) -> None:
    base = _system(loaded, {})
    pricing = [
        _system(loaded, {"calibrated": "false"}),
        _system(loaded, {"stall_static_power": "false"}),
        _system(loaded, {"tier2_read_energy": "once_per_store"}),
    ]
    for policy in study_module.POLICIES:
        assert not any(resimulated(policy, system, base) for system in pricing), policy
        assert resimulated(policy, _system(loaded, {"tier2_energy_factor": "2"}), base), policy
        assert resimulated(policy, base.with_tier2_bandwidth(0.5), base), policy
        assert resimulated(policy, replace(base, hardware=load_tiered_system(HARDWARE).hardware), base), policy
        deeptm_flag = _system(loaded, {"deeptm_eviction_costs_time": "true"})
        assert resimulated(policy, deeptm_flag, base) == (policy == "deeptm"), policy


def test_the_study_priced_once_per_store_is_the_study_run_so(
    recorded: StudyRuns, tiny_transformer: Workload, loaded: TieredSystem
) -> None:
    # the report's second pricing, made from the table, equals the study run with the switch (the simulation ignores it)
    once = study_module.tier2_reads_once(recorded.table)
    system = _system(loaded, {"tier2_read_energy": "once_per_store"})
    run = _study(tiny_transformer, system, record=recorded.record, recorded_on=_system(loaded, {}))
    for column in ("energy_j", "energy_tier_sram_j", "samples_per_j", "energy_efficiency_vs_hbm"):
        np.testing.assert_allclose(once[column], run.table[column], rtol=1e-12, err_msg=column)
    assert (run.table["energy_tier2_reread_j"] == 0).all()
    rereads = recorded.table["tier2_reread_bytes"] > 0
    assert rereads.any() and (once.loc[rereads, "energy_j"] < recorded.table.loc[rereads, "energy_j"]).all()
    with pytest.raises(ConfigError, match="no energy_tier2_reread_j column"):
        study_module.tier2_reads_once(recorded.table.drop(columns="energy_tier2_reread_j"))
