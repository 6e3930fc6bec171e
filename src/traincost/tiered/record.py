"""A study's record of what it ran: every simulation's ``Tally``, keyed by (Tier 1 size, policy), and a digest of
what they were computed from (``run_key``).

``traincost tiered-study --record-out`` writes it beside the study's table; an ablation of the study reads it
back (``--record``) and re-uses what its assumption does not change: the tallies of every policy whose
simulation does not read the assumption (``study.resimulated``), re-priced on the assumed system. The digest
makes sure the record is of the same trace and system as the study that re-uses it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import pandas as pd

from traincost.errors import ConfigError
from traincost.tiered.outcome import Tally
from traincost.tiered.system import TieredSystem
from traincost.tiered.trace import Trace
from traincost.workload import read_table, write_table

__all__ = ["Record", "read_record", "run_key", "write_record"]

_TALLY = tuple(f.name for f in fields(Tally))


@dataclass(frozen=True, slots=True)
class Record:
    """A study's simulations (their tallies) by (Tier 1 size, policy); ``key`` is ``run_key`` of their trace and system,
    ``source`` the file it was read from (empty if none)."""

    key: str
    runs: Mapping[tuple[float, str], Tally]
    source: str = ""


def run_key(trace: Trace, system: TieredSystem) -> str:
    """A digest of what a study's tallies are computed from: the trace (its name, sizes and totals of time and bytes)
    and every field of the system (its hardware by name and by the bytes of its file)."""
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
    ]
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:16]


def write_record(record: Record, path: str | Path, meta: Mapping[str, str]) -> None:
    """One row per simulation: its Tier 1 size, policy and tally."""
    rows = [{"tier1_bytes": size, "policy": policy} | asdict(tally) for (size, policy), tally in record.runs.items()]
    write_table(pd.DataFrame(rows), path, {**meta, "run_key": record.key})


def read_record(path: str | Path) -> Record:
    """A record written by ``write_record``.

    Raises:
        ConfigError: the file lacks the record's columns or its key.
    """
    table, meta = read_table(path)
    missing = [c for c in ("tier1_bytes", "policy", *_TALLY) if c not in table.columns] + (
        [] if "run_key" in meta else ["metadata run_key"]
    )
    if missing:
        raise ConfigError(f"{path}: not a tiered-study record (no {', '.join(missing)})")
    runs = {}
    for row in table.itertuples(index=False):
        tally = Tally(**{name: bool(getattr(row, name)) if name == "vertical" else float(getattr(row, name)) for name in _TALLY})
        runs[(float(row.tier1_bytes), str(row.policy))] = tally
    return Record(key=str(meta["run_key"]), runs=runs, source=str(path))
