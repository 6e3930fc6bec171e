"""Interactive design-space pages: every configuration of a design space as a point to hover, pick and filter.

A page is one self-contained HTML file that needs no network and no library: the rows (gzipped JSON in base64,
unpacked by the browser's ``DecompressionStream``) and ``design_space.js`` beside this module, which draws them on
canvases, a panel per step (or per workload), and wires the interactions. Hovering a point shows every column of its
row (``config_id``, the step, each swept parameter, latency, energy and its breakdown), clicking two points
tabulates their difference, a menu per swept parameter filters the points, and a menu switches between the views of
the same rows (MONET Figures 1 and 8 draw the Edge TPU sweep). A hardware sweep's rows go in as ``traincost sweep``
wrote them; :func:`nsga_points` and :func:`tiered_points` give MONET Figure 12's NSGA-II evaluations and TM-Training
Figure 12's runs a ``config_id`` and a ``step``.

Snakemake's report shows an HTML result in an ``<iframe>`` whose source is the file as a ``data:`` URL, and Chromium
opens no URL longer than 2 MB (:data:`REPORT_URL_LIMIT`): a page must stay under it, base64 included. A charting
library does not fit beside the full config's 20,000 Edge TPU points (Vega, Vega-Lite and Vega-Embed inlined are
0.9 MB); the page's own script is about 12 kB.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import html
import json
import math
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from importlib.resources import files
from pathlib import Path

import pandas as pd

from traincost.errors import ConfigError
from traincost.io import atomic_path
from traincost.tables import require_columns

__all__ = [
    "REPORT_URL_LIMIT",
    "SIGNIFICANT_DIGITS",
    "Axis",
    "View",
    "design_space_page",
    "nsga_points",
    "pack",
    "tiered_points",
    "unpack",
    "write_design_space_page",
]

# the longest URL Chromium opens (url::kMaxURLChars): the report's data: URL of a page, base64 and its header included
REPORT_URL_LIMIT = 2 * 1024 * 1024

# the digits a page keeps of each cost, as its tooltip shows them (a swept parameter keeps all of its own): the full
# config's Edge TPU page (20,000 points of 24 columns) is 1.4 MB in base64 at four digits, 1.9 MB at six
SIGNIFICANT_DIGITS = 4

# the columns a page leaves out of a point where they are the same on every row: named above the chart instead
_CONSTANT = ("workload", "hardware")


@dataclass(frozen=True, slots=True)
class Axis:
    """A column drawn on an axis or as colour, with its label; ``log`` for a logarithmic scale, ``categorical`` for a
    colour per value (a policy's name)."""

    column: str
    label: str
    log: bool = True
    categorical: bool = False


@dataclass(frozen=True, slots=True)
class View:
    """One chart of a page: a panel per step, ``y`` against ``x`` coloured by ``color``."""

    name: str
    x: Axis
    y: Axis
    color: Axis


def _column(column: pd.Series, *, exact: bool) -> str:
    """A column as a JSON array: numbers to :data:`SIGNIFICANT_DIGITS` (``7.062e+10``), or as they are if ``exact``
    (a swept parameter: ``16384.0``), NaN as null.

    Raises:
        ConfigError: an infinite number (JSON has none).
    """
    if pd.api.types.is_bool_dtype(column) or not pd.api.types.is_numeric_dtype(column):
        return json.dumps([v.item() if hasattr(v, "item") else v for v in column], separators=(",", ":"))
    values = column.astype(float)
    if values.isin([math.inf, -math.inf]).any():
        raise ConfigError(f"column {column.name!r}: a design-space page cannot show an infinite value")
    written = (repr(v) if exact else f"{v:.{SIGNIFICANT_DIGITS}g}" for v in values)
    return "[" + ",".join("null" if text == "nan" else text for text in written) + "]"


def pack(text: str) -> str:
    """JSON ``text`` as the page carries it: gzipped (about a quarter of the size) and in base64."""
    return base64.b64encode(gzip.compress(text.encode(), mtime=0)).decode()


def unpack(page: str) -> dict:
    """The data of a page written by :func:`design_space_page` (tests and the bench read it)."""
    found = re.search(r'<script type="application/gzip\+base64" id="design-space">(.*?)</script>', page, re.S)
    if found is None:
        raise ConfigError("not a design-space page: no script#design-space")
    return json.loads(gzip.decompress(base64.b64decode(found.group(1))))


def design_space_page(table: pd.DataFrame, *, title: str, parameters: Sequence[str], views: Sequence[View]) -> str:
    """The page of ``table`` as HTML text.

    Args:
        table: a sweep's rows, one per configuration and step (inference and training concatenated): ``config_id``,
            ``step``, the ``parameters`` and the columns the views draw; every other column is shown too.
        title: the page's heading.
        parameters: the swept parameters, each given a filter menu.
        views: the charts, the first shown first; more than one adds a menu to switch.

    Raises:
        ConfigError: no view, a column missing, or an infinite value.
    """
    if not views:
        raise ConfigError("a design-space page needs at least one view")
    drawn = sorted({axis.column for view in views for axis in (view.x, view.y, view.color)})
    require_columns(table, ["config_id", "step", *parameters, *drawn], "a design-space page")
    described = ["config_id", "step", *parameters]
    constant = [c for c in _CONSTANT if c in table.columns and table[c].nunique() == 1]
    columns = described + [c for c in table.columns if c not in {*described, *constant}]
    about = ", ".join(f"{c} {table[c].iloc[0]}" for c in constant)
    head = {
        "about": about,
        "columns": columns,
        "parameters": list(parameters),
        "steps": list(dict.fromkeys(table["step"])),
        "views": [asdict(view) for view in views],
    }
    values = ",".join(f"{json.dumps(c)}:{_column(table[c], exact=c in parameters)}" for c in columns)
    data = json.dumps(head, separators=(",", ":"))[:-1] + ',"values":{' + values + "}}"
    return _PAGE.format(
        title=html.escape(title),
        data=pack(data),
        script=files("traincost.plots").joinpath("design_space.js").read_text(encoding="utf-8"),
    )


def nsga_points(nsga: pd.DataFrame, summary: pd.Series) -> pd.DataFrame:
    """MONET Figure 12's points for a page: every NSGA-II evaluation, its ``config_id`` a hash of its recompute
    choice, with the figure's axes (activation memory saved in MB, latency and energy change in percent of the
    all-saved baseline of ``summary``) beside its columns.

    Raises:
        ConfigError: a column of ``checkpoint-nsga``'s tables missing.
    """
    require_columns(nsga, ["latency_cycles", "energy_pj", "activation_bytes", "recompute", "recomputed", "pareto"], "NSGA-II")
    base = {k: float(summary[f"baseline_{k}"]) for k in ("latency_cycles", "energy_pj", "activation_bytes")}
    ids = [hashlib.sha1(choice.encode()).hexdigest()[:12] for choice in nsga["recompute"]]
    return nsga.assign(
        config_id=ids,
        step="training",
        saved_mb=(base["activation_bytes"] - nsga["activation_bytes"]) / 1e6,
        latency_change_percent=100 * (nsga["latency_cycles"] / base["latency_cycles"] - 1),
        energy_change_percent=100 * (nsga["energy_pj"] / base["energy_pj"] - 1),
    )


def tiered_points(study: pd.DataFrame, *, variant: str = "base") -> pd.DataFrame:
    """TM-Training Figure 12's points for a page: every run of ``variant`` (a workload, a policy, a Tier 1 : model
    ratio), its ``config_id`` a hash of the three, its workload as the page's panel (``step``).

    Raises:
        ConfigError: a column of ``tiered-report``'s study table missing, or no run of ``variant``.
    """
    require_columns(study, ["workload", "variant", "policy", "ratio", "throughput_vs_hbm"], "the TM-Training study")
    rows = study[study["variant"] == variant]
    if rows.empty:
        raise ConfigError(f"the TM-Training study has no run of variant {variant!r}")
    runs = [f"{w}|{p}|{float(r)!r}" for w, p, r in zip(rows["workload"], rows["policy"], rows["ratio"], strict=True)]
    ids = [hashlib.sha1(run.encode()).hexdigest()[:12] for run in runs]
    return rows.assign(config_id=ids, step=rows["workload"]).reset_index(drop=True)


def write_design_space_page(
    table: pd.DataFrame, out: Path, *, title: str, parameters: Sequence[str], views: Sequence[View]
) -> None:
    """Write :func:`design_space_page` to ``out``.

    Raises:
        ConfigError: as :func:`design_space_page`, or a page too long for the report to show in Chromium.
    """
    text = design_space_page(table, title=title, parameters=parameters, views=views)
    url = len("data:text/html;charset=utf8;base64,") + 4 * math.ceil(len(text.encode()) / 3)
    if url > REPORT_URL_LIMIT:
        raise ConfigError(
            f"{out}: {len(table)} points make a page of {url:,} characters as the report's data: URL, over the "
            f"{REPORT_URL_LIMIT:,} Chromium opens"
        )
    with atomic_path(out) as tmp:
        tmp.write_text(text, encoding="utf-8")


_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font: 13px system-ui, sans-serif; margin: 12px; }}
h1 {{ font-size: 16px; margin: 0 0 4px; }}
h2 {{ font-size: 14px; margin: 12px 0 4px; }}
#controls {{ margin: 8px 0; line-height: 2; }}
#controls label {{ margin-right: 12px; white-space: nowrap; }}
#panels {{ display: flex; flex-wrap: wrap; gap: 8px; }}
#panels canvas {{ cursor: crosshair; }}
#legend {{ display: inline-flex; align-items: center; gap: 6px; }}
#legend .bar {{ width: 160px; height: 10px; }}
#tooltip {{ position: fixed; background: #fffff4; border: 1px solid #999; padding: 4px; pointer-events: none; z-index: 9; }}
table {{ border-collapse: collapse; font-variant-numeric: tabular-nums; }}
td, th {{ padding: 1px 8px; border-bottom: 1px solid #eee; text-align: right; }}
td:first-child, th:first-child {{ text-align: left; }}
td {{ max-width: 40em; overflow-wrap: anywhere; }}
</style></head>
<body>
<h1>{title}</h1>
<p>Hover a point for its configuration and costs; click two points to compare them (the last two clicked, ringed
in red in every panel); filter by a swept parameter. <span id="about"></span></p>
<div id="controls"></div>
<div id="panels"></div>
<div id="difference"></div>
<div id="tooltip" hidden></div>
<script type="application/gzip+base64" id="design-space">{data}</script>
<script>
{script}
</script>
</body></html>
"""
