"""``traincost`` subcommands of memory: the liveness analysis, torch's own measurement, the two side by side and
MONET's Figure 3."""

from __future__ import annotations

import argparse
from pathlib import Path

from traincost.cli.arguments import (
    Command,
    batch_size,
    json_object,
    optimizer_args,
    optimizer_spec,
    seed_value,
    workload_tables,
)
from traincost.errors import ConfigError
from traincost.io import atomic_path

__all__ = ["memory_commands"]


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

    spec = optimizer_spec(args)
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


def memory_commands(command: Command) -> None:
    """Subcommands of the memory study: liveness, torch's measurement, their comparison and figure."""
    cmd = command("memory", _cmd_memory, "liveness analysis: peak memory (bytes) and its breakdown", outputs=("--out",))
    workload_tables(cmd)
    cmd.add_argument("--out", type=Path, required=True, help="output memory.parquet (bytes per category)")

    cmd = command(
        "measure-memory", _cmd_measure_memory, "measure one torch training step's memory (bytes) on this CPU", outputs=("--out",)
    )
    cmd.add_argument("--model", required=True, help="zoo name")
    cmd.add_argument("--batch", type=batch_size, required=True, help="batch size (samples)")
    cmd.add_argument("--options", type=json_object, default="{}", help="builder options as a JSON object")
    cmd.add_argument("--seed", type=seed_value, default=0, help="seed of the weights and the batch")
    optimizer_args(cmd)
    cmd.add_argument("--out", type=Path, required=True, help="output torch_memory.parquet (bytes per category)")

    cmd = command(
        "compare-memory",
        _cmd_compare_memory,
        "our memory accounting next to torch's, per workload and category",
        outputs=("--out", "--csv"),
    )
    cmd.add_argument("--ours", type=Path, nargs="+", required=True, help="memory.parquet files")
    cmd.add_argument("--torch", type=Path, nargs="+", required=True, help="torch_memory.parquet files, same order")
    cmd.add_argument("--out", type=Path, required=True, help="output comparison (Parquet)")
    cmd.add_argument("--csv", type=Path, help="also write the comparison as CSV")

    cmd = command("plot-memory", _cmd_plot_memory, "MONET Figure 3: peak memory breakdown (GB)", outputs=("--out",))
    cmd.add_argument("--in", dest="input", type=Path, required=True, help="comparison table from compare-memory")
    cmd.add_argument("--out", type=Path, nargs="+", required=True, help="output figure files (.png, .pdf)")
