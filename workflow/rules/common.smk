import json
import shlex
from pathlib import Path
from types import SimpleNamespace

import jsonschema
import pandas as pd
from snakemake.utils import validate

from traincost.config_files import read_yaml, shorten
from traincost.fpga.devices import load_fpga_catalog


def _check_config():
    """The config files read strictly (duplicate keys, aliases, NaN/inf, size), then the schema with one
    short line per problem; snakemake's validate then fills in the schema's defaults."""
    for configfile in workflow.configfiles:
        read_yaml(configfile)
    schema = read_yaml(Path(workflow.current_basedir) / "../schemas/config.schema.yaml")
    validator = jsonschema.validators.validator_for(schema)(schema)
    errors = []
    for error in validator.iter_errors(config):
        while error.context:  # "not valid under any of the given schemas": the deepest reason why
            error = max(error.context, key=lambda e: (len(e.absolute_path), e.validator != "type"))
        errors.append(error)
    errors.sort(key=lambda e: [str(p) for p in e.absolute_path])
    if errors:
        raise ValueError(
            "invalid config: "
            + "; ".join(f"{'.'.join(map(str, e.absolute_path)) or 'config'}: {shorten(e.message, 200)}" for e in errors[:5])
        )
    validate(config, schema="../schemas/config.schema.yaml")


_check_config()

# Every rule's conda environment (relative to workflow/rules/; see workflow/envs/traincost.yaml).
TRAINCOST_ENV = "../envs/traincost.yaml"


def _check_references():
    """Cross-checks the schema cannot express; every problem names its key."""
    problems = []
    for name, workload in config["workloads"].items():
        problems += _model_problems(name, workload)
        if workload["optimizer"] not in config["optimizers"]:
            problems.append(
                f"workloads.{name}.optimizer: {workload['optimizer']!r} is not a key of optimizers "
                f"({', '.join(sorted(config['optimizers']))})"
            )
    for name, sweep in config["hardware_sweeps"].items():
        if sweep["workload"] not in config["workloads"]:
            problems.append(f"hardware_sweeps.{name}.workload: {sweep['workload']!r} is not a key of workloads")
        for key in ("hardware", "fusion"):
            if key in sweep and not Path(sweep[key]).is_file():
                problems.append(f"hardware_sweeps.{name}.{key}: no such file {sweep[key]!r}")
        if Path(sweep["hardware"]).is_file():
            problems += _grid_problems(name, sweep)
    for key, name in config["monet_hardware"].items():
        if name is not None and name not in config["hardware_sweeps"]:
            problems.append(f"monet_hardware.{key}: {name!r} is not a key of hardware_sweeps")
    fusion = config["monet_fusion"]
    if fusion is not None:
        if fusion["workload"] not in config["workloads"]:
            problems.append(f"monet_fusion.workload: {fusion['workload']!r} is not a key of workloads")
        for key in ("hardware", "manual"):
            if not Path(fusion[key]).is_file():
                problems.append(f"monet_fusion.{key}: no such file {fusion[key]!r}")
    study = config["monet_checkpoint"]
    if study is not None:
        for key in ("workload", "figure11_workload"):
            if key in study and study[key] not in config["workloads"]:
                problems.append(f"monet_checkpoint.{key}: {study[key]!r} is not a key of workloads")
        if not Path(study["hardware"]).is_file():
            problems.append(f"monet_checkpoint.hardware: no such file {study['hardware']!r}")
    problems += _mtrain_problems()
    problems += _tiered_problems()
    for i, name in enumerate(config["figure3"]["workloads"]):
        if name not in config["workloads"]:
            problems.append(f"figure3.workloads[{i}]: {name!r} is not a key of workloads")
        elif ":" in config["workloads"][name].get("model", ":"):
            problems.append(f"figure3.workloads[{i}]: {name!r} is not a zoo model (torch's measurement builds it from the zoo)")
    if problems:
        raise ValueError("invalid config: " + "; ".join(problems))


