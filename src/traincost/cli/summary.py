"""``traincost`` subcommands that read the studies' paper-vs-ours tables back: in the terminal and for the report."""

from __future__ import annotations

import argparse
from pathlib import Path

from traincost.cli.arguments import Command
from traincost.errors import ConfigError
from traincost.io import atomic_path

__all__ = ["STUDY_KEYS", "summary_commands"]

# The keys of traincost.analysis.agreement.STUDIES, written out so that `traincost --help` does not import pandas
STUDY_KEYS = ("monet", "mtrain", "tiered")


def _cmd_summary(args: argparse.Namespace) -> None:
    import pandas as pd

    from traincost.analysis.agreement import comparison_path, count_agreement, find_comparisons, summary_text
    from traincost.analysis.fidelity_page import StudyPage, fidelity_markdown
    from traincost.api import study_table

    found = find_comparisons(args.results)
    if args.study:
        found = [(study, path) for study, path in found if study.key in args.study]
    counts, rows, pages = [], [], []
    for study, _ in found:
        path = comparison_path(args.results, study)
        frame = study_table(args.results, study.key)
        print(summary_text(study, path, frame, width=args.width, only_disagreeing=args.disagreeing))
        count = count_agreement(frame)
        rows.append({"study": study.key, "calibration": "after", "table": str(path)} | count.numbers())
        before = comparison_path(args.results, study, calibrated=False)
        uncalibrated, note = None, ""
        if before.is_file():
            uncalibrated = count_agreement(study_table(args.results, study.key, calibrated=False))
            print(f"before calibration ({before}): {uncalibrated.text()}")
            rows.append({"study": study.key, "calibration": "before", "table": str(before)} | uncalibrated.numbers())
        elif study.key == "monet":
            note = "the same (MONET pins none of our constants; config monet_calibration)"
        else:
            note = f"not run ({before} is made by `snakemake ablations`)"
        if note:
            print(f"before calibration: {note}")
        print()
        counts.append(count)
        pages.append(StudyPage(study, path, frame, uncalibrated, note))
    if args.counts_out:
        with atomic_path(args.counts_out) as tmp:
            pd.DataFrame(rows).to_csv(tmp, index=False)
    if args.markdown:
        with atomic_path(args.markdown) as tmp:
            tmp.write_text(fidelity_markdown(pages), encoding="utf-8")
    names = ", ".join(study.title for study, _ in found)
    agree, checked, ties = sum(c.agree for c in counts), sum(c.checked for c in counts), sum(c.ties for c in counts)
    magnitude, weighed = sum(c.magnitude_agree for c in counts), sum(c.magnitude_checked for c in counts)
    tied = f" ({ties} {'tie' if ties == 1 else 'ties'} among them)" if ties else ""
    print(f"{agree} of {checked} claims agree in direction{tied}, {magnitude} of {weighed} in magnitude, over {names}")


def _cmd_report_table(args: argparse.Namespace) -> None:
    from traincost.analysis.agreement import STUDIES, agreement_html, read_comparison

    study = STUDIES[args.study]
    frame = read_comparison(args.input, study)
    with atomic_path(args.out) as tmp:
        tmp.write_text(agreement_html(study, frame, source=str(args.input)), encoding="utf-8")


def _cmd_report_workloads(args: argparse.Namespace) -> None:
    from traincost.analysis.workloads_page import workload_rows, workloads_html

    if len(args.workload) % 4:
        raise ConfigError("--workload: give NAME OPS TENSORS VERIFICATION for each workload")
    given = [args.workload[i : i + 4] for i in range(0, len(args.workload), 4)]
    rows = workload_rows({name: (Path(ops), Path(tensors), Path(check)) for name, ops, tensors, check in given})
    with atomic_path(args.out) as tmp:
        tmp.write_text(workloads_html(rows), encoding="utf-8")


def _cmd_check_results(args: argparse.Namespace) -> None:
    from traincost.results_check import damaged_files

    if not args.results.is_dir():
        raise ConfigError(f"--results {args.results}: no such folder")
    damaged, checked = damaged_files(args.results)
    for damage in damaged:
        print(f"damaged: {damage.path}: {damage.reason}")
    if not damaged:
        print(f"{checked} files checked under {args.results}; none damaged")
        return
    if not args.remove:
        raise ConfigError(
            f"{len(damaged)} of {checked} files under {args.results} are damaged (listed above): `traincost check-results "
            "--remove` deletes them and the next `snakemake --cores N` rebuilds them and what depends on them"
        )
    for damage in damaged:
        damage.path.unlink()
    print(f"removed {len(damaged)} damaged files of {checked}; `snakemake --cores N` rebuilds them")


def summary_commands(command: Command) -> None:
    """The paper-vs-ours summary (terminal) and its HTML table (report)."""
    cmd = command(
        "check-results",
        _cmd_check_results,
        "list the damaged files under --results (cut short or overwritten), and with --remove delete them so the next "
        "snakemake run rebuilds them",
    )
    cmd.add_argument("--results", type=Path, default=Path("results"), help="the results folder (default results)")
    cmd.add_argument("--remove", action="store_true", help="delete the damaged files (snakemake then rebuilds them)")

    cmd = command(
        "summary",
        _cmd_summary,
        "per study found under --results: how many of the paper's checks agree, and the table",
        outputs=("--counts-out", "--markdown"),
    )
    cmd.add_argument("--results", type=Path, default=Path("results"), help="the workflow's results folder (default: results)")
    cmd.add_argument("--study", nargs="+", choices=STUDY_KEYS, help="only these studies (default: every one found)")
    cmd.add_argument("--disagreeing", action="store_true", help="list only the rows whose check fails")
    cmd.add_argument("--width", type=int, default=60, help="characters kept of each claim and statement (default: 60)")
    cmd.add_argument(
        "--counts-out", type=Path, help="also write the counts per study, after and (where run) before calibration (CSV)"
    )
    cmd.add_argument(
        "--markdown",
        type=Path,
        help="also write a Markdown page: per study the counts before and after calibration and every disagreeing "
        "check with its why",
    )

    cmd = command(
        "report-table",
        _cmd_report_table,
        "one study's paper-vs-ours CSV as an HTML table, rows coloured by agreement",
        outputs=("--out",),
    )
    cmd.add_argument("--study", required=True, choices=STUDY_KEYS, help="which study's CSV")
    cmd.add_argument("--in", dest="input", type=Path, required=True, help="claims.csv (monet) or compare.csv (mtrain, tiered)")
    cmd.add_argument("--out", type=Path, required=True, help="output HTML page")

    cmd = command(
        "report-workloads",
        _cmd_report_workloads,
        "the run's workloads and the front end that built each, as HTML",
        outputs=("--out",),
    )
    cmd.add_argument(
        "--workload", nargs="+", required=True, help="NAME OPS TENSORS VERIFICATION per workload (its tables, Parquet)"
    )
    cmd.add_argument("--out", type=Path, required=True, help="output HTML page")
