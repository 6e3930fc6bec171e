"""``traincost`` subcommands of the multi-FPGA training study (MTrain, section VI)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from traincost.cli_types import positive_int, positive_number
from traincost.errors import ConfigError
from traincost.io import atomic_path

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["mtrain_commands"]

Command = Callable[[str, Callable[[argparse.Namespace], None], str], argparse.ArgumentParser]


def _inputs(args: argparse.Namespace):
    """The workload's training DAG, its label, the devices YAML, the chosen cluster (at ``--batch``) and
    the workload's metadata."""
    from dataclasses import replace

    from traincost.fpga.devices import load_fpga_catalog
    from traincost.fpga.training_dag import training_dag
    from traincost.workload import Workload

    catalog = load_fpga_catalog(args.devices)
    if args.cluster not in catalog.clusters:
        raise ConfigError(f"{args.devices}: no cluster {args.cluster!r} (known: {sorted(catalog.clusters)})")
    if args.batch < 0:
        raise ConfigError(f"--batch: {args.batch} must be positive (0: the cluster's)")
    cluster = catalog.clusters[args.cluster]
    cluster = replace(cluster, batch=args.batch or cluster.batch)
    workload = Workload.read(args.ops, args.tensors)
    label = args.label or str(workload.meta.get("model", ""))
    _apply_calibration(args.calibration if _calibrated(args) else None)
    _apply_ip_constants(args)
    return training_dag(workload), label, catalog, cluster, workload.meta


def _apply_ip_constants(args: argparse.Namespace) -> None:
    """The IP constants ``--assume`` sets for this run (an ablation); the baselines otherwise."""
    from traincost.analysis.ablations import assumption_value, parse_assume
    from traincost.fpga.ip_models import set_ip_constants

    assumed = parse_assume("mtrain", args.assume)
    dsp = int(assumption_value("mtrain", assumed, "fp32_mac_dsp"))
    efficiency = float(assumption_value("mtrain", assumed, "ip_dram_efficiency"))
    set_ip_constants(fp32_mac_dsp=dsp, dram_efficiency=efficiency)
    if assumed:
        print(f"IP constants: {dsp} DSP slices per FP32 MAC lane, {efficiency:g} of each board's DRAM bandwidth")


def _calibrated(args: argparse.Namespace) -> bool:
    """Whether ``--assume calibrated=false`` leaves the calibration out (the counts before calibration)."""
    from traincost.analysis.ablations import assumption_value, parse_assume

    return assumption_value("mtrain", parse_assume("mtrain", args.assume), "calibrated") == "true"


def _apply_calibration(path: Path | None) -> pd.DataFrame | None:
    """The IPs' DSP shares of ``mtrain-calibrate``'s table, put in place for this run (none: today's constants)."""
    from traincost.fpga.calibration import apply_dsp_shares
    from traincost.workload import read_table

    if path is None:
        return None
    table = read_table(path)[0]
    shares = apply_dsp_shares(table)
    print("IP DSP shares: " + ", ".join(f"{name} {share:.4f}" for name, share in shares.items()))
    return table


