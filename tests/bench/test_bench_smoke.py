"""Every script of ``bench/`` runs on a tiny input the test builds, as ``python bench/SCRIPT ARGS`` runs it (its
``__main__`` block, in this process, with ``sys.argv`` patched; a script that watches processes or spawns its own is
run as a subprocess). A script that needs a tool this machine may lack (ZigZag, SCALE-Sim, Stream, Chromium, ONNX
Runtime Training) runs the part that works without it, or is skipped naming what is missing. ``SMOKE`` lists the test
of each script; a script added to ``bench/`` without one fails ``test_every_bench_script_has_a_smoke_test``.

The quick ones run in the default suite; those that build a network's graph or start a workflow are ``slow``.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import io
import json
import logging
import os
import runpy
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest
import yaml

from tests.bench_script import bench_script
from tests.reliability.conftest import TPUV4_TIERED, cli
from tests.workloads import conv_bn_relu_workload, conv_workload, write_zigzag_loma_tables
from traincost.workload import Workload

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "bench"
CROSSCHECK = BENCH / "crosscheck"
ORT = importlib.util.find_spec("onnxruntime") is not None
needs_ort = pytest.mark.skipif(not ORT, reason="builds a graph with the ONNX front end: ONNX Runtime Training not installed")

# Each script of bench/ (and bench/crosscheck/) and the test that runs it: a function of this module, or a test file
# and function elsewhere.
SMOKE = {
    "checkpoint_nsga_speed.py": "test_checkpoint_nsga_speed",
    "compare_runs.py": "test_compare_runs",
    "engine_digest.py": "test_engine_digest",
    "frontend.py": "test_frontend",
    "hotspots.py": "test_hotspots",
    "fusion_speed.py": "test_fusion_speed",
    "job_peaks.py": "test_job_peaks",
    "mtrain_search.py": "test_mtrain_search",
    "performance.py": "tests/unit/test_performance.py::test_the_readmes_table_is_the_measurements_file",
    "report_screenshot.py": "test_report_screenshot_static_checks",
    "reproduce.py": "test_reproduce",
    "slurm_local.sh": "test_slurm_local",
    "sweep_speed.py": "test_sweep_speed",
    "swept_parameters.py": "test_swept_parameters",
    "third_party.py": "test_third_party_markdown",
    "tiered_speed.py": "test_tiered_speed",
    "transformer_data_size.py": "test_transformer_data_size",
    "verdicts_before_after.py": "test_verdicts_before_after",
    "workflow_jobs.py": "test_workflow_jobs",
    "yaml_reader.py": "test_yaml_reader",
    "crosscheck/llm_memory_crosscheck.py": "test_llm_memory_crosscheck",
    "crosscheck/scalesim_crosscheck.py": "test_scalesim_crosscheck",
    "crosscheck/stream.py": "tests/integration/test_stream_crosscheck.py::test_one_case_against_stream",
    "crosscheck/stream_side.py": "tests/integration/test_stream_crosscheck.py::test_one_case_against_stream",
    "crosscheck/zigzag_crosscheck.py": "test_zigzag_crosscheck_on_cached_tables",
    "crosscheck/zigzag_in_order.py": "test_zigzag_in_order",
    "crosscheck/zigzag_page.py": "test_zigzag_page",
    "crosscheck/zigzag_register_file.py": "test_zigzag_register_file",
    "crosscheck/zigzag_side.py": "test_zigzag_side",
}


def test_every_bench_script_has_a_smoke_test() -> None:
    scripts = {
        str(path.relative_to(BENCH))
        for path in [*BENCH.glob("*.py"), *BENCH.glob("*.sh"), *CROSSCHECK.glob("*.py"), *CROSSCHECK.glob("*.sh")]
    }
    assert scripts == set(SMOKE), {"without a smoke test": scripts - set(SMOKE), "gone": set(SMOKE) - scripts}
    for script, test in SMOKE.items():
        file, _, name = test.rpartition("::")
        found = f"def {name}(" in (REPO / file).read_text() if file else callable(globals().get(name))
        assert found, f"{script}: {test} does not exist"


@dataclass(frozen=True)
class Ran:
    """What a script's run left: its exit status (a message given to ``sys.exit`` as 1, the message in ``err``),
    standard output and standard error."""

    status: int
    out: str
    err: str


def run_script(script: Path, *args: object, monkeypatch: pytest.MonkeyPatch) -> Ran:
    """``python SCRIPT ARGS`` in this process: the script's ``__main__`` block with ``sys.argv`` patched, the entries it
    puts on ``sys.path`` taken off afterwards."""
    monkeypatch.setattr(sys, "argv", [str(script), *map(str, args)])
    monkeypatch.setattr(sys, "path", list(sys.path))
    out, err = io.StringIO(), io.StringIO()
    status = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            runpy.run_path(str(script), run_name="__main__")
        except SystemExit as stop:
            if isinstance(stop.code, str):
                print(stop.code, file=sys.stderr)
            status = stop.code if isinstance(stop.code, int) else int(stop.code is not None)
    return Ran(status, out.getvalue(), err.getvalue())


def write_workload(workload: Workload, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    workload.write(folder / "ops.parquet", folder / "tensors.parquet")
    return folder


# ---- a finished run's results, hand-made ---------------------------------------------------------------------------


def test_compare_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table = pd.DataFrame({"op": ["conv", "relu"], "energy_pj": [1.0, 2.0], "solve_seconds": [0.5, 0.7]})
    for run, seconds, energy in (("a", 0.5, 2.0), ("b", 9.0, 2.0), ("c", 0.5, 2.5)):
        (tmp_path / run / "results/w").mkdir(parents=True)
        table.assign(solve_seconds=seconds, energy_pj=[1.0, energy]).to_parquet(tmp_path / run / "results/w/ops.parquet")
    ran = run_script(BENCH / "compare_runs.py", tmp_path / "a", tmp_path / "b", monkeypatch=monkeypatch)
    assert ran.status == 0 and "1 of 1 Parquet files match (0 byte for byte" in ran.out, ran
    ran = run_script(BENCH / "compare_runs.py", tmp_path / "a", tmp_path / "c", monkeypatch=monkeypatch)
    assert ran.status == 1 and "w/ops.parquet: column energy_pj: 1 of 2 rows differ, first row 1: 2.0 vs 2.5" in ran.out


def _claims(folder: Path, *, tie: bool, value: float) -> None:
    """MONET's comparison in a results folder: one claim and one informational row (``tie``: the newer column)."""
    rows = [
        {"claim": "fusion_saves_energy", "figure": "figure8", "paper_says": "less energy", "value": value}
        | {"holds": value < 1, "check": "ratio < 1", "kind": "claim", "magnitude": ""},
        {"claim": "search_time", "figure": "figure9", "paper_says": "minutes", "value": 12.0}
        | {"holds": "", "check": "", "kind": "timing", "magnitude": ""},
    ]
    table = pd.DataFrame(rows).assign(**({"tie": [False, ""]} if tie else {}))
    (folder / "monet").mkdir(parents=True)
    table.to_csv(folder / "monet/claims.csv", index=False)


