"""The workflow's logic in the package: the config checks, and the Plan's flags, resources, paths and targets.

The rules only bind these to wildcards (``workflow/rules/common.smk``) and read the config through nothing else; the
shipped configs' dry runs are checked end to end by ``tests/integration/test_workflow.py``.
"""

from __future__ import annotations

import copy
import importlib.util
import re
from pathlib import Path

import pytest
import yaml
from snakemake.utils import validate

from traincost.workflow import Plan, check_config, config_problems, missing_requirements, ort_training_installed

REPO = Path(__file__).resolve().parents[2]
SCHEMA = REPO / "workflow/schemas/config.schema.yaml"


def _config(name: str) -> dict:
    config = yaml.safe_load((REPO / "config" / name).read_text())
    validate(config, schema=str(SCHEMA))  # the schema's defaults, as Snakemake fills them
    return config


@pytest.fixture
def in_repo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)  # the configs name their files relative to the repository


@pytest.mark.parametrize("name", ["config.yaml", "quick.yaml"])
def test_the_shipped_configs_pass_every_check(name: str, in_repo: None) -> None:
    check_config(_config(name), [REPO / "config" / name], SCHEMA)
    assert config_problems(_config(name), repo=REPO) == []


def test_cross_references_are_named_by_key(in_repo: None) -> None:
    config = _config("quick.yaml")
    config["workloads"]["vgg16"]["optimizer"] = "lion"
    config["hardware_sweeps"]["edge_tpu_resnet18"]["grid"]["x_pe"] = [1]
    config["mtrain"]["clusters"].append("cluster9")
    config["figure3"]["workloads"].append("nowhere")
    problems = config_problems(config, repo=REPO)
    assert "workloads.vgg16.optimizer: 'lion' is not a key of optimizers (adam, sgd, sgd_momentum)" in problems
    assert any(p.startswith("hardware_sweeps.edge_tpu_resnet18.grid.x_pe: not a parameter of") for p in problems)
    assert any(p.startswith("mtrain.clusters: 'cluster9' is not a cluster of") for p in problems)
    assert "figure3.workloads[2]: 'nowhere' is not a key of workloads" in problems


def test_a_workload_traced_by_torch_is_a_torch_model_and_is_built_by_trace_step_alone(in_repo: None, tmp_path: Path) -> None:
    config = _config("quick.yaml")
    config["workloads"]["vgg16"]["frontend"] = "torch"
    plan = Plan(config=config, repo=REPO)
    assert plan.workloads_built_by("torch") == ["vgg16"] and "vgg16" not in plan.workloads_built_by("onnx")
    assert plan.built_by("torch") == "vgg16" and "vgg16" not in plan.built_by("onnx").split("|")
    assert config_problems(config, repo=REPO) == []
    config["workloads"]["vgg16"]["attention"] = "fused"
    onnx_file = tmp_path / "net.onnx"
    onnx_file.write_bytes(b"")
    config["workloads"]["file"] = {"onnx": str(onnx_file), "batch": 1, "optimizer": "sgd", "frontend": "torch"}
    problems = config_problems(config, repo=REPO)
    assert "workloads.vgg16.attention: for the onnx front end; torch costs each attention as torch runs it" in problems
    assert any(p.startswith("workloads.file.frontend: torch traces a torch module") for p in problems)
    assert Plan(config=_config("quick.yaml"), repo=REPO).built_by("torch") == "(?!)"  # matches no workload


