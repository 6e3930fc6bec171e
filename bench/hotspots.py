"""Where a command spends its time: py-spy samples it (and its subprocesses) and this prints the functions that hold
the most samples, inclusive (the function or anything it calls) and exclusive (the function's own lines).

    python bench/hotspots.py -- traincost checkpoint-nsga --ops ... --out /tmp/nsga.parquet
    python bench/hotspots.py --rule verify_decomposition --wildcards workload=resnet18_cifar   # a workflow job
    python bench/hotspots.py --raw /tmp/nsga.raw                                               # a file py-spy wrote
    python bench/hotspots.py --pid 1234 --duration 60                                          # a process running now

``--rule`` runs a job of the workflow's DAG as Snakemake would (its shell command, from ``workflow_jobs.py``, in the
repository root; its inputs must exist: run the workflow, or its targets, first) with the job's output written where
Snakemake would write it. A rule with one job needs no ``--wildcards``. ``--out FILE`` keeps py-spy's samples
(collapsed stacks, one line per distinct stack: ``frame;frame;... count``) to read again with ``--raw``.

The samples are py-spy's (``record --format raw``, ``--rate`` per second, 100 by default, idle threads left out):
a function's share is the share of samples in which it is on the stack, so the inclusive column of ``main`` is about
100 %, and a function called at several depths counts once per sample. The exclusive column is where the interpreter
was: a numpy or ONNX Runtime kernel shows as the Python line that called it. py-spy comes with the ``test`` extra;
it samples from another process, so the command runs at about its own speed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# a frame of py-spy's raw output: "function (path/to/file.py:line)"
_PROCESS = re.compile(r'^process \d+:"')
_FRAME = re.compile(r"^(?P<function>.*) \((?P<file>[^():]*)(?::(?P<line>\d+))?\)$")


@dataclass(frozen=True)
class Hotspots:
    """Samples per function: ``inclusive`` (on the stack), ``exclusive`` (the innermost frame, by line)."""

    samples: int
    inclusive: Counter[str]
    exclusive: Counter[str]


def _named(frame: str, *, line: bool) -> str:
    """A raw frame as ``function (module/file.py)``, the path cut to its last two parts, or with ``line`` as
    ``function (file.py:line)``; the frame itself if it is not a call."""
    match = _FRAME.match(frame)
    if not match:
        return frame
    where = f"{Path(match['file']).name}:{match['line']}" if line else "/".join(Path(match["file"]).parts[-2:])
    return f"{match['function']} ({where})"


def hotspots(raw: str) -> Hotspots:
    """The samples of py-spy's raw output, per function and per innermost line.

    Raises:
        ValueError: a line that is not ``stack count``.
    """
    inclusive: Counter[str] = Counter()
    exclusive: Counter[str] = Counter()
    samples = 0
    for number, line in enumerate(raw.splitlines(), start=1):
        if not line.strip():
            continue
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            raise ValueError(f"line {number}: expected 'frame;frame;... count' (py-spy --format raw), got {line[:80]!r}")
        n = int(count)
        samples += n
        # py-spy's --subprocesses puts a frame 'process PID:"command"' at the root of each stack: not a function
        frames = [frame for frame in stack.split(";") if frame and not _PROCESS.match(frame)]
        for name in {_named(frame, line=False) for frame in frames}:
            inclusive[name] += n
        exclusive[_named(frames[-1], line=True) if frames else "(no Python frame)"] += n
    return Hotspots(samples=samples, inclusive=inclusive, exclusive=exclusive)


def table(spots: Hotspots, *, top: int) -> str:
    """The ``top`` functions by inclusive and by exclusive share, as text."""
    if not spots.samples:
        return "no samples (the command ended before py-spy's first sample, or was idle)"
    lines = [f"{spots.samples:,} samples", "", "inclusive  function (or anything it calls)"]
    lines += [f"{100 * n / spots.samples:8.1f} %  {name}" for name, n in spots.inclusive.most_common(top)]
    lines += ["", "exclusive  line"]
    lines += [f"{100 * n / spots.samples:8.1f} %  {name}" for name, n in spots.exclusive.most_common(top)]
    return "\n".join(lines)


def job_command(rule: str, wildcards: dict[str, str], *, configfile: Path | None) -> str:
    """The shell command of the one job of ``rule`` whose wildcards include ``wildcards``, from the workflow's DAG.

    Raises:
        SystemExit: no such job, or several (naming their wildcards).
    """
    with tempfile.TemporaryDirectory() as folder:
        dump = Path(folder) / "jobs.json"
        options = ["--configfile", str(configfile)] if configfile else []
        environment = os.environ | {"PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")])}
        subprocess.run([sys.executable, str(REPO / "bench/workflow_jobs.py"), *options, "--out", str(dump)], cwd=REPO,
                       env=environment, check=True)  # fmt: skip
        jobs = json.loads(dump.read_text())
    matching = [job for job in jobs if job["rule"] == rule and wildcards.items() <= job["wildcards"].items()]
    if len(matching) != 1:
        found = "; ".join(json.dumps(job["wildcards"]) for job in matching[:10]) or "none"
        sys.exit(f"rule {rule!r} with wildcards {wildcards}: {len(matching)} jobs ({found}); expected one (--wildcards K=V)")
    return matching[0]["shell"]


def record(target: list[str], *, rate: int, raw: Path) -> int:
    """py-spy sampling ``target`` (``["--pid", PID, "--duration", S, "--nonblocking"]`` or ``["--", *command]``), its
    samples written to ``raw``; py-spy's exit status (a command's own, when it runs one)."""
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    if not Path(spy).exists():
        sys.exit("py-spy not found: pip install -c constraints.txt -e '.[test]'")
    spied = [spy, "record", "--format", "raw", "--rate", str(rate), "--subprocesses", "--output", str(raw), *target]
    # a workflow job's command calls ``traincost`` as Snakemake finds it: on PATH, this interpreter's venv first
    environment = os.environ | {"PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])}
    return subprocess.run(spied, cwd=REPO, env=environment, stdout=subprocess.DEVNULL, check=False).returncode


def _sample(args: argparse.Namespace, parser: argparse.ArgumentParser, raw: Path) -> None:
    """py-spy on what ``args`` names (a process, a workflow job or a command), its samples written to ``raw``."""
    if args.pid:
        target = ["--pid", str(args.pid), "--duration", str(args.duration), "--nonblocking"]
    elif args.rule:
        wildcards = dict(item.split("=", 1) for item in args.wildcards)
        target = ["--", "bash", "-c", job_command(args.rule, wildcards, configfile=args.configfile)]
    elif args.command:
        target = ["--", *args.command]
    else:
        parser.error("give a command after --, or --rule, --pid or --raw")
    print(f"$ py-spy record ... {shlex.join(target)}", file=sys.stderr)
    status = record(target, rate=args.rate, raw=raw)
    if status:
        print(f"py-spy (or the command) exited with {status}", file=sys.stderr)
    if not raw.is_file() or not raw.stat().st_size:
        sys.exit(f"py-spy wrote no samples to {raw}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--raw", type=Path, help="summarise a file of py-spy's raw samples instead of running anything")
    source.add_argument("--rule", help="profile the workflow job of this rule (its inputs must exist)")
    source.add_argument("--pid", type=int, help="profile a process running now, for --duration seconds")
    parser.add_argument("--wildcards", nargs="*", default=[], metavar="K=V", help="which job of --rule")
    parser.add_argument("--configfile", type=Path, help="the workflow config of --rule (default config/config.yaml)")
    parser.add_argument("--duration", type=int, default=60, help="seconds to sample --pid (default 60)")
    parser.add_argument("--rate", type=int, default=100, help="samples per second (default 100)")
    parser.add_argument("--top", type=int, default=25, help="functions per table (default 25)")
    parser.add_argument("--out", type=Path, help="keep the raw samples in this file")
    parser.add_argument("command", nargs="*", help="the command to profile, after --")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:  # the samples, unless --out keeps them
        raw = args.raw or args.out or Path(scratch) / "samples.raw"
        if not args.raw:
            _sample(args, parser, raw)
        try:
            spots = hotspots(raw.read_text())
        except ValueError as error:
            sys.exit(f"{raw}: {error}")
    print(table(spots, top=args.top))


if __name__ == "__main__":
    main()
