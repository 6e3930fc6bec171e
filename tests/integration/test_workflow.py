"""The Snakemake workflow: runs, validates its config first, and re-runs only what a change touches."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from tests.integration.test_own_model import OWN_NETS, TOKENS, export_encoder_onnx
from traincost.workload import read_table

pytestmark = pytest.mark.ort  # the ONNX front end throughout (tests/conftest.py: pytest_ignore_collect)

REPO = Path(__file__).resolve().parents[2]

TINY = {"n_layer": 1, "d_model": 32, "n_head": 2, "seq_len": 16, "vocab_size": 64}


def _config(**changes: object) -> dict:
    config = {
        "seed": 0,
        "optimizers": {"sgd": {"kind": "sgd", "lr": 0.1}, "adam": {"kind": "adam", "lr": 0.001}},
        "workloads": {
            "first": {"model": "gpt2", "batch": 2, "optimizer": "sgd", "options": dict(TINY)},
            "second": {"model": "gpt2", "batch": 1, "optimizer": "adam", "options": dict(TINY)},
        },
        "figure3": {"workloads": []},
        "hardware_sweeps": {
            "edge": {
                "hardware": str(REPO / "config/hardware/edge_tpu.yaml"),
                "workload": "first",
                "mode": "pipeline_tensor",
                "shards": 2,
                "grid": {"x_pes": [1, 2], "lanes": [1, 4]},
            },
            "fm": {
                "hardware": str(REPO / "config/hardware/fusemax.yaml"),
                "workload": "second",
                "grid": {"buffer_bandwidth": [8192, 16384]},
            },
        },
        "monet_hardware": {"edge_tpu": "edge", "fusemax": "fm"},
        "monet_fusion": {
            "workload": "first",
            "hardware": str(REPO / "config/hardware/edge_tpu.yaml"),
            "manual": str(REPO / "tests/fixtures/fusion/gpt2_manual.yaml"),
            "limits": [2, 4],
            "type_limits": [True, False],
            "time_limit_s": 10,
        },
        "monet_checkpoint": {
            "workload": "first",
            "hardware": str(REPO / "config/hardware/edge_tpu.yaml"),
            "milp_budgets": [0.0, 1.0],
            "nsga": {"population": 4, "generations": 1},
        },
    }
    for path, value in changes.items():
        *parents, leaf = path.split("__")
        node = config
        for key in parents:
            node = node[key]
        node[leaf] = value
    return config


def snakemake(workdir: Path, config: dict, *args: str) -> subprocess.CompletedProcess[str]:
    (workdir / "config.yaml").write_text(yaml.safe_dump(config))
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    command = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory", str(workdir)]
    command += ["--configfile", str(workdir / "config.yaml"), "--cores", "2", *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, check=False)


def planned_jobs(result: subprocess.CompletedProcess[str]) -> set[tuple[str, str]]:
    """(rule, workload) of every job a dry run plans."""
    jobs = set()
    for block in re.split(r"\n(?=(?:local)?rule \w+:)", result.stdout):
        rule = re.match(r"(?:local)?rule (\w+):", block.strip())
        if rule:
            wildcard = re.search(r"wildcards: (?:workload|sweep)=(\w+)", block)
            jobs.add((rule.group(1), wildcard.group(1) if wildcard else ""))
    return jobs


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("workflow")
    result = snakemake(path, _config())
    assert result.returncode == 0, result.stderr[-3000:]
    return path


@pytest.mark.slow  # shares the 90 s full run of the module's workdir fixture
def test_a_full_run_writes_every_workload(workdir: Path) -> None:
    for name in ("first", "second"):
        files = ("graphs/{}/train_step.decomposed.onnx", "graphs/{}/verification.parquet", "workloads/{}/memory.parquet")
        for file in (*files, "workloads/{}/ops.parquet"):
            assert (workdir / "results" / file.format(name)).is_file()
    assert (workdir / "results/logs/export/first.log").is_file()
    for file in (
        "figure1.pdf",
        "figure8.png",
        "figure9.png",
        "figures1_8.html",
        "figure9.html",
        "claims.csv",
        "sweeps/edge/training/shard1-of-2.parquet",
        "figure10.pdf",
        "fusion/solver_runs.parquet",
        "fusion/training/fused_training_limit4_typed.png",
        "figure11.pdf",
        "figure12.png",
        "figure12.html",
        "checkpoint/milp.parquet",
        "checkpoint/recompute_check.parquet",
    ):
        assert (workdir / "results/monet" / file).is_file(), file


@pytest.mark.slow  # shares the 90 s full run of the module's workdir fixture
def test_no_job_used_more_memory_than_its_rule_declares(workdir: Path) -> None:
    """Every job's benchmark (Snakemake's max_rss of its process tree) is within the rule's mem_mb,
    so a cluster that enforces mem_mb does not kill it."""
    plan = snakemake(workdir, _config(), "-n", "--forceall")
    assert plan.returncode == 0, plan.stderr[-3000:]
    declared = {}
    for block in re.split(r"\n(?=(?:local)?rule \w+:)", plan.stdout):
        benchmark = re.search(r"benchmark: (\S+)", block)
        memory = re.search(r"\bmem_mb=(\d+)", block)
        if benchmark:
            assert memory, f"{benchmark.group(1)}: the job declares no mem_mb"
            declared[benchmark.group(1)] = int(memory.group(1))
    assert len(declared) > 20
    for path, mem_mb in declared.items():
        max_rss_mb = pd.read_csv(workdir / path, sep="\t")["max_rss"].max()
        assert max_rss_mb <= mem_mb, f"{path}: max_rss {max_rss_mb:.0f} MB > mem_mb {mem_mb}"


@pytest.mark.slow  # shares the 90 s full run of the module's workdir fixture
def test_nothing_to_do_after_a_run(workdir: Path) -> None:
    result = snakemake(workdir, _config(), "-n")
    assert result.returncode == 0
    assert planned_jobs(result) == set()


@pytest.mark.slow  # shares the 90 s full run of the module's workdir fixture
def test_changing_one_batch_reruns_only_that_workload(workdir: Path) -> None:
    result = snakemake(workdir, _config(workloads__second__batch=3), "-n")
    assert result.returncode == 0, result.stderr
    jobs = planned_jobs(result)
    assert {("export", "second"), ("train_graph", "second"), ("lower", "second"), ("memory", "second")} <= jobs
    assert not [job for job in jobs if job[1] == "first"]


@pytest.mark.slow  # shares the 90 s full run of the module's workdir fixture
def test_changing_a_sweep_grid_reruns_only_that_sweep(workdir: Path) -> None:
    config = _config()
    config["hardware_sweeps"]["edge"]["grid"]["lanes"] = [1, 8]
    result = snakemake(workdir, config, "-n")
    assert result.returncode == 0, result.stderr
    jobs = planned_jobs(result)
    assert {("hardware_sweep_shard", "edge"), ("hardware_sweep_merge", "edge"), ("figure1", ""), ("monet_claims", "")} <= jobs
    assert not [job for job in jobs if job[1] in ("first", "second", "fm")]
    assert not {"figure9", "fuse", "figure10", "checkpoint_study"} & {rule for rule, _ in jobs}


@pytest.mark.slow  # shares the 90 s full run of the module's workdir fixture
def test_changing_an_optimizer_reruns_from_the_train_graph(workdir: Path) -> None:
    config = _config()
    config["optimizers"]["adam"]["lr"] = 0.01
    result = snakemake(workdir, config, "-n")
    jobs = planned_jobs(result)
    assert ("train_graph", "second") in jobs and ("decompose", "second") in jobs and ("verify_decomposition", "second") in jobs
    assert ("export", "second") not in jobs
    assert not [job for job in jobs if job[1] == "first"]


def test_workloads_of_one_model_and_batch_train_on_one_export(tmp_path: Path) -> None:
    config = _config()
    first = config["workloads"]["first"]
    config["workloads"]["third"] = {**first, "options": dict(TINY), "optimizer": "adam"}  # first's model and batch
    config["workloads"]["fourth"] = {**first, "options": dict(TINY), "batch": 3}
    result = snakemake(tmp_path, config, "-n")
    assert result.returncode == 0, result.stderr[-3000:]
    jobs = planned_jobs(result)
    assert {job for job in jobs if job[0] == "export"} == {("export", "first"), ("export", "second"), ("export", "fourth")}
    trains_on = {}
    for block in re.split(r"\n(?=(?:local)?rule \w+:)", result.stdout):
        if block.startswith("rule train_graph:"):
            export = re.search(r"input: results/graphs/(\w+)/model.onnx", block).group(1)
            trains_on[re.search(r"wildcards: workload=(\w+)", block).group(1)] = export
    assert trains_on == {"first": "first", "second": "second", "third": "first", "fourth": "fourth"}


def test_dry_run_lists_the_jobs(tmp_path: Path) -> None:
    result = snakemake(tmp_path, _config(), "-n")
    assert result.returncode == 0
    rules = {rule for rule, _ in planned_jobs(result)}
    frontend = {"export", "train_graph", "decompose", "verify_decomposition", "lower", "memory"}
    frontend |= {"export_inference", "decompose_inference", "lower_inference"}  # the sweeps' inference steps
    monet = {"hardware_sweep_shard", "hardware_sweep_merge", "figure1", "figure8", "figure9", "monet_claims"}
    monet |= {"fuse", "compare_fusion", "fusion_solver_runs", "figure10", "fused_graph_picture", "checkpoint_study", "figure11"}
    monet |= {"checkpoint_additivity"}
    monet |= {"checkpoint_nsga", "figure12"}
    monet |= {"figures1_8_interactive", "figure9_interactive", "figure12_interactive"}  # the design-space pages
    report = {"agreement_table", "workloads_page"}  # the report's paper-vs-ours page of MONET's claims, its workloads
    assert rules == frontend | monet | report | {"all"}
    assert not (tmp_path / "results").exists()


def test_a_workload_the_torch_front_end_builds_skips_the_onnx_rules(tmp_path: Path) -> None:
    """`frontend: torch` sends a workload through trace_step (its ops, tensors and check in one job) instead of export,
    train_graph, decompose, verify_decomposition and lower; the other workload keeps the ONNX front end."""
    config = _config()
    config["workloads"]["second"]["frontend"] = "torch"
    result = snakemake(tmp_path, config, "-n", "-p")
    assert result.returncode == 0, result.stderr[-3000:]
    jobs = planned_jobs(result)
    assert {("trace_step", "second"), ("memory", "second"), ("lower", "first"), ("verify_decomposition", "first")} <= jobs
    onnx_rules = {"train_graph", "decompose", "verify_decomposition", "lower"}
    assert not {(rule, "second") for rule in onnx_rules} & jobs and ("trace_step", "first") not in jobs
    [command] = [line for line in result.stdout.splitlines() if "traincost trace-step" in line]
    assert "--model gpt2" in command and "--optimizer adam" in command and "--batch 1" in command


def test_the_config_wide_torch_front_end_builds_the_inference_steps_too(tmp_path: Path) -> None:
    """`frontend: torch` at the top: every workload's training and inference steps are traced by torch, and no rule
    that needs ONNX Runtime runs (what a Python without it can run)."""
    config = _config(frontend="torch")
    targets = [f"results/workloads/{w}/inference/ops.parquet" for w in ("first", "second")]
    result = snakemake(tmp_path, config, "-n", "-p", *targets, "results/workloads/first/memory.parquet")
    assert result.returncode == 0, result.stderr[-3000:]
    jobs = planned_jobs(result)
    assert {("trace_inference", "first"), ("trace_inference", "second"), ("trace_step", "first")} <= jobs
    onnx_rules = {"export", "export_inference", "train_graph", "decompose", "decompose_inference", "lower", "lower_inference"}
    assert not {rule for rule, _ in jobs} & onnx_rules
    [command] = [line for line in result.stdout.splitlines() if "traincost trace-inference" in line and "--batch 1" in line]
    assert "--model gpt2" in command and "--optimizer" not in command


@pytest.mark.slow  # 40 s: a tiny GPT-2 traced, checked and costed, and the workloads page
def test_a_traced_workload_is_written_checked_and_named_on_the_workloads_page(tmp_path: Path) -> None:
    config = _config()
    config["workloads"]["second"]["frontend"] = "torch"
    targets = ["results/workloads/second/memory.parquet", "results/graphs/second/verification.parquet"]
    result = snakemake(tmp_path, config, *targets)
    assert result.returncode == 0, result.stderr[-3000:]
    ops, meta = read_table(tmp_path / "results/workloads/second/ops.parquet")
    assert meta["frontend"] == "torch" and meta["model"] == "gpt2"
    assert set(ops["phase"]) == {"forward", "backward", "optimizer"}
    check, _ = read_table(tmp_path / "results/graphs/second/verification.parquet")
    assert check["held"].any() and (check.loc[check["held"], "error"] <= check.loc[check["held"], "limit"]).all()


def test_every_workload_gets_its_verification_table_and_verify_false_checks_nothing(tmp_path: Path) -> None:
    """`all` asks for each workload's verification.parquet; with `verify: false` its job writes the table with no
    rows (`--no-verify`) instead of running the check."""
    config = _config()
    config["workloads"]["second"]["verify"] = False
    result = snakemake(tmp_path, config, "-n", "-p")
    assert result.returncode == 0, result.stderr[-3000:]
    assert {("verify_decomposition", "first"), ("verify_decomposition", "second")} <= planned_jobs(result)
    commands = [line for line in (result.stdout + result.stderr).splitlines() if "traincost verify-decomposition" in line]
    skipped = {re.search(r"graphs/(\w+)/verification", line).group(1) for line in commands if "--no-verify" in line}
    assert len(commands) == 2 and skipped == {"second"}


def test_the_ablations_target_plans_its_runs_and_checks_its_values(tmp_path: Path) -> None:
    monet = {"resident_fraction": [0.25, 0.75], "bn_epilogue": [True], "front_rule": ["near"]}
    result = snakemake(tmp_path, _config(ablations={"monet": monet}), "-n", "-p", "ablations")
    assert result.returncode == 0, result.stderr
    jobs = planned_jobs(result)
    rules = {rule for rule, _ in jobs}
    assert {"monet_ablation_sweep", "monet_ablation_claims", "ablation_table", "agreement_counts", "ablations"} <= rules
    # three runs of the model (two values of one assumption, one of the other) x two sweeps x two steps, but for
    # bn_epilogue's inference step, whose tables and flags are the study's (it is the study's job); the run of the
    # check's own front rule re-runs only the comparison, on the study's tables, told the rule
    assert len(re.findall(r"rule monet_ablation_sweep:", result.stdout)) == 3 * 2 * 2 - 2
    assert not re.search(r"results/ablations/monet/bn_epilogue/true/(sweeps/\w+|fusion)/inference", result.stdout)
    assert len(re.findall(r"rule monet_ablation_claims:", result.stdout)) == 4
    assert "--assume front_rule=near" in re.sub(r"\s+", " ", result.stdout)
    assert not re.search(r"results/ablations/monet/front_rule/near/(sweeps|checkpoint|fusion)", result.stdout)
    assert "results/ablations/monet/resident_fraction/0.25/sweeps/edge/training.parquet" in result.stdout
    # section V re-runs in each run: 2 limits x 2 type settings x 2 steps solves, a comparison per step (bn_epilogue:
    # the training step's only), both checkpoint searches, each told the value; the claims judge those tables
    assert len(re.findall(r"rule monet_ablation_fuse:", result.stdout)) == 3 * 8 - 4
    assert len(re.findall(r"rule monet_ablation_compare_fusion:", result.stdout)) == 3 * 2 - 1
    # bn_epilogue=true: both workloads rewritten once, and every run of it reads the rewritten tables
    assert len(re.findall(r"rule bn_epilogue_workload:", result.stdout)) == 2
    assert "results/ablations/monet/bn_epilogue/true/workloads/first/ops.parquet" in result.stdout
    assert {"monet_ablation_checkpoint_additivity", "monet_ablation_checkpoint_nsga"} <= rules
    # the MILP and the solver runs too, so that every section V claim is judged on the run's own tables
    assert len(re.findall(r"rule monet_ablation_checkpoint_study:", result.stdout)) == 3
    assert len(re.findall(r"rule monet_ablation_fusion_solver_runs:", result.stdout)) == 3
    assert "--resident-fraction 0.75" in re.sub(r"\s+", " ", result.stdout)
    assert "results/ablations/monet/resident_fraction/0.25/checkpoint/nsga_summary.parquet" in result.stdout
    bad = snakemake(tmp_path, _config(ablations={"monet": {"resident_fraction": [0.3]}}), "-n", "ablations")
    message = bad.stdout + bad.stderr
    assert bad.returncode != 0 and "ablations.monet.resident_fraction" in message and "0.3" in message


def _first_by_default(cases: list[tuple[dict, list[str]]], keep: int) -> list[object]:
    """Parameter cases of which the first ``keep`` run by default and the rest with ``-m slow``: each is a
    Snakemake dry run of about 10 s, and this file runs on one worker."""
    return [case if i < keep else pytest.param(*case, marks=pytest.mark.slow) for i, case in enumerate(cases)]


@pytest.mark.parametrize(
    ("change", "words"),
    _first_by_default(
        [
            ({"workloads__first__batch": -3}, ["batch", "-3"]),
            ({"workloads__first__batch": "eight"}, ["batch", "eight"]),
            ({"workloads__first__model": "resnet1000"}, ["model", "resnet1000"]),
            ({"workloads__first__optimizer": "lion"}, ["workloads.first.optimizer", "lion"]),
            ({"figure3__workloads": ["nope"]}, ["figure3.workloads[0]", "nope"]),
            ({"seed": 1.5}, ["seed"]),
            ({"monet_hardware__edge_tpu": "nope"}, ["monet_hardware.edge_tpu", "nope"]),
            ({"hardware_sweeps__edge__workload": "third"}, ["hardware_sweeps.edge.workload", "third"]),
            ({"hardware_sweeps__edge__hardware": "missing.yaml"}, ["hardware_sweeps.edge.hardware", "missing.yaml"]),
            ({"hardware_sweeps__edge__shards": 0}, ["shards"]),
            ({"monet_fusion__limits": [0]}, ["limits"]),
            ({"monet_fusion__manual": "nope.yaml"}, ["monet_fusion.manual", "nope.yaml"]),
            ({"monet_checkpoint__milp_budgets": [1.5]}, ["milp_budgets"]),
            ({"workloads__first__frontend": "tvm"}, ["frontend", "tvm"]),
        ],
        keep=3,
    ),
)
def test_bad_config_fails_before_any_job(tmp_path: Path, change: dict, words: list[str]) -> None:
    result = snakemake(tmp_path, _config(**change))
    assert result.returncode != 0
    for word in words:
        assert word in result.stderr, (word, result.stderr[-1500:])
    assert not (tmp_path / "results").exists()


def _run_config_text(workdir: Path, text: str) -> subprocess.CompletedProcess[str]:
    """A dry run of the workflow on a config file written as ``text`` (what a YAML dump cannot write)."""
    (workdir / "config.yaml").write_text(text)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    command = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory", str(workdir)]
    command += ["--configfile", str(workdir / "config.yaml"), "--cores", "2", "-n"]
    return subprocess.run(command, capture_output=True, text=True, env=env, check=False)


def test_a_duplicate_key_in_the_config_is_an_error_naming_both_lines(tmp_path: Path) -> None:
    text = "seed: 1\n" + yaml.safe_dump(_config(), sort_keys=False)  # the dump's own `seed: 0` comes later
    result = _run_config_text(tmp_path, text)
    assert result.returncode != 0
    said = result.stdout + result.stderr  # a dry run reports on stdout
    assert "duplicate key 'seed'" in said and "first at line 1" in said, said[-1500:]


def test_yaml_aliases_in_the_config_are_refused_before_they_can_expand(tmp_path: Path) -> None:
    """Nine levels of ten aliases are a billion values to whatever walks them (a validator, a hash)."""
    laughs = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    laughs += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
    text = yaml.safe_dump(_config(), sort_keys=False) + "\n".join(laughs) + "\n"
    result = _run_config_text(tmp_path, text)
    said = result.stdout + result.stderr
    assert result.returncode != 0 and "the alias *a0 is not allowed" in said, said[-1500:]


def test_an_unknown_config_key_is_named_in_one_short_message(tmp_path: Path) -> None:
    result = snakemake(tmp_path, {**_config(), "hardware_sweep": {}}, "-n")
    assert result.returncode != 0
    said = result.stdout + result.stderr
    assert "'hardware_sweep' was unexpected" in said, said[-1500:]
    assert len(said) < 3000, "the schema must not be dumped into the message"


def test_an_mtrain_model_that_is_not_in_the_paper_fails_before_any_job(tmp_path: Path) -> None:
    config = yaml.safe_load((REPO / "config/quick.yaml").read_text())
    config["mtrain"]["workloads"] = {"resnet-18": "mtrain_resnet18"}
    config["mtrain"]["table3"]["cells"] = {"cluster1": ["resnet-18"]}
    config["mtrain"]["scaling"]["model"] = "resnet-18"
    result = snakemake(tmp_path, config, "-n")
    assert result.returncode != 0
    said = result.stdout + result.stderr
    assert "mtrain.workloads.resnet-18: not a model of the paper's tables" in said, said[-1500:]


def test_the_mtrain_searches_take_the_worker_processes_the_config_gives_them(tmp_path: Path) -> None:
    config = yaml.safe_load((REPO / "config/quick.yaml").read_text())
    config["mtrain"]["table3"]["cells"] = {"cluster1": ["resnet18"], "cluster2": ["resnet18"]}
    config["mtrain"]["table3"]["workers"] = {"cluster2": 2}
    config["mtrain"]["scaling"]["workers_from_pairs"] = 2
    config["mtrain"]["scaling"]["pairs"] = [1, 2, 3]
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    command = [sys.executable, "-m", "snakemake", "-n", "--forceall", "--nolock", "--cores", "2"]
    command += ["--configfile", str(tmp_path / "config.yaml")]  # run in REPO: the config's paths are relative to it
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, env=env, check=False)
    assert result.returncode == 0, result.stdout[-3000:]
    threads = {}
    for block in re.split(r"\n(?=(?:local)?rule \w+:)", result.stdout):
        rule = re.match(r"(?:local)?rule (mtrain_table3|mtrain_scaling):", block)
        if rule:
            wildcards = re.search(r"wildcards: (.*)", block).group(1)
            count = re.search(r"threads: (\d+)", block)
            threads[f"{rule.group(1)} {wildcards}"] = int(count.group(1)) if count else 1
    assert threads == {
        "mtrain_table3 mmodel=resnet18, cluster=cluster1": 1,
        "mtrain_table3 mmodel=resnet18, cluster=cluster2": 2,
        "mtrain_scaling pairs=1": 1,
        "mtrain_scaling pairs=2": 2,
        "mtrain_scaling pairs=3": 2,
    }


def _tiered_config(**changes: object) -> dict:
    config = _config(**{path: value for path, value in changes.items() if not path.startswith("tiered__")})
    config["tiered"] = {
        "hardware": str(REPO / "config/hardware/tpuv4_tiered.yaml"),
        "workloads": ["bert_large"],
        "ratios": [5, 25],
        "variant_ratios": {"double_batch": [5, 25]},
        "motivation_workload": "bert_large",
        "ratio_workload": "bert_large",
        "figure_ratio": 25,
        "tier1_share_per_ratio": 0.005,
    }
    for path, value in changes.items():
        if path.startswith("tiered__"):
            config["tiered"][path.removeprefix("tiered__")] = value
    return config


TIERED_TARGETS = ["results/tiered/compare.csv", "results/tiered/fig8.png", "results/tiered/fig13.png", "results/tiered/fig2.png"]


def _with_paper(path: Path) -> Path:
    """The paper's numbers, where the workflow reads them (relative to its working directory)."""
    (path / "data/paper").mkdir(parents=True, exist_ok=True)
    for name in ("tm_training.csv", "tm_training_claims.csv", "tm_training_table3.csv"):
        (path / "data/paper" / name).write_text((REPO / "data/paper" / name).read_text())
    return path


