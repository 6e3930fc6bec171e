"""Load a hardware YAML: schema → cross-checks → evaluate over a sweep → ``HardwareSpec``.

Validation collects every problem with its key path (``cores[0].pe_array[1].dim: ...``) and raises
one ``HardwareError``; nothing after loading sees a raw dict.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np
import pandas as pd
import yaml

from traincost.config_files import read_yaml, shorten
from traincost.errors import TraincostError
from traincost.hardware.expressions import ExpressionError, evaluate, names_in
from traincost.hardware.spec import (
    PRECISIONS,
    Core,
    CoreLevel,
    CoreLink,
    HardwareSpec,
    InMemoryArray,
    Link,
    MemoryLevel,
    MemoryPort,
    PEAxis,
)
from traincost.hardware.sweep import expand_grid
from traincost.limits import MAX_CONFIGS, MAX_COUNT

__all__ = ["load_hardware", "read_hardware_yaml", "schema_problems", "HardwareError"]

_ENERGIES = ("read_energy_pj_per_bit", "write_energy_pj_per_bit")
_MEMORY_FIELDS = ("size_bytes", *_ENERGIES)
_BANDWIDTHS = ("read_bandwidth_bytes_per_cycle", "write_bandwidth_bytes_per_cycle")
_MEMORY_EXPRESSIONS = (*_MEMORY_FIELDS, *_BANDWIDTHS, "min_access_bits", "instances")
_LINK_FIELDS = ("bandwidth_bytes_per_cycle", "energy_pj_per_bit", "read_energy_pj_per_bit", "write_energy_pj_per_bit")
# fields that must be > 0; every other numeric field must be >= 0
_POSITIVE = {"size_bytes", "read_bandwidth_bytes_per_cycle", "write_bandwidth_bytes_per_cycle", "bandwidth_bytes_per_cycle"}
# the port directions that read and that write
_READS = {"read", "read_write"}
_WRITES = {"write", "read_write"}


class HardwareError(TraincostError):
    """A hardware description that does not match the schema or is inconsistent."""


@cache
def _validator(name: str) -> jsonschema.Draft202012Validator:
    """The validator of the schema file ``name`` beside this module."""
    return jsonschema.Draft202012Validator(yaml.safe_load(resources.files("traincost.hardware").joinpath(name).read_text()))


def schema_problems(data: Any, schema: str) -> list[str]:
    """Each place ``data`` breaks the schema file ``schema`` (of this package), as ``key.path: what``, in key order."""
    errors = sorted(_validator(schema).iter_errors(data), key=lambda error: [str(part) for part in error.absolute_path])
    return [f"{_path(error.absolute_path)}: {shorten(error.message)}" for error in errors]


def read_hardware_yaml(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read and validate a hardware YAML (schema and cross-checks), without evaluating it."""
    file = Path(path)
    data = read_yaml(file, error=HardwareError)
    problems = schema_problems(data, "hardware.schema.yaml")
    if not problems:
        problems = _cross_check(data)
    if problems:
        raise HardwareError(f"{file}: " + "; ".join(problems))
    return data


