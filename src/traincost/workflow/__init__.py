"""The workflow's logic, importable and tested: what the Snakemake files only bind to rules.

``workflow/rules/*.smk`` keep the rules (inputs, outputs, shell commands, resources); what they compute
from the config lives here: the config checked strictly and cross-checked, and what it needs installed
(:mod:`.config_check`), and the :class:`~traincost.workflow.plan.Plan` of a run (workload lists, the flags and
resources of each job, the paths each study reads and writes, the targets of ``all`` and ``ablations``).
"""

from traincost.workflow.config_check import check_config, config_problems, missing_requirements, ort_training_installed
from traincost.workflow.plan import COMPARISON_CSVS, FIRST, STEPS, Plan

__all__ = [
    "COMPARISON_CSVS",
    "FIRST",
    "STEPS",
    "Plan",
    "check_config",
    "config_problems",
    "missing_requirements",
    "ort_training_installed",
]
