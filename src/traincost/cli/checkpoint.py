"""``traincost`` subcommands of the activation-checkpointing study (MONET Figures 11 and 12): the additivity study
and the MILP of equation 6, NSGA-II over recompute choices, and their figures."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from traincost.cli.arguments import (
    Command,
    fraction,
    fusion_tiling,
    non_negative_number,
    positive_int,
    resident_fraction,
    resident_share,
    schedule_mode,
    seed_value,
    workload_and_hardware,
)
from traincost.errors import ConfigError, in_file

if TYPE_CHECKING:
    import pandas as pd

    from traincost.optimize.checkpoint_search import CheckpointEvaluator
    from traincost.plots.paper_values import PaperValue
    from traincost.workload import Workload

__all__ = ["checkpoint_commands"]


def _checkpoint_evaluator(args: argparse.Namespace) -> tuple[Workload, CheckpointEvaluator]:
    """The workload and the evaluator of recompute choices that checkpoint-study and checkpoint-nsga share."""
    from traincost.hardware import load_hardware
    from traincost.optimize.checkpoint_search import CheckpointEvaluator, activation_costs
    from traincost.workload import Workload

    workload = Workload.read(args.ops, args.tensors)
    hardware = load_hardware(args.hardware)
    costs = activation_costs(workload, word_bytes=hardware.word_bytes)
    evaluator = CheckpointEvaluator(
        workload,
        hardware,
        costs,
        fusion_length=args.fusion_length,
        mode=args.mode,
        fusion=args.fusion_scope,
        resident_fraction=resident_share(args),
        fusion_tiling=args.fusion_tiling,
    )
    return workload, evaluator


def _cmd_checkpoint_study(args: argparse.Namespace) -> None:
    import pandas as pd

    from traincost.optimize.checkpoint_search import (
        additivity_study,
        first_feature_maps,
        milp_sweep,
    )
    from traincost.workload import write_table

    if args.graph is not None and args.recompute_check is None:
        raise ConfigError("checkpoint-study: --graph needs --recompute-check (the table the check writes)")
    if args.additivity is None and args.milp is None:
        raise ConfigError("checkpoint-study: nothing to do; give --additivity (Figure 11), --milp (equation 6) or both")
    workload, evaluator = _checkpoint_evaluator(args)
    costs = evaluator.candidates
    if args.additivity is not None and len(costs) < 2:
        raise ConfigError(f"{args.ops}: {len(costs)} recomputable activations; the additivity study needs at least 2")
    study = None if args.additivity is None else additivity_study(evaluator, *first_feature_maps(costs))
    milp = None if args.milp is None else milp_sweep(evaluator, args.budgets)
    with pd.option_context("display.width", 200):
        if study is not None:
            columns = ["scenario", "relative_latency_cycles", "relative_energy_pj", "relative_activation_bytes"]
            print(study[columns].to_string(index=False))
        if milp is not None:
            columns = ["budget_fraction", "activation_bytes", "recomputed", "latency_cycles", "energy_pj"]
            print(milp[columns].to_string(index=False))
    if args.recompute_check is not None:
        check = _check_recompute_rewrites(args.graph, study, milp, seed=args.seed)
        write_table(check, args.recompute_check, workload.meta)
    write_table(costs, args.costs, workload.meta)
    for table, path in ((study, args.additivity), (milp, args.milp)):
        if table is not None:
            write_table(table, path, workload.meta)


def _check_recompute_rewrites(
    graph: Path | None, study: pd.DataFrame | None, milp: pd.DataFrame | None, *, seed: int
) -> pd.DataFrame:
    """Every rewrite of the study (AC10, AC01, AC11 and each MILP solution, those it ran) applied to ``graph`` and
    checked by execution; without a graph (a workload of the torch front end), the table with no rows."""
    if graph is None:
        from traincost.optimize.checkpoint import unchecked_recompute

        print("recompute rewrites not checked by execution: no ONNX graph (--graph) to run them on")
        return unchecked_recompute()
    from traincost.frontend.onnx.graph import load_onnx
    from traincost.optimize.checkpoint_check import verify_recompute

    rewrites = {}
    if study is not None:
        first, second = study["first"].iloc[0], study["second"].iloc[0]
        rewrites |= {"AC10": [first], "AC01": [second], "AC11": [first, second]}
    if milp is not None:
        rewrites |= {f"milp budget {row.budget_fraction:g}": list(row.dropped) for row in milp.itertuples()}
    with in_file(graph):
        check = verify_recompute(load_onnx(graph), rewrites, seed=seed)
    worst = check.loc[check["error"].idxmax()] if len(check) else None
    print(
        f"recompute rewrites checked by execution: {check['rewrite'].nunique()}, "
        + (f"worst error {worst['error']:.1e} at {worst['output']} ({worst['rewrite']})" if worst is not None else "none")
    )
    return check


def _cmd_plot_checkpoint(args: argparse.Namespace) -> None:
    from traincost.plots.checkpoint import plot_additivity
    from traincost.workload import read_table

    plot_additivity(read_table(args.input)[0], [Path(p) for p in args.out], title=args.title)


def _cmd_checkpoint_nsga(args: argparse.Namespace) -> None:
    import pandas as pd

    from traincost.optimize.checkpoint_nsga import largest_saving, run_nsga2
    from traincost.workload import write_table

    workload, evaluator = _checkpoint_evaluator(args)
    baseline = evaluator.evaluate([])
    table = run_nsga2(evaluator, population=args.population, generations=args.generations, seed=args.seed, workers=args.workers)
    best = largest_saving(table, baseline, tolerance=args.tolerance)
    print(f"{len(table)} choices evaluated, {int(table['pareto'].sum())} on the front")
    print(
        f"largest saving within +{100 * args.tolerance:g} % latency and energy: {best['saved_bytes'] / 1e6:.2f} MB "
        f"({100 * best['saved_fraction']:.1f} % of activation memory; latency {100 * best['latency_change']:+.2f} %, "
        f"energy {100 * best['energy_change']:+.2f} %, {best['recomputed']:g} activations recomputed)"
    )
    meta = {**workload.meta, "population": str(args.population), "generations": str(args.generations), "seed": str(args.seed)}
    write_table(pd.DataFrame([{**best, **{f"baseline_{k}": v for k, v in baseline.items()}}]), args.summary, meta)
    write_table(table, args.out, meta)


def _cmd_plot_pareto(args: argparse.Namespace) -> None:
    from traincost.plots.checkpoint import plot_checkpoint_front
    from traincost.workload import read_table

    nsga, milp = read_table(args.nsga)[0], read_table(args.milp)[0]
    paper = _paper_saving(args.claims) if args.claims else []
    summary = read_table(args.summary)[0].iloc[0]
    plot_checkpoint_front(nsga, milp, summary, [Path(p) for p in args.out], title=args.title, paper=paper)


def _paper_saving(claims: Path) -> list[PaperValue]:
    """Figure 12's number (the MB the paper saves within its tolerance) from MONET's claims.csv, ours beside it."""
    import pandas as pd

    from traincost.plots.paper_values import PaperValue

    if not claims.is_file():
        raise ConfigError(f"--claims {claims}: no such file (MONET's claims.csv)")
    rows = pd.read_csv(claims)
    rows = rows[rows["claim"] == "checkpoint_saving_within_tolerance"]
    return [
        PaperValue("activation memory saved within the tolerance (MB)", float(r.paper_value), float(r.value), str(r.verdict))
        for r in rows.itertuples()
    ]


def _cmd_design_space_pareto(args: argparse.Namespace) -> None:
    from traincost.plots.design_space import Axis, View, nsga_points, write_design_space_page
    from traincost.workload import read_table

    points = nsga_points(read_table(args.nsga)[0], read_table(args.summary)[0].iloc[0])
    saved, count = (
        Axis("saved_mb", "activation memory saved (MB)", log=False),
        Axis("recomputed", "tensors recomputed", log=False),
    )
    views = [
        View(
            "Figure 12, left: latency change against memory saved",
            saved,
            Axis("latency_change_percent", "latency change (%)", log=False),
            count,
        ),
        View(
            "Figure 12, right: energy change against memory saved",
            saved,
            Axis("energy_change_percent", "energy change (%)", log=False),
            count,
        ),
    ]
    write_design_space_page(points, args.out, title=args.title, parameters=["pareto", "recomputed"], views=views)


def _checkpoint_inputs(cmd: argparse.ArgumentParser) -> None:
    """The arguments every checkpointing command takes: the step, the hardware and how it is scheduled."""
    workload_and_hardware(cmd)
    schedule_mode(cmd)
    cmd.add_argument("--fusion-length", type=positive_int, default=4, help="fusion solver limit applied after every rewrite")
    cmd.add_argument(
        "--fusion-scope",
        default="local",
        choices=["local", "full"],
        help="re-solve fusion after a rewrite where it changed the graph (local) or over the whole graph (full)",
    )
    resident_fraction(cmd)
    fusion_tiling(cmd)


def checkpoint_commands(command: Command) -> None:
    """Subcommands of the activation-checkpointing study (MONET Figures 11 and 12)."""
    cmd = command(
        "checkpoint-study",
        _cmd_checkpoint_study,
        "activation recomputation: AC00/10/01/11 and the MILP of equation 6",
        outputs=("--costs", "--additivity", "--milp", "--recompute-check"),
    )
    _checkpoint_inputs(cmd)
    cmd.add_argument(
        "--budgets", type=fraction, nargs="+", default=[0.0, 0.25, 0.5, 0.75, 1.0], help="MILP budgets, fractions of all"
    )
    cmd.add_argument("--costs", type=Path, required=True, help="output per-activation bytes and recompute FLOPs (Parquet)")
    cmd.add_argument("--additivity", type=Path, help="output AC00/AC10/AC01/AC11 table, Figure 11 (Parquet)")
    cmd.add_argument("--milp", type=Path, help="output MILP solutions per budget, evaluated (Parquet)")
    cmd.add_argument(
        "--graph", type=Path, help="the decomposed training step the workload was lowered from: run every rewrite on it"
    )
    cmd.add_argument(
        "--recompute-check",
        type=Path,
        help="output: worst error per rewrite and output of the step, and its limit (Parquet); no rows without --graph",
    )
    cmd.add_argument("--seed", type=seed_value, default=0, help="seed of the batch the rewrites are checked on")

    cmd = command(
        "plot-checkpoint",
        _cmd_plot_checkpoint,
        "MONET Figure 11: energy and latency of AC10/AC01/AC11 relative to AC00",
        outputs=("--out",),
    )
    cmd.add_argument("--in", dest="input", type=Path, required=True, help="additivity table from checkpoint-study")
    cmd.add_argument("--title", default="", help="figure title")
    cmd.add_argument("--out", type=Path, nargs="+", required=True, help="output figure files (.png, .pdf)")

    cmd = command(
        "checkpoint-nsga",
        _cmd_checkpoint_nsga,
        "NSGA-II over recompute choices: latency, energy, activation memory",
        outputs=("--out", "--summary"),
    )
    _checkpoint_inputs(cmd)
    cmd.add_argument("--population", type=positive_int, default=50, help="NSGA-II population")
    cmd.add_argument("--generations", type=positive_int, default=100, help="NSGA-II generations")
    cmd.add_argument("--seed", type=seed_value, default=0, help="seed: the same seed gives the same front")
    cmd.add_argument("--workers", type=positive_int, default=1, help="processes evaluating each generation (same front)")
    cmd.add_argument(
        "--tolerance",
        type=non_negative_number,
        default=0.04,
        help="latency and energy increase allowed for the saving reported (fraction: 0.04 = 4 %%)",
    )
    cmd.add_argument("--out", type=Path, required=True, help="output: every evaluated choice, front flagged (Parquet)")
    cmd.add_argument("--summary", type=Path, required=True, help="output: the largest saving within the tolerance (Parquet)")

    cmd = command(
        "design-space-pareto",
        _cmd_design_space_pareto,
        "MONET Figure 12 as an interactive HTML page: every NSGA-II evaluation to hover, compare and filter",
        outputs=("--out",),
    )
    cmd.add_argument("--nsga", type=Path, required=True, help="evaluations from checkpoint-nsga")
    cmd.add_argument("--summary", type=Path, required=True, help="summary from checkpoint-nsga (the baseline)")
    cmd.add_argument("--claims", type=Path, help="MONET's claims.csv: the paper's saving drawn beside ours")
    cmd.add_argument("--title", default="", help="page title")
    cmd.add_argument("--out", type=Path, required=True, help="output page (.html, self-contained, no network needed)")

    cmd = command(
        "plot-pareto", _cmd_plot_pareto, "MONET Figure 12: the NSGA-II front with the MILP solutions", outputs=("--out",)
    )
    cmd.add_argument("--nsga", type=Path, required=True, help="evaluations from checkpoint-nsga")
    cmd.add_argument("--milp", type=Path, required=True, help="MILP solutions from checkpoint-study")
    cmd.add_argument("--summary", type=Path, required=True, help="summary from checkpoint-nsga (the baseline)")
    cmd.add_argument("--claims", type=Path, help="MONET's claims.csv: the paper's saving drawn beside ours")
    cmd.add_argument("--title", default="", help="figure title")
    cmd.add_argument("--out", type=Path, nargs="+", required=True, help="output figure files (.png, .pdf)")
