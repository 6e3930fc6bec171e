"""The optimizer of a training step, as both front ends read it: its validated spec, and the names of its inputs and
outputs.

Names: parameter ``p`` is read as ``p`` and written as ``p.updated``; its state ``s`` (``momentum``,
``exp_avg``, ``exp_avg_sq``) is read as ``p.s`` and written as ``p.s.updated``. Adam reads the step
count (1 for the first step) from the scalar input ``optimizer.step``. The ONNX front end appends the update as
primitive ops (:mod:`traincost.frontend.onnx.optimizer_step`); the torch front end traces ``torch.optim``'s and names
its inputs and outputs alike (:mod:`traincost.frontend.torch.step`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, get_args

from traincost.errors import ConfigError

__all__ = ["OptimizerKind", "OptimizerSpec", "STEP_INPUT", "updated_name", "state_input_name"]

OptimizerKind = Literal["sgd", "sgd_momentum", "adam", "adamw"]
STEP_INPUT = "optimizer.step"


@dataclass(frozen=True, slots=True)
class OptimizerSpec:
    """A validated optimizer and its hyper-parameters.

    Attributes:
        kind: sgd, sgd_momentum, adam or adamw.
        lr: learning rate.
        momentum: momentum coefficient (sgd_momentum only).
        beta1: first-moment decay (adam, adamw).
        beta2: second-moment decay (adam, adamw).
        eps: denominator term (adam, adamw).
        weight_decay: L2 penalty added to the gradient (sgd, sgd_momentum, adam) or decoupled decay
            of the parameter (adamw).
    """

    kind: OptimizerKind
    lr: float
    momentum: float = 0.9
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8
    weight_decay: float = 0.0

    def __post_init__(self) -> None:
        problems = []
        if self.kind not in get_args(OptimizerKind):
            problems.append(f"kind {self.kind!r} is not one of {', '.join(get_args(OptimizerKind))}")
        if not (self.lr > 0 and math.isfinite(self.lr)):
            problems.append(f"lr must be a finite number > 0, got {self.lr}")
        for name in ("momentum", "beta1", "beta2"):
            if not 0 <= getattr(self, name) < 1:
                problems.append(f"{name} must be in [0, 1), got {getattr(self, name)}")
        if not self.eps > 0:
            problems.append(f"eps must be > 0, got {self.eps}")
        if self.weight_decay < 0:
            problems.append(f"weight_decay must be >= 0, got {self.weight_decay}")
        if problems:
            raise ConfigError("optimizer: " + "; ".join(problems))

    @classmethod
    def from_mapping(cls, values: Mapping[str, object], *, where: str = "optimizer") -> OptimizerSpec:
        """Build from a config mapping, naming ``where`` and the bad key on error."""
        allowed = set(cls.__dataclass_fields__)
        unknown = sorted(set(values) - allowed)
        if unknown:
            raise ConfigError(f"{where}: unknown key(s) {unknown}; expected some of {sorted(allowed)}")
        try:
            return cls(**values)  # type: ignore[arg-type]
        except TypeError as err:
            raise ConfigError(f"{where}: {err}") from err
        except ConfigError as err:
            raise ConfigError(f"{where}: {err}") from err

    @property
    def states(self) -> tuple[str, ...]:
        """The per-parameter optimizer states this optimizer keeps."""
        match self.kind:
            case "sgd":
                return ()
            case "sgd_momentum":
                return ("momentum",)
            case "adam" | "adamw":
                return ("exp_avg", "exp_avg_sq")
        raise AssertionError(self.kind)

    def hyperparameters(self) -> dict[str, float]:
        """The hyper-parameters that matter for this kind (for metadata and reports)."""
        used = {"lr": self.lr, "weight_decay": self.weight_decay}
        if self.kind == "sgd_momentum":
            used["momentum"] = self.momentum
        if self.kind in ("adam", "adamw"):
            used |= {"beta1": self.beta1, "beta2": self.beta2, "eps": self.eps}
        return used


def updated_name(name: str) -> str:
    """The graph output that holds the new value of parameter or state ``name``."""
    return f"{name}.updated"


def state_input_name(param: str, state: str) -> str:
    """The graph input that holds optimizer state ``state`` of ``param``."""
    return f"{param}.{state}"
