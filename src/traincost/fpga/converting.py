"""MTrain-Converting (Algorithm 1), the DFS optimum over partition ratios (Table III), and single-FPGA mapping.

* **Accelerator selection.** Each FPGA gets the IP (EF-Train or DarkFPGA, sized to it) with the best
  throughput on the whole step at the full batch, DRAM not considered (Algorithm 1, step 2).
* **PE-based initial partition.** ``ratio_i = B · PE_i / Σ PE`` (largest remainders, summing to B).
* **Duty-cycle-based re-partition.** From the least busy accelerator ``w`` (by duty cycle), move
  ``step`` samples from ``w`` to each other accelerator in turn, re-map each candidate, keep the
  fastest if it beats the current mapping and start again; otherwise try the next least busy.
* **DFS.** Every ratio whose shares are multiples of ``step`` and sum to B, each mapped by
  MTrain-Mapping; the best throughput (ratios the DRAM cannot hold are skipped).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from traincost.errors import ConfigError
from traincost.fpga.devices import Cluster
from traincost.fpga.ip_models import IP_NAMES, TrainingIp, size_ip
from traincost.fpga.mapping import MappingResult, mtrain_mapping
from traincost.fpga.subops import partition
from traincost.fpga.training_dag import TrainingDag

__all__ = ["Search", "select_accelerators", "initial_ratio", "mtrain_converting", "dfs_optimum", "ratios", "map_ratio"]


@dataclass(frozen=True, slots=True)
class Search:
    """The outcome of a search over ratios: the best ratio, its mapping, and how the search went."""

    ratio: tuple[int, ...]
    mapping: MappingResult
    throughput_gflops: float
    ratios_tried: int
    seconds: float
    initial: MappingResult | None = None  # the mapping at the initial ratio (MTrain-Converting only)


def select_accelerators(dag: TrainingDag, cluster: Cluster) -> tuple[TrainingIp, ...]:
    """Per FPGA, the sized IP that runs the whole step fastest."""
    chosen = []
    costs = dag.costs
    for device in cluster.devices:
        ips = [size_ip(name, device) for name in IP_NAMES]
        chosen.append(min(ips, key=lambda ip: costs.seconds(ip, cluster.batch)))
    return tuple(chosen)


def initial_ratio(accelerators: Sequence[TrainingIp], batch: int) -> tuple[int, ...]:
    """Samples per accelerator in proportion to its processing elements (largest remainders)."""
    pes = np.array([ip.tm * ip.tn for ip in accelerators], dtype=np.float64)
    exact = batch * pes / pes.sum()
    ratio = np.floor(exact).astype(int)
    for i in np.argsort(-(exact - ratio), kind="stable")[: batch - int(ratio.sum())]:
        ratio[i] += 1
    return tuple(int(r) for r in ratio)


def map_ratio(
    dag: TrainingDag, accelerators: Sequence[TrainingIp], ratio: Sequence[int], *, bandwidth_gb_per_s: float
) -> MappingResult:
    """MTrain-Mapping of the graph partitioned by ``ratio``."""
    graph = partition(dag, ratio, accelerators)
    capacity = np.array([ip.device.dram_bytes for ip in accelerators])
    names = tuple(ip.device.name for ip in accelerators)
    return mtrain_mapping(graph, capacity_bytes=capacity, bandwidth_bytes_per_s=bandwidth_gb_per_s * 1e9, names=names)


def _gflops(dag: TrainingDag, batch: int, mapping: MappingResult) -> float:
    return dag.flops(batch) / mapping.schedule.latency_s / 1e9


def mtrain_converting(
    dag: TrainingDag, accelerators: Sequence[TrainingIp], batch: int, *, bandwidth_gb_per_s: float, step: int = 1
) -> Search:
    """Algorithm 1 from the PE-based ratio."""
    began = time.perf_counter()
    ratio = initial_ratio(accelerators, batch)
    current = first = map_ratio(dag, accelerators, ratio, bandwidth_gb_per_s=bandwidth_gb_per_s)
    tried = 1
    improved = True
    while improved:
        improved = False
        for w in np.argsort(current.schedule.duty(), kind="stable"):
            if ratio[w] < step:
                continue
            candidates = []
            for r in range(len(ratio)):
                if r == w:
                    continue
                trial = list(ratio)
                trial[r] += step
                trial[w] -= step
                try:
                    candidates.append((map_ratio(dag, accelerators, trial, bandwidth_gb_per_s=bandwidth_gb_per_s), tuple(trial)))
                except ConfigError:
                    continue  # the DRAM cannot hold this ratio
                tried += 1
            if not candidates:
                continue
            best, best_ratio = min(candidates, key=lambda c: c[0].schedule.latency_s)
            if best.schedule.latency_s < current.schedule.latency_s:
                current, ratio, improved = best, best_ratio, True
                break
    return Search(
        ratio=tuple(ratio),
        mapping=current,
        throughput_gflops=_gflops(dag, batch, current),
        ratios_tried=tried,
        seconds=time.perf_counter() - began,
        initial=first,
    )


def ratios(batch: int, parts: int, step: int) -> list[tuple[int, ...]]:
    """Every split of ``batch`` into ``parts`` non-negative shares that are multiples of ``step`` (the last
    share takes the remainder when ``step`` does not divide the batch)."""
    units = batch // step
    out = []
    for cut in itertools.combinations(range(units + parts - 1), parts - 1):
        shares = np.diff([-1, *cut, units + parts - 1]) - 1
        ratio = [int(s) * step for s in shares]
        ratio[-1] += batch - units * step
        out.append(tuple(ratio))
    return out


def dfs_optimum(
    dag: TrainingDag, accelerators: Sequence[TrainingIp], batch: int, *, bandwidth_gb_per_s: float, step: int = 1
) -> Search:
    """The best throughput over every ratio (Table III's DFS).

    Raises:
        ConfigError: no ratio fits the cluster's DRAM.
    """
    began = time.perf_counter()
    best = None
    candidates = ratios(batch, len(accelerators), step)
    for ratio in candidates:
        try:
            mapping = map_ratio(dag, accelerators, ratio, bandwidth_gb_per_s=bandwidth_gb_per_s)
        except ConfigError:
            continue
        if best is None or mapping.schedule.latency_s < best[1].schedule.latency_s:
            best = (ratio, mapping)
    if best is None:
        raise ConfigError(f"no partition of batch {batch} fits the DRAM of {[ip.device.name for ip in accelerators]}")
    return Search(
        ratio=best[0],
        mapping=best[1],
        throughput_gflops=_gflops(dag, batch, best[1]),
        ratios_tried=len(candidates),
        seconds=time.perf_counter() - began,
    )
