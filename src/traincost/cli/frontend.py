"""``traincost`` subcommands of the front end: the model zoo, a model's forward graph, its training step, the
decomposition into primitive ops (checked by execution) and its lowering to the Workload IR."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from traincost.cli.arguments import (
    Command,
    add_model_args,
    batch_size,
    forward_graph,
    json_object,
    optimizer_args,
    optimizer_spec,
    seed_value,
    torch_model,
)
from traincost.errors import in_file
from traincost.frontend import ATTENTION_CHOICES

if TYPE_CHECKING:
    from collections.abc import Callable

    from traincost.frontend.shared.step_check import DecompositionCheck
    from traincost.frontend.torch.step import TracedStep
    from traincost.workload import Workload

__all__ = ["frontend_commands"]

log = logging.getLogger("traincost")


def _cmd_models(args: argparse.Namespace) -> None:
    from traincost import models

    for name, arch in models.ARCHITECTURES.items():
        print(f"{name:16s} {arch.description}")


def _cmd_export(args: argparse.Namespace) -> None:
    from traincost.frontend.onnx.graph import save_onnx

    # inputs, labels, loss and parameters are recorded in the graph: no later stage needs the model's source
    model = forward_graph(args, batch=args.batch, seed=args.seed, options=args.options, inference=args.inference)
    save_onnx(model, args.out)
    log.info("wrote %s (%d nodes)", args.out, len(model.graph.node))


def _cmd_train_graph(args: argparse.Namespace) -> None:
    from traincost.frontend.onnx.graph import load_onnx, save_onnx
    from traincost.frontend.onnx.train_graph import build_train_step

    spec = optimizer_spec(args)
    forward = load_onnx(args.input)
    with in_file(args.input):
        model = build_train_step(forward, spec, seed=args.seed)
    save_onnx(model, args.out)
    log.info("wrote %s (%d nodes)", args.out, len(model.graph.node))


def _cmd_decompose(args: argparse.Namespace) -> None:
    import pandas as pd

    from traincost.frontend.onnx.decompose import decompose, op_histogram
    from traincost.frontend.onnx.graph import load_onnx, save_onnx
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
    from traincost.frontend.onnx.graph import load_onnx
    from traincost.frontend.onnx.verification import verify_decomposition
    from traincost.frontend.shared.step_check import DecompositionCheck
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
    from traincost.frontend.onnx.fused_attention import attention_line, costed_attention
    from traincost.frontend.onnx.graph import load_onnx, model_meta
    from traincost.frontend.onnx.lower import lower

    model = load_onnx(args.input)
    with in_file(args.input):
        model, chosen = costed_attention(model, args.attention, seed=int(model_meta(model).get("seed", 0)))
        workload = lower(model, source=str(args.input))
    if chosen:
        print(attention_line(chosen, args.attention))
    workload.write(args.ops, args.tensors)
    _print_phases(workload)


def _decompose_args(cmd: argparse.ArgumentParser) -> None:
    cmd.add_argument("--in", dest="input", type=Path, required=True, help="train_step.onnx")
    cmd.add_argument("--out", type=Path, required=True, help="output train_step.decomposed.onnx")
    cmd.add_argument("--histogram", type=Path, help="also write the op-type histogram before/after as Parquet")
    cmd.add_argument(
        "--seed", type=seed_value, default=0, help="seed of the batch an op runs on when only running it tells its output shape"
    )


def _verify_decomposition_args(cmd: argparse.ArgumentParser) -> None:
    cmd.add_argument("--in", dest="input", type=Path, required=True, help="train_step.onnx, the graph decompose read")
    cmd.add_argument("--decomposed", type=Path, required=True, help="train_step.decomposed.onnx, what decompose wrote")
    cmd.add_argument(
        "--no-verify", dest="verify", action="store_false", help="check nothing: write the table with no rows (verify: false)"
    )
    cmd.add_argument("--seed", type=seed_value, default=0, help="seed of the verification batch and optimizer states")
    cmd.add_argument("--out", type=Path, required=True, help="output verification.parquet: the check per op type and per tensor")


def _cmd_trace_step(args: argparse.Namespace) -> None:
    from traincost.frontend.torch.check import verify_step
    from traincost.frontend.torch.step import trace_step

    model = torch_model(args, options=args.options)
    step = trace_step(model, batch=args.batch, seed=args.seed, optimizer=optimizer_spec(args), options=args.options)
    _write_traced(args, step, verify_step)


def _cmd_trace_inference(args: argparse.Namespace) -> None:
    from traincost.frontend.torch.inference import trace_inference, verify_inference

    model = torch_model(args, options=args.options)
    step = trace_inference(model, batch=args.batch, seed=args.seed, options=args.options)
    folded = f"BatchNorms folded into their convolutions: {step.meta['batchnorm_folded']}"
    _write_traced(args, step, verify_inference, detail=folded)


def _write_traced(
    args: argparse.Namespace, step: TracedStep, verify: Callable[..., DecompositionCheck], *, detail: str = ""
) -> None:
    """A traced step checked by ``verify`` (unless ``--no-verify``), lowered and written: ``--ops``, ``--tensors`` and
    ``--verification``; its check, ``detail`` and its phases printed."""
    from traincost.frontend.shared.step_check import DecompositionCheck
    from traincost.frontend.torch.lower import lower_step
    from traincost.workload import write_table

    check = verify(step, seed=args.seed) if args.verify else DecompositionCheck.none()
    workload = lower_step(step)
    workload.write(args.ops, args.tensors)
    write_table(check.table(), args.verification, {"graph": step.meta["model"]})
    print(check.summary())
    if detail:
        print(detail)
    _print_phases(workload)


def _print_phases(workload: Workload) -> None:
    """Per phase: the lowered step's MACs, elementwise operations and ops."""
    summary = workload.ops.groupby("phase")[["macs", "elementwise_ops"]].sum()
    summary["ops"] = workload.ops.groupby("phase").size()
    print(summary.to_string())


