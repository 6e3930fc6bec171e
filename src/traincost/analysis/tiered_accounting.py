"""TM-Training's study under both ways of pricing Tier 2's re-reads, side by side.

The paper's simulator counts SCALE-Sim's "number of memory accesses" (section 5.1); its data placement manager charges a
Tier 2 share one flash read however often it is fetched (Algorithm 3). Which of the two the figures rest on is not
stated, so the report shows both: one row per (workload, variant, ratio, policy) with the energy efficiency over HBM-only
when every read of Tier 2 costs flash read energy (``per_access``, the figures') and when each byte stored in Tier 2 is
read once and its re-reads are free (``once_per_store``), and the re-reads' share of Tier 2's reads.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from traincost.errors import ConfigError

__all__ = ["tier2_reads_table"]

_KEYS = ["workload", "variant", "ratio", "policy"]


def tier2_reads_table(study: pd.DataFrame, once: pd.DataFrame) -> pd.DataFrame:
    """Per run of ``study`` (priced per access) and ``once`` (the same runs priced once per store,
    ``tiered.study.tier2_reads_once``): both energy efficiencies over HBM-only and the re-read share.

    Raises:
        ConfigError: the two tables are not of the same runs, or lack a column the table reads.
    """
    needed = [*_KEYS, "energy_efficiency_vs_hbm", "tier2_read_bytes", "tier2_reread_bytes"]
    missing = [c for c in needed if c not in study.columns or c not in once.columns]
    if missing:
        raise ConfigError(f"tiered study: missing columns {missing} (a study table of this version has them)")
    if not study[_KEYS].equals(once[_KEYS]):
        raise ConfigError("the study priced once per store has other runs than the study priced per access")
    reads = study["tier2_read_bytes"].to_numpy()
    out = study[_KEYS].copy()
    out["efficiency_vs_hbm_per_access"] = study["energy_efficiency_vs_hbm"].to_numpy()
    out["efficiency_vs_hbm_once_per_store"] = once["energy_efficiency_vs_hbm"].to_numpy()
    out["tier2_read_gb"] = reads / 1e9
    out["tier2_reread_share"] = np.divide(
        study["tier2_reread_bytes"].to_numpy(), reads, out=np.zeros(len(study)), where=reads > 0
    )
    return out.reset_index(drop=True)
