"""``traincost``: the command line every Snakemake rule calls. One subcommand per stage.

Handlers import the library lazily, so `traincost --help` does not load torch or ONNX Runtime.

Every subcommand reads its inputs, writes its outputs atomically (a temporary file renamed into
place) and, on bad input, prints one line ``traincost: error: …`` naming the file, node or field,
and exits with status 2.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from traincost import __version__
from traincost.cli_ablations import ablation_commands
from traincost.cli_cost import cost_commands
from traincost.cli_hardware import hardware_commands
from traincost.cli_mtrain import mtrain_commands
from traincost.cli_summary import summary_commands
from traincost.cli_tiered import tiered_commands
from traincost.cli_types import (
    add_model_args,
    forward_graph,
    fraction,
    json_object,
    non_negative_number,
    positive_int,
    positive_number,
    unit_interval_open,
)
from traincost.errors import ConfigError, TraincostError, in_file, one_line
from traincost.frontend import ATTENTION_CHOICES
from traincost.io import atomic_path
from traincost.progress import set_quiet

if TYPE_CHECKING:
    import pandas as pd

    from traincost.frontend.optimizer import OptimizerSpec
    from traincost.optimize.checkpoint_search import CheckpointEvaluator
    from traincost.workload import Workload

__all__ = ["main"]

log = logging.getLogger("traincost")


def _optimizer_args(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("optimizer (torch.optim semantics)")
    group.add_argument("--optimizer", required=True, choices=["sgd", "sgd_momentum", "adam", "adamw"], help="optimizer kind")
    group.add_argument("--lr", type=positive_number, required=True, help="learning rate")
    group.add_argument("--momentum", type=unit_interval_open, default=0.9, help="momentum coefficient (sgd_momentum)")
    group.add_argument("--beta1", type=unit_interval_open, default=0.9, help="first-moment decay (adam, adamw)")
    group.add_argument("--beta2", type=unit_interval_open, default=0.999, help="second-moment decay (adam, adamw)")
    group.add_argument("--eps", type=positive_number, default=1e-8, help="denominator term (adam, adamw)")
    group.add_argument("--weight-decay", type=non_negative_number, default=0.0, help="L2 penalty (decoupled for adamw)")


def _optimizer_spec(args: argparse.Namespace) -> OptimizerSpec:
    from traincost.frontend.optimizer import OptimizerSpec

    return OptimizerSpec(
        kind=args.optimizer,
        lr=args.lr,
        momentum=args.momentum,
        beta1=args.beta1,
        beta2=args.beta2,
        eps=args.eps,
        weight_decay=args.weight_decay,
    )


def _cmd_models(args: argparse.Namespace) -> None:
    from traincost import models

    for name, arch in models.ARCHITECTURES.items():
        print(f"{name:16s} {arch.description}")


def _cmd_export(args: argparse.Namespace) -> None:
    from traincost.frontend.onnx_graph import save_onnx

    # inputs, labels, loss and parameters are recorded in the graph: no later stage needs the model's source
    model = forward_graph(args, batch=args.batch, seed=args.seed, options=args.options, inference=args.inference)
    save_onnx(model, args.out)
    log.info("wrote %s (%d nodes)", args.out, len(model.graph.node))


def _cmd_train_graph(args: argparse.Namespace) -> None:
    from traincost.frontend.onnx_graph import load_onnx, save_onnx
    from traincost.frontend.train_graph import build_train_step

    spec = _optimizer_spec(args)
    forward = load_onnx(args.input)
    with in_file(args.input):
        model = build_train_step(forward, spec, seed=args.seed)
    save_onnx(model, args.out)
    log.info("wrote %s (%d nodes)", args.out, len(model.graph.node))


def _cmd_decompose(args: argparse.Namespace) -> None:
    import pandas as pd

    from traincost.frontend.decompose import decompose, op_histogram
    from traincost.frontend.onnx_graph import load_onnx, save_onnx
    from traincost.workload import write_table

    before = load_onnx(args.input)
    with in_file(args.input):
        after = decompose(before, seed=args.seed)
    hist_before, hist_after = op_histogram(before), op_histogram(after)
    ops = sorted(set(hist_before) | set(hist_after), key=lambda op: (-hist_before.get(op, 0), op))
    table = pd.DataFrame(
        {"op_type": ops, "before": [hist_before.get(o, 0) for o in ops], "after": [hist_after.get(o, 0) for o in ops]}
    )
    print(table.to_string(index=False))
    print(f"nodes: {len(before.graph.node)} before, {len(after.graph.node)} after")
    if args.histogram:
        write_table(table, args.histogram, {"graph": after.graph.name})
    save_onnx(after, args.out)


def _cmd_verify_decomposition(args: argparse.Namespace) -> None:
    from traincost.frontend.onnx_graph import load_onnx
    from traincost.frontend.verification import DecompositionCheck, verify_decomposition
    from traincost.workload import write_table

    after = load_onnx(args.decomposed)
    if not args.verify:  # no rows: not verified
        check = DecompositionCheck.none()
        write_table(check.table(), args.out, {"graph": after.graph.name})
        print(f"{args.decomposed}: not verified (--no-verify); wrote a table with no rows")
        return
    before = load_onnx(args.input)
    check = verify_decomposition(before, after, seed=args.seed)
    print(check.summary())
    write_table(check.table(), args.out, {"graph": after.graph.name})


def _cmd_lower(args: argparse.Namespace) -> None:
    from traincost.frontend.fused_attention import attention_line, costed_attention
    from traincost.frontend.lower import lower
    from traincost.frontend.onnx_graph import load_onnx, model_meta

    model = load_onnx(args.input)
    with in_file(args.input):
        model, chosen = costed_attention(model, args.attention, seed=int(model_meta(model).get("seed", 0)))
        workload = lower(model, source=str(args.input))
    if chosen:
        print(attention_line(chosen, args.attention))
    workload.write(args.ops, args.tensors)
    summary = workload.ops.groupby("phase")[["macs", "elementwise_ops"]].sum()
    summary["ops"] = workload.ops.groupby("phase").size()
    print(summary.to_string())


def _cmd_memory(args: argparse.Namespace) -> None:
    from traincost.memory.liveness import memory_profile
    from traincost.workload import Workload, write_table

    workload = Workload.read(args.ops, args.tensors)
    profile = memory_profile(workload)
    table = profile.table()
    meta = {**workload.meta, "peak_bytes": str(profile.peak_bytes), "peak_op": str(profile.peak_op)}
    print(table.assign(at_peak_mb=table.at_peak_bytes / 1e6, total_mb=table.total_bytes / 1e6).to_string(index=False))
    print(f"peak {profile.peak_bytes / 1e6:.1f} MB at op {profile.peak_op} ({workload.ops.name.iloc[profile.peak_op]})")
    write_table(table, args.out, meta)


def _cmd_measure_memory(args: argparse.Namespace) -> None:
    import pandas as pd

    from traincost.memory.torch_measure import measure_torch_memory
    from traincost.workload import write_table

    spec = _optimizer_spec(args)
    measured = measure_torch_memory(args.model, batch=args.batch, optimizer=spec, seed=args.seed, options=args.options)
    table = pd.DataFrame({"category": list(measured), "bytes": list(measured.values())})
    print(table.to_string(index=False))
    write_table(table, args.out, {"model": args.model, "batch": str(args.batch), "optimizer": spec.kind})


def _cmd_compare_memory(args: argparse.Namespace) -> None:
    from traincost.memory.compare import compare_memory
    from traincost.workload import write_table

    if len(args.ours) != len(args.torch):
        raise ConfigError(
            f"compare-memory: {len(args.ours)} --ours files but {len(args.torch)} --torch files; give one of each per workload"
        )
    table = compare_memory(list(zip(args.ours, args.torch, strict=True)))
    print(table.to_string(index=False))
    if args.csv:
        with atomic_path(args.csv) as tmp:
            table.to_csv(tmp, index=False)
    write_table(table, args.out)


def _cmd_plot_memory(args: argparse.Namespace) -> None:
    from traincost.plots.memory import plot_memory_breakdown
    from traincost.workload import read_table

    table, _ = read_table(args.input)
    plot_memory_breakdown(table, [Path(p) for p in args.out])


def _cmd_sweep(args: argparse.Namespace) -> None:
    from traincost.hardware.sweep import MAX_CONFIGS
    from traincost.schedule import SchedulePlan
    from traincost.schedule.evaluate import evaluate_sweep
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
    plan = SchedulePlan.from_mode(
        args.mode, fused=fused, resident_fraction=args.resident_fraction, mapping_objective=args.mapping_objective
    )
    grid = args.grid
    table = evaluate_sweep(
        workload,
        args.hardware,
        grid=grid,
        step=args.step,
        plan=plan,
        shard_index=int(index),
        shard_count=int(count),
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


def _cmd_claims(args: argparse.Namespace) -> None:
    import pandas as pd

    from traincost.analysis.monet_claims import monet_hardware_claims, monet_section5_claims
    from traincost.workload import read_table, write_table

    tables = [read_table(path)[0] for path in (args.edge_inference, args.edge_training, args.gpt_inference, args.gpt_training)]
    claims = monet_hardware_claims(*tables)
    section5 = (args.fusion_compare or [], args.additivity, args.nsga_summary)
    if any(section5):
        if args.paper is None or not args.paper.is_file():
            raise ConfigError(f"--paper {args.paper}: no such file (MONET's numbers, data/paper/monet.csv, for section V)")
        fusion = [read_table(path)[0] for path in section5[0]]
        additivity, summary = (read_table(path)[0] if path else None for path in section5[1:])
        claims = pd.concat(
            [claims, monet_section5_claims(fusion, additivity, summary, pd.read_csv(args.paper))], ignore_index=True
        )
    with pd.option_context("display.width", 200, "display.max_colwidth", 70):
        print(claims[["figure", "claim", "value", "holds"]].to_string(index=False))
    print(f"{int(claims['holds'].sum())} of {len(claims)} claims hold on our model")
    with atomic_path(args.csv) as tmp:
        claims.to_csv(tmp, index=False)
    if args.out:
        write_table(claims, args.out)


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors on the one ``traincost: error:`` line every other error uses."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"traincost: error: {one_line(message)} (see `{self.prog} --help`)\n")


def _decompose_args(cmd: argparse.ArgumentParser) -> None:
    cmd.add_argument("--in", dest="input", type=Path, required=True, help="train_step.onnx")
    cmd.add_argument("--out", type=Path, required=True, help="output train_step.decomposed.onnx")
    cmd.add_argument("--histogram", type=Path, help="also write the op-type histogram before/after as Parquet")
    cmd.add_argument(
        "--seed", type=int, default=0, help="seed of the batch an op runs on when only running it tells its output shape"
    )


def _verify_decomposition_args(cmd: argparse.ArgumentParser) -> None:
    cmd.add_argument("--in", dest="input", type=Path, required=True, help="train_step.onnx, the graph decompose read")
    cmd.add_argument("--decomposed", type=Path, required=True, help="train_step.decomposed.onnx, what decompose wrote")
    cmd.add_argument(
        "--no-verify", dest="verify", action="store_false", help="check nothing: write the table with no rows (verify: false)"
    )
    cmd.add_argument("--seed", type=int, default=0, help="seed of the verification batch and optimizer states")
    cmd.add_argument("--out", type=Path, required=True, help="output verification.parquet: the check per op type and per tensor")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="traincost",
        description="Model what training a network costs on an accelerator (cycles, energy, memory, data moved): "
        "one subcommand per stage of the workflow. Every subcommand's --help gives its inputs and outputs with units.",
    )
    parser.add_argument("--version", action="version", version=f"traincost {__version__}")
    parser.add_argument("--quiet", action="store_true", help="log warnings and errors only, no progress bars")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, handler: Callable[[argparse.Namespace], None], help_text: str) -> argparse.ArgumentParser:
        cmd = sub.add_parser(name, help=help_text, description=help_text)
        cmd.set_defaults(handler=handler)
        return cmd

    command("models", _cmd_models, "list the model zoo")

    cmd = command(
        "export",
        _cmd_export,
        "the forward graph at a fixed batch, with its inputs, loss and parameters in its metadata: a zoo model or a user's "
        "torch module exported (training mode, checked against torch), or a user's ONNX file checked",
    )
    add_model_args(cmd, positional=False)
    cmd.add_argument("--batch", type=positive_int, required=True, help="batch size (samples)")
    cmd.add_argument(
        "--options", type=json_object, default="{}", help="builder options as a JSON object, e.g. '{\"dropout\": 0.0}'"
    )
    cmd.add_argument("--seed", type=int, default=0, help="seed of the initial weights and the check batch")
    cmd.add_argument(
        "--inference",
        action="store_true",
        help="a torch module's inference step instead: eval mode, each BatchNorm folded into its convolution, no dropout, "
        "no loss; every node forward, every tensor typed (for decompose and lower)",
    )
    cmd.add_argument("--out", type=Path, required=True, help="output model.onnx (inference_step.onnx with --inference)")

    cmd = command(
        "train-graph", _cmd_train_graph, "forward + backward (ONNX Runtime Training) + optimizer as primitive ops, in one graph"
    )
    cmd.add_argument("--in", dest="input", type=Path, required=True, help="model.onnx from `traincost export`")
    _optimizer_args(cmd)
    cmd.add_argument("--seed", type=int, default=0, help="seed of the batch used to record tensor shapes")
    cmd.add_argument("--out", type=Path, required=True, help="output train_step.onnx")

    _decompose_args(
        command(
            "decompose",
            _cmd_decompose,
            "replace composite gradient ops by primitive ONNX ops (verify-decomposition checks the result by execution)",
        )
    )
    _verify_decomposition_args(
        command(
            "verify-decomposition",
            _cmd_verify_decomposition,
            "check a decomposition by execution: node by node, and the loss, every gradient and every updated "
            "parameter end to end; exits 2 naming the node or tensor that differs by more than allowed",
        )
    )

    cmd = command("lower", _cmd_lower, "decomposed ONNX → Workload IR (ops.parquet, tensors.parquet)")
    cmd.add_argument("--in", dest="input", type=Path, required=True, help="train_step.decomposed.onnx")
    cmd.add_argument("--ops", type=Path, required=True, help="output ops table (Parquet)")
    cmd.add_argument("--tensors", type=Path, required=True, help="output tensors table (Parquet)")
    cmd.add_argument(
        "--attention",
        choices=ATTENTION_CHOICES,
        default="materialised",
        help="materialised (default: the probabilities saved, as ONNX Runtime's graph keeps them), fused (the "
        "log-sum-exp saved, the scores recomputed in the backward pass, checked by execution) or torch (as torch runs each)",
    )

    cmd = command("memory", _cmd_memory, "liveness analysis: peak memory (bytes) and its breakdown")
    _workload_tables(cmd)
    cmd.add_argument("--out", type=Path, required=True, help="output memory.parquet (bytes per category)")

    cmd = command("measure-memory", _cmd_measure_memory, "measure one torch training step's memory (bytes) on this CPU")
    cmd.add_argument("--model", required=True, help="zoo name")
    cmd.add_argument("--batch", type=positive_int, required=True, help="batch size (samples)")
    cmd.add_argument("--options", type=json_object, default="{}", help="builder options as a JSON object")
    cmd.add_argument("--seed", type=int, default=0, help="seed of the weights and the batch")
    _optimizer_args(cmd)
    cmd.add_argument("--out", type=Path, required=True, help="output torch_memory.parquet (bytes per category)")

    cmd = command("compare-memory", _cmd_compare_memory, "our memory accounting next to torch's, per workload and category")
    cmd.add_argument("--ours", type=Path, nargs="+", required=True, help="memory.parquet files")
    cmd.add_argument("--torch", type=Path, nargs="+", required=True, help="torch_memory.parquet files, same order")
    cmd.add_argument("--out", type=Path, required=True, help="output comparison (Parquet)")
    cmd.add_argument("--csv", type=Path, help="also write the comparison as CSV")

    cmd = command("plot-memory", _cmd_plot_memory, "MONET Figure 3: peak memory breakdown (GB)")
    cmd.add_argument("--in", dest="input", type=Path, required=True, help="comparison table from compare-memory")
    cmd.add_argument("--out", type=Path, nargs="+", required=True, help="output figure files (.png, .pdf)")

    groups = (
        _cost_commands,
        _optimize_commands,
        _checkpoint_commands,
        cost_commands,
        mtrain_commands,
        tiered_commands,
        hardware_commands,
    )
    for add in (*groups, summary_commands, ablation_commands):
        add(command)
    return parser


def _check_outputs(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Every output path can be written, before any work: not a directory, in a directory we may create and write.

    The outputs of a command are its options whose help starts "output" or "also write".
    """
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    outputs = [a for a in commands.choices[args.command]._actions if (a.help or "").startswith(("output", "also write"))]
    for action in outputs:
        value = getattr(args, action.dest)
        for path in value if isinstance(value, list) else [value]:
            if path is None:
                continue
            flag = action.option_strings[0]
            if path.is_dir():
                raise ConfigError(f"{flag} {path}: is a directory; expected a file path")
            parent = next(p for p in (path.absolute().parent, *path.absolute().parents) if p.exists())
            if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
                raise ConfigError(f"{flag} {path}: cannot write in {parent} (permission denied or not a directory)")


