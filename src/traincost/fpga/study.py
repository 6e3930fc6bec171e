"""MTrain section VI on one model: the steps of Figure 8 with the baselines of Figures 9-11, Table III's
search comparison, and the scaling of Figure 12, each as table rows.

Every MTrain mapping is checked against each accelerator's DRAM as it is produced; the baselines
report whether they fit (``fits``) without being held to it, as the paper draws them regardless.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np
import pandas as pd

from traincost.errors import DramError, TraincostError
from traincost.fpga.converting import (
    Incumbent,
    MappingPool,
    Search,
    dfs_optimum,
    mtrain_converting,
    select_accelerators,
    single_device,
    sized_ips,
)
from traincost.fpga.devices import Cluster
from traincost.fpga.evaluator import Schedule
from traincost.fpga.ip_models import TrainingIp, share_design
from traincost.fpga.ip_specs import IpSpec
from traincost.fpga.sharding import ShardedStep, alpa_sharding, hap_sharding
from traincost.fpga.training_dag import TrainingDag
from traincost.progress import progress

__all__ = ["designs", "incumbent_of", "study_rows", "table3_row", "scaling_rows", "scaled_cluster", "strongest_device"]


def strongest_device(cluster: Cluster) -> int:
    """The cluster's most resource-abundant FPGA (most DSPs): where the single-FPGA baselines run."""
    return int(np.argmax([device.dsp for device in cluster.devices]))


def _check_dram(schedule: Schedule, accelerators: Sequence[TrainingIp], what: str) -> None:
    capacity = np.array([ip.device.dram_bytes for ip in accelerators])
    if not schedule.fits(capacity):
        worst = int(np.argmax(schedule.peak_dram_bytes - capacity))
        raise TraincostError(
            f"{what}: the mapping overflows {accelerators[worst].device.name}'s DRAM "
            f"({schedule.peak_dram_bytes[worst] / 2**30:.2f} of {capacity[worst] / 2**30:.2f} GiB)"
        )


def _row(dag: TrainingDag, batch: int, schedule: Schedule, accelerators: Sequence[TrainingIp]) -> dict[str, object]:
    capacity = np.array([ip.device.dram_bytes for ip in accelerators])
    return {
        "latency_s": schedule.latency_s,
        "throughput_gflops": dag.flops(batch) / schedule.latency_s / 1e9,
        "p2p_bytes": schedule.comm_bytes,
        "max_dram_fraction": float(np.max(schedule.peak_dram_bytes / capacity)),
        "fits": bool(schedule.fits(capacity)),
        "busy_fpgas": int(np.count_nonzero(schedule.busy_s)),
    }


def _mechanism(dag: TrainingDag, search: Search, accelerators: Sequence[TrainingIp]) -> dict[str, object]:
    """How MTrain's answer shares the batch: FPGAs given a share, the design each runs at its share, the candidate
    that won, and the assignment (``Incumbent``'s, for a search that follows)."""
    ratio = search.ratio
    designs = [share_design(ip, dag.costs, r) for ip, r in zip(accelerators, ratio, strict=True)]
    return {
        "sharing_fpgas": sum(r > 0 for r in ratio),
        "share_designs": "|".join(f"{ip.tm}x{ip.tn}" for ip in designs),
        "kept": search.kept,
        "assign": "|".join(map(str, search.mapping.assign.tolist())),
    }


def incumbent_of(row: Mapping[str, object], label: str) -> Incumbent:
    """The ``Incumbent`` of a study or scaling row (its ``ratio`` and ``assign``)."""
    return Incumbent(
        ratio=tuple(int(r) for r in str(row["ratio"]).split("|")),
        assign=np.array([int(a) for a in str(row["assign"]).split("|")], dtype=np.int64),
        label=label,
    )


def _sharded_row(step: ShardedStep) -> dict[str, object]:
    return {
        "ratio": "|".join(map(str, step.shares)),
        "latency_s": step.latency_s,
        "throughput_gflops": step.throughput_gflops,
        "p2p_bytes": np.nan,
        "max_dram_fraction": step.max_dram_fraction,
        "fits": step.max_dram_fraction <= 1.0,
        "dp_layers": step.strategy.count("DP"),
        "tp_layers": step.strategy.count("TP"),
    }


