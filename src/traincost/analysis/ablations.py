"""Ablations: which single modelling assumption, changed, flips a paper check.

Each study names the assumptions it can change (:data:`ASSUMPTIONS`), each with its baseline value and
the variants an ablation may run; the value reaches the model through ``--assume NAME=VALUE`` of the
study's command (:func:`parse_assume`). An ablation re-runs the study's comparison with one assumption at
one variant; :func:`ablation_table` sets every judged claim of those runs beside the baseline's, and
:func:`why_column` names, per check that disagrees, the assumption whose change makes it hold, or says
that no single assumption does.

A check *holds* when neither its direction nor its magnitude verdict fails (a claim with one verdict is judged
on that one), as ``traincost summary --disagreeing`` lists the checks that do not.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from traincost.analysis.agreement import Study, disagreeing
from traincost.errors import ConfigError

__all__ = [
    "ABLATION_COLUMNS",
    "ASSUMPTIONS",
    "NO_SINGLE",
    "Assumption",
    "ablation_table",
    "assumption_value",
    "check_holds",
    "parse_assume",
    "row_keys",
    "why_column",
]

NO_SINGLE = "no single assumption flips it"
ABLATION_COLUMNS = (
    "study",
    "assumption",
    "variant",
    "check",
    "claim",
    "holds",
    "holds_baseline",
    "flips",
    "agrees",
    "magnitude",
    "ours",
    "ours_baseline",
    "paper",
)


@dataclass(frozen=True, slots=True)
class Assumption:
    """One modelling assumption a study's command can change.

    Attributes:
        name: the key of ``--assume NAME=VALUE`` and of the config's ``ablations.<study>``.
        baseline: the value the study runs with when nothing is assumed.
        variants: the other values an ablation may run.
        description: what the assumption is and what each value means.
        of_the_check: whether it is a rule of the comparison (how a check reads our numbers), not of the model: a
            ``why`` naming it says so.
    """

    name: str
    baseline: str
    variants: tuple[str, ...]
    description: str
    of_the_check: bool = False

    def parse(self, value: str, where: str) -> str:
        """``value`` if it is the baseline or a variant, else a ConfigError naming ``where``."""
        allowed = (self.baseline, *self.variants)
        if value not in allowed:
            raise ConfigError(f"{where}: {self.name}={value!r}: expected one of {', '.join(allowed)}")
        return value


ASSUMPTIONS: Mapping[str, tuple[Assumption, ...]] = {
    "tiered": (
        Assumption(
            "calibrated",
            "true",
            ("false",),
            "the accelerator energy scale fitted in tiered.calibration (true) or the hardware file's energies (false: "
            "the counts before calibration, whose target claims are then judged as claims)",
        ),
        Assumption(
            "stall_static_power",
            "true",
            ("false",),
            "static power (chip SRAM, both tiers) is charged while the accelerator stalls (true) "
            "or over compute time only (false)",
        ),
        Assumption(
            "deeptm_eviction_costs_time",
            "false",
            ("true",),
            "DeepTM's evictions are free in time (false, DeepTM's own assumption) or occupy both tiers' channels (true)",
        ),
        Assumption(
            "split_only_if_evicted",
            "false",
            ("true",),
            "TM-Training splits every data type by Algorithms 1-3 as printed (false) or only data Tier 1 is expected to "
            "evict before its next read, the rest stored whole in Tier 1 (true: section 1's 'splits ... as needed')",
        ),
        Assumption(
            "tier2_energy_factor",
            "1",
            ("0.5", "2"),
            "Tier 2 (NAND flash) read and write energy per bit, times this factor",
        ),
        Assumption(
            "split_ratio_reading",
            "printed",
            ("prose",),
            "Algorithm 1's branches as printed (with T_req >= T_min, the Tier 2 share that streams within T_req) or as "
            "the prose beside it words them (then the bandwidths' proportion)",
        ),
        Assumption(
            "hot_promotion",
            "true",
            ("false",),
            "TM-Training promotes hot data to Tier 1, re-promoting what LRU demoted of a split's Tier 1 share (true), "
            "or reads every datum where it lies (false)",
        ),
        Assumption(
            "autotm_lookahead",
            "true",
            ("false",),
            "AutoTM's cost of an output stored in Tier 2 includes how long its next reader's fetch outlasts that reader's "
            "window (true: AutoTM's ILP charges a tensor's location to every kernel that uses it) or only the op's own "
            "Tier 2 traffic (false: section 5.1's sentence names no look-ahead)",
        ),
        Assumption(
            "split_energy",
            "printed",
            ("per_access",),
            "TM-Training's manager weighs a split ratio by Algorithm 3's ENERGYOVERHEAD as printed (printed: the Tier 1 "
            "share at twice its re-fetched bytes of HBM energy, the Tier 2 share one flash read) or by the simulator's "
            "per-access energy with demotions (per_access)",
        ),
        Assumption(
            "tier2_read_energy",
            "per_access",
            ("once_per_store",),
            "each read of Tier 2 into SRAM priced at flash read energy (per_access) or each stored byte once, its re-reads "
            "served by the SSD's DRAM buffer (once_per_store: Algorithm 3's accounting); the paper states neither",
        ),
    ),
    "mtrain": (
        Assumption(
            "calibrated",
            "true",
            ("false",),
            "EF-Train's clock fitted in mtrain.calibration (true) or its model's 100 MHz (false: the counts before "
            "calibration; the whole MTrain study re-runs)",
        ),
        Assumption(
            "dfs_ratio_rule",
            "all",
            ("positive", "feasible"),
            "the ratios DFS counts (Table III): every split of the batch in steps (all), only splits giving every "
            "FPGA at least one step (positive), or only splits whose memory fits every FPGA's DRAM (feasible)",
            of_the_check=True,
        ),
        Assumption(
            "fp32_mac_dsp",
            "5",
            ("3",),
            "DSP slices per FP32 multiply-accumulate lane of both IPs: 5 (the Xilinx Floating-Point operator's "
            "full-DSP multiplier 3 and adder 2) or 3 (the adder in fabric logic); each IP's design search re-runs "
            "with it (the study, Table III and scaling re-run)",
        ),
        Assumption(
            "fabric_clock_mhz",
            "200",
            ("300",),
            "the fabric clock the paper does not state: the FPGAs' clocks as config/hardware/fpga/devices.yaml gives "
            "them (200 MHz on UltraScale+, 150 on 7-series; DarkFPGA runs at them) and EF-Train's (its code's 100 MHz, "
            "fitted), or every one of them 1.5x (300: 300 MHz on UltraScale+; the study, Table III and scaling re-run)",
        ),
        Assumption(
            "vgg16_input",
            "cifar",
            ("224",),
            "the input of MTrain's VGG-16, which the paper does not state: CIFAR-10's 32x32 (cifar) or ImageNet's "
            "224x224 (224: mtrain.vgg16_224's workload; VGG-16's Table III cells re-run, each saying where the cluster's "
            "DRAM cannot hold the step)",
        ),
        Assumption(
            "darkfpga_sized_for",
            "share",
            ("batch",),
            "DarkFPGA's design searched for the samples its FPGA is given (share) or once at the whole batch (batch: its "
            "batch lanes Tb = B, so a share below B runs as slow as B and MTrain keeps the batch on one FPGA; the study, "
            "Table III and scaling re-run)",
        ),
        Assumption(
            "darkfpga_batch_lanes",
            "batch",
            ("8", "32"),
            "DarkFPGA's batch lanes Tb searched up to the samples its FPGA is given (batch), or at most 8 (our earlier "
            "fixed Tb) or 32 (the study, Table III and scaling re-run)",
        ),
        Assumption(
            "ip_dram_efficiency",
            "1",
            ("0.75", "0.5"),
            "the share of a board's DRAM bandwidth the IPs' transfers achieve (the study, Table III and scaling re-run)",
        ),
    ),
    "monet": (
        Assumption(
            "resident_fraction",
            "0.5",
            ("0.25", "0.75"),
            "the share of a core's top memory that keeps tensors between ops and holds a fused group: section IV's "
            "hardware sweeps and section V's fusion solver, fusion comparison and checkpoint searches re-run with it "
            "(--resident-fraction of sweep, fuse, compare-fusion, checkpoint-study, checkpoint-nsga)",
        ),
        Assumption(
            "bn_epilogue",
            "false",
            ("true",),
            "each forward BatchNorm decomposed onto the SIMD core (false) or run as the epilogue of the convolution "
            "before it on the MAC core, with no round trip of the convolution's output (true: traincost bn-epilogue "
            "rewrites the cached workloads, and every MONET run re-runs on them)",
        ),
        Assumption(
            "fusion_tiling",
            "stream",
            ("rows",),
            "how a fused group is cut into tiles: along samples then rows into the fewest tiles that fit, at least 8, "
            "each member holding its output tile twice and a convolution's halo, the tiles reading the halo again and "
            "reloading weights (stream, Stream 2.1.1's CapacityTiler), or into its rows only with one tile held and "
            "nothing added (rows, the rule before): the sweeps, the fusion solver and comparison and the checkpoint "
            "runs re-run (--fusion-tiling)",
        ),
        Assumption(
            "allocation",
            "per_op",
            ("split",),
            "the Edge TPU runs' allocation of a convolution: on every PE core or one, whichever its edp prefers "
            "(per_op), or always split over every PE core (split): the Edge TPU sweep and the fusion comparison re-run "
            "(--allocation)",
        ),
        Assumption(
            "front_rule",
            "margin",
            ("near", "strict"),
            "which points of a Pareto front Figures 1 and 8's checks count: those no point dominates by the 1 % margin "
            "(margin), those within 0.1 % of the lowest cost at no more compute (near), or the strict front (strict): a "
            "rule of the check, not of the model (only traincost claims re-runs)",
            of_the_check=True,
        ),
    ),
}


def _assumption(study: str, name: str, where: str) -> Assumption:
    known = {a.name: a for a in ASSUMPTIONS.get(study, ())}
    if name not in known:
        listed = ", ".join(known) or "none"
        raise ConfigError(f"{where}: unknown {study} assumption {name!r} (known: {listed})")
    return known[name]


def parse_assume(study: str, items: Sequence[str] | None, *, where: str = "--assume") -> dict[str, str]:
    """``NAME=VALUE`` items as ``{name: value}``, every name an assumption of ``study`` and every value allowed.

    Raises:
        ConfigError: an item without ``=``, an unknown name, a name given twice or a value not allowed.
    """
    out: dict[str, str] = {}
    for item in items or ():
        name, sep, value = item.partition("=")
        if not sep:
            raise ConfigError(f"{where} {item!r}: expected NAME=VALUE")
        assumption = _assumption(study, name.strip(), where)
        if assumption.name in out:
            raise ConfigError(f"{where}: {assumption.name} given twice")
        out[assumption.name] = assumption.parse(value.strip(), where)
    return out


def assumption_value(study: str, assumed: Mapping[str, str], name: str) -> str:
    """The value of assumption ``name``: the assumed one, else its baseline."""
    return assumed.get(name, _assumption(study, name, "assumption").baseline)


def check_holds(frame: pd.DataFrame) -> pd.Series:
    """Per row of a comparison in the common shape: whether a judged claim holds (nullable boolean).

    A ``claim`` row with a direction or a magnitude verdict is judged; it holds unless one of them fails (as
    ``traincost summary --disagreeing`` lists it). NA for other rows.
    """
    judged = (frame["kind"] == "claim") & (frame["agrees"].notna() | frame["magnitude"].notna())
    values = [not d if j else None for d, j in zip(disagreeing(frame), judged, strict=True)]
    return pd.Series(pd.array(values, dtype="boolean"), index=frame.index)


def row_keys(frame: pd.DataFrame, study: Study) -> pd.Series:
    """A row's identity across runs: the claim and its context values (the check text may carry numbers)."""
    parts = [frame["claim_name"].astype(str)] + [frame[c].astype(str) for c in study.context]
    key = parts[0]
    for part in parts[1:]:
        key = key + " | " + part
    return key