def test_verdicts_before_after(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _claims(tmp_path / "before", tie=False, value=0.8)
    _claims(tmp_path / "after", tie=True, value=1.2)
    ran = run_script(BENCH / "verdicts_before_after.py", tmp_path / "before", tmp_path / "after", monkeypatch=monkeypatch)
    assert ran.status == 0, ran
    assert "## MONET" in ran.out and "| before | 1 of 1 in direction (0 ties)" in ran.out
    assert "| fusion_saves_energy figure8 | claim | agrees → differs | 0.8 → 1.2 |" in ran.out, ran.out
    (tmp_path / "empty").mkdir()
    ran = run_script(BENCH / "verdicts_before_after.py", tmp_path / "empty", tmp_path / "empty", monkeypatch=monkeypatch)
    assert ran.status == 2 and "no paper-vs-ours table" in ran.err


def test_swept_parameters(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A 2 x 2 grid whose latency moves with ``x_pes`` only, its MAC energy with ``lanes`` only."""
    grid = pd.DataFrame({"config_id": range(4), "x_pes": [1, 1, 2, 2], "lanes": [1, 4, 1, 4]})
    table = grid.assign(latency_cycles=100.0 / grid["x_pes"], energy_pj=5.0, energy_mac_pj=1.0 + grid["lanes"])
    table.to_parquet(tmp_path / "training.parquet")
    ran = run_script(BENCH / "swept_parameters.py", tmp_path / "training.parquet", monkeypatch=monkeypatch)
    assert ran.status == 0 and "(4 configurations)" in ran.out, ran
    rows = {line.split()[0]: line.split()[1:] for line in ran.out.splitlines()[-2:]}
    assert rows == {"x_pes": ["1.0", "0.0", "0.0"], "lanes": ["0.0", "0.0", "1.0"]}, ran.out


def test_engine_digest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_workload(conv_bn_relu_workload(), tmp_path / "results/workloads/tiny")
    hardware = ("--hardware", "tiny", "edge_tpu", "tpu_like_mixed")  # a study machine, the test one, a ZigZag import
    args = ("--results", tmp_path / "results", *hardware, "--out", tmp_path / "digest.json")
    ran = run_script(BENCH / "engine_digest.py", *args, monkeypatch=monkeypatch)
    assert ran.status == 0, ran
    digest = json.loads((tmp_path / "digest.json").read_text())
    assert {key.split("/")[0] for key in digest} == {"tiny", "edge_tpu", "tpu_like_mixed"}, sorted(digest)
    assert "edge_tpu/pe/tiny/edp" in digest and "edge_tpu/simd/tiny/simd" in digest, sorted(digest)
    ran = run_script(BENCH / "engine_digest.py", *args, "--compare", tmp_path / "digest.json", monkeypatch=monkeypatch)
    assert ran.status == 0 and f"0 of {len(digest)} differ" in ran.out, ran


# ---- processes ---------------------------------------------------------------------------------------------------------

# stands in for Snakemake: its name says so, and it runs one job whose command writes its log under results/logs
_SNAKEMAKE = """
import subprocess, sys
subprocess.run(["sh", "-c", "sleep 1.5 > results/logs/job.log"], cwd=sys.argv[1], check=True)
"""


def test_job_peaks(tmp_path: Path) -> None:
    (tmp_path / "snakemake_stand_in.py").write_text(_SNAKEMAKE)
    (tmp_path / "results/logs").mkdir(parents=True)
    run = subprocess.Popen([sys.executable, str(tmp_path / "snakemake_stand_in.py"), str(tmp_path)])
    watcher = subprocess.Popen(
        [sys.executable, str(BENCH / "job_peaks.py"), str(run.pid), str(tmp_path / "peaks.csv")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    run.wait(timeout=60)  # reaped, so that the watcher sees it end
    _, err = watcher.communicate(timeout=60)
    assert watcher.returncode == 0, err
    peaks = pd.read_csv(tmp_path / "peaks.csv")
    assert peaks["log"].tolist() == ["results/logs/job.log"] and (peaks["peak_rss_mb"] > 0).all()
    assert (peaks["last"] >= peaks["first"]).all()


_BUSY = """
def inner():
    return sum(i * i for i in range(200_000))
def outer():
    return [inner() for _ in range(40)]
outer()
"""


@pytest.mark.skipif(shutil.which("py-spy") is None and not (Path(sys.executable).parent / "py-spy").exists(),
                    reason="py-spy (the test extra) not installed")  # fmt: skip
def test_hotspots(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "busy.py").write_text(_BUSY)
    raw = tmp_path / "busy.raw"
    ran = run_script(BENCH / "hotspots.py", "--out", raw, "--top", 40, "--", sys.executable, tmp_path / "busy.py",
                     monkeypatch=monkeypatch)  # fmt: skip
    assert ran.status == 0, ran
    shares = {line.split("%", 1)[1].strip(): float(line.split("%")[0]) for line in ran.out.splitlines() if "%  " in line}
    assert shares.get("outer (busy.py)", 0) > 50 and shares.get("inner (busy.py)", 0) > 50, ran.out
    again = run_script(BENCH / "hotspots.py", "--raw", raw, "--top", 40, monkeypatch=monkeypatch)
    assert again.out == ran.out
    raw.write_text("main (a.py:1);f (a.py:2) 3\nmain (a.py:1) 1\nnot a sample\n")
    bad = run_script(BENCH / "hotspots.py", "--raw", raw, monkeypatch=monkeypatch)
    assert bad.status == 1 and "line 3: expected 'frame;frame;... count'" in bad.err, bad


def test_slurm_local() -> None:
    """Without a command it only says how to call it (starting a cluster needs root and Debian's packages)."""
    assert subprocess.run(["bash", "-n", str(BENCH / "slurm_local.sh")], check=False).returncode == 0
    done = subprocess.run(["bash", str(BENCH / "slurm_local.sh")], capture_output=True, text=True, check=False)
    assert done.returncode == 1 and "usage:" in done.stderr and "start|stop|status" in done.stderr


@pytest.mark.slow  # three fresh interpreters, each importing the hardware loader (5 s on shared cores)
def test_yaml_reader(monkeypatch: pytest.MonkeyPatch) -> None:
    ran = run_script(BENCH / "yaml_reader.py", "--sizes", 0.01, monkeypatch=monkeypatch)
    assert ran.status == 0, ran
    rows = [line.split(None, 4) for line in ran.out.splitlines()[1:]]
    assert [(row[1], row[4]) for row in rows[:2]] == [("python", "read"), ("read", "read")], ran.out
    assert rows[2][1] == "load" and rows[2][4].startswith("refused: (top level): Additional properties"), ran.out


# ---- reports --------------------------------------------------------------------------------------------


_PNG = (  # a 1 x 1 PNG
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


def test_report_screenshot_static_checks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The checks of the report's own table run without Chromium; then the script names what it lacks."""
    figure = {"mime_type": "image/png", "data_uri": f"data:image/png;base64,{_PNG}"}
    figure["caption"] = "<p>Figure 8 of the paper. This run: batch 2.</p>"
    report = tmp_path / "report.html"
    report.write_text(f'<html><body><script id="results">var results = {json.dumps({"monet/figure8.png": figure})};</script>')
    module = bench_script("report_screenshot.py")
    monkeypatch.setattr(module.shutil, "which", lambda _: None)  # this machine's Chromium, if any, left out
    monkeypatch.setattr(sys, "argv", ["report_screenshot.py", str(report), "--out", str(tmp_path / "shots")])
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit, match="no Chromium found"):
        module.main()
    assert "[FAIL]" not in out.getvalue() and "1 of 1 figures decode to an image with a size" in out.getvalue(), out.getvalue()


# ---- the ZigZag cross-check, from cached tables (ZigZag itself not needed) -------------------------------------------


def test_zigzag_crosscheck_on_cached_tables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ZigZag's side read from its cache (a search would need ZigZag installed), ours costed beside it."""
    monkeypatch.syspath_prepend(str(CROSSCHECK))
    crosscheck = importlib.import_module("zigzag_crosscheck")
    write_zigzag_loma_tables(tmp_path / "cache")
    monkeypatch.setattr(crosscheck, "RESULTS", tmp_path / "cache")  # the worker process is forked: it inherits this
    monkeypatch.setattr(crosscheck, "_search", lambda *args: pytest.fail(f"ZigZag searched {args}"))
    out = tmp_path / "table.parquet"
    monkeypatch.setattr(
        sys, "argv", ["zigzag_crosscheck.py", "--networks", "resnet18", "--hardware", "tpu_like", "--out", str(out)]
    )
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        crosscheck.main()
    table = pd.read_parquet(out)
    assert sorted(table["objective"]) == ["energy", "latency"] and (table["ours_cycles"] > 0).all()
    assert "per-layer table:" in printed.getvalue()


def test_zigzag_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The page from the cached tables alone: the cached pair judged, every other pair marked not computed."""
    write_zigzag_loma_tables(tmp_path / "cache")
    page = tmp_path / "page.md"
    ran = run_script(CROSSCHECK / "zigzag_page.py", "--results", tmp_path / "cache", "--out", page, monkeypatch=monkeypatch)
    assert ran.status == 0 and f"wrote {page}" in ran.out, ran
    text = page.read_text()
    assert "| ResNet-18 | tpu_like | 1 of 1 |" in text and "| GPT-2 block | tpu_like | not computed (lpf6) |" in text


zigzag_installed = pytest.mark.skipif(
    importlib.util.find_spec("zigzag") is None,
    reason="ZigZag (zigzag-dse) is not installed: bench/crosscheck/requirements-zigzag.txt",
)


@pytest.mark.slow
@zigzag_installed
def test_zigzag_side(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)  # the script logs its table
    ran = run_script(CROSSCHECK / "zigzag_side.py", "--workdir", tmp_path, monkeypatch=monkeypatch)
    assert ran.status == 0 and "ZigZag on the example core (latency-optimal mappings)" in caplog.text, ran


@pytest.mark.slow
@zigzag_installed
def test_zigzag_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    args = ("--hardware", "tesla_npu_like", "--layer", "qkv", "C32 OY2 OY128 C24 K72")
    ran = run_script(CROSSCHECK / "zigzag_in_order.py", *args, monkeypatch=monkeypatch)
    assert ran.status == 0 and "C32 OY2 OY128 C24 K72      ours" in ran.out, ran


@pytest.mark.slow
@zigzag_installed
def test_zigzag_register_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = write_workload(conv_workload(batch=1, channels_in=8, channels_out=8, input_hw=8, kernel=3), tmp_path / "w")
    ran = run_script(CROSSCHECK / "zigzag_register_file.py", folder, monkeypatch=monkeypatch)
    assert ran.status == 0 and "ours / ZigZag:" in ran.out, ran


@pytest.mark.slow
def test_scalesim_crosscheck(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("scalesim", reason="SCALE-Sim is not installed: bench/crosscheck/requirements-scalesim.txt")
    ran = run_script(
        CROSSCHECK / "scalesim_crosscheck.py", "--tokens", 128, "--max-folds", 1, "--jobs", 1, monkeypatch=monkeypatch
    )
    assert ran.status == 0 and "distinct shapes simulated" in ran.out, ran


# ---- the studies' speed, on a tiny workflow's results --------------------------------------------------------------


def test_checkpoint_nsga_speed(tiny_transformer: Workload, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = write_workload(tiny_transformer, tmp_path / "tiny")
    ran = run_script(BENCH / "checkpoint_nsga_speed.py", "--workload", folder, "--quick", monkeypatch=monkeypatch)
    assert ran.status == 0, ran
    assert "one evaluation, full fusion" in ran.out and "one evaluation, local fusion" in ran.out and "NSGA" not in ran.out


@pytest.mark.slow  # NSGA-II's 50 evaluations of one generation on 2 worker processes
def test_checkpoint_nsga_speed_with_its_nsga2_run(
    tiny_transformer: Workload, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = write_workload(tiny_transformer, tmp_path / "tiny")
    ran = run_script(BENCH / "checkpoint_nsga_speed.py", "--workload", folder, "--generations", 1, monkeypatch=monkeypatch)
    assert ran.status == 0 and "NSGA-II 50 x 1, 2 workers" in ran.out, ran


def test_sweep_speed(tiny_transformer: Workload, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The two MONET sweeps on grids of 4 and 2 configurations; a convolution stands in for ResNet-18 CIFAR."""
    write_workload(conv_bn_relu_workload(), tmp_path / "results/workloads/resnet18_cifar")
    write_workload(tiny_transformer, tmp_path / "results/workloads/gpt2_small")
    edge = {"hardware": "config/hardware/edge_tpu.yaml", "workload": "resnet18_cifar", "mode": "pipeline_tensor"}
    fusemax = {"hardware": "config/hardware/fusemax.yaml", "workload": "gpt2_small", "mode": "pipeline"}
    sweeps = {
        "edge_tpu_resnet18": edge | {"grid": {"x_pes": [1, 2], "lanes": [1, 4]}},
        "fusemax_gpt2": fusemax | {"grid": {"buffer_bandwidth": [8192, 16384]}},
    }
    config = yaml.safe_load((REPO / "config/config.yaml").read_text()) | {"hardware_sweeps": sweeps}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    args = ("--config", tmp_path / "config.yaml", "--results", tmp_path / "results")
    ran = run_script(BENCH / "sweep_speed.py", *args, monkeypatch=monkeypatch)
    assert ran.status == 0, ran
    assert "edge_tpu_resnet18  training               4" in ran.out and "fusemax_gpt2  training               2" in ran.out
    assert "eyeriss_like_resnet18 divisors training MAC ops           10000" in ran.out, ran.out


@pytest.mark.slow  # a `traincost tiered-study` process (4 s on shared cores)
def test_tiered_speed(tiny_transformer: Workload, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One ``traincost tiered-study`` job, the tiny transformer at one ratio, as its rule runs it."""
    tables = write_workload(tiny_transformer, tmp_path / "results/tiered/workloads/tiny/batch1")
    calibration = tmp_path / "results/tiered/calibration.parquet"
    workload = ("--ops", tables / "ops.parquet", "--tensors", tables / "tensors.parquet", "--hardware", TPUV4_TIERED)
    target = ("--paper", REPO / "data/paper/tm_training.csv", "--target", "sec2_offchip_energy_share_hbm_only")
    assert cli("calibrate", *workload, *target, "--no-calibrate", "--out", calibration).returncode == 0
    config = {"tiered": {"hardware": "config/hardware/tpuv4_tiered.yaml", "workloads": ["tiny"], "ratios": [25]}}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")  # its `traincost`
    args = ("--config", tmp_path / "config.yaml", "--results", tmp_path / "results", "--scratch", tmp_path / "scratch")
    ran = run_script(BENCH / "tiered_speed.py", *args, monkeypatch=monkeypatch)
    assert ran.status == 0, ran
    assert (tmp_path / "scratch/study/tiny/base/table.parquet").is_file()
    assert (tmp_path / "scratch/study/tiny/base/record.parquet").is_file()  # written for the ablation jobs to read


@pytest.mark.slow  # builds the five TM-Training workloads, twice
def test_transformer_data_size(monkeypatch: pytest.MonkeyPatch) -> None:
    ran = run_script(BENCH / "transformer_data_size.py", monkeypatch=monkeypatch)
    assert ran.status == 0, ran
    assert [line.split()[0] for line in ran.out.splitlines()[1:]] == [
        "bert_large",
        "t5_11b",
        "chinchilla_70b",
        "gpt3_175b",
        "palm_540b",
    ]


def test_llm_memory_crosscheck(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ours beside the hand count; llm-analysis, in a venv of its own, is skipped where that venv is missing."""
    absent = tmp_path / "no-venv/bin/python"
    ran = run_script(CROSSCHECK / "llm_memory_crosscheck.py", "--llm-analysis-python", absent, monkeypatch=monkeypatch)
    assert ran.status == 0, ran
    assert [line.split()[:2] for line in ran.out.splitlines()[1:5]] == [
        ["gpt3_175b", "ours"],
        ["gpt3_175b", "by"],
        ["palm_540b", "ours"],
        ["palm_540b", "by"],
    ]
    assert f"(llm-analysis skipped: no {absent};" in ran.out


@pytest.mark.slow  # `snakemake -n` of the quick config's whole workflow (10 s)
def test_reproduce(monkeypatch: pytest.MonkeyPatch) -> None:
    """The quick config's plan, with the benchmarks this checkout has (none: every job counted as not run)."""
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    ran = run_script(BENCH / "reproduce.py", "--configfile", "config/quick.yaml", "--top", 2, monkeypatch=monkeypatch)
    assert ran.status == 0, ran
    assert "critical path by wall seconds" in ran.out and "quiet estimate:" in ran.out


@pytest.mark.ort  # the config's workloads are built by the ONNX front end, which the workflow checks is installed
def test_workflow_jobs(tmp_path: Path) -> None:
    """The DAG of a two-workload config (in a process of its own: Snakemake keeps state between runs)."""
    from tests.integration.test_workflow import _config  # noqa: PLC0415 (a module of the ONNX front end's tests)

    (tmp_path / "config.yaml").write_text(yaml.safe_dump(_config()))
    command = [sys.executable, str(BENCH / "workflow_jobs.py"), "--snakefile", str(REPO / "Snakefile")]
    command += ["--configfile", str(tmp_path / "config.yaml"), "--out", str(tmp_path / "jobs.json")]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    jobs = json.loads((tmp_path / "jobs.json").read_text())
    exports = [job for job in jobs if job["rule"] == "export"]
    assert sorted(job["wildcards"]["workload"] for job in exports) == ["first", "second"], sorted({j["rule"] for j in jobs})
    assert str(REPO) not in (tmp_path / "jobs.json").read_text()  # the checkout's path written <repo>


# ---- the front end and the searches on the smallest zoo model (the ONNX front end: ONNX Runtime Training) ---------


@pytest.mark.slow
@needs_ort
def test_frontend(monkeypatch: pytest.MonkeyPatch) -> None:
    ran = run_script(BENCH / "frontend.py", "mlp:1", monkeypatch=monkeypatch)
    assert ran.status == 0, ran
    rows = dict(line.split(None, 1) for line in ran.out.splitlines())
    assert rows["model"].strip() == "mlp" and float(rows["tensors_compared"]) > 0, ran.out


@pytest.mark.slow
@needs_ort
def test_frontend_third_party_networks_become_zoo_entries_while_they_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """``--third-party``'s chain, on the smallest of the networks (the others take a minute or more)."""
    from examples import third_party  # noqa: PLC0415

    monkeypatch.setattr(third_party, "NETWORKS", {"bert_encoder": third_party.NETWORKS["bert_encoder"]})
    frontend = bench_script("frontend.py", name="bench_frontend")
    monkeypatch.setattr(sys, "path", list(sys.path))
    (row,) = frontend.bench_third_party()
    assert row["model"] == "bert_encoder" and row["tensors_compared"] > 0
    assert "bert_encoder" not in frontend.models.ARCHITECTURES  # a zoo entry no longer


@pytest.mark.slow
@needs_ort
def test_fusion_speed(monkeypatch: pytest.MonkeyPatch) -> None:
    ran = run_script(BENCH / "fusion_speed.py", "--models", "mlp", monkeypatch=monkeypatch)
    assert ran.status == 0, ran
    assert [line.split()[:2] for line in ran.out.splitlines()[1:]] == [["mlp", str(n)] for n in range(4, 9)], ran.out


@pytest.mark.slow
@needs_ort
def test_mtrain_search(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Table III's searches and the IP design search for the MLP on cluster 1, the full config's ratio grid."""
    config = yaml.safe_load((REPO / "config/config.yaml").read_text())
    config["workloads"]["smoke_mlp"] = {"model": "mlp", "batch": 1, "optimizer": "sgd"}
    config["mtrain"]["workloads"] = {"mlp": "smoke_mlp"}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    args = ("--config", tmp_path / "config.yaml", "--models", "mlp", "--clusters", "cluster1")
    ran = run_script(BENCH / "mtrain_search.py", *args, monkeypatch=monkeypatch)
    assert ran.status == 0 and ran.out.splitlines()[1].split()[:4] == ["mlp", "cluster1", "33", "33"], ran
    ran = run_script(BENCH / "mtrain_search.py", *args, "--designs", monkeypatch=monkeypatch)
    assert ran.status == 0 and "DarkFPGA" in ran.out and "EF-Train" in ran.out, ran


# ---- third-party networks --------------------------------------------------------------------------------------------


@pytest.mark.ort  # the zoo cases' probe (examples.third_party) uses the ONNX export's rounding check
def test_third_party_markdown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The tables of docs/zoo_coverage.md from a run's CSV (importing the zoo cases loads neither torchvision nor
    timm)."""
    run = pd.DataFrame(
        [
            {"zoo": "torchvision", "model": "alexnet", "exit": "0", "seconds": 12.5, "held": 30, "compared": 31},
            {"zoo": "torchvision", "model": "raft_large", "exit": "timeout", "seconds": 1800.0},
        ]
    )
    run.to_csv(tmp_path / "torchvision.csv", index=False)
    ran = run_script(BENCH / "third_party.py", "--markdown", tmp_path / "torchvision.csv", monkeypatch=monkeypatch)
    assert ran.status == 0, ran
    assert "### torchvision.csv" in ran.out and "1 of 2 pass." in ran.out and "| 30 / 31 " in ran.out, ran.out


@pytest.mark.slow  # one `traincost cost` process: a 2-layer bidirectional LSTM, verified by execution
def test_third_party_library(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A network of examples.library_cases through ``traincost cost``, its factory path as the docs give it."""
    out = tmp_path / "library.csv"
    args = ("library", "--only", "lstm_2layer_bidirectional", "--timeout", 600, "--out", out)
    ran = run_script(BENCH / "third_party.py", *args, monkeypatch=monkeypatch)
    assert ran.status == 0, ran
    (row,) = pd.read_csv(out, dtype={"exit": str}).to_dict("records")
    assert row["factory"] == "examples.library_cases:recurrent" and row["exit"] == "0", row