def test_the_config_wide_front_end_applies_to_every_workload_that_names_none(in_repo: None, tmp_path: Path) -> None:
    config = _config("quick.yaml")
    config["frontend"] = "torch"
    config["workloads"]["vgg16"]["frontend"] = "onnx"  # a workload's own key wins
    onnx_file = tmp_path / "net.onnx"
    onnx_file.write_bytes(b"")
    config["workloads"]["file"] = {"onnx": str(onnx_file), "batch": 1, "optimizer": "sgd"}  # an ONNX file: onnx
    plan = Plan(config=config, repo=REPO)
    assert plan.workloads_built_by("onnx") == ["file", "vgg16"]
    assert set(plan.workloads_built_by("torch")) == set(config["workloads"]) - {"file", "vgg16"}
    assert config_problems(config, repo=REPO) == []
    # the recompute rewrites run on an ONNX graph: a torch-built workload has none to check them on
    assert plan.recompute_graph("resnet18_cifar") == [] and plan.recompute_graph("vgg16") == [
        "results/graphs/vgg16/train_step.decomposed.onnx"
    ]
    config["workloads"]["gpt2_small"]["attention"] = "fused"  # torch by the config's default: the key has no effect
    assert "workloads.gpt2_small.attention: for the onnx front end; torch costs each attention as torch runs it" in (
        config_problems(config, repo=REPO)
    )


def test_a_config_on_the_onnx_front_end_without_onnx_runtime_training_names_the_field_and_the_install() -> None:
    config = _config("quick.yaml")  # every workload on the default front end, onnx
    assert missing_requirements(config, ort_installed=True) == []
    [problem] = missing_requirements(config, ort_installed=False)
    assert problem.startswith("frontend: onnx (the front end of resnet18_cifar, gpt2_small, resnet50_b1_sgd and ")
    assert "pip install -e '.[ort]' on Python 3.11" in problem and "snakemake --config frontend=torch" in problem
    assert "\n" not in problem
    # CI's Python 3.13 step: the quick config with every workload on the torch front end needs nothing more
    assert missing_requirements({**config, "frontend": "torch"}, ort_installed=False) == []


def test_a_workload_that_asks_for_onnx_itself_is_named_by_its_own_key() -> None:
    config = {**_config("quick.yaml"), "frontend": "torch"}
    config["workloads"] = {
        **config["workloads"],
        "own": {"model": "mlp", "batch": 1, "optimizer": "sgd", "frontend": "onnx"},
        "file": {"onnx": "net.onnx", "batch": 1, "optimizer": "sgd"},
    }
    problems = missing_requirements(config, ort_installed=False)
    assert [p.split(":")[0] for p in problems] == ["workloads.own.frontend", "workloads.file.onnx"]
    assert problems[0].endswith("or set it to torch") and "ONNX file is costed by the onnx front end" in problems[1]


def test_onnx_runtime_training_is_found_without_importing_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    found = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "onnxruntime" else found(name, *a))
    assert not ort_training_installed()
    inference_only = tmp_path / "onnxruntime"  # ONNX Runtime without its training package
    inference_only.mkdir()
    (inference_only / "__init__.py").write_text("raise ImportError('never imported')\n")
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: importlib.util.spec_from_file_location(
            name, inference_only / "__init__.py", submodule_search_locations=[str(inference_only)]
        ),
    )
    assert not ort_training_installed()
    (inference_only / "training").mkdir()
    (inference_only / "training" / "__init__.py").write_text("")
    assert ort_training_installed()


def test_a_config_file_is_read_strictly_and_the_schema_speaks_in_one_line(tmp_path: Path) -> None:
    configfile = tmp_path / "config.yaml"
    configfile.write_text("seed: 0\nseed: 1\n")
    with pytest.raises(Exception, match="duplicate key 'seed'"):
        check_config({"seed": 0}, [configfile], SCHEMA)
    configfile.write_text("seed: 0\n")
    with pytest.raises(ValueError, match=r"^invalid config: ") as info:
        check_config({"seed": "zero"}, [configfile], SCHEMA)
    assert "\n" not in str(info.value)


def _plan(workloads: dict, **sections: object) -> Plan:
    """The Plan of ``workloads`` and ``sections`` alone (no study otherwise), with the schema's defaults."""
    config = {
        "seed": 0,
        "optimizers": {"sgd": {"kind": "sgd", "lr": 0.1}, "adam": {"kind": "adam", "lr": 0.001}},
        "workloads": workloads,
        "figure3": {"workloads": []},
        "hardware_sweeps": {},
        "monet_hardware": {"edge_tpu": None, "fusemax": None},
        "monet_fusion": None,
        "monet_checkpoint": None,
    }
    config |= sections
    validate(config, schema=str(SCHEMA))
    return Plan(config=config, repo=REPO)


