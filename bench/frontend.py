"""Wall time of each front-end stage and the size of each graph, printed as a table.

    python bench/frontend.py [model[:batch] ...]      (default: resnet18_cifar:1 resnet50:1 gpt2_small:1)
    python bench/frontend.py --third-party            (the networks of examples/third_party.py, at their test size)
    python bench/frontend.py --cost-mobilenet         (`traincost cost` on MobileNetV2, 224x224, batch 1)
    python bench/frontend.py --rules gpt2_124m        (the workflow's front-end commands, one process each: the
                                                       ONNX front end's rules, then the torch front end's trace_step)
    python bench/frontend.py --agreement resnet18 ... (both front ends' MACs, state bytes and saved activations)
    python bench/frontend.py --startup                (the imports each front-end job pays)

``--third-party`` and ``--cost-mobilenet`` need torchvision and timm (the ``test`` extra). Per stage: wall and CPU
seconds (every thread's; the measure that holds on a shared machine) and the process's peak RSS so far (MB). The chain
is export, training graph (SGD, as the third-party test steps), decomposition, its check by execution, lowering,
memory, and the schedule on the Edge TPU (``cost``).

Targets: the whole chain for ResNet-18 CIFAR, and for each third-party network at its test size (batch
2), under 60 s on 2 cores; ``traincost cost`` on MobileNetV2 (torchvision's, 1000 classes, full width)
at 224x224, batch 1, under 90 s; GPT-2 124M's training graph and decomposition under 60 CPU s and 6 GB each.

``--rules WORKLOAD`` runs the front-end rules' own commands for a workload of config/config.yaml, each in a
process of its own with OMP_NUM_THREADS set as Snakemake sets it to the rule's threads, and prints wall and CPU
seconds, the main thread's CPU seconds (threads sampled every 0.1 s) and the process's peak RSS: the numbers each
rule's ``mem_mb`` comes from (``FRONTEND_PEAK_MB`` in ``traincost.workflow.plan``). Each front-end rule takes one
thread because a job's main thread does nearly all of its CPU work: a second thread costs CPU (ONNX Runtime's
worker threads spin while they wait) and, on a loaded machine, wall time too. ``--startup`` measures the imports
each job pays in fresh interpreters: the parser (``traincost --help``) does not load torch, and no job imports
ONNX Runtime's ORTModule (``traincost.frontend.onnx.ort``).

What the numbers mean. The decomposition's check holds each tensor to what rounding explains: a tensor that one-ulp
nudges of the inputs move by more than 1e-3 is float32 noise, reported and left to the node-by-node check (for
MobileNetV2, the running means of the BatchNorms after a 1x1 convolution of a zero-mean input, and the projection
BatchNorms' bias gradients, which the next BatchNorm makes sum to 0). ReLU6 is an ONNX Clip, whose gradient passes
dY where min <= X <= max: the check tells a Clip's branch from its input and pins each flipped element alone, so a
flip in a nudged execution is not counted as rounding. The check of GPT-2 124M's decomposition peaks with the
step's ONNX Runtime executions on top of a base of both graphs' weights (as protobuf and as arrays), the batch,
Adam's random states and the reference gradients; freed memory held by the allocator is not what takes it.

The latest measurements are in docs/frontends.md (the two front ends side by side) and the README's Performance
table; earlier ones are in the repository's history.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from unittest import mock

import pandas as pd

from traincost import models
from traincost.cost import op_table
from traincost.frontend.onnx.decompose import decompose
from traincost.frontend.onnx.export import export_model
from traincost.frontend.onnx.lower import lower
from traincost.frontend.onnx.train_graph import build_train_step
from traincost.frontend.onnx.verification import verify_decomposition
from traincost.frontend.shared.optimizer import OptimizerSpec
from traincost.hardware import load_hardware
from traincost.memory.liveness import memory_profile
from traincost.schedule import SchedulePlan, schedule
from traincost.workload import STEP_PHASES

REPO = Path(__file__).resolve().parents[1]
EDGE_TPU = REPO / "config/hardware/edge_tpu.yaml"


def bench(name: str, batch: int, optimizer: OptimizerSpec) -> dict[str, object]:
    row: dict[str, object] = {"model": name, "batch": batch}
    clock, cpu = time.perf_counter(), time.process_time()

    def lap(stage: str) -> None:
        nonlocal clock, cpu
        now, now_cpu = time.perf_counter(), time.process_time()
        row[f"{stage}_s"] = round(now - clock, 2)
        row[f"{stage}_cpu_s"] = round(now_cpu - cpu, 2)  # every thread's: the measure on a shared machine
        row[f"{stage}_peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024  # so far
        clock, cpu = now, now_cpu

    model = export_model(name, batch=batch, seed=0)
    lap("export")
    train = build_train_step(model, optimizer)
    lap("train_graph")
    decomposed = decompose(train)
    lap("decompose")
    check = verify_decomposition(train, decomposed)
    lap("verify")
    workload = lower(decomposed)
    lap("lower")
    memory_profile(workload)
    lap("memory")
    schedule(op_table(workload, phases=STEP_PHASES["training"]), load_hardware(EDGE_TPU), SchedulePlan())
    lap("cost")
    row["total_s"] = round(sum(v for k, v in row.items() if k.endswith("_s") and not k.endswith("_cpu_s")), 2)
    phases = workload.ops["phase"].value_counts()
    row |= {
        "forward_nodes": len(model.graph.node),
        "train_step_nodes": len(train.graph.node),
        "decomposed_nodes": len(decomposed.graph.node),
        "fwd_bwd_ops": int(phases.get("forward", 0) + phases.get("backward", 0)),
        "optimizer_ops": int(phases.get("optimizer", 0)),
        "branch_flips": check.branch_flips,
        "branching_ops_pinned": check.pinned,
        "tensors_compared": sum(t.held for t in check.tensors),
        "tensors_float32_noise": sum(not t.held for t in check.tensors),
    }
    return row


def bench_cost_mobilenet(*, verify: bool) -> dict[str, object]:
    """``traincost cost`` on MobileNetV2 224x224, batch 1, in a child process: wall and CPU seconds, peak RSS.
    torchvision's MobileNetV2 as it ships (1000 classes, width 1), random weights."""
    command = [str(Path(sys.executable).parent / "traincost"), "cost", "traincost.models.library:torchvision_model"]
    command += ["--name", "mobilenet_v2", "--kwargs", '{"name": "mobilenet_v2"}']
    command += ["--input-shape", "3,224,224", "--batch", "1", "--hardware", str(EDGE_TPU)]
    command += [] if verify else ["--no-verify"]
    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        subprocess.run([*command, "--out-dir", out], check=True, cwd=REPO, stdout=subprocess.DEVNULL)
        wall = time.perf_counter() - start
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {
        "model": "mobilenet_v2 (traincost cost" + ("" if verify else " --no-verify") + ")",
        "batch": 1,
        "total_s": round(wall, 2),
        "total_cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
        "peak_mb": usage.ru_maxrss // 1024,
    }


