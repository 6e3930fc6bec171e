"""One hardware sweep: a Workload (inference or training) on every configuration of a template."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from traincost.cost.optable import op_table
from traincost.errors import ConfigError
from traincost.hardware import HardwareError, load_hardware, shard_rows
from traincost.limits import MAX_CONFIGS
from traincost.schedule.plan import SchedulePlan
from traincost.schedule.scheduler import schedule
from traincost.workload import STEP_PHASES, Workload

__all__ = ["evaluate_sweep"]

log = logging.getLogger(__name__)


def evaluate_sweep(
    workload: Workload,
    hardware: str | os.PathLike[str],
    *,
    grid: Mapping[str, Sequence[float]],
    step: str,
    plan: SchedulePlan,
    shard_index: int = 0,
    shard_count: int = 1,
    max_configs: int = MAX_CONFIGS,
) -> pd.DataFrame:
    """Latency, energy and memory of ``workload`` on one shard of a hardware grid.

    Returns:
        One row per configuration: ``config_id``, the template parameters, the metrics of
        ``schedule``, and ``workload``, ``hardware``, ``step`` columns to tell sweeps apart.
    """
    if step not in STEP_PHASES:
        raise ConfigError(f"step {step!r}: expected one of {', '.join(STEP_PHASES)}")
    spec = load_hardware(hardware, sweep=grid, max_configs=max_configs)
    rows = shard_rows(spec.n_configs, shard_index, shard_count)
    empty = rows.start == rows.stop  # more shards than configurations: this one has none
    spec = spec.take(slice(0, 1) if empty else rows)
    table = op_table(workload, phases=STEP_PHASES[step])
    began = time.perf_counter()
    with np.errstate(over="ignore"):  # an overflow becomes inf, which _check_finite names
        result = schedule(table, spec, plan).summary
    if empty:
        result = result.iloc[:0]  # the columns of a sweep, no rows
    _check_finite(result, hardware)
    log.info(
        "%s %s on %s: %d configurations x %d ops in %.2f s",
        workload.meta.get("model", "?"),
        step,
        spec.name,
        spec.n_configs,
        len(table),
        time.perf_counter() - began,
    )
    result.insert(1, "workload", workload.meta.get("model", ""))
    result.insert(2, "hardware", spec.name)
    result.insert(3, "step", step)
    return result


def _check_finite(result: pd.DataFrame, hardware: str | os.PathLike[str]) -> None:
    """Raise ``HardwareError`` on the first metric that overflowed float64 (a value of the file near 1e308)."""
    numbers = result.select_dtypes("number")
    bad = ~np.isfinite(numbers.to_numpy(dtype=float))
    if bad.any():
        row, column = (int(i[0]) for i in np.nonzero(bad))
        raise HardwareError(
            f"{hardware}: {numbers.columns[column]} of configuration {result['config_id'].iloc[row]} is "
            f"{numbers.iat[row, column]}: a value of the file is too large for float arithmetic; "
            "expected sizes, bandwidths and energies in a physical range"
        )
