"""Sweeps: a hardware template's parameters crossed over lists of values, one row per configuration."""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from collections.abc import Mapping, Sequence
from numbers import Real

import pandas as pd

from traincost.errors import ConfigError
from traincost.limits import MAX_CONFIGS

__all__ = ["expand_grid", "config_id", "shard", "shard_rows"]


def config_id(hardware: str, parameters: Mapping[str, float]) -> str:
    """A stable 12-hex-digit id of one configuration: the same parameters always give the same id."""
    text = json.dumps({"hardware": hardware, **{k: float(v) for k, v in sorted(parameters.items())}}, sort_keys=True)
    return hashlib.sha1(text.encode()).hexdigest()[:12]


def expand_grid(
    hardware: str,
    defaults: Mapping[str, float],
    sweep: Mapping[str, Sequence[float]] | None = None,
    *,
    max_configs: int = MAX_CONFIGS,
) -> pd.DataFrame:
    """Every combination of the swept values; unswept parameters keep their default.

    Rows are in ``itertools.product`` order over the parameters in declaration order, so the same
    template and sweep always give the same table.

    Raises:
        ConfigError: a swept name is not a parameter of the template, its values are not a
            non-empty list of finite numbers, or the grid has more than ``max_configs``
            configurations (checked from the list lengths, before anything is built).
    """
    sweep = dict(sweep or {})
    for name, values in sweep.items():
        if name not in defaults:
            raise ConfigError(f"sweep of {hardware}: {name!r} is not a parameter (parameters: {', '.join(defaults)})")
        if isinstance(values, str | bytes | Mapping) or not hasattr(values, "__len__"):
            raise ConfigError(f"sweep of {hardware}: {name!r} is {values!r}; expected a list of numbers")
        if len(values) == 0:
            raise ConfigError(f"sweep of {hardware}: {name!r} has no values")
        wrong = [v for v in values if isinstance(v, bool) or not isinstance(v, Real) or not math.isfinite(v)]
        if wrong:
            raise ConfigError(f"sweep of {hardware}: {name!r} has {wrong[0]!r}; expected a list of finite numbers")
    size = math.prod(len(values) for values in sweep.values())
    if size > max_configs:
        raise ConfigError(
            f"sweep of {hardware}: {size:,} configurations "
            f"({' x '.join(f'{len(v)} {k}' for k, v in sweep.items())}) is more than the limit of {max_configs:,}; "
            "raise it with hardware_sweeps.<name>.max_configs (workflow) or --max-configs (traincost sweep)"
        )
    names = list(defaults)
    axes = [list(sweep.get(name, [defaults[name]])) for name in names]
    rows = [dict(zip(names, combo, strict=True)) for combo in itertools.product(*axes)]
    frame = pd.DataFrame(rows, columns=names).astype("float64")
    frame.insert(0, "config_id", [config_id(hardware, row) for row in rows])
    return frame


def shard_rows(total: int, index: int, count: int) -> slice:
    """The rows of shard ``index`` of ``count`` contiguous, nearly equal slices of ``total`` rows."""
    if count < 1 or not 0 <= index < count:
        raise ConfigError(f"shard {index} of {count}: expected 0 <= index < count")
    return slice(total * index // count, total * (index + 1) // count)


def shard(configs: pd.DataFrame, index: int, count: int) -> pd.DataFrame:
    """Shard ``index`` of ``count`` contiguous, nearly equal slices of ``configs``."""
    return configs.iloc[shard_rows(len(configs), index, count)].reset_index(drop=True)
