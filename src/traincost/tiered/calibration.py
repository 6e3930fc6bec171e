"""Calibration of the TM-Training study: the one constant the paper pins through a stated aggregate.

The paper took its accelerator's per-MAC and per-SRAM-access energies from Accelergy at a node it does
not state; ours come from the hardware file (45 nm figures). What it does state (section 2.1) is that
off-chip memory is 27.6 % of HBM-only's energy on average over its workloads. With the accelerator's
dynamic energy scaled by ``k`` (MAC and SRAM access alike), HBM-only's share on workload ``w`` is
``off_w / (off_w + k * dyn_w + static_w)``, where ``off`` = tier-to-SRAM + migration + tier static
energy, ``dyn`` the accelerator's MAC and SRAM energy and ``static`` its SRAM static energy. HBM-only's
schedule does not depend on energy, so one simulation per workload at ``k`` = 1 gives every term, and
the mean share falls strictly with ``k``: bisection on ``log k`` fits it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from traincost.bisection import bisect
from traincost.errors import ConfigError
from traincost.tiered.outcome import Outcome

__all__ = ["CALIBRATION_COLUMNS", "energy_parts", "fit_accelerator_energy_scale", "offchip_share"]

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