def _model_problems(name, workload):
    """What a workload's model needs beside it: a factory model its input_shape, a module its inputs, an ONNX
    file to exist; and no key that belongs to another kind of model."""
    at = f"workloads.{name}"
    model = workload.get("model", "")
    kind = "onnx" if "onnx" in workload else "module" if "module" in workload else "factory" if ":" in model else "zoo"
    allowed = {"zoo": {"options"}, "factory": {"input_shape"}, "module": {"kwargs", "inputs", "loss", "labels"}, "onnx": {"inputs", "loss", "output"}}
    given = {key for key in ("options", "input_shape", "kwargs", "inputs", "output", "labels") if workload.get(key)}
    given |= {"loss"} if workload.get("loss", "cross_entropy") != "cross_entropy" else set()
    problems = [f"{at}.{key}: not for a {kind} model" for key in sorted(given - allowed[kind])]
    if kind == "factory" and "input_shape" not in workload:
        problems.append(f"{at}: the factory model {model!r} needs input_shape")
    if kind == "module" and "inputs" not in workload:
        problems.append(f"{at}: the module {workload['module']!r} needs inputs (name -> shape, dtype, range)")
    if kind == "onnx" and not Path(workload["onnx"]).is_file():
        problems.append(f"{at}.onnx: no such file {workload['onnx']!r}")
    for input_name, spec in (workload.get("inputs") or {}).items():
        int64, bounds = spec.get("dtype") == "int64", spec.get("range")
        if int64 and (bounds is None or bounds[0] >= bounds[1]):
            problems.append(f"{at}.inputs.{input_name}.range: an int64 input needs [low, high] with low < high")
        if not int64 and bounds is not None:
            problems.append(f"{at}.inputs.{input_name}.range: only int64 inputs take a range")
    if kind == "onnx" and ":" in workload.get("loss", ""):
        problems.append(f"{at}.loss: an ONNX file takes cross_entropy or mse (a loss function needs the torch module)")
    return problems


def _grid_problems(name, sweep):
    """Swept names that are not parameters of the template: caught here, not in a shard job."""
    parameters = (read_yaml(sweep["hardware"]) or {}).get("parameters") or {}
    return [
        f"hardware_sweeps.{name}.grid.{key}: not a parameter of {sweep['hardware']} (parameters: {', '.join(parameters)})"
        for key in sweep["grid"]
        if key not in parameters
    ]


def _mtrain_problems():
    study = config.get("mtrain")
    if study is None:
        return []
    problems = []
    if not Path(study["devices"]).is_file():
        problems.append(f"mtrain.devices: no such file {study['devices']!r}")
        clusters = None
    else:
        clusters = load_fpga_catalog(study["devices"]).clusters  # raises on an invalid catalog, naming the key
    paper_models = set(pd.read_csv(Path(workflow.basedir, "data/paper/mtrain.csv"))["model"].dropna())
    for model, name in study["workloads"].items():
        if name not in config["workloads"]:
            problems.append(f"mtrain.workloads.{model}: {name!r} is not a key of workloads")
        if model not in paper_models:
            problems.append(
                f"mtrain.workloads.{model}: not a model of the paper's tables (data/paper/mtrain.csv: {', '.join(sorted(paper_models))})"
            )
    for cluster in study["clusters"]:
        if cluster not in study["ratio_step"]:
            problems.append(f"mtrain.ratio_step: no step for cluster {cluster!r}")
        if clusters is not None and cluster not in clusters:
            problems.append(f"mtrain.clusters: {cluster!r} is not a cluster of {study['devices']} ({', '.join(sorted(clusters))})")
    for cluster, models in study["table3"]["cells"].items():
        if cluster not in study["ratio_step"]:
            problems.append(f"mtrain.ratio_step: no step for cluster {cluster!r} (mtrain.table3.cells)")
        problems += [f"mtrain.table3.cells.{cluster}: {m!r} is not a key of mtrain.workloads" for m in models if m not in study["workloads"]]
    scaling = study["scaling"]
    if scaling["model"] not in study["workloads"]:
        problems.append(f"mtrain.scaling.model: {scaling['model']!r} is not a key of mtrain.workloads")
    if scaling["cluster"] not in study["ratio_step"]:
        problems.append(f"mtrain.ratio_step: no step for cluster {scaling['cluster']!r} (mtrain.scaling)")
    calibration = study.get("calibration") or {}
    if calibration.get("workload", "vgg16") not in config["workloads"]:
        problems.append(f"mtrain.calibration.workload: {calibration.get('workload', 'vgg16')!r} is not a key of workloads")
    if not Path(study.get("ips", "")).is_file():
        problems.append(f"mtrain.ips: no such file {study.get('ips')!r}")
    if "targets" in calibration and not Path(calibration["targets"]).is_file():
        problems.append(f"mtrain.calibration.targets: no such file {calibration['targets']!r}")
    return problems


