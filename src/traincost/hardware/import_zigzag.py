"""Translate a ZigZag (zigzag-dse 3.x) hardware description into a traincost hardware description.

ZigZag describes one core: an operational array (dimensions D1..Dn with their sizes and the energy
of one MAC), and memories listed innermost first, each with its size in bits, its energy per access
(``r_cost``/``w_cost``, pJ), its ports (``bandwidth_max`` bits per cycle, ``bandwidth_min`` the
narrowest access), the memory operands it keeps (I1, I2, O) and ``served_dimensions``, the array
dimensions one instance is shared across. Which loop dimension each array dimension unrolls lives in
a separate mapping file (``spatial_mapping`` of its ``default`` entry), as does which memory operand
holds which layer operand (``memory_operand_links``: W → I2, I → I1 unless it says otherwise).

The translation, field by field:

- an array dimension becomes a ``pe_array`` axis per loop dimension the mapping unrolls on it, of the
  mapping's factor cut to the dimension, as ZigZag reads a mapping file (``unroll`` without ``:N`` takes the
  whole dimension; a dimension the ``spatial_mapping`` leaves out takes all of it too, one loop of its hint's,
  or with no hint of every loop, the first the axis's ``dim``, the others its ``alternatives``, and
  ``divisors: [2]``, one way picked per op as ZigZag picks among its candidates per layer, ``_filled``), and
  cut again, as ZigZag does, to what the innermost memory of each operand can pass along the dimensions it
  serves: a loop the operand depends on unrolls at most that memory's port width over the operand's precision
  (``gemm_l1_l3``'s 32-bit output register, one per K column, leaves K 2 of the mapping's 8 for 16-bit partial
  sums; a filled dimension keeps only the loops that pass whole, ``_uncut``);
- ``size`` bits → ``size_bytes`` = size / 8; each port → a port of ``bandwidth_max / 8`` bytes per
  cycle serving the operands of its ``allocation``; ``r_cost`` → ``read_energy_pj_per_bit`` =
  r_cost / the widest read port's bits (``w_cost`` likewise), and an operand whose widest port reading
  (writing) it is narrower gets r_cost (w_cost) over that port's bits in ``operand_energy_pj_per_bit``, as
  ZigZag charges an access per port width (``gemm_l1_l3``'s inputs and weights pay 118 pJ per 512 bits, its
  outputs per 2,048); the narrowest ``bandwidth_min`` → ``min_access_bits``; ``force_double_buffering`` →
  ``double_buffered``;
- ``served_dimensions`` → ``instances`` = the product of the dimensions not served (``per_pe`` when
  it serves none), and, where it serves some but not all, the core level's ``served_axes``: the axes on
  the dimensions it serves;
- the off-chip memory (named ``dram``, or ``offchip``) → the ``offchip`` link, with its read and write
  energies per bit; the bus of a single core is not in ZigZag's file and costs nothing;
- ZigZag times a layer as on-loading (the first tile of each input from off chip), then compute, then
  off-loading (the last output tile): ``tile_io: serial`` on the core;
- precisions: ZigZag's ONNX reader stores inputs, weights and final outputs in 8 bits and partial
  sums in twice the input bits, unless the array's ``input_precision`` says [inputs, weights];
- an in-memory-computing array (``is_imc``) → the core's ``in_memory``: ``imc_type``, ``input_precision``,
  ``bit_serial_precision`` and ``adc_resolution`` as they are, the first array dimension (sorted by name, as
  ZigZag sorts them) along the wordlines and the second along the bitlines; its ``cells`` memory becomes the
  per-PE weight memory like any other, and ``mac_energy_pj`` (what the core's other ops pay) the model's energy
  per MAC with the whole macro filled. ``mac_energy_pj`` given instead replaces the model by that flat energy.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from traincost.config_files import read_yaml
from traincost.hardware.in_memory import activation_pj
from traincost.hardware.load import HardwareError, schema_problems
from traincost.hardware.spec import InMemoryArray

__all__ = [
    "LOOP_DIMS",
    "MAC_KINDS",
    "ALL_KINDS",
    "hardware_yaml_text",
    "read_foreign_yaml",
    "zigzag_hardware",
    "zigzag_core",
    "zigzag_memory",
    "parse_unroll",
    "bundled_mapping",
]

LOOP_DIMS = ("B", "K", "C", "OY", "OX", "FY", "FX", "G")
MAC_KINDS = ("conv", "conv_dgrad", "conv_wgrad", "gemm", "matmul")
ALL_KINDS = (*MAC_KINDS, "eltwise", "reduce", "pool", "norm", "softmax", "optimizer", "layout")
_DEFAULT_LINKS = {"I1": "I", "I2": "W", "O": "O"}
ZIGZAG_CORE_SCHEMA = "zigzag_core.schema.yaml"
_OFFCHIP_NAME = re.compile(r"dram|offchip|off_chip|hbm", re.IGNORECASE)


def read_foreign_yaml(path: str | os.PathLike[str], *, schema: str | None = None, root: type = dict) -> Any:
    """A ZigZag or Stream YAML file read as those tools read it (a repeated key keeps its last value), otherwise
    as strictly and as bounded as every traincost file (``traincost.config_files.read_yaml``: no aliases, a
    regular file of at most 1 MiB, finite numbers); its data, where it is a ``root`` (a mapping, or a list), checked
    against ``schema`` (a schema file of ``traincost.hardware``: the types the tool's own validator gives the keys we
    read); other data is left to the caller, which says what it expected.

    Raises:
        HardwareError: unreadable, or the first key that breaks the schema, naming the file and key.
    """
    data = read_yaml(path, error=HardwareError, last_key_wins=True)
    if schema is not None and isinstance(data, root):
        problems = schema_problems(data, schema)
        if problems:
            raise HardwareError(f"{path}: {problems[0]}" + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""))
    return data


class _PlainDumper(yaml.SafeDumper):
    """Writes every value out (no anchors and aliases, which traincost's strict reader refuses)."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def hardware_yaml_text(data: Mapping[str, Any], *, header: str) -> str:
    """Our hardware description as YAML text, after a ``#`` comment ``header`` (one line or more)."""
    comment = "".join(f"# {line}\n" for line in header.splitlines())
    return comment + yaml.dump(dict(data), Dumper=_PlainDumper, sort_keys=False, width=120)


def parse_unroll(text: str) -> dict[str, list[tuple[str, int | None]]]:
    """``D1=K,D2=C,D3=OX:4`` → which loop dimension each array dimension unrolls (``:N`` = over N PEs)."""
    unroll: dict[str, list[tuple[str, int | None]]] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        match = re.fullmatch(r"(D\d+)=([A-Z]+)(?::(\d+))?", item)
        if match is None or match.group(2) not in LOOP_DIMS:
            raise HardwareError(f"--unroll {item!r}: expected Dn=DIM or Dn=DIM:PES with DIM one of {', '.join(LOOP_DIMS)}")
        factor = int(match.group(3)) if match.group(3) else None
        unroll.setdefault(match.group(1), []).append((match.group(2), factor))
    return unroll


def zigzag_hardware(
    path: str | os.PathLike[str],
    *,
    mapping: str | os.PathLike[str] | None = None,
    unroll: Mapping[str, Sequence[tuple[str, int | None]]] | None = None,
    offchip: str | None = None,
    mac_energy_pj: float | None = None,
) -> dict[str, Any]:
    """Our hardware description (YAML data) of a ZigZag accelerator file.

    Args:
        path: the ZigZag hardware YAML.
        mapping: ZigZag mapping YAML with the spatial unrolling; default the file of the same name
            (or with ``_like``) in the ``mapping`` folder beside the hardware folder, as ZigZag bundles them.
        unroll: the loop dimension(s) each array dimension unrolls, instead of a mapping file.
        offchip: the memory that is off-chip DRAM; default the one named like dram.
        mac_energy_pj: pJ per MAC, flat, instead of the in-memory-computing model of an IMC array (``in_memory``).

    Raises:
        HardwareError: a file is unreadable or lacks what the translation needs (the message names
            the file and key).
    """
    file = Path(path)
    data = _as_accelerator(read_foreign_yaml(file, schema=ZIGZAG_CORE_SCHEMA), file)
    links = _DEFAULT_LINKS
    if unroll is None and "dataflows" in data and mapping is None:
        unroll = _unroll_entries(data["dataflows"], f"{file}: dataflows")
    if unroll is None:
        imc = bool(data["operational_array"].get("is_imc", False))
        mapping_file = Path(mapping) if mapping is not None else bundled_mapping(file, imc=imc)
        if mapping_file is None:
            raise HardwareError(
                f"{file}: no spatial mapping (no dataflows key, no mapping folder beside it); pass --mapping or --unroll"
            )
        given, links, hints = _mapping_default(mapping_file)
        unroll, alternatives = _filled(given, hints, _array_dimensions(data["operational_array"], file))
        reduce = True  # a mapping file's factors are read as ZigZag reads them: reduced to the array
    else:
        reduce, alternatives = False, {}  # --unroll or the file's dataflows: a factor beyond the array is an error
    core, memories, dram = zigzag_core(
        data,
        file,
        name=str(data["name"]),
        unroll=unroll,
        links=links,
        offchip=offchip,
        mac_energy_pj=mac_energy_pj,
        reduce=reduce,
        alternatives=alternatives,
    )
    core["runs"] = list(ALL_KINDS)
    core["tile_io"] = "serial"  # ZigZag's on- and off-loading cycles, around each layer's compute
    precision = core.pop("precision_bits")
    if dram is None:
        top = memories[core["memory"][-1]["level"]]
        dram = {
            "bandwidth_bytes_per_cycle": max(port["bandwidth_bytes_per_cycle"] for port in top["ports"]),
            "energy_pj_per_bit": 0,
            "source": f"not in {file.name}: ZigZag starts and ends every layer in {core['memory'][-1]['level']}; "
            "traincost needs an off-chip link, free here",
        }
    return {
        "name": str(data["name"]),
        "description": f"imported from ZigZag {file.name} by traincost hardware import zigzag; "
        + _pes_used(core, data["operational_array"]),
        "word_bytes": max(1, math.ceil(precision["inputs"] / 8)),
        "precision_bits": precision,
        "parameters": {},
        "memories": memories,
        "cores": [core],
        "bus": {
            "bandwidth_bytes_per_cycle": dram["bandwidth_bytes_per_cycle"],
            "energy_pj_per_bit": 0,
            "source": f"not in {file.name}: one core has no bus; as wide as the off-chip link, free",
        },
        "offchip": dram,
    }


def zigzag_core(
    data: Mapping[str, Any],
    file: Path,
    *,
    name: str,
    unroll: Mapping[str, Sequence[tuple[str, int | None]]],
    links: Mapping[str, str],
    offchip: str | None,
    mac_energy_pj: float | None,
    prefix: str = "",
    precision: Mapping[str, int] | None = None,
    reduce: bool = False,
    alternatives: Mapping[str, Sequence[str]] | None = None,
) -> tuple[dict[str, Any], dict[str, dict[str, Any]], dict[str, Any] | None]:
    """One ZigZag core as (our core entry without ``runs``, its memories by name, its off-chip link or None).

    Memory names get ``prefix``; ``precision`` overrides the array's (Stream's ``operand_precision``); ``reduce``
    reads the unrolling as ZigZag reads a mapping file's (``SpatialMapping.check_and_reduce``): each factor cut
    to its array dimension, then loops dropped from the first while a dimension's product still exceeds it.
    ``alternatives``: per array dimension ``_filled`` from a hint, its other loops (``_hinted``); of a filled
    dimension's loops only those the innermost memories' ports let unroll over the whole dimension are kept
    (``_uncut``), as ZigZag limits its candidates (``get_max_unrolling``).
    """
    array = _required(data, "operational_array", file)
    dims = _array_dimensions(array, file)
    sizes = [int(s) for s in _required(array, "sizes", file, "operational_array")]
    if len(dims) != len(sizes):
        raise HardwareError(f"{file}: operational_array: {len(dims)} dimensions but {len(sizes)} sizes")
    dim_size = dict(zip(dims, sizes, strict=True))
    bits = dict(precision) if precision is not None else _array_precision(array, file)
    memories_data = _required(data, "memories", file)
    dram_name = offchip if offchip is not None else _dram_name(memories_data)
    on_chip = {name: entry for name, entry in memories_data.items() if name != dram_name}
    unroll, alternatives = _uncut(unroll, alternatives or {}, dim_size=dim_size, memories=on_chip, links=links, bits=bits)
    axes = _pe_axes(dim_size, unroll, file, reduce=reduce)
    if reduce:
        axes = _within_port_widths(axes, on_chip, links, bits, file)
    energy = array.get("unit_energy", mac_energy_pj) if mac_energy_pj is None else mac_energy_pj
    in_memory = None
    if energy is None and array.get("is_imc", False):
        in_memory = _in_memory(array, memories_data, dim_size, axes, file)
        energy = _peak_mac_pj(in_memory)
    if energy is None:
        raise HardwareError(f"{file}: operational_array.unit_energy: missing; pass --mac-energy-pj")
    if offchip is not None and offchip not in memories_data:
        raise HardwareError(f"{file}: memories: no memory {offchip!r} (--offchip); memories: {sorted(memories_data)}")
    memories: dict[str, dict[str, Any]] = {}
    levels = []
    dram = None
    used = {dim: math.prod(axis["size"] for axis in axes if _array_dimension(axis) == dim) for dim in dim_size}
    for mem_name, entry in memories_data.items():
        where = f"memories.{mem_name}"
        translated = zigzag_memory(entry, file, where, links, dim_size=dim_size, used=used)
        if mem_name == dram_name:
            dram = _offchip_link(translated, f"{file.name} {where}")
            continue
        operands = translated.pop("operands")
        memories[prefix + mem_name] = translated
        levels.append({"level": prefix + mem_name, "operands": operands})
    if not levels:
        raise HardwareError(f"{file}: memories: no on-chip memory besides {dram_name!r}")
    pes = math.prod(axis["size"] for axis in axes)
    for level in levels:
        memory = memories[level["level"]]
        served = memory.pop("served_dimensions")
        if not served and memory["instances"] == pes:
            memory.pop("instances")
            memory["per_pe"] = True
        elif served and memory["instances"] > 1:
            level["served_axes"] = [axis["name"] for axis in axes if _array_dimension(axis) in served]
    core = {
        "name": name,
        "count": 1,
        "dataflow": _dataflow(levels, memories),
        "pe_array": axes,
        "mac_energy_pj": float(energy),
        "mac_energy_source": _mac_energy_source(file, mac_energy_pj, in_memory),
        **({"in_memory": in_memory} if in_memory is not None else {}),
        "memory": levels,
        "precision_bits": bits,
    }
    _hinted(core, alternatives)
    return core, memories, dram


def _uncut(
    unroll: Mapping[str, Sequence[tuple[str, int | None]]],
    alternatives: Mapping[str, Sequence[str]],
    *,
    dim_size: Mapping[str, int],
    memories: Mapping[str, Any],
    links: Mapping[str, str],
    bits: Mapping[str, int],
) -> tuple[dict[str, list[tuple[str, int | None]]], dict[str, list[str]]]:
    """The unrolling and ``alternatives`` with each filled dimension's loops (its first and its alternatives) cut to
    those the innermost memories' ports pass over the whole dimension (``_port_limits``; all of them if none does):
    ``tesla_npu_like_mixed.yaml`` leaves D3 unhinted, and of the loops ZigZag tries there its one-weight register
    per PE along D3 passes only those the weights do not depend on (B, OY, OX)."""
    unroll = {dim: list(loops) for dim, loops in unroll.items()}
    kept_alternatives = {}
    for dim, others in alternatives.items():
        loops = [unroll[dim][0][0], *others]
        probe = [{"name": f"{dim}_{loop}", "dim": loop, "size": dim_size[dim]} for loop in loops]
        limit = _port_limits(probe, memories, links, bits)
        kept = [axis["dim"] for axis in probe if limit.get(axis["name"], axis["size"]) == axis["size"]] or loops
        unroll[dim] = [(kept[0], None)]
        kept_alternatives[dim] = kept[1:]
    return unroll, kept_alternatives


def _hinted(core: dict[str, Any], alternatives: Mapping[str, Sequence[str]]) -> None:
    """Give the axis of each array dimension filled from a hint (the keys of ``alternatives``, ``_filled``) the
    divisor 2: ZigZag weighs a hint's loops at every factor and keeps its three candidates of highest utilisation, on
    two hinted dimensions each filled and each halved; and where the hint lists several loops, those loops as
    ``alternatives`` (ZigZag picks one per layer), the axis named for the array dimension alone (in ``in_memory`` and
    ``served_axes`` too)."""
    renamed = {}
    for axis in core["pe_array"]:
        dim = _array_dimension(axis)
        if dim in alternatives and axis["size"] > 1:
            axis["divisors"] = [2]
        if alternatives.get(dim):
            axis["alternatives"] = list(alternatives[dim])
            renamed[axis["name"]] = dim
            axis["name"] = dim
    if "in_memory" in core:
        for side in ("wordline_axes", "bitline_axes"):
            core["in_memory"][side] = [renamed.get(name, name) for name in core["in_memory"][side]]
    for level in core["memory"]:
        if "served_axes" in level:
            level["served_axes"] = [renamed.get(name, name) for name in level["served_axes"]]


def _array_dimension(axis: Mapping[str, Any]) -> str:
    """The ZigZag array dimension an imported axis lies on, from its name (``D2_C``, or ``D2`` for a hinted one)."""
    return str(axis["name"]).split("_", 1)[0]


def _mac_energy_source(file: Path, given: float | None, in_memory: Mapping[str, Any] | None) -> str:
    if given is not None:
        return "--mac-energy-pj"
    if in_memory is not None:
        return f"{file.name}: ZigZag's in-memory-computing model, the whole macro filled (the MAC ops use in_memory)"
    return f"{file.name} operational_array.unit_energy"


def _in_memory(
    array: Mapping[str, Any],
    memories: Mapping[str, Any],
    dim_size: Mapping[str, int],
    axes: Sequence[Mapping[str, Any]],
    file: Path,
) -> dict[str, Any]:
    """The ``in_memory`` entry of an in-memory-computing array, as ZigZag's ``ImcArray`` reads it."""
    where = "operational_array"
    kind = array.get("imc_type")
    if kind not in ("analog", "digital"):
        raise HardwareError(f"{file}: {where}.imc_type: {kind!r}; expected analog or digital")
    if len(dim_size) < 2:
        raise HardwareError(f"{file}: {where}.dimensions: an in-memory array needs two (wordlines, bitlines)")
    cells = memories.get("cells")
    if not isinstance(cells, Mapping):
        raise HardwareError(f"{file}: memories.cells: missing (an in-memory array keeps its weights there)")
    if cells.get("auto_cost_extraction", False):
        raise HardwareError(f"{file}: memories.cells.auto_cost_extraction: true needs CACTI; give w_cost instead")
    bits = _array_precision(array, file)
    activation_bits, weight_bits = bits["inputs"], bits["weights"]
    if int(cells.get("size", weight_bits)) != weight_bits:
        raise HardwareError(
            f"{file}: memories.cells.size: {cells.get('size')} bits; traincost models cells of one weight "
            f"({weight_bits} bits: no precharge of a cell group)"
        )
    wordline, bitline = sorted(dim_size)[:2]
    entry = {
        "kind": kind,
        "wordline_axes": [axis["name"] for axis in axes if _array_dimension(axis) == wordline],
        "bitline_axes": [axis["name"] for axis in axes if _array_dimension(axis) == bitline],
        "wordline_size": dim_size[wordline],
        "bitline_size": dim_size[bitline],
        "activation_bits": activation_bits,
        "weight_bits": weight_bits,
        "bit_serial_bits": int(_required(array, "bit_serial_precision", file, where)),
        "adc_bits": int(array.get("adc_resolution", 0)) if kind == "analog" else 0,
        "source": f"{file.name} operational_array ({wordline} along the wordlines, {bitline} along the bitlines)",
    }
    return entry


def _peak_mac_pj(entry: Mapping[str, Any]) -> float:
    """Energy per MAC of an in-memory array with its whole macro filled."""
    array = InMemoryArray(
        **{key: value for key, value in entry.items() if key != "source"}
        | {"wordline_axes": tuple(entry["wordline_axes"]), "bitline_axes": tuple(entry["bitline_axes"])}
    )
    rows, columns = float(array.bitline_size), float(array.wordline_size)
    return float(activation_pj(array, rows, columns)) / (rows * columns)


def _pes_used(core: Mapping[str, Any], array: Mapping[str, Any]) -> str:
    """How many of the array's PEs the core's spatial unrolling uses (ZigZag's utilisation before any layer)."""
    used = math.prod(axis["size"] for axis in core["pe_array"])
    text = f"the spatial unrolling uses {used:,} of the array's {math.prod(int(size) for size in array['sizes']):,} PEs"
    if "in_memory" in core:
        imc = core["in_memory"]
        cycles = imc["activation_bits"] // imc["bit_serial_bits"]
        text += f", computing in memory ({imc['kind']}, {cycles} cycles a MAC)"
    return text


def _as_accelerator(data: Any, file: Path) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise HardwareError(f"{file}: expected a ZigZag accelerator (a mapping with name, memories, operational_array)")
    for key in ("name", "memories", "operational_array"):
        _required(data, key, file)
    return data


def _array_dimensions(array: Mapping[str, Any], file: Path) -> list[str]:
    """The names of the operational array's dimensions (``D1``, ``D2``, ...)."""
    dims = _required(array, "dimensions", file, "operational_array")
    if not isinstance(dims, list):
        raise HardwareError(f"{file}: operational_array.dimensions: {dims!r}; expected a list such as [D1, D2]")
    return [str(d) for d in dims]


def _required(data: Mapping[str, Any], key: str, file: Path, where: str = "") -> Any:
    path = f"{where}.{key}" if where else key
    if not isinstance(data, Mapping) or key not in data or data[key] is None:
        raise HardwareError(f"{file}: {path}: missing")
    return data[key]


def bundled_mapping(file: Path, *, imc: bool) -> Path | None:
    """ZigZag's bundled mapping for a bundled hardware file: ``../mapping/<stem>.yaml`` or ``<stem>_like.yaml``; else
    ZigZag's generic ``default.yaml`` (``default_imc.yaml`` for an in-memory-computing array); None if none is there."""
    folder = file.parent.parent / "mapping"
    for name in (f"{file.stem}.yaml", f"{file.stem}_like.yaml", "default_imc.yaml" if imc else "default.yaml"):
        if (folder / name).is_file():
            return folder / name
    return None


def _mapping_default(
    file: Path,
) -> tuple[dict[str, list[tuple[str, int | None]]], dict[str, str], dict[str, list[str]]]:
    """The ``default`` entry of a ZigZag mapping file: its spatial unrolling (none if it has only a hint), operand
    links, and per array dimension its ``spatial_mapping_hint`` names, the loops it lists."""
    entries = read_foreign_yaml(file, schema="zigzag_mapping.schema.yaml", root=list)
    if not isinstance(entries, list):
        raise HardwareError(f"{file}: expected a list of mapping entries (name, spatial_mapping, memory_operand_links)")
    default = next((e for e in entries if isinstance(e, dict) and e.get("name") == "default"), None)
    if default is None:
        raise HardwareError(f"{file}: no entry named 'default'")
    links = dict(_DEFAULT_LINKS)
    for layer_operand, memory_operand in (default.get("memory_operand_links") or {}).items():
        if layer_operand not in ("W", "I", "O"):
            raise HardwareError(f"{file}: default.memory_operand_links.{layer_operand}: expected W, I or O")
        links[str(memory_operand)] = layer_operand
    if "spatial_mapping" not in default and "spatial_mapping_hint" not in default:
        raise HardwareError(f"{file}: default: no spatial_mapping or spatial_mapping_hint")
    given = (
        _unroll_entries(default["spatial_mapping"], f"{file}: default.spatial_mapping") if "spatial_mapping" in default else {}
    )
    hints = {}
    for dim, loops in (default.get("spatial_mapping_hint") or {}).items():
        listed = [str(loop) for loop in (loops if isinstance(loops, list) and loops else [loops])]
        for loop in listed:
            _check_loop(loop, f"{file}: default.spatial_mapping_hint.{dim}")
        hints[str(dim)] = listed
    return given, links, hints


def _filled(
    given: Mapping[str, Sequence[tuple[str, int | None]]], hints: Mapping[str, Sequence[str]], array_dims: Sequence[str]
) -> tuple[dict[str, list[tuple[str, int | None]]], dict[str, list[str]]]:
    """The unrolling of every array dimension as ZigZag completes a mapping file's (``SpatialMappingGeneratorStage``):
    a dimension the ``spatial_mapping`` names unrolls what it gives; any other, over all its PEs, one of the loops its
    hint lists, or with no hint any loop (``SpatialMappingHint.complete_with_defaults``: every layer dimension),
    picked per layer. Returns the unrolling (each filled dimension its first loop) and, per filled dimension, the
    other loops (``_hinted``). A hint for a dimension the mapping names, or that the array lacks, is not read."""
    unroll = {dim: list(loops) for dim, loops in given.items()}
    alternatives: dict[str, list[str]] = {}
    for dim in array_dims:
        if dim not in unroll:
            listed = hints.get(dim) or LOOP_DIMS
            unroll[dim] = [(listed[0], None)]
            alternatives[dim] = list(listed[1:])
    return unroll, alternatives


def _unroll_entries(spatial: Any, where: str) -> dict[str, list[tuple[str, int | None]]]:
    """``{D1: ["K, 32"], ...}`` → ``{"D1": [("K", 32)]}``."""
    if not isinstance(spatial, Mapping):
        raise HardwareError(f"{where}: expected a mapping D1: ['K, 32'], ...")
    unroll: dict[str, list[tuple[str, int | None]]] = {}
    for dim, entries in spatial.items():
        for entry in entries if isinstance(entries, list) else [entries]:
            match = re.fullmatch(r"\s*([A-Za-z0-9_]+)\s*,\s*(\d+)\s*", str(entry))
            if match is None:
                raise HardwareError(f"{where}.{dim}: {entry!r}; expected 'DIM, FACTOR'")
            _check_loop(match.group(1), f"{where}.{dim}")
            unroll.setdefault(str(dim), []).append((match.group(1), int(match.group(2))))
    return unroll


def _check_loop(loop: object, where: str) -> None:
    if loop not in LOOP_DIMS:
        raise HardwareError(
            f"{where}: unrolls {loop!r}, which is not a traincost loop dimension ({', '.join(LOOP_DIMS)}); "
            "pass --unroll D1=K,D2=C,..."
        )


def _pe_axes(
    dim_size: Mapping[str, int], unroll: Mapping[str, Sequence[tuple[str, int | None]]], file: Path, *, reduce: bool
) -> list[dict[str, Any]]:
    axes = []
    for dim, given in unroll.items():
        if dim not in dim_size:
            raise HardwareError(f"{file}: the mapping unrolls {dim}, which is not an array dimension ({', '.join(dim_size)})")
        loops = list(given)
        factors = [dim_size[dim] if factor is None else factor for _, factor in loops]
        if reduce:  # ZigZag: each factor at most the dimension, then drop the first loop while the product exceeds it
            factors = [min(factor, dim_size[dim]) for factor in factors]
            while math.prod(factors) > dim_size[dim]:
                loops, factors = loops[1:], factors[1:]
        if math.prod(factors) > dim_size[dim]:
            raise HardwareError(
                f"{file}: the mapping unrolls {math.prod(factors)} PEs on {dim}, "
                f"which has {dim_size[dim]} (operational_array.sizes)"
            )
        for (loop, _), factor in zip(loops, factors, strict=True):
            if factor > 1:
                axes.append({"name": f"{dim}_{loop}", "dim": loop, "size": factor})
    if not axes:
        raise HardwareError(f"{file}: the mapping unrolls no dimension over more than one PE")
    return axes


# the loop dimensions each operand does not depend on (ZigZag's irrelevant dimensions)
_IRRELEVANT = {"I": {"K"}, "W": {"B", "OY", "OX"}, "O": {"C", "FY", "FX"}}
_PRECISION_KEY = {"I": "inputs", "W": "weights", "O": "partial_sums"}


def _within_port_widths(
    axes: list[dict[str, Any]], memories: Mapping[str, Any], links: Mapping[str, str], bits: Mapping[str, int], file: Path
) -> list[dict[str, Any]]:
    """The axes as ZigZag limits a mapping (``SpatialMappingGeneratorStage.limit_unrolling_to_mem_bandwidth``), each
    cut to its ``_port_limits``; those left over one PE."""
    limit = _port_limits(axes, memories, links, bits)
    cut = [{**axis, "size": limit.get(axis["name"], axis["size"])} for axis in axes]
    kept = [axis for axis in cut if axis["size"] > 1]
    if not kept:
        raise HardwareError(f"{file}: the mapping unrolls no dimension over more than one PE within the memories' ports")
    return kept


def _port_limits(
    axes: Sequence[Mapping[str, Any]], memories: Mapping[str, Any], links: Mapping[str, str], bits: Mapping[str, int]
) -> dict[str, int]:
    """By axis name, the PEs an axis may unroll where the ports limit it: for each on-chip memory innermost for all
    its operands (``memories`` innermost first) and each operand it keeps, a loop the operand depends on, unrolled on
    an array dimension the memory serves, is cut to the elements its port passes in one cycle (outputs written into
    it from below, inputs read out of it to below) at the operand's precision (outputs in partial-sum bits)."""
    seen: set[str] = set()
    limit: dict[str, int] = {}  # by axis name
    for entry in memories.values():
        held = [str(op) for op in entry.get("operands") or []] if isinstance(entry, Mapping) else []
        inner = not seen.intersection(held)
        seen.update(held)
        if not inner:
            continue
        for mem_op in held:
            operand = links.get(mem_op, mem_op)
            widths = _port_widths(entry, mem_op, ("fl",) if operand == "O" else ("tl",))
            if not widths or operand not in _IRRELEVANT:
                continue
            elements = max(1, max(widths) // bits[_PRECISION_KEY[operand]])
            for axis_dim in entry.get("served_dimensions") or []:
                for axis in axes:
                    if _array_dimension(axis) == axis_dim and axis["dim"] not in _IRRELEVANT[operand]:
                        limit[axis["name"]] = min(limit.get(axis["name"], axis["size"]), elements)
    return limit


def _port_widths(entry: Mapping[str, Any], mem_op: str, ways: tuple[str, ...]) -> list[int]:
    """The widths in bits (``bandwidth_max``) of the ports of memory ``entry`` allocated to ``mem_op`` moving one of
    ``ways`` (ZigZag's tl, th: read out to below, above; fl, fh: written in from below, above)."""
    wanted = {f"{mem_op},{way}" for way in ways}
    return [
        int(port["bandwidth_max"])
        for port in entry.get("ports") or []
        if wanted.intersection(str(a).replace(" ", "") for a in port.get("allocation") or [])
    ]


# ZigZag's cost of an access, our direction (its port type, and ``{direction}_energy_pj_per_bit``), and the ways
# a port's allocation moves it that way
_ENERGY_WAYS = (("r_cost", "read", ("tl", "th")), ("w_cost", "write", ("fh", "fl")))


def _operand_energies(entry: Mapping[str, Any], links: Mapping[str, str], memory_pj: Mapping[str, float]) -> dict[str, Any]:
    """Per operand whose ports differ in width from the memory's widest, its energies per bit as ZigZag charges them:
    ``r_cost`` (``w_cost``) per access of the widest port that reads (writes) it (``CostModelEvaluation``'s
    word accesses are of the port's ``bandwidth_max`` bits)."""
    found = {}
    for mem_op in entry.get("operands") or []:
        energies = {}
        for cost, direction, ways in _ENERGY_WAYS:
            widths = _port_widths(entry, str(mem_op), ways)
            key = f"{direction}_energy_pj_per_bit"
            if widths and float(entry[cost]) / max(widths) != memory_pj[key]:
                energies[key] = float(entry[cost]) / max(widths)
        if energies:
            found[links[mem_op]] = energies
    return found


def _dram_name(memories: Mapping[str, Any]) -> str | None:
    for name, entry in memories.items():
        if _OFFCHIP_NAME.search(name) or (isinstance(entry, Mapping) and entry.get("mem_type") == "dram"):
            return name
    return None


def zigzag_memory(
    entry: Any, file: Path, where: str, links: Mapping[str, str], *, dim_size: Mapping[str, int], used: Mapping[str, int]
) -> dict[str, Any]:
    """One ZigZag memory as ours. ``instances``: the product of the array dimensions it does not serve
    (``dim_size``); for a memory serving some, of the PEs the mapping unrolls on them (``used``, per array
    dimension), as the core level's ``served_axes`` describe them (``ascend_like_mixed.yaml`` unrolls 12 of D2's 16:
    192 of ``rf_1B``'s 256, the file's count in ``source``). One serving none keeps the file's count, the instances
    beside idle PEs holding nothing (``traincost.cost.core.memory.working_instances``)."""
    if not isinstance(entry, Mapping):
        raise HardwareError(f"{file}: {where}: expected a memory (size, r_cost, w_cost, operands, ports, served_dimensions)")
    size_bits = _required(entry, "size", file, where)
    ports = _required(entry, "ports", file, where)
    if not isinstance(ports, list) or not ports:
        raise HardwareError(f"{file}: {where}.ports: expected a list of ports")
    operands = []
    for operand in _required(entry, "operands", file, where):
        if operand not in links:
            raise HardwareError(f"{file}: {where}.operands: {operand!r} is not I1, I2 or O")
        operands.append(links[operand])
    our_ports = []
    for j, port in enumerate(ports):
        kind = port.get("type")
        if kind not in ("read", "write", "read_write") or not isinstance(port.get("bandwidth_max"), int | float):
            raise HardwareError(f"{file}: {where}.ports[{j}]: expected type read/write/read_write and bandwidth_max (bits)")
        served = sorted(
            {links[a.split(",")[0].strip()] for a in port.get("allocation") or [] if a.split(",")[0].strip() in links}
        )
        our_port = {
            "name": str(port.get("name", f"port{j}")),
            "direction": kind,
            "bandwidth_bytes_per_cycle": port["bandwidth_max"] / 8,
        }
        if served:
            our_port["operands"] = served
        our_ports.append(our_port)
    energies = {}
    for cost, direction, _ in _ENERGY_WAYS:
        if entry.get(cost) is None:
            raise HardwareError(
                f"{file}: {where}.{cost}: missing (ZigZag's CACTI extraction is not reproduced; give pJ per access)"
            )
        widths = [p["bandwidth_max"] for p in ports if p.get("type") in (direction, "read_write")]
        if not widths:
            raise HardwareError(f"{file}: {where}.ports: no {direction} port")
        energies[f"{direction}_energy_pj_per_bit"] = float(entry[cost]) / max(widths)
    by_operand = _operand_energies(entry, links, energies)
    served_dims = [str(d) for d in entry.get("served_dimensions") or []]
    unknown = [d for d in served_dims if d not in dim_size]
    if unknown:
        raise HardwareError(f"{file}: {where}.served_dimensions: {unknown[0]} is not an array dimension ({', '.join(dim_size)})")
    minimum = min(int(p.get("bandwidth_min", 0)) for p in ports)
    in_file = math.prod(max(1, size) for dim, size in dim_size.items() if dim not in served_dims)
    instances = math.prod(used[dim] for dim in dim_size if dim not in served_dims) if served_dims else in_file
    beside = f"; {in_file:,} instances over the array, {instances:,} beside the PEs it unrolls" if in_file != instances else ""
    return {
        "size_bytes": size_bits / 8,
        "ports": our_ports,
        **energies,
        **({"operand_energy_pj_per_bit": by_operand} if by_operand else {}),
        "min_access_bits": minimum,
        **({"double_buffered": True} if entry.get("force_double_buffering") else {}),
        "instances": instances,
        "served_dimensions": served_dims,
        "operands": operands,
        "source": f"{file.name} {where}: {size_bits} bits, r_cost {entry['r_cost']} / w_cost {entry['w_cost']} pJ per access"
        + beside,
    }


def _offchip_link(memory: Mapping[str, Any], source: str) -> dict[str, Any]:
    reads = [p["bandwidth_bytes_per_cycle"] for p in memory["ports"] if p["direction"] in ("read", "read_write")]
    return {
        "bandwidth_bytes_per_cycle": max(reads),
        "read_energy_pj_per_bit": memory["read_energy_pj_per_bit"],
        "write_energy_pj_per_bit": memory["write_energy_pj_per_bit"],
        "source": source,
    }


def _array_precision(array: Mapping[str, Any], file: Path) -> dict[str, int]:
    given = array.get("input_precision") or [8, 8]
    if not (isinstance(given, list) and len(given) == 2 and all(isinstance(b, int) and b > 0 for b in given)):
        raise HardwareError(f"{file}: operational_array.input_precision: {given!r}; expected [input bits, weight bits]")
    inputs, weights = given
    return {"inputs": inputs, "weights": weights, "outputs": inputs, "partial_sums": 2 * inputs}


def _dataflow(levels: Sequence[Mapping[str, Any]], memories: Mapping[str, Mapping[str, Any]]) -> str:
    """Output-stationary when outputs have a register per PE and weights do not; else weight-stationary."""

    def per_pe(operand: str) -> bool:
        first = next((lv for lv in levels if operand in lv["operands"]), None)
        return first is not None and bool(memories[first["level"]].get("per_pe"))

    return "output_stationary" if per_pe("O") and not per_pe("W") else "weight_stationary"
