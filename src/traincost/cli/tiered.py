"""``traincost`` subcommands of the tiered-memory training study (TM-Training)."""

from __future__ import annotations

import argparse
from pathlib import Path

from traincost.cli.arguments import Command, positive_int, positive_number
from traincost.errors import ConfigError, in_file
from traincost.io import atomic_path

__all__ = ["tiered_commands"]


# the --figure choices, traincost.plots.tiered.FIGURES written out so that `traincost --help` does not import matplotlib
FIGURES = ("fig2", "fig3", "fig4", "fig8", "fig9", "fig10", "fig11", "fig12", "fig13", "fig14", "fig15")


def _cmd_workload(args: argparse.Namespace) -> None:
    from traincost.models.tm_training_workloads import tm_training_workload

    layout = {
        key: value
        for key, value in (
            ("model_parallel", args.model_parallel),
            ("sequence_parallel", args.sequence_parallel),
            ("pipeline_stages", args.pipeline_stages),
            ("micro_batches", args.micro_batches),
            ("pipeline_schedule", args.pipeline_schedule),
        )
        if value is not None
    }
    workload = tm_training_workload(
        args.workload, batch_factor=args.batch_factor, layout=layout, pipeline_stage=args.pipeline_stage
    )
    workload.write(args.ops, args.tensors)
    print(f"{args.workload} x{args.batch_factor}: {len(workload.ops)} ops, {workload.total_macs / 1e12:.1f} TMACs per chip")


