"""Table III under each constant MTrain does not state, beside the paper's: a sensitivity, never a fit.

MTrain gives no DSP count per FP32 multiply-accumulate, no fabric clock and no input size for VGG-16, and its absolute
GFLOPS rest on all three. Ours are chosen with their sources (``data/fpga/training_ips.yaml``,
``config/hardware/fpga/devices.yaml``, the config's ``mtrain_vgg16``); each other value is an MTrain ablation
(``fp32_mac_dsp``, ``fabric_clock_mhz``, ``vgg16_input``), and this table sets Table III under each beside the
paper's. No counted claim rests on these values: the comparison shows absolute GFLOPS without counting them.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from traincost.tables import require_columns

__all__ = ["UNSTATED", "BASELINE_SETTING", "constants_table", "constants_markdown"]

UNSTATED = {
    "fp32_mac_dsp": "DSP slices per FP32 multiply-accumulate lane",
    "fabric_clock_mhz": "the fabric clock",
    "vgg16_input": "VGG-16's input size",
}
"""The constants MTrain does not state, by the name of the ablation that changes each."""
BASELINE_SETTING = "ours: 5 DSP, 200 MHz, CIFAR"
_CELL = ["model", "cluster"]
_METRICS = ("dfs_gflops", "converting_gflops")


def constants_table(paper: pd.DataFrame, baseline: pd.DataFrame, variants: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """One row per Table III cell and setting (ours, then each ``NAME=VALUE`` of ``variants``): DFS and Converting
    GFLOPS, with the paper's beside them (NaN where the paper has no such cell).

    Raises:
        ConfigError: a table lacks a column it is read by.
    """
    require_columns(paper, ("claim", "model", "cluster", "metric", "value"), "paper numbers")
    reported = paper[(paper["claim"] == "table3") & paper["metric"].isin(_METRICS)]
    reported = reported.pivot_table(index=_CELL, columns="metric", values="value", aggfunc="first")
    reported = reported.rename(columns={m: f"paper_{m}" for m in _METRICS}).reset_index()
    frames = []
    for setting, table in {BASELINE_SETTING: baseline, **variants}.items():
        require_columns(table, (*_CELL, *_METRICS), f"Table III ({setting})")
        frames.append(table[[*_CELL, *_METRICS]].assign(setting=setting))
    out = pd.concat(frames, ignore_index=True).merge(reported, on=_CELL, how="left")
    for metric in _METRICS:
        if f"paper_{metric}" not in out.columns:
            out[f"paper_{metric}"] = float("nan")
    return out[["setting", *_CELL, *_METRICS, *(f"paper_{m}" for m in _METRICS)]]


def constants_markdown(table: pd.DataFrame) -> str:
    """``constants_table`` as Markdown: a column per setting, DFS / Converting GFLOPS ("does not fit" where the
    cluster's DRAM cannot hold the step), the paper's first."""
    settings = list(dict.fromkeys(table["setting"]))
    *first, last = (f"{text} (`{name}`)" for name, text in UNSTATED.items())
    names = f"{', '.join(first)} or {last}"
    lines = [
        f"MTrain does not state {names}. Ours are chosen, each with its source; every other value is an ablation, "
        "and Table III under each is set here beside the paper's (DFS / Converting GFLOPS at 3 GB/s). No counted claim "
        "rests on these values: the comparison shows absolute GFLOPS without counting them.",
        "",
        "| Model | Cluster | paper | " + " | ".join(settings) + " |",
        "|---|---|---:|" + "---:|" * len(settings),
    ]
    cells = table.drop_duplicates(_CELL).sort_values(_CELL)
    for _, cell in cells.iterrows():
        rows = table[(table["model"] == cell["model"]) & (table["cluster"] == cell["cluster"])].set_index("setting")
        paper = _pair(cell["paper_dfs_gflops"], cell["paper_converting_gflops"])
        ours = [_ours(rows, s) for s in settings]
        lines.append(f"| {cell['model']} | {cell['cluster']} | {paper} | " + " | ".join(ours) + " |")
    return "\n".join(lines) + "\n"


def _ours(rows: pd.DataFrame, setting: str) -> str:
    """Our DFS / Converting GFLOPS of one cell under ``setting``: "does not fit" where the DRAM cannot hold the step."""
    if setting not in rows.index:
        return "–"
    dfs, converting = rows.at[setting, "dfs_gflops"], rows.at[setting, "converting_gflops"]
    return "does not fit" if pd.isna(dfs) and pd.isna(converting) else _pair(dfs, converting)


def _pair(dfs: float, converting: float) -> str:
    return "–" if pd.isna(dfs) and pd.isna(converting) else f"{dfs:.0f} / {converting:.0f}"
