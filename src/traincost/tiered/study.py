"""The TM-Training study: every policy at every Tier 1 size on one workload, as one table.

A run is (workload, variant, policy, ratio). Variants are the paper's sensitivity studies:

* ``base`` — Table 3's workload on Table 1 / Table 2's system;
* ``double_batch`` — twice the batch, and twice the address space per chip in Tier 2 only (Tier 1
  keeps its size; the HBM-only baseline doubles its HBM) (Figure 13);
* ``half_tier2_bandwidth`` — Tier 2 reads and writes at half speed (Figure 15).

Tier 1 is ``ratio × tier1_share_per_ratio`` of the address space when that share is given (the paper's
reading: 25:1 is 12.5 % of the memory; the doubled batch keeps Tier 1 at its size and grows Tier 2 only),
else ``ratio × model bytes per chip`` (parameters in BF16 over all chips); capped at the address space.
Every row also carries the normalisations the figures use: energy efficiency (samples per joule) and
throughput over the HBM-only baseline of the same variant, migrated bytes over the ideal policy's at the
same ratio and over the data one iteration touches.

A study also returns its ``record`` (``tiered.record``): every simulation's tally. Given the record of the
same study on another system (an ablation's baseline), it re-uses the tallies of every policy whose
simulation cannot differ between the two systems (``resimulated``), priced on its own system: the same
table as simulating them again.
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
from traincost.tiered.engine import simulate_tally, tier1_bytes_for_ratio
from traincost.tiered.outcome import Outcome, Tally, price
from traincost.tiered.policies import POLICIES, make_policy
from traincost.tiered.record import Record, run_key
from traincost.tiered.system import TieredSystem
from traincost.tiered.trace import Trace, build_trace
from traincost.tiered.walk import Walk
from traincost.workload import Workload

__all__ = [
    "BASELINE",
    "StudyRuns",
    "layer_footprint_bytes",
    "VARIANTS",
    "Variant",
    "model_bytes_per_chip",
    "resimulated",
    "study_runs",
    "study_variant",
    "tier2_reads_once",
    "variant_system",
]

log = logging.getLogger(__name__)

BASELINE = "hbm_only"
# read by outcome.price, not by a simulation
_PRICING_ONLY = frozenset({"accelerator_energy_scale", "stall_static_power", "tier2_read_energy"})
_READ_BY = {  # the ablation switches only some policies' simulations read
    "deeptm_eviction_costs_time": frozenset({"deeptm"}),
    "split_only_if_evicted": frozenset({"tm_training", "tm_training_off"}),
    "split_ratio_reading": frozenset({"tm_training", "tm_training_off"}),  # the ideal policy tunes its ratio exactly
    "hot_promotion": frozenset({"tm_training", "tm_training_off", "ideal"}),
    "autotm_lookahead": frozenset({"autotm", "deeptm"}),
    "split_energy": frozenset({"tm_training", "tm_training_off", "ideal"}),
}


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


def study_variant(name: str, workload: Workload) -> Variant:
    """The variant ``name``, for a workload built at its batch (``batch_factor`` of the workload's metadata, 1 if none).

    Raises:
        ConfigError: an unknown variant, or a workload at another batch factor than the variant's.
    """
    if name not in VARIANTS:
        raise ConfigError(f"variant {name!r}: expected one of {', '.join(VARIANTS)}")
    variant = VARIANTS[name]
    batch = int(workload.meta.get("batch_factor", "1") or 1)
    if batch != variant.batch_factor:
        raise ConfigError(f"a workload at batch factor {batch}, but variant {variant.name} needs {variant.batch_factor}")
    return variant


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
    return price(_timed(Walk.of(build_trace(workload, system)), system, BASELINE, system.capacity_bytes), system)


def resimulated(policy: str, system: TieredSystem, recorded: TieredSystem) -> bool:
    """Whether simulating ``policy`` on ``system`` may count otherwise than on ``recorded``: the two differ in a field
    its simulation reads, i.e. in any but those only pricing reads (``outcome.price``), or in DeepTM's eviction
    switch for DeepTM, the one policy that reads it. Another hardware object counts as a difference."""
    ignored = _PRICING_ONLY | {switch for switch, readers in _READ_BY.items() if policy not in readers}
    for field in fields(TieredSystem):
        ours, theirs = getattr(system, field.name), getattr(recorded, field.name)
        if field.name in ignored or ours is theirs:
            continue
        if field.name == "hardware" or ours != theirs:
            return True
    return False


@dataclass(frozen=True, slots=True)
class StudyRuns:
    """A study's table (``study_runs``'s columns) and its record (every simulation's tally)."""

    table: pd.DataFrame
    record: Record


def study_runs(
    workload: Workload,
    system: TieredSystem,
    *,
    variant: str,
    ratios: Sequence[float],
    policies: Sequence[str],
    tier1_share_per_ratio: float | None = None,
    record: Record | None = None,
    recorded_on: TieredSystem | None = None,
) -> StudyRuns:
    """Every policy at every ratio on one workload and system (``hbm_only`` and ``ideal`` always included).

    ``tier1_share_per_ratio``: Tier 1 as a share of the address space per unit of ratio (``engine.tier1_bytes_for_ratio``);
    the address space is the variant's before it grew Tier 2 (``Variant.batch_factor``).
    ``record`` (with ``recorded_on``, the system it was made on): the record of this study on that system, whose
    tallies are re-used where ``resimulated`` allows; it must hold every run the study needs.

    Columns: ``workload``, ``variant``, ``policy``, ``ratio``, ``tier1_bytes``, ``tier2_bytes``,
    ``tier1_share`` (of the address space), the fields of ``outcome.Outcome`` (seconds, joules, bytes),
    ``energy_j``, ``migrated_bytes``, ``samples_per_j``, ``model_bytes`` (per chip), ``data_bytes``
    (every tensor one iteration touches), ``energy_efficiency_vs_hbm``, ``throughput_vs_hbm``,
    ``migration_vs_ideal``, ``migration_vs_data``, ``static_ceiling_vs_hbm`` (the energy efficiency over HBM-only its Tier 1
    size allows at most: HBM static power saved, nothing else spent), ``layer_forward_bytes`` and
    ``layer_backward_bytes`` (``layer_footprint_bytes``).
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
    if record is not None and (recorded_on is None or record.key != run_key(trace, recorded_on)):
        raise ConfigError(
            f"tiered study of {trace.name} ({variant}): record {record.source or '(given)'} is of another trace or system"
        )
    runner = _Runner(trace, system, record=record, recorded_on=recorded_on, variant=variant)
    model_bytes = model_bytes_per_chip(workload, word_bytes=system.hardware.word_bytes)
    # Figure 13 grows Tier 2 only: Tier 1 is sized on the address space before the variant doubled it
    tier1_reference = system.capacity_bytes / (VARIANTS[variant].batch_factor if variant in VARIANTS else 1)
    runner.run(system.capacity_bytes, BASELINE)
    rows = []
    for ratio in progress(ratios, desc=f"{trace.name} {variant}", unit="ratio"):
        tier1 = tier1_bytes_for_ratio(ratio, model_bytes, tier1_reference, share_per_ratio=tier1_share_per_ratio)
        for policy in policies:
            tally = runner.run(system.capacity_bytes if policy == BASELINE else tier1, policy)
            rows.append({"variant": variant, "policy": policy, "ratio": float(ratio)} | _row(price(tally, system)))
    frame = pd.DataFrame(rows)
    frame.insert(0, "workload", trace.name)
    frame["tier1_share"] = frame["tier1_bytes"] / (frame["tier1_bytes"] + frame["tier2_bytes"]).where(
        frame["policy"] != BASELINE, np.inf
    )
    frame.loc[frame["policy"] == BASELINE, "tier1_share"] = 1.0
    frame["model_bytes"] = model_bytes
    frame["static_ceiling_vs_hbm"] = _static_ceiling(frame, system)
    frame["data_bytes"] = float(trace.size_bytes[[bool(a) for a in trace.accesses]].sum())
    frame["layer_forward_bytes"], frame["layer_backward_bytes"] = layer_footprint_bytes(workload)
    return StudyRuns(_normalise(frame), Record(key=run_key(trace, system), runs=dict(runner.runs)))


def layer_footprint_bytes(workload: Workload) -> tuple[float, float]:
    """The data one layer creates or uses on the chip in one forward pass and in one backward pass (its recomputation
    included): the bytes of every tensor read or written by the chip's first block (``blocks.<i>`` ops) in its first
    forward pass, and in its first backward pass (a pass: the block's ops of that phase back to back; one per
    micro-batch). NaN without blocks."""
    ops = workload.ops
    index = ops["layer"].str.extract(r"^blocks\.(\d+)(?:\.|$)")[0]
    if index.isna().all():
        return float("nan"), float("nan")
    first = str(int(index.dropna().astype(int).min()))
    size = workload.tensors["bytes"].to_numpy()

    def touched(phases: tuple[str, ...]) -> float:
        chosen = ops.index[((index == first) & ops["phase"].isin(phases)).to_numpy()].to_numpy()
        if not len(chosen):
            return float("nan")
        breaks = np.flatnonzero(np.diff(chosen) > 1)
        one_pass = ops.loc[chosen[: breaks[0] + 1] if len(breaks) else chosen]
        tensors = {t for column in ("inputs", "outputs") for ids in one_pass[column] for t in ids}
        return float(size[sorted(tensors)].sum())

    return touched(("forward",)), touched(("backward", "recompute"))


class _Runner:
    """The runs of one study, each made once: simulated, or taken from the record of the same study on ``recorded_on``
    where ``resimulated`` says the simulation is the same."""

    def __init__(
        self, trace: Trace, system: TieredSystem, *, record: Record | None, recorded_on: TieredSystem | None, variant: str
    ) -> None:
        self.trace = trace
        self.system = system
        self.reuse = (record, recorded_on) if record is not None and recorded_on is not None else None
        self.variant = variant
        self.runs: dict[tuple[float, str], Tally] = {}
        self._walk: Walk | None = None

    def run(self, tier1_bytes: float, policy: str) -> Tally:
        """``policy``'s run at ``tier1_bytes`` of Tier 1."""
        key = (tier1_bytes, policy)
        if key not in self.runs:
            if self.reuse is not None and not resimulated(policy, self.system, self.reuse[1]):
                recorded = self.reuse[0].runs.get(key)
                if recorded is None:
                    source = self.reuse[0].source
                    raise ConfigError(
                        f"tiered study of {self.trace.name} ({self.variant}): record {source} has no {policy} run at "
                        f"{tier1_bytes / 1e9:.4g} GB of Tier 1"
                    )
                self.runs[key] = recorded
            else:
                if self._walk is None:
                    self._walk = Walk.of(self.trace)
                self.runs[key] = _timed(self._walk, self.system, policy, tier1_bytes)
        return self.runs[key]


def _timed(walk: Walk, system: TieredSystem, policy: str, tier1_bytes: float) -> Tally:
    began = time.perf_counter()
    tally = simulate_tally(walk, system, make_policy(policy), tier1_bytes=tier1_bytes)
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


def _static_ceiling(frame: pd.DataFrame, system: TieredSystem) -> np.ndarray:
    """Per row, the energy efficiency over HBM-only that its Tier 1 size allows at most: HBM-only's run with the HBM
    beyond Tier 1 replaced by Tier 2 (static power swapped over the same static time) and not one byte, joule or second
    more. The bound of every saving a tiered memory can make in our model; 1 for HBM-only itself."""
    base = frame[frame["policy"] == BASELINE].set_index(["variant", "ratio"])
    index = pd.MultiIndex.from_frame(frame[["variant", "ratio"]])
    energy_j = base["energy_j"].reindex(index).to_numpy()
    static_j = base["energy_static_j"].reindex(index).to_numpy()  # HBM's static power over its static time
    hbm_w = system.tier1.static_w(system.capacity_bytes)
    tier1 = np.minimum(frame["tier1_bytes"].to_numpy(), system.capacity_bytes)
    tiered_w = system.tier1.static_w(tier1) + system.tier2.static_w(system.capacity_bytes - tier1)
    ceiling = energy_j / (energy_j - static_j * (1.0 - tiered_w / hbm_w))
    return np.where(frame["policy"].to_numpy() == BASELINE, 1.0, ceiling)


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


def tier2_reads_once(frame: pd.DataFrame) -> pd.DataFrame:
    """The study table ``frame`` priced with each byte stored in Tier 2 read once (``TieredSystem.tier2_read_energy``
    ``once_per_store``): the energy of its re-reads taken out, samples per joule and energy efficiency over HBM-only
    computed again; times, bytes and migrations as they are (the simulation does not read the switch).

    Raises:
        ConfigError: the table has no ``energy_tier2_reread_j`` (a study table of an earlier version).
    """
    if "energy_tier2_reread_j" not in frame.columns:
        raise ConfigError("tiered study: no energy_tier2_reread_j column (run tiered-study again)")
    out = frame.copy()
    saved = out["energy_tier2_reread_j"]
    out["energy_tier_sram_j"] = out["energy_tier_sram_j"] - saved
    out["energy_j"] = out["energy_j"] - saved
    out["energy_tier2_reread_j"] = 0.0
    out["samples_per_j"] = out["samples_per_s"] * out["iteration_s"] / out["energy_j"]
    return _normalise(out)
