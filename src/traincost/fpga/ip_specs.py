"""The constants of MTrain's two training IPs, each with its source, read from ``data/fpga/training_ips.yaml``.

Every entry is ``{value: ..., source: ...}``; the loader keeps the values (the sources stay in the file,
beside them). EF-Train's are those of its own code (its HLS accelerator and its analytical model); DarkFPGA's
are ours where its paper, of which we could read only the abstract, is silent (the file says which).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from traincost.config_files import read_yaml
from traincost.errors import ConfigError

__all__ = [
    "IP_NAMES",
    "SIZED_FOR",
    "IpName",
    "SizedFor",
    "EfTrainModel",
    "DarkFpgaModel",
    "PublishedDesign",
    "IpSpec",
    "load_ip_specs",
]

IpName = Literal["EF-Train", "DarkFPGA"]
SizedFor = Literal["share", "batch"]
SIZED_FOR: tuple[SizedFor, ...] = ("share", "batch")
IP_NAMES: tuple[IpName, ...] = ("EF-Train", "DarkFPGA")


@dataclass(frozen=True, slots=True)
class PublishedDesign:
    """The design an IP's own paper measured: its array on its board, and the workload of its throughput."""

    board: str
    tm: int
    tn: int
    workload: str
    batch: int
    ops: str  # "conv": the convolutions only (EF-Train's model sums "all Convs")


@dataclass(frozen=True, slots=True)
class EfTrainModel:
    """EF-Train's analytical model (its ``finetune2.py``) and its on-chip buffers (its HLS ``source.h``)."""

    dma_words_per_cycle: int
    dma_start_cycles: int
    row_tile_pixels: int
    input_tile_pixels: int
    weight_tiles: int
    kernel_bound: int
    weight_bank_words: int
    bram36_words: int
    fixed_bram36: int
    published_design: PublishedDesign


@dataclass(frozen=True, slots=True)
class DarkFpgaModel:
    """Our reconstruction's on-chip tiles (DarkFPGA's own sizes are not in what we could read)."""

    tile_pixels: int
    kernel_taps: int
    max_batch_lanes: int | None  # None: up to the batch
    sized_for: SizedFor  # "share": its design is searched at the samples its FPGA is given; "batch": at the whole batch


@dataclass(frozen=True, slots=True)
class IpSpec:
    """One training IP: how its array is built and clocked, what it fuses, and its model's constants."""

    name: IpName
    mac_dsp: int  # DSP slices per FP32 multiply-accumulate lane
    dsp_share: float  # of a device's DSPs, the share its MAC array may take
    clock_mhz: float | None  # None: the device's clock
    fuses_activation: bool  # ReLU (forward and backward) rides on the neighbouring pass
    fuses_update: bool  # the optimizer's update rides on the WU pass that stores the gradient
    free_layout: bool  # the graph's layout ops (transposes, slices) move no data
    model: EfTrainModel | DarkFpgaModel
    dram_efficiency: float = 1.0  # share of the board's DRAM bandwidth its transfers reach (an ablation)


_COMMON = ("array", "mac_dsp", "dsp_share", "clock_mhz", "fuses_activation", "fuses_update", "free_layout")
_MODEL_KEYS = {
    "channels": (EfTrainModel, tuple(f for f in EfTrainModel.__dataclass_fields__)),
    "batch": (DarkFpgaModel, tuple(f for f in DarkFpgaModel.__dataclass_fields__)),
}
_DESIGN_KEYS = tuple(PublishedDesign.__dataclass_fields__)