def load_hardware(
    path: str | os.PathLike[str],
    *,
    sweep: Mapping[str, Sequence[float]] | None = None,
    configs: pd.DataFrame | None = None,
    max_configs: int = MAX_CONFIGS,
) -> HardwareSpec:
    """Load a hardware template evaluated at every configuration.

    Args:
        path: the hardware YAML.
        sweep: lists of values per parameter; their cartesian product is evaluated. Unswept
            parameters keep their default. Ignored when ``configs`` is given.
        configs: configurations already expanded (e.g. one shard of a sweep), as made by
            ``expand_grid``.
        max_configs: the largest grid ``sweep`` may expand to.

    Raises:
        HardwareError: the file fails the schema or a cross-check, or a value is out of range in
            some configuration (the message names the field and the parameters).
    """
    file = Path(path)
    data = read_hardware_yaml(file)
    defaults = {name: float(entry["default"]) for name, entry in data["parameters"].items()}
    if configs is None:
        configs = expand_grid(data["name"], defaults, sweep, max_configs=max_configs)
    missing = [name for name in defaults if name not in configs.columns]
    if missing:
        raise HardwareError(f"{file}: configurations lack parameters {missing}")
    params = {name: configs[name].to_numpy(dtype=np.float64) for name in defaults}
    build = _Builder(file, params, len(configs), word_bytes=int(data["word_bytes"]))
    axes = [_pe_array(entry, f"cores[{i}]", build) for i, entry in enumerate(data["cores"])]
    pes = [np.prod([axis.size for axis in core_axes], axis=0) for core_axes in axes]
    memories = {
        name: _memory(name, entry, _per_pe_instances(name, data["cores"], pes, build) if entry.get("per_pe") else None, build)
        for name, entry in data["memories"].items()
    }
    word_bits = 8 * int(data["word_bytes"])
    precision = {key: data.get("precision_bits", {}).get(key, word_bits) for key in PRECISIONS}
    cores = tuple(
        _core(entry, f"cores[{i}]", axes=axes[i], memories=memories, precision=precision, build=build)
        for i, entry in enumerate(data["cores"])
    )
    links = {key: _link(data[key], key, build) for key in ("bus", "offchip")}
    names = [core["name"] for core in data["cores"]]
    core_links = tuple(
        CoreLink(
            cores=(names.index(entry["between"][0]), names.index(entry["between"][1])),
            bandwidth_bytes_per_cycle=build.number(
                entry["bandwidth_bytes_per_cycle"], f"links[{i}].bandwidth_bytes_per_cycle", "bandwidth_bytes_per_cycle"
            ),
            energy_pj_per_bit=build.number(entry.get("energy_pj_per_bit", 0), f"links[{i}].energy_pj_per_bit", "energy"),
        )
        for i, entry in enumerate(data.get("links", []))
    )
    build.raise_problems()
    return HardwareSpec(
        name=data["name"],
        source=file,
        word_bytes=int(data["word_bytes"]),
        configs=configs.reset_index(drop=True),
        memories=memories,
        cores=cores,
        bus=links["bus"],
        offchip=links["offchip"],
        links=core_links,
        description=str(data.get("description", "")),
    )


def _axis_name(axis: Mapping[str, Any], j: int) -> str:
    """The name of the ``j``-th ``pe_array`` axis of a core: its own, else its dim and position."""
    return axis.get("name", f"{axis['dim']}{j}")


def _pe_array(entry: Mapping[str, Any], where: str, build: _Builder) -> tuple[PEAxis, ...]:
    return tuple(
        PEAxis(
            name=_axis_name(axis, j),
            dim=axis["dim"],
            size=build.number(axis["size"], f"{where}.pe_array[{j}].size", "size", integer=True),
            alternatives=tuple(axis.get("alternatives", ())),
            divisors=tuple(int(d) for d in axis.get("divisors", ())),
        )
        for j, axis in enumerate(entry["pe_array"])
    )


def _per_pe_instances(
    name: str, cores: Sequence[Mapping[str, Any]], pes: Sequence[np.ndarray], build: _Builder
) -> np.ndarray | None:
    """The PEs of the cores that list memory ``name`` (None if none does); a problem if they differ."""
    listing = [i for i, core in enumerate(cores) if any(level["level"] == name for level in core["memory"])]
    if not listing:
        return None
    first = listing[0]
    for i in listing[1:]:
        if not np.array_equal(pes[i], pes[first]):
            build.problems.append(
                f"memories.{name}.per_pe: cores {cores[first]['name']!r} and {cores[i]['name']!r} list it but have "
                f"different numbers of PEs; give instances instead"
            )
    return pes[first]


