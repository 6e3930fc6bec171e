"""Calibration of the TM-Training study: the one constant the paper pins through a stated aggregate.

The paper took its accelerator's per-MAC and per-SRAM-access energies from Accelergy at a node it does
not state; ours come from the hardware file (45 nm figures). What it does state (section 2.1) is that
off-chip memory is 27.6 % of HBM-only's energy on average over its workloads. With the accelerator's
dynamic energy scaled by ``k`` (MAC and SRAM access alike), HBM-only's share on workload ``w`` is
``off_w / (off_w + k * dyn_w + static_w)``, where ``off`` = tier-to-SRAM + migration + tier static
energy, ``dyn`` the accelerator's MAC and SRAM energy and ``static`` its SRAM static energy. HBM-only's
schedule does not depend on energy, so one simulation per workload at ``k`` = 1 gives every term, and
the mean share falls strictly with ``k``: bisection on ``log k`` fits it.

:func:`calibration_table` is what ``traincost calibrate`` writes (one row, :data:`CALIBRATION_COLUMNS`);
:func:`read_accelerator_energy_scale` and :func:`calibrated_claims` read such a table back for the study and its
report.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from traincost.bisection import bisect
from traincost.errors import ConfigError
from traincost.tiered.outcome import Outcome
from traincost.tiered.study import hbm_only_outcome
from traincost.tiered.system import TieredSystem
from traincost.workload import Workload, read_table

__all__ = [
    "CALIBRATION_COLUMNS",
    "calibrated_claims",
    "calibration_table",
    "energy_parts",
    "fit_accelerator_energy_scale",
    "offchip_share",
    "read_accelerator_energy_scale",
]

CALIBRATION_COLUMNS = (
    "study",  # tiered
    "constant",  # the constant fitted
    "value",  # its value (1 when not fitted)
    "fitted",  # whether it was fitted (config calibrate: true)
    "target_claim",  # the paper's claim fitted to (data/paper/tm_training.csv)
    "pins",  # every claim the same statement fixes, "|"-separated: 'calibrated' rows of compare.csv when fitted
    "target",  # the paper's value
    "source",  # where the paper states it
    "achieved",  # our value at the constant
    "uncalibrated",  # our value at 1
    "over",  # the workloads averaged over
)


def energy_parts(outcome: Outcome, *, accelerator_static_w: float, scale: float) -> dict[str, float]:
    """HBM-only's energy split: off-chip memory, the accelerator's dynamic energy at scale 1, its static energy (J)."""
    static = accelerator_static_w * outcome.iteration_s
    return {
        "offchip_j": outcome.energy_tier_sram_j + outcome.energy_migration_j + outcome.energy_static_j,
        "dynamic_j": (outcome.energy_accelerator_j - static) / scale,
        "accelerator_static_j": static,
    }


def offchip_share(parts: pd.DataFrame, scale: float | np.ndarray) -> np.ndarray:
    """Mean over workloads (rows of ``parts``) of off-chip / total energy, at each accelerator energy ``scale``."""
    k = np.atleast_1d(np.asarray(scale, dtype=float))[:, None]
    off, dyn, static = (parts[c].to_numpy(dtype=float)[None, :] for c in ("offchip_j", "dynamic_j", "accelerator_static_j"))
    return (off / (off + k * dyn + static)).mean(axis=1)


def fit_accelerator_energy_scale(parts: pd.DataFrame, target_share: float, *, bounds: Sequence[float] = (1e-4, 1e4)) -> float:
    """The scale ``k`` at which :func:`offchip_share` equals ``target_share``.

    Raises:
        ConfigError: the target lies outside what any scale in ``bounds`` reaches (e.g. static energy alone
            already exceeds it), or ``parts`` is empty.
    """
    if parts.empty:
        raise ConfigError("calibration: no HBM-only runs to fit the accelerator energy scale to")
    low, high = (float(offchip_share(parts, b)[0]) for b in bounds)
    if not (high <= target_share <= low):
        raise ConfigError(
            f"calibration: off-chip share {target_share:g} is out of reach (scales {bounds[0]:g}-{bounds[1]:g} give "
            f"{high:.4g}-{low:.4g})"
        )
    log_low, log_high = np.log(bounds)
    log_low, log_high = bisect(lambda log_k: offchip_share(parts, np.exp(log_k))[0] <= target_share, log_low, log_high, steps=100)
    return float(np.exp(0.5 * (log_low + log_high)))


def calibration_table(
    workloads: Sequence[tuple[str, Workload]],
    system: TieredSystem,
    paper: str | os.PathLike[str],
    *,
    target: str,
    also_pins: Sequence[str] = (),
    fit: bool = True,
) -> pd.DataFrame:
    """The accelerator energy scale at which HBM-only's mean off-chip share over ``workloads`` is the paper's.

    Args:
        workloads: the workloads averaged over, each with its name.
        system: the tiered system (its accelerator at the hardware file's energies).
        paper: the paper's numbers (``data/paper/tm_training.csv``: ``claim``, ``value``, ``source``).
        target: the claim whose value (an off-chip energy share) is fitted to.
        also_pins: other claims the same statement fixes; the report marks them calibrated too.
        fit: fit the scale; otherwise keep 1 and only report the share it gives.

    Returns:
        One row of :data:`CALIBRATION_COLUMNS`: the scale (``value``), the target share and the shares achieved at the
        scale and at 1.

    Raises:
        ConfigError: the paper's file is missing or lacks ``target`` or a claim of ``also_pins``, or the target is out
            of reach (:func:`fit_accelerator_energy_scale`).
    """
    file = Path(paper)
    if not file.is_file():
        raise ConfigError(f"{file}: no such file (the paper's numbers)")
    claims = pd.read_csv(file)
    row = claims[claims["claim"] == target]
    if row.empty:
        raise ConfigError(f"{file}: no claim {target!r} to calibrate to")
    missing = [c for c in also_pins if c not in set(claims["claim"])]
    if missing:
        raise ConfigError(f"{file}: also_pins {missing}: no such claims")
    names = [name for name, _ in workloads]
    runs = [hbm_only_outcome(workload, system) for _, workload in workloads]
    parts = pd.DataFrame(
        [energy_parts(run, accelerator_static_w=system.accelerator_static_w, scale=1.0) for run in runs], index=names
    )
    share = float(row["value"].iloc[0])
    scale = fit_accelerator_energy_scale(parts, share) if fit else 1.0
    return pd.DataFrame(
        [
            {
                "study": "tiered",
                "constant": "accelerator_energy_scale",
                "value": scale,
                "fitted": bool(fit),
                "target_claim": target,
                "pins": "|".join([target, *also_pins]),
                "target": share,
                "source": str(row["source"].iloc[0]),
                "achieved": float(offchip_share(parts, scale)[0]),
                "uncalibrated": float(offchip_share(parts, 1.0)[0]),
                "over": ", ".join(names),
            }
        ],
        columns=list(CALIBRATION_COLUMNS),
    )


def read_accelerator_energy_scale(path: str | os.PathLike[str] | None) -> float:
    """The fitted accelerator energy scale of a calibration table (1 without one).

    Raises:
        ConfigError: the table has no row for the constant.
    """
    if path is None:
        return 1.0
    table = read_table(path)[0]
    row = table[table["constant"] == "accelerator_energy_scale"]
    if row.empty:
        raise ConfigError(f"{path}: no row for constant 'accelerator_energy_scale'")
    return float(row["value"].iloc[0])


def calibrated_claims(path: str | os.PathLike[str] | None) -> set[str]:
    """The claims a calibration table fitted a constant to (none without a table, or if it fitted none)."""
    if path is None:
        return set()
    table = read_table(path)[0]
    return {claim for pins in table.loc[table["fitted"].astype(bool), "pins"] for claim in str(pins).split("|") if claim}