def ablation_table(study: Study, baseline: pd.DataFrame, runs: Sequence[tuple[str, str, pd.DataFrame]]) -> pd.DataFrame:
    """Every judged claim of every ablation run beside the baseline's verdict.

    Args:
        study: which study (its context columns identify a row across runs).
        baseline: the study's comparison in the common shape (:func:`traincost.analysis.agreement.read_comparison`).
        runs: (assumption, variant, comparison) per ablation run, each in the common shape.

    Returns:
        Columns :data:`ABLATION_COLUMNS`: ``check`` the row's label in the baseline table, ``claim`` the claim
        alone, ``holds`` / ``holds_baseline`` its verdicts, ``flips`` whether they differ.

    Only the claims both judge are set side by side: a run may judge more (uncalibrated, a calibration target is judged
    as a claim), and those rows are left out; a baseline claim the run has but does not judge (its kind moved, e.g. to
    ``informational`` where neither of two searches splits the batch) is left out of that run.

    Raises:
        ConfigError: a run misses a claim the baseline judges (the tables must come from the same configuration).
    """
    base = baseline.assign(key=row_keys(baseline, study), holds=check_holds(baseline))
    base = base[base["holds"].notna()]
    frames = []
    for assumption, variant, frame in runs:
        run = frame.assign(key=row_keys(frame, study), holds=check_holds(frame))
        missing = sorted(set(base["key"]) - set(run["key"]))
        if missing:
            raise ConfigError(
                f"ablation {assumption}={variant} of {study.title}: the run misses {missing[:3]}; run both on one config"
            )
        # a check the run has but does not judge (e.g. informational there: neither search splits) neither holds nor
        # fails under the change: it is left out of this run, never a flip
        run = run[run["holds"].notna()]
        merged = base.merge(run[["key", "holds", "agrees", "magnitude", "ours"]], on="key", suffixes=("_baseline", ""))
        frames.append(
            pd.DataFrame(
                {
                    "study": study.key,
                    "assumption": assumption,
                    "variant": variant,
                    "check": merged["claim"].astype(str),
                    "claim": merged["claim_name"].astype(str),
                    "holds": merged["holds"].astype(bool),
                    "holds_baseline": merged["holds_baseline"].astype(bool),
                    "agrees": merged["agrees"],
                    "magnitude": merged["magnitude"],
                    "ours": merged["ours"].map(_number),
                    "ours_baseline": merged["ours_baseline"].map(_number),
                    "paper": merged["paper"].map(_number),
                }
            )
        )
    if not frames:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in ABLATION_COLUMNS})
    out = pd.concat(frames, ignore_index=True)
    out["flips"] = out["holds"] != out["holds_baseline"]
    return out[list(ABLATION_COLUMNS)]


