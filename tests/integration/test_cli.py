"""The CLI as a user meets it: a chain by hand, and one clear error line on bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pandas as pd
import pytest
from onnx import helper, numpy_helper

from traincost.frontend.onnx.graph import save_onnx, set_node_meta
from traincost.limits import MAX_LINE_CHARS
from traincost.plots.design_space import unpack

pytestmark = pytest.mark.ort  # the ONNX front end throughout (tests/conftest.py: pytest_ignore_collect)

TINY_GPT2 = json.dumps({"n_layer": 1, "d_model": 32, "n_head": 2, "seq_len": 16, "vocab_size": 64})


def traincost(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "traincost.cli", *map(str, args)], capture_output=True, text=True, check=False)


def assert_clean_failure(result: subprocess.CompletedProcess[str], *words: str, left: Path | None = None) -> None:
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("traincost: error:")]
    assert len(lines) == 1, result.stderr
    assert len(lines[0]) <= MAX_LINE_CHARS + 100, f"an error line of {len(lines[0])} characters"
    for word in words:
        assert word in lines[0], (word, lines[0])
    if left is not None:
        assert not left.exists()
        assert not list(left.parent.glob(f".{left.name}*")), "a temporary file was left behind"


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """The whole chain of a tiny GPT-2, run through the CLI."""
    out = tmp_path_factory.mktemp("chain")
    steps = [
        ("export", "--model", "gpt2", "--batch", 2, "--options", TINY_GPT2, "--out", out / "model.onnx"),
        ("train-graph", "--in", out / "model.onnx", "--optimizer", "adam", "--lr", "0.001", "--out", out / "train_step.onnx"),
        (
            "decompose",
            "--in",
            out / "train_step.onnx",
            "--histogram",
            out / "hist.parquet",
            "--out",
            out / "train_step.decomposed.onnx",
        ),
        ("lower", "--in", out / "train_step.decomposed.onnx", "--ops", out / "ops.parquet", "--tensors", out / "tensors.parquet"),
        ("memory", "--ops", out / "ops.parquet", "--tensors", out / "tensors.parquet", "--out", out / "memory.parquet"),
    ]
    for step in steps:
        result = traincost(*step)
        assert result.returncode == 0, result.stderr
    return out


def test_the_chain_writes_every_stage(built: Path) -> None:
    for name in (
        "model.onnx",
        "train_step.onnx",
        "train_step.decomposed.onnx",
        "hist.parquet",
        "ops.parquet",
        "tensors.parquet",
        "memory.parquet",
    ):
        assert (built / name).stat().st_size > 0
    assert onnx.load(str(built / "train_step.decomposed.onnx")).graph.name.endswith("decomposed")


def test_decompose_prints_the_histogram(built: Path, tmp_path: Path) -> None:
    result = traincost("decompose", "--in", built / "train_step.onnx", "--out", tmp_path / "d.onnx")
    assert result.returncode == 0
    assert "com.microsoft::FusedMatMul" in result.stdout and "before" in result.stdout and "verified" not in result.stdout


def test_verify_decomposition_writes_the_check(built: Path, tmp_path: Path) -> None:
    out = tmp_path / "verification.parquet"
    before, after = built / "train_step.onnx", built / "train_step.decomposed.onnx"
    result = traincost("verify-decomposition", "--in", before, "--decomposed", after, "--seed", 1, "--out", out)
    assert result.returncode == 0, result.stderr
    assert "decomposition verified in float32: " in result.stdout
    table = pd.read_parquet(out)
    assert set(table["check"]) == {"node", "end_to_end"} and table["held"].all()
    assert "loss" in set(table["name"]) and (table["error"] <= table["limit"]).all()
    skipped = tmp_path / "skipped.parquet"
    result = traincost("verify-decomposition", "--in", before, "--decomposed", after, "--no-verify", "--out", skipped)
    assert result.returncode == 0 and pd.read_parquet(skipped).empty


def test_a_decomposition_that_differs_stops_with_one_line(built: Path, tmp_path: Path) -> None:
    """A decomposed graph whose loss is scaled by 1.01 after the fact: the check fails naming the loss, and leaves
    no table behind."""
    graph = onnx.load(str(built / "train_step.decomposed.onnx"))
    for node in graph.graph.node:
        node.output[:] = ["loss.unscaled" if name == "loss" else name for name in node.output]
        node.input[:] = ["loss.unscaled" if name == "loss" else name for name in node.input]
    graph.graph.initializer.append(numpy_helper.from_array(np.array(1.01, np.float32), "loss.scale"))
    scale = helper.make_node("Mul", ["loss.unscaled", "loss.scale"], ["loss"], name="scale_loss")
    set_node_meta(scale, phase="forward", layer="loss")
    graph.graph.node.append(scale)
    wrong = tmp_path / "wrong.decomposed.onnx"
    save_onnx(graph, wrong)
    out = tmp_path / "verification.parquet"
    result = traincost("verify-decomposition", "--in", built / "train_step.onnx", "--decomposed", wrong, "--out", out)
    assert_clean_failure(result, "decomposed graph differs at 'loss'", "far beyond rounding", left=out)


def test_unknown_model(tmp_path: Path) -> None:
    out = tmp_path / "model.onnx"
    assert_clean_failure(
        traincost("export", "--model", "resnet1000", "--batch", 1, "--out", out), "resnet1000", "resnet18", left=out
    )


def test_negative_batch(tmp_path: Path) -> None:
    out = tmp_path / "model.onnx"
    assert_clean_failure(traincost("export", "--model", "resnet18_cifar", "--batch", -4, "--out", out), "batch", left=out)


def test_options_not_json(tmp_path: Path) -> None:
    out = tmp_path / "model.onnx"
    assert_clean_failure(
        traincost("export", "--model", "gpt2_small", "--batch", 1, "--options", "{layers: 2", "--out", out), "--options", left=out
    )


def test_file_that_is_not_onnx(tmp_path: Path) -> None:
    bogus = tmp_path / "model.onnx"
    bogus.write_text("this is not a protobuf")
    out = tmp_path / "train_step.decomposed.onnx"
    assert_clean_failure(traincost("decompose", "--in", bogus, "--out", out), str(bogus), "ONNX", left=out)


def test_missing_file(tmp_path: Path) -> None:
    out = tmp_path / "t.onnx"
    assert_clean_failure(
        traincost("train-graph", "--in", tmp_path / "nope.onnx", "--optimizer", "sgd", "--lr", "0.1", "--out", out),
        "nope.onnx",
        left=out,
    )


def test_op_without_decomposition_rule(built: Path, tmp_path: Path) -> None:
    graph = onnx.load(str(built / "train_step.onnx"))
    node = helper.make_node("WarpGrad", ["loss"], ["warped"], name="warp_node", domain="com.example")
    set_node_meta(node, phase="backward", layer="loss")
    graph.graph.node.append(node)
    source = tmp_path / "with_unknown_op.onnx"
    save_onnx(graph, source)
    out = tmp_path / "out.decomposed.onnx"
    assert_clean_failure(traincost("decompose", "--in", source, "--out", out), "com.example::WarpGrad", "warp_node", left=out)


def test_lowering_a_graph_that_is_not_decomposed(built: Path, tmp_path: Path) -> None:
    ops = tmp_path / "ops.parquet"
    assert_clean_failure(
        traincost("lower", "--in", built / "train_step.onnx", "--ops", ops, "--tensors", tmp_path / "t.parquet"),
        "decompose first",
        left=ops,
    )


def test_bad_optimizer_value(built: Path, tmp_path: Path) -> None:
    out = tmp_path / "t.onnx"
    assert_clean_failure(
        traincost(
            "train-graph", "--in", built / "model.onnx", "--optimizer", "adam", "--lr", "0.001", "--beta2", "1.5", "--out", out
        ),
        "beta2",
        left=out,
    )


def test_help_and_version() -> None:
    result = traincost("--help")
    assert result.returncode == 0 and "decompose" in result.stdout and "train-graph" in result.stdout
    assert traincost("--version").stdout.startswith("traincost ")
    models = traincost("models")
    assert "resnet18_cifar" in models.stdout and "gpt2_124m" in models.stdout


FPGA_DEVICES = Path(__file__).resolve().parents[2] / "config/hardware/fpga/devices.yaml"
FPGA_IPS = Path(__file__).resolve().parents[2] / "data/fpga/training_ips.yaml"
REPO = Path(__file__).resolve().parents[2]
EDGE_TPU = REPO / "config/hardware/edge_tpu.yaml"
FUSEMAX = Path(__file__).resolve().parents[2] / "config/hardware/fusemax.yaml"


def _sweep(built: Path, out: Path, *extra: object) -> subprocess.CompletedProcess[str]:
    return traincost("sweep", "--ops", built / "ops.parquet", "--tensors", built / "tensors.parquet", *extra, "--out", out)


def test_sweep_shards_concat_to_the_whole_grid(built: Path, tmp_path: Path) -> None:
    grid = json.dumps({"x_pes": [1, 2, 4], "lanes": [1, 4]})
    whole = _sweep(built, tmp_path / "all.parquet", "--hardware", EDGE_TPU, "--grid", grid, "--step", "training")
    assert whole.returncode == 0, whole.stderr
    assert "6 configurations" in whole.stdout
    for index in range(2):
        part = _sweep(
            built,
            tmp_path / f"part{index}.parquet",
            "--hardware",
            EDGE_TPU,
            "--grid",
            grid,
            "--step",
            "training",
            "--shard",
            f"{index}/2",
        )
        assert part.returncode == 0, part.stderr
    merged = traincost(
        "concat", "--in", tmp_path / "part0.parquet", tmp_path / "part1.parquet", "--out", tmp_path / "merged.parquet"
    )
    assert merged.returncode == 0, merged.stderr
    a, b = pd.read_parquet(tmp_path / "all.parquet"), pd.read_parquet(tmp_path / "merged.parquet")
    assert list(a["config_id"]) == list(b["config_id"])
    # every column of every configuration, not only the latency: the shards are the unsharded run, split
    pd.testing.assert_frame_equal(a, b, check_exact=False, rtol=1e-12)
    assert len(pd.read_parquet(tmp_path / "part0.parquet")) == 3 and len(pd.read_parquet(tmp_path / "part1.parquet")) == 3
    assert set(a["step"]) == {"training"} and set(a["hardware"]) == {"edge_tpu"}


@pytest.mark.slow  # twelve commands end to end (four sweeps, three figures, two pages, claims twice; 31 s)
def test_sweep_figures_and_claims(built: Path, tmp_path: Path) -> None:
    edge = json.dumps({"x_pes": [1, 4], "simd_units": [16, 64], "lanes": [1, 4]})
    fusemax = json.dumps({"buffer_bandwidth": [8192, 16384], "x_pes": [64, 256]})
    tables = {}
    for name, hardware, grid in (("edge", EDGE_TPU, edge), ("gpt", FUSEMAX, fusemax)):
        for step in ("inference", "training"):
            tables[name, step] = tmp_path / f"{name}_{step}.parquet"
            result = _sweep(
                built, tables[name, step], "--hardware", hardware, "--grid", grid, "--step", step, "--mode", "pipeline"
            )
            assert result.returncode == 0, result.stderr
    for figure, name in (("energy-latency-compute", "edge"), ("compute-resources", "edge"), ("energy-latency-bandwidth", "gpt")):
        outputs = [tmp_path / f"{figure}.png", tmp_path / f"{figure}.pdf"]
        result = traincost(
            "plot-sweep", "--figure", figure, "--in", tables[name, "inference"], tables[name, "training"], "--out", *outputs
        )
        assert result.returncode == 0, result.stderr
        assert all(path.stat().st_size > 10_000 for path in outputs)
    for figure, name, grid in (("edge-tpu", "edge", edge), ("fusemax", "gpt", fusemax)):
        page = tmp_path / f"{figure}.html"
        parameters = list(json.loads(grid))
        steps = (tables[name, "inference"], tables[name, "training"])
        result = traincost("design-space", "--figure", figure, "--in", *steps, "--parameters", *parameters, "--out", page)
        assert result.returncode == 0, result.stderr
        values = unpack(page.read_text())["values"]
        rows = pd.concat([pd.read_parquet(step) for step in steps], ignore_index=True)
        assert values["config_id"] == list(rows["config_id"]) and values["step"] == list(rows["step"])
        assert all(values[p] == list(rows[p]) for p in parameters)
        assert values["latency_cycles"] == pytest.approx(list(rows["latency_cycles"]), rel=5e-4)
    claims = traincost(
        "claims",
        "--edge-inference",
        tables["edge", "inference"],
        "--edge-training",
        tables["edge", "training"],
        "--gpt-inference",
        tables["gpt", "inference"],
        "--gpt-training",
        tables["gpt", "training"],
        "--csv",
        tmp_path / "claims.csv",
    )
    assert claims.returncode == 0, claims.stderr
    text = (tmp_path / "claims.csv").read_text()
    assert text.startswith("claim,figure,paper_says,check,value,holds,kind,pivot,paper_value,ceiling,tie,magnitude,verdict")
    assert "training_latency_front_has_no_largest_pe" in text
    # section V: Figure 12's summary is judged against data/paper/monet.csv, which must then be given
    summary = tmp_path / "nsga_summary.parquet"
    row = {"tolerance": 0.04, "saved_bytes": 2e6, "saved_fraction": 0.2, "baseline_activation_bytes": 10e6}
    pd.DataFrame([row]).to_parquet(summary)
    sweeps = [f"--{name}-{step}={tables[name, step]}" for name in ("edge", "gpt") for step in ("inference", "training")]
    out = tmp_path / "claims5.csv"
    result = traincost("claims", *sweeps, "--nsga-summary", summary, "--csv", out)
    assert_clean_failure(result, "--paper", "data/paper/monet.csv", left=out)
    result = traincost("claims", *sweeps, "--nsga-summary", summary, "--paper", REPO / "data/paper/monet.csv", "--csv", out)
    assert result.returncode == 0, result.stderr
    assert "checkpoint_saving_within_tolerance" in out.read_text()


def test_sweep_errors_name_what_is_wrong(built: Path, tmp_path: Path) -> None:
    out = tmp_path / "sweep.parquet"
    assert_clean_failure(_sweep(built, out, "--hardware", EDGE_TPU, "--step", "training", "--shard", "two"), "--shard", left=out)
    result = _sweep(built, out, "--hardware", EDGE_TPU, "--grid", '{"z_pes": [1]}', "--step", "training")
    assert_clean_failure(result, "z_pes", "not a parameter", left=out)
    broken = tmp_path / "broken.yaml"
    broken.write_text(EDGE_TPU.read_text().replace("size_bytes: local_memory_mb * MiB", "size_bytes: -1"))
    result = _sweep(built, out, "--hardware", broken, "--step", "inference")
    assert_clean_failure(result, str(broken), "memories.local_memory.size_bytes", left=out)
    result = traincost("plot-sweep", "--figure", "compute-resources", "--in", built / "ops.parquet", "--out", tmp_path / "f.png")
    assert_clean_failure(result, "missing columns", left=tmp_path / "f.png")


@pytest.mark.slow  # end to end: the fusion solver, the comparison and its figures, four processes (9 s)
def test_fuse_compare_and_plot(built: Path, tmp_path: Path) -> None:
    common = ("--ops", built / "ops.parquet", "--tensors", built / "tensors.parquet")
    fuse = traincost(
        "fuse", *common, "--hardware", EDGE_TPU, "--step", "training", "--max-length", 4,
        "--out", tmp_path / "groups.json", "--report", tmp_path / "report.parquet",
    )  # fmt: skip
    assert fuse.returncode == 0, fuse.stderr
    groups = json.loads((tmp_path / "groups.json").read_text())["groups"]
    assert groups and all(2 <= len(g) <= 4 for g in groups)
    report = pd.read_parquet(tmp_path / "report.parquet")
    assert report["status"].iloc[0] == "OPTIMAL" and report["candidates"].iloc[0] > len(groups)
    compare = traincost(
        "compare-fusion", *common, "--hardware", EDGE_TPU, "--step", "training",
        "--strategy", "base=", "--strategy", f"limit4={tmp_path / 'groups.json'}", "--out", tmp_path / "compare.parquet",
    )  # fmt: skip
    assert compare.returncode == 0, compare.stderr
    table = pd.read_parquet(tmp_path / "compare.parquet").set_index("strategy")
    assert table.loc["limit4", "offchip_bytes"] <= table.loc["base", "offchip_bytes"]
    assert table["fusion_fits"].all()  # the solver's groups fit by the scheduler's check too (one memory model)
    for command, extra in (
        ("plot-fusion", ("--in", tmp_path / "compare.parquet")),
        ("plot-fused-graph", (*common, "--step", "training", "--groups", tmp_path / "groups.json")),
    ):
        result = traincost(command, *extra, "--out", tmp_path / f"{command}.png")
        assert result.returncode == 0, result.stderr
        assert (tmp_path / f"{command}.png").stat().st_size > 10_000
    bad = traincost(
        "compare-fusion",
        *common,
        "--hardware",
        EDGE_TPU,
        "--step",
        "training",
        "--strategy",
        "x=groups.txt",
        "--out",
        tmp_path / "c.parquet",
    )
    assert_clean_failure(bad, "groups.txt", left=tmp_path / "c.parquet")


def test_checkpoint_study_and_a_negative_budget(built: Path, tmp_path: Path) -> None:
    outputs = (
        "--costs",
        tmp_path / "costs.parquet",
        "--additivity",
        tmp_path / "ac.parquet",
        "--milp",
        tmp_path / "milp.parquet",
    )
    common = ("checkpoint-study", "--ops", built / "ops.parquet", "--tensors", built / "tensors.parquet", "--hardware", EDGE_TPU)
    checked = ("--graph", built / "train_step.decomposed.onnx", "--recompute-check", tmp_path / "check.parquet")
    result = traincost(*common, "--budgets", "0", "1", *outputs, *checked)
    assert result.returncode == 0, result.stderr
    milp = pd.read_parquet(tmp_path / "milp.parquet")
    assert list(milp["budget_fraction"]) == [0.0, 1.0] and milp["activation_bytes"].iloc[0] == 0
    assert [len(dropped) for dropped in milp["dropped"]] == list(milp["recomputed"])
    check = pd.read_parquet(tmp_path / "check.parquet")  # a solution that recomputes nothing is not run
    solutions = {f"milp budget {row.budget_fraction:g}" for row in milp.itertuples() if row.recomputed}
    assert "milp budget 0" in solutions and set(check["rewrite"]) == {"AC10", "AC01", "AC11"} | solutions
    assert (check["error"] <= check["limit"]).all()
    figure = traincost("plot-checkpoint", "--in", tmp_path / "ac.parquet", "--out", tmp_path / "f11.png")
    assert figure.returncode == 0, figure.stderr
    bad = tmp_path / "bad"
    failed = traincost(
        *common, "--budgets", "-0.5", "--costs", bad / "c.parquet", "--additivity", bad / "a.parquet", "--milp", bad / "m.parquet"
    )
    assert_clean_failure(failed, "argument --budgets", "'-0.5'", left=bad / "m.parquet")


@pytest.mark.slow  # end to end: ten `traincost` processes, the MTrain chain from study to figures (20 s)
def test_mtrain_study_report_figures_and_an_unknown_cluster(built: Path, tmp_path: Path) -> None:
    inputs = ("--ops", built / "ops.parquet", "--tensors", built / "tensors.parquet", "--devices", FPGA_DEVICES, "--batch", 4)
    inputs += ("--ips", FPGA_IPS)
    study = traincost("mtrain-study", *inputs, "--cluster", "cluster1", "--bandwidths", 0.5, 15, "--out", tmp_path / "s.parquet")
    assert study.returncode == 0, study.stderr
    table = pd.read_parquet(tmp_path / "s.parquet")
    methods = {"MTrain", "Alpa", "HAP", "single DarkFPGA", "single EF-Train"}
    assert set(table["method"]) == methods and set(table["bandwidth_gb_per_s"]) == {0.5, 15.0}
    for _, one in table[table["method"] == "MTrain"].groupby("bandwidth_gb_per_s"):
        assert list(one["step"]) == [1, 2, 3, 4]
        assert list(one["throughput_gflops"]) == sorted(one["throughput_gflops"])  # every step keeps or improves
    assert (
        table[table["method"] == "MTrain"]["fits"].all() and (table[table["method"] == "MTrain"]["max_dram_fraction"] <= 1).all()
    )
    table3 = traincost("mtrain-table3", *inputs, "--cluster", "cluster1", "--step", 2, "--out", tmp_path / "t3.parquet")
    assert table3.returncode == 0, table3.stderr
    row = pd.read_parquet(tmp_path / "t3.parquet").iloc[0]
    assert row["dfs_ratios_mapped"] == 3 and row["dfs_gflops"] >= row["converting_gflops"]  # 4 samples in steps of 2
    sizes = []  # one job per cluster size, as the workflow runs them
    for pairs in (1, 2):  # each size built on the one below, as the workflow chains them
        fewer = ("--fewer-fpgas", sizes[-1]) if sizes else ()
        sizes.append(tmp_path / f"x{pairs}.parquet")
        scaling = traincost(
            "mtrain-scaling", *inputs, "--cluster", "cluster1", "--pairs", pairs, "--bandwidths", 15, *fewer, "--out", sizes[-1]
        )
        assert scaling.returncode == 0, scaling.stderr
    fewer, more = (pd.read_parquet(size).iloc[0] for size in sizes)
    assert more["throughput_gflops"] >= fewer["throughput_gflops"] * (1 - 1e-9)  # more FPGAs never lower it
    paper = Path(__file__).resolve().parents[2] / "data/paper/mtrain.csv"
    names = ("all.parquet", "x.parquet", "t3all.parquet", "t3.csv", "t3.md", "compare.csv", "split.csv")
    outs = {name: tmp_path / name for name in names}
    report = traincost(
        "mtrain-report",
        *("--study", tmp_path / "s.parquet", "--table3", tmp_path / "t3.parquet", "--scaling", *sizes),
        *("--paper", paper, "--study-out", outs["all.parquet"], "--scaling-out", outs["x.parquet"]),
        *("--table3-parquet", outs["t3all.parquet"], "--table3-csv", outs["t3.csv"], "--table3-md", outs["t3.md"]),
        *("--compare", outs["compare.csv"], "--split", outs["split.csv"]),
    )
    assert report.returncode == 0, report.stderr
    split = pd.read_csv(outs["split.csv"])
    assert list(split["bandwidth_gb_per_s"]) == [0.5, 15.0] and (split["over_best_single"] >= 1 - 1e-9).all()
    assert list(pd.read_parquet(outs["x.parquet"])["fpgas"]) == [2, 4]
    compare = pd.read_csv(outs["compare.csv"])
    assert {"speedup_vs_hap", "speedup_vs_alpa", "scaling_gain", "dfs_ratio_count", "dfs_ratios"} <= set(compare["claim"])
    assert outs["t3.md"].read_text().startswith("| Model | Cluster |")
    for figure, extra in (("steps", ()), ("methods", ("--cluster", "cluster1")), ("scaling", ("--search-bandwidth", 15))):
        source = tmp_path / ("x.parquet" if figure == "scaling" else "s.parquet")
        plotted = traincost("plot-mtrain", "--figure", figure, *extra, "--in", source, "--out", tmp_path / f"{figure}.png")
        assert plotted.returncode == 0, plotted.stderr
        assert (tmp_path / f"{figure}.png").stat().st_size > 0
    failed = traincost("mtrain-study", *inputs, "--cluster", "cluster9", "--out", tmp_path / "bad.parquet")
    assert_clean_failure(failed, "cluster9", "cluster1", left=tmp_path / "bad.parquet")
    no_rows = traincost(
        "plot-mtrain", "--figure", "methods", "--cluster", "cluster3", "--in", tmp_path / "s.parquet", "--out", tmp_path / "m.png"
    )
    assert_clean_failure(no_rows, "cluster3", left=tmp_path / "m.png")
