"""The paper-versus-ours tables of the three studies, read back for the terminal and the report.

Every study writes one CSV in which each row checks one number or claim of its paper:
MONET's ``monet/claims.csv`` (``claim``, ``paper_says``, ``value``, ``holds``), MTrain's
``mtrain/compare.csv`` and TM-Training's ``tiered/compare.csv`` (``claim``, ``paper``, ``ours``,
``agrees``). :func:`read_comparison` brings them to one shape, ``claim``, ``check``, ``paper``,
``ours``, ``agrees`` (nullable: a row without a direction test), ``tie``, ``magnitude`` and ``verdict`` (the one
rule of :mod:`traincost.analysis.verdicts`), ``kind`` (claim, invariant, timing, calibrated, extension,
superseded, informational, unchecked), plus the study's context columns. Only ``claim`` rows are counted as
agreement; :func:`summary_text` and :func:`agreement_html` render that shape.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from traincost.analysis.verdicts import KINDS, MAGNITUDE_TEXT, TIE_TEXT, whole_verdict
from traincost.errors import ConfigError

__all__ = [
    "STUDIES",
    "Agreement",
    "Study",
    "agreement_html",
    "comparison_path",
    "count_agreement",
    "disagreeing",
    "find_comparisons",
    "read_comparison",
    "summary_text",
    "uncalibrated_path",
    "why_path",
]


@dataclass(frozen=True, slots=True)
class Study:
    """Where one study's comparison lives and what its columns are called.

    Attributes:
        key: short name (``monet``, ``mtrain``, ``tiered``), also the results subfolder.
        title: the paper, as the report and the terminal name it.
        path: the CSV, relative to the results folder.
        claim: column naming the claim.
        paper: column with the paper's value or statement.
        ours: column with our value.
        agrees: column saying whether ours agrees (True, False or empty).
        check: column saying what is checked.
        context: columns that tell rows of one claim apart (model, cluster, metric, ...).
        note: optional column with remarks, shown in the report only.
        kind: column saying what kind of row it is (:data:`traincost.analysis.verdicts.KINDS`).
        magnitude: column saying whether ours / paper lies in the magnitude band (True, False or empty).
    """

    key: str
    title: str
    path: str
    claim: str
    paper: str
    ours: str
    agrees: str
    check: str
    context: tuple[str, ...]
    note: str | None = None
    kind: str = "kind"
    magnitude: str = "magnitude"

    @property
    def required(self) -> tuple[str, ...]:
        """Every column the CSV must have."""
        return (self.claim, self.paper, self.ours, self.agrees, self.check, self.kind, self.magnitude, *self.context)


STUDIES: dict[str, Study] = {
    "monet": Study(
        key="monet",
        title="MONET",
        path="monet/claims.csv",
        claim="claim",
        paper="paper_says",
        ours="value",
        agrees="holds",
        check="check",
        context=("figure",),
    ),
    "mtrain": Study(
        key="mtrain",
        title="MTrain",
        path="mtrain/compare.csv",
        claim="claim",
        paper="paper",
        ours="ours",
        agrees="agrees",
        check="check",
        context=("model", "cluster", "bandwidth_gb_per_s", "metric"),
        note="source",
    ),
    "tiered": Study(
        key="tiered",
        title="TM-Training",
        path="tiered/compare.csv",
        claim="claim",
        paper="paper",
        ours="ours",
        agrees="agrees",
        check="check",
        context=("figure", "workload", "ratio", "metric"),
        note="note",
    ),
}

_TRUE = {"true", "1", "yes"}
_FALSE = {"false", "0", "no"}


@dataclass(frozen=True, slots=True)
class Agreement:
    """How many ``claim`` rows of one comparison agree, in direction and in magnitude.

    Attributes:
        agree: claim rows whose direction check holds.
        checked: claim rows with a direction check (agree or not).
        rows: every row, of every kind, including those that only set values side by side.
        magnitude_agree: claim rows whose ours / paper lies in the magnitude band.
        magnitude_checked: claim rows with a magnitude verdict.
        ties: claim rows that meet a claimed difference only within the tie tolerance (among ``checked``, not
            among ``agree``).
        not_counted: rows by kind other than ``claim`` (:data:`traincost.analysis.verdicts.KINDS`), as (kind, count).
    """

    agree: int
    checked: int
    rows: int
    magnitude_agree: int = 0
    magnitude_checked: int = 0
    ties: int = 0
    not_counted: tuple[tuple[str, int], ...] = ()

    def numbers(self) -> dict[str, int]:
        """The counts as columns: agree, checked, ties, magnitude_agree, magnitude_checked, rows, then one per kind
        not counted."""
        return {
            "agree": self.agree,
            "checked": self.checked,
            "ties": self.ties,
            "magnitude_agree": self.magnitude_agree,
            "magnitude_checked": self.magnitude_checked,
            "rows": self.rows,
        } | dict(self.not_counted)

    def text(self) -> str:
        """``a of b claims agree in direction (t ties), c of d in magnitude (band); not counted: n invariant, ...``."""
        out = f"{self.agree} of {self.checked} claims agree in direction"
        if self.ties:
            out += f" ({self.ties} {'tie' if self.ties == 1 else 'ties'} among them, not agreeing)"
        out += f", {self.magnitude_agree} of {self.magnitude_checked} in magnitude"
        out += f" ({MAGNITUDE_TEXT.removeprefix('magnitude: ')})"
        others = ", ".join(f"{n} {kind}" for kind, n in self.not_counted if n)
        return out + (f"; not counted: {others}" if others else "")


def why_path(study: Study) -> Path:
    """Where, under the results folder, ``snakemake ablations`` leaves the study's comparison with a ``why`` column."""
    return Path(study.key) / "compare_why.csv"