def _on_sigterm(signum: int, _frame: object) -> None:
    """SIGTERM (timeout, SLURM, Snakemake) unwinds like Ctrl-C: temporary files are removed on the way out."""
    raise SystemExit(128 + signum)


def _cmd_fuse(args: argparse.Namespace) -> None:
    import pandas as pd

    from traincost.cost.optable import op_table
    from traincost.hardware import load_hardware
    from traincost.optimize.fusion import FusionProblem, fusion_report, solve_fusion
    from traincost.workload import STEP_PHASES, Workload, write_table

    workload = Workload.read(args.ops, args.tensors)
    table = op_table(workload, phases=STEP_PHASES[args.step])
    problem = FusionProblem.build(table, load_hardware(args.hardware), resident_fraction=args.resident_fraction)
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

    from traincost.schedule import SchedulePlan, read_fused_groups
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
        plan = SchedulePlan.from_mode(args.mode, fused=fused, resident_fraction=args.resident_fraction)
        result = evaluate_sweep(workload, args.hardware, grid={}, step=args.step, plan=plan)
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
    plot_fused_graph(table, read_fused_groups(args.groups), [Path(p) for p in args.out], title=args.title)


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
        resident_fraction=args.resident_fraction,
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

    if (args.graph is None) != (args.recompute_check is None):
        raise ConfigError("checkpoint-study: --graph and --recompute-check go together (the step to check, the table to write)")
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
    if args.graph is not None:
        check = _check_recompute_rewrites(args.graph, study, milp, seed=args.seed)
        write_table(check, args.recompute_check, workload.meta)
    write_table(costs, args.costs, workload.meta)
    for table, path in ((study, args.additivity), (milp, args.milp)):
        if table is not None:
            write_table(table, path, workload.meta)


