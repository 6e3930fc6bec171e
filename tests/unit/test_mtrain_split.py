"""MTrain's split at work: each FPGA's design sized for its share of the batch, and a search that more bandwidth or
more FPGAs never make worse (hand-made cases and hypothesis over random steps and clusters)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tests.unit.test_mtrain import SPECS, plain_costs
from traincost.analysis.mtrain_constants import BASELINE_SETTING, constants_markdown, constants_table
from traincost.analysis.mtrain_split import SPLIT_COLUMNS, split_table
from traincost.errors import ConfigError
from traincost.fpga.converting import Incumbent, map_ratio, mtrain_converting, select_accelerators
from traincost.fpga.devices import Cluster, Device
from traincost.fpga.evaluator import evaluate_mapping
from traincost.fpga.ip_models import TrainingIp, share_design, size_ip
from traincost.fpga.study import incumbent_of, scaled_cluster, scaling_rows, study_rows, table3_row
from traincost.fpga.subops import LatencyCache, partition
from traincost.fpga.training_dag import TrainingDag

DARK = SPECS["DarkFPGA"]
# 75 DSPs x 0.8 / 5 per lane: a 12-lane DarkFPGA at 1 MHz, roomy buffers and DRAM
TWELVE = Device("twelve", dsp=75, bram_36kb=100, uram_288kb=0, luts_k=1, dram_gb=1, dram_bandwidth_gb_per_s=1e6, clock_mhz=1)


def chain_dag(
    macs: list[float], channels: list[float], *, edge_bytes: float = 1e3, batch_wise: set[int] = frozenset()
) -> TrainingDag:
    """Layers in a chain, each one op of ``macs`` MACs per sample over ``channels`` output channels; layer ``i`` in
    ``batch_wise`` is never split; ``edge_bytes`` per sample between neighbours."""
    size = len(macs)
    n = np.array(channels, dtype=np.float64)
    rows = np.maximum(1.0, np.round(np.array(macs) / (n * n)))  # EF-Train's view: a 1x1 convolution of n -> n channels
    geometry = np.column_stack([n, n, rows, *np.ones((5, size))])
    costs = plain_costs(macs=np.array(macs, dtype=np.float64), n=n, geometry=geometry)
    return TrainingDag(
        layer=tuple(f"l{i}" for i in range(size)),
        phase=("FP",) * size,
        splittable=np.array([i not in batch_wise for i in range(size)]),
        ops=tuple(np.array([i]) for i in range(size)),
        costs=costs,
        edges=tuple((i, i + 1, edge_bytes, True) for i in range(size - 1)),
        state_bytes=np.zeros(size),
        out_bytes=np.array([[edge_bytes, 0.0]] * (size - 1) + [[0.0, 0.0]]),
        flops_per_sample=2.0 * sum(macs),
        fixed_flops=0.0,
    )


def test_a_share_runs_the_design_sized_for_it_by_hand() -> None:
    # 12 lanes, 9 output channels, batch 4. A design Tm x Tb takes ceil(b / Tb) x ceil(9 / Tm) units of 1e6 cycles
    # per op (1 s at 1 MHz). At the whole batch: 12x1 -> 4, 6x2 -> 4, 4x3 -> 6, 3x4 -> 3 units: Tb = 4 is best.
    # Given 2 samples, that design still takes 3 units; the design sized for 2 samples (12x1 or 6x2) takes 2.
    dag = chain_dag([9e6, 9e6], [9, 9])
    whole = size_ip(DARK, TWELVE, dag.costs, 4)
    assert (whole.tm, whole.tn) == (3, 4)
    half = share_design(whole, dag.costs, 2)
    assert half.tm * half.tn == 12 and half.tn <= 2
    assert dag.costs.seconds(whole, 4) == pytest.approx(6.0)
    assert dag.costs.seconds(whole, 2) == pytest.approx(6.0)  # half the batch, no faster, on the whole-batch design
    assert dag.costs.seconds(half, 2) == pytest.approx(4.0)
    # two such FPGAs: the split 2|2 (each branch on its own FPGA, nothing sent) beats one FPGA with the batch
    other = replace(TWELVE, name="twin")
    accelerators = (whole, size_ip(DARK, other, dag.costs, 4))
    split = map_ratio(dag, accelerators, (2, 2), bandwidth_gb_per_s=1.0)
    assert split.schedule.latency_s == pytest.approx(4.0)
    assert map_ratio(dag, accelerators, (4, 0), bandwidth_gb_per_s=1.0).schedule.latency_s == pytest.approx(6.0)
    found = mtrain_converting(dag, accelerators, 4, bandwidth_gb_per_s=1.0)
    assert found.ratio == (2, 2) and found.mapping.schedule.latency_s == pytest.approx(4.0)
    # sized once for the whole batch (the darkfpga_sized_for=batch ablation), the split gains nothing
    batch_sized = tuple(replace(ip, spec=replace(DARK, model=replace(DARK.model, sized_for="batch"))) for ip in accelerators)
    assert map_ratio(dag, batch_sized, (2, 2), bandwidth_gb_per_s=1.0).schedule.latency_s == pytest.approx(6.0)


def test_share_design_keeps_what_the_share_does_not_change() -> None:
    dag = chain_dag([9e6], [9])
    whole = size_ip(DARK, TWELVE, dag.costs, 4)
    assert share_design(whole, dag.costs, 0) is whole  # no share: the FPGA keeps its deployed design
    ef_train = TrainingIp(SPECS["EF-Train"], TWELVE, 1, 1)
    assert share_design(ef_train, dag.costs, 2) is ef_train  # channel lanes: the batch does not size them
    cache = LatencyCache()
    partition(dag, (2, 2), (whole, whole), cache=cache)
    assert cache.designs[(0, 2)].tn <= 2  # each FPGA's latencies on the design for its share


def test_a_mapping_never_slows_with_more_bandwidth_and_an_incumbent_is_kept() -> None:
    dag = chain_dag([9e6, 1e6, 9e6], [9, 9, 9], edge_bytes=5e5, batch_wise={1})
    accelerators = tuple(size_ip(DARK, replace(TWELVE, name=f"f{i}"), dag.costs, 4) for i in range(2))
    slow = map_ratio(dag, accelerators, (2, 2), bandwidth_gb_per_s=1e-3)
    graph = partition(dag, (2, 2), accelerators)
    for bandwidth in (2e-3, 1.0, 1e3):
        again = evaluate_mapping(graph, slow.assign, bandwidth_bytes_per_s=bandwidth * 1e9)
        assert again.latency_s <= slow.schedule.latency_s
    kept = mtrain_converting(dag, accelerators, 4, bandwidth_gb_per_s=1.0, incumbents=[Incumbent((2, 2), slow.assign, "1 MB/s")])
    assert kept.mapping.schedule.latency_s <= evaluate_mapping(graph, slow.assign, bandwidth_bytes_per_s=1e9).latency_s
    # an incumbent of another ratio's graph, or of more accelerators than the cluster has, is refused with its label
    with pytest.raises(ConfigError, match=r"incumbent of 1 MB/s: .* do not map"):
        mtrain_converting(dag, accelerators, 4, bandwidth_gb_per_s=1.0, incumbents=[Incumbent((3, 1), slow.assign[:3], "1 MB/s")])
    with pytest.raises(ConfigError, match=r"incumbent of 1 MB/s: 3 shares for 2"):
        mtrain_converting(dag, accelerators, 4, bandwidth_gb_per_s=1.0, incumbents=[Incumbent((2, 1, 1), slow.assign, "1 MB/s")])


_LAYERS = st.lists(st.tuples(st.floats(1e5, 1e7), st.integers(1, 24), st.booleans(), st.floats(0.0, 2e6)), min_size=2, max_size=6)
_DEVICES = st.lists(st.integers(20, 200), min_size=2, max_size=3)


def _random_case(layers, dsps, batch):
    macs, channels, batch_wise, edge = zip(*layers, strict=True)
    dag = chain_dag(
        list(macs), list(channels), edge_bytes=float(np.mean(edge)), batch_wise={i for i, b in enumerate(batch_wise) if b}
    )
    devices = tuple(replace(TWELVE, name=f"d{i}", dsp=d, clock_mhz=100 + 50 * i) for i, d in enumerate(dsps))
    return dag, Cluster(name="random", devices=devices, batch=batch)


@settings(max_examples=12, deadline=None)
@given(layers=_LAYERS, dsps=_DEVICES, batch=st.integers(2, 6))
# found by hypothesis: Algorithm 1 alone ends at 3 GB/s below its 0.3 GB/s answer (its path through the ratios changes)
@example(layers=[(800001.0, 4, False, 0.0), (1e5, 1, False, 0.0), (1e5, 5, False, 1.0)], dsps=[20, 63, 75], batch=5)
def test_more_bandwidth_never_lowers_mtrain_throughput(layers, dsps, batch) -> None:
    dag, cluster = _random_case(layers, dsps, batch)
    table = study_rows(dag, cluster, [3.0, 0.01, 0.3], {"DarkFPGA": DARK, "EF-Train": SPECS["EF-Train"]}, step=1)
    final = table[(table["method"] == "MTrain") & (table["step"] == 4)].sort_values("bandwidth_gb_per_s")
    gflops = final["throughput_gflops"].to_numpy()
    assert np.all(np.diff(gflops) >= -1e-9 * gflops[:-1]), final[["bandwidth_gb_per_s", "throughput_gflops", "kept"]]
    # a share's branch may run on another FPGA (MTrain-Mapping places each sub-operation): shares and busy FPGAs differ
    assert final["sharing_fpgas"].between(1, len(dsps)).all() and final["busy_fpgas"].between(1, len(dsps)).all()


@settings(max_examples=8, deadline=None)
@given(layers=_LAYERS, dsps=st.lists(st.integers(20, 200), min_size=2, max_size=2), batch=st.integers(2, 5))
def test_more_fpgas_never_lower_mtrain_throughput(layers, dsps, batch) -> None:
    dag, base = _random_case(layers, dsps, batch)
    specs = {"DarkFPGA": DARK, "EF-Train": SPECS["EF-Train"]}
    one = scaling_rows(dag, base, [1], [0.05, 2.0], specs, step=1)
    two = scaling_rows(dag, base, [2], [0.05, 2.0], specs, step=1, fewer_fpgas=one)
    for bandwidth in (0.05, 2.0):
        fewer, more = (t[t["bandwidth_gb_per_s"] == bandwidth].iloc[0] for t in (one, two))
        assert more["throughput_gflops"] >= fewer["throughput_gflops"] * (1 - 1e-9), (fewer["kept"], more["kept"])
    # a row's incumbent re-times to its own latency on the cluster it was found on
    row = two.iloc[-1]
    accelerators = select_accelerators(dag, scaled_cluster(base, 2), specs)
    retimed = incumbent_of(row, "itself").retimed(dag, accelerators, bandwidth_gb_per_s=float(row["bandwidth_gb_per_s"]))
    assert retimed[1].schedule.latency_s == pytest.approx(row["latency_s"])


def test_the_split_table_reads_each_cell_of_the_study() -> None:
    dag = chain_dag([9e6, 9e6], [9, 9])
    cluster = Cluster(name="twins", devices=(TWELVE, replace(TWELVE, name="twin")), batch=4)
    slow_ef_train = replace(SPECS["EF-Train"], clock_mhz=1e-3)  # DarkFPGA on both FPGAs, as in the hand-made case
    study = study_rows(dag, cluster, [1.0], {**SPECS, "EF-Train": slow_ef_train}, step=1).assign(model="chain")
    table = split_table(study)
    assert list(table.columns) == list(SPLIT_COLUMNS) and len(table) == 1
    row = table.iloc[0]  # the hand-made case above: 2|2, each FPGA at its share's design, 6 s / 4 s over one FPGA
    assert (row["ratio"], row["sharing_fpgas"], row["busy_fpgas"], row["kept"]) == ("2|2", 2, 2, "search")
    assert set(row["share_designs"].split("|")) <= {"12x1", "6x2"}  # 12 lanes, at most 2 of them on samples
    assert row["over_best_single"] == pytest.approx(1.5)
    with pytest.raises(ConfigError, match=r"MTrain study table: missing columns \['kept'\]"):
        split_table(study.drop(columns="kept"))


def test_table3_under_each_unstated_constant_beside_the_paper() -> None:
    paper = pd.DataFrame(
        {
            "claim": ["table3", "table3", "max_throughput"],
            "model": ["alexnet", "alexnet", "alexnet"],
            "cluster": ["cluster1", "cluster1", "cluster1"],
            "metric": ["dfs_gflops", "converting_gflops", "gflops"],
            "value": [683.0, 683.0, 699.0],
        }
    )
    ours = pd.DataFrame({"model": ["alexnet", "vgg16"], "cluster": ["cluster1"] * 2, "dfs_gflops": [400.0, 360.0]})
    ours["converting_gflops"] = [397.0, 358.0]
    table = constants_table(paper, ours, {"fp32_mac_dsp=3": ours.assign(dfs_gflops=[600.0, 500.0])})
    assert list(table["setting"]) == [BASELINE_SETTING, BASELINE_SETTING, "fp32_mac_dsp=3", "fp32_mac_dsp=3"]
    assert table.loc[0, "paper_dfs_gflops"] == 683.0 and np.isnan(table.loc[1, "paper_dfs_gflops"])
    text = constants_markdown(table)
    assert "does not state DSP slices per FP32 multiply-accumulate lane (`fp32_mac_dsp`)" in text
    assert "| alexnet | cluster1 | 683 / 683 | 400 / 397 | 600 / 397 |" in text
    assert "| vgg16 | cluster1 | – | 360 / 358 | 500 / 358 |" in text


def test_a_table3_cell_the_dram_cannot_hold_says_so() -> None:
    dag = replace(chain_dag([9e6, 9e6], [9, 9]), state_bytes=np.full(2, 2.0**31))  # 2 GiB of weights per layer
    cluster = Cluster(name="small", devices=(TWELVE, replace(TWELVE, name="twin")), batch=4)  # 1 GB of DRAM each
    row = table3_row(dag, cluster, SPECS, bandwidth_gb_per_s=3.0, step=1)
    assert row["fits"] is False and "DRAM cannot hold the training step" in row["note"]
    assert np.isnan(row["dfs_gflops"]) and np.isnan(row["converting_gflops"])
    table = constants_table(
        pd.DataFrame(columns=["claim", "model", "cluster", "metric", "value"]), pd.DataFrame([row | {"model": "m"}]), {}
    )
    assert "| m | small | – | does not fit |" in constants_markdown(table)
