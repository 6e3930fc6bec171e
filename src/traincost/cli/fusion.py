"""``traincost`` subcommands of layer fusion (MONET section V-A): the CP-SAT solver, BatchNorm as a convolution's
epilogue, fusion strategies compared and their figures."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from traincost.cli.arguments import (
    Command,
    allocation,
    fusion_tiling,
    positive_int,
    positive_number,
    resident_fraction,
    resident_share,
    schedule_mode,
    schedule_plan,
    seed_value,
    workload_and_hardware,
    workload_tables,
)
from traincost.errors import ConfigError
from traincost.io import atomic_path

__all__ = ["fusion_commands"]


def _cmd_fuse(args: argparse.Namespace) -> None:
    import pandas as pd

    from traincost.cost.optable import op_table
    from traincost.hardware import load_hardware
    from traincost.optimize.fusion import FusionProblem, fusion_report, solve_fusion
    from traincost.workload import STEP_PHASES, Workload, write_table

    workload = Workload.read(args.ops, args.tensors)
    table = op_table(workload, phases=STEP_PHASES[args.step])
    problem = FusionProblem.build(
        table, load_hardware(args.hardware), resident_fraction=resident_share(args), tiling=args.fusion_tiling
    )
    result = solve_fusion(
        problem,
        max_length=args.max_length,
        type_limits=args.type_limits,
        objective=args.objective,
        time_limit_s=args.time_limit,
        seed=args.seed,
    )
    groups = [[int(table.op[i]) for i in members] for members in result.subgraphs if len(members) > 1]
    with atomic_path(args.out) as tmp:
        tmp.write_text(json.dumps({"groups": groups}, indent=1))
    row = fusion_report(
        result, max_length=args.max_length, type_limits=args.type_limits, objective=args.objective, nodes=len(table)
    )
    row |= {"workload": workload.meta.get("model", ""), "step": args.step}
    print(", ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()))
    write_table(pd.DataFrame([row]), args.report, workload.meta)


def _cmd_bn_epilogue(args: argparse.Namespace) -> None:
    from traincost.schedule.bn_epilogue import bn_epilogue, bn_layers
    from traincost.workload import Workload

    workload = Workload.read(args.ops, args.tensors)
    layers = bn_layers(workload)
    bn_epilogue(workload).write(args.out_ops, args.out_tensors)
    # a workload with no BatchNorm after a convolution (a transformer) is written unchanged
    print(f"{len(layers)} BatchNorm layers run as their convolution's epilogue; {args.out_ops}")


def _cmd_compare_fusion(args: argparse.Namespace) -> None:
    import pandas as pd

    from traincost.schedule import read_fused_groups
    from traincost.schedule.evaluate import evaluate_sweep
    from traincost.schedule.manual_fusion import read_manual_fusion
    from traincost.workload import Workload, write_table

    workload = Workload.read(args.ops, args.tensors)
    rows = []
    for entry in args.strategy:
        name, _, source = entry.partition("=")
        if not name:
            raise ConfigError(f"--strategy: expected NAME=FILE or NAME= (no fusion), got {entry!r}")
        match Path(source).suffix if source else "":
            case "":
                fused = ()
            case ".yaml" | ".yml":
                fused = read_manual_fusion(source, workload.ops)
            case ".json":
                fused = read_fused_groups(source)
            case other:
                raise ConfigError(f"--strategy {name}: {source!r} is neither a fusion YAML nor a groups JSON ({other})")
        result = evaluate_sweep(workload, args.hardware, grid={}, step=args.step, plan=schedule_plan(args, fused))
        rows.append(result.assign(strategy=name, fused_groups=len(fused)))
    table = pd.concat(rows, ignore_index=True)
    columns = ["strategy", "step", "fused_groups", "fusion_fits", "latency_cycles", "energy_pj", "offchip_bytes"]
    print(table[columns].to_string(index=False))
    write_table(table, args.out, {**workload.meta, "step": args.step, "mode": args.mode})


def _cmd_plot_fusion(args: argparse.Namespace) -> None:
    import pandas as pd

    from traincost.plots.fusion import plot_fusion_strategies
    from traincost.workload import read_table

    table = pd.concat([read_table(path)[0] for path in args.inputs], ignore_index=True)
    plot_fusion_strategies(table, [Path(p) for p in args.out], title=args.title)


def _cmd_plot_fused_graph(args: argparse.Namespace) -> None:
    from traincost.cost.optable import op_table
    from traincost.plots.fusion import plot_fused_graph
    from traincost.schedule import read_fused_groups
    from traincost.workload import STEP_PHASES, Workload

    workload = Workload.read(args.ops, args.tensors)
    table = op_table(workload, phases=STEP_PHASES[args.step])
    layers = workload.ops.set_index("op").loc[table.op, "layer"].astype(str).tolist()
    plot_fused_graph(table, layers, read_fused_groups(args.groups), [Path(p) for p in args.out], title=args.title)


def fusion_commands(command: Command) -> None:
    """Subcommands of the deployment searches (layer fusion) and their figures."""
    cmd = command(
        "fuse",
        _cmd_fuse,
        "layer-fusion solver: candidate subgraphs, exact cover by CP-SAT (MONET section V-A)",
        outputs=("--out", "--report"),
    )
    workload_tables(cmd)
    cmd.add_argument("--hardware", type=Path, required=True, help="hardware YAML (its defaults set the memory limits)")
    cmd.add_argument("--step", required=True, choices=["inference", "training"], help="forward ops only, or the whole step")
    cmd.add_argument("--max-length", type=positive_int, required=True, help="largest subgraph (nodes)")
    cmd.add_argument("--no-type-limits", dest="type_limits", action="store_false", help="drop the 3 conv / 2 GEMM limit")
    cmd.add_argument("--objective", default="subgraphs", choices=["subgraphs", "boundary_bytes"], help="what CP-SAT minimises")
    cmd.add_argument("--time-limit", type=positive_number, default=60.0, help="CP-SAT time limit (s)")
    cmd.add_argument("--seed", type=seed_value, default=0, help="CP-SAT random seed")
    resident_fraction(cmd)
    fusion_tiling(cmd)
    cmd.add_argument("--out", type=Path, required=True, help='output fused groups (JSON {"groups": [[op, ...], ...]})')
    cmd.add_argument("--report", type=Path, required=True, help="output solve report (Parquet, one row)")

    cmd = command(
        "bn-epilogue",
        _cmd_bn_epilogue,
        "the workload with every forward BatchNorm after a convolution run as that convolution's epilogue on the MAC core",
        outputs=("--out-ops", "--out-tensors"),
    )
    workload_tables(cmd)
    cmd.add_argument("--out-ops", type=Path, required=True, help="output ops.parquet")
    cmd.add_argument("--out-tensors", type=Path, required=True, help="output tensors.parquet")

    cmd = command(
        "compare-fusion",
        _cmd_compare_fusion,
        "latency and energy of one step under several fusion strategies",
        outputs=("--out",),
    )
    workload_and_hardware(cmd)
    cmd.add_argument("--step", required=True, choices=["inference", "training"], help="forward ops only, or the whole step")
    schedule_mode(cmd)
    cmd.add_argument(
        "--strategy", action="append", required=True, help="NAME=FILE (fusion YAML or groups JSON) or NAME= (no fusion); repeat"
    )
    resident_fraction(cmd)
    fusion_tiling(cmd)
    allocation(cmd)
    cmd.add_argument("--out", type=Path, required=True, help="output table (Parquet), one row per strategy")

    cmd = command("plot-fusion", _cmd_plot_fusion, "MONET Figure 10: latency and energy per fusion strategy", outputs=("--out",))
    cmd.add_argument("--in", dest="inputs", type=Path, nargs="+", required=True, help="compare-fusion tables (one per step)")
    cmd.add_argument("--title", default="", help="figure title")
    cmd.add_argument("--out", type=Path, nargs="+", required=True, help="output figure files (.png, .pdf)")

    cmd = command(
        "plot-fused-graph", _cmd_plot_fused_graph, "draw the op graph with each fused subgraph coloured", outputs=("--out",)
    )
    workload_tables(cmd)
    cmd.add_argument("--step", required=True, choices=["inference", "training"], help="which ops the groups were solved on")
    cmd.add_argument("--groups", type=Path, required=True, help="fused groups JSON from `traincost fuse`")
    cmd.add_argument("--title", default="", help="figure title")
    cmd.add_argument("--out", type=Path, nargs="+", required=True, help="output figure files (.png, .pdf)")