def _check_recompute_rewrites(graph: Path, study: pd.DataFrame | None, milp: pd.DataFrame | None, *, seed: int) -> pd.DataFrame:
    """Every rewrite of the study (AC10, AC01, AC11 and each MILP solution, those it ran) applied to ``graph`` and
    checked by execution."""
    from traincost.frontend.onnx_graph import load_onnx
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
    plot_checkpoint_front(nsga, milp, read_table(args.summary)[0].iloc[0], [Path(p) for p in args.out], title=args.title)


def _cost_commands(command: Callable[[str, Callable[[argparse.Namespace], None], str], argparse.ArgumentParser]) -> None:
    """Subcommands of the hardware cost model and the MONET hardware study."""
    cmd = command("sweep", _cmd_sweep, "latency, energy and memory of a workload on every configuration of a hardware grid")
    _workload_tables(cmd)
    cmd.add_argument("--hardware", type=Path, required=True, help="hardware template YAML (config/hardware/)")
    cmd.add_argument(
        "--grid", type=json_object, default="{}", help="values per template parameter as JSON, e.g. '{\"x_pes\": [1, 2, 4]}'"
    )
    cmd.add_argument("--step", required=True, choices=["inference", "training"], help="forward ops only, or the whole step")
    cmd.add_argument("--mode", default="pipeline_tensor", choices=["layer_by_layer", "pipeline", "tensor", "pipeline_tensor"])
    cmd.add_argument("--fusion", type=Path, help="manual fusion file (config/fusion/)")
    _resident_fraction(cmd)
    cmd.add_argument(
        "--mapping-objective",
        default="edp",
        choices=["latency", "energy", "edp"],
        help="what the per-op choice of loop order at a core's top memory minimises",
    )
    cmd.add_argument("--shard", default="0/1", help="INDEX/COUNT: evaluate one contiguous slice of the grid")
    cmd.add_argument("--max-configs", type=positive_int, help="refuse a grid of more configurations (default 1,000,000)")
    cmd.add_argument("--out", type=Path, required=True, help="output table (Parquet), one row per configuration")

    cmd = command("plot-sweep", _cmd_plot_sweep, "MONET Figures 1, 8, 9 from sweep tables (one per step)")
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
        "claims",
        _cmd_claims,
        "MONET's claims: section IV on the Edge TPU and FuseMax sweeps, section V on fusion, checkpointing",
    )
    cmd.add_argument("--edge-inference", type=Path, required=True, help="ResNet-18 on Edge TPU, inference sweep")
    cmd.add_argument("--edge-training", type=Path, required=True, help="ResNet-18 on Edge TPU, training sweep")
    cmd.add_argument("--gpt-inference", type=Path, required=True, help="GPT-2 on FuseMax, inference sweep")
    cmd.add_argument("--gpt-training", type=Path, required=True, help="GPT-2 on FuseMax, training sweep")
    cmd.add_argument("--fusion-compare", type=Path, nargs="+", help="section V, Figure 10: compare-fusion tables (one per step)")
    cmd.add_argument("--additivity", type=Path, help="section V, Figure 11: checkpoint-study's additivity table")
    cmd.add_argument("--nsga-summary", type=Path, help="section V, Figure 12: checkpoint-nsga's summary")
    cmd.add_argument("--paper", type=Path, help="MONET's numbers (data/paper/monet.csv), needed with any section V input")
    cmd.add_argument("--csv", type=Path, required=True, help="output claims.csv")
    cmd.add_argument("--out", type=Path, help="also write the claims as Parquet")

    cmd = command("concat", _cmd_concat, "concatenate tables with the same columns (sweep shards)")
    cmd.add_argument("--in", dest="inputs", type=Path, nargs="+", required=True, help="Parquet tables")
    cmd.add_argument("--out", type=Path, required=True, help="output Parquet table")