def _memory(name: str, entry: Mapping[str, Any], core_pes: np.ndarray | None, build: _Builder) -> MemoryLevel:
    where = f"memories.{name}"
    numbers = {key: build.number(entry[key], f"{where}.{key}", key) for key in _MEMORY_FIELDS}
    ports = tuple(
        MemoryPort(
            name=port.get("name", f"port{j}"),
            direction=port["direction"],
            bandwidth_bytes_per_cycle=build.number(
                port["bandwidth_bytes_per_cycle"], f"{where}.ports[{j}].bandwidth_bytes_per_cycle", "bandwidth_bytes_per_cycle"
            ),
            operands=frozenset(port.get("operands", ())),
        )
        for j, port in enumerate(entry.get("ports", ()))
    )
    if ports:
        read = sum(port.bandwidth_bytes_per_cycle for port in ports if port.direction in _READS)
        write = sum(port.bandwidth_bytes_per_cycle for port in ports if port.direction in _WRITES)
    else:
        read, write = (build.number(entry[key], f"{where}.{key}", key) for key in _BANDWIDTHS)
        ports = (
            MemoryPort(name="read", direction="read", bandwidth_bytes_per_cycle=read, operands=frozenset()),
            MemoryPort(name="write", direction="write", bandwidth_bytes_per_cycle=write, operands=frozenset()),
        )
    per_pe = bool(entry.get("per_pe", False))
    if per_pe:
        instances = core_pes if core_pes is not None else np.ones(build.n_configs)
    else:
        instances = build.number(entry.get("instances", 1), f"{where}.instances", "instances", integer=True)
    return MemoryLevel(
        name=name,
        shared=bool(entry.get("shared", False)),
        read_bandwidth_bytes_per_cycle=np.broadcast_to(read, (build.n_configs,)).copy(),
        write_bandwidth_bytes_per_cycle=np.broadcast_to(write, (build.n_configs,)).copy(),
        instances=instances,
        per_pe=per_pe,
        double_buffered=bool(entry.get("double_buffered", False)),
        min_access_bits=build.number(entry.get("min_access_bits", 0), f"{where}.min_access_bits", "min_access_bits"),
        ports=ports,
        operand_energy_pj_per_bit={
            operand: tuple(
                build.number(energies[key], f"{where}.operand_energy_pj_per_bit.{operand}.{key}", key)
                if key in energies
                else numbers[key]
                for key in _ENERGIES
            )
            for operand, energies in entry.get("operand_energy_pj_per_bit", {}).items()
        },
        **numbers,
    )


def _core(
    entry: Mapping[str, Any],
    where: str,
    *,
    axes: tuple[PEAxis, ...],
    memories: Mapping[str, MemoryLevel],
    precision: Mapping[str, float | str],
    build: _Builder,
) -> Core:
    own = entry.get("precision_bits", {})
    return Core(
        name=entry["name"],
        count=build.number(entry["count"], f"{where}.count", "count", integer=True),
        dataflow=entry["dataflow"],
        tile_io=entry.get("tile_io", "overlapped"),
        tiling=entry.get("tiling", "any"),
        runs=tuple(entry["runs"]),
        pe_array=axes,
        mac_energy_pj=build.number(entry["mac_energy_pj"], f"{where}.mac_energy_pj", "mac_energy_pj"),
        levels=tuple(
            _level(lv, f"{where}.memory[{j}]", memories[lv["level"]], axes, build) for j, lv in enumerate(entry["memory"])
        ),
        in_memory=_in_memory(entry["in_memory"], f"{where}.in_memory", axes, build) if "in_memory" in entry else None,
        precision_bits={
            key: build.number(
                own.get(key, precision[key]),
                f"{where}.precision_bits.{key}" if key in own else f"precision_bits.{key}",
                key,
                integer=True,
            )
            for key in PRECISIONS
        },
    )


def _level(entry: Mapping[str, Any], where: str, memory: MemoryLevel, axes: tuple[PEAxis, ...], build: _Builder) -> CoreLevel:
    """A core's memory level; a problem if it names ``served_axes`` and its memory does not have one instance per PE
    of the core's other axes."""
    served = tuple(entry["served_axes"]) if "served_axes" in entry else None
    if served is not None:
        others = [axis for axis in axes if axis.name not in served]
        pes = np.prod([axis.size for axis in others], axis=0) * np.ones(build.n_configs)
        wrong = memory.instances != pes
        if wrong.any():
            first = int(np.flatnonzero(wrong)[0])
            along = " x ".join(f"{axis.name} {axis.size[first]:g}" for axis in others) or "none"
            build.problems.append(
                f"{where}.served_axes: {list(served)} leave {pes[first]:g} PEs along the other axes ({along}), one "
                f"instance each, but memories.{entry['level']}.instances is {memory.instances[first]:g}"
            )
    return CoreLevel(memory=memory, operands=frozenset(entry["operands"]), served_axes=served)