def _number(value: object) -> float:
    return float(value) if isinstance(value, int | float) else float("nan")


def why_column(study: Study, baseline: pd.DataFrame, ablations: pd.DataFrame) -> pd.Series:
    """Per row of ``baseline``: for a judged claim that does not hold, the ``assumption=variant`` changes that make it
    hold (``; ``-joined), or :data:`NO_SINGLE` with the changes tried; empty for every other row. Where the row states a
    bound of our model (``ceiling``: the most the metric can reach in it) below the paper's number, the why says so in
    words first: then no assumption that keeps the bound can make the number agree."""
    holds = check_holds(baseline)
    flipped = ablations[ablations["flips"] & ~ablations["holds_baseline"]]
    rules_of_checks = {a.name for assumptions in ASSUMPTIONS.values() for a in assumptions if a.of_the_check}

    def change(assumption: str, variant: str) -> str:
        return f"{assumption}={variant}" + (" (a rule of the check, not of the model)" if assumption in rules_of_checks else "")

    by_check = flipped.groupby("check", sort=False).apply(
        lambda g: "; ".join(change(a, v) for a, v in zip(g["assumption"], g["variant"], strict=True)), include_groups=False
    )
    tried = ", ".join(dict.fromkeys(f"{a}={v}" for a, v in zip(ablations["assumption"], ablations["variant"], strict=True)))
    none = f"{NO_SINGLE} (tried: {tried})" if tried else f"{NO_SINGLE} (no ablation run)"
    why = [
        (by_check.get(label, none) if flag is False else "")
        for label, flag in zip(baseline["claim"].astype(str), holds.astype(object).where(holds.notna(), None), strict=True)
    ]
    if "ceiling" in baseline.columns:  # the most our model lets the metric reach, where a row states it
        ceiling = pd.to_numeric(baseline["ceiling"], errors="coerce").to_numpy(dtype=float)
        paper = pd.to_numeric(baseline.get("paper_number", baseline["paper"]), errors="coerce").to_numpy(dtype=float)
        for i in np.flatnonzero(np.isfinite(ceiling) & (ceiling < paper) & ~holds.fillna(True).to_numpy(dtype=bool)):
            bound = f"a bound of our model: the paper's {paper[i]:g} is above the most it can reach, {ceiling[i]:.4g} (see check)"
            why[i] = f"{bound}; {why[i]}" if why[i] else bound
    return pd.Series(why, index=baseline.index, dtype=object)
