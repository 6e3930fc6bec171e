"""The TM-Training study: every policy at every Tier 1 size on one workload, as one table.

A run is (workload, variant, policy, ratio). Variants are the paper's sensitivity studies:

* ``base`` — Table 3's workload on Table 1 / Table 2's system;
* ``double_batch`` — twice the batch, and twice the address space per chip in Tier 2 only (Tier 1
  keeps its size; the HBM-only baseline doubles its HBM) (Figure 13);
* ``half_tier2_bandwidth`` — Tier 2 reads and writes at half speed (Figure 15).

Tier 1 is ``ratio × model bytes per chip`` (parameters in BF16 over all chips), capped at the address
space. Every row also carries the normalisations the figures use: energy efficiency (samples per
joule) and throughput over the HBM-only baseline of the same variant, migrated bytes over the ideal
policy's at the same ratio and over the data one iteration touches.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from traincost.errors import ConfigError
from traincost.progress import progress
from traincost.tiered.autotm import AutoTMPlan, plan_autotm
from traincost.tiered.engine import Outcome, simulate, tier1_bytes_for_ratio
from traincost.tiered.policies import POLICIES, make_policy
from traincost.tiered.system import TieredSystem
from traincost.tiered.trace import Trace, build_trace
from traincost.tiered.walk import Walk
from traincost.workload import Workload

__all__ = ["Variant", "VARIANTS", "study_runs", "variant_system", "model_bytes_per_chip", "BASELINE"]

log = logging.getLogger(__name__)

BASELINE = "hbm_only"
_PLANNED = ("autotm", "deeptm")


@dataclass(frozen=True, slots=True)
class Variant:
    """A sensitivity study: the batch and the memory system it changes."""

    name: str
    batch_factor: int = 1
    tier2_bandwidth_factor: float = 1.0


VARIANTS: Mapping[str, Variant] = {
    "base": Variant("base"),
    "double_batch": Variant("double_batch", batch_factor=2),
    "half_tier2_bandwidth": Variant("half_tier2_bandwidth", tier2_bandwidth_factor=0.5),
}


def model_bytes_per_chip(workload: Workload, *, word_bytes: int) -> float:
    """The model size the Tier 1 ratio refers to: all parameters at the accelerator's word size over all chips."""
    meta = workload.meta
    if "parameters_total" in meta and "chips" in meta:
        return float(meta["parameters_total"]) * word_bytes / float(meta["chips"])
    weights = workload.tensors[workload.tensors["kind"] == "weight"]
    return float((weights["bytes"] // weights["dtype_bytes"].clip(lower=1)).sum() * word_bytes)


def variant_system(system: TieredSystem, variant: Variant) -> TieredSystem:
    """The system a variant runs on: the address space grows with the batch (in Tier 2), Tier 2's bandwidth scales."""
    return system.with_capacity(system.capacity_bytes * variant.batch_factor).with_tier2_bandwidth(variant.tier2_bandwidth_factor)


def hbm_only_outcome(workload: Workload, system: TieredSystem) -> Outcome:
    """One HBM-only simulation of ``workload`` (what calibration needs: its energy split)."""
    return _timed(Walk.of(build_trace(workload, system)), system, BASELINE, None, system.capacity_bytes)


def study_runs(
    workload: Workload,
    system: TieredSystem,
    *,
    variant: str,
    ratios: Sequence[float],
    policies: Sequence[str],
    autotm_time_limit_s: float = 30.0,
) -> pd.DataFrame:
    """Every policy at every ratio on one workload and system (``hbm_only`` and ``ideal`` always included).

    Columns: ``workload``, ``variant``, ``policy``, ``ratio``, ``tier1_bytes``, ``tier2_bytes``,
    ``tier1_share`` (of the address space), the fields of ``engine.Outcome`` (seconds, joules, bytes),
    ``energy_j``, ``migrated_bytes``, ``samples_per_j``, ``model_bytes`` (per chip), ``data_bytes``
    (every tensor one iteration touches), ``energy_efficiency_vs_hbm``, ``throughput_vs_hbm``,
    ``migration_vs_ideal``, ``migration_vs_data``, and ``plan_status`` (AutoTM / DeepTM: the solve's, optimal or feasible).
    ``hbm_only`` is simulated once and repeated at every ratio; ratios whose Tier 1 is the same size (capped at
    the address space) share one set of simulations, the runs being the same.
    """
    if not ratios:
        raise ConfigError(f"tiered study of {workload.meta.get('model', '?')} ({variant}): no ratios")
    unknown = [p for p in policies if p not in POLICIES]
    if unknown:
        raise ConfigError(
            f"tiered study of {workload.meta.get('model', '?')}: unknown policies {unknown} (known: {', '.join(POLICIES)})"
        )
    policies = list(dict.fromkeys([BASELINE, *policies, "ideal"]))
    trace = build_trace(workload, system)
    walk = Walk.of(trace)
    model_bytes = model_bytes_per_chip(workload, word_bytes=system.hardware.word_bytes)
    baseline = _timed(walk, system, BASELINE, None, system.capacity_bytes)
    rows = []
    runs: dict[float, tuple[AutoTMPlan | None, dict[str, Outcome]]] = {}  # per Tier 1 size: the plan and every outcome
    for ratio in progress(ratios, desc=f"{trace.name} {variant}", unit="ratio"):
        tier1 = tier1_bytes_for_ratio(ratio, model_bytes, system.capacity_bytes)
        if tier1 not in runs:
            plan = _plan(trace, system, tier1, autotm_time_limit_s) if any(p in _PLANNED for p in policies) else None
            runs[tier1] = plan, {p: baseline if p == BASELINE else _timed(walk, system, p, plan, tier1) for p in policies}
        plan, outcomes = runs[tier1]
        for policy in policies:
            outcome = outcomes[policy]
            rows.append(
                {"variant": variant, "policy": policy, "ratio": float(ratio)}
                | _row(outcome)
                | {"plan_status": plan.status if plan is not None and policy in _PLANNED else ""}
            )
    frame = pd.DataFrame(rows)
    frame.insert(0, "workload", trace.name)
    frame["tier1_share"] = frame["tier1_bytes"] / (frame["tier1_bytes"] + frame["tier2_bytes"]).where(
        frame["policy"] != BASELINE, np.inf
    )
    frame.loc[frame["policy"] == BASELINE, "tier1_share"] = 1.0
    frame["model_bytes"] = model_bytes
    frame["data_bytes"] = float(trace.size_bytes[[bool(a) for a in trace.accesses]].sum())
    return _normalise(frame)


def _plan(trace: Trace, system: TieredSystem, tier1_bytes: float, time_limit_s: float) -> AutoTMPlan:
    began = time.perf_counter()
    plan = plan_autotm(trace, system, tier1_bytes=tier1_bytes, time_limit_s=time_limit_s)
    log.info(
        "%s: AutoTM plan for %.2f GB of Tier 1 (%s, %d variables) in %.2f s",
        trace.name,
        tier1_bytes / 1e9,
        plan.status,
        plan.variables,
        time.perf_counter() - began,
    )
    return plan


def _timed(walk: Walk, system: TieredSystem, policy: str, plan: AutoTMPlan | None, tier1_bytes: float) -> Outcome:
    began = time.perf_counter()
    outcome = simulate(walk, system, make_policy(policy, plan=plan.arrays() if plan else None), tier1_bytes=tier1_bytes)
    log.info(
        "%s %s Tier 1 %.2f GB: %.3f s per iteration, %.1f J (%.2f s to simulate)",
        walk.base.name,
        policy,
        tier1_bytes / 1e9,
        outcome.iteration_s,
        outcome.energy_j,
        time.perf_counter() - began,
    )
    return outcome


def _row(outcome: Outcome) -> dict[str, float]:
    return {key: float(value) for key, value in asdict(outcome).items()} | {
        "energy_j": outcome.energy_j,
        "migrated_bytes": outcome.migrated_bytes,
        "samples_per_j": outcome.samples_per_j,
    }


def _normalise(frame: pd.DataFrame) -> pd.DataFrame:
    keys = ["workload", "variant", "ratio"]
    base = frame[frame["policy"] == BASELINE].set_index(keys)
    ideal = frame[frame["policy"] == "ideal"].set_index(keys)
    index = pd.MultiIndex.from_frame(frame[keys])
    frame["energy_efficiency_vs_hbm"] = frame["samples_per_j"].to_numpy() / base["samples_per_j"].reindex(index).to_numpy()
    frame["throughput_vs_hbm"] = frame["samples_per_s"].to_numpy() / base["samples_per_s"].reindex(index).to_numpy()
    reference = ideal["migrated_bytes"].reindex(index).to_numpy()
    frame["migration_vs_ideal"] = np.divide(
        frame["migrated_bytes"].to_numpy(), reference, out=np.full(len(frame), np.nan), where=reference > 0
    )
    frame["migration_vs_data"] = frame["migrated_bytes"] / frame["data_bytes"]
    return frame
