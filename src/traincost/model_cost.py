"""A model's training step costed in one call: the training graph (checked by execution), lowering, memory and the
schedule on one hardware description.

This is what ``traincost cost`` (and ``traincost.api.cost_model``) runs for a user, in one process, through either front
end: torch's own trace of the step (``cost_torch_model``: a zoo model or a user's torch module) or ONNX Runtime
Training's graph, decomposed (``cost_model``: the forward graph of a zoo model, a user's torch module or ONNX file,
``forward_graph_of`` or ``cli.arguments.forward_graph``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import onnx
import pandas as pd
from tqdm import tqdm

from traincost import models
from traincost.cost import op_table
from traincost.errors import ConfigError
from traincost.frontend.onnx.graph import model_meta
from traincost.frontend.shared.optimizer import OptimizerSpec
from traincost.frontend.shared.step_check import DecompositionCheck
from traincost.frontend.torch.check import verify_step
from traincost.frontend.torch.lower import lower_step
from traincost.frontend.torch.step import trace_step
from traincost.hardware import HardwareSpec, load_hardware
from traincost.memory.liveness import memory_profile
from traincost.progress import progress_bar
from traincost.schedule import SchedulePlan, schedule
from traincost.workload import PHASES, STEP_PHASES, Workload

__all__ = ["ModelCost", "cost_model", "cost_torch_model", "energy_by_level", "forward_graph_of"]

_STEPS = 4  # training graph, decomposition (and its check), workload and memory, schedule


@dataclass(frozen=True)
class ModelCost:
    """One training step of a model on one hardware configuration (the description's defaults).

    Attributes:
        workload: the lowered training step.
        summary: the schedule's one row: latency (cycles), energy (pJ) in total, per phase and per
            memory level, bytes moved, peak memory on and off chip.
        ops: the schedule per op, one row each in program order (``schedule(..., per_op=True)``; views, which move
            nothing, have none): ``op`` (the workload's op id), ``kind``, ``phase``, ``core``, ``start_cycles``,
            ``end_cycles``, ``latency_cycles``,
            ``energy_pj`` and its parts ``energy_<where>_pj`` (MACs, each memory level, the bus, off chip), the loop
            order chosen, bytes moved. The summary's energy is their sum, its latency their last end.
        phases: per phase, its ops' span of the schedule (cycles) and energy (pJ).
        memory: per tensor category, bytes at the step's peak and in total (liveness analysis).
        peak_bytes: the step's peak memory.
        verification: what the check of the decomposition by execution compared (no rows if not verified).
        attention: the step's attention softmaxes (by node name) and which of them are costed fused.
    """

    workload: Workload
    summary: pd.DataFrame
    ops: pd.DataFrame
    phases: pd.DataFrame
    memory: pd.DataFrame
    peak_bytes: int
    verification: DecompositionCheck
    attention: dict[str, bool]


def cost_model(
    forward: onnx.ModelProto,
    hardware: HardwareSpec | str | os.PathLike[str],
    *,
    optimizer: OptimizerSpec,
    seed: int = 0,
    verify: bool = True,
    attention: str = "torch",
) -> ModelCost:
    """Cost one training step of ``forward`` (a graph ``traincost export`` writes, at its batch) on ``hardware``, through
    the ONNX front end (ONNX Runtime Training builds the backward pass).

    ``attention``: which attentions are costed fused (``frontend.onnx.fused_attention``): ``torch`` (those torch runs
    with a fused kernel), ``materialised`` or ``fused``; a fused step is checked by execution against the other.

    Raises:
        TraincostError: any stage's error, naming the node, field or file at fault.
    """
    # the ONNX front end needs ONNX Runtime Training (the `ort` extra): imported only where it runs
    from traincost.frontend.onnx.decompose import decompose  # noqa: PLC0415
    from traincost.frontend.onnx.fused_attention import costed_attention  # noqa: PLC0415
    from traincost.frontend.onnx.lower import lower  # noqa: PLC0415
    from traincost.frontend.onnx.train_graph import build_train_step  # noqa: PLC0415
    from traincost.frontend.onnx.verification import verify_decomposition  # noqa: PLC0415

    name = forward.graph.name
    spec = _spec(hardware)
    with progress_bar(total=_STEPS, desc=f"cost {name}", unit="stage") as bar:
        train = build_train_step(forward, optimizer, seed=seed)
        bar.update(1)
        decomposed = decompose(train)
        check = verify_decomposition(train, decomposed, seed=seed) if verify else DecompositionCheck.none()
        decomposed, chosen = costed_attention(decomposed, attention, seed=seed, verify=verify)
        bar.update(1)
        workload = lower(decomposed, source=model_meta(forward).get("source", name))  # a user's ONNX file: its path
        return _costed(workload, spec, check, chosen, bar)


def cost_torch_model(
    model: models.Model,
    hardware: HardwareSpec | str | os.PathLike[str],
    *,
    batch: int,
    optimizer: OptimizerSpec,
    seed: int = 0,
    verify: bool = True,
    options: dict[str, object] | None = None,
) -> ModelCost:
    """Cost one training step of ``model`` (a zoo name or an architecture) at ``batch`` on ``hardware``, through the
    torch front end (torch traces the step: ``frontend.torch.step``); attention is costed as the traced graph computes
    it, materialised.

    Raises:
        TraincostError: any stage's error, naming the op, field or file at fault.
    """
    name = model if isinstance(model, str) else model.name
    spec = _spec(hardware)
    with progress_bar(total=_STEPS, desc=f"cost {name}", unit="stage") as bar:
        step = trace_step(model, batch=batch, seed=seed, optimizer=optimizer, options=options)
        bar.update(1)
        check = verify_step(step, seed=seed) if verify else DecompositionCheck.none()
        bar.update(1)
        return _costed(lower_step(step), spec, check, {}, bar)


def forward_graph_of(model: models.Model | os.PathLike[str] | onnx.ModelProto, *, batch: int, seed: int = 0) -> onnx.ModelProto:
    """The forward graph :func:`cost_model` costs at ``batch``: a torch model (a zoo name or an architecture) exported in
    training mode, an ONNX file (a path ending ``.onnx``) imported as it is (its inputs read from the graph, the
    cross-entropy loss on its one output), or a forward graph ``traincost export`` wrote, as it is.

    Raises:
        ConfigError: a forward graph exported at another batch.
        TraincostError: the export's or the import's error, naming the model, file or node at fault.
    """
    from traincost.frontend.onnx.export import export_model  # noqa: PLC0415 - the ONNX front end, where it runs
    from traincost.frontend.onnx.file_import import import_onnx  # noqa: PLC0415

    if isinstance(model, onnx.ModelProto):
        exported = model_meta(model).get("batch")
        if exported != str(batch):
            raise ConfigError(f"batch {batch}: the forward graph {model.graph.name!r} is at batch {exported}")
        return model
    if isinstance(model, os.PathLike) or (isinstance(model, str) and model.endswith(".onnx")):
        return import_onnx(os.fspath(model), batch=batch, seed=seed)
    return export_model(model, batch=batch, seed=seed, options={})


def _spec(hardware: HardwareSpec | str | os.PathLike[str]) -> HardwareSpec:
    """The hardware at its defaults: given, or loaded from its file (before any tracing, so a bad file costs nothing)."""
    return hardware if isinstance(hardware, HardwareSpec) else load_hardware(hardware)


def _costed(
    workload: Workload, hardware: HardwareSpec, check: DecompositionCheck, attention: dict[str, bool], bar: tqdm
) -> ModelCost:
    """The memory profile and the schedule of a lowered step (the last two of ``_STEPS``)."""
    profile = memory_profile(workload)
    bar.update(1)
    table = op_table(workload, phases=STEP_PHASES["training"])
    step = schedule(table, hardware, SchedulePlan(), per_op=True)
    bar.update(1)
    phases = [
        {
            "phase": phase,
            "ops": len(rows),
            "span_cycles": float(rows["end_cycles"].max() - rows["start_cycles"].min()),
            "energy_pj": float(rows["energy_pj"].sum()),
        }
        for phase in PHASES
        if len(rows := step.ops[step.ops["phase"] == phase])
    ]
    return ModelCost(
        workload=workload,
        summary=step.summary,
        ops=step.ops,
        phases=pd.DataFrame(phases),
        memory=profile.table(),
        peak_bytes=int(profile.peak_bytes),
        verification=check,
        attention=attention,
    )


def energy_by_level(summary: pd.DataFrame) -> pd.Series:
    """The summary's energy (pJ) in MACs, each memory level, the bus and off chip, largest first."""
    row = summary.iloc[0]
    where = [c for c in summary.columns if c.startswith("energy_") and c.endswith("_pj")]
    parts = {c[len("energy_") : -len("_pj")]: float(row[c]) for c in where}
    return pd.Series({k: v for k, v in parts.items() if k and k not in PHASES}, dtype=np.float64).sort_values(ascending=False)
