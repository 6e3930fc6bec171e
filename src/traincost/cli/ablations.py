"""``traincost ablations``: one study's ablation runs beside its baseline comparison, the ``why`` column and the heat map."""

from __future__ import annotations

import argparse
from pathlib import Path

from traincost.cli.arguments import Command
from traincost.errors import ConfigError
from traincost.io import atomic_path

__all__ = ["ablation_commands"]


def _cmd_ablations(args: argparse.Namespace) -> None:
    import pandas as pd

    from traincost.analysis.ablations import ablation_table, parse_assume, why_column
    from traincost.analysis.agreement import STUDIES, read_comparison
    from traincost.plots.ablations import plot_ablations
    from traincost.workload import write_table

    study = STUDIES[args.study]
    baseline = read_comparison(args.baseline, study)
    runs = []
    for assumption, variant, path in args.run or ():
        parse_assume(args.study, [f"{assumption}={variant}"], where=f"--run {assumption} {variant}")
        runs.append((assumption, variant, read_comparison(Path(path), study)))
    table = ablation_table(study, baseline, runs)
    raw = pd.read_csv(args.baseline, keep_default_na=False, na_values=[""], dtype=object)
    if len(raw) != len(baseline):
        raise ConfigError(f"{args.baseline}: read {len(raw)} rows, expected {len(baseline)}")
    raw["why"] = why_column(study, baseline, table).to_numpy()
    plot_ablations(table, args.heatmap, title=f"{study.title}: does one changed assumption flip a check?")
    write_table(table, args.out, {"study": study.key, "baseline": str(args.baseline)})
    with atomic_path(args.why) as tmp:
        raw.to_csv(tmp, index=False)
    flips = table[table["flips"]]
    print(
        f"{study.title}: {len(runs)} ablation runs, {table['check'].nunique() if len(table) else 0} judged checks, "
        f"{len(flips)} flips; {args.out}"
    )


def ablation_commands(command: Command) -> None:
    """The ablation table of one study."""
    cmd = command(
        "ablations",
        _cmd_ablations,
        "one study's ablation runs beside its baseline: ablations.parquet, the comparison with a 'why' column, a heat map",
        outputs=("--out", "--why", "--heatmap"),
    )
    cmd.add_argument("--study", required=True, choices=["monet", "mtrain", "tiered"], help="which study")
    cmd.add_argument("--baseline", type=Path, required=True, help="the study's own claims.csv / compare.csv")
    cmd.add_argument(
        "--run",
        nargs=3,
        action="append",
        metavar=("ASSUMPTION", "VARIANT", "CSV"),
        help="one ablation run: the assumption changed, its value, and the comparison it gave (repeat per run)",
    )
    cmd.add_argument("--out", type=Path, required=True, help="output: results/<study>/ablations.parquet")
    cmd.add_argument("--why", type=Path, required=True, help="output: the baseline comparison with a 'why' column (CSV)")
    cmd.add_argument("--heatmap", type=Path, nargs="+", required=True, help="output heat map files (.png, .pdf)")