def _cmd_calibrate(args: argparse.Namespace) -> None:
    import pandas as pd

    from traincost.fpga import ip_models
    from traincost.fpga.calibration import CALIBRATION_COLUMNS, TARGET_COLUMNS, fit_dsp_share
    from traincost.fpga.devices import load_fpga_catalog
    from traincost.fpga.training_dag import training_dag
    from traincost.tables import require_columns
    from traincost.workload import Workload, write_table

    catalog = load_fpga_catalog(args.devices)
    targets = pd.read_csv(args.targets, keep_default_na=False, na_values=[""])
    require_columns(targets, TARGET_COLUMNS, str(args.targets))
    workload = Workload.read(args.ops, args.tensors)
    dag = training_dag(workload)
    label = args.label or str(workload.meta.get("model", ""))
    rows = []
    for _, target in targets.iterrows():
        name, board = str(target["ip"]), str(target["board"])
        if name not in ip_models.DSP_SHARE:
            raise ConfigError(f"{args.targets}: ip {name!r}, expected one of {', '.join(ip_models.DSP_SHARE)}")
        today = ip_models.DSP_SHARE[name]
        row = {"constant": "dsp_share", "ip": name, "value": today, "uncalibrated": today, "target": target["value"]}
        row |= {"board": board, "source": target["source"], "achieved": float("nan"), "workload": label, "batch": args.batch}
        if not args.calibrate:
            row["status"] = "not calibrated (calibrate: false)"
        elif pd.isna(target["value"]) or target["precision"] != "fp32" or target["metric"] != "training_gflops":
            row["status"] = f"no FP32 training throughput on its own board ({target['precision']}): constant kept"
        elif board not in catalog.devices:
            raise ConfigError(f"{args.targets}: board {board!r} of {name} is not a device of {args.devices}")
        else:
            share, achieved = fit_dsp_share(dag, name, catalog.devices[board], args.batch, float(target["value"]))
            row |= {"value": share, "achieved": achieved, "status": "fitted"}
        print(f"{name} on {board}: dsp_share {row['value']:.4f} ({row['status']})")
        rows.append(row)
    write_table(pd.DataFrame(rows, columns=list(CALIBRATION_COLUMNS)), args.out, {"workload": label})


def _cmd_study(args: argparse.Namespace) -> None:
    from traincost.fpga.study import study_rows
    from traincost.workload import write_table

    dag, label, catalog, cluster, meta = _inputs(args)
    table = study_rows(dag, cluster, args.bandwidths or catalog.p2p_bandwidths_gb_per_s, step=args.step, workers=args.workers)
    table.insert(0, "model", label)
    final = table[(table["method"] == "MTrain") & (table["step"] == 4)]
    for _, row in final.iterrows():
        gflops, ratio, bandwidth = row["throughput_gflops"], row["ratio"], row["bandwidth_gb_per_s"]
        print(f"{label} {args.cluster} {bandwidth:g} GB/s: MTrain {gflops:.1f} GFLOPS at ratio {ratio}")
    write_table(table, args.out, {**meta, "cluster": args.cluster})


def _cmd_table3(args: argparse.Namespace) -> None:
    import pandas as pd

    from traincost.fpga.study import table3_row
    from traincost.workload import write_table

    dag, label, _, cluster, meta = _inputs(args)
    row = table3_row(dag, cluster, bandwidth_gb_per_s=args.bandwidth, step=args.step, workers=args.workers)
    print(
        f"{label} {args.cluster}: DFS {row['dfs_gflops']:.1f} GFLOPS in {row['dfs_s']:.1f} s "
        f"over {row['dfs_ratios_mapped']} ratios; "
        f"Converting {row['converting_gflops']:.1f} GFLOPS in {row['converting_s']:.2f} s"
    )
    write_table(pd.DataFrame([{"model": label, **row}]), args.out, {**meta, "cluster": args.cluster})


def _cmd_scaling(args: argparse.Namespace) -> None:
    from traincost.fpga.study import scaling_rows
    from traincost.workload import write_table

    dag, label, catalog, cluster, meta = _inputs(args)
    table = scaling_rows(
        dag, cluster, args.pairs, args.bandwidths or catalog.p2p_bandwidths_gb_per_s, step=args.step, workers=args.workers
    )
    table.insert(0, "model", label)
    print(table[["fpgas", "bandwidth_gb_per_s", "throughput_gflops", "search_s"]].to_string(index=False))
    write_table(table, args.out, {**meta, "cluster": args.cluster})


def _concat(paths: list[Path]) -> pd.DataFrame:
    import pandas as pd

    from traincost.workload import read_table

    return pd.concat([read_table(p)[0] for p in paths], ignore_index=True)