def _tiered_problems():
    study = config.get("tiered")
    if study is None:
        return []
    problems = []
    if not Path(study["hardware"]).is_file():
        problems.append(f"tiered.hardware: no such file {study['hardware']!r}")
    for key in ("motivation_workload", "ratio_workload"):
        if study[key] not in study["workloads"]:
            problems.append(f"tiered.{key}: {study[key]!r} is not one of tiered.workloads")
    if study["figure_ratio"] not in study["ratios"]:
        problems.append(f"tiered.figure_ratio: {study['figure_ratio']} is not one of tiered.ratios")
    for variant, ratios in study.get("variant_ratios", {}).items():
        if study["figure_ratio"] not in ratios:
            problems.append(f"tiered.variant_ratios.{variant}: must include figure_ratio {study['figure_ratio']}")
    return problems


_check_references()

WORKLOADS = sorted(config["workloads"])


SWEEPS = sorted(config["hardware_sweeps"])
FUSION_TYPES = (
    ["typed" if flag else "free" for flag in config["monet_fusion"].get("type_limits", [True])]
    if config["monet_fusion"] is not None
    else ["typed"]
)
STEPS = ["inference", "training"]
# the report's category of each study's figures and tables
STUDY_CATEGORIES = {"monet": "MONET", "mtrain": "MTrain", "tiered": "TM-Training"}


wildcard_constraints:
    workload="|".join(WORKLOADS),
    sweep="|".join(SWEEPS) or "NONE",
    step="|".join(STEPS),


def workload(wildcards):
    return config["workloads"][wildcards.workload]


# Peak resident memory (MB) of the front-end stages on the full config's largest workloads (model, batch), where
# 1.5 x it is more than the rule's default, rounded up to 100 MB; other workloads use the rule's default. Measured
# on 25 November 2026 with the split of decompose and verify_decomposition, each rule's command in a process of its
# own with one thread (bench/frontend.py --rules WORKLOAD: the process's maximum RSS; ResNet-50 at batch 8 with Adam,
# the larger of its SGD and Adam steps; AlexNet as the workload alexnet, which mtrain_alexnet shares), at load 9 to 11
# from other work; measure_memory: the full run of the same day (its benchmark's max_rss). verify_decomposition: again
# on 26 November 2026, once its node-by-node check and end-to-end comparison shared one execution (the maximum RSS of
# the check on one thread, on the graphs of the full run).
FRONTEND_PEAK_MB = {
    ("gpt2_124m", 1): {"export": 4100, "train_graph": 3600, "decompose": 2700, "verify_decomposition": 8300, "lower": 1200},
    ("vgg16", 1): {"export": 3600, "train_graph": 4900, "decompose": 3500, "verify_decomposition": 7900, "lower": 1200},
    ("resnet50", 8): {"verify_decomposition": 3500, "measure_memory": 1500},
    ("alexnet", 1): {"decompose": 1300, "verify_decomposition": 3500, "lower": 700},
}


# The priority of the jobs Snakemake should start first among those ready (others have 0).
FIRST = 10


