"""Wall time of each front-end stage and the size of each graph, printed as a table.

    python bench/frontend.py [model[:batch] ...]      (default: resnet18_cifar:1 resnet50:1 gpt2_small:1)

Target: the whole chain for ResNet-18 CIFAR under 60 s on 2 cores. Per stage: wall and CPU seconds
(every thread's; the measure that holds on a shared machine) and the process's peak RSS so far (MB).

GPT-2 124M (batch 1, AdamW), `traincost train-graph` and `traincost decompose` run alone under
`/usr/bin/time -v` (maximum RSS), on this 2-core machine with other work on it (load 3 to 4):

| stage | before (commit c598d51) | after |
|---|---|---|
| train-graph (now with its optimizer check) | 115 s, 14.6 GB | 43.8 s (CPU 27.4 s), 3.9 GB |
| decompose, no verification | 135 s, 14.4 GB | 16.8 s (CPU 12.3 s), 3.6 GB |
| decompose, verified | > 24 GB, not run | node by node passes (peak 7.5 GB, CPU 97 s); a 9 GB guard stopped the end-to-end part |
"""

from __future__ import annotations

import argparse
import resource
import time

import pandas as pd

from traincost.frontend.decompose import decompose, verify_decomposition
from traincost.frontend.export import export_model
from traincost.frontend.lower import lower
from traincost.frontend.optimizer import OptimizerSpec
from traincost.frontend.train_graph import build_train_step
from traincost.memory.liveness import memory_profile


def bench(name: str, batch: int) -> dict[str, object]:
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
    train = build_train_step(model, OptimizerSpec(kind="adam", lr=1e-3))
    lap("train_graph")
    decomposed = decompose(train)
    lap("decompose")
    check = verify_decomposition(train, decomposed)
    lap("verify")
    workload = lower(decomposed)
    lap("lower")
    memory_profile(workload)
    lap("memory")
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", default=["resnet18_cifar:1", "resnet50:1", "gpt2_small:1"])
    args = parser.parse_args()
    rows = []
    for spec in args.models:
        name, _, batch = spec.partition(":")
        rows.append(bench(name, int(batch or 1)))
    print(pd.DataFrame(rows).set_index(["model", "batch"]).T.to_string())


if __name__ == "__main__":
    main()