def _optimize_commands(command: Callable[[str, Callable[[argparse.Namespace], None], str], argparse.ArgumentParser]) -> None:
    """Subcommands of the deployment searches (layer fusion) and their figures."""
    cmd = command("fuse", _cmd_fuse, "layer-fusion solver: candidate subgraphs, exact cover by CP-SAT (MONET section V-A)")
    _workload_tables(cmd)
    cmd.add_argument("--hardware", type=Path, required=True, help="hardware YAML (its defaults set the memory limits)")
    cmd.add_argument("--step", required=True, choices=["inference", "training"], help="forward ops only, or the whole step")
    cmd.add_argument("--max-length", type=positive_int, required=True, help="largest subgraph (nodes)")
    cmd.add_argument("--no-type-limits", dest="type_limits", action="store_false", help="drop the 3 conv / 2 GEMM limit")
    cmd.add_argument("--objective", default="subgraphs", choices=["subgraphs", "boundary_bytes"], help="what CP-SAT minimises")
    cmd.add_argument("--time-limit", type=positive_number, default=60.0, help="CP-SAT time limit (s)")
    cmd.add_argument("--seed", type=int, default=0, help="CP-SAT random seed")
    _resident_fraction(cmd)
    cmd.add_argument("--out", type=Path, required=True, help='output fused groups (JSON {"groups": [[op, ...], ...]})')
    cmd.add_argument("--report", type=Path, required=True, help="output solve report (Parquet, one row)")

    cmd = command(
        "bn-epilogue",
        _cmd_bn_epilogue,
        "the workload with every forward BatchNorm after a convolution run as that convolution's epilogue on the MAC core",
    )
    _workload_tables(cmd)
    cmd.add_argument("--out-ops", type=Path, required=True, help="output ops.parquet")
    cmd.add_argument("--out-tensors", type=Path, required=True, help="output tensors.parquet")

    cmd = command("compare-fusion", _cmd_compare_fusion, "latency and energy of one step under several fusion strategies")
    _workload_and_hardware(cmd)
    cmd.add_argument("--step", required=True, choices=["inference", "training"], help="forward ops only, or the whole step")
    cmd.add_argument("--mode", default="pipeline_tensor", choices=["layer_by_layer", "pipeline", "tensor", "pipeline_tensor"])
    cmd.add_argument(
        "--strategy", action="append", required=True, help="NAME=FILE (fusion YAML or groups JSON) or NAME= (no fusion); repeat"
    )
    _resident_fraction(cmd)
    cmd.add_argument("--out", type=Path, required=True, help="output table (Parquet), one row per strategy")

    cmd = command("plot-fusion", _cmd_plot_fusion, "MONET Figure 10: latency and energy per fusion strategy")
    cmd.add_argument("--in", dest="inputs", type=Path, nargs="+", required=True, help="compare-fusion tables (one per step)")
    cmd.add_argument("--title", default="", help="figure title")
    cmd.add_argument("--out", type=Path, nargs="+", required=True, help="output figure files (.png, .pdf)")

    cmd = command("plot-fused-graph", _cmd_plot_fused_graph, "draw the op graph with each fused subgraph coloured")
    _workload_tables(cmd)
    cmd.add_argument("--step", required=True, choices=["inference", "training"], help="which ops the groups were solved on")
    cmd.add_argument("--groups", type=Path, required=True, help="fused groups JSON from `traincost fuse`")
    cmd.add_argument("--title", default="", help="figure title")
    cmd.add_argument("--out", type=Path, nargs="+", required=True, help="output figure files (.png, .pdf)")