def checkpoint_first(wildcards):
    """A front-end job's priority: the workload of MONET's checkpointing study (Figures 11 and 12) first, so that its
    NSGA-II (checkpoint_nsga, the longest job of one thread) starts minutes into the run and runs beside the others
    instead of holding the end of it (the full run of 26 November 2026 lowered ResNet-18 with Adam 11.5 minutes in)."""
    study = config.get("monet_checkpoint") or {}
    return FIRST if wildcards.workload == study.get("workload") else 0


def export_first(wildcards):
    """An export's priority: first if the checkpointing study's workload trains on it (``exported_by``)."""
    study = (config.get("monet_checkpoint") or {}).get("workload")
    return FIRST if study is not None and wildcards.workload == exported_by(study) else 0


def model_flags(wildcards):
    """The model of a workload as `traincost export` takes it: a zoo name with its options, or a user's module or
    ONNX file under the workload's name with its kwargs, inputs and loss."""
    spec = workload(wildcards)
    if "onnx" in spec:
        flags = ["--onnx", spec["onnx"]] + (["--output", spec["output"]] if "output" in spec else [])
    elif "module" in spec:
        flags = ["--module", spec["module"], "--kwargs", json.dumps(spec.get("kwargs", {}), sort_keys=True)]
    elif ":" in spec["model"]:
        return shlex.join(["--model", spec["model"], "--name", wildcards.workload, "--input-shape", ",".join(map(str, spec["input_shape"]))])
    else:
        return shlex.join(["--model", spec["model"], "--options", json.dumps(spec.get("options", {}), sort_keys=True)])
    if "inputs" in spec:
        flags += ["--inputs", json.dumps(spec["inputs"])]
    if "labels" in spec:
        flags += ["--labels", json.dumps(spec["labels"])]
    return shlex.join([*flags, "--loss", spec.get("loss", "cross_entropy"), "--name", wildcards.workload])


def exported_by(name):
    """The workload whose export (results/graphs/<it>/model.onnx) workload ``name`` trains on: the first workload in
    the config with the same export command (model, options, batch) and model files. One export per distinct model
    and batch: the full config's ResNet-18 at batch 1 serves three workloads, ResNet-50 at batch 1 and 8 two each."""

    def command(other):
        named = SimpleNamespace(workload=other)
        return model_flags(named), workload(named)["batch"], tuple(model_files(named))

    wanted = command(name)
    return next(other for other in config["workloads"] if command(other) == wanted)


def model_files(wildcards):
    """A workload's ONNX file, so that the export re-runs when it changes."""
    return [workload(wildcards)["onnx"]] if "onnx" in workload(wildcards) else []


# A cluster job runs two Snakemake processes beside the tool its rule measures (the batch script's and its srun
# step's): about 350 MB RSS together, measured on bench/slurm_local.sh's cluster (profiles/README.md), rounded up
# to 100 MB. A rule's own mem_mb is its tool's (what its benchmark measures, and all a local run needs: there the
# jobs share one Snakemake); a cluster executor (SLURM, cluster-generic) asks this much more for every job, so that
# a site which enforces the request (cgroups) does not kill the job. A dry run (-n) shows the tool's mem_mb alone.
SNAKEMAKE_IN_JOB_MB = 400


def _in_job(tool_mb):
    return tool_mb + (SNAKEMAKE_IN_JOB_MB if workflow.non_local_exec else 0)


def job_mem_mb(tool_mb):
    """mem_mb of a job whose tool needs tool_mb: plus Snakemake's own processes where each job runs its own."""

    def mem_mb(wildcards):
        return _in_job(tool_mb)

    return mem_mb


