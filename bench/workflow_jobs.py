"""Every job of a workflow's DAG with its rule, wildcards, inputs, outputs, params and shell command, as JSON, to
compare two versions.

A change to the rules that should not change what the workflow runs (a refactoring of ``workflow/rules/*.smk`` or
of the ``Plan``) is checked without running it: dump the jobs of the same targets and config from both versions
and compare the files. Each job is the DAG's with ``--forceall`` (every job, whatever exists under ``results/``),
as Snakemake builds it for a dry run: its rule's name, wildcards, inputs and outputs (in order, with their names;
the outputs' flags, such as temp and report),
params (by name; Snakemake compares them as a set, so their order is not part of a job), log, benchmark, threads,
resources, priority and the shell command with every placeholder filled in. The repository's own path is written
``<repo>``, so that two checkouts in different folders compare equal. Jobs are sorted by rule and outputs.

    python bench/workflow_jobs.py --out /tmp/full.json
    python bench/workflow_jobs.py --configfile config/quick.yaml --out /tmp/quick.json
    python bench/workflow_jobs.py --out /tmp/ablations.json ablations
    python bench/workflow_jobs.py --configfile config/quick.yaml --config frontend=torch --out /tmp/torch.json
    cmp /tmp/before/full.json /tmp/after/full.json

Run it in the repository whose workflow is dumped, with the package of that checkout first on ``PYTHONPATH``
(``PYTHONPATH=src``): the Snakefile imports ``traincost.workflow``. It uses Snakemake's Python API and, to reach
the DAG without executing it, the two steps ``snakemake --printdag`` takes (``Workflow._prepare_dag`` and
``_build_dag``; Snakemake 9).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import yaml
from snakemake.api import SnakemakeApi
from snakemake.settings.enums import Quietness
from snakemake.settings.types import ConfigSettings, DAGSettings, OutputSettings, ResourceSettings


def _named(items: Any) -> dict[str, Any]:
    """A Snakemake named list's named entries (``input``, ``output``, ``params``, ``log``), name -> value."""
    return {name: value for name, value in items.items()}


def _job(job: Any) -> dict[str, Any]:
    """One job of the DAG as plain JSON values."""
    resources = {name: value for name, value in job.resources.items() if not name.startswith("_")}
    return {
        "rule": job.rule.name,
        "wildcards": dict(job.wildcards.items()),
        "input": list(job.input),
        "input_names": _named(job.input),
        "output": list(job.output),
        "output_names": _named(job.output),
        "output_flags": {path: sorted(path.flags) for path in job.output if path.flags},
        "params": dict(sorted(_named(job.params).items())),
        "log": list(job.log),
        "benchmark": job.benchmark,
        "threads": job.threads,
        "resources": dict(sorted(resources.items())),
        "priority": job.rule.expand_priority(job.wildcards_dict, job.input, job.attempt),
        "shell": job.shellcmd,
    }


def workflow_jobs(
    *, snakefile: Path, configfiles: list[Path], config: dict[str, Any], targets: list[str]
) -> list[dict[str, Any]]:
    """Every job of the DAG of ``targets`` (the default target if none) under ``configfiles`` and ``config`` (as
    ``snakemake --configfile`` and ``--config`` give them), each as :func:`_job` gives it."""
    with SnakemakeApi(OutputSettings(quiet={Quietness.ALL})) as api:
        workflow_api = api.workflow(
            resource_settings=ResourceSettings(cores=2),
            config_settings=ConfigSettings(configfiles=configfiles, config=config),
            snakefile=snakefile,
            workdir=snakefile.parent,
        )
        workflow_api.dag(DAGSettings(targets=frozenset(targets), forceall=True))
        workflow = workflow_api._workflow  # noqa: SLF001  (what `snakemake --printdag` reaches)
        workflow._prepare_dag(forceall=True, ignore_incomplete=True, lock_warn_only=True)  # noqa: SLF001
        workflow._build_dag()  # noqa: SLF001
        jobs = [_job(job) for job in workflow.dag.jobs]
    return sorted(jobs, key=lambda job: (job["rule"], job["output"]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("targets", nargs="*", help="rules or files to build (default: the Snakefile's first rule, all)")
    parser.add_argument("--configfile", type=Path, action="append", default=[], help="as snakemake --configfile")
    parser.add_argument("--config", nargs="*", default=[], metavar="KEY=VALUE", help="as snakemake --config (YAML values)")
    parser.add_argument("--snakefile", type=Path, default=Path("Snakefile"), help="the workflow (default ./Snakefile)")
    parser.add_argument("--out", type=Path, required=True, help="the JSON file to write")
    args = parser.parse_args(argv)
    snakefile = args.snakefile.resolve()
    config = {key: yaml.safe_load(value) for key, value in (item.split("=", 1) for item in args.config)}
    configfiles = [path.resolve() for path in args.configfile]
    jobs = workflow_jobs(snakefile=snakefile, configfiles=configfiles, config=config, targets=args.targets)
    text = json.dumps(jobs, indent=1, sort_keys=False, default=str).replace(str(snakefile.parent), "<repo>")
    args.out.write_text(text + "\n")
    print(f"{len(jobs)} jobs of {len({job['rule'] for job in jobs})} rules -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