def bench_third_party() -> list[dict[str, object]]:
    """The chain of each network of ``examples.third_party`` at its test size, batch 2, SGD, each a zoo entry while it
    runs."""
    sys.path.insert(0, str(REPO))
    from examples.third_party import NETWORKS, architecture  # noqa: PLC0415 (torchvision and timm: for --third-party only)

    entries = {**models.ARCHITECTURES, **{name: architecture(network) for name, network in NETWORKS.items()}}
    with mock.patch.object(models, "ARCHITECTURES", entries):
        return [bench(name, 2, OptimizerSpec(kind="sgd", lr=0.1)) for name in NETWORKS]


# What each front-end job imports before it reads its input (the modules of its CLI handler).
STARTUP = {
    "parser (`traincost --help`)": "traincost.cli",
    "export": "traincost.cli, traincost.cli.arguments, traincost.frontend.onnx.export",
    "train-graph": "traincost.cli, traincost.frontend.onnx.train_graph",
    "decompose": "traincost.cli, traincost.frontend.onnx.decompose, traincost.workload",
    "verify-decomposition": "traincost.cli, traincost.frontend.onnx.verification, traincost.workload",
    "lower": "traincost.cli, traincost.frontend.onnx.lower",
}


def bench_startup(repeats: int = 3) -> list[dict[str, object]]:
    """CPU and wall seconds of each job's imports in a fresh interpreter, the median of ``repeats``."""
    rows = []
    for stage, modules in STARTUP.items():
        runs = []
        for _ in range(repeats):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            subprocess.run([sys.executable, "-c", f"import {modules}"], check=True)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
            runs.append((cpu, time.perf_counter() - start))
        cpu, wall = sorted(runs)[len(runs) // 2]
        rows.append({"model": f"imports of {stage}", "batch": "", "total_s": round(wall, 2), "total_cpu_s": round(cpu, 2)})
    return rows


def _thread_seconds(pid: int) -> dict[int, float]:
    """CPU seconds (user + system) of each live thread of process ``pid``."""
    tick = os.sysconf("SC_CLK_TCK")
    seconds = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            fields = Path(f"/proc/{pid}/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        seconds[int(tid)] = (int(fields[11]) + int(fields[12])) / tick
    return seconds


def run_rule(command: list[str], *, threads: int) -> dict[str, object]:
    """``command`` as a workflow job runs it (``OMP_NUM_THREADS`` = its threads): wall and CPU seconds, peak RSS (MB),
    and the CPU seconds of its main thread, its threads sampled every 0.1 s (a thread that ends between two
    samples loses at most 0.1 s). CPU / main thread bounds what more threads could gain on an idle machine."""
    env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
    load, start = os.getloadavg()[0], time.perf_counter()
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seen: dict[int, float] = {}
    while True:
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):
            seen |= _thread_seconds(process.pid)
        pid, status, usage = os.wait4(process.pid, os.WNOHANG)  # this child's own rusage, its peak included
        if pid:
            break
        time.sleep(0.1)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(command)}: exit {os.waitstatus_to_exitcode(status)}: {process.stderr.read()[-2000:]}")
    return {
        "wall_s": round(wall, 1),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
        "main_thread_cpu_s": round(seen.get(process.pid, 0.0), 1),
        "peak_mb": usage.ru_maxrss // 1024,
        "load": f"{load:.1f}-{os.getloadavg()[0]:.1f}",
    }