def _workload_tables(cmd: argparse.ArgumentParser) -> None:
    cmd.add_argument("--ops", type=Path, required=True, help="ops.parquet")
    cmd.add_argument("--tensors", type=Path, required=True, help="tensors.parquet")


def _workload_and_hardware(cmd: argparse.ArgumentParser) -> None:
    _workload_tables(cmd)
    cmd.add_argument("--hardware", type=Path, required=True, help="hardware YAML (evaluated at its default configuration)")


# traincost.schedule.plan.DEFAULT_RESIDENT_FRACTION, written out so that `traincost --help` does not import the scheduler
_DEFAULT_RESIDENT_FRACTION = 0.5


def _resident_fraction(cmd: argparse.ArgumentParser) -> None:
    cmd.add_argument(
        "--resident-fraction",
        type=fraction,
        default=_DEFAULT_RESIDENT_FRACTION,
        help="share of a core's top memory that keeps tensors between ops and holds fused groups",
    )


def _checkpoint_inputs(cmd: argparse.ArgumentParser) -> None:
    """The arguments every checkpointing command takes: the step, the hardware and how it is scheduled."""
    _workload_and_hardware(cmd)
    cmd.add_argument("--mode", default="pipeline_tensor", choices=["layer_by_layer", "pipeline", "tensor", "pipeline_tensor"])
    cmd.add_argument("--fusion-length", type=positive_int, default=4, help="fusion solver limit applied after every rewrite")
    cmd.add_argument(
        "--fusion-scope",
        default="local",
        choices=["local", "full"],
        help="re-solve fusion after a rewrite where it changed the graph (local) or over the whole graph (full)",
    )
    _resident_fraction(cmd)


