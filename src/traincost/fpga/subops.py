"""MTrain-Converting's partition step: a training DAG and a batch partition ratio give the multi-branch
graph G*_model, and every sub-operation's compute latency on every accelerator.

A splittable node (FP, BP of a non-batch-wise layer, and every WU) becomes one sub-operation per
branch ``i`` with ``ratio[i] > 0`` samples; a batch-wise node (BN, the loss) and every update stay one
sub-operation over the whole batch, where the branches meet. An edge between two split nodes joins
branch ``i`` to branch ``i``; an edge into or out of an unsplit node joins it to every branch. Bytes
that grow with the batch are scaled by the samples the edge carries. Each FPGA runs the design its IP sizes for
the share it is given (``share_design``: DarkFPGA's batch lanes), whichever branch a sub-operation belongs to.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from traincost.errors import ConfigError
from traincost.fpga.ip_models import TrainingIp, share_design
from traincost.fpga.training_dag import TrainingDag

__all__ = ["SubOpGraph", "LatencyCache", "partition"]


@dataclass(frozen=True, slots=True)
class SubOpGraph:
    """Sub-operations in a topological order, with per-accelerator latencies and their data."""

    node: np.ndarray  # DAG node of each sub-operation
    branch: np.ndarray  # branch index, -1 for an unsplit sub-operation
    samples: np.ndarray  # batch share
    seconds: np.ndarray  # (sub-operations, accelerators) compute latency
    preds: tuple[tuple[tuple[int, float], ...], ...]  # per sub-op: (predecessor, bytes it sends)
    succs: tuple[tuple[int, ...], ...]
    edge_src: np.ndarray  # every edge's producer sub-operation (the pairs of ``preds``, flat)
    edge_dst: np.ndarray  # and its consumer
    out_bytes: np.ndarray  # bytes a sub-op's outputs keep in DRAM until its last reader finishes
    state_bytes: np.ndarray  # weights and optimizer states a sub-op needs where it runs (one copy per device and DAG node)
    ratio: tuple[int, ...]
    flops: float

    def __len__(self) -> int:
        return len(self.node)


@dataclass
class LatencyCache:
    """What the partitions of one training step onto one set of accelerators share: per (accelerator, share) the
    design it runs, per (accelerator, design ``tm``, ``tn``, samples) every DAG node's compute seconds."""

    designs: dict[tuple[int, int], TrainingIp] = field(default_factory=dict)
    seconds: dict[tuple[int, int, int, int], np.ndarray] = field(default_factory=dict)

    def design(self, index: int, ip: TrainingIp, dag: TrainingDag, share: int) -> TrainingIp:
        """The design accelerator ``index`` (``ip`` at the whole batch) runs when given ``share`` samples."""
        key = (index, share)
        if key not in self.designs:
            self.designs[key] = share_design(ip, dag.costs, share)
        return self.designs[key]


def partition(
    dag: TrainingDag, ratio: Sequence[int], accelerators: Sequence[TrainingIp], *, cache: LatencyCache | None = None
) -> SubOpGraph:
    """G*_model for ``ratio`` (samples per branch, one branch per accelerator; ``accelerators``: each FPGA's design
    at the whole batch). ``cache`` keeps designs and latencies across the ratios of one search.

    Raises:
        ConfigError: a ratio of the wrong length, with a negative share, or summing to nothing.
    """
    ratio = tuple(int(r) for r in ratio)
    if len(ratio) != len(accelerators) or min(ratio) < 0 or sum(ratio) < 1:
        raise ConfigError(f"partition ratio {ratio}: expected {len(accelerators)} non-negative shares summing to the batch")
    batch = sum(ratio)
    branches = [i for i, r in enumerate(ratio) if r > 0]
    node, branch, samples = [], [], []
    members: list[list[int]] = []
    for n in range(len(dag)):
        split = dag.splittable[n] and len(branches) > 1
        ids = []
        for b in branches if split else [-1]:
            ids.append(len(node))
            node.append(n)
            branch.append(b)
            samples.append(ratio[b] if b >= 0 else batch)
        members.append(ids)
    preds: list[list[tuple[int, float]]] = [[] for _ in node]
    out_bytes = np.zeros(len(node))
    for src, dst, nbytes, per_sample in dag.edges:
        for s in members[src]:
            for d in members[dst]:
                if branch[s] >= 0 and branch[d] >= 0 and branch[s] != branch[d]:
                    continue
                carried = min(samples[s], samples[d]) if per_sample else 1
                preds[d].append((s, nbytes * carried))
    for n, ids in enumerate(members):
        for k in ids:
            out_bytes[k] = dag.out_bytes[n, 0] * samples[k] + dag.out_bytes[n, 1]
    cache = LatencyCache() if cache is None else cache
    designs = tuple(cache.design(a, ip, dag, r) for a, (ip, r) in enumerate(zip(accelerators, ratio, strict=True)))
    seconds = _latencies(dag, members, samples, designs, cache.seconds)
    succs: list[list[int]] = [[] for _ in node]
    for d, incoming in enumerate(preds):
        for s, _ in incoming:
            succs[s].append(d)
    return SubOpGraph(
        node=np.array(node),
        branch=np.array(branch),
        samples=np.array(samples),
        seconds=seconds,
        preds=tuple(tuple(p) for p in preds),
        succs=tuple(tuple(s) for s in succs),
        edge_src=np.array([s for incoming in preds for s, _ in incoming], dtype=np.int64),
        edge_dst=np.array([d for d, incoming in enumerate(preds) for _ in incoming], dtype=np.int64),
        out_bytes=out_bytes,
        state_bytes=dag.state_bytes[node],
        ratio=ratio,
        flops=dag.flops(batch),
    )


def _latencies(
    dag: TrainingDag,
    members: list[list[int]],
    samples: list[int],
    designs: Sequence[TrainingIp],
    cache: dict[tuple[int, int, int, int], np.ndarray],
) -> np.ndarray:
    """(sub-operations, accelerators): compute seconds of each sub-operation at its batch share on each design."""
    seconds = np.zeros((len(samples), len(designs)))
    for n, ids in enumerate(members):
        for k in ids:
            for a, ip in enumerate(designs):
                key = (a, ip.tm, ip.tn, samples[k])
                if key not in cache:
                    cache[key] = dag.costs.seconds_per_part(ip, samples[k], dag.ops)
                seconds[k, a] = cache[key][n]
    return seconds
