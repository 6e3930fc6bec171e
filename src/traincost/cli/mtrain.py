"""``traincost`` subcommands of the multi-FPGA training study (MTrain, section VI)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from traincost.cli.arguments import Command, positive_int, positive_number
from traincost.errors import ConfigError
from traincost.io import atomic_path

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["mtrain_commands"]


def _inputs(args: argparse.Namespace):
    """The workload's training DAG, its label, the devices YAML, the chosen cluster (at ``--batch``), the workload's
    metadata and the IPs' constants."""
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
    clock_scale = _clock_scale(args)
    devices = tuple(replace(d, clock_mhz=d.clock_mhz * clock_scale) for d in cluster.devices)
    cluster = replace(cluster, batch=args.batch or cluster.batch, devices=devices)
    specs = _ip_specs(args)
    workload = Workload.read(args.ops, args.tensors)
    label = args.label or str(workload.meta.get("model", ""))
    _check_vgg16_input(args, label, str(workload.meta.get("model", "")))
    return training_dag(workload), label, catalog, cluster, workload.meta, specs


_VGG16_MODELS = {"cifar": "vgg16_bn_cifar", "224": "vgg16_bn"}
"""The zoo model MTrain's VGG-16 is under each value of the vgg16_input assumption."""


def _check_vgg16_input(args: argparse.Namespace, label: str, model: str) -> None:
    """Under ``--assume vgg16_input=...`` the workflow hands VGG-16's study the workload of that input; a workload
    of the other input is refused rather than run under the wrong name."""
    from traincost.analysis.ablations import parse_assume

    assumed = parse_assume("mtrain", args.assume)
    if label == "vgg16" and "vgg16_input" in assumed and model != _VGG16_MODELS[assumed["vgg16_input"]]:
        raise ConfigError(
            f"{args.ops}: vgg16_input={assumed['vgg16_input']} expects a workload of {_VGG16_MODELS[assumed['vgg16_input']]}, "
            f"this one is of {model or 'an unnamed model'}"
        )


def _clock_scale(args: argparse.Namespace) -> float:
    """Every FPGA's and IP's clock over its stated one under ``--assume fabric_clock_mhz=...`` (1 without it)."""
    from traincost.analysis.ablations import ASSUMPTIONS, assumption_value, parse_assume

    baseline = next(a.baseline for a in ASSUMPTIONS["mtrain"] if a.name == "fabric_clock_mhz")
    return float(assumption_value("mtrain", parse_assume("mtrain", args.assume), "fabric_clock_mhz")) / float(baseline)


def _ip_specs(args: argparse.Namespace):
    """The IPs' constants of ``--ips``, with ``--calibration``'s fitted clocks (not under ``--assume calibrated=false``)
    and the constants ``--assume`` changes for this run (an ablation)."""
    from dataclasses import replace

    from traincost.analysis.ablations import assumption_value, parse_assume
    from traincost.fpga.calibration import apply_calibration
    from traincost.fpga.ip_specs import load_ip_specs
    from traincost.workload import read_table

    specs = load_ip_specs(args.ips)
    if args.calibration is not None and _calibrated(args):
        specs = apply_calibration(read_table(args.calibration)[0], specs)
    assumed = parse_assume("mtrain", args.assume)
    if "fp32_mac_dsp" in assumed:
        specs = {n: replace(s, mac_dsp=int(assumption_value("mtrain", assumed, "fp32_mac_dsp"))) for n, s in specs.items()}
    if "darkfpga_batch_lanes" in assumed:
        lanes = int(assumption_value("mtrain", assumed, "darkfpga_batch_lanes"))
        dark = specs["DarkFPGA"]
        specs = {**specs, "DarkFPGA": replace(dark, model=replace(dark.model, max_batch_lanes=lanes))}
    if "darkfpga_sized_for" in assumed:
        dark = specs["DarkFPGA"]
        specs = {**specs, "DarkFPGA": replace(dark, model=replace(dark.model, sized_for=assumed["darkfpga_sized_for"]))}
    if "fabric_clock_mhz" in assumed:
        scale = _clock_scale(args)
        specs = {n: replace(s, clock_mhz=s.clock_mhz * scale) if s.clock_mhz else s for n, s in specs.items()}
    if "ip_dram_efficiency" in assumed:
        efficiency = float(assumption_value("mtrain", assumed, "ip_dram_efficiency"))
        specs = {n: replace(s, dram_efficiency=efficiency) for n, s in specs.items()}
    for spec in specs.values():
        clock = f"{spec.clock_mhz:g} MHz" if spec.clock_mhz else "the device's clock"
        print(f"{spec.name}: {clock}, {spec.mac_dsp} DSP slices per FP32 MAC lane, {spec.dram_efficiency:g} of DRAM bandwidth")
    return specs