def study_rows(
    dag: TrainingDag,
    cluster: Cluster,
    bandwidths: Sequence[float],
    specs: Mapping[str, IpSpec],
    *,
    step: int,
    workers: int = 1,
) -> pd.DataFrame:
    """Per P2P bandwidth: MTrain after each of its four steps (Figure 8; step 4 is MTrain's result, the bandwidths
    searched in ascending order, each also weighing the answer of the one below), Alpa and HAP, and the single-FPGA
    mapping of each IP on the strongest device (Figures 9-11). Step 4's row says how the answer shares the batch
    (``sharing_fpgas``, ``share_designs``, ``kept``, ``assign``); every MTrain row how many FPGAs are busy."""
    sized = sized_ips(dag, cluster, specs)
    accelerators = select_accelerators(dag, cluster, specs, sized=sized)
    singles = {}
    for name, ip in sized[strongest_device(cluster)].items():
        singles[name] = single_device(dag, [ip], cluster.batch, 0).schedule, ip
    rows = []
    bandwidths = sorted(bandwidths)
    with MappingPool(dag, accelerators, workers=workers) as pool:
        searches = _sweep(dag, accelerators, cluster, bandwidths, step=step, pool=pool)
    for bandwidth, search in zip(bandwidths, searches, strict=True):
        base = {"cluster": cluster.name, "batch": cluster.batch, "bandwidth_gb_per_s": float(bandwidth)}
        schedules = [*search.initial.steps.values(), search.mapping.schedule]
        ratios = [search.initial_ratio] * 3 + [search.ratio]
        for number, (schedule, ratio) in enumerate(zip(schedules, ratios, strict=True), start=1):
            _check_dram(schedule, accelerators, f"{cluster.name} at {bandwidth:g} GB/s, MTrain step {number}")
            rows.append(
                base
                | {"method": "MTrain", "step": number, "ratio": "|".join(map(str, ratio))}
                | _row(dag, cluster.batch, schedule, accelerators)
                | (_mechanism(dag, search, accelerators) if number == 4 else {})
            )
        for method, solve in (("Alpa", alpa_sharding), ("HAP", hap_sharding)):
            sharded = solve(dag, accelerators, cluster.batch, bandwidth_gb_per_s=bandwidth)
            rows.append(base | {"method": method, "step": 0} | _sharded_row(sharded))
        for name, (schedule, ip) in singles.items():
            rows.append(
                base
                | {"method": f"single {name}", "step": 0, "ratio": str(cluster.batch)}
                | _row(dag, cluster.batch, schedule, [ip])
            )
    table = pd.DataFrame(rows)
    table["accelerators"] = "|".join(f"{ip.device.name}:{ip.name}" for ip in accelerators)
    table["designs"] = designs(accelerators)
    return table


def _sweep(
    dag: TrainingDag,
    accelerators: Sequence[TrainingIp],
    cluster: Cluster,
    bandwidths: Sequence[float],
    *,
    step: int,
    pool: MappingPool,
    incumbents: Mapping[float, Sequence[Incumbent]] | None = None,
) -> list[Search]:
    """MTrain-Converting at each of the ascending ``bandwidths``, each search weighing again the answer of the
    bandwidth below it and ``incumbents`` of its bandwidth (a smaller cluster's answers)."""
    searches: list[Search] = []
    for bandwidth in progress(bandwidths, desc=f"MTrain {cluster.name}", unit="bandwidth"):
        given = list((incumbents or {}).get(float(bandwidth), ()))
        if searches:
            below = searches[-1]
            given.append(Incumbent(below.ratio, below.mapping.assign, f"{bandwidths[len(searches) - 1]:g} GB/s"))
        searches.append(
            mtrain_converting(
                dag, accelerators, cluster.batch, bandwidth_gb_per_s=bandwidth, step=step, pool=pool, incumbents=given
            )
        )
    return searches


def designs(accelerators: Sequence[TrainingIp]) -> str:
    """Each accelerator's array, ``device:IP:tm x tn``, joined by ``|``."""
    return "|".join(f"{ip.device.name}:{ip.name}:{ip.tm}x{ip.tn}" for ip in accelerators)


def _search_fields(prefix: str, search: Search) -> dict[str, object]:
    return {
        f"{prefix}_gflops": search.throughput_gflops,
        f"{prefix}_s": search.seconds,
        f"{prefix}_ratio": "|".join(map(str, search.ratio)),
        f"{prefix}_ratios_mapped": search.ratios_tried,
    }