def uncalibrated_path(study: Study) -> Path:
    """Where, under the results folder, ``snakemake ablations`` leaves the study's comparison before calibration."""
    return Path("ablations") / study.key / "calibrated" / "false" / "compare.csv"


def comparison_path(results: Path, study: Study, *, calibrated: bool = True) -> Path:
    """The comparison of ``study`` under the results folder ``results`` that the terminal and the API read: its own
    CSV, or the copy with a ``why`` column (:func:`why_path`) where the ablations left one at least as new; with
    ``calibrated`` false, the comparison the ablations ran before calibration (:func:`uncalibrated_path`)."""
    if not calibrated:
        return results / uncalibrated_path(study)
    own, with_why = results / study.path, results / why_path(study)
    # the same rows and a why column, if the ablations ran on this comparison
    return with_why if with_why.is_file() and own.is_file() and with_why.stat().st_mtime >= own.stat().st_mtime else own


def find_comparisons(results: Path) -> list[tuple[Study, Path]]:
    """The comparison CSVs present under ``results``, in the order of :data:`STUDIES`.

    Raises:
        ConfigError: ``results`` is not a folder, or holds none of the three CSVs.
    """
    if not results.is_dir():
        raise ConfigError(f"{results}: no such results folder (run the workflow first, or pass --results)")
    found = [(study, results / study.path) for study in STUDIES.values() if (results / study.path).is_file()]
    if not found:
        looked = ", ".join(str(results / study.path) for study in STUDIES.values())
        raise ConfigError(f"{results}: no paper-vs-ours table found (looked for {looked})")
    return found


def _flag(value: object, path: Path, row: int, column: str) -> bool | None:
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return None
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text == "":
        return None
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ConfigError(f"{path}: row {row + 2}, column {column!r}: expected True, False or empty, got {value!r}")


def _label(frame: pd.DataFrame, study: Study) -> pd.Series:
    """The claim, followed by the context values that differ between rows of the same claim."""
    labels = frame[study.claim].astype(str).copy()
    for _, group in frame.groupby(study.claim, sort=False, dropna=False):
        varying = [c for c in study.context if group[c].astype(str).nunique(dropna=False) > 1]
        for index, row in group.iterrows():
            parts = [str(row[study.claim])]
            parts += [_text(row[c]) for c in varying if _text(row[c])]
            labels[index] = " ".join(parts)
    return labels


