"""MTrain-Converting (Algorithm 1), the DFS optimum over partition ratios (Table III), and single-FPGA mapping.

* **Accelerator selection.** Each FPGA gets the IP (EF-Train or DarkFPGA, each in its best design for this
  step on this FPGA) with the best throughput on the whole step at the full batch, DRAM not considered
  (Algorithm 1, step 2).
* **PE-based initial partition.** ``ratio_i = B · PE_i / Σ PE`` in multiples of the step size (largest
  remainders; the last share takes what the step leaves over).
* **Duty-cycle-based re-partition.** From the least busy accelerator ``w`` (by duty cycle), move
  ``step`` samples from ``w`` to each other accelerator in turn, re-map each candidate, keep the
  fastest if it beats the current mapping and start again; otherwise try the next least busy.
* **DFS.** Every ratio whose shares are multiples of ``step`` and sum to B, each mapped by
  MTrain-Mapping; the best throughput (ratios the DRAM cannot hold are skipped).
* **Single-FPGA mappings.** Both searches also weigh the whole batch on one accelerator, unsplit (the
  single mapping strategy of section VI-C), and each ratio that gives one accelerator the whole batch as
  MTrain-Mapping maps it (its batch-wise and update sub-operations free to run elsewhere), so MTrain is never
  below the single-FPGA mapping of its accelerators and the DFS, which weighs every ratio Converting can reach,
  never below Converting.
* **Incumbents.** Converting also weighs mappings found before (``Incumbent``): the answer at a lower P2P
  bandwidth, or on the cluster without its last FPGAs (their shares 0), re-timed here. A mapping's list
  schedule never lengthens with more bandwidth (every start and transfer only moves earlier), and one that
  leaves an FPGA idle runs as it did without it, so a search that keeps the old answer never loses throughput
  to more bandwidth or more FPGAs; the local search of Algorithm 1 alone can, as its path through the ratios
  changes (``Search.kept`` says which candidate won).
"""

from __future__ import annotations

import contextlib
import itertools
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from multiprocessing import get_context

import numpy as np

from traincost.errors import ConfigError, DramError
from traincost.fpga.devices import Cluster
from traincost.fpga.evaluator import evaluate_mapping
from traincost.fpga.ip_models import IP_NAMES, TrainingIp, size_ip
from traincost.fpga.ip_specs import IpSpec
from traincost.fpga.mapping import MappingResult, mtrain_mapping
from traincost.fpga.subops import LatencyCache, partition
from traincost.fpga.training_dag import TrainingDag

__all__ = [
    "Search",
    "Incumbent",
    "select_accelerators",
    "sized_ips",
    "initial_ratio",
    "mtrain_converting",
    "dfs_optimum",
    "ratios",
    "map_ratio",
    "single_device",
    "RatioMapper",
    "MappingPool",
]


@dataclass(frozen=True, slots=True)
class Search:
    """The outcome of a search over ratios: the best ratio, its mapping, and how the search went."""

    ratio: tuple[int, ...]
    mapping: MappingResult
    throughput_gflops: float
    ratios_tried: int  # ratios mapped
    seconds: float  # wall time of the search (a shared MappingPool is started before it)
    initial: MappingResult | None = None  # the mapping at the initial ratio (MTrain-Converting only)
    initial_ratio: tuple[int, ...] | None = None
    ratios_feasible: int | None = None  # ratios whose mapping fits the DRAM (DFS only)
    kept: str = "search"  # the candidate that won: the search, "single" (one FPGA, unsplit) or an incumbent's label


@dataclass(frozen=True, slots=True)
class Incumbent:
    """A mapping found before, weighed again by MTrain-Converting: its ratio and its assignment of the sub-operations
    of that ratio's graph, on the first ``len(ratio)`` accelerators; ``label`` says where it was found."""

    ratio: tuple[int, ...]
    assign: np.ndarray
    label: str

    def retimed(
        self,
        dag: TrainingDag,
        accelerators: Sequence[TrainingIp],
        *,
        bandwidth_gb_per_s: float,
        cache: LatencyCache | None = None,
    ) -> tuple[tuple[int, ...], MappingResult]:
        """The same assignment on ``accelerators`` (those beyond its ratio idle) at ``bandwidth_gb_per_s`` (``cache``:
        as in ``partition``).

        Raises:
            ConfigError: more shares than accelerators, or an assignment that is not of this ratio's graph.
        """
        if len(self.ratio) > len(accelerators):
            raise ConfigError(f"incumbent of {self.label}: {len(self.ratio)} shares for {len(accelerators)} accelerators")
        ratio = (*self.ratio, *(0,) * (len(accelerators) - len(self.ratio)))
        graph = partition(dag, ratio, accelerators, cache=cache)
        if len(self.assign) != len(graph) or np.any(self.assign >= len(self.ratio)) or np.any(self.assign < 0):
            raise ConfigError(
                f"incumbent of {self.label}: {len(self.assign)} assignments do not map the {len(graph)} sub-operations "
                f"of ratio {'|'.join(map(str, self.ratio))} onto its {len(self.ratio)} accelerators"
            )
        schedule = evaluate_mapping(graph, self.assign, bandwidth_bytes_per_s=bandwidth_gb_per_s * 1e9)
        return ratio, MappingResult(assign=self.assign, steps=dict.fromkeys(("dram_aware", "balance", "locality"), schedule))