def _cmd_report(args: argparse.Namespace) -> None:
    import pandas as pd

    from traincost.analysis.ablations import assumption_value, parse_assume
    from traincost.analysis.agreement import count_agreement
    from traincost.analysis.mtrain_compare import mtrain_comparison
    from traincost.plots.mtrain import table3_markdown
    from traincost.workload import write_table

    if not args.paper.is_file():
        raise ConfigError(f"{args.paper}: no such file (the paper's numbers)")
    study, table3, scaling = _concat(args.study), _concat(args.table3), _concat(args.scaling)
    assumed = parse_assume("mtrain", args.assume)
    rule = assumption_value("mtrain", assumed, "dfs_ratio_rule")
    calibration = _apply_calibration(args.calibration if _calibrated(args) else None)
    compare = mtrain_comparison(pd.read_csv(args.paper), study, table3, scaling, dfs_ratio_rule=rule, calibration=calibration)
    write_table(study, args.study_out)
    write_table(scaling, args.scaling_out)
    write_table(table3, args.table3_parquet)
    with atomic_path(args.table3_csv) as tmp:
        table3.to_csv(tmp, index=False, float_format="%.6g")
    with atomic_path(args.table3_md) as tmp:
        tmp.write_text(table3_markdown(table3))
    with atomic_path(args.compare) as tmp:
        compare.to_csv(tmp, index=False, float_format="%.6g")
    print(f"{count_agreement(compare).text()}; {args.compare}")


def _cmd_plot(args: argparse.Namespace) -> None:
    from traincost.plots.mtrain import plot_methods, plot_scaling, plot_steps
    from traincost.workload import read_table

    table = read_table(args.input)[0]
    outputs = [Path(p) for p in args.out]
    match args.figure:
        case "steps":
            plot_steps(table, outputs, title=args.title)
        case "methods":
            if not args.cluster:
                raise ConfigError("plot-mtrain --figure methods: --cluster is required")
            plot_methods(table, outputs, cluster=args.cluster, title=args.title)
        case "scaling":
            plot_scaling(table, outputs, search_bandwidth_gb_per_s=args.search_bandwidth, title=args.title)


def _search_args(cmd: argparse.ArgumentParser) -> None:
    cmd.add_argument("--ops", type=Path, required=True, help="ops.parquet of a batch-1 training step")
    cmd.add_argument("--tensors", type=Path, required=True, help="tensors.parquet")
    cmd.add_argument("--devices", type=Path, required=True, help="FPGA devices and clusters YAML (config/hardware/fpga/)")
    cmd.add_argument("--cluster", required=True, help="a cluster of the devices YAML")
    cmd.add_argument("--label", default="", help="model name in the output (default: the workload's model)")
    cmd.add_argument("--batch", type=int, default=0, help="samples per step (default: the cluster's)")
    cmd.add_argument("--step", type=positive_int, default=1, help="samples moved per re-partition move and the DFS's ratio grid")
    cmd.add_argument("--workers", type=positive_int, default=1, help="processes mapping candidate ratios (same results)")
    cmd.add_argument("--calibration", type=Path, help="mtrain-calibrate's table: the IPs' fitted DSP shares (default: today's)")
    cmd.add_argument(
        "--assume",
        nargs="+",
        metavar="NAME=VALUE",
        help="an ablation: calibrated=false (today's constants), fp32_mac_dsp=3, ip_dram_efficiency=0.75|0.5",
    )