def test_each_kind_of_model_becomes_its_export_flags() -> None:
    plan = _plan(
        {
            "zoo": {"model": "resnet18", "options": {"width": 2}, "batch": 1, "optimizer": "sgd"},
            "factory": {"model": "pkg.nets:small", "input_shape": [3, 8, 8], "batch": 1, "optimizer": "sgd"},
            "module": {
                "module": "pkg.nets:lm",
                "kwargs": {"d": 4},
                "inputs": {"tokens": {"shape": [8]}},
                "batch": 1,
                "optimizer": "adam",
            },
            "file": {"onnx": "net.onnx", "output": "logits", "loss": "mse", "batch": 1, "optimizer": "sgd"},
        }
    )
    assert plan.model_flags("zoo") == "--model resnet18 --options '{\"width\": 2}'"
    assert plan.model_flags("factory") == "--model pkg.nets:small --name factory --input-shape 3,8,8"
    inputs = '{"tokens": {"shape": [8], "dtype": "float32"}}'  # the schema's default dtype filled in
    assert plan.model_flags("module") == (
        f"--module pkg.nets:lm --kwargs '{{\"d\": 4}}' --inputs '{inputs}' --loss cross_entropy --name module"
    )
    assert plan.model_flags("file") == "--onnx net.onnx --output logits --loss mse --name file"
    assert plan.model_files("file") == ["net.onnx"] and plan.model_files("zoo") == []
    # every key of the optimizer, those the config leaves out at the schema's defaults
    assert plan.optimizer_flags("module") == (
        "--optimizer adam --beta1 0.9 --beta2 0.999 --eps 1e-08 --lr 0.001 --momentum 0.9 --weight-decay 0.0"
    )


def test_one_export_serves_every_workload_of_the_same_model_and_batch() -> None:
    plan = _plan(
        {
            "a_sgd": {"model": "resnet18", "batch": 1, "optimizer": "sgd"},
            "b_adam": {"model": "resnet18", "batch": 1, "optimizer": "adam"},
            "c_batch8": {"model": "resnet18", "batch": 8, "optimizer": "sgd"},
        },
        monet_checkpoint={"workload": "b_adam", "hardware": "x.yaml"},
    )
    assert [plan.exported_by(name) for name in ("a_sgd", "b_adam", "c_batch8")] == ["a_sgd", "a_sgd", "c_batch8"]
    assert (plan.export_priority("a_sgd"), plan.export_priority("c_batch8")) == (10, 0)
    assert (plan.checkpoint_priority("b_adam"), plan.checkpoint_priority("a_sgd")) == (10, 0)


def test_front_end_memory_is_the_measured_peak_and_a_cluster_job_adds_snakemakes_own() -> None:
    plan = _plan(
        {
            "big": {"model": "gpt2_124m", "batch": 1, "optimizer": "adam"},
            "small": {"model": "mlp", "batch": 1, "optimizer": "sgd"},
        }
    )
    assert plan.frontend_mem_mb("big", "verify_decomposition", 2000, cluster=False) == 12_500  # 1.5 x 8,300 MB, up to 100
    assert plan.frontend_mem_mb("big", "verify_decomposition", 2000, cluster=True) == 12_900
    assert plan.frontend_mem_mb("small", "verify_decomposition", 2000, cluster=False) == 2000
    assert plan.frontend_mem_mb("big", "lower", 2000, cluster=False) == 2000  # 1.5 x 1,200 MB is less than the default