def load_ip_specs(path: str | os.PathLike[str]) -> dict[IpName, IpSpec]:
    """Both IPs' constants from ``path``.

    Raises:
        ConfigError: an IP missing or unknown, an entry without ``value`` and ``source``, a key missing, or a value
            of the wrong type or out of range (every problem listed with its key path).
    """
    file = Path(path)
    data = read_yaml(file) or {}
    problems = [f"{name}: unknown IP (expected {', '.join(IP_NAMES)})" for name in data if name not in IP_NAMES]
    problems += [f"{name}: missing" for name in IP_NAMES if name not in data]
    specs = {}
    for name in IP_NAMES:
        entries = data.get(name)
        if not isinstance(entries, dict):
            continue
        values, found = _values(name, entries)
        problems += found
        array = values.get("array")
        if array not in _MODEL_KEYS:
            problems.append(f"{name}.array: {array!r}, expected one of {', '.join(_MODEL_KEYS)}")
            continue
        cls, keys = _MODEL_KEYS[array]
        missing = [k for k in (*_COMMON, *keys) if k not in values]
        problems += [f"{name}.{k}: missing" for k in missing]
        if missing:
            continue
        wrong = _checked(name, values, keys)
        problems += wrong
        if not wrong:
            model = {k: values[k] for k in keys}
            if "published_design" in model:
                model["published_design"] = PublishedDesign(**model["published_design"])
            specs[name] = IpSpec(
                name=name,
                mac_dsp=int(values["mac_dsp"]),
                dsp_share=float(values["dsp_share"]),
                clock_mhz=None if values["clock_mhz"] is None else float(values["clock_mhz"]),
                fuses_activation=bool(values["fuses_activation"]),
                fuses_update=bool(values["fuses_update"]),
                free_layout=bool(values["free_layout"]),
                model=cls(**model),
            )
    if problems:
        raise ConfigError(f"{file}: " + "; ".join(problems))
    return specs


def _values(name: str, entries: dict) -> tuple[dict, list[str]]:
    values, problems = {}, []
    for key, entry in entries.items():
        if not isinstance(entry, dict) or "value" not in entry or not str(entry.get("source") or "").strip():
            problems.append(f"{name}.{key}: expected {{value: ..., source: ...}} with a non-empty source")
        else:
            values[key] = entry["value"]
    return values, problems


def _checked(name: str, values: dict, model_keys: tuple[str, ...]) -> list[str]:
    """Problems with the types and ranges of one IP's values."""
    problems = []
    whole = [
        k
        for k in ("mac_dsp", *model_keys)
        if k not in ("published_design", "sized_for") and not (k == "max_batch_lanes" and values[k] is None)
    ]
    for key in whole:
        value = values[key]
        if isinstance(value, bool) or not isinstance(value, int) or value < (0 if key == "fixed_bram36" else 1):
            problems.append(f"{name}.{key}: {value!r}, expected a whole number >= {0 if key == 'fixed_bram36' else 1}")
    share = values["dsp_share"]
    if isinstance(share, bool) or not isinstance(share, int | float) or not 0 < share <= 1:
        problems.append(f"{name}.dsp_share: {share!r}, expected a share in (0, 1]")
    clock = values["clock_mhz"]
    if clock is not None and (isinstance(clock, bool) or not isinstance(clock, int | float) or clock <= 0):
        problems.append(f"{name}.clock_mhz: {clock!r}, expected a frequency > 0 or null (the device's)")
    problems += [
        f"{name}.{k}: {values[k]!r}, expected true or false"
        for k in ("fuses_activation", "fuses_update", "free_layout")
        if not isinstance(values[k], bool)
    ]
    if "sized_for" in model_keys and values["sized_for"] not in SIZED_FOR:
        problems.append(f"{name}.sized_for: {values['sized_for']!r}, expected one of {', '.join(SIZED_FOR)}")
    if "published_design" in model_keys:
        design = values["published_design"]
        if not isinstance(design, dict) or sorted(design) != sorted(_DESIGN_KEYS):
            problems.append(f"{name}.published_design: expected the keys {', '.join(_DESIGN_KEYS)}")
        elif not all(isinstance(design[k], int) and design[k] >= 1 for k in ("tm", "tn", "batch")):
            problems.append(f"{name}.published_design: tm, tn and batch must be whole numbers >= 1")
    return problems
