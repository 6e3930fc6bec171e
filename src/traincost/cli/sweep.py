"""``traincost`` subcommands of the hardware cost model and the MONET hardware study: sweeps over hardware grids,
their figures and MONET's claims."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from traincost.cli.arguments import (
    Command,
    allocation,
    fusion_tiling,
    json_object,
    positive_int,
    resident_fraction,
    schedule_mode,
    schedule_plan,
    workload_tables,
)
from traincost.errors import ConfigError
from traincost.io import atomic_path

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["sweep_commands"]

log = logging.getLogger("traincost")


def _cmd_sweep(args: argparse.Namespace) -> None:
    from traincost.api import sweep
    from traincost.limits import MAX_CONFIGS
    from traincost.schedule.manual_fusion import read_manual_fusion
    from traincost.workload import Workload, write_table

    index, _, count = args.shard.partition("/")
    if not (index.isdigit() and count.isdigit()):
        raise ConfigError(f"--shard: expected INDEX/COUNT such as 0/4, got {args.shard!r}")
    workload = Workload.read(args.ops, args.tensors)
    if args.step == "inference" and workload.meta.get("stage", "").startswith("train_step"):
        log.warning(
            "%s: --step inference costs the forward pass of a training step (training-mode BatchNorm, dropout, the loss); "
            "the model's inference step is `traincost export --inference`, then decompose and lower",
            args.ops,
        )
    fused = read_manual_fusion(args.fusion, workload.ops) if args.fusion else ()
    table = sweep(
        workload,
        hardware=args.hardware,
        grid=args.grid,
        step=args.step,
        plan=schedule_plan(args, fused),
        shard=(int(index), int(count)),
        max_configs=args.max_configs or MAX_CONFIGS,
    )
    meta = {
        **workload.meta,
        "hardware": str(args.hardware),
        "mode": args.mode,
        "fusion": str(args.fusion or ""),
        "step": args.step,
    }
    write_table(table, args.out, meta)
    if table.empty:
        print(f"shard {args.shard}: no configurations (the grid has fewer than its shards); wrote an empty table")
        return
    best = table.nsmallest(1, "latency_cycles").iloc[0]
    print(f"{len(table)} configurations; fastest {best.config_id}: {best.latency_cycles:.4g} cycles, {best.energy_pj:.4g} pJ")


def _cmd_concat(args: argparse.Namespace) -> None:
    import pandas as pd

    from traincost.workload import read_table, write_table

    frames, metas = zip(*(read_table(path) for path in args.inputs), strict=True)
    columns = list(frames[0].columns)
    for path, frame in zip(args.inputs, frames, strict=True):
        if list(frame.columns) != columns:
            raise ConfigError(f"{path}: columns differ from {args.inputs[0]}")
    write_table(pd.concat(frames, ignore_index=True), args.out, metas[0])


def _read_steps(paths: Sequence[Path]) -> list[tuple[str, pd.DataFrame]]:
    from traincost.workload import read_table

    steps = []
    for path in paths:
        table, meta = read_table(path)
        steps.append((meta.get("step", path.stem), table))
    return steps


def _cmd_plot_sweep(args: argparse.Namespace) -> None:
    from traincost.analysis.edge_tpu import edge_tpu_resources
    from traincost.plots.hardware_sweeps import plot_compute_resources, plot_energy_latency

    steps = _read_steps(args.inputs)
    outputs = [Path(p) for p in args.out]
    match args.figure:
        case "energy-latency-compute":
            steps = [(step, edge_tpu_resources(table)) for step, table in steps]
            plot_energy_latency(steps, hue="total_compute", hue_label="U·L·n_PEs", outputs=outputs, title=args.title)
        case "compute-resources":
            plot_compute_resources(steps, outputs=outputs, title=args.title)
        case "energy-latency-bandwidth":
            plot_energy_latency(
                steps,
                hue="buffer_bandwidth",
                hue_label="buffer bandwidth (B/cycle)",
                outputs=outputs,
                title=args.title,
                log_hue=False,
            )


def _cmd_design_space(args: argparse.Namespace) -> None:
    import pandas as pd

    from traincost.analysis.edge_tpu import edge_tpu_resources
    from traincost.plots.design_space import Axis, View, write_design_space_page

    table = pd.concat([table for _, table in _read_steps(args.inputs)], ignore_index=True)
    latency, energy = Axis("latency_cycles", "latency (cycles)"), Axis("energy_pj", "energy (pJ)")
    match args.figure:
        case "edge-tpu":
            table = edge_tpu_resources(table)
            compute, per_pe = Axis("total_compute", "compute resources U·L·n_PEs"), Axis("pe_compute", "U·L per PE")
            views = [
                View("Figure 1: energy against latency", latency, energy, Axis("total_compute", "U·L·n_PEs")),
                View("Figure 8, top: energy against compute resources", compute, energy, per_pe),
                View("Figure 8, bottom: latency against compute resources", compute, latency, per_pe),
            ]
        case "fusemax":
            bandwidth = Axis("buffer_bandwidth", "buffer bandwidth (B/cycle)", log=False)
            views = [View("Figure 9: energy against latency", latency, energy, bandwidth)]
    write_design_space_page(table, args.out, title=args.title, parameters=args.parameters, views=views)


def _cmd_claims(args: argparse.Namespace) -> None:
    import pandas as pd

    from traincost.analysis.ablations import assumption_value, parse_assume
    from traincost.analysis.monet_claims import monet_hardware_claims, monet_section5_claims, monet_unchecked
    from traincost.analysis.paper_claims import read_paper_claims
    from traincost.workload import read_table, write_table

    tables = [read_table(path)[0] for path in (args.edge_inference, args.edge_training, args.gpt_inference, args.gpt_training)]
    assumed = parse_assume("monet", args.assume)
    claims = monet_hardware_claims(*tables, front_rule=assumption_value("monet", assumed, "front_rule"))
    section5 = (args.fusion_compare or [], args.additivity, args.nsga_summary)
    optional = {"solver_runs": args.solver_runs, "nsga": args.nsga, "milp": args.milp, "memory": args.memory_compare}
    if any(section5) or any(optional.values()):
        if args.paper is None or not args.paper.is_file():
            raise ConfigError(f"--paper {args.paper}: no such file (MONET's numbers, data/paper/monet.csv, for section V)")
        fusion = [read_table(path)[0] for path in section5[0]]
        additivity, summary = (read_table(path)[0] if path else None for path in section5[1:])
        more = {name: read_table(path)[0] if path else None for name, path in optional.items()}
        claims = pd.concat(
            [claims, monet_section5_claims(fusion, additivity, summary, pd.read_csv(args.paper), **more)], ignore_index=True
        )
    if args.claims:
        unchecked = monet_unchecked(read_paper_claims(args.claims), set(claims["claim"]))
        claims = pd.concat([claims, unchecked], ignore_index=True)
    with pd.option_context("display.width", 200, "display.max_colwidth", 70):
        print(claims[["figure", "claim", "value", "verdict"]].to_string(index=False))
    print(f"{int((claims['verdict'] == 'agrees').sum())} of {int((claims['kind'] == 'claim').sum())} claims agree on our model")
    with atomic_path(args.csv) as tmp:
        claims.to_csv(tmp, index=False)
    if args.out:
        write_table(claims, args.out)


def sweep_commands(command: Command) -> None:
    """Subcommands of the hardware cost model and the MONET hardware study."""
    cmd = command(
        "sweep",
        _cmd_sweep,
        "latency, energy and memory of a workload on every configuration of a hardware grid",
        outputs=("--out",),
    )
    workload_tables(cmd)
    cmd.add_argument("--hardware", type=Path, required=True, help="hardware template YAML (config/hardware/)")
    cmd.add_argument(
        "--grid", type=json_object, default="{}", help="values per template parameter as JSON, e.g. '{\"x_pes\": [1, 2, 4]}'"
    )
    cmd.add_argument("--step", required=True, choices=["inference", "training"], help="forward ops only, or the whole step")
    schedule_mode(cmd)
    cmd.add_argument("--fusion", type=Path, help="manual fusion file (config/fusion/)")
    resident_fraction(cmd)
    fusion_tiling(cmd)
    allocation(cmd)
    cmd.add_argument(
        "--mapping-objective",
        default="edp",
        choices=["latency", "energy", "edp"],
        help="what the per-op choice of loop order at a core's top memory minimises",
    )
    cmd.add_argument("--shard", default="0/1", help="INDEX/COUNT: evaluate one contiguous slice of the grid")
    cmd.add_argument("--max-configs", type=positive_int, help="refuse a grid of more configurations (default 1,000,000)")
    cmd.add_argument("--out", type=Path, required=True, help="output table (Parquet), one row per configuration")

    cmd = command("plot-sweep", _cmd_plot_sweep, "MONET Figures 1, 8, 9 from sweep tables (one per step)", outputs=("--out",))
    cmd.add_argument(
        "--figure",
        required=True,
        choices=["energy-latency-compute", "compute-resources", "energy-latency-bandwidth"],
        help="Fig. 1 (Edge TPU, colour U·L·n_PEs), Fig. 8 (vs compute resources), Fig. 9 (FuseMax, colour buffer bandwidth)",
    )
    cmd.add_argument(
        "--in", dest="inputs", type=Path, nargs="+", required=True, help="sweep tables, e.g. inference then training"
    )
    cmd.add_argument("--title", default="", help="figure title")
    cmd.add_argument("--out", type=Path, nargs="+", required=True, help="output figure files (.png, .pdf)")

    cmd = command(
        "design-space",
        _cmd_design_space,
        "MONET Figures 1 and 8, or 9, as an interactive HTML page: hover, compare and filter the configurations",
        outputs=("--out",),
    )
    cmd.add_argument(
        "--figure",
        required=True,
        choices=["edge-tpu", "fusemax"],
        help="edge-tpu: Figures 1 and 8 (an Edge TPU sweep); fusemax: Figure 9 (a FuseMax sweep, colour buffer bandwidth)",
    )
    cmd.add_argument(
        "--in", dest="inputs", type=Path, nargs="+", required=True, help="sweep tables, e.g. inference then training"
    )
    cmd.add_argument("--parameters", nargs="+", required=True, help="the swept parameters (the sweep's grid keys)")
    cmd.add_argument("--title", default="", help="page title")
    cmd.add_argument("--out", type=Path, required=True, help="output page (.html, self-contained, no network needed)")

    cmd = command(
        "claims",
        _cmd_claims,
        "MONET's claims: section IV on the Edge TPU and FuseMax sweeps, section V on fusion, checkpointing",
        outputs=("--csv", "--out"),
    )
    cmd.add_argument("--edge-inference", type=Path, required=True, help="ResNet-18 on Edge TPU, inference sweep")
    cmd.add_argument("--edge-training", type=Path, required=True, help="ResNet-18 on Edge TPU, training sweep")
    cmd.add_argument("--gpt-inference", type=Path, required=True, help="GPT-2 on FuseMax, inference sweep")
    cmd.add_argument("--gpt-training", type=Path, required=True, help="GPT-2 on FuseMax, training sweep")
    cmd.add_argument("--fusion-compare", type=Path, nargs="+", help="section V, Figure 10: compare-fusion tables (one per step)")
    cmd.add_argument("--additivity", type=Path, help="section V, Figure 11: checkpoint-study's additivity table")
    cmd.add_argument("--nsga-summary", type=Path, help="section V, Figure 12: checkpoint-nsga's summary")
    cmd.add_argument("--nsga", type=Path, help="section V, Figure 12: checkpoint-nsga's evaluations (every choice)")
    cmd.add_argument("--milp", type=Path, help="section V, Figure 12: checkpoint-study's MILP choices")
    cmd.add_argument("--solver-runs", type=Path, help="section V-A: the fusion solver's runs (graph sizes, candidates)")
    cmd.add_argument("--memory-compare", type=Path, help="Figure 3: the memory comparison with torch (compare-memory)")
    cmd.add_argument(
        "--claims", type=Path, help="every claim of the paper (data/paper/monet_claims.csv): unchecked ones become rows"
    )
    cmd.add_argument(
        "--assume",
        nargs="+",
        metavar="NAME=VALUE",
        help="an ablation: front_rule=margin|near|strict changes the counted front rows; the other MONET assumptions "
        "change the tables given, not this command",
    )
    cmd.add_argument("--paper", type=Path, help="MONET's numbers (data/paper/monet.csv), needed with any section V input")
    cmd.add_argument("--csv", type=Path, required=True, help="output claims.csv")
    cmd.add_argument("--out", type=Path, help="also write the claims as Parquet")

    cmd = command("concat", _cmd_concat, "concatenate tables with the same columns (sweep shards)", outputs=("--out",))
    cmd.add_argument("--in", dest="inputs", type=Path, nargs="+", required=True, help="Parquet tables")
    cmd.add_argument("--out", type=Path, required=True, help="output Parquet table")