def test_the_quick_config_plans_its_paths(in_repo: None) -> None:
    plan = Plan(config=_config("quick.yaml"), repo=REPO)
    assert plan.sweep_shards("edge_tpu_resnet18", "training") == [
        "results/monet/sweeps/edge_tpu_resnet18/training/shard0-of-2.parquet",
        "results/monet/sweeps/edge_tpu_resnet18/training/shard1-of-2.parquet",
    ]
    assert (
        plan.monet_tables("resnet18_cifar", "inference", None)["ops"] == "results/workloads/resnet18_cifar/inference/ops.parquet"
    )
    bn = plan.monet_tables("resnet18_cifar", None, ("bn_epilogue", "true"))
    assert bn["ops"] == "results/ablations/monet/bn_epilogue/true/workloads/resnet18_cifar/ops.parquet"
    assert plan.resident_flag(("resident_fraction", "0.25")) == "--resident-fraction 0.25" and plan.resident_flag(None) == ""
    assert plan.schedule_flags(("fusion_tiling", "rows")) == "--fusion-tiling rows" and plan.schedule_flags(None) == ""
    # a sweep keeps its configured allocation and resident fraction unless the run ablates them
    edge_tpu = "edge_tpu_resnet18"
    assert plan.sweep_resident_fraction(edge_tpu, ("fusion_tiling", "rows")) == 0.5
    assert plan.sweep_resident_fraction(edge_tpu, ("resident_fraction", "0.25")) == "0.25"
    assert plan.sweep_allocation(edge_tpu, None) == "per_op"
    assert plan.sweep_allocation(edge_tpu, ("allocation", "split")) == "split"
    assert plan.tiling_flag(("fusion_tiling", "rows")) == " --fusion-tiling rows" and plan.tiling_flag(None) == ""
    # the study's jobs are shards of the grid; an ablation run's one job the whole grid
    assert plan.shard_flag("1", "2") == " --shard 1/2" and plan.shard_flag(None, None) == ""
    # the checkpoint runs take no allocation: an allocation run reads the study's
    assert plan.section5_inputs(("allocation", "split"))["nsga"] == "results/monet/checkpoint/nsga.parquet"
    assert plan.section5_inputs(("fusion_tiling", "rows"))["nsga"].startswith("results/ablations/monet/fusion_tiling/rows/")
    assert plan.fusion_groups("training") == {
        "limit4": "results/monet/fusion/training/limit4_typed.json",
        "limit8": "results/monet/fusion/training/limit8_typed.json",
    }
    outputs = plan.final_outputs()
    assert len(outputs) == len(set(outputs))
    assert {"results/monet/claims.csv", "results/mtrain/compare.csv", "results/tiered/compare.csv"} <= set(outputs)
    assert "results/monet/fusion/training/fused_training_limit8_typed.png" in outputs
    interactive = {"results/monet/figures1_8.html", "results/monet/figure9.html", "results/monet/figure12.html"}
    interactive.add("results/tiered/fig12.html")
    assert interactive <= set(outputs)  # the design-space pages