def frontend_mem_mb(stage, quick_mb):
    """mem_mb of a front-end job: 1.5 x the peak measured for its model and batch, rounded up to 100 MB, else
    quick_mb; on a cluster plus Snakemake's own processes."""

    def mem_mb(wildcards):
        spec = workload(wildcards)
        peak = FRONTEND_PEAK_MB.get((spec.get("model"), spec["batch"]), {}).get(stage)
        return _in_job(quick_mb if peak is None else max(quick_mb, -(-15 * peak // 1000) * 100))

    return mem_mb


def optimizer_flags(wildcards):
    """The optimizer of a workload as `traincost` flags (only the keys the config sets)."""
    spec = config["optimizers"][workload(wildcards)["optimizer"]]
    flags = [f"--optimizer {spec['kind']}"]
    flags += [f"--{key.replace('_', '-')} {value}" for key, value in sorted(spec.items()) if key != "kind"]
    return " ".join(flags)


def sweep(wildcards):
    return config["hardware_sweeps"][wildcards.sweep]


def sweep_shards(wildcards):
    """The shard files of one sweep and step."""
    count = sweep(wildcards).get("shards", 1)
    return [f"results/monet/sweeps/{wildcards.sweep}/{wildcards.step}/shard{i}-of-{count}.parquet" for i in range(count)]


def sweep_table(name, step):
    return f"results/monet/sweeps/{name}/{step}.parquet"


def get_final_output():
    outputs = expand("results/workloads/{workload}/memory.parquet", workload=WORKLOADS)
    outputs += expand("results/graphs/{workload}/verification.parquet", workload=WORKLOADS)  # every decomposition checked
    if config["figure3"]["workloads"]:
        outputs += expand("results/monet/figure3.{ext}", ext=["png", "pdf"])
        outputs.append("results/monet/figure3_memory_compare.csv")
    edge, fusemax = config["monet_hardware"]["edge_tpu"], config["monet_hardware"]["fusemax"]
    if edge:
        outputs += expand("results/monet/{figure}.{ext}", figure=["figure1", "figure8"], ext=["png", "pdf"])
    if fusemax:
        outputs += expand("results/monet/figure9.{ext}", ext=["png", "pdf"])
    if edge and fusemax:
        outputs.append("results/monet/claims.csv")
    outputs += [sweep_table(name, step) for name in SWEEPS for step in STEPS]
    if config["monet_fusion"] is not None:
        outputs += expand("results/monet/figure10.{ext}", ext=["png", "pdf"])
        outputs.append("results/monet/fusion/solver_runs.parquet")
        limit = max(config["monet_fusion"]["limits"])
        outputs += expand("results/monet/fusion/{step}/limit{limit}_{types}.png", step=STEPS, limit=limit, types=FUSION_TYPES[0])
    if config.get("mtrain") is not None:
        outputs += mtrain_outputs()
    if config.get("tiered") is not None:
        outputs += tiered_outputs()
    if config["monet_checkpoint"] is not None:
        outputs += expand("results/monet/figure11.{ext}", ext=["png", "pdf"])
        outputs.append("results/monet/checkpoint/milp.parquet")
        if "nsga" in config["monet_checkpoint"]:
            outputs += expand("results/monet/figure12.{ext}", ext=["png", "pdf"])
    outputs += agreement_outputs()
    return outputs


# ---------------------------------------------------------------- MONET (monet.smk)
def _monet_assumption(wildcards):
    """(assumption, value) of a MONET ablation run, None for the study's own rules (no such wildcards)."""
    return (wildcards.assumption, wildcards.value) if "assumption" in wildcards.keys() else None


def monet_root(wildcards):
    """Where a MONET rule's section V tables live: the study's, or one ablation run's."""
    ablation = _monet_assumption(wildcards)
    return "results/monet" if ablation is None else "results/ablations/monet/{}/{}".format(*ablation)


def monet_tables(name, wildcards):
    """The Workload IR tables of workload ``name`` that MONET rules read for the step of the rule's ``step`` wildcard
    (training without one): the inference step's (lower_inference: an eval-mode export, BatchNorm folded), or the
    training step's, the cached ones or, in a bn_epilogue=true ablation, those with every forward BatchNorm run as its
    convolution's epilogue (made by bn_epilogue_workload)."""
    if wildcards.get("step") == "inference":
        folder = f"results/workloads/{name}/inference"
    elif _monet_assumption(wildcards) == ("bn_epilogue", "true"):
        folder = f"results/ablations/monet/bn_epilogue/true/workloads/{name}"
    else:
        folder = f"results/workloads/{name}"
    return {"ops": f"{folder}/ops.parquet", "tensors": f"{folder}/tensors.parquet"}


def monet_resident_flag(wildcards):
    """--resident-fraction of a resident_fraction ablation run; empty (the commands' default) otherwise."""
    ablation = _monet_assumption(wildcards)
    return f"--resident-fraction {ablation[1]}" if ablation and ablation[0] == "resident_fraction" else ""


def _sweep_inputs(wildcards):
    """The workload tables and hardware/fusion files a sweep reads (so editing them re-runs it)."""
    spec = sweep(wildcards)
    files = {**monet_tables(spec["workload"], wildcards), "hardware": spec["hardware"]}
    if "fusion" in spec:
        files["fusion"] = spec["fusion"]
    return files


def _edge(step):
    return sweep_table(config["monet_hardware"]["edge_tpu"], step)


def _fusemax(step):
    return sweep_table(config["monet_hardware"]["fusemax"], step)


def fusion(key, default=None):
    return config["monet_fusion"].get(key, default)


def fusion_workload_tables(wildcards):
    return monet_tables(fusion("workload"), wildcards)


def fusion_groups(step, root="results/monet"):
    """Strategy name -> fused groups file of every solve of one step (the study's, or under an ablation's root)."""
    return {
        f"limit{limit}{'' if types == 'typed' else '_free'}": f"{root}/fusion/{step}/limit{limit}_{types}.json"
        for limit in fusion("limits")
        for types in FUSION_TYPES
    }


def fusion_strategies(wildcards):
    return fusion_groups(wildcards.step, monet_root(wildcards))


def checkpoint_inputs(wildcards):
    study = config["monet_checkpoint"]
    return {**monet_tables(study["workload"], wildcards), "hardware": study["hardware"]}


def figure11_workload():
    """The training step of MONET Figure 11 (``monet_checkpoint.figure11_workload``, default the study's workload)."""
    study = config["monet_checkpoint"]
    return study.get("figure11_workload", study["workload"])


def figure11_inputs(wildcards):
    return {**monet_tables(figure11_workload(), wildcards), "hardware": config["monet_checkpoint"]["hardware"]}


def _section5_inputs(wildcards):
    """Section V's tables, where the config runs those studies: Figure 10's fusion comparisons, Figures 11 and 12
    (the study's, or one ablation run's)."""
    # the repository's copy, so that a run in another --directory needs none of its own
    files = {"paper": str(Path(workflow.main_snakefile).parent / "data/paper/monet.csv")}
    root = monet_root(wildcards)
    if config["monet_fusion"] is not None:
        files["fusion"] = expand("{root}/fusion/{step}/compare.parquet", root=root, step=STEPS)
    if config["monet_checkpoint"] is not None:
        files["additivity"] = f"{root}/checkpoint/additivity.parquet"
        files["nsga_summary"] = f"{root}/checkpoint/nsga_summary.parquet"
    return files


def _section5_flags(wildcards, input):
    flags = [f"--paper {input.paper}"]
    if "fusion" in input.keys():
        flags.append("--fusion-compare " + " ".join(input.fusion))
    if "additivity" in input.keys():
        flags += [f"--additivity {input.additivity}", f"--nsga-summary {input.nsga_summary}"]
    return " ".join(flags)


# ---------------------------------------------------------------- MTrain (mtrain.smk)
MTRAIN = config.get("mtrain") or {}
MTRAIN_MODELS = sorted(MTRAIN.get("workloads", {}))
MTRAIN_CLUSTERS = sorted(MTRAIN.get("clusters", []))
MTRAIN_SCALING_PAIRS = MTRAIN.get("scaling", {}).get("pairs", [])  # Figure 12: one job per cluster size
MTRAIN_TABLE3 = [(c, m) for c, models in sorted(MTRAIN.get("table3", {}).get("cells", {}).items()) for m in models]


def mtrain_tables(model):
    """The Workload IR tables of an MTrain model (its batch-1 training step)."""
    name = MTRAIN["workloads"][model]
    return {"ops": f"results/workloads/{name}/ops.parquet", "tensors": f"results/workloads/{name}/tensors.parquet"}


def mtrain_workload(wildcards):
    return mtrain_tables(wildcards.mmodel)


def table3_workers(wildcards):
    """A Table III job's threads: the worker processes of its cluster's DFS (mtrain.table3.workers, default 1)."""
    return MTRAIN["table3"].get("workers", {}).get(wildcards.cluster, 1)


def scaling_workers(wildcards):
    """A Figure 12 job's threads: 2 worker processes from mtrain.scaling.workers_from_pairs pairs up, else 1."""
    start = MTRAIN["scaling"].get("workers_from_pairs")
    return 2 if start is not None and int(wildcards.pairs) >= start else 1


def mtrain_outputs():
    outputs = expand("results/mtrain/figure8.{ext}", ext=["png", "pdf"])
    outputs += expand("results/mtrain/figure9_11_{cluster}.{ext}", cluster=MTRAIN_CLUSTERS, ext=["png", "pdf"])
    outputs += expand("results/mtrain/figure12.{ext}", ext=["png", "pdf"])
    outputs += ["results/mtrain/compare.csv", "results/mtrain/table3.csv", "results/mtrain/table3.md"]
    return outputs


# ---------------------------------------------------------------- TM-Training (tiered.smk)
TIERED = config.get("tiered") or {}
TIERED_VARIANTS = {"base": TIERED.get("ratios", []), **TIERED.get("variant_ratios", {})}
TIERED_BATCH = {"base": 1, "double_batch": 2, "half_tier2_bandwidth": 1}
TIERED_FIGURES = ["fig2", "fig3", "fig4", "fig8", "fig9", "fig10", "fig11", "fig12", "fig14"] if TIERED else []


def tiered_outputs():
    outputs = expand("results/tiered/{figure}.{ext}", figure=TIERED_FIGURES, ext=["png", "pdf"])
    outputs += ["results/tiered/compare.csv", "results/tiered/table3.csv", "results/tiered/ordering.csv", "results/tiered/placement.csv"]
    outputs.append("results/tiered/calibration.parquet")
    return outputs


def tiered_figure_settings(figure):
    """The plot-tiered flags of one figure: the workload of Figures 2-4, 10, 11; the ratio of Figures 8, 9, 13-15."""
    if figure in ("fig2", "fig3", "fig4"):
        return f"--workload {TIERED['motivation_workload']}"
    if figure in ("fig10", "fig11"):
        return f"--workload {TIERED['ratio_workload']}"
    if figure == "fig12":
        return ""
    return f"--ratio {TIERED['figure_ratio']}"


def tiered_tier1_sizing(wildcards):
    """The tiered-study flag that sizes Tier 1 as a share of the memory (none: by model bytes)."""
    share = TIERED.get("tier1_share_per_ratio")
    return f"--tier1-share-per-ratio {share}" if share is not None else ""


def tiered_workload(wildcards):
    factor = TIERED_BATCH[wildcards.variant]
    return {
        "ops": f"results/tiered/workloads/{wildcards.tworkload}/batch{factor}/ops.parquet",
        "tensors": f"results/tiered/workloads/{wildcards.tworkload}/batch{factor}/tensors.parquet",
    }


# ---------------------------------------------------------------- the report (report.smk)
def comparison_csvs():
    """Study -> its paper-vs-ours CSV, for the studies the config runs."""
    csvs = {}
    if config["monet_hardware"]["edge_tpu"] and config["monet_hardware"]["fusemax"]:
        csvs["monet"] = rules.monet_claims.output.csv
    if config.get("mtrain") is not None:
        csvs["mtrain"] = rules.mtrain_report.output.compare
    if config.get("tiered") is not None:
        csvs["tiered"] = rules.tiered_report.output.compare
    return csvs


def agreement_outputs():
    return expand("results/{study}/agreement.html", study=sorted(comparison_csvs()))


def tiered_calibration():
    """calibrate: true/false and the accelerator energy target (the paper's off-chip share of HBM-only energy)."""
    section = TIERED.get("calibration") or {}
    target = section.get("accelerator_energy_scale") or {
        "target": "sec2_offchip_energy_share_hbm_only",
        "also_pins": ["sec2_accelerator_vs_offchip_energy_hbm_only"],
    }
    return section.get("calibrate", True), target


# ---------------------------------------------------------------- ablations (ablations.smk)
ABLATIONS = config.get("ablations") or {}


def _ablation_value(value):
    """A config value as the --assume text: booleans lower-case, numbers as written."""
    return str(value).lower() if isinstance(value, bool) else f"{value:g}" if isinstance(value, float) else str(value)


def ablation_runs(study):
    """(assumption, value) per ablation run of ``study`` the config asks for and the config runs the study of."""
    if study not in comparison_csvs():
        return []
    return [(name, _ablation_value(v)) for name, values in ABLATIONS.get(study, {}).items() for v in values]


def ablation_outputs():
    """The `ablations` target: per study with runs, its ablation table, its comparison with `why`, its heat map."""
    outputs = []
    for study in sorted(comparison_csvs()):
        if ablation_runs(study):
            outputs += [f"results/{study}/ablations.parquet", f"results/{study}/compare_why.csv"]
            outputs += expand("results/{study}/ablations.{ext}", study=study, ext=["png", "pdf"])
    if comparison_csvs():
        outputs += ["results/agreement_counts.csv", "results/fidelity.md"]
    return outputs


def ablation_table_inputs(wildcards):
    runs = ablation_runs(wildcards.study)
    return {
        "baseline": comparison_csvs()[wildcards.study],
        "runs": [f"results/ablations/{wildcards.study}/{a}/{v}/compare.csv" for a, v in runs],
    }


def ablation_run_flags(wildcards, input):
    runs = ablation_runs(wildcards.study)
    return " ".join(f"--run {a} {v} {path}" for (a, v), path in zip(runs, input.runs, strict=True))


def mtrain_calibration():
    """mtrain.calibration with its defaults: fit (calibrate), on which workload (the IP's published network), to which targets."""
    section = MTRAIN.get("calibration") or {}
    return {
        "calibrate": section.get("calibrate", True),
        "workload": section.get("workload", "vgg16"),
        "targets": section.get("targets", "data/paper/mtrain_ips.csv"),
    }


# MTrain assumptions that change the study's tables (the others only change how mtrain-report judges them)
MTRAIN_RERUN_ASSUMPTIONS = ("calibrated", "fp32_mac_dsp", "darkfpga_batch_lanes", "ip_dram_efficiency")


def mtrain_ablation_tables(wildcards):
    """The study, Table III and scaling tables an MTrain ablation judges: re-run under the assumption if it changes
    them, else the study's own. A re-run scaling study runs only the fewest and the most FPGAs: the comparison reads
    no other cluster size (mtrain_compare._scaling_rows; the intermediate sizes only draw Figure 12)."""
    rerun = wildcards.assumption in MTRAIN_RERUN_ASSUMPTIONS
    root = f"results/ablations/mtrain/{wildcards.assumption}/{wildcards.value}" if rerun else "results/mtrain"
    pairs = sorted({min(MTRAIN_SCALING_PAIRS), max(MTRAIN_SCALING_PAIRS)}) if rerun and MTRAIN_SCALING_PAIRS else MTRAIN_SCALING_PAIRS
    return {
        "study": [f"{root}/study/{m}/{c}.parquet" for m in MTRAIN_MODELS for c in MTRAIN_CLUSTERS],
        "table3": [f"{root}/table3/{m}/{c}.parquet" for c, m in MTRAIN_TABLE3],
        "scaling": [f"{root}/scaling/pairs{p}.parquet" for p in pairs],
    }