def _in_memory(entry: Mapping[str, Any], where: str, axes: tuple[PEAxis, ...], build: _Builder) -> InMemoryArray:
    """An in-memory-computing array (its names and bits checked by ``_check_in_memory``); a problem if its axes
    unroll more rows or columns than a macro has."""
    array = InMemoryArray(
        kind=entry["kind"],
        wordline_axes=tuple(entry["wordline_axes"]),
        bitline_axes=tuple(entry["bitline_axes"]),
        wordline_size=int(entry["wordline_size"]),
        bitline_size=int(entry["bitline_size"]),
        activation_bits=int(entry["activation_bits"]),
        weight_bits=int(entry["weight_bits"]),
        bit_serial_bits=int(entry["bit_serial_bits"]),
        adc_bits=int(entry.get("adc_bits", 0)),
    )
    size = {axis.name: axis.size for axis in axes}
    for side, names, physical in (
        ("wordline", array.wordline_axes, array.wordline_size),
        ("bitline", array.bitline_axes, array.bitline_size),
    ):
        unrolled = np.prod([size[name] for name in names if name in size], axis=0)
        if np.any(unrolled > physical):
            build.problems.append(f"{where}.{side}_axes: unroll {int(np.max(unrolled))} PEs, more than {side}_size {physical}")
    return array


def _link(entry: Mapping[str, Any], where: str, build: _Builder) -> Link:
    number = {key: build.number(entry[key], f"{where}.{key}", key) for key in _LINK_FIELDS if key in entry}
    read = number.get("read_energy_pj_per_bit", number.get("energy_pj_per_bit"))
    write = number.get("write_energy_pj_per_bit", number.get("energy_pj_per_bit"))
    if read is None or write is None:  # the cross-check has reported it
        read = write = np.zeros(build.n_configs)
    return Link(
        bandwidth_bytes_per_cycle=number["bandwidth_bytes_per_cycle"],
        energy_pj_per_bit=number.get("energy_pj_per_bit", (read + write) / 2),
        read_energy_pj_per_bit=read,
        write_energy_pj_per_bit=write,
    )


class _Builder:
    """Evaluates numeric fields over the configurations and collects range errors."""

    def __init__(self, file: Path, params: Mapping[str, np.ndarray], n_configs: int, *, word_bytes: int) -> None:
        self.file = file
        self.params = params
        self.n_configs = n_configs
        self.problems: list[str] = []
        # bounds beyond the sign: a memory holds at least one word; instances are counted one clock each
        self.bounds = {
            "size_bytes": (word_bytes, np.inf, f">= {word_bytes} (one word of word_bytes)"),
            "count": (1, MAX_COUNT, f"a positive integer of at most {MAX_COUNT:,}"),
            "instances": (1, MAX_COUNT, f"a positive integer of at most {MAX_COUNT:,}"),
            "size": (1, MAX_COUNT, f"a positive integer of at most {MAX_COUNT:,} PEs along the axis"),
        }

    def number(self, value: float | str, where: str, field: str, *, integer: bool = False) -> np.ndarray:
        try:
            result = np.broadcast_to(np.asarray(evaluate(value, self.params), dtype=np.float64), (self.n_configs,)).copy()
        except ExpressionError as err:
            self.problems.append(f"{where}: {err}")
            return np.ones(self.n_configs)
        bad = ~np.isfinite(result)
        bad |= result <= 0 if (field in _POSITIVE or integer) else result < 0
        if integer:
            bad |= result != np.round(result)
        expected = "a positive integer" if integer else ("> 0" if field in _POSITIVE else ">= 0")
        if field in self.bounds:
            low, high, expected = self.bounds[field]
            bad |= (result < low) | (result > high)
        if bad.any():
            first = int(np.flatnonzero(bad)[0])
            at = ", ".join(f"{k}={v[first]:g}" for k, v in self.params.items())
            self.problems.append(f"{where}: {value!r} = {result[first]:g} at ({at}); expected {expected}")
            result[bad] = 1.0  # what is built from it before the problems are raised stays finite
        return result

    def raise_problems(self) -> None:
        if self.problems:
            raise HardwareError(f"{self.file}: " + "; ".join(self.problems))