def test_an_mtrain_ablation_reruns_only_what_its_assumption_changes(in_repo: None) -> None:
    plan = Plan(config=_config("config.yaml"), repo=REPO)
    rerun = plan.mtrain_ablation_tables("fp32_mac_dsp", "3")
    judged = plan.mtrain_ablation_tables("dfs_optimum", "true")
    pairs = plan.mtrain_scaling_pairs
    assert rerun["scaling"] == [
        f"results/ablations/mtrain/fp32_mac_dsp/3/scaling/pairs{p}.parquet" for p in (min(pairs), max(pairs))
    ]
    assert judged["scaling"] == [f"results/mtrain/scaling/pairs{p}.parquet" for p in pairs]
    assert all(path.startswith("results/mtrain/study/") for path in judged["study"])
    # VGG-16's input changes VGG-16's Table III cells only, on the workload of that input
    vgg = plan.mtrain_ablation_tables("vgg16_input", "224")
    assert [p for p in vgg["table3"] if p.startswith("results/ablations/")] == [
        f"results/ablations/mtrain/vgg16_input/224/table3/vgg16/{c}.parquet" for c, m in plan.mtrain_table3 if m == "vgg16"
    ]
    assert (vgg["study"], vgg["scaling"]) == (judged["study"], judged["scaling"])
    assert plan.mtrain_tables("vgg16", ("vgg16_input", "224"))["ops"] == "results/workloads/mtrain_vgg16_224/ops.parquet"
    # each Figure 12 size builds on the next smaller one its run computes
    assert plan.mtrain_fewer_fpgas(min(pairs)) == {}
    assert plan.mtrain_fewer_fpgas(3) == {"fewer": "results/mtrain/scaling/pairs2.parquet"}
    assert plan.mtrain_fewer_fpgas(max(pairs), ("fp32_mac_dsp", "3")) == {
        "fewer": f"results/ablations/mtrain/fp32_mac_dsp/3/scaling/pairs{min(pairs)}.parquet"
    }
    # Table III under each unstated constant, beside the study's
    constants = plan.mtrain_constants_inputs()
    assert list(constants) == ["baseline", "fp32_mac_dsp=3", "fabric_clock_mhz=300", "vgg16_input=224"]
    assert plan.mtrain_constants_flags().startswith("--baseline results/mtrain/table3/")
    assert {"results/mtrain/table3_constants.md", *plan.mtrain_constants_csv()} <= set(plan.mtrain_outputs())


def test_the_vgg16_input_ablation_needs_its_workload(in_repo: None) -> None:
    config = _config("config.yaml")
    del config["mtrain"]["vgg16_224"]
    assert config_problems(config, repo=REPO) == [
        "mtrain.vgg16_224: None is not a key of workloads (ablations.mtrain.vgg16_input)"
    ]
    del config["mtrain"]["workloads"]["vgg16"]
    del config["mtrain"]["table3"]["cells"]["cluster1"][1], config["mtrain"]["table3"]["cells"]["cluster2"][1]
    assert "ablations.mtrain.vgg16_input: mtrain.workloads has no vgg16 whose input it would change" in config_problems(
        config, repo=REPO
    )


def test_tm_training_figures_follow_the_variants(in_repo: None) -> None:
    config = _config("config.yaml")
    assert Plan(config=config, repo=REPO).tiered_figures[-2:] == ["fig13", "fig15"]
    only_base = copy.deepcopy(config)
    only_base["tiered"]["variant_ratios"] = {}
    assert "fig13" not in Plan(config=only_base, repo=REPO).tiered_figures
    assert Plan(config={**config, "tiered": None}, repo=REPO).tiered_figures == []


def test_no_rule_reads_the_config_but_through_the_plan() -> None:
    """The rules reach the config only through the Plan (``PLAN`` in common.smk), which reads it as the schema's
    defaults left it: no `config[...]` or `config.get(...)` in a rule file, so that a default is written once."""
    files = [REPO / "Snakefile", *sorted((REPO / "workflow/rules").glob("*.smk"))]
    reads = [
        f"{path.relative_to(REPO)}:{number}: {line.strip()}"
        for path in files
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if re.search(r"\bconfig\s*(\[|\.get\b)", line)
    ]
    assert reads == []


def _without_defaults(config: dict) -> dict:
    """``config`` with every key the rules read whose default the schema gives left out."""
    config = copy.deepcopy(config)
    for workload in config["workloads"].values():
        for key in ("verify", "attention", "options", "loss"):
            workload.pop(key, None)
    for sweep in config["hardware_sweeps"].values():
        for key in ("mode", "mapping_objective", "allocation", "shards"):
            sweep.pop(key, None)
    for key in ("mode", "allocation", "type_limits", "objective", "time_limit_s"):
        config["monet_fusion"].pop(key, None)
    for key in ("mode", "fusion_length", "fusion_scope", "milp_budgets"):
        config["monet_checkpoint"].pop(key, None)
    config["monet_checkpoint"]["nsga"].pop("tolerance", None)
    config["mtrain"]["scaling"].pop("search_bandwidth_gb_per_s", None)
    del config["mtrain"]["calibration"], config["tiered"]["calibration"]
    return config