def read_comparison(path: Path, study: Study) -> pd.DataFrame:
    """One study's comparison CSV, in the common shape.

    Args:
        path: the CSV a study's report step wrote.
        study: which study it is (its column names).

    Returns:
        One row per check: ``claim`` (the claim plus the context that tells its rows apart),
        ``claim_name`` (the claim alone), ``check``, ``paper``, ``ours``, ``agrees``, ``tie`` and ``magnitude``
        (pandas nullable booleans; ``tie`` NA where the CSV has no such column), ``verdict``
        (:func:`traincost.analysis.verdicts.whole_verdict` of those), ``note`` (or empty), then the study's context
        columns, ``why`` where the CSV has one (``compare_why.csv``, from ``traincost ablations``), and ``ceiling``
        with the paper's number as a number (``paper_number``) where the CSV states a bound of our model.

    Raises:
        ConfigError: the file is missing or not a CSV, a column is missing, or ``agrees`` holds
            something other than True, False or empty. The message names the file.
    """
    if not path.is_file():
        raise ConfigError(f"{path}: no such file (the {study.title} comparison)")
    try:
        frame = pd.read_csv(path, keep_default_na=False, na_values=[""], dtype=object)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as err:
        raise ConfigError(f"{path}: not a readable CSV ({err})") from err
    missing = [c for c in study.required if c not in frame.columns]
    if missing:
        raise ConfigError(
            f"{path}: missing column(s) {', '.join(missing)} (the {study.title} comparison needs {', '.join(study.required)})"
        )
    frame = frame.reset_index(drop=True)
    out = pd.DataFrame(
        {
            "claim": _label(frame, study),
            "claim_name": frame[study.claim].map(_text),
            "check": frame[study.check].map(_text),
            "paper": frame[study.paper].map(_value),
            "ours": frame[study.ours].map(_value),
            "agrees": pd.array([_flag(v, path, i, study.agrees) for i, v in enumerate(frame[study.agrees])], dtype="boolean"),
            "note": frame[study.note].map(_text) if study.note and study.note in frame.columns else "",
            "kind": [_kind(v, path, i, study.kind) for i, v in enumerate(frame[study.kind])],
            "magnitude": pd.array(
                [_flag(v, path, i, study.magnitude) for i, v in enumerate(frame[study.magnitude])], dtype="boolean"
            ),
            "tie": pd.array(
                [_flag(v, path, i, "tie") for i, v in enumerate(frame["tie"])] if "tie" in frame.columns else [None] * len(frame),
                dtype="boolean",
            ),
        }
    )
    out["verdict"] = whole_verdict(out["agrees"], out["tie"], out["magnitude"], out["kind"])
    for column in study.context:
        out[column] = frame[column].map(_text)
    if "why" in frame.columns:  # compare_why.csv of `snakemake ablations`
        out["why"] = frame["why"].map(_text)
    if "ceiling" in frame.columns:  # the most our model lets the metric reach, where a row states it
        out["ceiling"] = frame["ceiling"].map(_value)
        # the paper's number beside it (MONET states its claims in words, its numbers in paper_value)
        numbers = frame["paper_value"] if "paper_value" in frame.columns else frame[study.paper]
        out["paper_number"] = pd.to_numeric(numbers, errors="coerce")
    return out


def _kind(value: object, path: Path, row: int, column: str) -> str:
    text = _text(value).strip()
    if text not in KINDS:
        raise ConfigError(f"{path}: row {row + 2}, column {column!r}: expected one of {', '.join(KINDS)}, got {value!r}")
    return text


