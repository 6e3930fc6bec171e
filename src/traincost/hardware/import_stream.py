"""Translate a Stream (stream-dse 2.x) multi-core hardware description into a traincost hardware description.

Stream's accelerator file lists its cores by id, each a ZigZag-style core file (relative to the
accelerator file), names the off-chip core (``offchip_core_id``), and connects the cores by
point-to-point links and buses (``core_connectivity``, bandwidths in bits per cycle, energy per bit
``unit_energy_cost``). Core files add ``type`` (``zigzag.compute``/``compute`` or ``zigzag.offchip``),
``operator_types`` (the ONNX operators a core runs) and ``operand_precision`` (``input``,
``accumulator``: ``int8``, ``bf16``, ``fp32`` ...).

The translation: cores listed from the same file become one traincost core with ``count`` = how
many; each core file goes through the ZigZag translation (``import_zigzag.zigzag_core``), its memories
prefixed by the file's stem; the off-chip core's memory is the ``offchip`` link; the first ``bus``
entry of ``core_connectivity`` is the bus (else the widest link), and its point-to-point links between cores of two
kinds one ``links`` entry per pair of our cores, their bandwidths summed; ``core_memory_sharing`` makes the
first core's top memory the shared top memory of the others. Each op kind goes to the core whose
``operator_types`` name it; convolutions and matrix products go to the cores without
``operator_types`` (Stream's compute arrays), and kinds no core names go to the element-wise core.
Spatial unrolling is not in Stream's files: Stream's core model has ZigZag pick it per layer, among every loop on
every array dimension. ``unroll`` fixes it; else each array dimension unrolls K, C, OX, OY in order, with the other
three as ``alternatives``, chosen per op by the mapping objective.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from traincost.hardware.import_zigzag import (
    ALL_KINDS,
    MAC_KINDS,
    ZIGZAG_CORE_SCHEMA,
    read_foreign_yaml,
    zigzag_core,
    zigzag_memory,
)
from traincost.hardware.load import HardwareError

__all__ = ["stream_hardware"]

_DEFAULT_UNROLL = ("K", "C", "OX", "OY")
_COMPUTE_TYPES = {"zigzag.compute", "compute"}
_MEMORY_TYPES = {"zigzag.memory", "memory"}
_LINKS = {"I1": "I", "I2": "W", "O": "O"}  # Stream's memory operands as ours
_OFFCHIP_TYPES = {"zigzag.offchip", "offchip"}
_OPERATOR_KINDS = {
    **dict.fromkeys(["Add", "Sub", "Mul", "Div", "Exp", "Pow", "Silu", "Sigmoid", "Gelu", "Tanh", "Relu", "Cast"], "eltwise"),
    **dict.fromkeys(["ReduceMax", "ReduceSum", "ReduceMean"], "reduce"),
    **dict.fromkeys(["MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"], "pool"),
    "Softmax": "softmax",
    "Conv": "conv",
    "Gemm": "gemm",
    "MatMul": "matmul",
    "Einsum": "matmul",
}


def stream_hardware(
    path: str | os.PathLike[str],
    *,
    unroll: Mapping[str, Sequence[tuple[str, int | None]]] | None = None,
    mac_energy_pj: float | None = None,
    operand_bits: int | None = None,
) -> dict[str, Any]:
    """Our hardware description (YAML data) of a Stream accelerator file and the core files it lists.

    Args:
        path: Stream's accelerator YAML (``cores``, ``offchip_core_id``, ``core_connectivity``).
        unroll: the loop dimension(s) each array dimension of every compute core unrolls.
        mac_energy_pj: pJ per MAC for cores that give no ``unit_energy``.
        operand_bits: the bits of the workload's tensors, as Stream sizes every operand by its tensor's element type
            (partial sums at the accumulator precision a core declares); default the core files' ``operand_precision``.

    Raises:
        HardwareError: a file is unreadable, a core type is not translated (memory cores, AIE tiles),
            or a key the translation needs is missing (the message names the file and key).
    """
    file = Path(path)
    data = read_foreign_yaml(file, schema="stream_accelerator.schema.yaml")
    if not isinstance(data, dict) or not isinstance(data.get("cores"), dict):
        raise HardwareError(f"{file}: cores: missing; expected a Stream accelerator (name, cores, offchip_core_id, ...)")
    offchip_id = data.get("offchip_core_id")
    if offchip_id not in data["cores"]:
        raise HardwareError(f"{file}: offchip_core_id: {offchip_id!r} is not a key of cores ({sorted(data['cores'])})")
    core_files = {core_id: _core_path(file, listed) for core_id, listed in data["cores"].items() if core_id != offchip_id}
    core_data = {core_file: _core_data(core_file) for core_file in dict.fromkeys(core_files.values())}  # each read once
    groups: dict[Path, list[int]] = {}
    memory_cores: dict[int, tuple[Path, Mapping[str, Any]]] = {}
    for core_id, core_file in core_files.items():
        if core_data[core_file].get("type") in _MEMORY_TYPES:
            memory_cores[core_id] = (core_file, core_data[core_file])
        else:
            groups.setdefault(core_file, []).append(core_id)
    memories: dict[str, Any] = {}
    cores: list[dict[str, Any]] = []
    top_of: dict[int, str] = {}
    for core_file, ids in groups.items():
        core, core_memories = _compute_core(
            core_file, core_data[core_file], file, unroll=unroll, mac_energy_pj=mac_energy_pj, operand_bits=operand_bits
        )
        core["count"] = len(ids)
        memories.update(core_memories)
        cores.append(core)
        top_of.update(dict.fromkeys(ids, core["name"]))
    _share_memories(
        data.get("core_memory_sharing") or [], file, cores=cores, memories=memories, top_of=top_of, memory_cores=memory_cores
    )
    _assign_runs(cores, file)
    offchip = _offchip(_core_path(file, data["cores"][offchip_id]), file)
    precision = cores[0]["precision_bits"]
    return {
        "name": str(data.get("name", file.stem)),
        "description": f"imported from Stream {file.name} by traincost hardware import stream",
        "word_bytes": max(1, math.ceil(precision["inputs"] / 8)),
        "parameters": {},
        "memories": memories,
        "cores": cores,
        "bus": _bus(data, file, offchip),
        "offchip": offchip,
    } | _links(data, file, top_of)


def _core_path(file: Path, listed: object) -> Path:
    """A core file as Stream finds it: relative to the accelerator file, else in its ``cores`` folder, else relative to
    a folder above it (Stream's testing files name cores from the repository root, ``stream/inputs/...``).

    Raises:
        HardwareError: none of these is a file.
    """
    for folder in (file.parent, file.parent / "cores", *file.parent.parents):
        candidate = folder / str(listed)
        if candidate.is_file():
            return candidate.resolve()
    raise HardwareError(f"{file}: cores: no core file {str(listed)!r} beside it, in its cores folder or under a folder above it")


def _core_data(core_file: Path) -> dict[str, Any]:
    data = read_foreign_yaml(core_file, schema=ZIGZAG_CORE_SCHEMA)
    if not isinstance(data, dict):
        raise HardwareError(f"{core_file}: expected a Stream core (name, type, memories, operational_array)")
    return data


def _compute_core(
    core_file: Path,
    data: Mapping[str, Any],
    file: Path,
    *,
    unroll: Mapping[str, Sequence[tuple[str, int | None]]] | None,
    mac_energy_pj: float | None,
    operand_bits: int | None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    kind = data.get("type", "zigzag.compute")
    if kind not in _COMPUTE_TYPES:
        raise HardwareError(
            f"{core_file}: type: {kind!r} cores are not translated (zigzag.compute, a zigzag.memory core shared through "
            f"core_memory_sharing, and the off-chip core); listed in {file.name}"
        )
    dims = (data.get("operational_array") or {}).get("dimensions") or []
    own_unroll = unroll if unroll is not None else {dim: [(loop, None)] for dim, loop in zip(dims, _DEFAULT_UNROLL, strict=False)}
    prefix = f"{core_file.stem}_"
    core, memories, dram = zigzag_core(
        data,
        core_file,
        name=core_file.stem,
        unroll=own_unroll,
        links=_LINKS,
        offchip=None,
        mac_energy_pj=mac_energy_pj,
        prefix=prefix,
        precision=_precision(data.get("operand_precision"), core_file, operand_bits),
    )
    if dram is not None:
        raise HardwareError(
            f"{core_file}: memories: an off-chip memory inside a compute core; Stream keeps it in the off-chip core"
        )
    if unroll is None:  # Stream's core model picks each layer's unrolling: each axis may take any of the loops
        for axis in core["pe_array"]:
            if axis["dim"] in _DEFAULT_UNROLL:
                axis["alternatives"] = [loop for loop in _DEFAULT_UNROLL if loop != axis["dim"]]
    core["operator_types"] = data.get("operator_types")
    return core, memories


def _precision(given: Any, core_file: Path, operand_bits: int | None) -> dict[str, int] | None:
    """Stream's ``operand_precision: {input: int8, accumulator: int32}`` as our precision_bits; with ``operand_bits``
    (the workload's element type, as Stream sizes each operand by its tensor's) every operand takes those bits and the
    partial sums the accumulator's, or the operands' where the core declares none."""
    if given is None:
        return None if operand_bits is None else dict.fromkeys(("inputs", "weights", "outputs", "partial_sums"), operand_bits)
    bits = {}
    for key in ("input", "accumulator"):
        match = re.fullmatch(r"[a-z]*?(\d+)", str(given.get(key, "")))
        if match is None:
            raise HardwareError(f"{core_file}: operand_precision.{key}: {given.get(key)!r}; expected e.g. int8, bf16, fp32")
        bits[key] = int(match.group(1))
    operand = bits["input"] if operand_bits is None else operand_bits
    return {"inputs": operand, "weights": operand, "outputs": operand, "partial_sums": bits["accumulator"]}


def _share_memories(
    sharing: Sequence[Any],
    file: Path,
    *,
    cores: list[dict[str, Any]],
    memories: dict[str, Any],
    top_of: Mapping[int, str],
    memory_cores: Mapping[int, tuple[Path, Mapping[str, Any]]],
) -> None:
    """``core_memory_sharing: ["0, 1"]``: the first core's top memory is the others' top memory too, shared. Where the
    first is a ``zigzag.memory`` core, its one memory is that shared top memory (Stream's ``tpu_v7`` VMEM: the
    TensorCore's MXUs and VPU read their operands from it in place).

    Raises:
        HardwareError: a group names a core that is neither, identical cores share (traincost groups them into one
            core with a count), or a memory core is shared with no compute core.
    """
    by_name = {core["name"]: core for core in cores}
    owners = set()
    for j, group in enumerate(sharing):
        ids = [int(part) for part in str(group).replace(" ", "").split(",") if part]
        unknown = [i for i in ids if i not in top_of and not (i == ids[0] and i in memory_cores)]
        if unknown:
            raise HardwareError(f"{file}: core_memory_sharing[{j}]: core {unknown[0]} is not a compute core")
        sharers = [by_name[top_of[i]] for i in ids if i in top_of]
        if any(core["count"] != 1 for core in sharers):
            raise HardwareError(
                f"{file}: core_memory_sharing[{j}]: sharing between cores listed more than once is not translated "
                "(traincost groups identical cores)"
            )
        if ids[0] in memory_cores:
            owners.add(ids[0])
            level = _memory_core(*memory_cores[ids[0]], memories)
        else:
            level = sharers.pop(0)["memory"][-1]
        memories[level["level"]]["shared"] = True
        for other in sharers:
            memories.pop(other["memory"][-1]["level"], None)
            other["memory"][-1] = {"level": level["level"], "operands": level["operands"]}
    lone = sorted(set(memory_cores) - owners)
    if lone:
        raise HardwareError(
            f"{file}: core {lone[0]} ({memory_cores[lone[0]][0].name}) is a zigzag.memory core no core_memory_sharing group "
            "lists first; expected it shared with the compute cores that read it"
        )


def _memory_core(core_file: Path, data: Mapping[str, Any], memories: dict[str, Any]) -> dict[str, Any]:
    """A ``zigzag.memory`` core's one memory (``data``, read from ``core_file``), added to ``memories``; its core level
    (name and operands)."""
    entries = data.get("memories") or {}
    if not isinstance(entries, dict) or len(entries) != 1:
        raise HardwareError(f"{core_file}: memories: expected the one memory of a zigzag.memory core")
    ((name, entry),) = entries.items()
    dims = (data.get("operational_array") or {}).get("dimensions") or []
    translated = zigzag_memory(
        entry, core_file, f"memories.{name}", _LINKS, dim_size=dict.fromkeys(dims, 0), used=dict.fromkeys(dims, 1)
    )
    operands = translated.pop("operands")
    translated.pop("served_dimensions")
    translated.pop("instances")
    memories[f"{core_file.stem}_{name}"] = translated
    return {"level": f"{core_file.stem}_{name}", "operands": operands}


def _assign_runs(cores: list[dict[str, Any]], file: Path) -> None:
    """Each op kind to one core, as Stream's mapping generator picks cores (``GenericMappingGenerator.
    _select_cores_for_node``): a core whose ``operator_types`` name an op's type runs it; the cores that name none are
    generic and take the rest, MAC ops on the one with the most PEs (Stream splits them over every generic core, the
    fastest split; traincost runs a kind on one core), the kinds no core names on the element-wise core. A generic core
    with a one-dimensional array (a SIMD or pooling helper whose file lists no ``operator_types``) is that element-wise
    core where no core names element-wise ops."""
    claimed: dict[str, str] = {}
    types = {core["name"]: core.pop("operator_types") for core in cores}
    generic = sorted(
        (core for core in cores if types[core["name"]] is None),
        key=lambda core: -math.prod(axis["size"] for axis in core["pe_array"]) * core["count"],
    )
    for core in cores:
        operators = types[core["name"]]
        if operators is None:
            kinds = list(MAC_KINDS) if generic and core is generic[0] else []
        else:
            kinds = [_OPERATOR_KINDS[o] for o in operators if o in _OPERATOR_KINDS]
        if "conv" in kinds:
            kinds += ["conv_dgrad", "conv_wgrad"]
        core["runs"] = [kind for kind in dict.fromkeys(kinds) if kind not in claimed]
        claimed.update(dict.fromkeys(core["runs"], core["name"]))
    rest = [kind for kind in ALL_KINDS if kind not in claimed]
    helpers = [core for core in generic[1:] if len(core["pe_array"]) == 1 and not core["runs"]]
    host = next((core for core in cores if "eltwise" in core["runs"]), helpers[0] if helpers else cores[0])
    host["runs"] += rest
    for core in cores:
        if not core["runs"]:
            raise HardwareError(
                f"{file}: core {core['name']!r} runs no op kind that another core does not run already "
                + (
                    "(it names no operator_types: Stream would split ops over it and the other generic cores)"
                    if types[core["name"]] is None
                    else ""
                )
            )
        if not set(core["runs"]) & set(MAC_KINDS):
            core["dataflow"] = "simd"


def _offchip(core_file: Path, file: Path) -> dict[str, Any]:
    data = read_foreign_yaml(core_file, schema=ZIGZAG_CORE_SCHEMA)
    if not isinstance(data, dict) or data.get("type", "zigzag.offchip") not in _OFFCHIP_TYPES:
        raise HardwareError(f"{core_file}: type: expected zigzag.offchip for the off-chip core of {file.name}")
    return _offchip_memory(data, core_file)


def _offchip_memory(data: Mapping[str, Any], core_file: Path) -> dict[str, Any]:
    memories = data.get("memories") or {}
    if len(memories) != 1:
        raise HardwareError(f"{core_file}: memories: expected the one off-chip memory, found {len(memories)}")
    ((name, entry),) = memories.items()
    ports = entry.get("ports") or []
    reads = [p["bandwidth_max"] for p in ports if p.get("type") in ("read", "read_write")]
    writes = [p["bandwidth_max"] for p in ports if p.get("type") in ("write", "read_write")]
    if not reads or not writes or entry.get("r_cost") is None or entry.get("w_cost") is None:
        raise HardwareError(f"{core_file}: memories.{name}: expected r_cost, w_cost and read and write ports")
    return {
        "bandwidth_bytes_per_cycle": max(reads) / 8,
        "read_energy_pj_per_bit": float(entry["r_cost"]) / max(reads),
        "write_energy_pj_per_bit": float(entry["w_cost"]) / max(writes),
        "source": f"{core_file.name} memories.{name}: r_cost {entry['r_cost']} / w_cost {entry['w_cost']} pJ per access",
    }


def _links(data: Mapping[str, Any], file: Path, core_of: Mapping[int, str]) -> dict[str, Any]:
    """Stream's point-to-point links between cores of two kinds, as one link between our two cores of the summed
    bandwidth (``links``: what one reads out of the other's top memory crosses it, not the bus). Links between
    instances of one kind, and to the off-chip or a memory core, have no counterpart: our instances of a kind share
    their work and their traffic off chip crosses the bus."""
    joined: dict[frozenset[str], dict[str, Any]] = {}
    default_energy = data.get("unit_energy_cost", 0) or 0
    for connection in data.get("core_connectivity") or []:
        if connection.get("type", "link") != "link" or len(connection["cores"]) != 2:
            continue
        names = [core_of.get(core_id) for core_id in connection["cores"]]
        if None in names or names[0] == names[1]:
            continue
        link = joined.setdefault(frozenset(names), {"between": names, "bits": 0.0, "ids": [], "energy": 0.0})
        link["bits"] += connection["bandwidth"]
        link["ids"].append(connection["cores"])
        link["energy"] = max(link["energy"], float(connection.get("unit_energy_cost", default_energy) or 0))
    if not joined:
        return {}
    return {
        "links": [
            {
                "between": link["between"],
                "bandwidth_bytes_per_cycle": link["bits"] / 8,
                "energy_pj_per_bit": link["energy"],
                "source": f"{file.name} core_connectivity: {len(link['ids'])} links between cores {link['ids']}",
            }
            for link in joined.values()
        ]
    }


def _bus(data: Mapping[str, Any], file: Path, offchip: Mapping[str, Any]) -> dict[str, Any]:
    connections = [c for c in data.get("core_connectivity") or [] if isinstance(c, Mapping)]
    buses = [c for c in connections if c.get("type") == "bus"]
    chosen = buses[0] if buses else max(connections, key=lambda c: c.get("bandwidth", 0), default=None)
    if chosen is None or not chosen.get("bandwidth"):
        return {
            "bandwidth_bytes_per_cycle": offchip["bandwidth_bytes_per_cycle"],
            "energy_pj_per_bit": 0,
            "source": f"not in {file.name} (no core_connectivity): as wide as the off-chip link, free",
        }
    energy = chosen.get("unit_energy_cost", data.get("unit_energy_cost", 0)) or 0
    return {
        "bandwidth_bytes_per_cycle": chosen["bandwidth"] / 8,
        "energy_pj_per_bit": float(energy),
        "source": f"{file.name} core_connectivity {chosen.get('type')} between cores {chosen.get('cores')}",
    }