def _calibrated(args: argparse.Namespace) -> bool:
    """Whether ``--assume calibrated=false`` leaves the calibration out (the counts before calibration)."""
    from traincost.analysis.ablations import assumption_value, parse_assume

    return assumption_value("mtrain", parse_assume("mtrain", args.assume), "calibrated") == "true"


def _cmd_calibrate(args: argparse.Namespace) -> None:
    import pandas as pd

    from traincost.fpga.calibration import TARGET_COLUMNS, calibration_table
    from traincost.fpga.devices import load_fpga_catalog
    from traincost.fpga.ip_specs import load_ip_specs
    from traincost.fpga.training_dag import training_dag
    from traincost.tables import require_columns
    from traincost.workload import Workload, write_table

    catalog = load_fpga_catalog(args.devices)
    specs = load_ip_specs(args.ips)
    targets = pd.read_csv(args.targets, keep_default_na=False, na_values=[""])
    require_columns(targets, TARGET_COLUMNS, str(args.targets))
    workload = Workload.read(args.ops, args.tensors)
    label = args.label or str(workload.meta.get("model", ""))
    network = str(workload.meta.get("model", ""))
    table = calibration_table(
        training_dag(workload), specs, catalog, targets, label=label, network=network, calibrate=args.calibrate
    )
    for _, row in table.iterrows():
        print(f"{row['ip']}: {row['constant']} {row['value']:.4g} ({row['status']})")
    print(f"chosen without the fit: {table['chosen_uncalibrated'].iloc[0]}")
    print(f"chosen with the fit:    {table['chosen_calibrated'].iloc[0]}")
    write_table(table, args.out, {"workload": label})


def _cmd_study(args: argparse.Namespace) -> None:
    from traincost.fpga.study import study_rows
    from traincost.workload import write_table

    dag, label, catalog, cluster, meta, specs = _inputs(args)
    bandwidths = args.bandwidths or catalog.p2p_bandwidths_gb_per_s
    table = study_rows(dag, cluster, bandwidths, specs, step=args.step, workers=args.workers)
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

    dag, label, _, cluster, meta, specs = _inputs(args)
    row = table3_row(dag, cluster, specs, bandwidth_gb_per_s=args.bandwidth, step=args.step, workers=args.workers)
    if not row["fits"]:
        print(f"{label} {args.cluster}: does not fit: {row['note']}")
    else:
        print(
            f"{label} {args.cluster}: DFS {row['dfs_gflops']:.1f} GFLOPS in {row['dfs_s']:.1f} s "
            f"over {row['dfs_ratios_mapped']} ratios; "
            f"Converting {row['converting_gflops']:.1f} GFLOPS in {row['converting_s']:.2f} s"
        )
    write_table(pd.DataFrame([{"model": label, **row}]), args.out, {**meta, "cluster": args.cluster})


