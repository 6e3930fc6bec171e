"""``traincost cost``: one command from a model (a zoo name, a user's torch module or ONNX file) to its training cost."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from traincost.cli.arguments import (
    Command,
    add_model_args,
    batch_size,
    forward_graph,
    positive_number,
    seed_value,
    torch_model,
)
from traincost.errors import ConfigError
from traincost.frontend import ATTENTION_CHOICES, FRONTENDS
from traincost.io import output_directory, same_file

__all__ = ["cost_commands"]


# the tables ``traincost cost`` writes into its --out-dir
_TABLES = ("ops", "tensors", "cost", "phases", "memory", "verification")


def _cmd_cost(args: argparse.Namespace) -> None:
    out: Path = args.out_dir
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out-dir {out}: is a file; expected a directory")
    inputs = [("--hardware", args.hardware)] + ([("model", Path(args.model))] if args.model.endswith(".onnx") else [])
    for table in _TABLES:
        for flag, given in inputs:
            if same_file(out / f"{table}.parquet", given):
                raise ConfigError(
                    f"--out-dir {out}: its {table}.parquet is the input {flag} {given}; writing it would replace the input"
                )
    with output_directory(out):
        if not os.access(out, os.W_OK | os.X_OK):
            raise ConfigError(f"--out-dir {out}: cannot write in it")
        _cost_into(args, out)


def _cost_into(args: argparse.Namespace, out: Path) -> None:
    """``traincost cost``'s work, its tables written into the directory ``out``."""
    import pandas as pd

    from traincost.api import cost_model
    from traincost.hardware import load_hardware
    from traincost.model_cost import energy_by_level
    from traincost.workload import write_table

    chosen = frontend(args)
    hardware = load_hardware(args.hardware)  # a bad hardware file is refused before the model is built or traced
    if chosen == "torch":
        model = torch_model(args, options={})
    else:
        model = forward_graph(args, batch=args.batch, seed=args.seed, options={})
    result = cost_model(
        model,
        hardware=hardware,
        batch=args.batch,
        optimizer=args.optimizer,
        lr=args.lr,
        seed=args.seed,
        verify=not args.no_verify,
        frontend=chosen,
        attention=args.attention,
    )
    name = result.workload.meta["model"]
    row = result.summary.iloc[0]
    with pd.option_context("display.width", 160, "display.float_format", "{:.4g}".format):
        print(f"{name}, batch {args.batch}, {args.optimizer}, on {args.hardware} ({frontend(args)} front end):")
        print(f"  {loss_line(result.workload.meta)}")
        energy_uj, peak_mb = row.energy_pj / 1e6, result.peak_bytes / 1e6
        print(f"  latency {row.latency_cycles:.4g} cycles, energy {energy_uj:.4g} uJ, peak memory {peak_mb:.4g} MB")
        print("\nper phase:")
        print(result.phases.assign(energy_uj=result.phases.energy_pj / 1e6).drop(columns="energy_pj").to_string(index=False))
        print("\nenergy by where it is spent (uJ):")
        print((energy_by_level(result.summary) / 1e6).to_string())
        print("\npeak memory by tensor category (MB):")
        memory = result.memory.assign(at_peak_mb=result.memory.at_peak_bytes / 1e6, total_mb=result.memory.total_bytes / 1e6)
        print(memory[["category", "at_peak_mb", "total_mb"]].to_string(index=False))
    meta = {**result.workload.meta, "hardware": str(args.hardware), "peak_bytes": str(result.peak_bytes)}
    result.workload.write(out / "ops.parquet", out / "tensors.parquet")
    write_table(result.summary, out / "cost.parquet", meta)
    write_table(result.phases, out / "phases.parquet", meta)
    write_table(result.memory, out / "memory.parquet", meta)
    write_table(result.verification.table(), out / "verification.parquet", meta)
    print(f"\n{result.verification.summary()}")
    if result.attention:
        from traincost.frontend.onnx.fused_attention import attention_line  # the ONNX front end's

        print(attention_line(result.attention, args.attention))
    print(f"wrote ops, tensors, cost, phases, memory and verification tables (Parquet) to {out}")


def loss_line(meta: dict[str, str]) -> str:
    """What the step's loss read, from a traced or exported step's metadata: the output entry and the loss."""
    from traincost.signature import MODEL_LOSS

    output = meta.get("output", "output")
    if meta["loss"] == MODEL_LOSS:
        return f"loss: the model's own (its output {output!r}, computed from the labels among its inputs)"
    read = "its output" if output == "output" else f"its output entry {output!r}"
    return f"loss: {meta['loss']} on {read}"


def frontend(args: argparse.Namespace) -> str:
    """The front end ``args`` ask for: ``--frontend``, else onnx for an ONNX file and torch for a torch module.

    Raises:
        ConfigError: ``--attention`` other than its default on the torch front end, which costs attention as torch's
            traced graph computes it.
    """
    chosen = args.frontend or ("onnx" if args.model.endswith(".onnx") else "torch")
    if chosen == "torch" and args.attention != "torch":
        raise ConfigError(f"--attention {args.attention}: for the ONNX front end (--frontend onnx); the torch front end "
                          "costs each attention as torch runs it")  # fmt: skip
    return chosen


def cost_commands(command: Command) -> None:
    """Add ``cost`` to the ``traincost`` parser."""
    cmd = command(
        "cost",
        _cmd_cost,
        "one command from a model to its training cost: the training step (traced by torch, or through ONNX and ONNX "
        "Runtime Training), its check by execution, lowering, memory and the schedule on one hardware description",
    )
    add_model_args(cmd, positional=True)
    cmd.add_argument("--hardware", type=Path, required=True, help="hardware YAML, costed at its defaults (config/hardware/)")
    cmd.add_argument("--batch", type=batch_size, default=1, help="batch size (samples; default 1)")
    cmd.add_argument("--optimizer", choices=["sgd", "sgd_momentum", "adam", "adamw"], default="sgd", help="default sgd")
    cmd.add_argument("--lr", type=positive_number, default=0.01, help="learning rate (default 0.01)")
    cmd.add_argument("--seed", type=seed_value, default=0, help="seed of the weights and the batch")
    cmd.add_argument("--no-verify", action="store_true", help="skip checking the decomposition by execution")
    cmd.add_argument(
        "--frontend",
        choices=FRONTENDS,
        help="who builds the training step: torch (torch traces forward, backward and optimizer; the default for a torch "
        "module) or onnx (ONNX Runtime Training's gradient graph, decomposed: needs the `ort` extra; the only one for an "
        "ONNX file)",
    )
    cmd.add_argument(
        "--attention",
        choices=ATTENTION_CHOICES,
        default="torch",
        help="attention costed fused (saves the log-sum-exp, recomputes the scores in the backward pass, as "
        "FlashAttention) or materialised (saves the probabilities); default torch: as torch runs each one",
    )
    cmd.add_argument("--out-dir", type=Path, required=True, help="directory for the tables it writes (created if missing)")
