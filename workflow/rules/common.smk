# What the .smk files share: the config checked before any job runs, and the run's Plan
# (src/traincost/workflow/plan.py: workload lists, flags, resources, paths, targets) bound to wildcards.
# The logic lives in the package, tested there; the functions below only pick the wildcard values a Plan
# method takes. The rules read the config only through the Plan (tests/unit/test_workflow_plan.py holds them to it),
# and a default is written once, in the schema, which `validate` below fills in before the Plan is built.
from pathlib import Path

from snakemake.utils import validate

from traincost.workflow import (
    COMPARISON_CSVS,
    FIRST,
    STEPS,
    Plan,
    check_config,
    config_problems,
    missing_requirements,
    ort_training_installed,
)

check_config(config, workflow.configfiles, Path(workflow.current_basedir) / "../schemas/config.schema.yaml")
validate(config, schema="../schemas/config.schema.yaml")  # fills in the schema's defaults
_problems = config_problems(config, repo=Path(workflow.basedir))
if _problems:
    raise ValueError("invalid config: " + "; ".join(_problems))
# what the config needs installed (the onnx front end: ONNX Runtime Training), so that `snakemake -n` says it too
_missing = missing_requirements(config, ort_installed=ort_training_installed())
if _missing:
    raise ValueError("not installed: " + "; ".join(_missing))

PLAN = Plan(config=config, repo=Path(workflow.basedir))

# Every rule's conda environment (relative to workflow/rules/; see workflow/envs/traincost.yaml).
TRAINCOST_ENV = "../envs/traincost.yaml"
WORKLOADS = PLAN.workloads
# the workloads each front end builds (the workload key `frontend`), as wildcard patterns of the rules' outputs
BUILT_BY_ONNX = PLAN.built_by("onnx")
BUILT_BY_TORCH = PLAN.built_by("torch")
SWEEPS = PLAN.sweeps
# the report's category of each study's figures and tables
STUDY_CATEGORIES = {"monet": "MONET", "mtrain": "MTrain", "tiered": "TM-Training"}


def study_category(wildcards):
    return STUDY_CATEGORIES[wildcards.study]


wildcard_constraints:
    workload="|".join(WORKLOADS),
    sweep="|".join(SWEEPS) or "NONE",
    step="|".join(STEPS),


# ---------------------------------------------------------------- the front end (frontend.smk)
def model_flags(wildcards):
    return PLAN.model_flags(wildcards.workload)


def model_files(wildcards):
    return PLAN.model_files(wildcards.workload)


def exported_model(wildcards):
    return PLAN.exported_model(wildcards.workload)


def zoo_model(wildcards):
    return PLAN.zoo_model(wildcards.workload)


def model_options(wildcards):
    return PLAN.model_options(wildcards.workload)


def batch(wildcards):
    return PLAN.batch(wildcards.workload)


def verify_flag(wildcards):
    return PLAN.verify_flag(wildcards.workload)


def attention(wildcards):
    return PLAN.attention(wildcards.workload)


def optimizer_flags(wildcards):
    return PLAN.optimizer_flags(wildcards.workload)


def checkpoint_first(wildcards):
    return PLAN.checkpoint_priority(wildcards.workload)


def export_first(wildcards):
    return PLAN.export_priority(wildcards.workload)


# A rule's mem_mb is its tool's; a job of a cluster executor asks for Snakemake's own processes too. Whether the
# executor is one is known only when jobs run, so these return functions Snakemake calls then.
def job_mem_mb(tool_mb):
    return lambda wildcards: PLAN.job_mem_mb(tool_mb, cluster=workflow.non_local_exec)


def frontend_mem_mb(stage, quick_mb):
    return lambda wildcards: PLAN.frontend_mem_mb(wildcards.workload, stage, quick_mb, cluster=workflow.non_local_exec)


# ---------------------------------------------------------------- MONET (monet.smk)
def _ablation(wildcards):
    """(assumption, value) of a MONET ablation run, None for the study's own rules (no such wildcards)."""
    return (wildcards.assumption, wildcards.value) if "assumption" in wildcards.keys() else None


def sweep_shards(wildcards):
    return PLAN.sweep_shards(wildcards.sweep, wildcards.step)


def sweep_inputs(wildcards):
    return PLAN.sweep_inputs(wildcards.sweep, wildcards.get("step"), _ablation(wildcards))


# a hardware sweep's settings (hardware_sweeps.<sweep>), the study's or an ablation run's
def sweep_grid(wildcards):
    return PLAN.sweep_grid(wildcards.sweep)


def sweep_mode(wildcards):
    return PLAN.sweep(wildcards.sweep)["mode"]


def sweep_objective(wildcards):
    return PLAN.sweep(wildcards.sweep)["mapping_objective"]


def sweep_max_configs_flag(wildcards):
    return PLAN.sweep_max_configs_flag(wildcards.sweep)


def sweep_resident_fraction(wildcards):
    return PLAN.sweep_resident_fraction(wildcards.sweep, _ablation(wildcards))


def sweep_allocation(wildcards):
    return PLAN.sweep_allocation(wildcards.sweep, _ablation(wildcards))


def tiling_flag(wildcards):
    return PLAN.tiling_flag(_ablation(wildcards))


def shard_flag(wildcards):
    """` --shard INDEX/COUNT` of a job of one shard (hardware_sweep_shard), nothing for a whole sweep (its ablation)."""
    return PLAN.shard_flag(wildcards.get("index"), wildcards.get("shards"))


def fusion_flag(wildcards, input):
    return f"--fusion {input.fusion}" if "fusion" in input.keys() else ""


