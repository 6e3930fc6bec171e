"""What each tiered policy did with the data, per run: where it read from, what it moved, which split ratios it chose.

One row per (workload, variant, ratio, policy) of the tiered study, in gigabytes: bytes read straight from Tier 2 to
the chip (a policy that reads only from Tier 1 has none), written to Tier 2, promoted and demoted; and the split
ratios (Tier 1 shares) a splitting policy chose per data type, as count, minimum, quartiles and maximum (empty for a
policy that splits nothing).
"""

from __future__ import annotations

import pandas as pd

from traincost.errors import ConfigError
from traincost.tiered.outcome import SPLIT_RATIO_FIELDS

__all__ = ["placement_table"]

_BYTES = {
    "tier1_bytes": "tier1_gb",
    "tier2_read_bytes": "tier2_direct_read_gb",
    "tier2_write_bytes": "tier2_write_gb",
    "promoted_bytes": "promoted_gb",
    "demoted_bytes": "demoted_gb",
}
_KEYS = ("workload", "variant", "ratio", "policy")


def placement_table(study: pd.DataFrame) -> pd.DataFrame:
    """The placement summary of every run of ``study`` (the tiered study table).

    Raises:
        ConfigError: ``study`` lacks a column the summary reads.
    """
    missing = [c for c in (*_KEYS, *_BYTES, *SPLIT_RATIO_FIELDS) if c not in study.columns]
    if missing:
        raise ConfigError(f"tiered study: missing columns {missing} (a study table of this version has them)")
    out = study[list(_KEYS)].copy()
    for column, name in _BYTES.items():
        out[name] = study[column] / 1e9
    for column in SPLIT_RATIO_FIELDS:
        out[column] = study[column]
    out["split_ratio_count"] = out["split_ratio_count"].astype(int)
    return out.sort_values(list(_KEYS), kind="stable").reset_index(drop=True)
