"""Every counted check of the three paper-vs-ours tables can fail: on random study tables (seeded), each claim of
each table ends at least once in ``differs``, ``tie`` or ``magnitude``. A check that held on every input would carry
no evidence; those true by construction of our method are ``invariant`` rows instead, never counted. And the claims
files (``data/paper/<paper>_claims.csv``) name rows the comparisons write, or are refused line by line."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from traincost.analysis.monet_claims import monet_hardware_claims, monet_section5_claims
from traincost.analysis.mtrain_compare import mtrain_comparison
from traincost.analysis.mtrain_constants import constants_table
from traincost.analysis.paper_claims import claim_lines, read_paper_claims
from traincost.analysis.tiered_compare import compare_with_paper
from traincost.errors import ConfigError
from traincost.tiered.policies import POLICIES

DATA = Path(__file__).resolve().parents[2] / "data/paper"
RUNS = 10
FAILED = ("differs", "tie", "magnitude")


def _failing(make: Callable[[np.random.Generator], pd.DataFrame]) -> tuple[set[str], set[str]]:
    """The claims counted in any run, and those that failed in at least one."""
    counted, failed = set(), set()
    for seed in range(RUNS):
        table = make(np.random.default_rng(seed))
        claims = table[table["kind"] == "claim"]
        counted |= set(claims["claim"])
        failed |= set(claims.loc[claims["verdict"].isin(FAILED), "claim"])
    return counted, failed


# ---- TM-Training ---------------------------------------------------------------------------------------------------

_POLICIES = tuple(POLICIES)
_TM_WORKLOADS = ("bert_large", "gpt3_175b", "palm_540b")
_RATIOS = (5.0, 10.0, 25.0, 50.0, 100.0, 150.0)


def _tiered_study(rng: np.random.Generator) -> pd.DataFrame:
    rows = []
    for workload in _TM_WORKLOADS:
        model = {"bert_large": 1.3e9, "gpt3_175b": 3.5e11, "palm_540b": 1.1e12}[workload] * rng.uniform(0.5, 2)
        for variant in ("base", "double_batch", "half_tier2_bandwidth"):
            for ratio in _RATIOS:
                for policy in _POLICIES:
                    draw = lambda scale: float(scale * rng.lognormal(0.0, 0.5))  # noqa: E731
                    migrated = 0.0 if policy == "hbm_only" or rng.random() < 0.1 else draw(1e10)
                    rows.append(
                        {
                            "workload": workload,
                            "variant": variant,
                            "policy": policy,
                            "ratio": ratio,
                            "samples_per_j": draw(1.0),
                            "samples_per_s": draw(1.0),
                            "migrated_bytes": migrated,
                            "data_bytes": draw(1e10),
                            "energy_j": draw(100.0),
                            "energy_accelerator_j": draw(50.0),
                            "energy_tier_sram_j": draw(10.0),
                            "energy_migration_j": draw(10.0),
                            "energy_static_j": draw(10.0),
                            "iteration_s": draw(1.0),
                            "stall_s": draw(0.1),
                            "promoted_bytes": draw(1e9) * (rng.random() > 0.1),
                            "tier2_read_bytes": draw(1e9),
                            "tier2_write_bytes": draw(1e9),
                            "tier1_bytes": 32e9 * 25 / ratio,
                            "model_bytes": model,
                            "static_ceiling_vs_hbm": 1.0 + rng.uniform(0.0, 0.3),
                        }
                    )
    study = pd.DataFrame(rows)
    keys = ["workload", "variant", "ratio"]
    hbm = study[study["policy"] == "hbm_only"].set_index(keys)
    ideal = study[study["policy"] == "ideal"].set_index(keys)
    index = pd.MultiIndex.from_frame(study[keys])
    study["energy_efficiency_vs_hbm"] = study["samples_per_j"].to_numpy() / hbm["samples_per_j"].reindex(index).to_numpy()
    study["throughput_vs_hbm"] = study["samples_per_s"].to_numpy() / hbm["samples_per_s"].reindex(index).to_numpy()
    study["migration_vs_ideal"] = study["migrated_bytes"].to_numpy() / ideal["migrated_bytes"].reindex(index).to_numpy()
    study["migration_vs_data"] = study["migrated_bytes"] / study["data_bytes"]
    return study


def test_every_tm_training_check_can_fail() -> None:
    paper = pd.read_csv(DATA / "tm_training.csv")
    claims = read_paper_claims(DATA / "tm_training_claims.csv")
    counted, failed = _failing(lambda rng: compare_with_paper(_tiered_study(rng), paper, claims=claims))
    assert len(counted) > 90
    assert counted - failed == set()


# ---- MTrain --------------------------------------------------------------------------------------------------------

_MODELS = ("alexnet", "vgg16", "resnet18", "tiny_yolov3")
_CLUSTERS = {"cluster1": 2, "cluster2": 3, "cluster3": 3}
_BANDWIDTHS = (0.125, 0.5, 3.0, 15.0)


def _split(rng: np.random.Generator, parts: int, batch: int = 64) -> str:
    if rng.random() < 0.5:
        return "|".join([str(batch)] + ["0"] * (parts - 1))
    cuts = sorted(rng.integers(1, batch, parts - 1))
    shares = np.diff([0, *cuts, batch])
    return "|".join(str(int(v)) for v in shares)


def _mtrain_tables(rng: np.random.Generator) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    rows = []
    stuck = float(rng.random())  # how often a step of MTrain improves nothing, per table
    for model in _MODELS:
        for cluster, parts in _CLUSTERS.items():
            for bandwidth in _BANDWIDTHS:
                base = {"model": model, "cluster": cluster, "batch": 64, "bandwidth_gb_per_s": bandwidth}
                throughput = float(rng.lognormal(5.0, 0.5))
                for step in (1, 2, 3, 4):
                    throughput *= 1.0 if rng.random() < stuck else float(rng.uniform(1.0, 1.4))
                    rows.append(
                        base | {"method": "MTrain", "step": step, "throughput_gflops": throughput, "ratio": _split(rng, parts)}
                    )
                for method in ("HAP", "Alpa", "single DarkFPGA", "single EF-Train"):
                    rows.append(
                        base | {"method": method, "step": 0, "throughput_gflops": float(rng.lognormal(5.0, 0.5)), "ratio": ""}
                    )
    study = pd.DataFrame(rows)
    cells = []
    for model in _MODELS:
        for cluster in ("cluster1", "cluster2"):
            dfs = float(rng.lognormal(5.0, 0.3))
            converting = dfs * float(rng.uniform(0.85, 1.0))
            cells.append(
                {
                    "model": model,
                    "cluster": cluster,
                    "batch": 64,
                    "bandwidth_gb_per_s": 3.0,
                    "ratio_step": 2,
                    "ratios_feasible": 33,
                    "dfs_gflops": dfs,
                    "converting_gflops": converting,
                    "dfs_s": 10.0,
                    "converting_s": 2.0,
                    "dfs_ratio": _split(rng, _CLUSTERS[cluster]),
                    "converting_ratio": _split(rng, _CLUSTERS[cluster]),
                    "dfs_ratios_mapped": 33,
                    "converting_ratios_mapped": 8,
                    "converting_vs_dfs": converting / dfs,
                }
            )
    scaling = pd.DataFrame(
        [
            {
                "fpgas": fpgas,
                "bandwidth_gb_per_s": bandwidth,
                "throughput_gflops": float(rng.lognormal(5.0, 0.3)),
                "busy_fpgas": int(rng.integers(1, fpgas + 1)),
                "search_s": 1.0,
            }
            for fpgas in (2, 8)
            for bandwidth in (0.5, 3.0, 15.0)
        ]
    )
    return study, pd.DataFrame(cells), scaling


def test_every_mtrain_check_can_fail() -> None:
    paper = pd.read_csv(DATA / "mtrain.csv")
    claims = read_paper_claims(DATA / "mtrain_claims.csv")

    def compare(rng: np.random.Generator) -> pd.DataFrame:
        study, cells, scaling = _mtrain_tables(rng)
        other = cells.assign(converting_gflops=cells["dfs_gflops"] * rng.uniform(0.85, 1.0, len(cells)))
        constants = constants_table(paper, cells, {"fp32_mac_dsp=3": other})  # Table III under another constant
        return mtrain_comparison(paper, study, cells, scaling, claims=claims, constants=constants)

    counted, failed = _failing(compare)
    assert len(counted) > 20  # the absolute GFLOPS (table3, max_throughput, throughput) are shown, not counted
    assert "converting_near_dfs_every_setting" in counted
    assert counted - failed == set()


# ---- MONET ---------------------------------------------------------------------------------------------------------


def _sweep(rng: np.random.Generator, *, edge: bool) -> pd.DataFrame:
    rows = []
    if edge:
        for x in (1, 2, 4):
            for y in (1, 2, 4):
                for unit in (16, 64):
                    for lanes in (1, 4):
                        for memory in (0.5, 2.0):
                            rows.append(
                                {
                                    "x_pes": x,
                                    "y_pes": y,
                                    "simd_units": unit,
                                    "lanes": lanes,
                                    "local_memory_mb": memory,
                                    "register_file_kb": 32,
                                }
                            )
    else:
        rows = [{"buffer_bandwidth": b, "buffer_mb": m} for b in (8192, 16384) for m in (4, 8, 16, 32)]
    frame = pd.DataFrame(rows)
    frame["config_id"] = [f"c{i}" for i in range(len(frame))]
    frame["latency_cycles"] = rng.lognormal(10.0, 0.5, len(frame))
    frame["energy_pj"] = rng.lognormal(20.0, 0.5, len(frame))
    return frame


def _monet(rng: np.random.Generator) -> pd.DataFrame:
    """Random MONET tables, each part drawn favourable to the paper's claims or against them (``adverse``)."""
    adverse = rng.random(8) < 0.5
    inf, train = _sweep(rng, edge=True), _sweep(rng, edge=True)
    if adverse[0]:  # training ranks the configurations as inference does
        train[["latency_cycles", "energy_pj"]] = inf[["latency_cycles", "energy_pj"]].to_numpy() * 4.0
    else:
        train[["latency_cycles", "energy_pj"]] += inf[["latency_cycles", "energy_pj"]].to_numpy()
    g_inf, g_train = _sweep(rng, edge=False), _sweep(rng, edge=False)
    if adverse[1]:
        g_train[["latency_cycles", "energy_pj"]] = g_inf[["latency_cycles", "energy_pj"]].to_numpy() * 4.0
    else:
        g_train[["latency_cycles", "energy_pj"]] += g_inf[["latency_cycles", "energy_pj"]].to_numpy()
    fusion = []
    strategies = ["base", "manual", *(f"limit{n}{s}" for n in range(4, 9) for s in ("", "_free"))]
    for step in ("inference", "training"):
        table = pd.DataFrame(
            {
                "strategy": strategies,
                "step": step,
                "latency_cycles": rng.lognormal(10, 0.1, len(strategies)),
                "energy_pj": rng.lognormal(20, 0.1, len(strategies)),
                "peak_onchip_bytes": rng.lognormal(15, 0.1, len(strategies)),
                "peak_offchip_bytes": rng.lognormal(18, 0.1, len(strategies)),
            }
        )
        if adverse[2]:  # the manual fusion (and no fusion) beat every limit
            for column in ("latency_cycles", "energy_pj", "peak_onchip_bytes", "peak_offchip_bytes"):
                table.loc[table["strategy"].isin(["base", "manual"]), column] = table[column].min() * 0.5
        fusion.append(table)
    additivity = pd.DataFrame(
        {"scenario": ["AC00", "AC10", "AC01", "AC11"], "latency_cycles": rng.uniform(1, 2, 4), "energy_pj": rng.uniform(1, 2, 4)}
    )
    if adverse[5]:  # recomputing both costs the sum of each alone
        for column in ("latency_cycles", "energy_pj"):
            values = additivity[column].to_numpy()
            additivity.loc[3, column] = values[1] + values[2] - values[0]
    saved = float(rng.uniform(1e6, 2e7))
    summary = pd.DataFrame(
        [
            {
                "tolerance": 0.04,
                "saved_bytes": saved,
                "saved_fraction": 0.5,
                "baseline_activation_bytes": 2e7,
                "baseline_latency_cycles": 100.0,
                "baseline_energy_pj": 100.0,
            }
        ]
    )
    n = 20
    low = 101.0 if adverse[3] else 94.0  # every choice costlier than saving all activations
    nsga = pd.DataFrame(
        {
            "activation_bytes": rng.uniform(0, 2.2e7, n),
            "latency_cycles": rng.uniform(low, 110, n),
            "energy_pj": rng.uniform(low, 110, n) if not adverse[4] else rng.uniform(80, 90, n),
            "pareto": rng.random(n) < 0.5,
        }
    )
    milp = pd.DataFrame(
        {
            "activation_bytes": rng.uniform(0, 2e7, 3),
            "latency_cycles": rng.uniform(80, 110, 3),
            "energy_pj": rng.uniform(80, 110, 3),
        }
    )
    runs = pd.DataFrame(
        {
            "step": ["inference", "training"] * 2,
            "max_length": [4, 4, 6, 6],
            "nodes": rng.integers(30, 1200, 4),
            "candidates": rng.integers(50, 2000, 4),
        }
    )
    memory = []
    for batch in (1, 8):
        for optimizer in ("adam", "sgd"):
            for category in ("weights", "optimizer_states", "saved_activations"):
                value = float(rng.lognormal(18, 0.7))
                memory.append(
                    {
                        "model": "resnet50",
                        "batch": batch,
                        "optimizer": optimizer,
                        "category": category,
                        "ours_total_bytes": value,
                        "torch_bytes": value,
                    }
                )
    paper = pd.read_csv(DATA / "monet.csv")
    section5 = monet_section5_claims(
        fusion, additivity, summary, paper, solver_runs=runs, nsga=nsga, milp=milp, memory=pd.DataFrame(memory)
    )
    return pd.concat([monet_hardware_claims(inf, train, g_inf, g_train), section5], ignore_index=True)