def table3_row(
    dag: TrainingDag, cluster: Cluster, specs: Mapping[str, IpSpec], *, bandwidth_gb_per_s: float, step: int, workers: int = 1
) -> dict[str, object]:
    """Table III: MTrain-Converting beside the DFS optimum over every ratio at ``step`` samples. A step the cluster's
    DRAM cannot hold (at Converting's first ratio, or at any) is a row of its own: no throughput, ``fits`` false and
    the reason in ``note``."""
    accelerators = select_accelerators(dag, cluster, specs)
    cell = {"cluster": cluster.name, "batch": cluster.batch, "bandwidth_gb_per_s": bandwidth_gb_per_s, "ratio_step": step}
    with MappingPool(dag, accelerators, workers=workers) as pool:
        search = {"bandwidth_gb_per_s": bandwidth_gb_per_s, "step": step, "pool": pool}
        try:
            converted = mtrain_converting(dag, accelerators, cluster.batch, **search)
            dfs = dfs_optimum(dag, accelerators, cluster.batch, **search)
        except DramError as error:
            return cell | _unfit(str(error), designs(accelerators))
    for search, what in ((converted, "MTrain-Converting"), (dfs, "DFS")):
        _check_dram(search.mapping.schedule, accelerators, f"{cluster.name}, {what}")
    if dfs.throughput_gflops < converted.throughput_gflops * (1 - 1e-9):
        raise TraincostError(
            f"{cluster.name}: the DFS optimum ({dfs.throughput_gflops:.1f} GFLOPS) is below MTrain-Converting "
            f"({converted.throughput_gflops:.1f}); the DFS must weigh every ratio Converting reaches"
        )
    return cell | {
        "ratios_feasible": dfs.ratios_feasible,
        **_search_fields("dfs", dfs),
        **_search_fields("converting", converted),
        "converting_vs_dfs": converted.throughput_gflops / dfs.throughput_gflops,
        "dfs_vs_converting_time": dfs.seconds / converted.seconds,
        "designs": designs(accelerators),
        "fits": True,
        "note": "",
    }


def _unfit(reason: str, designs_text: str) -> dict[str, object]:
    """Table III's fields for a step the DRAM cannot hold: no search result, the reason."""
    searched = {f"{p}_{f}": np.nan for p in ("dfs", "converting") for f in ("gflops", "s", "ratios_mapped")}
    return searched | {
        "ratios_feasible": np.nan,
        "dfs_ratio": "",
        "converting_ratio": "",
        "converting_vs_dfs": np.nan,
        "dfs_vs_converting_time": np.nan,
        "designs": designs_text,
        "fits": False,
        "note": reason,
    }


def scaled_cluster(base: Cluster, pairs: int) -> Cluster:
    """``pairs`` copies of the base cluster's devices (Figure 12: 1 to 4 pairs of U50LV + U30), same batch."""
    devices = tuple(replace(device, name=f"{device.name}#{copy}") for copy in range(1, pairs + 1) for device in base.devices)
    return replace(base, name=f"{base.name}x{pairs}", devices=devices)


def scaling_rows(
    dag: TrainingDag,
    base: Cluster,
    pair_counts: Sequence[int],
    bandwidths: Sequence[float],
    specs: Mapping[str, IpSpec],
    *,
    step: int,
    workers: int = 1,
    fewer_fpgas: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Figure 12: MTrain's throughput per bandwidth and its search time as the cluster grows. Each size's search
    weighs again the answer of the size below it at the same bandwidth (``fewer_fpgas``: the table of sizes below
    ``pair_counts[0]``, if any), its new FPGAs idle."""
    rows = []
    bandwidths = sorted(bandwidths)
    smaller = _incumbents(fewer_fpgas)
    for pairs in progress(sorted(pair_counts), desc=f"MTrain scaling {base.name}", unit="size"):
        cluster = scaled_cluster(base, pairs)
        accelerators = select_accelerators(dag, cluster, specs)
        with MappingPool(dag, accelerators, workers=workers) as pool:
            searches = _sweep(dag, accelerators, cluster, bandwidths, step=step, pool=pool, incumbents=smaller)
        for bandwidth, search in zip(bandwidths, searches, strict=True):
            _check_dram(search.mapping.schedule, accelerators, f"{cluster.name} at {bandwidth:g} GB/s")
            rows.append(
                {
                    "cluster": cluster.name,
                    "fpgas": len(cluster.devices),
                    "bandwidth_gb_per_s": float(bandwidth),
                    "ratio": "|".join(map(str, search.ratio)),
                    "search_s": search.seconds,
                }
                | _row(dag, cluster.batch, search.mapping.schedule, accelerators)
                | _mechanism(dag, search, accelerators)
            )
        smaller = _incumbents(pd.DataFrame(rows))
    return pd.DataFrame(rows)


def _incumbents(table: pd.DataFrame | None) -> dict[float, list[Incumbent]]:
    """Per bandwidth, the answer of a scaling table's largest cluster (none for no table)."""
    if table is None or table.empty:
        return {}
    largest = table[table["fpgas"] == table["fpgas"].max()]
    return {float(row["bandwidth_gb_per_s"]): [incumbent_of(row, f"{row['fpgas']} FPGAs")] for _, row in largest.iterrows()}