def _cmd_scaling(args: argparse.Namespace) -> None:
    from traincost.fpga.study import scaling_rows
    from traincost.tables import require_columns
    from traincost.workload import read_table, write_table

    dag, label, catalog, cluster, meta, specs = _inputs(args)
    bandwidths = args.bandwidths or catalog.p2p_bandwidths_gb_per_s
    fewer = None
    if args.fewer_fpgas is not None:
        fewer = read_table(args.fewer_fpgas)[0]
        require_columns(fewer, ("fpgas", "bandwidth_gb_per_s", "ratio", "assign"), str(args.fewer_fpgas))
        if fewer.empty or fewer["fpgas"].max() >= min(args.pairs) * len(cluster.devices):
            raise ConfigError(
                f"{args.fewer_fpgas}: expected the answers of a cluster smaller than {min(args.pairs)} x {args.cluster}"
            )
    table = scaling_rows(dag, cluster, args.pairs, bandwidths, specs, step=args.step, workers=args.workers, fewer_fpgas=fewer)
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
    from traincost.analysis.mtrain_split import split_table
    from traincost.analysis.paper_claims import read_paper_claims
    from traincost.plots.mtrain import table3_markdown
    from traincost.workload import read_table, write_table

    if not args.paper.is_file():
        raise ConfigError(f"{args.paper}: no such file (the paper's numbers)")
    study, table3, scaling = _concat(args.study), _concat(args.table3), _concat(args.scaling)
    assumed = parse_assume("mtrain", args.assume)
    rule = assumption_value("mtrain", assumed, "dfs_ratio_rule")
    calibration = read_table(args.calibration)[0] if args.calibration is not None and _calibrated(args) else None
    claims = read_paper_claims(args.claims) if args.claims else None
    paper = pd.read_csv(args.paper)
    constants = pd.read_csv(args.constants) if args.constants is not None else None
    compare = mtrain_comparison(
        paper, study, table3, scaling, claims=claims, dfs_ratio_rule=rule, calibration=calibration, constants=constants
    )
    write_table(study, args.study_out)
    write_table(scaling, args.scaling_out)
    write_table(table3, args.table3_parquet)
    with atomic_path(args.table3_csv) as tmp:
        table3.to_csv(tmp, index=False, float_format="%.6g")
    with atomic_path(args.table3_md) as tmp:
        tmp.write_text(table3_markdown(table3, paper.fillna({"model": "", "cluster": ""})))
    with atomic_path(args.compare) as tmp:
        compare.to_csv(tmp, index=False, float_format="%.6g")
    if args.split is not None:
        with atomic_path(args.split) as tmp:
            split_table(study).to_csv(tmp, index=False, float_format="%.6g")
    print(f"{count_agreement(compare).text()}; {args.compare}")


def _cmd_constants(args: argparse.Namespace) -> None:
    import pandas as pd

    from traincost.analysis.ablations import parse_assume
    from traincost.analysis.mtrain_constants import UNSTATED, constants_markdown, constants_table

    variants = {}
    for setting, *paths in args.variant or []:
        (name, value), *_ = parse_assume("mtrain", [setting], where="--variant").items()
        if name not in UNSTATED:
            raise ConfigError(f"--variant {setting}: not a constant the paper leaves unstated ({', '.join(UNSTATED)})")
        if not paths:
            raise ConfigError(f"--variant {setting}: expected its Table III tables after it")
        variants[f"{name}={value}"] = _concat([Path(p) for p in paths])
    table = constants_table(pd.read_csv(args.paper), _concat(args.baseline), variants)
    with atomic_path(args.csv) as tmp:
        table.to_csv(tmp, index=False, float_format="%.6g")
    with atomic_path(args.md) as tmp:
        tmp.write_text(constants_markdown(table))
    print(f"Table III under {len(variants) + 1} settings: {args.md}")


def _cmd_plot(args: argparse.Namespace) -> None:
    from traincost.analysis.agreement import STUDIES, read_comparison
    from traincost.plots.mtrain import plot_methods, plot_scaling, plot_steps
    from traincost.plots.paper_values import paper_values
    from traincost.workload import read_table

    table = read_table(args.input)[0]
    outputs = [Path(p) for p in args.out]
    paper = []
    if args.compare:
        compare = read_comparison(args.compare, STUDIES["mtrain"])
        if args.figure == "methods":  # one cluster's figure: its rows and the paper's range over every cluster
            compare = compare[compare["cluster"].isin([args.cluster, ""])]
        paper = paper_values(compare, _PAPER_ROWS[args.figure])
    match args.figure:
        case "steps":
            plot_steps(table, outputs, title=args.title, paper=paper)
        case "methods":
            if not args.cluster:
                raise ConfigError("plot-mtrain --figure methods: --cluster is required")
            plot_methods(table, outputs, cluster=args.cluster, title=args.title, paper=paper)
        case "scaling":
            plot_scaling(table, outputs, search_bandwidth_gb_per_s=args.search_bandwidth, title=args.title, paper=paper)


_PAPER_ROWS = {
    "steps": ["step4_vs_step1", "bandwidth_gain_0.125_to_15", "max_throughput_shown", "throughput_shown"],
    "methods": ["speedup_vs_hap_min", "speedup_vs_hap_max"],
    "scaling": ["search_time_8_fpgas"],
}
"""Per figure, the claims of the comparison whose paper numbers it draws (Figures 8, 9-11, 12)."""


