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

A study also returns its ``record`` (``tiered.record``): every simulation's tally and plan. Given the record of
the same study on another system (an ablation's baseline), it re-uses the plans, and the tallies of every
policy whose simulation cannot differ between the two systems (``resimulated``), priced on its own system:
the same table as simulating them again.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields

import numpy as np
import pandas as pd

from traincost.errors import ConfigError
from traincost.progress import progress
from traincost.tiered.autotm import AutoTMPlan, plan_autotm
from traincost.tiered.engine import simulate_tally, tier1_bytes_for_ratio
from traincost.tiered.outcome import Outcome, Tally, price
from traincost.tiered.policies import POLICIES, make_policy
from traincost.tiered.record import Record, Run, run_key
from traincost.tiered.system import TieredSystem
from traincost.tiered.trace import Trace, build_trace
from traincost.tiered.walk import Walk
from traincost.workload import Workload

__all__ = [
    "BASELINE",
    "StudyRuns",
    "VARIANTS",
    "Variant",
    "model_bytes_per_chip",
    "resimulated",
    "study_runs",
    "variant_system",
]

log = logging.getLogger(__name__)

BASELINE = "hbm_only"
_PLANNED = ("autotm", "deeptm")
_PRICING_ONLY = frozenset({"accelerator_energy_scale", "stall_static_power"})  # read by outcome.price, not by a simulation


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
    return price(_timed(Walk.of(build_trace(workload, system)), system, BASELINE, None, system.capacity_bytes), system)


def resimulated(policy: str, system: TieredSystem, recorded: TieredSystem) -> bool:
    """Whether simulating ``policy`` on ``system`` may count otherwise than on ``recorded``: the two differ in a field
    its simulation reads, i.e. in any but the two that only pricing reads (``outcome.price``), or in DeepTM's eviction
    switch for DeepTM, the one policy that reads it. Another hardware object counts as a difference."""
    ignored = _PRICING_ONLY if policy == "deeptm" else _PRICING_ONLY | {"deeptm_eviction_costs_time"}
    for field in fields(TieredSystem):
        ours, theirs = getattr(system, field.name), getattr(recorded, field.name)
        if field.name in ignored or ours is theirs:
            continue
        if field.name == "hardware" or ours != theirs:
            return True
    return False


@dataclass(frozen=True, slots=True)
class StudyRuns:
    """A study's table (``study_runs``'s columns) and its record (every simulation's tally and plan)."""

    table: pd.DataFrame
    record: Record


def study_runs(
    workload: Workload,
    system: TieredSystem,
    *,
    variant: str,
    ratios: Sequence[float],
    policies: Sequence[str],
    autotm_time_limit_s: float = 30.0,
    record: Record | None = None,
    recorded_on: TieredSystem | None = None,
) -> StudyRuns:
    """Every policy at every ratio on one workload and system (``hbm_only`` and ``ideal`` always included).

    ``record`` (with ``recorded_on``, the system it was made on): the record of this study on that system, whose
    plans and, where ``resimulated`` allows, tallies are re-used; it must hold every run the study needs.

    Columns: ``workload``, ``variant``, ``policy``, ``ratio``, ``tier1_bytes``, ``tier2_bytes``,
    ``tier1_share`` (of the address space), the fields of ``outcome.Outcome`` (seconds, joules, bytes),
    ``energy_j``, ``migrated_bytes``, ``samples_per_j``, ``model_bytes`` (per chip), ``data_bytes``
    (every tensor one iteration touches), ``energy_efficiency_vs_hbm``, ``throughput_vs_hbm``,
    ``migration_vs_ideal``, ``migration_vs_data``, and ``plan_status`` (AutoTM / DeepTM: the solve's, optimal or feasible).
    ``hbm_only`` is simulated once and repeated at every ratio; ratios whose Tier 1 is the same size (capped at
    the address space) share one set of simulations, the runs being the same.

    Raises:
        ConfigError: no ratios, an unknown policy, or a record of another trace, system or AutoTM limit, or
            without a run the study needs.
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
    if record is not None and (recorded_on is None or record.key != run_key(trace, recorded_on, autotm_time_limit_s)):
        raise ConfigError(
            f"tiered study of {trace.name} ({variant}): record {record.source or '(given)'} is of another trace, system "
            "or AutoTM limit"
        )
    runner = _Runner(trace, system, time_limit_s=autotm_time_limit_s, record=record, recorded_on=recorded_on, variant=variant)
    model_bytes = model_bytes_per_chip(workload, word_bytes=system.hardware.word_bytes)
    runner.run(system.capacity_bytes, BASELINE, planned=False)
    rows = []
    for ratio in progress(ratios, desc=f"{trace.name} {variant}", unit="ratio"):
        tier1 = tier1_bytes_for_ratio(ratio, model_bytes, system.capacity_bytes)
        plan = runner.plan(tier1) if any(p in _PLANNED for p in policies) else None
        for policy in policies:
            if policy == BASELINE:
                run = runner.run(system.capacity_bytes, BASELINE, planned=False)
            else:
                run = runner.run(tier1, policy, planned=policy in _PLANNED)
            rows.append(
                {"variant": variant, "policy": policy, "ratio": float(ratio)}
                | _row(price(run.tally, system))
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
    return StudyRuns(_normalise(frame), Record(key=run_key(trace, system, autotm_time_limit_s), runs=dict(runner.runs)))


class _Runner:
    """The runs of one study, each made once: solved or simulated, or taken from the record of the same study on
    ``recorded_on``: a plan when AutoTM's program is the same (``_same_program``), a tally when ``resimulated``
    says the simulation is."""

    def __init__(
        self,
        trace: Trace,
        system: TieredSystem,
        *,
        time_limit_s: float,
        record: Record | None,
        recorded_on: TieredSystem | None,
        variant: str,
    ) -> None:
        self.trace = trace
        self.system = system
        self.time_limit_s = time_limit_s
        self.reuse = (record, recorded_on) if record is not None and recorded_on is not None else None
        self.variant = variant
        self.runs: dict[tuple[float, str], Run] = {}
        self._plans: dict[float, AutoTMPlan] = {}
        self._walk: Walk | None = None

    def plan(self, tier1_bytes: float) -> AutoTMPlan:
        """AutoTM's plan for ``tier1_bytes`` of Tier 1."""
        if tier1_bytes not in self._plans:
            if self.reuse is not None and _same_program(self.system, self.reuse[1]):
                recorded = self.reuse[0].plan(tier1_bytes)
                if recorded is None:
                    raise self._missing(tier1_bytes, "AutoTM plan")
                self._plans[tier1_bytes] = recorded
            else:
                self._plans[tier1_bytes] = _plan(self.trace, self.system, tier1_bytes, self.time_limit_s)
        return self._plans[tier1_bytes]

    def run(self, tier1_bytes: float, policy: str, *, planned: bool) -> Run:
        """``policy``'s run at ``tier1_bytes`` of Tier 1 (executing AutoTM's plan if ``planned``)."""
        key = (tier1_bytes, policy)
        if key not in self.runs:
            plan = self.plan(tier1_bytes) if planned else None
            if self.reuse is not None and not resimulated(policy, self.system, self.reuse[1]):
                recorded = self.reuse[0].runs.get(key)
                if recorded is None:
                    raise self._missing(tier1_bytes, f"{policy} run")
                self.runs[key] = Run(recorded.tally, plan)
            else:
                if self._walk is None:
                    self._walk = Walk.of(self.trace)
                self.runs[key] = Run(_timed(self._walk, self.system, policy, plan, tier1_bytes), plan)
        return self.runs[key]

    def _missing(self, tier1_bytes: float, what: str) -> ConfigError:
        source = self.reuse[0].source if self.reuse is not None else ""
        return ConfigError(
            f"tiered study of {self.trace.name} ({self.variant}): record {source} has no {what} at "
            f"{tier1_bytes / 1e9:.4g} GB of Tier 1"
        )


def _same_program(system: TieredSystem, recorded: TieredSystem) -> bool:
    """Whether AutoTM's program is the same on both systems: it reads the trace (the hardware and its clock) and
    Tier 2's bandwidths."""
    return (
        system.hardware is recorded.hardware
        and system.clock_hz == recorded.clock_hz
        and system.tier2.read_bytes_per_s == recorded.tier2.read_bytes_per_s
        and system.tier2.write_bytes_per_s == recorded.tier2.write_bytes_per_s
    )


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


def _timed(walk: Walk, system: TieredSystem, policy: str, plan: AutoTMPlan | None, tier1_bytes: float) -> Tally:
    began = time.perf_counter()
    tally = simulate_tally(walk, system, make_policy(policy, plan=plan.arrays() if plan else None), tier1_bytes=tier1_bytes)
    outcome = price(tally, system)
    log.info(
        "%s %s Tier 1 %.2f GB: %.3f s per iteration, %.1f J (%.2f s to simulate)",
        walk.base.name,
        policy,
        tier1_bytes / 1e9,
        outcome.iteration_s,
        outcome.energy_j,
        time.perf_counter() - began,
    )
    return tally


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