def test_every_setting_the_rules_pass_has_its_default_in_the_schema(in_repo: None) -> None:
    raw = yaml.safe_load((REPO / "config/quick.yaml").read_text())
    config = _without_defaults(raw)
    validate(config, schema=str(SCHEMA))  # as common.smk: the schema's defaults filled in
    plan = Plan(config=config, repo=REPO)
    assert plan.seed == 0 and plan.figure3_workloads == raw["figure3"]["workloads"]
    assert (plan.verify_flag("gpt2_small"), plan.attention("gpt2_small"), plan.model_options("gpt2_small")) == (
        "",
        "materialised",
        "{}",
    )
    edge = "edge_tpu_resnet18"
    assert (plan.sweep(edge)["mode"], plan.sweep(edge)["mapping_objective"]) == ("pipeline_tensor", "edp")
    assert plan.sweep_allocation(edge, None) == "split" and len(plan.sweep_shards(edge, "training")) == 1
    assert plan.fusion_params("objective", "time_limit", "mode") == {
        "objective": "subgraphs",
        "time_limit": 60,
        "mode": "pipeline_tensor",
    }
    assert plan.compare_fusion_flags(None) == " --allocation split" and plan.fusion_types == ["typed"]
    assert plan.checkpoint_params("budgets", "tolerance") == {
        "mode": "pipeline_tensor",
        "length": 4,
        "scope": "local",
        "seed": 0,
        "budgets": "0.0 0.25 0.5 0.75 1.0",
        "tolerance": 0.04,
    }
    assert plan.mtrain_search_bandwidth == 3
    assert plan.mtrain_calibration_params() == {"calibrate": "--calibrate", "label": "vgg16"}
    assert plan.mtrain_calibration_inputs()["targets"] == "data/paper/mtrain_ips.csv"
    assert plan.tiered_calibration_params() == {
        "calibrate": "--calibrate",
        "target": "sec2_offchip_energy_share_hbm_only",
        "also": "sec2_accelerator_vs_offchip_energy_hbm_only",
    }


