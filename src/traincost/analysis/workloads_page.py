"""The report's page of the run's workloads: for each, the model, its batch and optimizer, which front end built its
training step (onnx: ONNX Runtime Training's graph decomposed, MONET's method; torch: torch's own trace), its size and
what its check by execution compared."""

from __future__ import annotations

import html
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from traincost.analysis.agreement import page_style
from traincost.workload import Workload, read_table

__all__ = ["workload_rows", "workloads_html"]


def workload_rows(workloads: Mapping[str, tuple[Path, Path, Path]]) -> pd.DataFrame:
    """One row per workload, from its ops, tensors and verification tables (paths, by workload name)."""
    rows = []
    for name, (ops_path, tensors_path, verification_path) in workloads.items():
        workload = Workload.read(ops_path, tensors_path)
        check, _ = read_table(verification_path)
        compared = check[check["check"] == "end_to_end"]
        tensors, meta = workload.tensors, workload.meta
        rows.append(
            {
                "workload": name,
                "model": meta.get("model", ""),
                "batch": int(meta.get("batch", 0)),
                "optimizer": meta.get("optimizer", ""),
                "front end": meta.get("frontend", "onnx"),
                "ops": len(workload.ops),
                "GMACs": float(workload.ops["macs"].sum()) / 1e9,
                "saved activations (MB)": float(tensors.loc[tensors["saved_for_backward"], "bytes"].sum()) / 1e6,
                "checked by execution": f"{int(compared['held'].sum())} of {len(compared)} tensors held"
                if len(compared)
                else "not verified",
            }
        )
    return pd.DataFrame(rows)


def workloads_html(rows: pd.DataFrame) -> str:
    """The rows as a standalone HTML page."""
    head = "".join(f"<th>{html.escape(c)}</th>" for c in rows.columns)
    body = "\n".join(
        "<tr>"
        + "".join(f'<td class="num">{v:.4g}</td>' if isinstance(v, float) else f"<td>{html.escape(str(v))}</td>" for v in row)
        + "</tr>"
        for row in rows.itertuples(index=False)
    )
    built = rows["front end"].value_counts()
    told = ", ".join(f"{count} by {frontend}" for frontend, count in built.items())
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Workloads</title>
<style>{page_style()}</style></head>
<body>
<h1>The run's workloads and the front end that built each</h1>
<p class="summary"><b>{len(rows)} workloads: {html.escape(told)}</b>. onnx: ONNX Runtime Training's gradient graph,
decomposed into primitive ops (MONET's method); torch: the step traced by torch. Each step is checked by execution
(the decomposition against the graph it came from, or the trace against eager torch and torch.optim).</p>
<table><thead><tr>{head}</tr></thead>
<tbody>
{body}
</tbody></table>
</body></html>
"""