def _cross_check(data: Mapping[str, Any]) -> list[str]:
    """Checks the schema cannot express: references, duplicates, parameter names."""
    problems: list[str] = []
    parameters = set(data["parameters"])
    memory_names = set(data["memories"])
    used_by: dict[str, list[str]] = {}
    runner: dict[str, str] = {}
    core_names: set[str] = set()

    def check_expr(value: object, where: str) -> None:
        if isinstance(value, str):
            try:
                unknown = names_in(value) - parameters
            except ExpressionError as err:
                problems.append(f"{where}: {err}")
                return
            if unknown:
                problems.append(
                    f"{where}: {value!r} uses unknown parameters {sorted(unknown)} (parameters: {sorted(parameters)})"
                )

    for key, value in data.get("precision_bits", {}).items():
        check_expr(value, f"precision_bits.{key}")
    for name, entry in data["memories"].items():
        problems += _check_memory(name, entry, check_expr)
    for key in ("bus", "offchip"):
        problems += _check_link(data[key], key, check_expr)
    for i, core in enumerate(data["cores"]):
        where = f"cores[{i}]"
        if core["name"] in core_names:
            problems.append(f"{where}.name: {core['name']!r} is used twice")
        core_names.add(core["name"])
        for key in ("count", "mac_energy_pj"):
            check_expr(core[key], f"{where}.{key}")
        for key, value in core.get("precision_bits", {}).items():
            check_expr(value, f"{where}.precision_bits.{key}")
        problems += _check_pe_array(core, where, check_expr)
        for kind in core["runs"]:
            if kind in runner:
                problems.append(f"{where}.runs: {kind!r} is already run by core {runner[kind]!r}; list each kind once")
            runner[kind] = core["name"]
        problems += _check_levels(core, where, memory_names, used_by)
        if "in_memory" in core:
            problems += _check_in_memory(core, f"{where}.in_memory")
    for name in sorted(memory_names - set(used_by)):
        problems.append(f"memories.{name}: no core lists it")
    problems += _check_core_links(data.get("links", []), core_names, check_expr)
    return problems


def _check_core_links(
    links: list[Mapping[str, Any]], core_names: set[str], check_expr: Callable[[object, str], None]
) -> list[str]:
    """Each point-to-point link between two cores that exist, each pair linked once."""
    problems, pairs = [], set()
    for i, link in enumerate(links):
        where = f"links[{i}]"
        unknown = [name for name in link["between"] if name not in core_names]
        if unknown:
            problems.append(f"{where}.between: {unknown[0]!r} is not a core (cores: {', '.join(sorted(core_names))})")
        if frozenset(link["between"]) in pairs:
            problems.append(f"{where}.between: {link['between']} are linked already; give each pair one link")
        pairs.add(frozenset(link["between"]))
        for key in ("bandwidth_bytes_per_cycle", "energy_pj_per_bit"):
            if key in link:
                check_expr(link[key], f"{where}.{key}")
    return problems


def _check_link(entry: Mapping[str, Any], where: str, check_expr: Callable[[object, str], None]) -> list[str]:
    for field in _LINK_FIELDS:
        if field in entry:
            check_expr(entry[field], f"{where}.{field}")
    if "energy_pj_per_bit" not in entry and not {"read_energy_pj_per_bit", "write_energy_pj_per_bit"} <= set(entry):
        return [f"{where}: give energy_pj_per_bit, or read_energy_pj_per_bit and write_energy_pj_per_bit"]
    return []


def _check_memory(name: str, entry: Mapping[str, Any], check_expr: Callable[[object, str], None]) -> list[str]:
    """A memory's bandwidths (two keys or ports, not both) and its instance count (instances or per_pe)."""
    where = f"memories.{name}"
    problems = []
    for key in _MEMORY_EXPRESSIONS:
        if key in entry:
            check_expr(entry[key], f"{where}.{key}")
    for j, port in enumerate(entry.get("ports", ())):
        check_expr(port["bandwidth_bytes_per_cycle"], f"{where}.ports[{j}].bandwidth_bytes_per_cycle")
    for operand, energies in entry.get("operand_energy_pj_per_bit", {}).items():
        for key, value in energies.items():
            check_expr(value, f"{where}.operand_energy_pj_per_bit.{operand}.{key}")
    given = [key for key in _BANDWIDTHS if key in entry]
    if "ports" in entry and given:
        problems.append(f"{where}: give ports or {' and '.join(_BANDWIDTHS)}, not both (found {given[0]})")
    elif "ports" not in entry and len(given) < len(_BANDWIDTHS):
        missing = [key for key in _BANDWIDTHS if key not in entry]
        problems.append(f"{where}: {missing[0]} is missing (give {' and '.join(_BANDWIDTHS)}, or ports)")
    if "ports" in entry:
        directions = {port["direction"] for port in entry["ports"]}
        for needed, label in ((_READS, "read"), (_WRITES, "write")):
            if not directions & needed:
                problems.append(f"{where}.ports: no port can {label}; expected a {label} or read_write port")
    if entry.get("per_pe", False) and "instances" in entry:
        problems.append(f"{where}: give instances or per_pe: true, not both")
    return problems