def test_the_quick_configs_settings_become_the_rules_params(in_repo: None) -> None:
    plan = Plan(config=_config("quick.yaml"), repo=REPO)
    study = plan.checkpoint
    assert (study.workload, study.figure11_workload, study.fusion_length, study.nsga["population"]) == (
        "resnet18_cifar",
        "resnet18_cifar",
        4,
        8,
    )
    # the three checkpoint rules pass the same mode, length, scope and seed, each with its own settings beside
    assert plan.checkpoint_params() == {"mode": "pipeline_tensor", "length": 4, "scope": "local", "seed": 0}
    nsga = plan.checkpoint_params("population", "generations", "tolerance")
    assert nsga == plan.checkpoint_params() | {"population": 8, "generations": 3, "tolerance": 0.04}
    assert plan.monet_sweep_parameters("fusemax") == "x_pes y_pes vector_pes buffer_bandwidth offchip_bandwidth"
    assert plan.sweep_grid("fusemax_gpt2").startswith('{"buffer_bandwidth": [8192, 16384]')
    assert plan.sweep_max_configs_flag("fusemax_gpt2") == ""
    assert plan.monet_claims_sweeps(None) == {
        "edge_inference": "results/monet/sweeps/edge_tpu_resnet18/inference.parquet",
        "edge_training": "results/monet/sweeps/edge_tpu_resnet18/training.parquet",
        "gpt_inference": "results/monet/sweeps/fusemax_gpt2/inference.parquet",
        "gpt_training": "results/monet/sweeps/fusemax_gpt2/training.parquet",
    }
    # a check's own assumption re-runs only the comparison, on the study's sweeps
    assert plan.monet_claims_sweeps(("front_rule", "near")) == plan.monet_claims_sweeps(None)
    assert plan.monet_claims_sweeps(("bn_epilogue", "true"))["gpt_training"] == (
        "results/ablations/monet/bn_epilogue/true/sweeps/fusemax_gpt2/training.parquet"
    )
    # a job the assumption leaves as the study's (same files, same flags) is the study's: it is not run again
    bn = plan.monet_claims_sweeps(("bn_epilogue", "true"))
    assert bn["gpt_inference"] == "results/monet/sweeps/fusemax_gpt2/inference.parquet"  # the inference step has no BN to move
    bn_section5 = plan.section5_inputs(("bn_epilogue", "true"))
    assert bn_section5["fusion"] == [
        "results/monet/fusion/inference/compare.parquet",
        "results/ablations/monet/bn_epilogue/true/fusion/training/compare.parquet",
    ]
    assert bn_section5["solver_runs"] == "results/ablations/monet/bn_epilogue/true/fusion/solver_runs.parquet"
    # an allocation run solves no fusion again (the solver takes no allocation) but compares the solves under its own
    assert set(plan.fusion_groups("training", ("allocation", "split")).values()) == set(plan.fusion_groups("training").values())
    assert plan.section5_inputs(("allocation", "split"))["fusion"][1].startswith("results/ablations/monet/allocation/split/")
    assert plan.fusion_solver_reports()[0] == "results/monet/fusion/inference/limit4_typed.parquet"
    assert plan.mtrain_scaling_params() == {"model": "resnet18", "cluster": "cluster1", "bandwidths": "0.5 15", "step": 2}
    assert (plan.mtrain_bandwidths, plan.mtrain_ratio_step("cluster2"), plan.mtrain_table3_bandwidth) == ("0.125 3 15", 1, 3)
    assert (plan.tiered_ratios("base"), plan.tiered_policies, plan.tiered_tier1_sizing()) == (
        "5 25 100",
        "",
        "--tier1-share-per-ratio 0.005",
    )
    flags = plan.workloads_page_flags().split()
    assert flags[:4] == [
        "gpt2_small",
        "results/workloads/gpt2_small/ops.parquet",
        "results/workloads/gpt2_small/tensors.parquet",
        "results/graphs/gpt2_small/verification.parquet",
    ]
    assert len(flags) == 4 * len(plan.workloads) == 4 * len(plan.workloads_page_tables()) / 3
    # the comparisons before calibration are those the config ablates (MTrain's and TM-Training's, not MONET's)
    assert plan.agreement_counts_inputs() == {
        "after": ["results/monet/claims.csv", "results/mtrain/compare.csv", "results/tiered/compare.csv"],
        "before": [f"results/ablations/{s}/calibrated/false/compare.csv" for s in ("mtrain", "tiered")],
        "why": [f"results/{s}/compare_why.csv" for s in ("monet", "mtrain", "tiered")],
    }


def test_a_study_the_config_skips_gives_its_rules_no_params() -> None:
    """The rules of a skipped study make no job, but the workflow still reads them: their settings are empty."""
    plan = _plan({"net": {"model": "mlp", "batch": 1, "optimizer": "sgd"}})
    assert plan.checkpoint is None and plan.checkpoint_params("budgets") == {}
    assert plan.fusion_params("mode") == {} and plan.fusion_types == ["typed"]
    assert plan.monet_sweep_parameters("edge_tpu") == ""
    assert (plan.mtrain_calibration_params(), plan.mtrain_scaling_params(), plan.tiered_calibration_params()) == ({}, {}, {})
    assert (plan.mtrain_devices, plan.mtrain_ips, plan.mtrain_bandwidths, plan.mtrain_table3_bandwidth) == ([], [], "", None)
    assert (plan.tiered_workloads, plan.tiered_hardware, plan.tiered_policies, plan.tiered_tier1_sizing()) == ([], [], "", "")
    assert plan.comparison_csvs() == {} and plan.agreement_counts_inputs() == {"after": [], "before": [], "why": []}