def sized_ips(dag: TrainingDag, cluster: Cluster, specs: Mapping[str, IpSpec]) -> tuple[dict[str, TrainingIp], ...]:
    """Per FPGA, each IP in the design its search finds best for this step on this FPGA at the cluster's batch."""
    return tuple(
        {name: size_ip(specs[name], device, dag.costs, cluster.batch) for name in IP_NAMES} for device in cluster.devices
    )


def select_accelerators(
    dag: TrainingDag, cluster: Cluster, specs: Mapping[str, IpSpec], *, sized: Sequence[Mapping[str, TrainingIp]] | None = None
) -> tuple[TrainingIp, ...]:
    """Per FPGA, the IP that runs the whole step fastest at the cluster's batch, each IP in its best design
    (Algorithm 1, step 2; DRAM capacity not considered). ``sized``: ``sized_ips``'s, if already searched."""
    sized = sized_ips(dag, cluster, specs) if sized is None else sized
    return tuple(min(ips.values(), key=lambda ip: dag.costs.seconds(ip, cluster.batch)) for ips in sized)


def _check_search(batch: int, bandwidth_gb_per_s: float, step: int) -> None:
    """The arguments every ratio search shares, checked before any mapping."""
    if not bandwidth_gb_per_s > 0 or not np.isfinite(bandwidth_gb_per_s):
        raise ConfigError(f"P2P bandwidth {bandwidth_gb_per_s:g} GB/s: expected a finite number > 0")
    if step < 1:
        raise ConfigError(f"ratio step {step}: expected an integer >= 1 (samples moved per re-partition move)")
    if batch < 1:
        raise ConfigError(f"batch {batch}: expected an integer >= 1")


def initial_ratio(accelerators: Sequence[TrainingIp], batch: int, step: int = 1) -> tuple[int, ...]:
    """Samples per accelerator in proportion to its processing elements, in multiples of ``step``
    (largest remainders; the last accelerator takes what the step leaves over, as in ``ratios``)."""
    pes = np.array([ip.tm * ip.tn for ip in accelerators], dtype=np.float64)
    units = batch // step
    exact = units * pes / pes.sum()
    ratio = np.floor(exact).astype(int)
    for i in np.argsort(-(exact - ratio), kind="stable")[: units - int(ratio.sum())]:
        ratio[i] += 1
    ratio *= step
    ratio[-1] += batch - units * step
    return tuple(int(r) for r in ratio)


def single_device(dag: TrainingDag, accelerators: Sequence[TrainingIp], batch: int, index: int) -> MappingResult:
    """The whole step, unsplit, on accelerator ``index`` (its DRAM may overflow: check ``schedule.fits``)."""
    ratio = tuple(batch if i == index else 0 for i in range(len(accelerators)))
    graph = partition(dag, ratio, accelerators)
    assign = np.full(len(graph), index)
    schedule = evaluate_mapping(graph, assign, bandwidth_bytes_per_s=1.0)
    return MappingResult(assign=assign, steps=dict.fromkeys(("dram_aware", "balance", "locality"), schedule))


def _best_corner(
    dag: TrainingDag, accelerators: Sequence[TrainingIp], batch: int, mapper: RatioMapper
) -> tuple[tuple[int, ...], MappingResult, str] | None:
    """The fastest mapping that gives one accelerator the whole batch and fits the DRAM: unsplit on it alone
    ("single"), or its ratio as MTrain-Mapping maps it ("search"); with its ratio and which of the two it is."""
    capacity = np.array([ip.device.dram_bytes for ip in accelerators])
    corners = [tuple(batch if j == i else 0 for j in range(len(accelerators))) for i in range(len(accelerators))]
    candidates = [(r, m, "search") for r, m in zip(corners, mapper.map_many(corners), strict=True) if m is not None]
    for i, ratio in enumerate(corners):
        alone = single_device(dag, accelerators, batch, i)
        if alone.schedule.fits(capacity):
            candidates.append((ratio, alone, "single"))
    return min(candidates, key=lambda c: c[1].schedule.latency_s, default=None)


