"""Which storages the forward pass keeps for the backward pass: the rule the lowering and the recompute rewrite share.

In a module of its own, with no other import from ``traincost``: the recompute rewrite
(:mod:`traincost.optimize.checkpoint`, imported by every NSGA-II worker process) needs this rule but not
the lowering's decomposition and its ONNX Runtime checks, which import torch (about 8 CPU seconds).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["saved_for_backward"]

_SHAPE_OPS = frozenset({"Shape", "Size"})


def saved_for_backward(tensors: pd.DataFrame, ops: pd.DataFrame) -> pd.Series:
    """Which storages the forward pass keeps for the backward pass, as torch's ``saved_tensors_hooks`` sees them.

    A batch input or an activation made in the forward pass (a recomputed one is made just before
    use) is saved if a backward op reads its data (a Shape or Size reads only its shape). A view
    that the backward pass reads saves the tensor it views instead: that tensor if it is a batch
    input or an activation, nothing if it is a weight (a transposed weight is the weight), and never
    the view itself, so that a storage is counted once.
    """
    phase, op_type = ops["phase"].to_numpy(), ops["op_type"].to_numpy()
    data_read = (phase == "backward") & ~np.isin(op_type, list(_SHAPE_OPS))
    producer = tensors["producer"].to_numpy()
    made_in_forward = (producer < 0) | (phase[producer] == "forward")
    saved = (
        tensors["kind"].isin(["input", "activation"]).to_numpy()
        & made_in_forward
        & np.array([bool(np.any(data_read[c])) if len(c) else False for c in tensors["consumers"]])
    )
    view_of = tensors["view_of"].to_numpy()
    kind = tensors["kind"].to_numpy()
    viewed = view_of >= 0
    roots = view_of[viewed & saved]
    saved[viewed] = False
    saved[roots[np.isin(kind[roots], ("input", "activation"))]] = True
    return pd.Series(saved, index=tensors.index)
