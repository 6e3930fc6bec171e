"""Load a hardware YAML: schema → cross-checks → evaluate over a sweep → ``HardwareSpec``.

Validation collects every problem with its key path (``cores[0].pe_array[1].dim: ...``) and raises
one ``HardwareError``; nothing after loading sees a raw dict.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
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
from traincost.hardware.spec import Core, CoreLevel, HardwareSpec, Link, MemoryLevel, PEAxis
from traincost.hardware.sweep import MAX_CONFIGS, expand_grid

__all__ = ["load_hardware", "read_hardware_yaml", "HardwareError"]

_MEMORY_FIELDS = (
    "size_bytes",
    "read_bandwidth_bytes_per_cycle",
    "write_bandwidth_bytes_per_cycle",
    "read_energy_pj_per_bit",
    "write_energy_pj_per_bit",
)
_LINK_FIELDS = ("bandwidth_bytes_per_cycle", "energy_pj_per_bit")
# fields that must be > 0; every other numeric field must be >= 0
_POSITIVE = {"size_bytes", "read_bandwidth_bytes_per_cycle", "write_bandwidth_bytes_per_cycle", "bandwidth_bytes_per_cycle"}


class HardwareError(TraincostError):
    """A hardware description that does not match the schema or is inconsistent."""


@cache
def _schema() -> dict[str, Any]:
    text = resources.files("traincost.hardware").joinpath("hardware.schema.yaml").read_text()
    return yaml.safe_load(text)


def read_hardware_yaml(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read and validate a hardware YAML (schema and cross-checks), without evaluating it."""
    file = Path(path)
    data = read_yaml(file, error=HardwareError)
    validator = jsonschema.Draft202012Validator(_schema())
    problems = [f"{_path(error.absolute_path)}: {shorten(error.message)}" for error in validator.iter_errors(data)]
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
    build = _Builder(file, params, len(configs))
    memories = {
        name: MemoryLevel(
            name=name,
            shared=bool(entry.get("shared", False)),
            **{key: build.number(entry[key], f"memories.{name}.{key}", key) for key in _MEMORY_FIELDS},
        )
        for name, entry in data["memories"].items()
    }
    cores = tuple(_core(entry, f"cores[{i}]", memories, build) for i, entry in enumerate(data["cores"]))
    links = {
        key: Link(**{field: build.number(data[key][field], f"{key}.{field}", field) for field in _LINK_FIELDS})
        for key in ("bus", "offchip")
    }
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
    )


def _core(entry: Mapping[str, Any], where: str, memories: Mapping[str, MemoryLevel], build: _Builder) -> Core:
    count = build.number(entry["count"], f"{where}.count", "count", integer=True)
    axes = tuple(
        PEAxis(
            name=axis.get("name", f"{axis['dim']}{j}"),
            dim=axis["dim"],
            size=build.number(axis["size"], f"{where}.pe_array[{j}].size", "size", integer=True),
        )
        for j, axis in enumerate(entry["pe_array"])
    )
    return Core(
        name=entry["name"],
        count=count,
        dataflow=entry["dataflow"],
        runs=tuple(entry["runs"]),
        pe_array=axes,
        mac_energy_pj=build.number(entry["mac_energy_pj"], f"{where}.mac_energy_pj", "mac_energy_pj"),
        levels=tuple(CoreLevel(memory=memories[lv["level"]], operands=frozenset(lv["operands"])) for lv in entry["memory"]),
    )


class _Builder:
    """Evaluates numeric fields over the configurations and collects range errors."""

    def __init__(self, file: Path, params: Mapping[str, np.ndarray], n_configs: int) -> None:
        self.file = file
        self.params = params
        self.n_configs = n_configs
        self.problems: list[str] = []

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
        if bad.any():
            first = int(np.flatnonzero(bad)[0])
            at = ", ".join(f"{k}={v[first]:g}" for k, v in self.params.items())
            expected = "a positive integer" if integer else ("> 0" if field in _POSITIVE else ">= 0")
            self.problems.append(f"{where}: {value!r} = {result[first]:g} at ({at}); expected {expected}")
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

    for name, entry in data["memories"].items():
        for key in _MEMORY_FIELDS:
            check_expr(entry[key], f"memories.{name}.{key}")
    for key in ("bus", "offchip"):
        for field in _LINK_FIELDS:
            check_expr(data[key][field], f"{key}.{field}")
    for i, core in enumerate(data["cores"]):
        where = f"cores[{i}]"
        if core["name"] in core_names:
            problems.append(f"{where}.name: {core['name']!r} is used twice")
        core_names.add(core["name"])
        for key in ("count", "mac_energy_pj"):
            check_expr(core[key], f"{where}.{key}")
        for j, axis in enumerate(core["pe_array"]):
            check_expr(axis["size"], f"{where}.pe_array[{j}].size")
        for kind in core["runs"]:
            if kind in runner:
                problems.append(f"{where}.runs: {kind!r} is already run by core {runner[kind]!r}; list each kind once")
            runner[kind] = core["name"]
        problems += _check_levels(core, where, memory_names, used_by)
    for name in sorted(memory_names - set(used_by)):
        problems.append(f"memories.{name}: no core lists it")
    return problems


def _check_levels(core: Mapping[str, Any], where: str, memory_names: set[str], used_by: dict[str, list[str]]) -> list[str]:
    problems = []
    seen: set[str] = set()
    for j, level in enumerate(core["memory"]):
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
