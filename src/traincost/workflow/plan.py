"""The plan of one workflow run: what the config asks for, as the names, flags, resources and paths of its jobs.

A :class:`Plan` is built once per run from the checked config (``workflow/rules/common.smk``); the rules call its
methods with wildcard values. Every path here is the one a rule writes: ``tests/unit/test_workflow_plan.py`` checks
them against a Snakemake dry run.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import product
from pathlib import Path
from typing import Any

__all__ = [
    "COMPARISON_CSVS",
    "FIRST",
    "FRONTEND_PEAK_MB",
    "SNAKEMAKE_IN_JOB_MB",
    "STEPS",
    "CheckpointStudy",
    "Plan",
    "frontend_of",
]

STEPS = ("inference", "training")
# Each study's paper-vs-ours table (the outputs of monet_claims, mtrain_report and tiered_report).
COMPARISON_CSVS = {
    "monet": "results/monet/claims.csv",
    "mtrain": "results/mtrain/compare.csv",
    "tiered": "results/tiered/compare.csv",
}
# Peak resident memory (MB) of the front-end stages on the full config's largest workloads (model, batch), where
# 1.5 x it is more than the rule's default, rounded up to 100 MB; other workloads use the rule's default. Measured
# on 25 November 2026 with the split of decompose and verify_decomposition, each rule's command in a process of its
# own with one thread (bench/frontend.py --rules WORKLOAD: the process's maximum RSS; ResNet-50 at batch 8 with Adam,
# the larger of its SGD and Adam steps; AlexNet as the workload alexnet, which mtrain_alexnet shares), at load 9 to 11
# from other work; measure_memory: the full run of the same day (its benchmark's max_rss). verify_decomposition: again
# on 26 November 2026, once its node-by-node check and end-to-end comparison shared one execution (the maximum RSS of
# the check on one thread, on the graphs of the full run). VGG-16-BN (MTrain's VGG-16 at 224 x 224): the larger of two
# full runs of 7 December 2026 (their benchmarks' max_rss, rounded up to 100 MB), where its jobs passed the defaults.
FRONTEND_PEAK_MB = {
    ("gpt2_124m", 1): {"export": 4100, "train_graph": 3600, "decompose": 2700, "verify_decomposition": 8300, "lower": 1200},
    ("vgg16", 1): {"export": 3600, "train_graph": 4900, "decompose": 3500, "verify_decomposition": 7900, "lower": 1200},
    ("resnet50", 8): {"verify_decomposition": 3500, "measure_memory": 1500},
    ("alexnet", 1): {"decompose": 1300, "verify_decomposition": 3500, "lower": 700},
    ("vgg16_bn", 1): {"export": 3000, "train_graph": 4000, "decompose": 3400, "verify_decomposition": 5500, "lower": 900},
}
# A cluster job runs two Snakemake processes beside the tool its rule measures (the batch script's and its srun
# step's): about 350 MB RSS together, measured on bench/slurm_local.sh's cluster (profiles/README.md), rounded up
# to 100 MB. A rule's own mem_mb is its tool's (what its benchmark measures, and all a local run needs: there the
# jobs share one Snakemake); a cluster executor (SLURM, cluster-generic) asks this much more for every job, so that
# a site which enforces the request (cgroups) does not kill the job. A dry run (-n) shows the tool's mem_mb alone.
SNAKEMAKE_IN_JOB_MB = 400
# The priority of the jobs Snakemake should start first among those ready (others have 0).
FIRST = 10
# The TM-Training figures and the batch factor of each variant of its study.
TIERED_FIGURE_NAMES = ("fig2", "fig3", "fig4", "fig8", "fig9", "fig10", "fig11", "fig12", "fig14")
TIERED_BATCH = {"base": 1, "double_batch": 2, "half_tier2_bandwidth": 1}
# MTrain assumptions that change the study's tables (the others only change how mtrain-report judges them)
MTRAIN_RERUN_ASSUMPTIONS = (
    "calibrated",
    "fp32_mac_dsp",
    "fabric_clock_mhz",
    "vgg16_input",
    "darkfpga_sized_for",
    "darkfpga_batch_lanes",
    "ip_dram_efficiency",
)
_MTRAIN_VGG16_ONLY = ("vgg16_input",)
"""MTrain assumptions that change VGG-16's Table III cells only: an ablation of one re-runs those, every other table is
the study's own (the sweep of Figures 8-11 keeps its VGG-16: at 224 x 224 and 0.125 GB/s, MTrain-Mapping's first
mapping of the initial ratio does not fit cluster 1's DRAM)."""
MTRAIN_UNSTATED = ("fp32_mac_dsp", "fabric_clock_mhz", "vgg16_input")
"""MTrain assumptions that are constants the paper does not state: Table III under each (mtrain_constants)."""

Config = Mapping[str, Any]


def frontend_of(workload: Config, default: str) -> str:
    """Who builds a workload's steps: its key ``frontend``, else onnx for an ONNX file, else ``default``."""
    return workload.get("frontend") or ("onnx" if "onnx" in workload else default)


def _expand(pattern: str, **values: Sequence[object]) -> list[str]:
    """``pattern`` filled with every combination of ``values`` (the last key varying fastest), as Snakemake's expand."""
    return [pattern.format(**dict(zip(values, combination, strict=True))) for combination in product(*values.values())]


@dataclass(frozen=True)
class CheckpointStudy:
    """MONET's checkpointing study (config ``monet_checkpoint``, with the schema's defaults), as its rules pass it.

    Attributes:
        workload: the training step of Figure 12's NSGA-II and the MILP of equation 6.
        figure11_workload: the training step of Figure 11 (``figure11_workload``, else ``workload``).
        hardware: the hardware YAML, at its default configuration.
        mode: the scheduling of every evaluation.
        fusion_length: the fusion solver's limit, re-applied after every rewrite.
        fusion_scope: where fusion is re-solved after a rewrite (local or full).
        milp_budgets: the MILP's memory budgets, fractions of the recomputable activations' bytes.
        nsga: NSGA-II's population, generations and tolerance; None if the config runs no NSGA-II.
    """

    workload: str
    figure11_workload: str
    hardware: str
    mode: str
    fusion_length: int
    fusion_scope: str
    milp_budgets: tuple[float, ...]
    nsga: Config | None


