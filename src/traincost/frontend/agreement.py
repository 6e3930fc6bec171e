"""Where both front ends run, do they agree? The totals of a Workload that do not depend on who built it: MACs per
phase, the bytes of weights, gradients and optimizer states, and the saved activations.

Elementwise ops and op counts are left out: each front end decomposes a composite op its own way (torch's core ATen
decompositions, our gradient rules), which moves ops between kinds without changing what is multiplied or stored.
"""

from __future__ import annotations

import pandas as pd

from traincost.workload import Workload

__all__ = ["AGREEMENT_LIMITS", "frontend_agreement", "workload_totals"]

# The largest relative difference each total may show between the front ends (issue 34): MACs per phase 1 %, the
# persistent state's bytes equal, saved activations 5 %.
AGREEMENT_LIMITS = {
    "macs_forward": 0.01,
    "macs_backward": 0.01,
    "macs_optimizer": 0.01,
    "weight_bytes": 0.0,
    "weight_grad_bytes": 0.0,
    "optimizer_state_bytes": 0.0,
    "saved_activation_bytes": 0.05,
}


def workload_totals(workload: Workload) -> dict[str, int]:
    """The totals ``AGREEMENT_LIMITS`` names, of one Workload."""
    ops, tensors = workload.ops, workload.tensors
    phases, kinds = ("forward", "backward", "optimizer"), ("weight", "weight_grad", "optimizer_state")
    totals = {f"macs_{phase}": int(ops.loc[ops["phase"] == phase, "macs"].sum()) for phase in phases}
    totals |= {f"{kind}_bytes": int(tensors.loc[tensors["kind"] == kind, "bytes"].sum()) for kind in kinds}
    totals["saved_activation_bytes"] = int(tensors.loc[tensors["saved_for_backward"], "bytes"].sum())
    return totals


def frontend_agreement(torch_workload: Workload, onnx_workload: Workload) -> pd.DataFrame:
    """One row per total: the torch front end's, the ONNX front end's, their relative difference and whether it is
    within its limit."""
    ours, theirs = workload_totals(torch_workload), workload_totals(onnx_workload)
    rows = []
    for total, limit in AGREEMENT_LIMITS.items():
        a, b = ours[total], theirs[total]
        difference = abs(a - b) / b if b else float(a != 0)
        rows.append({"total": total, "torch": a, "onnx": b, "difference": difference, "within": difference <= limit})
    return pd.DataFrame(rows)