@pytest.mark.slow  # 50 s; tests/integration/test_cli_tiered.py runs the same stages without Snakemake
def test_tiered_study_runs_and_a_figure_setting_reruns_only_the_figures(tmp_path: Path) -> None:
    workdir = _with_paper(tmp_path)
    result = snakemake(workdir, _tiered_config(), *TIERED_TARGETS)
    assert result.returncode == 0, result.stderr[-3000:]
    for name in ("study/bert_large/base.parquet", "study/bert_large/double_batch.parquet", "fig13.pdf", "table3.csv"):
        assert (workdir / "results/tiered" / name).is_file(), name
    result = snakemake(workdir, _tiered_config(tiered__figure_ratio=5), *TIERED_TARGETS, "-n")
    assert result.returncode == 0, result.stderr[-3000:]
    rules = {rule for rule, _ in planned_jobs(result)}
    assert {"tiered_fig8", "tiered_fig13"} <= rules
    assert not {"tiered_workload", "tiered_study", "tiered_report", "tiered_fig2"} & rules


@pytest.mark.parametrize(
    ("change", "words"),
    _first_by_default(
        [
            ({"tiered__ratio_workload": "palm_540b"}, ["tiered.ratio_workload", "palm_540b"]),
            ({"tiered__figure_ratio": 50}, ["tiered.figure_ratio", "50"]),
            ({"tiered__workloads": ["gpt5"]}, ["gpt5"]),
            ({"tiered__ratios": [0]}, ["ratios"]),
        ],
        keep=1,
    ),
)
def test_bad_tiered_config_fails_before_any_job(tmp_path: Path, change: dict, words: list[str]) -> None:
    result = snakemake(tmp_path, _tiered_config(**change))
    assert result.returncode != 0
    for word in words:
        assert word in result.stderr, (word, result.stderr[-1500:])
    assert not (tmp_path / "results").exists()


