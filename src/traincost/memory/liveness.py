"""Peak memory of a training step from the liveness of every tensor of its Workload.

A tensor is live from the op that writes it (or the start, for inputs and persistent state) to its
last reader; graph outputs stay live to the end; persistent state (weights, buffers, optimizer
states, constants) is live throughout; an updated parameter or state overwrites its old value in
place and adds nothing; a view (``view_of``, a reshape, transpose or expand) adds nothing and keeps the
tensor it views live to its own last reader. The peak is the largest sum of live bytes over the ops.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from traincost.workload import Workload

__all__ = ["CATEGORIES", "MemoryProfile", "memory_profile", "tensor_categories"]

CATEGORIES = ("weights", "gradients", "optimizer_states", "saved_activations", "other")
_PERSISTENT = frozenset({"weight", "buffer", "optimizer_state", "constant"})


@dataclass(frozen=True)
class MemoryProfile:
    """Peak memory and its breakdown.

    Attributes:
        peak_bytes: the largest number of live bytes during the step.
        peak_op: the op id at which it occurs.
        at_peak_bytes: live bytes per category at the peak (sums to ``peak_bytes``).
        total_bytes: bytes per category over the whole step (every weight gradient, every saved
            activation …), the quantities torch allocates for them.
        live_bytes: live bytes after each op (length = number of ops).
    """

    peak_bytes: int
    peak_op: int
    at_peak_bytes: dict[str, int]
    total_bytes: dict[str, int]
    live_bytes: np.ndarray

    def table(self) -> pd.DataFrame:
        """One row per category: category, at_peak_bytes, total_bytes."""
        return pd.DataFrame(
            {
                "category": list(CATEGORIES),
                "at_peak_bytes": [self.at_peak_bytes[c] for c in CATEGORIES],
                "total_bytes": [self.total_bytes[c] for c in CATEGORIES],
            }
        )


def tensor_categories(tensors: pd.DataFrame) -> pd.Series:
    """The memory category of every tensor row."""
    category = np.full(len(tensors), "other", dtype=object)
    kind = tensors["kind"].to_numpy()
    category[kind == "weight"] = "weights"
    category[kind == "weight_grad"] = "gradients"
    category[kind == "optimizer_state"] = "optimizer_states"
    category[tensors["saved_for_backward"].to_numpy(dtype=bool)] = "saved_activations"
    return pd.Series(category, index=tensors.index, name="category")


def _fold_views(tensors: pd.DataFrame, start: np.ndarray, end: np.ndarray, size: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Live ranges and sizes with every view's bytes and lifetime folded into the tensor it views."""
    row_of = pd.Series(np.arange(len(tensors)), index=tensors["tensor"].to_numpy())
    view_of = tensors["view_of"].to_numpy()
    views = np.flatnonzero((view_of >= 0) & np.isin(view_of, row_of.index))
    roots = row_of.loc[view_of[views]].to_numpy()
    end, size = end.copy(), size.copy()
    np.maximum.at(end, roots, np.maximum(end[views], start[roots]))
    size[views] = 0
    return end, size


def memory_profile(workload: Workload) -> MemoryProfile:
    """Liveness analysis of ``workload`` (see the module docstring for the rules)."""
    tensors = workload.tensors
    n_ops = len(workload.ops)
    own = tensors[tensors["updates"] < 0]
    categories = tensor_categories(own)
    persistent = own["kind"].isin(_PERSISTENT).to_numpy()
    producer = own["producer"].to_numpy()
    last_reader = np.array([max(c) if len(c) else -1 for c in own["consumers"]], dtype=np.int64)
    start = np.where(persistent | (producer < 0), 0, producer)
    end = np.maximum(last_reader, start)
    end = np.where(persistent | (own["kind"] == "output").to_numpy(), n_ops - 1, end)
    size = own["bytes"].to_numpy(dtype=np.int64)
    if "view_of" in own.columns:
        end, size = _fold_views(own, start, end, size)

    live_by_category = {}
    for name in CATEGORIES:
        mask = (categories == name).to_numpy()
        delta = np.zeros(n_ops + 1, dtype=np.int64)
        np.add.at(delta, start[mask], size[mask])
        np.add.at(delta, end[mask] + 1, -size[mask])
        live_by_category[name] = np.cumsum(delta[:n_ops])
    live = sum(live_by_category.values())
    peak_op = int(np.argmax(live))
    return MemoryProfile(
        peak_bytes=int(live[peak_op]),
        peak_op=peak_op,
        at_peak_bytes={c: int(live_by_category[c][peak_op]) for c in CATEGORIES},
        total_bytes={c: int(size[(categories == c).to_numpy()].sum()) for c in CATEGORIES},
        live_bytes=np.asarray(live),
    )
