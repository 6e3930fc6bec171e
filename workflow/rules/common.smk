# What the .smk files share: the config checked before any job runs, and the run's Plan
# (src/traincost/workflow/plan.py: workload lists, flags, resources, paths, targets) bound to wildcards.
# The logic lives in the package, tested there; the functions below only pick the wildcard values a Plan
# method takes.
import json
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
FUSION_TYPES = PLAN.fusion_types
# the report's category of each study's figures and tables
STUDY_CATEGORIES = {"monet": "MONET", "mtrain": "MTrain", "tiered": "TM-Training"}


wildcard_constraints:
    workload="|".join(WORKLOADS),
    sweep="|".join(SWEEPS) or "NONE",
    step="|".join(STEPS),


# ---------------------------------------------------------------- the front end (frontend.smk)
def workload(wildcards):
    return PLAN.workload(wildcards.workload)


def model_flags(wildcards):
    return PLAN.model_flags(wildcards.workload)


def model_files(wildcards):
    return PLAN.model_files(wildcards.workload)


exported_by = PLAN.exported_by


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


def sweep(wildcards):
    return PLAN.sweep(wildcards.sweep)


def sweep_shards(wildcards):
    return PLAN.sweep_shards(wildcards.sweep, wildcards.step)


def sweep_inputs(wildcards):
    return PLAN.sweep_inputs(wildcards.sweep, wildcards.get("step"), _ablation(wildcards))


def monet_tables(name, wildcards):
    return PLAN.monet_tables(name, wildcards.get("step"), _ablation(wildcards))


def monet_schedule_flags(wildcards):
    return PLAN.schedule_flags(_ablation(wildcards))


def monet_allocation_flag(wildcards, configured):
    return PLAN.allocation_flag(_ablation(wildcards), configured)


def assume_flag(wildcards):
    return PLAN.assume_flag(_ablation(wildcards))


fusion = PLAN.fusion


def fusion_workload_tables(wildcards):
    return monet_tables(fusion("workload"), wildcards)


def fusion_strategies(wildcards):
    return PLAN.fusion_groups(wildcards.step, PLAN.monet_root(_ablation(wildcards)))


def checkpoint_inputs(wildcards):
    return PLAN.checkpoint_inputs(_ablation(wildcards))


def figure11_inputs(wildcards):
    return PLAN.figure11_inputs(_ablation(wildcards))


def section5_inputs(wildcards):
    return PLAN.section5_inputs(_ablation(wildcards))


def section5_flags(wildcards, input):
    return PLAN.section5_flags(dict(input.items()))


# ---------------------------------------------------------------- MTrain (mtrain.smk)
MTRAIN = PLAN.mtrain
MTRAIN_MODELS = PLAN.mtrain_models


def mtrain_workload(wildcards):
    return PLAN.mtrain_tables(wildcards.mmodel, _ablation(wildcards))


def table3_workers(wildcards):
    return PLAN.table3_workers(wildcards.cluster)


def scaling_workers(wildcards):
    return PLAN.scaling_workers(int(wildcards.pairs))


def scaling_inputs(wildcards):
    """A Figure 12 job's workload tables and the table of the next smaller size it builds on (study or ablation)."""
    fewer = PLAN.mtrain_fewer_fpgas(int(wildcards.pairs), _ablation(wildcards))
    return PLAN.mtrain_tables(MTRAIN["scaling"]["model"]) | fewer


def fewer_fpgas_flag(wildcards, input):
    """` --fewer-fpgas TABLE` where a Figure 12 job builds on a smaller size, else nothing."""
    return f" --fewer-fpgas {input.fewer}" if "fewer" in input.keys() else ""


def mtrain_ablation_tables(wildcards):
    return PLAN.mtrain_ablation_tables(wildcards.assumption, wildcards.value)


# ---------------------------------------------------------------- TM-Training (tiered.smk)
TIERED = PLAN.tiered
TIERED_VARIANTS = PLAN.tiered_variants
TIERED_FIGURES = PLAN.tiered_figures


def tiered_workload(wildcards):
    return PLAN.tiered_workload(wildcards.tworkload, wildcards.variant)


def tiered_tier1_sizing(wildcards):
    return PLAN.tiered_tier1_sizing()


# ---------------------------------------------------------------- the report and the ablations
def ablation_table_inputs(wildcards):
    return PLAN.ablation_table_inputs(wildcards.study)


def ablation_run_flags(wildcards, input):
    return PLAN.ablation_run_flags(wildcards.study, input.runs)
