"""Every claim of a paper's evaluation, as listed in ``data/paper/<paper>_claims.csv``, and the rows that check it.

Each line quotes one sentence of the paper's results (a figure's caption or text, the abstract's and introduction's
headline numbers) and says either which rows of the study's paper-vs-ours table check it (``rows``: claim names,
``;``-separated) or why none can (``unchecked``: the reason). A sentence no row checks becomes a row of kind
``unchecked`` in the table, with that reason as its check, so that the table lists every claim the paper makes,
including those we cannot judge.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from pathlib import Path

import pandas as pd

from traincost.errors import ConfigError

__all__ = ["CLAIM_COLUMNS", "claim_lines", "read_paper_claims", "said"]

CLAIM_COLUMNS = ("id", "section", "figure", "sentence", "kind", "rows", "unchecked")
_KINDS = ("quantitative", "qualitative")


def read_paper_claims(path: Path) -> pd.DataFrame:
    """The claims file, checked: every column, unique ids, a known kind, a sentence, and exactly one of ``rows`` and
    ``unchecked``.

    Raises:
        ConfigError: the file is missing or unreadable, or a line breaks one of those rules (the line is named).
    """
    if not path.is_file():
        raise ConfigError(f"{path}: no such file (the paper's claims, data/paper/<paper>_claims.csv)")
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as err:
        raise ConfigError(f"{path}: not a readable CSV ({err})") from err
    missing = [c for c in CLAIM_COLUMNS if c not in frame.columns]
    if missing:
        raise ConfigError(f"{path}: missing column(s) {', '.join(missing)} (expected {', '.join(CLAIM_COLUMNS)})")
    problems = []
    repeated = sorted(frame["id"][frame["id"].duplicated()].unique())
    if repeated:
        problems.append(f"ids given twice: {', '.join(repeated)}")
    for index, line in frame.iterrows():
        where = f"line {index + 2} ({line['id'] or 'no id'})"
        if not line["id"].strip() or not line["sentence"].strip():
            problems.append(f"{where}: an id and the quoted sentence are required")
        if line["kind"] not in _KINDS:
            problems.append(f"{where}: kind {line['kind']!r}, expected one of {', '.join(_KINDS)}")
        if bool(line["rows"].strip()) == bool(line["unchecked"].strip()):
            problems.append(f"{where}: give either the rows that check it or why none can (unchecked), not both or neither")
    if problems:
        raise ConfigError(f"{path}: " + "; ".join(problems))
    return frame


def claim_lines(
    claims: pd.DataFrame, *, known: Collection[str] | None = None, paper: str = ""
) -> Iterator[tuple[pd.Series, list[str]]]:
    """Each line of the claims file with the table's claim names that check it (empty for an unchecked claim).

    Raises:
        ConfigError: ``known`` is given and a line names a claim outside it (``paper`` and the claim are named).
    """
    for _, line in claims.iterrows():
        names = [r.strip() for r in line["rows"].split(";") if r.strip()]
        unknown = [] if known is None else [n for n in names if n not in known]
        if unknown:
            raise ConfigError(f"{paper} claim {line['id']}: rows {unknown} name no rule of the comparison")
        yield line, names


def said(sentence: str) -> str:
    """The paper's sentence as a row's note begins with it."""
    return f'the paper: "{sentence.strip()}"'