def map_ratio(
    dag: TrainingDag,
    accelerators: Sequence[TrainingIp],
    ratio: Sequence[int],
    *,
    bandwidth_gb_per_s: float,
    cache: LatencyCache | None = None,
) -> MappingResult:
    """MTrain-Mapping of the graph partitioned by ``ratio`` (``cache``: as in ``partition``)."""
    graph = partition(dag, ratio, accelerators, cache=cache)
    capacity = np.array([ip.device.dram_bytes for ip in accelerators])
    names = tuple(ip.device.name for ip in accelerators)
    return mtrain_mapping(graph, capacity_bytes=capacity, bandwidth_bytes_per_s=bandwidth_gb_per_s * 1e9, names=names)


class MappingPool:
    """Processes that map partition ratios of one training step onto one set of accelerators, at any
    bandwidth: spawned once (each holds the DAG; none for ``workers`` 1) and shared by every search
    over those accelerators, with the compute latencies each has computed."""

    def __init__(self, dag: TrainingDag, accelerators: Sequence[TrainingIp], *, workers: int = 1) -> None:
        self._args = (dag, tuple(accelerators), LatencyCache())
        self._pool = None
        if workers > 1:
            self._pool = get_context("spawn").Pool(workers, initializer=_install, initargs=self._args)

    @property
    def cache(self) -> LatencyCache:
        """The designs and latencies this process has computed."""
        return self._args[2]

    def __enter__(self) -> MappingPool:
        return self

    def __exit__(self, *_: object) -> None:
        if self._pool is not None:
            self._pool.terminate()

    def map(self, ratios: Sequence[tuple[int, ...]], bandwidth_gb_per_s: float) -> list[MappingResult | None]:
        """The mapping of each ratio, None where the DRAM cannot hold it (on the processes when there are several)."""
        if self._pool is not None and len(ratios) > 1:
            return self._pool.map(_map_installed, [(bandwidth_gb_per_s, r) for r in ratios])
        dag, accelerators, cache = self._args
        return [_try_map(dag, accelerators, bandwidth_gb_per_s, cache, r) for r in ratios]


class RatioMapper:
    """MTrain-Mapping per ratio at one bandwidth, each ratio mapped once (a search meets the same ratios
    again), on a ``MappingPool``."""

    def __init__(self, pool: MappingPool, *, bandwidth_gb_per_s: float) -> None:
        self._pool, self._bandwidth = pool, bandwidth_gb_per_s
        self._cache: dict[tuple[int, ...], MappingResult | None] = {}

    @property
    def mapped(self) -> int:
        return len(self._cache)

    def map_many(self, ratios: Sequence[tuple[int, ...]]) -> list[MappingResult | None]:
        """The mapping of each ratio, None where the DRAM cannot hold it."""
        todo = [r for r in dict.fromkeys(ratios) if r not in self._cache]
        self._cache.update(zip(todo, self._pool.map(todo, self._bandwidth), strict=True))
        return [self._cache[r] for r in ratios]


_INSTALLED: tuple | None = None


def _install(dag: TrainingDag, accelerators: tuple[TrainingIp, ...], cache: LatencyCache) -> None:
    global _INSTALLED  # noqa: PLW0603 (one pool's inputs per worker process)
    _INSTALLED = (dag, accelerators, cache)


def _map_installed(task: tuple[float, tuple[int, ...]]) -> MappingResult | None:
    dag, accelerators, cache = _INSTALLED
    bandwidth_gb_per_s, ratio = task
    return _try_map(dag, accelerators, bandwidth_gb_per_s, cache, ratio)


def _try_map(
    dag: TrainingDag,
    accelerators: Sequence[TrainingIp],
    bandwidth_gb_per_s: float,
    cache: LatencyCache,
    ratio: tuple[int, ...],
) -> MappingResult | None:
    try:
        return map_ratio(dag, accelerators, ratio, bandwidth_gb_per_s=bandwidth_gb_per_s, cache=cache)
    except DramError:
        return None  # the DRAM cannot hold this ratio


def _gflops(dag: TrainingDag, batch: int, mapping: MappingResult) -> float:
    return dag.flops(batch) / mapping.schedule.latency_s / 1e9