def edge_tables(wildcards):
    return {step: PLAN.edge_table(step) for step in STEPS}


def fusemax_tables(wildcards):
    return {step: PLAN.fusemax_table(step) for step in STEPS}


def monet_claims_sweeps(wildcards):
    return PLAN.monet_claims_sweeps(_ablation(wildcards))


def monet_tables(name, wildcards):
    return PLAN.monet_tables(name, wildcards.get("step"), _ablation(wildcards))


def monet_schedule_flags(wildcards):
    return PLAN.schedule_flags(_ablation(wildcards))


def assume_flag(wildcards):
    return PLAN.assume_flag(_ablation(wildcards))


def fusion_workload_tables(wildcards):
    return monet_tables(PLAN.fusion("workload"), wildcards)


def fusion_inputs(wildcards):
    """The workload tables and hardware of a fusion solve or comparison."""
    return fusion_workload_tables(wildcards) | {"hardware": PLAN.fusion("hardware")}


def fusion_strategies(wildcards):
    return PLAN.fusion_groups(wildcards.step, _ablation(wildcards))


def compare_fusion_inputs(wildcards):
    """What a fusion comparison reads: the workload, the hardware, the manual fusion and every solve's groups."""
    return fusion_inputs(wildcards) | {"manual": PLAN.fusion("manual"), "groups": list(fusion_strategies(wildcards).values())}


def strategy_flags(wildcards):
    return " ".join(f"--strategy {name}={path}" for name, path in fusion_strategies(wildcards).items())


def type_limits_flag(wildcards):
    return "" if wildcards.types == "typed" else "--no-type-limits"


def compare_fusion_flags(wildcards):
    return PLAN.compare_fusion_flags(_ablation(wildcards))


def fusion_solver_reports(wildcards):
    return PLAN.fusion_solver_reports(_ablation(wildcards))


def checkpoint_inputs(wildcards):
    return PLAN.checkpoint_inputs(_ablation(wildcards))


def figure11_inputs(wildcards):
    return PLAN.figure11_inputs(_ablation(wildcards))


# the decomposed training step the recompute rewrites are checked on (an ONNX-built workload's; none for torch's)
def checkpoint_graph(wildcards):
    return PLAN.recompute_graph(PLAN.checkpoint.workload)


def figure11_graph(wildcards):
    return PLAN.recompute_graph(PLAN.checkpoint.figure11_workload)


def graph_flag(wildcards, input):
    return f"--graph {input.graph}" if input.graph else ""


def section5_inputs(wildcards):
    return PLAN.section5_inputs(_ablation(wildcards))


def section5_flags(wildcards, input):
    return PLAN.section5_flags(dict(input.items()))


# ---------------------------------------------------------------- MTrain (mtrain.smk)
MTRAIN_MODELS = PLAN.mtrain_models


def mtrain_workload(wildcards):
    return PLAN.mtrain_tables(wildcards.mmodel, _ablation(wildcards))


def mtrain_calibration_inputs(wildcards):
    return PLAN.mtrain_calibration_inputs()


def mtrain_ratio_step(wildcards):
    return PLAN.mtrain_ratio_step(wildcards.cluster)


def table3_workers(wildcards):
    return PLAN.table3_workers(wildcards.cluster)


def scaling_workers(wildcards):
    return PLAN.scaling_workers(int(wildcards.pairs))


def scaling_inputs(wildcards):
    """A Figure 12 job's workload tables and the table of the next smaller size it builds on (study or ablation)."""
    fewer = PLAN.mtrain_fewer_fpgas(int(wildcards.pairs), _ablation(wildcards))
    return PLAN.mtrain_tables(PLAN.mtrain_scaling_params()["model"]) | fewer


def fewer_fpgas_flag(wildcards, input):
    """` --fewer-fpgas TABLE` where a Figure 12 job builds on a smaller size, else nothing."""
    return f" --fewer-fpgas {input.fewer}" if "fewer" in input.keys() else ""


def mtrain_report_tables(wildcards):
    """The study, Table III and scaling tables mtrain-report judges: the study's, or an ablation run's (re-run where
    its assumption changes them)."""
    ablation = _ablation(wildcards)
    return PLAN.mtrain_judged_tables() if ablation is None else PLAN.mtrain_ablation_tables(*ablation)


def constants_flag(wildcards, input):
    return f" --constants {input.constants}" if input.constants else ""


# ---------------------------------------------------------------- TM-Training (tiered.smk)
TIERED_VARIANTS = PLAN.tiered_variants
TIERED_FIGURES = PLAN.tiered_figures


def tiered_workload(wildcards):
    return PLAN.tiered_workload(wildcards.tworkload, wildcards.variant)


def tiered_ratios(wildcards):
    return PLAN.tiered_ratios(wildcards.variant)


def tiered_study_tables(wildcards):
    """Every study table tiered-report judges: the study's, or an ablation run's."""
    ablation = _ablation(wildcards)
    return PLAN.tiered_study_tables() if ablation is None else PLAN.tiered_study_tables("results/ablations/tiered/{}/{}".format(*ablation))


def record_flag(wildcards, input, output):
    """The study writes every simulation's tally (--record-out); an ablation reads it (--record) and re-runs only what
    its assumption changes."""
    return f"--record {input.record}" if "record" in input.keys() else f"--record-out {output.record}"


# ---------------------------------------------------------------- the report and the ablations
def comparison_csv(wildcards):
    return PLAN.comparison_csvs()[wildcards.study]


def ablation_table_inputs(wildcards):
    return PLAN.ablation_table_inputs(wildcards.study)


def ablation_run_flags(wildcards, input):
    return PLAN.ablation_run_flags(wildcards.study, input.runs)
