"""What a check of a training step by execution found: each tensor compared end to end, and, for the ONNX front end's
decomposition, each rewritten op type node by node. ``traincost cost`` writes it as ``verification.parquet``.

Its own module, free of ONNX Runtime: the torch front end's check (``frontend.torch.check``) reports in the same table.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from traincost.frontend.shared.rounding import TOLERANCE

__all__ = ["FOLLOWS_REASON", "NOISE_REASON", "ZERO_REASON", "DecompositionCheck", "TensorCheck"]

NOISE_REASON = "rounding noise"  # one-ulp nudges of the inputs move it by more than rounding.NOISE
ZERO_REASON = "exactly 0"  # eager torch computes it 0: no scale to tell rounding by
FOLLOWS_REASON = "update of a gradient rounding dominates"  # of a gradient set aside, or one that cancels to 0


@dataclass(frozen=True, slots=True)
class TensorCheck:
    """How one tensor of the step compared end to end.

    Attributes:
        name: the loss, a gradient ``<param>_grad`` or an updated parameter ``<param>.updated``.
        error: largest relative difference between the two graphs (see ``max_relative_error``).
        sensitivity: how far float32 rounding moves it in the original graph: its largest relative
            change when the float inputs are nudged by one ulp.
        limit: the error rounding explains (``rounding.allowed_error``: ten times the sensitivity, at least
            ``rounding.TOLERANCE``).
        held: False when the tensor is set aside, reported, not compared (node by node it is, on the ONNX front
            end): ``reason`` says why.
        reason: why a tensor is set aside ("" where it is compared): ``NOISE_REASON``, rounding alone moves it by
            more than ``rounding.NOISE`` (a sum that cancels to 0); ``ZERO_REASON``, eager torch computes it 0
            exactly, no scale to tell rounding by; ``FOLLOWS_REASON``, an update computed from such a gradient.
    """

    name: str
    error: float
    sensitivity: float
    limit: float
    held: bool
    reason: str = ""


@dataclass(frozen=True, slots=True)
class DecompositionCheck:
    """What ``verify_decomposition`` found.

    Attributes:
        per_rule: for each rewritten op type, the worst error of any of its nodes' outputs when the
            replacement runs on the very tensors the original node read.
        tensors: the end-to-end comparison of the loss, every gradient and every updated parameter.
        branch_flips: elements of ReLU, LeakyReLU and MaxPool outputs and Clip inputs that took another
            branch in the rewritten graph because their input was within rounding of a kink (each told
            after the pins of the flips upstream of it).
        pinned: branching ops with elements of their input the rewritten graph read from the original
            graph for the gradients to follow the same branches (0 when no element flipped).
        node_limits: per rewritten op type, the limit its worst node was held to: ``rounding.TOLERANCE``, or what
            rounding explains where the kernel itself moves that much on inputs nudged by one ulp (a BatchNorm
            gradient over the 2 values per channel of a 1x1 map at batch 2).
        against_torch: the torch front end's check, against eager torch (else the ONNX front end's decomposition).
        precision: what both sides computed in: float32, or float64 (the torch front end's check).
    """

    per_rule: dict[str, float]
    tensors: tuple[TensorCheck, ...]
    branch_flips: int
    pinned: int
    node_limits: dict[str, float] = field(default_factory=dict)
    against_torch: bool = False
    precision: str = "float32"

    @classmethod
    def none(cls) -> DecompositionCheck:
        """The check of a decomposition that was not verified: nothing compared."""
        return cls(per_rule={}, tensors=(), branch_flips=0, pinned=0)

    def summary(self) -> str:
        """One line: how many tensors held of how many compared, the worst, the float32 noise and the branch flips."""
        if not self.tensors:
            return "decomposition not verified (--no-verify): nothing compared"
        name, error = self.worst_end_to_end
        held = sum(t.held for t in self.tensors)
        grads = [t for t in self.tensors if t.name.endswith("_grad")]
        of_grads = f", {sum(t.held for t in grads)} of {len(grads)} weight gradients" if grads else ""
        compared = f"{held} of {len(self.tensors)} tensors compared and held end to end{of_grads} (worst {error:.1e} at {name})"
        aside = self.set_aside()
        told = ", ".join(f"{count} {reason}" for reason, count in aside.items()) or "none"
        if self.against_torch:
            against = "eager torch and torch.optim" if any(t.name == "loss" for t in self.tensors) else "eager torch"
            return f"traced step verified in {self.precision} against {against}: {compared}; set aside: {told}"
        node_error = max(self.per_rule.values(), default=0.0)
        return (
            f"decomposition verified in {self.precision}: {compared}; set aside: {told} (node by node only, worst node "
            f"{node_error:.1e}); {self.branch_flips} branch flips pinned in {self.pinned} ops"
        )

    def set_aside(self) -> dict[str, int]:
        """How many tensors were set aside, not compared end to end, by reason."""
        return dict(Counter(t.reason or NOISE_REASON for t in self.tensors if not t.held))

    @property
    def end_to_end(self) -> dict[str, float]:
        return {t.name: t.error for t in self.tensors}

    @property
    def sensitivity(self) -> dict[str, float]:
        return {t.name: t.sensitivity for t in self.tensors}

    @property
    def worst_end_to_end(self) -> tuple[str, float]:
        worst = max((t for t in self.tensors if t.held), key=lambda t: t.error / t.limit)
        return worst.name, worst.error

    def table(self) -> pd.DataFrame:
        """One row per rewritten op type (node by node) and per compared tensor (end to end)."""
        nodes = [
            {
                "check": "node",
                "name": op,
                "error": error,
                "sensitivity": np.nan,
                "limit": self.node_limits.get(op, TOLERANCE),
                "held": True,
                "set_aside": "",
                "precision": self.precision,
            }
            for op, error in sorted(self.per_rule.items())
        ]
        tensors = [
            {
                "check": "end_to_end",
                "name": t.name,
                "error": t.error,
                "sensitivity": t.sensitivity,
                "limit": t.limit,
                "held": t.held,
                "set_aside": "" if t.held else t.reason or NOISE_REASON,
                "precision": self.precision,
            }
            for t in self.tensors
        ]
        columns = {"check": str, "name": str, "error": float, "sensitivity": float, "limit": float, "held": bool}
        columns |= {"set_aside": str, "precision": str}
        return pd.DataFrame(nodes + tensors, columns=list(columns)).astype(columns)
