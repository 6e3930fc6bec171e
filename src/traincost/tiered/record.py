"""A study's record of what it ran: every simulation's ``Tally`` with the AutoTM plan it executed, keyed by
(Tier 1 size, policy), and a digest of what they were computed from (``run_key``).

``traincost tiered-study --record-out`` writes it beside the study's table; an ablation of the study reads it
back (``--record``) and re-uses what its assumption does not change: AutoTM's plans (no tiered assumption
changes what a plan is solved from) and the tallies of every policy whose simulation does not read the
assumption (``study.resimulated``), re-priced on the assumed system. The digest makes sure the record is of
the same trace, system and AutoTM limit as the study that re-uses it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import numpy as np
import pandas as pd

from traincost.errors import ConfigError
from traincost.tiered.autotm import AutoTMPlan
from traincost.tiered.outcome import Tally
from traincost.tiered.system import TieredSystem
from traincost.tiered.trace import Trace
from traincost.workload import read_table, write_table

__all__ = ["Record", "Run", "read_record", "run_key", "write_record"]

_TALLY = tuple(f.name for f in fields(Tally))
_PLAN = ("plan_tier1", "plan_promote", "plan_status", "plan_objective_s", "plan_variables")


@dataclass(frozen=True, slots=True)
class Run:
    """One simulation: its steady iteration as counted, and the AutoTM plan it executed (None if its policy runs none)."""

    tally: Tally
    plan: AutoTMPlan | None


@dataclass(frozen=True, slots=True)
class Record:
    """A study's simulations by (Tier 1 size, policy); ``key`` is ``run_key`` of their trace, system and AutoTM limit,
    ``source`` the file it was read from (empty if none)."""

    key: str
    runs: Mapping[tuple[float, str], Run]
    source: str = ""

    def plan(self, tier1_bytes: float) -> AutoTMPlan | None:
        """The AutoTM plan some run at ``tier1_bytes`` executed (all executed the same), None if none did."""
        return next((run.plan for (size, _), run in self.runs.items() if size == tier1_bytes and run.plan is not None), None)


def run_key(trace: Trace, system: TieredSystem, autotm_time_limit_s: float) -> str:
    """A digest of what a study's plans and tallies are computed from: the trace (its name, sizes and totals of time
    and bytes), every field of the system (its hardware by name and by the bytes of its file) and AutoTM's limit."""
    hardware = system.hardware
    parts = [
        trace.name,
        len(trace),
        len(trace.size_bytes),
        float(trace.compute_s.sum()),
        float(trace.size_bytes.sum()),
        sum(b for pairs in trace.reads for _, b in pairs),
        sum(b for pairs in trace.writes for _, b in pairs),
        hardware.name,
        hashlib.sha256(Path(hardware.source).read_bytes()).hexdigest(),
        *(f"{f.name}={getattr(system, f.name)!r}" for f in fields(system) if f.name != "hardware"),
        float(autotm_time_limit_s),
    ]
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:16]


def write_record(record: Record, path: str | Path, meta: Mapping[str, str]) -> None:
    """One row per simulation: its Tier 1 size, policy, tally and plan (null columns if none)."""
    rows = []
    for (tier1_bytes, policy), run in record.runs.items():
        plan = run.plan
        rows.append(
            {"tier1_bytes": tier1_bytes, "policy": policy}
            | asdict(run.tally)
            | {
                "plan_tier1": None if plan is None else plan.tier1,
                "plan_promote": None if plan is None else plan.promote,
                "plan_status": None if plan is None else plan.status,
                "plan_objective_s": None if plan is None else plan.objective_s,
                "plan_variables": None if plan is None else plan.variables,
            }
        )
    write_table(pd.DataFrame(rows), path, {**meta, "run_key": record.key})


def read_record(path: str | Path) -> Record:
    """A record written by ``write_record``.

    Raises:
        ConfigError: the file lacks the record's columns or its key.
    """
    table, meta = read_table(path)
    missing = [c for c in ("tier1_bytes", "policy", *_TALLY, *_PLAN) if c not in table.columns] + (
        [] if "run_key" in meta else ["metadata run_key"]
    )
    if missing:
        raise ConfigError(f"{path}: not a tiered-study record (no {', '.join(missing)})")
    runs = {}
    for row in table.itertuples(index=False):
        tally = Tally(**{name: bool(getattr(row, name)) if name == "vertical" else float(getattr(row, name)) for name in _TALLY})
        plan = None
        if isinstance(row.plan_status, str):
            plan = AutoTMPlan(
                tier1=np.asarray(row.plan_tier1, dtype=bool),
                promote=np.asarray(row.plan_promote, dtype=bool),
                status=str(row.plan_status),
                objective_s=float(row.plan_objective_s),
                variables=int(row.plan_variables),
            )
        runs[(float(row.tier1_bytes), str(row.policy))] = Run(tally, plan)
    return Record(key=str(meta["run_key"]), runs=runs, source=str(path))