def count_agreement(frame: pd.DataFrame) -> Agreement:
    """Claim rows that agree (direction, magnitude), claim rows with a check, all rows, and the rows not counted."""
    claims = frame[frame["kind"] == "claim"]
    checked = claims["agrees"].dropna()
    magnitude = claims["magnitude"].dropna()
    others = tuple((kind, int((frame["kind"] == kind).sum())) for kind in KINDS if kind != "claim")
    return Agreement(
        agree=int(checked.sum()),
        checked=len(checked),
        rows=len(frame),
        magnitude_agree=int(magnitude.sum()),
        magnitude_checked=len(magnitude),
        ties=int(claims["tie"].fillna(False).sum()),
        not_counted=others,
    )


def disagreeing(frame: pd.DataFrame) -> pd.Series:
    """Per row: a ``claim`` whose whole verdict is not ``agrees`` (it differs, ties or misses the magnitude)."""
    return frame["verdict"].isin(["differs", "tie", "magnitude"])


def _value(value: object) -> float | str | None:
    """A number where the cell holds one, else the text as written (MONET states its claims in words); None if empty."""
    if value is None or value is pd.NA:
        return None
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return str(value)
    return None if math.isnan(number) else number


def _text(value: object) -> str:
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return ""
    return str(value)


def _show(value: object, width: int) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, float):
        return f"{value:.4g}"
    text = str(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def _verdict(flag: object) -> str:
    if flag is pd.NA or flag is None:
        return "-"
    return "yes" if flag else "NO"


def _direction(row: pd.Series) -> str:
    """The direction cell of a claim: yes, NO, tie or -."""
    if row["kind"] != "claim":
        return "-"
    return "tie" if row["verdict"] == "tie" else _verdict(row["agrees"])


def summary_text(study: Study, path: Path, frame: pd.DataFrame, *, width: int = 60, only_disagreeing: bool = False) -> str:
    """The terminal summary of one study: the agreement count, then claim, paper, ours, agrees per row.

    Args:
        study: which study.
        path: the CSV it came from (printed in the heading).
        frame: from :func:`read_comparison`.
        width: characters kept of the claim and of the paper's statement.
        only_disagreeing: list only the rows whose check fails.
    """
    count = count_agreement(frame)
    heading = f"{study.title} ({path}): {count.text()}"
    rows = frame[disagreeing(frame)] if only_disagreeing else frame
    if rows.empty:
        return heading + ("\n(no row disagrees)" if only_disagreeing else "")
    columns = {
        "claim": [_show(v, width) for v in rows["claim"]],
        "paper": [_show(v, width) for v in rows["paper"]],
        "ours": [_show(v, width) for v in rows["ours"]],
        "kind": list(rows["kind"]),
        "agrees": [_direction(row) for _, row in rows.iterrows()],
        "magnitude": [_verdict(v) for v in rows["magnitude"]],
    }
    if "why" in rows.columns:
        columns["why"] = list(rows["why"])
    numeric = {name: all(isinstance(v, float) or v is None for v in rows[name]) for name in ("paper", "ours")}
    widths = {name: max(len(name), *(len(v) for v in values)) for name, values in columns.items()}

    def line(cells: dict[str, str]) -> str:
        parts = [cells[n].rjust(widths[n]) if numeric.get(n) else cells[n].ljust(widths[n]) for n in columns]
        return "  ".join(parts).rstrip()

    lines = [line({n: n for n in columns})]
    lines += [line({n: columns[n][i] for n in columns}) for i in range(len(rows))]
    return "\n".join([heading, *lines])


_STYLE = """
body { font-family: system-ui, sans-serif; font-size: 13px; margin: 12px; color: #1e293b; }
h1 { font-size: 16px; margin: 0 0 4px 0; }
p.summary { margin: 0 0 10px 0; }
table { border-collapse: collapse; width: 100%; }
th, td { border: 1px solid #cbd5e1; padding: 3px 6px; text-align: left; vertical-align: top; }
th { background: #e2e8f0; position: sticky; top: 0; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.agree { background: #dcfce7; }
tr.tie { background: #fef3c7; }
tr.disagree { background: #fee2e2; }
tr.unchecked { background: #f1f5f9; color: #475569; }
td.verdict { font-weight: 600; white-space: nowrap; }
td { overflow-wrap: anywhere; }
td.claim { min-width: 13em; }
.context, .kind, .note { font-size: 11px; color: #475569; font-weight: normal; }
.legend span { padding: 1px 6px; margin-right: 6px; border: 1px solid #cbd5e1; }
"""


def page_style() -> str:
    """The CSS of the report's table pages."""
    return _STYLE


# row class and verdict cell, by the whole verdict (traincost.analysis.verdicts.VERDICTS)
_ROW_KINDS = {
    "agrees": ("agree", "✔ agrees"),
    "tie": ("tie", "≈ tie"),
    "differs": ("disagree", "✘ differs"),
    "magnitude": ("disagree", "✘ magnitude"),
    "": ("unchecked", "– no check"),
}


def _cell(value: object) -> str:
    if value is None or value == "" or (isinstance(value, float) and math.isnan(value)):
        return "<td></td>"
    if isinstance(value, float):
        return f'<td class="num">{value:.4g}</td>'
    return f"<td>{html.escape(str(value))}</td>"


def _stacked_cell(markup: str, below: str, below_class: str, *, css: str) -> str:
    """A cell of ``markup`` with ``below`` (text, escaped here) in small print under it, if any."""
    under = f'<div class="{below_class}">{html.escape(below)}</div>' if below else ""
    return f'<td class="{css}">{markup}{under}</td>'


def _context_text(row: pd.Series, context: Sequence[str]) -> str:
    """The row's context values as "figure: Figure 9 · workload: average", each named by its column."""
    return " · ".join(f"{name}: {row[name]}" for name in context if row[name])


def agreement_html(study: Study, frame: pd.DataFrame, *, source: str) -> str:
    """A standalone HTML page of one comparison, every row coloured by its whole verdict (direction, tie, magnitude).

    Six columns, so that the table fits the report's frame beside its caption (about 700 px): the row's kind under
    its verdict, its context (model, figure, metric, ...) under the claim, its note under the check.

    Args:
        study: which study.
        frame: from :func:`read_comparison`.
        source: the CSV's path, named under the heading.
    """
    count = count_agreement(frame)
    context = [c for c in study.context if frame[c].astype(bool).any()]
    has_note = bool(frame["note"].astype(bool).any())
    head = "".join(f"<th>{name}</th>" for name in ("agrees", "claim", "paper", "ours", "magnitude", "check"))
    body = []
    for _, row in frame.iterrows():
        kind, verdict = _ROW_KINDS[row["verdict"]]
        where = _context_text(row, context)
        note = row["note"] if has_note else ""
        cells = [
            _stacked_cell(verdict, row["kind"], "kind", css="verdict"),
            _stacked_cell(html.escape(row["claim_name"]), where, "context", css="claim"),
            _cell(row["paper"]),
            _cell(row["ours"]),
            _cell(_verdict(row["magnitude"])),
            _stacked_cell(html.escape(row["check"]), note, "note", css="check"),
        ]
        body.append(f'<tr class="{kind}">{"".join(cells)}</tr>')
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(study.title)}: paper vs ours</title>
<style>{_STYLE}</style></head>
<body>
<h1>{html.escape(study.title)}: the paper's numbers beside ours</h1>
<p class="summary"><b>{html.escape(count.text())}</b>. Rows other than claims are shown, never counted.
Source: <code>{html.escape(source)}</code>.
<span class="legend"><span style="background:#dcfce7">agrees</span><span style="background:#fef3c7">tie \
({html.escape(TIE_TEXT.removeprefix("tie: "))}: not agreeing)</span><span style="background:#fee2e2">differs, in \
direction or in magnitude</span><span style="background:#f1f5f9">no check, or not a claim</span></span></p>
<table><thead><tr>{head}</tr></thead>
<tbody>
{chr(10).join(body)}
</tbody></table>
</body></html>
"""