def mtrain_commands(command: Command) -> None:
    """Subcommands of the multi-FPGA training study (MTrain)."""
    cmd = command("mtrain-study", _cmd_study, "MTrain steps 1-4, Alpa, HAP and single FPGAs per P2P bandwidth (Figures 8-11)")
    _search_args(cmd)
    cmd.add_argument("--bandwidths", type=float, nargs="+", help="P2P bandwidths in GB/s (default: the YAML's sweep)")
    cmd.add_argument("--out", type=Path, required=True, help="output: one row per bandwidth and method (Parquet)")

    cmd = command("mtrain-table3", _cmd_table3, "MTrain-Converting against the DFS optimum over ratios (Table III)")
    _search_args(cmd)
    cmd.add_argument("--bandwidth", type=positive_number, default=3.0, help="P2P bandwidth in GB/s (Table III: 3)")
    cmd.add_argument("--out", type=Path, required=True, help="output: one row, throughput (GFLOPS) and search time (s) (Parquet)")

    cmd = command("mtrain-scaling", _cmd_scaling, "MTrain on 1 to N copies of a cluster's devices (Figure 12)")
    _search_args(cmd)
    cmd.add_argument("--pairs", type=positive_int, nargs="+", required=True, help="copies of the cluster's devices, e.g. 1 2 3 4")
    cmd.add_argument("--bandwidths", type=float, nargs="+", help="P2P bandwidths in GB/s (default: the YAML's sweep)")
    cmd.add_argument("--out", type=Path, required=True, help="output: one row per size and bandwidth (Parquet)")

    cmd = command(
        "mtrain-calibrate",
        _cmd_calibrate,
        "fit each training IP's DSP share to the throughput its own paper reports on its own board (never to MTrain's)",
    )
    cmd.add_argument("--ops", type=Path, required=True, help="ops.parquet of the batch-1 training step the IPs are fitted on")
    cmd.add_argument("--tensors", type=Path, required=True, help="tensors.parquet")
    cmd.add_argument("--devices", type=Path, required=True, help="FPGA devices and clusters YAML (config/hardware/fpga/)")
    cmd.add_argument("--targets", type=Path, required=True, help="the IPs' own published throughputs (data/paper/mtrain_ips.csv)")
    cmd.add_argument("--batch", type=positive_int, required=True, help="samples per training step of the fit")
    cmd.add_argument("--label", default="", help="the workload's name in the table (default: its model)")
    cmd.add_argument(
        "--calibrate", action=argparse.BooleanOptionalAction, default=True, help="fit (default) or keep today's constants"
    )
    cmd.add_argument("--out", type=Path, required=True, help="output: results/mtrain/calibration.parquet")

    cmd = command(
        "mtrain-report", _cmd_report, "MTrain tables: Table III (CSV, Markdown) and ours beside the paper (compare.csv)"
    )
    cmd.add_argument("--study", type=Path, nargs="+", required=True, help="mtrain-study tables")
    cmd.add_argument("--table3", type=Path, nargs="+", required=True, help="mtrain-table3 rows")
    cmd.add_argument("--scaling", type=Path, nargs="+", required=True, help="mtrain-scaling tables")
    cmd.add_argument("--paper", type=Path, required=True, help="the paper's numbers (data/paper/mtrain.csv)")
    cmd.add_argument("--study-out", type=Path, required=True, help="output: every study table in one (Parquet)")
    cmd.add_argument("--scaling-out", type=Path, required=True, help="output: every scaling table in one (Parquet)")
    cmd.add_argument("--table3-parquet", type=Path, required=True, help="output: Table III (Parquet)")
    cmd.add_argument("--table3-csv", type=Path, required=True, help="output: Table III (CSV)")
    cmd.add_argument("--table3-md", type=Path, required=True, help="output: Table III rendered (Markdown)")
    cmd.add_argument("--compare", type=Path, required=True, help="output: paper vs ours with checks (CSV)")
    cmd.add_argument("--calibration", type=Path, help="mtrain-calibrate's table: its fitted targets become 'calibrated' rows")
    cmd.add_argument(
        "--assume",
        nargs="+",
        metavar="NAME=VALUE",
        help="change a modelling assumption (an ablation): calibrated=true|false, dfs_ratio_rule=all|positive|feasible",
    )

    cmd = command("plot-mtrain", _cmd_plot, "MTrain Figure 8 (steps), 9-11 (methods, one cluster) or 12 (scaling)")
    cmd.add_argument("--figure", required=True, choices=["steps", "methods", "scaling"])
    cmd.add_argument("--in", dest="input", type=Path, required=True, help="the study table (steps, methods) or scaling table")
    cmd.add_argument("--cluster", default="", help="the cluster of a methods figure")
    cmd.add_argument(
        "--search-bandwidth", type=positive_number, default=3.0, help="bandwidth (GB/s) of the scaling figure's search times"
    )
    cmd.add_argument("--title", default="", help="figure title")
    cmd.add_argument("--out", type=Path, nargs="+", required=True, help="output figure files (.png, .pdf)")