USER_NETS = """
from torch import nn

def tiny_cnn():
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.SiLU(),
        nn.Conv2d(8, 8, 3, padding=1, groups=8), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 8 * 8, 10),
    )
"""


# What a workload's front end ends in: its memory table and its decomposition's check.
FRONT_END_TARGETS = (("workloads", "memory.parquet"), ("graphs", "verification.parquet"))


@pytest.mark.slow  # 20 s: the whole front end through Snakemake
def test_a_users_torch_module_is_a_workload_of_the_workflow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A factory path in `workloads.*.model` goes through export, train-graph, decompose (verified), lower and
    memory; every stage after the export draws its batches from what the export recorded, not from the zoo."""
    (tmp_path / "user_nets.py").write_text(USER_NETS)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")])))
    config = _config()
    config["workloads"]["mine"] = {
        "model": "user_nets:tiny_cnn", "input_shape": [3, 8, 8], "batch": 2, "optimizer": "sgd",
    }  # fmt: skip
    work = tmp_path / "run"
    work.mkdir()
    result = snakemake(work, config, *(f"results/{kind}/mine/{file}" for kind, file in FRONT_END_TARGETS))
    assert result.returncode == 0, result.stderr[-3000:]
    ops, meta = read_table(work / "results/workloads/mine/ops.parquet")
    assert sorted(ops[ops["G"] == 8]["kind"]) == ["conv", "conv_dgrad", "conv_wgrad"]
    assert meta["model"] == "mine"  # every output carries the workload's name


@pytest.mark.slow  # 46 s (3 min when the 2 cores are shared): two transformer encoders, twelve front-end jobs
def test_a_module_with_inputs_and_loss_and_an_onnx_file_are_workloads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`module:` with kwargs, int64 token inputs and the user's loss function, and `onnx:` with a user's export of
    the same torch.nn.TransformerEncoder network, each go through export, train-graph, decompose (verified),
    lower and memory under the workload's name."""
    (tmp_path / "own_nets.py").write_text(OWN_NETS)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "own_nets", raising=False)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")])))
    export_encoder_onnx(tmp_path / "encoder.onnx")
    config = _config()
    config["workloads"]["from_module"] = {
        "module": "own_nets:encoder", "kwargs": {"vocab": 40}, "inputs": TOKENS, "loss": "own_nets:z_loss",
        "batch": 2, "optimizer": "adam",
    }  # fmt: skip
    config["workloads"]["from_onnx"] = {"onnx": str(tmp_path / "encoder.onnx"), "batch": 2, "optimizer": "sgd"}
    work = tmp_path / "run"
    work.mkdir()
    names = ("from_module", "from_onnx")
    targets = [f"results/{kind}/{name}/{file}" for name in names for kind, file in FRONT_END_TARGETS]
    result = snakemake(work, config, *targets)
    assert result.returncode == 0, result.stderr[-3000:]
    for name, tokens in (("from_module", 40), ("from_onnx", 50)):
        tensors, meta = read_table(work / f"results/workloads/{name}/tensors.parquet")
        assert meta["model"] == name
        assert json.loads(meta["inputs"])[0] == {"name": "tokens", "shape": [2, 8], "dtype": "int64", "range": [0, tokens]}
        assert "tokens" in set(tensors["name"])


