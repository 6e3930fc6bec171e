"""Fused groups written by hand as layer-name prefixes (MONET's manual ResNet-18 fusion).

A fusion file lists module prefixes of the model; every op whose ``layer`` lies under a prefix
joins that prefix's group, one group per prefix and phase. For ResNet-18 the prefixes are the stem,
each residual block, the pooling and the classifier: a block's convolutions, normalisations,
activations and residual add run as one fused stack. Prefixes are module paths as the ONNX front end names layers; an op
of the torch front end, named by its module's qualified name, lies under a prefix's last module.

File format (YAML)::

    phases: [forward, backward]      # which phases are fused
    prefixes: [stem, stages/stages.0/stages.0.0, ...]
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from traincost.config_files import read_yaml, shorten
from traincost.errors import ConfigError
from traincost.workload import PHASES

__all__ = ["groups_by_prefix", "read_manual_fusion"]


def groups_by_prefix(ops: pd.DataFrame, prefixes: Sequence[str], *, phases: Sequence[str]) -> tuple[tuple[int, ...], ...]:
    """One group of op ids per (phase, prefix) with at least two ops; the longest matching prefix wins."""
    ordered = sorted(prefixes, key=len, reverse=True)

    def owner(layer: str) -> str | None:
        return next((p for p in ordered if _under(layer, p)), None)

    chosen = ops[ops["phase"].isin(phases)]
    keys = chosen["layer"].map(owner)
    groups = []
    for phase in phases:
        for prefix in prefixes:
            members = chosen["op"][(chosen["phase"] == phase) & (keys == prefix)]
            if len(members) >= 2:
                groups.append(tuple(int(op) for op in members))
    return tuple(groups)


def read_manual_fusion(path: str | os.PathLike[str], ops: pd.DataFrame) -> tuple[tuple[int, ...], ...]:
    """The fused groups a fusion file defines on ``ops``.

    Raises:
        ConfigError: the file is unreadable, malformed, or a prefix matches no op.
    """
    file = Path(path)
    data = read_yaml(file)
    if not isinstance(data, dict) or set(data) != {"phases", "prefixes"}:
        raise ConfigError(f"{file}: expected exactly the keys 'phases' and 'prefixes'")
    phases, prefixes = data["phases"], data["prefixes"]
    for key, values in (("phases", phases), ("prefixes", prefixes)):
        if not isinstance(values, list) or not values or not all(isinstance(v, str) and v for v in values):
            raise ConfigError(f"{file}: {key}: {shorten(repr(values))}; expected a non-empty list of names")
    bad = [p for p in phases if p not in PHASES]
    if bad:
        raise ConfigError(f"{file}: phases: {bad} are not phases ({', '.join(PHASES)})")
    layers = ops["layer"].astype(str).unique()
    unmatched = [p for p in prefixes if not any(_under(layer, p) for layer in layers)]
    if unmatched:
        raise ConfigError(f"{file}: prefixes {unmatched} match no op's layer")
    return groups_by_prefix(ops, prefixes, phases=phases)


def _under(layer: str, prefix: str) -> bool:
    """Whether an op of ``layer`` lies under module ``prefix``, a module path as the ONNX front end names layers
    (``stages/stages.0/stages.0.0``: each module's qualified name). The torch front end names a layer by its module's
    qualified name and the function (``stages.0.0.conv1/conv2d``): it lies under the prefix's last module or one
    inside it."""
    if layer == prefix or layer.startswith(prefix + "/"):
        return True
    module, module_prefix = layer.split("/", 1)[0], prefix.rsplit("/", 1)[-1]
    return module == module_prefix or module.startswith(module_prefix + ".")