@dataclass(frozen=True)
class Plan:
    """The jobs a checked config asks for.

    Every value of the config is read as the schema's defaults left it (``snakemake.utils.validate`` fills them in
    before the Plan is built), so that a default is written once, in ``workflow/schemas/config.schema.yaml``. Only
    what the config may leave out with no default (a study's section, ``mtrain`` or ``tiered``; an optional key such
    as ``monet_checkpoint.nsga``) or a key whose default depends on another (a sweep's ``resident_fraction``, on its
    ``mode``) is looked up with a fallback. The rules read the config through the Plan alone.

    Args:
        config: the workflow config, checked (``check_config``, ``config_problems``) and with the schema's defaults.
        repo: the repository (``data/paper`` is read from it, so that a run in another directory needs no copy).
    """

    config: Config
    repo: Path

    @property
    def seed(self) -> int:
        """The seed of every random choice (initial weights, batches, solvers): config ``seed``."""
        return self.config["seed"]

    # --- workloads and the front end ------------------------------------------------------------------------

    @property
    def workloads(self) -> list[str]:
        return sorted(self.config["workloads"])

    def workload(self, name: str) -> Config:
        return self.config["workloads"][name]

    def model_flags(self, name: str) -> str:
        """The model of workload ``name`` as `traincost export` takes it: a zoo name with its options, or a user's
        module or ONNX file under the workload's name with its kwargs, inputs and loss."""
        spec = self.workload(name)
        if "onnx" in spec:
            flags = ["--onnx", spec["onnx"]] + (["--output", spec["output"]] if "output" in spec else [])
        elif "module" in spec:
            flags = ["--module", spec["module"], "--kwargs", json.dumps(spec["kwargs"], sort_keys=True)]
        elif ":" in spec["model"]:
            shape = ",".join(map(str, spec["input_shape"]))
            return shlex.join(["--model", spec["model"], "--name", name, "--input-shape", shape])
        else:
            return shlex.join(["--model", spec["model"], "--options", self.model_options(name)])
        if "output" in spec and "module" in spec:
            flags += ["--output", spec["output"]]
        if "inputs" in spec:
            flags += ["--inputs", json.dumps(spec["inputs"])]
        if "labels" in spec:
            flags += ["--labels", json.dumps(spec["labels"])]
        return shlex.join([*flags, "--loss", spec["loss"], "--name", name])

    def zoo_model(self, name: str) -> str:
        """The zoo model of workload ``name`` (its key ``model``), as torch's own measurement builds it."""
        return self.workload(name)["model"]

    def batch(self, name: str) -> int:
        """The batch (samples) of workload ``name``."""
        return self.workload(name)["batch"]

    def model_options(self, name: str) -> str:
        """The zoo builder's options of workload ``name``, as JSON (`--options`)."""
        return json.dumps(self.workload(name)["options"], sort_keys=True)

    def verify_flag(self, name: str) -> str:
        """``--no-verify`` where workload ``name`` skips the check of its step by execution, else nothing."""
        return "" if self.workload(name)["verify"] else "--no-verify"

    def attention(self, name: str) -> str:
        """How the attentions of workload ``name`` are costed by `traincost lower` (materialised, fused, torch)."""
        return self.workload(name)["attention"]

    def frontend(self, name: str) -> str:
        """Who builds workload ``name``'s steps: its key ``frontend``, else onnx for an ONNX file, else the config's
        ``frontend``."""
        return frontend_of(self.workload(name), self.config["frontend"])

    def recompute_graph(self, name: str) -> list[str]:
        """The decomposed training step the recompute rewrites of workload ``name`` are checked on: an ONNX-built
        workload's; none for the torch front end's (its step is no ONNX graph)."""
        return [f"results/graphs/{name}/train_step.decomposed.onnx"] if self.frontend(name) == "onnx" else []

    def workloads_built_by(self, frontend: str) -> list[str]:
        """The workloads whose steps ``frontend`` (onnx or torch) builds."""
        return [name for name in self.workloads if self.frontend(name) == frontend]

    def built_by(self, frontend: str) -> str:
        """A wildcard constraint matching exactly the workloads ``frontend`` builds (and nothing if it builds none)."""
        return "|".join(self.workloads_built_by(frontend)) or "(?!)"

    def exported_model(self, name: str) -> str:
        """The ONNX export workload ``name``'s training step is built from (one per model and batch: ``exported_by``)."""
        return f"results/graphs/{self.exported_by(name)}/model.onnx"

    def model_files(self, name: str) -> list[str]:
        """A workload's ONNX file, so that the export re-runs when it changes."""
        return [self.workload(name)["onnx"]] if "onnx" in self.workload(name) else []

    def exported_by(self, name: str) -> str:
        """The workload whose export (results/graphs/<it>/model.onnx) workload ``name`` trains on: the first workload
        in the config with the same export command (model, options, batch) and model files. One export per distinct
        model and batch: the full config's ResNet-18 at batch 1 serves three workloads, ResNet-50 at batch 1 and 8
        two each."""

        def command(other: str) -> tuple[str, int, tuple[str, ...]]:
            return self.model_flags(other), self.workload(other)["batch"], tuple(self.model_files(other))

        wanted = command(name)
        return next(other for other in self.config["workloads"] if command(other) == wanted)

    def optimizer_flags(self, name: str) -> str:
        """The optimizer of workload ``name`` as `traincost` flags: every key of its entry in ``optimizers``, those
        the config leaves out at the schema's defaults."""
        spec = self.config["optimizers"][self.workload(name)["optimizer"]]
        flags = [f"--optimizer {spec['kind']}"]
        flags += [f"--{key.replace('_', '-')} {value}" for key, value in sorted(spec.items()) if key != "kind"]
        return " ".join(flags)

    def checkpoint_priority(self, name: str) -> int:
        """A front-end job's priority: the workload of MONET's checkpointing study (Figures 11 and 12) first, so that
        its NSGA-II (checkpoint_nsga, the longest job of one thread) starts minutes into the run and runs beside the
        others instead of holding the end of it (Snakemake would otherwise start the front-end jobs in its own order,
        and the workload's training step could come last)."""
        study = self.checkpoint
        return FIRST if study is not None and name == study.workload else 0

    def export_priority(self, name: str) -> int:
        """An export's priority: first if the checkpointing study's workload trains on it (``exported_by``)."""
        study = self.checkpoint
        return FIRST if study is not None and name == self.exported_by(study.workload) else 0

    # --- resources ------------------------------------------------------------------------------------------

    @staticmethod
    def job_mem_mb(tool_mb: int, *, cluster: bool) -> int:
        """mem_mb of a job whose tool needs ``tool_mb``: plus Snakemake's own processes where each job runs its own
        (``cluster``: a cluster executor; known only when jobs run, not when the workflow is read)."""
        return tool_mb + (SNAKEMAKE_IN_JOB_MB if cluster else 0)

    def frontend_mem_mb(self, name: str, stage: str, quick_mb: int, *, cluster: bool) -> int:
        """mem_mb of a front-end job: 1.5 x the peak measured for its model and batch, rounded up to 100 MB, else
        ``quick_mb``; on a cluster plus Snakemake's own processes."""
        spec = self.workload(name)
        peak = FRONTEND_PEAK_MB.get((spec.get("model"), spec["batch"]), {}).get(stage)
        return self.job_mem_mb(quick_mb if peak is None else max(quick_mb, -(-15 * peak // 1000) * 100), cluster=cluster)

    # --- MONET ----------------------------------------------------------------------------------------------

    @property
    def sweeps(self) -> list[str]:
        return sorted(self.config["hardware_sweeps"])

    def sweep(self, name: str) -> Config:
        return self.config["hardware_sweeps"][name]

    @property
    def fusion_types(self) -> list[str]:
        fusion = self.config["monet_fusion"]
        return ["typed" if flag else "free" for flag in fusion["type_limits"]] if fusion is not None else ["typed"]

    def fusion(self, key: str) -> Any:
        """A setting of MONET's fusion study (config ``monet_fusion``)."""
        return self.config["monet_fusion"][key]

    @property
    def figure3_workloads(self) -> list[str]:
        """The workloads of MONET Figure 3 (config ``figure3.workloads``; none skips the figure)."""
        return self.config["figure3"]["workloads"]

    def sweep_shards(self, name: str, step: str) -> list[str]:
        """The shard files of one sweep and step."""
        count = self.sweep(name)["shards"]
        return [f"results/monet/sweeps/{name}/{step}/shard{i}-of-{count}.parquet" for i in range(count)]

    @staticmethod
    def sweep_table(name: str, step: str) -> str:
        return f"results/monet/sweeps/{name}/{step}.parquet"

    def monet_sweep_parameters(self, figure: str) -> str:
        """The parameters MONET's ``figure`` sweep (``edge_tpu`` or ``fusemax``, a key of ``monet_hardware``) varies,
        as `traincost design-space --parameters` takes them; nothing where the config skips it."""
        name = self.config["monet_hardware"][figure]
        return " ".join(self.sweep(name)["grid"]) if name else ""

    def edge_table(self, step: str) -> str:
        return self.sweep_table(self.config["monet_hardware"]["edge_tpu"], step)

    def fusemax_table(self, step: str) -> str:
        return self.sweep_table(self.config["monet_hardware"]["fusemax"], step)

    def monet_root(self, ablation: tuple[str, str] | None, job: str, step: str | None = None, sweep: str | None = None) -> str:
        """Where one MONET job of an ablation run (assumption, value) writes its table: the study's folder where the
        job reads the same files with the same flags as the study's own job (it is that job, and is not run again),
        else the run's own folder. An assumption of a check's own rule (front_rule) changes no job: its run re-runs
        only the comparison.

        ``job``: ``fuse`` (one solve of ``step``), ``compare_fusion`` (``step``'s comparison), ``solver_runs`` (every
        solve's report), ``figure11`` (the additivity check), ``checkpoint`` (the MILP and NSGA-II) or ``sweep``
        (hardware sweep ``sweep`` at ``step``)."""
        if ablation is None or self._monet_job(ablation, job, step, sweep) == self._monet_job(None, job, step, sweep):
            return "results/monet"
        return "results/ablations/monet/{}/{}".format(*ablation)

    def _monet_job(self, ablation: tuple[str, str] | None, job: str, step: str | None, sweep: str | None) -> tuple:
        """What one MONET job (``monet_root``'s ``job``) reads under ``ablation``: its input files and its flags."""
        if job == "fuse":
            return (self.monet_tables(self.fusion("workload"), step, ablation), self.schedule_flags(ablation))
        if job == "compare_fusion":
            return (self._monet_job(ablation, "fuse", step, None), self.compare_fusion_flags(ablation))
        if job == "solver_runs":
            return tuple(self._monet_job(ablation, "fuse", each, None) for each in STEPS)
        if job == "figure11":
            return (self.figure11_inputs(ablation), self.schedule_flags(ablation))
        if job == "checkpoint":
            return (self.checkpoint_inputs(ablation), self.schedule_flags(ablation))
        if job == "sweep":
            settings = (self.sweep_resident_fraction(sweep, ablation), self.sweep_allocation(sweep, ablation))
            return (self.sweep_inputs(sweep, step, ablation), *map(str, settings), self.tiling_flag(ablation))
        raise ValueError(f"no MONET job {job!r}")

    @staticmethod
    def monet_tables(name: str, step: str | None, ablation: tuple[str, str] | None) -> dict[str, str]:
        """The Workload IR tables of workload ``name`` that MONET rules read for ``step`` (training without one): the
        inference step's (lower_inference: an eval-mode export, BatchNorm folded), or the training step's, the cached
        ones or, in a bn_epilogue=true ablation, those with every forward BatchNorm run as its convolution's epilogue
        (made by bn_epilogue_workload)."""
        if step == "inference":
            folder = f"results/workloads/{name}/inference"
        elif ablation == ("bn_epilogue", "true"):
            folder = f"results/ablations/monet/bn_epilogue/true/workloads/{name}"
        else:
            folder = f"results/workloads/{name}"
        return {"ops": f"{folder}/ops.parquet", "tensors": f"{folder}/tensors.parquet"}

    @staticmethod
    def resident_flag(ablation: tuple[str, str] | None) -> str:
        """--resident-fraction of a resident_fraction ablation run; empty (the commands' default) otherwise."""
        return f"--resident-fraction {ablation[1]}" if ablation and ablation[0] == "resident_fraction" else ""

    @classmethod
    def schedule_flags(cls, ablation: tuple[str, str] | None) -> str:
        """The fusion memory flags of a MONET job: --resident-fraction and --fusion-tiling of a run that ablates
        them; empty (the commands' defaults) otherwise."""
        tiling = f"--fusion-tiling {ablation[1]}" if ablation and ablation[0] == "fusion_tiling" else ""
        return " ".join(flag for flag in (cls.resident_flag(ablation), tiling) if flag)

    @staticmethod
    def sweep_resident(spec: Mapping[str, Any]) -> float:
        """The resident fraction of a hardware sweep (one of ``hardware_sweeps``): its own, else its mode's default (0.5;
        0 in stream_layer_by_layer, which keeps nothing on chip; ``traincost.schedule.plan.resident_default``, written
        out because the Snakefile's plan imports nothing of the scheduler)."""
        return spec.get("resident_fraction", 0.0 if spec.get("mode") == "stream_layer_by_layer" else 0.5)

    def sweep_grid(self, name: str) -> str:
        """The grid of a hardware sweep as JSON (`traincost sweep --grid`)."""
        return json.dumps(self.sweep(name)["grid"], sort_keys=True)

    def sweep_max_configs_flag(self, name: str) -> str:
        """``--max-configs N`` of a sweep that bounds its grid, else nothing (the command's bound)."""
        spec = self.sweep(name)
        return f"--max-configs {spec['max_configs']}" if "max_configs" in spec else ""

    def sweep_resident_fraction(self, name: str, ablation: tuple[str, str] | None) -> float | str:
        """--resident-fraction of a hardware sweep's job: a resident_fraction ablation run's value, else the sweep's."""
        return ablation[1] if ablation and ablation[0] == "resident_fraction" else self.sweep_resident(self.sweep(name))

    def sweep_allocation(self, name: str, ablation: tuple[str, str] | None) -> str:
        """--allocation of a hardware sweep's job: an allocation ablation run's value, else the sweep's."""
        return ablation[1] if ablation and ablation[0] == "allocation" else self.sweep(name)["allocation"]

    @staticmethod
    def tiling_flag(ablation: tuple[str, str] | None) -> str:
        """`` --fusion-tiling VALUE`` of a fusion_tiling ablation run, else nothing (the command's default)."""
        return f" --fusion-tiling {ablation[1]}" if ablation and ablation[0] == "fusion_tiling" else ""

    @staticmethod
    def shard_flag(index: str | None, count: str | None) -> str:
        """`` --shard INDEX/COUNT`` of one shard of a sweep's grid; nothing for the whole grid (``index`` None)."""
        return f" --shard {index}/{count}" if index is not None else ""

    @staticmethod
    def allocation_flag(ablation: tuple[str, str] | None, configured: str) -> str:
        """--allocation of a MONET job that takes one: the allocation ablation's value, else ``configured``."""
        return f"--allocation {ablation[1] if ablation and ablation[0] == 'allocation' else configured}"

    @staticmethod
    def assume_flag(ablation: tuple[str, str] | None) -> str:
        """` --assume ASSUMPTION=VALUE` of an ablation run of TM-Training or MTrain (its study's rule re-used), else
        nothing: the study's own jobs keep their command."""
        return f" --assume {ablation[0]}={ablation[1]}" if ablation else ""

    def sweep_inputs(self, name: str, step: str, ablation: tuple[str, str] | None) -> dict[str, str]:
        """The workload tables and hardware/fusion files a sweep reads (so editing them re-runs it)."""
        spec = self.sweep(name)
        files = {**self.monet_tables(spec["workload"], step, ablation), "hardware": spec["hardware"]}
        if "fusion" in spec:
            files["fusion"] = spec["fusion"]
        return files

    def fusion_params(self, *keys: str) -> dict[str, Any]:
        """Settings of MONET's fusion study as a rule's params, those named in ``keys``: ``objective`` (what CP-SAT
        minimises), ``time_limit`` (s per solve), ``mode`` (the scheduling of every strategy); none where the config
        skips the study (its rules then make no job)."""
        fusion = self.config["monet_fusion"]
        if fusion is None:
            return {}
        settings = {"objective": fusion["objective"], "time_limit": fusion["time_limit_s"], "mode": fusion["mode"]}
        return {key: settings[key] for key in keys}

    def compare_fusion_flags(self, ablation: tuple[str, str] | None) -> str:
        """The scheduler flags of a fusion comparison: the fusion memory flags of a run that ablates them, and its
        allocation (the allocation ablation's, else ``monet_fusion.allocation``)."""
        return f"{self.schedule_flags(ablation)} {self.allocation_flag(ablation, self.fusion('allocation'))}"

    def fusion_solver_reports(self, ablation: tuple[str, str] | None = None) -> list[str]:
        """The report of every fusion solve, both steps: the study's, or an ablation run's (``monet_root``)."""
        return [path.replace(".json", ".parquet") for step in STEPS for path in self.fusion_groups(step, ablation).values()]

    def fusion_groups(self, step: str, ablation: tuple[str, str] | None = None) -> dict[str, str]:
        """Strategy name -> fused groups file of every solve of one step: the study's, or an ablation run's."""
        root = self.monet_root(ablation, "fuse", step)
        return {
            f"limit{limit}{'' if types == 'typed' else '_free'}": f"{root}/fusion/{step}/limit{limit}_{types}.json"
            for limit in self.fusion("limits")
            for types in self.fusion_types
        }

    @property
    def checkpoint(self) -> CheckpointStudy | None:
        """MONET's checkpointing study (config ``monet_checkpoint``); None where the config skips it."""
        study = self.config["monet_checkpoint"]
        if study is None:
            return None
        return CheckpointStudy(
            workload=study["workload"],
            figure11_workload=study.get("figure11_workload", study["workload"]),
            hardware=study["hardware"],
            mode=study["mode"],
            fusion_length=study["fusion_length"],
            fusion_scope=study["fusion_scope"],
            milp_budgets=tuple(study["milp_budgets"]),
            nsga=study.get("nsga"),  # no default: without it the config runs no NSGA-II
        )

    def checkpoint_params(self, *own: str) -> dict[str, Any]:
        """The params of a rule of the checkpointing study: ``mode``, ``length``, ``scope`` and ``seed``, which every
        one passes alike, and those named in ``own``: ``budgets`` (the MILP's, as --budgets takes them) or NSGA-II's
        ``population``, ``generations`` and ``tolerance``. None where the config skips the study (its rules then make
        no job) or, for NSGA-II's, runs no NSGA-II."""
        study = self.checkpoint
        if study is None:
            return {}
        settings: dict[str, Any] = {"budgets": " ".join(str(budget) for budget in study.milp_budgets)}
        if study.nsga is not None:
            settings |= {key: study.nsga[key] for key in ("population", "generations", "tolerance")}
        common = {"mode": study.mode, "length": study.fusion_length, "scope": study.fusion_scope, "seed": self.seed}
        return common | {key: settings[key] for key in own if key in settings}

    def checkpoint_inputs(self, ablation: tuple[str, str] | None) -> dict[str, str]:
        study = self.checkpoint
        return {**self.monet_tables(study.workload, None, ablation), "hardware": study.hardware}

    def figure11_inputs(self, ablation: tuple[str, str] | None) -> dict[str, str]:
        study = self.checkpoint
        return {**self.monet_tables(study.figure11_workload, None, ablation), "hardware": study.hardware}

    def monet_claims_sweeps(self, ablation: tuple[str, str] | None) -> dict[str, str]:
        """The Edge TPU and FuseMax sweeps MONET's comparison reads, each step's, under ``monet_root``: the study's, or
        an ablation run's own (the study's for an assumption of a check's own rule)."""
        named = {prefix: self.config["monet_hardware"][sweep] for prefix, sweep in (("edge", "edge_tpu"), ("gpt", "fusemax"))}
        return {
            f"{prefix}_{step}": f"{self.monet_root(ablation, 'sweep', step, sweep)}/sweeps/{sweep}/{step}.parquet"
            for prefix, sweep in named.items()
            for step in STEPS
        }

    def section5_inputs(self, ablation: tuple[str, str] | None) -> dict[str, str | list[str]]:
        """Section V's tables, where the config runs those studies: Figure 10's fusion comparisons, Figures 11 and 12
        (the study's, or one ablation run's), and MONET's numbers."""
        files: dict[str, str | list[str]] = {
            "paper": str(self.repo / "data/paper/monet.csv"),
            "claims": str(self.repo / "data/paper/monet_claims.csv"),
        }
        if self.config["monet_fusion"] is not None:
            roots = {step: self.monet_root(ablation, "compare_fusion", step) for step in STEPS}
            files["fusion"] = [f"{root}/fusion/{step}/compare.parquet" for step, root in roots.items()]
            files["solver_runs"] = f"{self.monet_root(ablation, 'solver_runs')}/fusion/solver_runs.parquet"
        if self.config["monet_checkpoint"] is not None:
            files["additivity"] = f"{self.monet_root(ablation, 'figure11')}/checkpoint/additivity.parquet"
            kept = self.monet_root(ablation, "checkpoint")
            files["nsga_summary"] = f"{kept}/checkpoint/nsga_summary.parquet"
            files["nsga"] = f"{kept}/checkpoint/nsga.parquet"
            files["milp"] = f"{kept}/checkpoint/milp.parquet"
        if self.config["figure3"]["workloads"]:
            files["memory_compare"] = "results/monet/figure3_memory_compare.parquet"
        return files

    @staticmethod
    def section5_flags(inputs: Mapping[str, Any]) -> str:
        """`traincost claims` flags of the section V inputs ``section5_inputs`` gave."""
        flags = [f"--paper {inputs['paper']}", f"--claims {inputs['claims']}"]
        if "fusion" in inputs:
            flags += ["--fusion-compare " + " ".join(inputs["fusion"]), f"--solver-runs {inputs['solver_runs']}"]
        if "additivity" in inputs:
            flags += [f"--additivity {inputs['additivity']}", f"--nsga-summary {inputs['nsga_summary']}"]
            flags += [f"--nsga {inputs['nsga']}", f"--milp {inputs['milp']}"]
        if "memory_compare" in inputs:
            flags.append(f"--memory-compare {inputs['memory_compare']}")
        return " ".join(flags)

    # --- MTrain ---------------------------------------------------------------------------------------------

    @property
    def mtrain(self) -> Config:
        return self.config.get("mtrain") or {}

    @property
    def mtrain_devices(self) -> str | list[str]:
        """The FPGA devices and clusters YAML (none where the config skips MTrain)."""
        return self.mtrain.get("devices", [])

    @property
    def mtrain_ips(self) -> str | list[str]:
        """The training IPs' constants (none where the config skips MTrain)."""
        return self.mtrain.get("ips", [])

    @property
    def mtrain_bandwidths(self) -> str:
        """The P2P bandwidths of Figures 8-11 (GB/s), as `traincost mtrain-study --bandwidths` takes them."""
        return " ".join(str(b) for b in self.mtrain.get("bandwidths_gb_per_s", []))

    def mtrain_ratio_step(self, cluster: str) -> int:
        """Samples moved per re-partition move on ``cluster`` (mtrain.ratio_step)."""
        return self.mtrain["ratio_step"][cluster]

    @property
    def mtrain_table3_bandwidth(self) -> float | None:
        """The P2P bandwidth of Table III (GB/s); None where the config skips MTrain."""
        return self.mtrain["table3"]["bandwidth_gb_per_s"] if self.mtrain else None

    def mtrain_scaling_params(self) -> dict[str, Any]:
        """The params of a Figure 12 job (mtrain.scaling): the ``model``, the ``cluster`` whose devices are repeated, the
        ``bandwidths`` swept and the ``step`` (samples per re-partition move: its own ratio_step, else its cluster's);
        none where the config skips MTrain (its rules then make no job)."""
        if not self.mtrain:
            return {}
        scaling = self.mtrain["scaling"]
        return {
            "model": scaling["model"],
            "cluster": scaling["cluster"],
            "bandwidths": " ".join(str(b) for b in scaling["bandwidths_gb_per_s"]),
            "step": scaling.get("ratio_step", self.mtrain_ratio_step(scaling["cluster"])),
        }

    @property
    def mtrain_search_bandwidth(self) -> float | None:
        """The bandwidth of Figure 12 (b)'s search times (GB/s); None where the config skips MTrain."""
        return self.mtrain["scaling"]["search_bandwidth_gb_per_s"] if self.mtrain else None

    @property
    def mtrain_models(self) -> list[str]:
        return sorted(self.mtrain.get("workloads", {}))

    @property
    def mtrain_clusters(self) -> list[str]:
        return sorted(self.mtrain.get("clusters", []))

    @property
    def mtrain_scaling_pairs(self) -> list[int]:
        """Figure 12: one job per cluster size."""
        return self.mtrain.get("scaling", {}).get("pairs", [])

    @property
    def mtrain_table3(self) -> list[tuple[str, str]]:
        return [(c, m) for c, models in sorted(self.mtrain.get("table3", {}).get("cells", {}).items()) for m in models]

    def mtrain_tables(self, model: str, ablation: tuple[str, str] | None = None) -> dict[str, str]:
        """The Workload IR tables of an MTrain model (its batch-1 training step); under the ``("vgg16_input", "224")``
        ablation, VGG-16's is mtrain.vgg16_224's."""
        name = self.mtrain["workloads"][model]
        if model == "vgg16" and ablation == ("vgg16_input", "224"):
            name = self.mtrain["vgg16_224"]
        return {"ops": f"results/workloads/{name}/ops.parquet", "tensors": f"results/workloads/{name}/tensors.parquet"}

    def table3_workers(self, cluster: str) -> int:
        """A Table III job's threads: the worker processes of its cluster's DFS (mtrain.table3.workers, default 1)."""
        return self.mtrain["table3"].get("workers", {}).get(cluster, 1)

    def scaling_workers(self, pairs: int) -> int:
        """A Figure 12 job's threads: 2 worker processes from mtrain.scaling.workers_from_pairs pairs up, else 1."""
        start = self.mtrain["scaling"].get("workers_from_pairs")
        return 2 if start is not None and pairs >= start else 1

    def mtrain_calibration_inputs(self) -> dict[str, str | list[str]]:
        """What `traincost mtrain-calibrate` reads: the workload tables of the IP's published network
        (mtrain.calibration.workload), the devices, the IPs and the IPs' published throughputs (its targets)."""
        section = self.mtrain["calibration"]
        tables = {kind: f"results/workloads/{section['workload']}/{kind}.parquet" for kind in ("ops", "tensors")}
        return {**tables, "devices": self.mtrain_devices, "ips": self.mtrain_ips, "targets": section["targets"]}

    def mtrain_calibration_params(self) -> dict[str, str]:
        """The params of `traincost mtrain-calibrate`: ``calibrate`` (fit the IP's clock or keep the ips file's) and
        ``label`` (the workload); none where the config skips MTrain (its rules then make no job)."""
        if not self.mtrain:
            return {}
        section = self.mtrain["calibration"]
        return {"calibrate": "--calibrate" if section["calibrate"] else "--no-calibrate", "label": section["workload"]}

    def mtrain_outputs(self) -> list[str]:
        outputs = _expand("results/mtrain/figure8.{ext}", ext=["png", "pdf"])
        outputs += _expand("results/mtrain/figure9_11_{cluster}.{ext}", cluster=self.mtrain_clusters, ext=["png", "pdf"])
        outputs += _expand("results/mtrain/figure12.{ext}", ext=["png", "pdf"])
        outputs += [
            COMPARISON_CSVS["mtrain"],
            "results/mtrain/table3.csv",
            "results/mtrain/table3.md",
            "results/mtrain/split.csv",
        ]
        outputs += [*self.mtrain_constants_csv(), "results/mtrain/table3_constants.md"] if self.mtrain_constant_runs() else []
        return outputs

    def mtrain_judged_tables(self, root: str = "results/mtrain", pairs: Sequence[int] | None = None) -> dict[str, list[str]]:
        """The study, Table III and scaling tables `traincost mtrain-report` judges, under ``root`` (the study's, or
        an ablation's re-run), the scaling tables of ``pairs`` FPGA pairs (default every size of Figure 12)."""
        pairs = self.mtrain_scaling_pairs if pairs is None else pairs
        return {
            "study": [f"{root}/study/{m}/{c}.parquet" for m in self.mtrain_models for c in self.mtrain_clusters],
            "table3": [f"{root}/table3/{m}/{c}.parquet" for c, m in self.mtrain_table3],
            "scaling": [f"{root}/scaling/pairs{p}.parquet" for p in pairs],
        }

    def mtrain_ablation_tables(self, assumption: str, value: str) -> dict[str, list[str]]:
        """The tables an MTrain ablation judges: re-run under the assumption if it changes them, else the study's own."""
        if assumption not in MTRAIN_RERUN_ASSUMPTIONS:
            return self.mtrain_judged_tables()
        rerun = self.mtrain_judged_tables(f"results/ablations/mtrain/{assumption}/{value}", self._scaling_sizes(ablation=True))
        if assumption not in _MTRAIN_VGG16_ONLY:
            return rerun
        own = self.mtrain_judged_tables()
        cells = zip(self.mtrain_table3, rerun["table3"], own["table3"], strict=True)
        table3 = [new if model == "vgg16" else old for (_, model), new, old in cells]
        return own | {"table3": table3}

    def _scaling_sizes(self, *, ablation: bool) -> list[int]:
        """The cluster sizes of Figure 12 a run computes: every size, or in an ablation's re-run only the fewest and
        the most FPGAs (the comparison reads no other size: mtrain_compare._scaling_rows; the others only draw
        Figure 12)."""
        every = self.mtrain_scaling_pairs
        return sorted({min(every), max(every)}) if ablation and every else list(every)

    def mtrain_fewer_fpgas(self, pairs: int, ablation: tuple[str, str] | None = None) -> dict[str, str]:
        """``{"fewer": path}``: the scaling table of the next smaller size the run computes beside ``pairs`` (whose
        answers its search weighs again), in the study's results or an ``(assumption, value)`` ablation's; empty for
        the smallest size."""
        smaller = [p for p in self._scaling_sizes(ablation=ablation is not None) if p < pairs]
        if not smaller:
            return {}
        root = "results/mtrain" if ablation is None else f"results/ablations/mtrain/{ablation[0]}/{ablation[1]}"
        return {"fewer": f"{root}/scaling/pairs{max(smaller)}.parquet"}

    # --- TM-Training ----------------------------------------------------------------------------------------

    @property
    def tiered(self) -> Config:
        return self.config.get("tiered") or {}

    @property
    def tiered_workloads(self) -> list[str]:
        """The Table 3 workloads of TM-Training (none where the config skips it)."""
        return self.tiered.get("workloads", [])

    @property
    def tiered_hardware(self) -> str | list[str]:
        """The hardware YAML with a tiered_memory section (none where the config skips TM-Training)."""
        return self.tiered.get("hardware", [])

    @property
    def tiered_policies(self) -> str:
        """The placement policies the config names, as `traincost tiered-study --policies` takes them (empty: all)."""
        return " ".join(self.tiered.get("policies", []))

    def tiered_ratios(self, variant: str) -> str:
        """The Tier 1 : model ratios of one variant, as `traincost tiered-study --ratios` takes them."""
        return " ".join(str(r) for r in self.tiered_variants[variant])

    @property
    def tiered_variants(self) -> dict[str, list[int]]:
        return {"base": self.tiered.get("ratios", []), **self.tiered.get("variant_ratios", {})}

    @property
    def tiered_figures(self) -> list[str]:
        """Figures 2-4 and 8-12 and 14; 13 with the doubled batch, 15 with half the Tier 2 bandwidth."""
        if not self.tiered:
            return []
        variants = (("fig13", "double_batch"), ("fig15", "half_tier2_bandwidth"))
        return [*TIERED_FIGURE_NAMES, *(figure for figure, variant in variants if variant in self.tiered_variants)]

    def tiered_study_tables(self, root: str = "results/tiered") -> list[str]:
        """Every workload's and variant's study table under ``root`` (the study's, or an ablation's)."""
        workloads, variants = self.tiered_workloads, list(self.tiered_variants)
        return _expand(f"{root}/study/{{tworkload}}/{{variant}}.parquet", tworkload=workloads, variant=variants)

    def tiered_outputs(self) -> list[str]:
        outputs = _expand("results/tiered/{figure}.{ext}", figure=self.tiered_figures, ext=["png", "pdf"])
        outputs += [COMPARISON_CSVS["tiered"], "results/tiered/table3.csv", "results/tiered/ordering.csv"]
        outputs += ["results/tiered/placement.csv", "results/tiered/tier2_reads.csv", "results/tiered/calibration.parquet"]
        outputs.append("results/tiered/fig12.html")  # every run behind Figure 12, interactive
        return outputs

    def tiered_figure_settings(self, figure: str) -> str:
        """The plot-tiered flags of one figure: the workload of Figures 2-4, 10, 11; the ratio of Figures 8, 9, 13-15."""
        if figure in ("fig2", "fig3", "fig4"):
            return f"--workload {self.tiered['motivation_workload']}"
        if figure in ("fig10", "fig11"):
            return f"--workload {self.tiered['ratio_workload']}"
        if figure == "fig12":
            return ""
        return f"--ratio {self.tiered['figure_ratio']}"

    def tiered_tier1_sizing(self) -> str:
        """The tiered-study flag that sizes Tier 1 as a share of the memory (none: by model bytes)."""
        share = self.tiered.get("tier1_share_per_ratio")
        return f"--tier1-share-per-ratio {share}" if share is not None else ""

    @staticmethod
    def tiered_workload(tworkload: str, variant: str) -> dict[str, str]:
        folder = f"results/tiered/workloads/{tworkload}/batch{TIERED_BATCH[variant]}"
        return {"ops": f"{folder}/ops.parquet", "tensors": f"{folder}/tensors.parquet"}

    def tiered_calibration_params(self) -> dict[str, str]:
        """The params of `traincost calibrate --study tiered` (tiered.calibration): ``calibrate`` (fit or keep the
        hardware file's constants), the claim the accelerator energy is fitted to (``target``) and those the same
        statement fixes (``also``); none where the config skips TM-Training (its rules then make no job)."""
        if not self.tiered:
            return {}
        section = self.tiered["calibration"]
        scale = section["accelerator_energy_scale"]
        return {
            "calibrate": "--calibrate" if section["calibrate"] else "--no-calibrate",
            "target": scale["target"],
            "also": " ".join(scale["also_pins"]),
        }

    # --- the report, the targets and the ablations ----------------------------------------------------------

    def comparison_csvs(self) -> dict[str, str]:
        """Study -> its paper-vs-ours CSV, for the studies the config runs."""
        runs = {
            "monet": bool(self.config["monet_hardware"]["edge_tpu"] and self.config["monet_hardware"]["fusemax"]),
            "mtrain": self.config.get("mtrain") is not None,
            "tiered": self.config.get("tiered") is not None,
        }
        return {study: csv for study, csv in COMPARISON_CSVS.items() if runs[study]}

    def workloads_page_tables(self) -> list[str]:
        """Every workload's ops, tensors and verification tables, in the order of ``workloads_page_flags``."""
        return [
            path
            for name in self.workloads
            for path in (
                f"results/workloads/{name}/ops.parquet",
                f"results/workloads/{name}/tensors.parquet",
                f"results/graphs/{name}/verification.parquet",
            )
        ]

    def workloads_page_flags(self) -> str:
        """`traincost report-workloads --workload` values: each workload's name, ops, tensors and verification table."""
        tables = self.workloads_page_tables()
        rows = zip(self.workloads, tables[::3], tables[1::3], tables[2::3], strict=True)
        return " ".join(f"{name} {ops} {tensors} {check}" for name, ops, tensors, check in rows)

    def agreement_counts_inputs(self) -> dict[str, list[str]]:
        """What `traincost summary --disagreeing` reads: each study's comparison (``after``), its comparison before
        calibration where the config ablates it (``before``), and its comparison with `why` (``why``)."""
        studies = sorted(self.comparison_csvs())
        before = [s for s in studies if ("calibrated", "false") in self.ablation_runs(s)]
        return {
            "after": list(self.comparison_csvs().values()),
            "before": [f"results/ablations/{s}/calibrated/false/compare.csv" for s in before],
            "why": [f"results/{s}/compare_why.csv" for s in studies if self.ablation_runs(s)],
        }

    def agreement_outputs(self) -> list[str]:
        return _expand("results/{study}/agreement.html", study=sorted(self.comparison_csvs()))

    def final_outputs(self) -> list[str]:
        """The targets of ``all``: every study the config runs, its figures, tables and paper-vs-ours pages."""
        outputs = _expand("results/workloads/{workload}/memory.parquet", workload=self.workloads)
        outputs += _expand("results/graphs/{workload}/verification.parquet", workload=self.workloads)  # every check
        outputs.append("results/workloads.html")  # which front end built each
        if self.config["figure3"]["workloads"]:
            outputs += _expand("results/monet/figure3.{ext}", ext=["png", "pdf"])
            outputs.append("results/monet/figure3_memory_compare.csv")
        edge, fusemax = self.config["monet_hardware"]["edge_tpu"], self.config["monet_hardware"]["fusemax"]
        if edge:
            outputs += _expand("results/monet/{figure}.{ext}", figure=["figure1", "figure8"], ext=["png", "pdf"])
            outputs.append("results/monet/figures1_8.html")  # the same sweep, interactive
        if fusemax:
            outputs += _expand("results/monet/figure9.{ext}", ext=["png", "pdf", "html"])
        if edge and fusemax:
            outputs.append(COMPARISON_CSVS["monet"])
        outputs += [self.sweep_table(name, step) for name in self.sweeps for step in STEPS]
        if self.config["monet_fusion"] is not None:
            outputs += _expand("results/monet/figure10.{ext}", ext=["png", "pdf"])
            outputs.append("results/monet/fusion/solver_runs.parquet")
            limit = max(self.config["monet_fusion"]["limits"])
            pattern = "results/monet/fusion/{step}/fused_{step}_limit{limit}_{types}.png"
            outputs += _expand(pattern, step=STEPS, limit=[limit], types=self.fusion_types[:1])
        if self.config.get("mtrain") is not None:
            outputs += self.mtrain_outputs()
        if self.config.get("tiered") is not None:
            outputs += self.tiered_outputs()
        if self.config["monet_checkpoint"] is not None:
            outputs += _expand("results/monet/figure11.{ext}", ext=["png", "pdf"])
            outputs.append("results/monet/checkpoint/milp.parquet")
            if "nsga" in self.config["monet_checkpoint"]:
                outputs += _expand("results/monet/figure12.{ext}", ext=["png", "pdf", "html"])
        outputs += self.agreement_outputs()
        return outputs

    def ablation_runs(self, study: str) -> list[tuple[str, str]]:
        """(assumption, value) per ablation run of ``study`` the config asks for and the config runs the study of."""
        if study not in self.comparison_csvs():
            return []
        ablations = self.config.get("ablations") or {}
        return [(name, _ablation_value(v)) for name, values in ablations.get(study, {}).items() for v in values]

    def ablation_outputs(self) -> list[str]:
        """The `ablations` target: per study with runs, its ablation table, its comparison with `why`, its heat map."""
        outputs = []
        for study in sorted(self.comparison_csvs()):
            if self.ablation_runs(study):
                outputs += [f"results/{study}/ablations.parquet", f"results/{study}/compare_why.csv"]
                outputs += _expand("results/{study}/ablations.{ext}", study=[study], ext=["png", "pdf"])
        if self.comparison_csvs():
            outputs += ["results/agreement_counts.csv", "results/fidelity.md"]
        return outputs

    def mtrain_constants_csv(self) -> list[str]:
        """Table III under each unstated constant (``mtrain_constants``), if the config ablates any: read by the report."""
        return ["results/mtrain/table3_constants.csv"] if self.mtrain_constant_runs() else []

    def mtrain_constant_runs(self) -> list[tuple[str, str]]:
        """The MTrain ablation runs that change a constant the paper does not state (``MTRAIN_UNSTATED``)."""
        return [(a, v) for a, v in self.ablation_runs("mtrain") if a in MTRAIN_UNSTATED] if self.mtrain else []

    def mtrain_constants_inputs(self) -> dict[str, list[str]]:
        """Table III's tables of the study and of each unstated constant's ablation run."""
        inputs = {"baseline": self.mtrain_judged_tables()["table3"]}
        for a, v in self.mtrain_constant_runs():
            inputs[f"{a}={v}"] = self.mtrain_ablation_tables(a, v)["table3"]
        return inputs

    def mtrain_constants_flags(self) -> str:
        """`traincost mtrain-constants` --baseline and --variant flags, in ``mtrain_constants_inputs``'s order."""
        inputs = self.mtrain_constants_inputs()
        flags = ["--baseline", *inputs.pop("baseline")]
        for setting, paths in inputs.items():
            flags += ["--variant", setting, *paths]
        return " ".join(flags)

    def ablation_table_inputs(self, study: str) -> dict[str, str | list[str]]:
        return {
            "baseline": self.comparison_csvs()[study],
            "runs": [f"results/ablations/{study}/{a}/{v}/compare.csv" for a, v in self.ablation_runs(study)],
        }

    def ablation_run_flags(self, study: str, runs: Sequence[str]) -> str:
        """`traincost ablations` --run flags: each run's assumption, value and comparison table."""
        return " ".join(f"--run {a} {v} {path}" for (a, v), path in zip(self.ablation_runs(study), runs, strict=True))


def _ablation_value(value: object) -> str:
    """A config value as the --assume text: booleans lower-case, numbers as written."""
    return str(value).lower() if isinstance(value, bool) else f"{value:g}" if isinstance(value, float) else str(value)