def bench_rules(name: str, *, threads: int, keep: Path | None) -> list[dict[str, object]]:
    """The workflow's front-end commands for workload ``name`` of config/config.yaml (a zoo model), each in a
    process of its own, with the flags its rule passes."""
    import yaml  # noqa: PLC0415

    config = yaml.safe_load((REPO / "config/config.yaml").read_text())
    spec, seed = config["workloads"][name], str(config["seed"])
    optimizer = config["optimizers"][spec["optimizer"]]
    flags = ["--optimizer", optimizer["kind"]]
    for key, value in sorted(optimizer.items()):
        flags += [f"--{key.replace('_', '-')}", str(value)] if key != "kind" else []
    options = json.dumps(spec.get("options", {}), sort_keys=True)
    traincost = str(Path(sys.executable).parent / "traincost")
    with tempfile.TemporaryDirectory() as scratch:
        out = keep or Path(scratch)
        out.mkdir(parents=True, exist_ok=True)
        model, train, decomposed = (str(out / f) for f in ("model.onnx", "train_step.onnx", "train_step.decomposed.onnx"))
        commands = {
            "export": ["export", "--model", spec["model"], "--options", options, "--batch", str(spec["batch"]),
                       "--seed", seed, "--out", model],
            "train_graph": ["train-graph", "--in", model, *flags, "--seed", seed, "--out", train],
            "decompose": ["decompose", "--in", train, "--seed", seed, "--histogram", str(out / "op_histogram.parquet"),
                          "--out", decomposed],
            "lower": ["lower", "--in", decomposed, "--ops", str(out / "ops.parquet"), "--tensors", str(out / "tensors.parquet")],
            "verify_decomposition": ["verify-decomposition", "--in", train, "--decomposed", decomposed, "--seed", seed,
                                     "--out", str(out / "verification.parquet")],
            # the torch front end's one job (rule trace_step), without and with its check by execution
            "trace_step --no-verify": ["trace-step", "--model", spec["model"], "--options", options, "--batch",
                                       str(spec["batch"]), *flags, "--seed", seed, "--no-verify",
                                       "--ops", str(out / "torch_ops.parquet"), "--tensors", str(out / "torch_tensors.parquet"),
                                       "--verification", str(out / "torch_verification.parquet")],
            "trace_step": ["trace-step", "--model", spec["model"], "--options", options, "--batch", str(spec["batch"]),
                           *flags, "--seed", seed, "--ops", str(out / "torch_ops.parquet"),
                           "--tensors", str(out / "torch_tensors.parquet"),
                           "--verification", str(out / "torch_verification.parquet")],
        }  # fmt: skip
        return [
            {"model": f"{name}: {rule}", "batch": spec["batch"], **run_rule([traincost, *command], threads=threads)}
            for rule, command in commands.items()
        ]