def test_every_monet_check_can_fail() -> None:
    counted, failed = _failing(_monet)
    assert len(counted) > 35
    assert counted - failed == set()


def test_every_monet_claim_names_rows_the_whole_comparison_writes() -> None:
    # with every section V table given, each row a claims line names exists (a typo would read "not run" otherwise)
    table = _monet(np.random.default_rng(0))
    named = {name for _, names in claim_lines(read_paper_claims(DATA / "monet_claims.csv")) for name in names}
    assert named - set(table["claim"]) == set()


def test_a_claims_file_that_breaks_its_rules_names_each_line(tmp_path: Path) -> None:
    path = tmp_path / "claims.csv"
    header = "id,section,figure,sentence,kind,rows,unchecked\n"
    path.write_text(
        header
        + "a,1,,It is faster.,qualitative,row_a,\n"
        + "a,1,,It is cheaper.,qualitative,,no study measures cost\n"
        + "b,1,,It is smaller.,vague,row_b,and a reason\n"
        + "c,1,,,qualitative,,\n"
    )
    with pytest.raises(ConfigError) as error:
        read_paper_claims(path)
    message = str(error.value)
    assert str(path) in message and "ids given twice: a" in message
    assert "line 4 (b): kind 'vague'" in message and "line 4 (b): give either" in message
    assert "line 5 (c): an id and the quoted sentence are required" in message
    (tmp_path / "short.csv").write_text("id,sentence\n")
    with pytest.raises(ConfigError, match="missing column"):
        read_paper_claims(tmp_path / "short.csv")


def test_a_claims_line_naming_no_rule_stops_the_comparison() -> None:
    # a misspelt row name would otherwise leave its sentence judged by nothing
    rng = np.random.default_rng(0)
    tm_claims = read_paper_claims(DATA / "tm_training_claims.csv")
    tm_claims.loc[tm_claims["rows"] != "", "rows"] += ";fig9_typo"
    with pytest.raises(ConfigError, match=r"TM-Training claim \S+: rows \['fig9_typo'\] name no rule of the comparison"):
        compare_with_paper(_tiered_study(rng), pd.read_csv(DATA / "tm_training.csv"), claims=tm_claims)
    mtrain_claims = read_paper_claims(DATA / "mtrain_claims.csv")
    mtrain_claims.loc[mtrain_claims["rows"] != "", "rows"] += ";table3_typo"
    with pytest.raises(ConfigError, match=r"MTrain claim \S+: rows \['table3_typo'\] name no rule of the comparison"):
        mtrain_comparison(pd.read_csv(DATA / "mtrain.csv"), *_mtrain_tables(rng), claims=mtrain_claims)