def _checkpoint_commands(command: Callable[[str, Callable[[argparse.Namespace], None], str], argparse.ArgumentParser]) -> None:
    """Subcommands of the activation-checkpointing study (MONET Figures 11 and 12)."""
    cmd = command("checkpoint-study", _cmd_checkpoint_study, "activation recomputation: AC00/10/01/11 and the MILP of equation 6")
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
        help="output with --graph: worst error per rewrite and output of the step, and its limit (Parquet)",
    )
    cmd.add_argument("--seed", type=int, default=0, help="seed of the batch the rewrites are checked on")

    cmd = command(
        "plot-checkpoint", _cmd_plot_checkpoint, "MONET Figure 11: energy and latency of AC10/AC01/AC11 relative to AC00"
    )
    cmd.add_argument("--in", dest="input", type=Path, required=True, help="additivity table from checkpoint-study")
    cmd.add_argument("--title", default="", help="figure title")
    cmd.add_argument("--out", type=Path, nargs="+", required=True, help="output figure files (.png, .pdf)")

    cmd = command("checkpoint-nsga", _cmd_checkpoint_nsga, "NSGA-II over recompute choices: latency, energy, activation memory")
    _checkpoint_inputs(cmd)
    cmd.add_argument("--population", type=positive_int, default=50, help="NSGA-II population")
    cmd.add_argument("--generations", type=positive_int, default=100, help="NSGA-II generations")
    cmd.add_argument("--seed", type=int, default=0, help="seed: the same seed gives the same front")
    cmd.add_argument("--workers", type=positive_int, default=1, help="processes evaluating each generation (same front)")
    cmd.add_argument(
        "--tolerance",
        type=non_negative_number,
        default=0.04,
        help="latency and energy increase allowed for the saving reported (fraction: 0.04 = 4 %%)",
    )
    cmd.add_argument("--out", type=Path, required=True, help="output: every evaluated choice, front flagged (Parquet)")
    cmd.add_argument("--summary", type=Path, required=True, help="output: the largest saving within the tolerance (Parquet)")

    cmd = command("plot-pareto", _cmd_plot_pareto, "MONET Figure 12: the NSGA-II front with the MILP solutions")
    cmd.add_argument("--nsga", type=Path, required=True, help="evaluations from checkpoint-nsga")
    cmd.add_argument("--milp", type=Path, required=True, help="MILP solutions from checkpoint-study")
    cmd.add_argument("--summary", type=Path, required=True, help="summary from checkpoint-nsga (the baseline)")
    cmd.add_argument("--title", default="", help="figure title")
    cmd.add_argument("--out", type=Path, nargs="+", required=True, help="output figure files (.png, .pdf)")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the traincost command line; returns the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING if args.quiet else logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    set_quiet(args.quiet)
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _on_sigterm) if main_thread else None
    try:
        _check_outputs(parser, args)
        args.handler(args)
    except TraincostError as err:
        print(f"traincost: error: {one_line(str(err))}", file=sys.stderr)
        return 2
    except OSError as err:  # disk full, permissions, a path that vanished: one line naming the path
        where = f"{err.filename}: " if err.filename else ""
        print(f"traincost: error: {one_line(f'{where}{err.strerror or err}')}", file=sys.stderr)
        return 2
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, previous)
    return 0


if __name__ == "__main__":
    sys.exit(main())