def _check_pe_array(core: Mapping[str, Any], where: str, check_expr: Callable[[object, str], None]) -> list[str]:
    """Each axis's size an expression over known parameters; its alternatives other loops than its dim."""
    problems = []
    for j, axis in enumerate(core["pe_array"]):
        check_expr(axis["size"], f"{where}.pe_array[{j}].size")
        if axis["dim"] in axis.get("alternatives", ()):
            problems.append(f"{where}.pe_array[{j}].alternatives: {axis['dim']!r} is the axis's dim already")
    return problems


def _check_in_memory(core: Mapping[str, Any], where: str) -> list[str]:
    """An in-memory array's axes name the core's PE axes, each on one side; its bits fit the adders it builds."""
    entry = core["in_memory"]
    dims = {_axis_name(axis, j): [axis["dim"], *axis.get("alternatives", ())] for j, axis in enumerate(core["pe_array"])}
    names = list(dims)
    problems = [
        f"{where}.{side}: {name!r} is not an axis of the pe_array ({names})"
        for side in ("wordline_axes", "bitline_axes")
        for name in entry[side]
        if name not in names
    ]
    problems += [
        f"{where}: axis {name!r} is on both the wordlines and the bitlines"
        for name in sorted(set(entry["wordline_axes"]) & set(entry["bitline_axes"]))
    ]
    problems += [
        f"{where}.wordline_axes: {name!r} unrolls {dim}, which weights do not depend on (a diagonal mapping "
        "of the inputs, not modelled)"
        for name in entry["wordline_axes"]
        for dim in dims.get(name, ())
        if dim in ("B", "OY", "OX")
    ]
    if not any("W" in level.get("operands", ()) for level in core.get("memory", ())):
        problems.append(f"{where}: the array computes in its weight memory, and no memory level of the core keeps W")
    if entry["activation_bits"] % entry["bit_serial_bits"]:
        problems.append(
            f"{where}.bit_serial_bits: {entry['bit_serial_bits']} does not divide activation_bits {entry['activation_bits']}"
        )
    # the adder trees: the digital array's over a bitline, the place-value tree over the bits that enter together
    powers = {"bitline_size": "digital", "bit_serial_bits": "digital", "weight_bits": "analog"}
    for key, kind in powers.items():
        if entry["kind"] == kind and entry[key] & (entry[key] - 1):
            problems.append(f"{where}.{key}: {entry[key]}; expected a power of 2 on a {kind} array (its adder tree)")
    return problems


def _check_levels(core: Mapping[str, Any], where: str, memory_names: set[str], used_by: dict[str, list[str]]) -> list[str]:
    problems = []
    seen: set[str] = set()
    axes = [_axis_name(axis, j) for j, axis in enumerate(core["pe_array"])]
    for j, level in enumerate(core["memory"]):
        unknown = [name for name in level.get("served_axes", ()) if name not in axes]
        if unknown:
            problems.append(f"{where}.memory[{j}].served_axes: {unknown[0]!r} is not a pe_array axis of the core ({axes})")
        if level["level"] not in memory_names:
            problems.append(f"{where}.memory[{j}].level: {level['level']!r} is not a key of memories ({sorted(memory_names)})")
        elif level["level"] in seen:
            problems.append(f"{where}.memory[{j}].level: {level['level']!r} is listed twice")
        seen.add(level["level"])
        used_by.setdefault(level["level"], []).append(core["name"])
    return problems


def _path(parts: Sequence[str | int]) -> str:
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(top level)"