def _search_args(cmd: argparse.ArgumentParser) -> None:
    cmd.add_argument("--ops", type=Path, required=True, help="ops.parquet of a batch-1 training step")
    cmd.add_argument("--tensors", type=Path, required=True, help="tensors.parquet")
    cmd.add_argument("--devices", type=Path, required=True, help="FPGA devices and clusters YAML (config/hardware/fpga/)")
    cmd.add_argument(
        "--ips", type=Path, required=True, help="the training IPs' constants with sources (data/fpga/training_ips.yaml)"
    )
    cmd.add_argument("--cluster", required=True, help="a cluster of the devices YAML")
    cmd.add_argument("--label", default="", help="model name in the output (default: the workload's model)")
    cmd.add_argument("--batch", type=int, default=0, help="samples per step (default: the cluster's)")
    cmd.add_argument("--step", type=positive_int, default=1, help="samples moved per re-partition move and the DFS's ratio grid")
    cmd.add_argument("--workers", type=positive_int, default=1, help="processes mapping candidate ratios (same results)")
    cmd.add_argument("--calibration", type=Path, help="mtrain-calibrate's table: the IPs' fitted clocks (default: --ips's)")
    cmd.add_argument(
        "--assume",
        nargs="+",
        metavar="NAME=VALUE",
        help="an ablation: calibrated=false (today's constants), fp32_mac_dsp=3, fabric_clock_mhz=300, vgg16_input=224, "
        "darkfpga_sized_for=batch, darkfpga_batch_lanes=8|32, ip_dram_efficiency=0.75|0.5",
    )


def mtrain_commands(command: Command) -> None:
    """Subcommands of the multi-FPGA training study (MTrain)."""
    cmd = command(
        "mtrain-study",
        _cmd_study,
        "MTrain steps 1-4, Alpa, HAP and single FPGAs per P2P bandwidth (Figures 8-11)",
        outputs=("--out",),
    )
    _search_args(cmd)
    cmd.add_argument("--bandwidths", type=float, nargs="+", help="P2P bandwidths in GB/s (default: the YAML's sweep)")
    cmd.add_argument("--out", type=Path, required=True, help="output: one row per bandwidth and method (Parquet)")

    cmd = command(
        "mtrain-table3", _cmd_table3, "MTrain-Converting against the DFS optimum over ratios (Table III)", outputs=("--out",)
    )
    _search_args(cmd)
    cmd.add_argument("--bandwidth", type=positive_number, default=3.0, help="P2P bandwidth in GB/s (Table III: 3)")
    cmd.add_argument("--out", type=Path, required=True, help="output: one row, throughput (GFLOPS) and search time (s) (Parquet)")

    cmd = command(
        "mtrain-scaling", _cmd_scaling, "MTrain on 1 to N copies of a cluster's devices (Figure 12)", outputs=("--out",)
    )
    _search_args(cmd)
    cmd.add_argument("--pairs", type=positive_int, nargs="+", required=True, help="copies of the cluster's devices, e.g. 1 2 3 4")
    cmd.add_argument(
        "--fewer-fpgas",
        type=Path,
        help="mtrain-scaling's table of fewer copies: each size's search weighs its answers again (its new FPGAs idle)",
    )
    cmd.add_argument("--bandwidths", type=float, nargs="+", help="P2P bandwidths in GB/s (default: the YAML's sweep)")
    cmd.add_argument("--out", type=Path, required=True, help="output: one row per size and bandwidth (Parquet)")

    cmd = command(
        "mtrain-calibrate",
        _cmd_calibrate,
        "fit a training IP's clock so its published design reaches its published throughput (never MTrain's)",
        outputs=("--out",),
    )
    cmd.add_argument("--ops", type=Path, required=True, help="ops.parquet of the batch-1 step of the IP's published network")
    cmd.add_argument("--tensors", type=Path, required=True, help="tensors.parquet")
    cmd.add_argument("--devices", type=Path, required=True, help="FPGA devices and clusters YAML (config/hardware/fpga/)")
    cmd.add_argument(
        "--ips", type=Path, required=True, help="the training IPs' constants with sources (data/fpga/training_ips.yaml)"
    )
    cmd.add_argument("--targets", type=Path, required=True, help="the IPs' own published throughputs (data/paper/mtrain_ips.csv)")
    cmd.add_argument("--label", default="", help="the workload's name in the table (default: its model)")
    cmd.add_argument(
        "--calibrate", action=argparse.BooleanOptionalAction, default=True, help="fit (default) or keep the --ips constants"
    )
    cmd.add_argument("--out", type=Path, required=True, help="output: results/mtrain/calibration.parquet")

    _report_commands(command)


