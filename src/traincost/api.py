"""traincost as a Python library: cost a model's training step on a hardware file, sweep a hardware grid, import
another tool's hardware, read a study's paper-vs-ours table. Each returns pandas tables (or a frozen record of them;
the import, the hardware it loaded).

``traincost cost``, ``sweep``, ``hardware import`` and ``summary`` are argument parsing and file writing over these
functions. Every option is a keyword; each is checked before any work, and a bad one raises a ``ConfigError`` (a
``TraincostError``) naming it, as a bad file or node raises one naming the file, node or field.

Example (``docs/api.md`` walks through each function)::

    from traincost.api import cost_model, sweep

    cost = cost_model("mlp", hardware="config/hardware/edge_tpu.yaml", batch=2, optimizer="adam")
    cost.summary[["latency_cycles", "energy_pj"]]  # the training step at the file's default configuration
    grid = sweep(cost.workload, hardware="config/hardware/edge_tpu.yaml", grid={"x_pes": [2, 4, 8]})

Each function imports the engines it runs when it is called, so that a command built on one of them loads only what
it runs (``traincost sweep`` never loads torch).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from traincost.errors import ConfigError
from traincost.limits import MAX_BATCH, MAX_CONFIGS, MAX_SEED

if TYPE_CHECKING:
    import onnx
    import pandas as pd

    from traincost.frontend.shared.optimizer import OptimizerSpec
    from traincost.hardware import HardwareSpec
    from traincost.model_cost import ModelCost
    from traincost.models import Architecture
    from traincost.schedule import SchedulePlan
    from traincost.workload import Workload

__all__ = ["cost_model", "import_hardware", "study_table", "sweep"]

_DEFAULT_LR = 0.01  # traincost cost --lr


def cost_model(
    model: str | os.PathLike[str] | Architecture | onnx.ModelProto,
    *,
    hardware: HardwareSpec | str | os.PathLike[str],
    batch: int = 1,
    optimizer: str | OptimizerSpec = "sgd",
    lr: float | None = None,
    seed: int = 0,
    verify: bool = True,
    frontend: Literal["torch", "onnx"] | None = None,
    attention: Literal["torch", "materialised", "fused"] = "torch",
) -> ModelCost:
    """One training step of ``model`` on ``hardware`` at its default configuration: traced (or built by ONNX Runtime
    Training), checked by execution, lowered, its memory profiled and scheduled, as ``traincost cost`` does.

    Args:
        model: a zoo name (``traincost models``), an architecture (a user's torch module:
            ``traincost.models.factory_architecture``), an ONNX file (a path ending ``.onnx``, exported for training:
            README, *Cost your own model*), or a forward graph as ``traincost export`` writes it (at its batch).
        hardware: the hardware YAML (``config/hardware/``), or one loaded (``traincost.hardware.load_hardware``).
        batch: samples per step.
        optimizer: ``sgd``, ``sgd_momentum``, ``adam`` or ``adamw`` at learning rate ``lr`` (default 0.01), or an
            ``OptimizerSpec`` with every hyperparameter (then no ``lr``).
        lr: the learning rate of an optimizer given by name.
        seed: seed of the weights and of the batch the step is checked on.
        verify: check the training step by execution (against eager torch and torch.optim, or ONNX Runtime's graph).
        frontend: who builds the step: ``torch`` (torch traces it; the default for a torch model) or ``onnx`` (ONNX
            Runtime Training's gradient graph, decomposed; needs the ``ort`` extra; the only one for ONNX).
        attention: on the ONNX front end, which attentions are costed fused (``torch``: as torch runs each one,
            ``materialised`` or ``fused``); the torch front end costs each as torch runs it.

    Returns:
        ``traincost.model_cost.ModelCost``: ``summary`` (one row: ``latency_cycles``, ``energy_pj`` and its parts
        ``energy_<where>_pj`` per memory level and per phase, bytes moved, peak bytes on and off chip), ``ops`` (the
        schedule per op: ``op``, ``phase``, ``core``, ``start_cycles``, ``end_cycles``, ``energy_pj``, ...; the
        summary's energy is their sum), ``phases`` (``phase``, ``ops``, ``span_cycles``, ``energy_pj``), ``memory``
        (per tensor category, ``at_peak_bytes`` and ``total_bytes``), ``peak_bytes``, ``workload`` (the lowered step,
        which :func:`sweep` takes) and ``verification`` (its ``table()``: what the check compared).

    Raises:
        ConfigError: an option out of range or that does not fit the model (its name in the message).
        TraincostError: a bad hardware file, model or graph, named with the node or field at fault.
    """
    import onnx

    from traincost.frontend import ATTENTION_CHOICES, FRONTENDS
    from traincost.hardware import HardwareSpec, load_hardware
    from traincost.model_cost import cost_model as cost_forward_graph
    from traincost.model_cost import cost_torch_model, forward_graph_of
    from traincost.models import Architecture

    if not isinstance(model, str | os.PathLike | Architecture | onnx.ModelProto):
        raise ConfigError(f"model {_shown(model)}: expected a zoo name, an architecture, an ONNX file or a forward graph")
    _check_int("batch", batch, 1, MAX_BATCH)
    _check_int("seed", seed, 0, MAX_SEED)
    spec = _optimizer(optimizer, lr)
    onnx_given = isinstance(model, onnx.ModelProto | os.PathLike) or (isinstance(model, str) and model.endswith(".onnx"))
    chosen = frontend or ("onnx" if onnx_given else "torch")
    if chosen not in FRONTENDS:
        raise ConfigError(f"frontend {frontend!r}: expected one of {', '.join(FRONTENDS)}")
    if attention not in ATTENTION_CHOICES:
        raise ConfigError(f"attention {attention!r}: expected one of {', '.join(ATTENTION_CHOICES)}")
    if isinstance(model, str) and ":" in model and not onnx_given:
        raise ConfigError(f"model {model!r}: a factory path needs its inputs; pass traincost.models.factory_architecture(...)")
    torch_model = model if chosen == "torch" and isinstance(model, str | Architecture) and not onnx_given else None
    if chosen == "torch" and torch_model is None:
        raise ConfigError(f"model {_shown(model)}: an ONNX graph is costed by the ONNX front end (frontend='onnx')")
    if chosen == "torch" and attention != "torch":
        raise ConfigError(
            f"attention {attention!r}: for the ONNX front end (frontend='onnx'); the torch front end costs each attention "
            "as torch runs it"
        )
    hardware_spec = hardware if isinstance(hardware, HardwareSpec) else load_hardware(hardware)  # before any tracing
    if torch_model is not None:
        return cost_torch_model(torch_model, hardware_spec, batch=batch, optimizer=spec, seed=seed, verify=verify)
    forward = forward_graph_of(model, batch=batch, seed=seed)
    return cost_forward_graph(forward, hardware_spec, optimizer=spec, seed=seed, verify=verify, attention=attention)


def sweep(
    workload: Workload,
    *,
    hardware: str | os.PathLike[str],
    grid: Mapping[str, Sequence[float]] | None = None,
    step: Literal["training", "inference"] = "training",
    plan: str | SchedulePlan = "pipeline_tensor",
    shard: tuple[int, int] = (0, 1),
    max_configs: int = MAX_CONFIGS,
) -> pd.DataFrame:
    """Latency, energy and memory of ``workload`` on every configuration of a hardware template's grid, as
    ``traincost sweep`` writes them.

    Args:
        workload: a lowered step: ``cost_model(...).workload``, or ``Workload.read(ops, tensors)`` of tables a command
            wrote.
        hardware: the hardware template YAML; its parameters' defaults where the grid gives no values.
        grid: values per template parameter, crossed (``{"x_pes": [2, 4], "local_memory_mb": [1, 2]}``: four
            configurations); none: the defaults, one configuration.
        step: ``training`` (the whole step) or ``inference`` (its forward ops only).
        plan: a schedule mode (``layer_by_layer``, ``pipeline``, ``tensor``, ``pipeline_tensor``,
            ``stream_layer_by_layer``) at its defaults, or a ``SchedulePlan`` (fused groups, resident fraction, ...).
        shard: ``(index, count)``: only the ``index``-th of ``count`` contiguous slices of the grid (to split a large
            grid over processes; ``traincost concat`` joins their tables).
        max_configs: refuse a grid of more configurations.

    Returns:
        One row per configuration: ``config_id`` (a stable hash of the parameters), ``workload``, ``hardware``, ``step``,
        one column per template parameter, ``latency_cycles``, ``energy_pj`` and its parts ``energy_<where>_pj`` (MACs,
        each memory level, the bus, off chip; per phase), ``offchip_bytes``, ``bus_bytes``, ``peak_onchip_bytes``,
        ``peak_offchip_bytes``, ``utilization``.

    Raises:
        ConfigError: an unknown step or mode, a bad shard, a grid past ``max_configs``.
        HardwareError: a bad template, a parameter it does not have, a value out of range in some configuration.
    """
    from traincost.schedule import SchedulePlan
    from traincost.schedule.evaluate import evaluate_sweep

    if not isinstance(hardware, str | os.PathLike):
        raise ConfigError(f"hardware {_shown(hardware)}: expected the template's path (a sweep evaluates its expressions)")
    if len(shard) != 2:
        raise ConfigError(f"shard {shard!r}: expected (index, count)")
    _check_int("max_configs", max_configs, 1, None)
    chosen = plan if isinstance(plan, SchedulePlan) else SchedulePlan.from_mode(plan)
    index, count = shard
    return evaluate_sweep(
        workload,
        hardware,
        grid=grid or {},
        step=step,
        plan=chosen,
        shard_index=index,
        shard_count=count,
        max_configs=max_configs,
    )


def import_hardware(
    source: str | os.PathLike[str],
    *,
    kind: Literal["zigzag", "stream"],
    out: str | os.PathLike[str],
    mapping: str | os.PathLike[str] | None = None,
    unroll: str | None = None,
    offchip: str | None = None,
    operand_bits: int | None = None,
    mac_energy_pj: float | None = None,
) -> HardwareSpec:
    """A ZigZag or Stream hardware description as a traincost hardware YAML, written to ``out`` and loaded from it, as
    ``traincost hardware import`` writes it (``config/hardware/README.md`` describes the translation).

    Args:
        source: ZigZag's hardware YAML (one core), or Stream's accelerator YAML (listing its core files).
        kind: ``zigzag`` or ``stream``.
        out: the traincost hardware YAML to write (whole or not at all).
        mapping: zigzag: the mapping YAML with the spatial unrolling (default: ZigZag's bundled mapping of the same
            name, else its ``default.yaml``).
        unroll: which loop dimension each array dimension unrolls, e.g. ``D1=K,D2=C`` or ``D3=OX:4``.
        offchip: zigzag: the memory that is off-chip DRAM (default: the one named like dram).
        operand_bits: stream: the bits of the workload's tensors (default: the core files' operand precision).
        mac_energy_pj: pJ per MAC, flat (instead of an in-memory-computing array's model, or where none is given).

    Returns:
        The hardware at its one configuration: ``cores`` (each with its ``pes`` and ``count``), ``memories`` (on
        chip), ``bus``, ``offchip``; ``source`` is ``out``.

    Raises:
        ConfigError: an unknown ``kind``, or an option of the other kind.
        HardwareError: a file the translation cannot read, or whose translation does not load (naming the file and
            key).
    """
    from traincost.hardware import HardwareError, load_hardware
    from traincost.hardware.import_stream import stream_hardware
    from traincost.hardware.import_zigzag import hardware_yaml_text, parse_unroll, zigzag_hardware
    from traincost.io import atomic_path

    loops = parse_unroll(unroll) if unroll else None
    match kind:
        case "zigzag":
            if operand_bits is not None:
                raise ConfigError("operand_bits: applies to stream files (a ZigZag core gives its own input_precision)")
            data = zigzag_hardware(source, mapping=mapping, unroll=loops, offchip=offchip, mac_energy_pj=mac_energy_pj)
        case "stream":
            if mapping is not None or offchip is not None:
                raise ConfigError("mapping and offchip: apply to zigzag files (a Stream file names its off-chip core)")
            data = stream_hardware(source, unroll=loops, mac_energy_pj=mac_energy_pj, operand_bits=operand_bits)
        case _:
            raise ConfigError(f"kind {kind!r}: expected zigzag or stream")
    header = f"Written by `traincost hardware import {kind} {source}`; see config/hardware/README.md."
    with atomic_path(out) as tmp:
        tmp.write_text(hardware_yaml_text(data, header=header))
        try:
            hardware = load_hardware(tmp)
        except HardwareError as err:
            raise HardwareError(f"{source}: the translation does not load: {str(err).replace(str(tmp), str(out))}") from err
    return replace(hardware, source=Path(out))


def study_table(
    results: str | os.PathLike[str], study: Literal["monet", "mtrain", "tiered"], *, calibrated: bool = True
) -> pd.DataFrame:
    """One study's paper-vs-ours table from a workflow run's results folder, as ``traincost summary`` reads it.

    Args:
        results: the workflow's results folder (``results/``).
        study: ``monet`` (``monet/claims.csv``), ``mtrain`` or ``tiered`` (``<study>/compare.csv``); the copy with a
            ``why`` column that ``snakemake ablations`` writes is read instead where it is at least as new.
        calibrated: false: the comparison the ablations ran before calibration (``ablations/<study>/calibrated/false``).

    Returns:
        One row per check of the paper: ``claim`` (with the context telling its rows apart), ``claim_name``,
        ``check``, ``paper``, ``ours``, ``agrees``, ``tie`` and ``magnitude`` (nullable booleans), ``verdict``,
        ``kind`` (``claim`` rows are the ones counted), ``note``, the study's context columns and, where the ablations
        ran, ``why``.

    Raises:
        ConfigError: an unknown study, or a results folder without that table (naming the file).
    """
    from traincost.analysis.agreement import STUDIES, comparison_path, read_comparison

    if study not in STUDIES:
        raise ConfigError(f"study {study!r}: expected one of {', '.join(STUDIES)}")
    folder = Path(results)
    if not folder.is_dir():
        raise ConfigError(f"results {folder}: no such folder (run the workflow first)")
    return read_comparison(comparison_path(folder, STUDIES[study], calibrated=calibrated), STUDIES[study])


def _check_int(name: str, value: object, low: int, high: int | None) -> None:
    """``value`` is an integer in ``[low, high]`` (no upper bound with ``high`` None), else a ConfigError naming it."""
    if isinstance(value, bool) or not isinstance(value, int) or value < low or (high is not None and value > high):
        bound = f"from {low:,} to {high:,}" if high is not None else f">= {low:,}"
        raise ConfigError(f"{name} {value!r}: expected an integer {bound}")


def _optimizer(optimizer: str | OptimizerSpec, lr: float | None) -> OptimizerSpec:
    """The optimizer a name and learning rate give, or the one given whole."""
    from traincost.frontend.shared.optimizer import OptimizerSpec

    if isinstance(optimizer, OptimizerSpec):
        if lr is not None:
            raise ConfigError(f"lr {lr!r}: give it in the OptimizerSpec ({optimizer.kind}, lr {optimizer.lr})")
        return optimizer
    return OptimizerSpec(kind=optimizer, lr=_DEFAULT_LR if lr is None else lr)


def _shown(value: object) -> str:
    """A value as an error names it: a path as written, a graph by its name, else its type."""
    if isinstance(value, str | os.PathLike):
        return repr(os.fspath(value))
    name = getattr(getattr(value, "graph", None), "name", None) or getattr(value, "name", None)
    return repr(name) if isinstance(name, str) else f"of type {type(value).__name__}"