def mtrain_converting(
    dag: TrainingDag,
    accelerators: Sequence[TrainingIp],
    batch: int,
    *,
    bandwidth_gb_per_s: float,
    step: int = 1,
    workers: int = 1,
    pool: MappingPool | None = None,
    incumbents: Sequence[Incumbent] = (),
) -> Search:
    """Algorithm 1 from the PE-based ratio (``workers`` processes map each move's candidates, or ``pool``'s), then
    the best of its answer, the one-FPGA mappings and the ``incumbents`` re-timed (ties: the earlier of these).

    Raises:
        DramError: the DRAM cannot hold the initial ratio.
        ConfigError: the bandwidth, step or batch is out of range, or an
            incumbent does not fit these accelerators.
    """
    _check_search(batch, bandwidth_gb_per_s, step)
    began = time.perf_counter()
    ratio = start = initial_ratio(accelerators, batch, step)
    with contextlib.ExitStack() as own:
        shared = pool if pool is not None else own.enter_context(MappingPool(dag, accelerators, workers=workers))
        mapper = RatioMapper(shared, bandwidth_gb_per_s=bandwidth_gb_per_s)
        current = first = map_ratio(dag, accelerators, ratio, bandwidth_gb_per_s=bandwidth_gb_per_s)
        improved = True
        while improved:
            improved = False
            for w in np.argsort(current.schedule.duty(), kind="stable"):
                if ratio[w] < step:
                    continue
                trials = [
                    tuple(ratio[i] + (step if i == r else -step if i == w else 0) for i in range(len(ratio)))
                    for r in range(len(ratio))
                    if r != w
                ]
                candidates = [(m, t) for m, t in zip(mapper.map_many(trials), trials, strict=True) if m is not None]
                if not candidates:
                    continue
                best, best_ratio = min(candidates, key=lambda c: c[0].schedule.latency_s)
                if best.schedule.latency_s < current.schedule.latency_s:
                    current, ratio, improved = best, best_ratio, True
                    break
        tried = mapper.mapped + 1
        candidates = [(tuple(ratio), current, "search")]
        corner = _best_corner(dag, accelerators, batch, mapper)
        candidates += [corner] if corner is not None else []
        capacity = np.array([ip.device.dram_bytes for ip in accelerators])
        for incumbent in incumbents:
            ratio, mapping = incumbent.retimed(dag, accelerators, bandwidth_gb_per_s=bandwidth_gb_per_s, cache=shared.cache)
            if mapping.schedule.fits(capacity):
                candidates.append((ratio, mapping, incumbent.label))
    ratio, current, kept = min(candidates, key=lambda c: c[1].schedule.latency_s)
    return Search(
        ratio=ratio,
        mapping=current,
        throughput_gflops=_gflops(dag, batch, current),
        ratios_tried=tried,
        seconds=time.perf_counter() - began,
        initial=first,
        initial_ratio=start,
        kept=kept,
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
    dag: TrainingDag,
    accelerators: Sequence[TrainingIp],
    batch: int,
    *,
    bandwidth_gb_per_s: float,
    step: int = 1,
    workers: int = 1,
    pool: MappingPool | None = None,
) -> Search:
    """The best throughput over every ratio (Table III's DFS; ``workers`` processes map the ratios, or ``pool``'s).

    Raises:
        DramError: no ratio fits the cluster's DRAM.
        ConfigError: the bandwidth, step or batch is out of range.
    """
    _check_search(batch, bandwidth_gb_per_s, step)
    began = time.perf_counter()
    candidates = ratios(batch, len(accelerators), step)
    with contextlib.ExitStack() as own:
        shared = pool if pool is not None else own.enter_context(MappingPool(dag, accelerators, workers=workers))
        mapper = RatioMapper(shared, bandwidth_gb_per_s=bandwidth_gb_per_s)
        results = mapper.map_many(candidates)
        mapped = [(r, m, "search") for r, m in zip(candidates, results, strict=True) if m is not None]
        corner = _best_corner(dag, accelerators, batch, mapper)  # its mapped ratios are among the candidates already
    best = min([*mapped, *([corner] if corner is not None else [])], key=lambda c: c[1].schedule.latency_s, default=None)
    if best is None:
        raise DramError(f"no partition of batch {batch} fits the DRAM of {[ip.device.name for ip in accelerators]}")
    return Search(
        ratio=best[0],
        mapping=best[1],
        throughput_gflops=_gflops(dag, batch, best[1]),
        ratios_tried=len(candidates),
        seconds=time.perf_counter() - began,
        ratios_feasible=len(mapped),
        kept=best[2],
    )