def _traced_step_args(cmd: argparse.ArgumentParser, *, training: bool) -> None:
    """The arguments of ``trace-step`` (``training``: with the optimizer) and ``trace-inference``."""
    add_model_args(cmd, positional=False)
    cmd.add_argument("--batch", type=batch_size, required=True, help="batch size (samples)")
    cmd.add_argument("--options", type=json_object, default="{}", help="builder options of a zoo model, a JSON object")
    if training:
        optimizer_args(cmd)
    seeded = "the initial weights, the batch and the check's states" if training else "the initial weights and the batch"
    cmd.add_argument("--seed", type=seed_value, default=0, help=f"seed of {seeded}")
    cmd.add_argument("--no-verify", dest="verify", action="store_false", help="skip the check by execution")
    cmd.add_argument("--ops", type=Path, required=True, help="output ops table (Parquet)")
    cmd.add_argument("--tensors", type=Path, required=True, help="output tensors table (Parquet)")
    cmd.add_argument("--verification", type=Path, required=True, help="output verification.parquet: each tensor compared")


def frontend_commands(command: Command) -> None:
    """Subcommands of the front end: from a model to its Workload IR."""
    command("models", _cmd_models, "list the model zoo")

    cmd = command(
        "export",
        _cmd_export,
        "the forward graph at a fixed batch, with its inputs, loss and parameters in its metadata: a zoo model or a user's "
        "torch module exported (training mode, checked against torch), or a user's ONNX file checked",
        outputs=("--out",),
    )
    add_model_args(cmd, positional=False)
    cmd.add_argument("--batch", type=batch_size, required=True, help="batch size (samples)")
    cmd.add_argument(
        "--options", type=json_object, default="{}", help="builder options as a JSON object, e.g. '{\"dropout\": 0.0}'"
    )
    cmd.add_argument("--seed", type=seed_value, default=0, help="seed of the initial weights and the check batch")
    cmd.add_argument(
        "--inference",
        action="store_true",
        help="a torch module's inference step instead: eval mode, each BatchNorm folded into its convolution, no dropout, "
        "no loss; every node forward, every tensor typed (for decompose and lower)",
    )
    cmd.add_argument("--out", type=Path, required=True, help="output model.onnx (inference_step.onnx with --inference)")

    cmd = command(
        "train-graph",
        _cmd_train_graph,
        "forward + backward (ONNX Runtime Training) + optimizer as primitive ops, in one graph",
        outputs=("--out",),
    )
    cmd.add_argument("--in", dest="input", type=Path, required=True, help="model.onnx from `traincost export`")
    optimizer_args(cmd)
    cmd.add_argument("--seed", type=seed_value, default=0, help="seed of the batch used to record tensor shapes")
    cmd.add_argument("--out", type=Path, required=True, help="output train_step.onnx")

    _decompose_args(
        command(
            "decompose",
            _cmd_decompose,
            "replace composite gradient ops by primitive ONNX ops (verify-decomposition checks the result by execution)",
            outputs=("--out", "--histogram"),
        )
    )
    _verify_decomposition_args(
        command(
            "verify-decomposition",
            _cmd_verify_decomposition,
            "check a decomposition by execution: node by node, and the loss, every gradient and every updated "
            "parameter end to end; exits 2 naming the node or tensor that differs by more than allowed",
            outputs=("--out",),
        )
    )

    cmd = command(
        "trace-step",
        _cmd_trace_step,
        "the torch front end: torch traces one training step (forward, loss, backward, optimizer) → Workload IR "
        "(ops.parquet, tensors.parquet), checked by execution against eager torch and torch.optim",
        outputs=("--ops", "--tensors", "--verification"),
    )
    _traced_step_args(cmd, training=True)

    cmd = command(
        "trace-inference",
        _cmd_trace_inference,
        "the torch front end's inference step: torch traces the eval-mode forward, each BatchNorm after a convolution "
        "folded into it, no dropout, no loss → Workload IR, its output checked against eager torch (no ONNX Runtime)",
        outputs=("--ops", "--tensors", "--verification"),
    )
    _traced_step_args(cmd, training=False)

    cmd = command(
        "lower", _cmd_lower, "decomposed ONNX → Workload IR (ops.parquet, tensors.parquet)", outputs=("--ops", "--tensors")
    )
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