def _cmd_study(args: argparse.Namespace) -> None:
    from traincost.analysis.ablations import parse_assume
    from traincost.tiered.assumptions import study_system
    from traincost.tiered.calibration import read_accelerator_energy_scale
    from traincost.tiered.record import read_record, write_record
    from traincost.tiered.study import VARIANTS, study_runs, study_variant, variant_system
    from traincost.tiered.system import load_tiered_system
    from traincost.workload import Workload, write_table

    if args.variant not in VARIANTS:
        raise ConfigError(f"--variant {args.variant!r}: expected one of {', '.join(VARIANTS)}")
    workload = Workload.read(args.ops, args.tensors)
    with in_file(args.ops):
        variant = study_variant(args.variant, workload)
    loaded = variant_system(load_tiered_system(args.hardware), variant)
    scale = read_accelerator_energy_scale(args.calibration)
    study = study_runs(
        workload,
        study_system(loaded, parse_assume("tiered", args.assume), accelerator_energy_scale=scale),
        variant=variant.name,
        ratios=args.ratios,
        policies=args.policies,
        tier1_share_per_ratio=args.tier1_share_per_ratio,
        record=read_record(args.record) if args.record else None,
        recorded_on=study_system(loaded, {}, accelerator_energy_scale=scale),  # the study's own system: no assumption changed
    )
    table = study.table
    shown = table[["policy", "ratio", "iteration_s", "energy_j", "energy_efficiency_vs_hbm", "migrated_bytes"]]
    print(shown.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    meta = {**workload.meta, "variant": variant.name, "hardware": str(args.hardware)}
    write_table(table, args.out, meta)
    if args.record_out:
        write_record(study.record, args.record_out, meta)


def _cmd_calibrate(args: argparse.Namespace) -> None:
    from traincost.tiered.calibration import calibration_table
    from traincost.tiered.system import load_tiered_system
    from traincost.workload import Workload, write_table

    if len(args.ops) != len(args.tensors):
        raise ConfigError(f"--ops and --tensors: {len(args.ops)} ops tables but {len(args.tensors)} tensors tables")
    system = load_tiered_system(args.hardware)
    workloads = []
    for ops, tensors in zip(args.ops, args.tensors, strict=True):
        workload = Workload.read(ops, tensors)
        workloads.append((str(workload.meta.get("model", ops.parent.name)), workload))
    table = calibration_table(workloads, system, args.paper, target=args.target, also_pins=args.also_pins, fit=args.calibrate)
    print(table.drop(columns="source").to_string(index=False))
    write_table(table, args.out)


def _cmd_report(args: argparse.Namespace) -> None:
    import pandas as pd

    from traincost.analysis.ablations import parse_assume
    from traincost.analysis.agreement import count_agreement
    from traincost.analysis.paper_claims import read_paper_claims
    from traincost.analysis.tiered_accounting import tier2_reads_table
    from traincost.analysis.tiered_compare import compare_with_paper, ordering_agreement, set_aside_by_accounting
    from traincost.analysis.tiered_placement import placement_table
    from traincost.analysis.tiered_workloads import workload_table
    from traincost.tiered.assumptions import calibrated
    from traincost.tiered.calibration import calibrated_claims
    from traincost.tiered.study import tier2_reads_once
    from traincost.workload import read_table, write_table

    for path in (args.paper, args.table3):
        if not path.is_file():
            raise ConfigError(f"{path}: no such file (the paper's numbers)")
    study = pd.concat([read_table(p)[0] for p in args.study], ignore_index=True)
    study = study.sort_values(["workload", "variant", "ratio", "policy"], kind="stable").reset_index(drop=True)
    targets = calibrated_claims(args.calibration) if calibrated(parse_assume("tiered", args.assume)) else set()
    claims = read_paper_claims(args.claims) if args.claims else None
    paper = pd.read_csv(args.paper)
    once = tier2_reads_once(study)
    compare = set_aside_by_accounting(
        compare_with_paper(study, paper, claims=claims, calibrated=targets),
        compare_with_paper(once, paper, claims=claims, calibrated=targets),
    )
    workloads = workload_table(pd.read_csv(args.table3), sorted(study["workload"].unique()))
    write_table(study, args.study_out)
    with atomic_path(args.compare) as tmp:
        compare.to_csv(tmp, index=False, float_format="%.6g")
    with atomic_path(args.data_size) as tmp:
        workloads.to_csv(tmp, index=False, float_format="%.6g")
    ordering = ordering_agreement(study)
    placement = placement_table(study) if args.placement else None
    with atomic_path(args.ordering) as tmp:
        ordering.to_csv(tmp, index=False, float_format="%.6g")
    if placement is not None:
        with atomic_path(args.placement) as tmp:
            placement.to_csv(tmp, index=False, float_format="%.6g")
    if args.tier2_reads:
        with atomic_path(args.tier2_reads) as tmp:
            tier2_reads_table(study, once).to_csv(tmp, index=False, float_format="%.6g")
    print(f"{count_agreement(compare).text()}; {args.compare}")
    ordered = ordering["agrees"].dropna()
    print(f"TM-Training above Sentinel, AutoTM and DeepTM in {int(ordered.sum())} of {len(ordered)} settings; {args.ordering}")


def _cmd_design_space(args: argparse.Namespace) -> None:
    from traincost.plots.design_space import Axis, View, tiered_points, write_design_space_page
    from traincost.workload import read_table

    points = tiered_points(read_table(args.input)[0], variant=args.variant)
    ratio, policy = Axis("ratio", "Tier 1 : model ratio"), Axis("policy", "policy", categorical=True)
    views = [
        View(
            "Figure 12: throughput over HBM-only against the ratio",
            ratio,
            Axis("throughput_vs_hbm", "throughput / HBM-only", log=False),
            policy,
        ),
        View(
            "Figure 10's measure: energy efficiency over HBM-only",
            ratio,
            Axis("energy_efficiency_vs_hbm", "energy efficiency / HBM-only", log=False),
            policy,
        ),
    ]
    write_design_space_page(points, args.out, title=args.title, parameters=["policy", "ratio"], views=views)


def _cmd_plot(args: argparse.Namespace) -> None:
    from traincost.analysis.agreement import STUDIES, read_comparison
    from traincost.plots.tiered import plot_figure
    from traincost.workload import read_table

    comparison = read_comparison(args.compare, STUDIES["tiered"]) if args.compare else None
    outputs = [Path(p) for p in args.out]
    plot_figure(args.figure, read_table(args.input)[0], outputs, workload=args.workload, ratio=args.ratio, comparison=comparison)


def _design_space_command(command: Command) -> None:
    """``design-space-tiered``: TM-Training Figure 12 as an interactive page."""
    cmd = command(
        "design-space-tiered",
        _cmd_design_space,
        "TM-Training Figure 12 as an interactive HTML page: every run (workload, policy, ratio) to hover, compare, filter",
        outputs=("--out",),
    )
    cmd.add_argument("--in", dest="input", type=Path, required=True, help="the study table from tiered-report")
    cmd.add_argument("--variant", default="base", help="the study variant shown (base: the paper's setting)")
    cmd.add_argument("--title", default="", help="page title")
    cmd.add_argument("--out", type=Path, required=True, help="output page (.html, self-contained, no network needed)")


def _workload_command(command: Command) -> None:
    """The tiered-workload subcommand: a preset, its batch and, optionally, another layout."""
    cmd = command(
        "tiered-workload",
        _cmd_workload,
        "one chip's training step of a TM-Training workload (Table 3) as Workload IR",
        outputs=("--ops", "--tensors"),
    )
    cmd.add_argument("--workload", required=True, help="bert_large, t5_11b, chinchilla_70b, gpt3_175b or palm_540b")
    cmd.add_argument("--batch-factor", type=positive_int, default=1, help="multiply the global batch (Figure 13: 2)")
    layout = cmd.add_argument_group("layout", "replace the preset's parallelism (Table 3's; PaLM: 12 pipeline stages)")
    layout.add_argument("--model-parallel", type=positive_int, help="tensor-parallel chips per stage")
    layout.add_argument(
        "--sequence-parallel", action=argparse.BooleanOptionalAction, default=None, help="split the residual stream"
    )
    layout.add_argument("--pipeline-stages", type=positive_int, help="pipeline stages per replica")
    layout.add_argument("--micro-batches", type=positive_int, help="micro-batches per replica per iteration")
    layout.add_argument("--pipeline-schedule", choices=["1f1b", "gpipe"], help="the pipeline's schedule")
    layout.add_argument("--pipeline-stage", type=int, help="the stage the chip is (default: the preset's, else 0)")
    cmd.add_argument("--ops", type=Path, required=True, help="output ops table (Parquet)")
    cmd.add_argument("--tensors", type=Path, required=True, help="output tensors table (Parquet)")


def tiered_commands(command: Command) -> None:
    """Subcommands of the tiered-memory study (TM-Training)."""
    cmd = command(
        "calibrate",
        _cmd_calibrate,
        "TM-Training: fit the accelerator's MAC and SRAM energy scale to the paper's off-chip share of HBM-only energy",
        outputs=("--out",),
    )
    cmd.add_argument("--study", choices=["tiered"], default="tiered", help="the study to calibrate (tiered only, so far)")
    cmd.add_argument("--hardware", type=Path, required=True, help="the tiered hardware YAML (config/hardware/tpuv4_tiered.yaml)")
    cmd.add_argument("--ops", type=Path, nargs="+", required=True, help="ops.parquet of each workload averaged over")
    cmd.add_argument("--tensors", type=Path, nargs="+", required=True, help="tensors.parquet of each, in the same order")
    cmd.add_argument("--paper", type=Path, required=True, help="data/paper/tm_training.csv")
    cmd.add_argument("--target", required=True, help="the claim whose value is fitted to (an off-chip energy share)")
    cmd.add_argument("--also-pins", nargs="*", default=[], help="other claims the same statement fixes (also 'calibrated')")
    cmd.add_argument(
        "--calibrate",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="fit the scale (default); --no-calibrate keeps 1 and only reports the share it gives",
    )
    cmd.add_argument("--out", type=Path, required=True, help="output: results/tiered/calibration.parquet")

    _workload_command(command)

    cmd = command(
        "tiered-study",
        _cmd_study,
        "simulate every placement policy at every Tier 1 size: time (s), energy (J), bytes migrated, normalised to HBM-only",
        outputs=("--out", "--record-out"),
    )
    cmd.add_argument("--ops", type=Path, required=True, help="ops.parquet of one chip's training step")
    cmd.add_argument("--tensors", type=Path, required=True, help="tensors.parquet")
    cmd.add_argument(
        "--hardware", type=Path, required=True, help="a hardware YAML with tiered_memory (config/hardware/tpuv4_tiered.yaml)"
    )
    cmd.add_argument("--variant", default="base", help="base, double_batch (Figure 13) or half_tier2_bandwidth (Figure 15)")
    cmd.add_argument("--ratios", type=float, nargs="+", required=True, help="Tier 1 size over model size per chip, e.g. 5 25 100")
    cmd.add_argument(
        "--policies",
        nargs="+",
        default=["hor_off", "hor_on", "ver_off", "ver_on", "sentinel", "autotm", "deeptm", "tm_training", "tm_training_off"],
        help="placement policies (hbm_only and ideal always run)",
    )
    cmd.add_argument(
        "--tier1-share-per-ratio",
        type=positive_number,
        help="Tier 1 as this share of the address space per unit of ratio (TM-Training: 0.005, 25:1 = 12.5 %%); "
        "default: ratio x model bytes per chip",
    )
    cmd.add_argument(
        "--calibration", type=Path, help="results/tiered/calibration.parquet: its fitted accelerator energy scale (default 1)"
    )
    cmd.add_argument(
        "--assume",
        nargs="+",
        metavar="NAME=VALUE",
        help="change a modelling assumption (an ablation): calibrated=true|false, stall_static_power=true|false, "
        "deeptm_eviction_costs_time=false|true, split_only_if_evicted=false|true, tier2_energy_factor=1|0.5|2, "
        "split_ratio_reading=printed|prose, hot_promotion=true|false, autotm_lookahead=true|false, "
        "split_energy=printed|per_access, tier2_read_energy=per_access|once_per_store",
    )
    cmd.add_argument(
        "--record",
        type=Path,
        help="the record (--record-out) of this study without --assume: the runs the assumptions do not change, priced "
        "anew, are re-used instead of being simulated again",
    )
    cmd.add_argument("--out", type=Path, required=True, help="output: one row per policy and ratio (Parquet)")
    cmd.add_argument("--record-out", type=Path, help="output: every simulation's tally, for --record (Parquet)")

    cmd = command(
        "tiered-report",
        _cmd_report,
        "TM-Training: all study tables in one, ours beside the paper (compare.csv), Table 3",
        outputs=("--study-out", "--compare", "--data-size", "--ordering", "--placement", "--tier2-reads"),
    )
    cmd.add_argument("--study", type=Path, nargs="+", required=True, help="tiered-study tables")
    cmd.add_argument("--calibration", type=Path, help="calibration.parquet: the claims it fitted to become 'calibrated' rows")
    cmd.add_argument("--paper", type=Path, required=True, help="the paper's headline numbers (data/paper/tm_training.csv)")
    cmd.add_argument(
        "--claims", type=Path, help="every claim of the paper's results (data/paper/tm_training_claims.csv): its sentences' rows"
    )
    cmd.add_argument("--table3", type=Path, required=True, help="the paper's Table 3 (data/paper/tm_training_table3.csv)")
    cmd.add_argument("--study-out", type=Path, required=True, help="output: every study table in one (Parquet)")
    cmd.add_argument("--compare", type=Path, required=True, help="output: paper vs ours, with whether the direction agrees (CSV)")
    cmd.add_argument(
        "--assume",
        nargs="+",
        metavar="NAME=VALUE",
        help="calibrated=false: the study ran uncalibrated, so the calibration targets are judged as claims",
    )
    cmd.add_argument(
        "--data-size", type=Path, required=True, help="output: Table 3 beside ours, data size per iteration in bytes (CSV)"
    )
    cmd.add_argument(
        "--ordering",
        type=Path,
        required=True,
        help="output: per workload, variant and ratio, whether TM-Training leads the prior work (CSV)",
    )
    cmd.add_argument(
        "--placement",
        type=Path,
        help="output: per run, the bytes read straight from Tier 2, written to it, promoted and demoted, and the split "
        "ratios chosen (CSV)",
    )
    cmd.add_argument(
        "--tier2-reads",
        type=Path,
        help="output: per run, the energy efficiency over HBM-only with Tier 2's re-reads priced per access and with "
        "each stored byte read once, side by side (CSV)",
    )

    _design_space_command(command)
    cmd = command("plot-tiered", _cmd_plot, "TM-Training Figures 2-4 and 8-15 from the study table", outputs=("--out",))
    cmd.add_argument("--figure", required=True, choices=FIGURES)
    cmd.add_argument("--in", dest="input", type=Path, required=True, help="the study table from tiered-report")
    cmd.add_argument("--workload", default="palm_540b", help="workload of Figures 2-4, 10, 11")
    cmd.add_argument("--ratio", type=positive_number, default=25.0, help="Tier 1 : model ratio of Figures 8, 9, 13-15")
    cmd.add_argument("--out", type=Path, nargs="+", required=True, help="output figure files (.png, .pdf)")
    cmd.add_argument(
        "--compare", type=Path, help="tiered-report's compare.csv: the paper's numbers for the figure, drawn beside ours"
    )