def test_every_workloads_model_is_checked_before_any_job(tmp_path: Path) -> None:
    """What each kind of model needs beside it, and no key of another kind: every problem in one message."""
    config = _config()
    config["workloads"].update(
        {
            name: {**workload, "batch": 2, "optimizer": "sgd"}
            for name, workload in {
                "no_input_shape": {"model": "user_nets:tiny_cnn"},
                "no_inputs": {"module": "user_nets:tiny_cnn"},
                "no_file": {"onnx": "no/such/model.onnx"},
                "zoo_loss": {"model": "resnet18", "loss": "mse"},
                "module_options": {"module": "user_nets:tiny_cnn", "inputs": {"x": {"shape": [3]}}, "options": {"a": 1}},
                "token_range": {"module": "user_nets:lm", "inputs": {"ids": {"shape": [8], "dtype": "int64", "range": [5, 5]}}},
                "zoo_labels": {"model": "resnet18", "labels": {"shape": [3]}},
                "zoo_output": {"model": "resnet18", "output": "logits"},
            }.items()
        }
    )
    result = snakemake(tmp_path, config, "-n")
    said = result.stdout + result.stderr
    assert result.returncode != 0, said[-1500:]
    for words in (
        "workloads.no_input_shape: the factory model 'user_nets:tiny_cnn' needs input_shape",
        "workloads.no_inputs: the module 'user_nets:tiny_cnn' needs inputs",
        "workloads.no_file.onnx: no such file 'no/such/model.onnx'",
        "workloads.zoo_loss.loss: not for a zoo model",
        "workloads.module_options.options: not for a module model",
        "workloads.token_range.inputs.ids.range: an int64 input needs [low, high] with low < high",
        "workloads.zoo_labels.labels: not for a zoo model",
        "workloads.zoo_output.output: not for a zoo model",
    ):
        assert words in said, (words, said[-1500:])
    assert not (tmp_path / "results").exists()


def test_a_workload_names_one_kind_of_model(tmp_path: Path) -> None:
    config = _config()
    config["workloads"]["mine"] = {"model": "resnet18", "onnx": "model.onnx", "batch": 2, "optimizer": "sgd"}
    result = snakemake(tmp_path, config, "-n")
    said = result.stdout + result.stderr
    assert result.returncode != 0 and "workloads.mine" in said, said[-1500:]
    assert not (tmp_path / "results").exists()