def _report_commands(command: Command) -> None:
    """The MTrain subcommands that read the study's tables: the report, the constants' table and the figures."""
    cmd = command(
        "mtrain-report",
        _cmd_report,
        "MTrain tables: Table III (CSV, Markdown) and ours beside the paper (compare.csv)",
        outputs=("--study-out", "--scaling-out", "--table3-parquet", "--table3-csv", "--table3-md", "--compare", "--split"),
    )
    cmd.add_argument("--study", type=Path, nargs="+", required=True, help="mtrain-study tables")
    cmd.add_argument("--table3", type=Path, nargs="+", required=True, help="mtrain-table3 rows")
    cmd.add_argument("--scaling", type=Path, nargs="+", required=True, help="mtrain-scaling tables")
    cmd.add_argument("--paper", type=Path, required=True, help="the paper's numbers (data/paper/mtrain.csv)")
    cmd.add_argument(
        "--claims", type=Path, help="every claim of the paper's results (data/paper/mtrain_claims.csv): its sentences' rows"
    )
    cmd.add_argument("--study-out", type=Path, required=True, help="output: every study table in one (Parquet)")
    cmd.add_argument("--scaling-out", type=Path, required=True, help="output: every scaling table in one (Parquet)")
    cmd.add_argument("--table3-parquet", type=Path, required=True, help="output: Table III (Parquet)")
    cmd.add_argument("--table3-csv", type=Path, required=True, help="output: Table III (CSV)")
    cmd.add_argument("--table3-md", type=Path, required=True, help="output: Table III rendered (Markdown)")
    cmd.add_argument("--compare", type=Path, required=True, help="output: paper vs ours with checks (CSV)")
    cmd.add_argument(
        "--split", type=Path, help="output: per cell, how MTrain shares the batch (FPGAs given a share, busy, designs; CSV)"
    )
    cmd.add_argument("--calibration", type=Path, help="mtrain-calibrate's table: its fitted targets become 'calibrated' rows")
    cmd.add_argument(
        "--constants",
        type=Path,
        help="mtrain-constants' CSV: Converting's nearness to the DFS judged under every value of the unstated constants",
    )
    cmd.add_argument(
        "--assume",
        nargs="+",
        metavar="NAME=VALUE",
        help="change a modelling assumption (an ablation): calibrated=true|false, dfs_ratio_rule=all|positive|feasible",
    )

    cmd = command(
        "mtrain-constants",
        _cmd_constants,
        "Table III under each constant MTrain leaves unstated, beside the paper (MD, CSV)",
        outputs=("--csv", "--md"),
    )
    cmd.add_argument("--paper", type=Path, required=True, help="the paper's numbers (data/paper/mtrain.csv)")
    cmd.add_argument("--baseline", type=Path, nargs="+", required=True, help="the study's mtrain-table3 rows")
    cmd.add_argument(
        "--variant",
        nargs="+",
        action="append",
        metavar="NAME=VALUE TABLE",
        help="an unstated constant's value (fp32_mac_dsp=3, fabric_clock_mhz=300, vgg16_input=224) and the mtrain-table3 "
        "rows of that ablation; repeat per value",
    )
    cmd.add_argument("--csv", type=Path, required=True, help="output: one row per cell and setting (CSV)")
    cmd.add_argument("--md", type=Path, required=True, help="output: the table beside the paper's (Markdown)")

    cmd = command(
        "plot-mtrain", _cmd_plot, "MTrain Figure 8 (steps), 9-11 (methods, one cluster) or 12 (scaling)", outputs=("--out",)
    )
    cmd.add_argument("--figure", required=True, choices=["steps", "methods", "scaling"])
    cmd.add_argument("--in", dest="input", type=Path, required=True, help="the study table (steps, methods) or scaling table")
    cmd.add_argument("--cluster", default="", help="the cluster of a methods figure")
    cmd.add_argument(
        "--search-bandwidth", type=positive_number, default=3.0, help="bandwidth (GB/s) of the scaling figure's search times"
    )
    cmd.add_argument("--title", default="", help="figure title")
    cmd.add_argument("--out", type=Path, nargs="+", required=True, help="output figure files (.png, .pdf)")
    cmd.add_argument("--compare", type=Path, help="mtrain-report's compare.csv: the paper's numbers, drawn beside ours")