def bench_agreement(name: str) -> list[dict[str, object]]:
    """Workload ``name`` of config/config.yaml (or a zoo model[:batch], with Adam) built by both front ends in this
    process (no checks): each total of ``traincost.frontend.agreement`` by each, and whether they agree within its
    limit."""
    import yaml  # noqa: PLC0415

    from traincost.frontend.agreement import frontend_agreement  # noqa: PLC0415
    from traincost.frontend.torch.lower import lower_step  # noqa: PLC0415
    from traincost.frontend.torch.step import trace_step  # noqa: PLC0415

    config = yaml.safe_load((REPO / "config/config.yaml").read_text())
    if name in config["workloads"]:
        spec = config["workloads"][name]
        optimizer = OptimizerSpec.from_mapping(config["optimizers"][spec["optimizer"]])
    else:  # a zoo model[:batch], with Adam
        model, _, batch = name.partition(":")
        spec, optimizer = {"model": model, "batch": int(batch or 1)}, OptimizerSpec(kind="adam", lr=1e-3)
    options, batch = spec.get("options", {}), spec["batch"]
    forward = export_model(spec["model"], batch=batch, seed=0, options=options)
    onnx_workload = lower(decompose(build_train_step(forward, optimizer)))
    del forward
    torch_workload = lower_step(trace_step(spec["model"], batch=batch, seed=0, optimizer=optimizer, options=options))
    table = frontend_agreement(torch_workload, onnx_workload)
    return [{"workload": name, **row} for row in table.to_dict("records")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "models", nargs="*", help="zoo models as name[:batch], Adam (default: resnet18_cifar:1 resnet50:1 gpt2_small:1)"
    )
    parser.add_argument("--third-party", action="store_true", help="the networks of examples/third_party.py, batch 2, SGD")
    parser.add_argument("--cost-mobilenet", action="store_true", help="traincost cost on MobileNetV2 224x224, batch 1")
    parser.add_argument("--no-verify", action="store_true", help="--cost-mobilenet without the check by execution")
    parser.add_argument("--startup", action="store_true", help="CPU seconds of each front-end job's imports")
    parser.add_argument(
        "--rules", nargs="+", default=[], metavar="WORKLOAD", help="the workflow's front-end commands for these workloads"
    )
    parser.add_argument(
        "--agreement",
        nargs="+",
        default=[],
        metavar="WORKLOAD",
        help="both front ends' totals: config workloads or model[:batch]",
    )
    parser.add_argument("--threads", type=int, default=1, help="--rules: OMP_NUM_THREADS of each job (its rule's threads)")
    parser.add_argument("--keep", type=Path, help="--rules: write the graphs and tables here (default: a temporary folder)")
    args = parser.parse_args()
    if args.agreement:
        table = pd.DataFrame([row for name in args.agreement for row in bench_agreement(name)])
        print(table.to_markdown(index=False, floatfmt=".3g"))
        return
    rows = bench_startup() if args.startup else []
    for name in args.rules:
        rows += bench_rules(name, threads=args.threads, keep=args.keep)
    others = args.third_party or args.cost_mobilenet or args.startup or args.rules
    specs = args.models or ([] if others else ["resnet18_cifar:1", "resnet50:1", "gpt2_small:1"])
    for spec in specs:
        name, _, batch = spec.partition(":")
        rows.append(bench(name, int(batch or 1), OptimizerSpec(kind="adam", lr=1e-3)))
    if args.third_party:
        rows += bench_third_party()
    if args.cost_mobilenet:
        rows.append(bench_cost_mobilenet(verify=not args.no_verify))
    print(pd.DataFrame(rows).set_index(["model", "batch"]).T.to_string())


if __name__ == "__main__":
    main()
