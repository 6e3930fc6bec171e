"""Run the ZigZag DNN-accelerator cost model (``zigzag-dse`` 3.9.1) on conv / GEMM layers, for a layer-by-layer comparison.

The hardware is a single core given as a plain dict (see :func:`run_zigzag`); this module translates it into ZigZag's
accelerator, workload and mapping YAML files, fixes the spatial mapping to the core's PE array, lets ZigZag's LOMA
engine search the temporal mapping, and returns one row of latency / energy per layer.

ZigZag and its dependencies live in their own venv, the project installed first (see
``bench/crosscheck/requirements-zigzag.txt``)::

    python3 -m venv bench/.venv-zigzag
    bench/.venv-zigzag/bin/pip install -e .
    bench/.venv-zigzag/bin/pip install -r bench/crosscheck/requirements-zigzag.txt
    bench/.venv-zigzag/bin/python bench/crosscheck/zigzag_side.py            # two ResNet-18 layers on the example core

How the core dict is expressed in ZigZag (all read from the 3.9.1 source, see ``cost_model/cost_model.py``):

* Operands: our ``W``, ``I``, ``O`` are ZigZag's memory operands ``I2``, ``I1``, ``O`` (``memory_operand_links``).
* Sizes are in bits (``size_bytes * 8``); the off-chip level is a ``dram`` memory of (practically) unbounded size on top.
* Bandwidth: each on-chip level gets, per operand, one read port (``bandwidth_max = read_bw * 8`` bit/cycle) and one
  write port (``write_bw * 8``), as in ZigZag's own ``inputs/hardware/gemm_l1.yaml``; the off-chip level gets a single
  ``read_write`` port of ``bandwidth_bytes_per_cycle * 8`` bit/cycle shared by all reads and writes. ZigZag's latency
  only uses ``bandwidth_max``. Why not one read and one write port shared by the level's operands: ZigZag charges every
  (operand, direction) link on a port ``ceil(bits_per_period / bandwidth_max)`` whole cycles per period and adds the
  links' busy cycles on a shared port (``combine_data_transfer_rate_per_physical_port``), so two streams that each
  need the port every cycle (e.g. inputs and partial sums read from the level feeding the array) cost two cycles per
  cycle however wide the port is (a 3x3 conv K=C=64 56x56 on a 32x32 array: +113k stall cycles on 113k). Our model
  treats a level's bandwidth as bytes/cycle shared by all operands; per-operand ports drop the whole-cycle
  serialisation but also any contention between operands of a level (their sum may exceed ``read_bw``), so ZigZag is
  optimistic where the operands of one level together need more than its bandwidth. ``shared_ports: True`` on a
  level restores one shared read and one shared write port.
* Energy: ZigZag charges ``r_cost`` / ``w_cost`` pJ per access of ``bandwidth_max`` bits, with access granularity
  ``bandwidth_min`` (``accesses = ceil(bits_per_period / bw_min) * bw_min / bw_max * periods``). We set
  ``bandwidth_min = min(word_bits, bandwidth_max)`` and ``r_cost = read_energy_pj_per_bit * bandwidth_max`` (likewise
  ``w_cost``), so every word moved costs exactly ``word_bits * energy_pj_per_bit``. ZigZag truncates the access count to
  an integer, an error below one ``bandwidth_max``-bit access per (operand, level, direction).
* MACs: ``unit_energy = mac_energy_pj``; ZigZag's MAC energy is ``total MACs * unit_energy`` (spatial under-use costs
  no energy).
* Every level has ``served_dimensions`` = all array dimensions, i.e. one instance shared by (broadcasting to) the whole
  PE array; ZigZag has no implicit per-PE register, so data reaching the MACs is read from the innermost level holding
  the operand (ZigZag counts repeated reads of the same word in consecutive cycles once). A level marked
  ``per_pe: True`` gets ``served_dimensions: []`` instead: one instance per PE (ZigZag multiplies its accesses by the
  number of PEs).

What ZigZag reports and assumes (3.9.1):

* ``latency_cycles`` is ``latency_total2`` = temporal-loop cycles (spatial under-use included) + stalls (per port:
  transfer cycles at ``bandwidth_max`` beyond the allowed window, a whole period when the tile fits in half the memory
  (double buffering), else only the last iteration; ports are assumed to run in parallel, the worst one counts)
  + on-loading (the first tile of every input operand's innermost level, before computing starts) + off-loading (the
  last output tile). The memory ``latency`` field is unused by the cost model.
* DRAM reads and writes are counted in ``energy_pj`` (``energy_dram_pj``); the inputs start and the output ends in DRAM.
* The innermost memory of an operand must multicast one word per distinct PE along each relevant array axis per
  cycle: ZigZag silently lowers an unrolling above ``bandwidth_max // precision`` (this module logs a warning when the
  unrolling differs from ``pe_array`` for any reason but a small layer dimension).
* Partial-sum read-back energy at a level feeding the array is counted per accumulation period, i.e. it includes
  reading the first (empty) partial sum.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import math
import pathlib
import re
import tempfile
import time
from collections.abc import Iterator, Mapping
from typing import Any

import pandas as pd
import yaml

logger = logging.getLogger(__name__)

#: Our operand names -> ZigZag memory operands (as in ZigZag's own example mappings).
MEM_OPERAND: dict[str, str] = {"W": "I2", "I": "I1", "O": "O"}
#: Array dimension names ZigZag accepts, in order (pe_array entries are assigned to them in dict order).
OA_DIMS: tuple[str, ...] = ("D1", "D2", "D3", "D4")
#: Size in bits given to the off-chip level: large enough to be never full.
DRAM_SIZE_BITS: int = 2**60
#: Layer dimensions ZigZag knows for the layers built here.
CONV_DIMS: tuple[str, ...] = ("B", "K", "C", "OY", "OX", "FY", "FX")
GEMM_DIMS: tuple[str, ...] = ("B", "K", "C", "OY", "OX")
OPTIMISE_CHOICES: tuple[str, ...] = ("latency", "energy", "EDP")
#: Columns every result table has, first.
MAIN_COLUMNS: tuple[str, ...] = (
    "name",
    "latency_cycles",
    "energy_pj",
    "mac_energy_pj",
    "memory_energy_pj",
    "spatial_utilization",
)

EXAMPLE_CORE: dict[str, Any] = {
    "pe_array": {"K": 32, "C": 32},
    "mac_energy_pj": 0.5,
    "word_bits": 32,
    "levels": [
        {
            "name": "rf",
            "size_bytes": 65536,
            "operands": ["W"],
            "read_bw_bytes_per_cycle": 128,
            "write_bw_bytes_per_cycle": 128,
            "read_energy_pj_per_bit": 0.01,
            "write_energy_pj_per_bit": 0.01,
        },
        {
            "name": "local",
            "size_bytes": 2097152,
            "operands": ["W", "I", "O"],
            "read_bw_bytes_per_cycle": 64,
            "write_bw_bytes_per_cycle": 64,
            "read_energy_pj_per_bit": 0.05,
            "write_energy_pj_per_bit": 0.05,
        },
    ],
    "offchip": {"bandwidth_bytes_per_cycle": 16, "energy_pj_per_bit": 3.0},
}


# --------------------------------------------------------------------------------------------------------------------
# YAML builders
# --------------------------------------------------------------------------------------------------------------------


def _bits_per_cycle(bytes_per_cycle: float, what: str) -> int:
    """Convert a bandwidth in bytes/cycle to the integer bits/cycle ZigZag requires.

    Args:
        bytes_per_cycle: Bandwidth in bytes per cycle.
        what: Name used in error messages.

    Returns:
        The bandwidth in bits per cycle.

    Raises:
        ValueError: If the bandwidth is not positive or not a whole number of bits.
    """
    bits = float(bytes_per_cycle) * 8
    if bits <= 0 or abs(bits - round(bits)) > 1e-9:
        raise ValueError(f"{what}: bandwidth {bytes_per_cycle} B/cycle is not a positive whole number of bits per cycle")
    return round(bits)


def _port(name: str, kind: str, bw_bits: int, word_bits: int, allocation: list[str]) -> dict[str, Any]:
    """Build one ZigZag memory port.

    Args:
        name: Port name (``r_port_1``, ``w_port_1``, ``rw_port_1``).
        kind: ``read``, ``write`` or ``read_write``.
        bw_bits: Bandwidth in bits per cycle (ZigZag's ``bandwidth_max``).
        word_bits: Access granularity in bits (ZigZag's ``bandwidth_min``, clipped to ``bw_bits``).
        allocation: ZigZag allocations such as ``"I1, tl"``.

    Returns:
        The port as a dict for the accelerator YAML.
    """
    return {
        "name": name,
        "type": kind,
        "bandwidth_min": int(min(word_bits, bw_bits)),
        "bandwidth_max": int(bw_bits),
        "allocation": allocation,
    }


def _allocations(mem_ops: list[str], directions_in: tuple[str, ...], directions_out: tuple[str, ...]) -> list[str]:
    """List the ZigZag port allocations of the given memory operands.

    Inputs (``I1``, ``I2``) only move downwards (``fh`` written from the level above, ``tl`` read to the level below);
    ``O`` also moves upwards (``fl`` written from below, ``th`` read to above).

    Args:
        mem_ops: ZigZag memory operands held by the memory.
        directions_in: Directions used for every operand (e.g. ``("tl",)``).
        directions_out: Extra directions used for ``O`` only.

    Returns:
        The allocation strings.
    """
    out: list[str] = []
    for op in mem_ops:
        for direction in directions_in:
            out.append(f"{op}, {direction}")
        if op == "O":
            for direction in directions_out:
                out.append(f"{op}, {direction}")
    return out


def _level_ports(mem_ops: list[str], read_bits: int, write_bits: int, word_bits: int, *, shared: bool) -> list[dict[str, Any]]:
    """Ports of one on-chip level: a read and a write port per operand (or, if ``shared``, one of each for all).

    ZigZag's port names must match ``[r][w]_port_<n>``, so the n-th operand's ports are ``r_port_<n>`` / ``w_port_<n>``.

    Args:
        mem_ops: ZigZag memory operands held by the level.
        read_bits: Read bandwidth in bits per cycle (of every read port).
        write_bits: Write bandwidth in bits per cycle (of every write port).
        word_bits: Access granularity in bits.
        shared: One read and one write port shared by all operands instead of one pair per operand.

    Returns:
        The ports for the accelerator YAML.
    """
    groups = [mem_ops] if shared else [[op] for op in mem_ops]
    ports: list[dict[str, Any]] = []
    for number, ops in enumerate(groups, start=1):
        ports.append(_port(f"r_port_{number}", "read", read_bits, word_bits, _allocations(ops, ("tl",), ("th",))))
        ports.append(_port(f"w_port_{number}", "write", write_bits, word_bits, _allocations(ops, ("fh",), ("fl",))))
    return ports


def _check_core(core: Mapping[str, Any]) -> None:
    """Validate the core dict and raise ``ValueError`` with a readable message when it is wrong.

    Args:
        core: The hardware description (see :func:`run_zigzag`).

    Raises:
        ValueError: On any inconsistency.
    """
    for key in ("pe_array", "mac_energy_pj", "word_bits", "levels", "offchip"):
        if key not in core:
            raise ValueError(f"core lacks {key!r}")
    pe_array = core["pe_array"]
    if not 1 <= len(pe_array) <= len(OA_DIMS):
        raise ValueError(f"pe_array must have 1..{len(OA_DIMS)} axes, got {pe_array}")
    for dim, size in pe_array.items():
        if dim not in CONV_DIMS or int(size) < 1:
            raise ValueError(f"pe_array entry {dim}: {size} is not a layer dimension of {CONV_DIMS} with size >= 1")
    names = [level["name"] for level in core["levels"]]
    if len(set(names)) != len(names) or "dram" in names:
        raise ValueError(f"level names must be unique and not 'dram': {names}")
    for level in core["levels"]:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", level["name"]):
            raise ValueError(f"level name {level['name']!r} must be an identifier")
        ops = level["operands"]
        if not ops or any(op not in MEM_OPERAND for op in ops) or len(set(ops)) != len(ops):
            raise ValueError(f"level {level['name']}: operands must be a non-empty subset of W, I, O, got {ops}")
        if int(level["size_bytes"]) <= 0:
            raise ValueError(f"level {level['name']}: size_bytes must be positive")


def accelerator_dict(core: Mapping[str, Any], name: str = "traincost_core") -> dict[str, Any]:
    """Translate the core dict into ZigZag's accelerator YAML structure.

    Args:
        core: The hardware description (see :func:`run_zigzag`).
        name: Accelerator name.

    Returns:
        A dict that ``yaml.safe_dump`` writes as a valid ZigZag 3.9.1 accelerator file.
    """
    _check_core(core)
    word_bits = int(core["word_bits"])
    oa_dims = list(OA_DIMS[: len(core["pe_array"])])
    memories: dict[str, Any] = {}
    for level in core["levels"]:
        mem_ops = [MEM_OPERAND[op] for op in level["operands"]]
        read_bits = _bits_per_cycle(level["read_bw_bytes_per_cycle"], level["name"])
        write_bits = _bits_per_cycle(level.get("write_bw_bytes_per_cycle", level["read_bw_bytes_per_cycle"]), level["name"])
        read_pj_bit = float(level["read_energy_pj_per_bit"])
        write_pj_bit = float(level.get("write_energy_pj_per_bit", read_pj_bit))
        memories[level["name"]] = {
            "size": int(level["size_bytes"]) * 8,
            "r_cost": read_pj_bit * read_bits,
            "w_cost": write_pj_bit * write_bits,
            "area": 0.0,
            "latency": 1,
            "operands": mem_ops,
            "ports": _level_ports(mem_ops, read_bits, write_bits, word_bits, shared=bool(level.get("shared_ports", False))),
            "served_dimensions": [] if level.get("per_pe", False) else list(oa_dims),
        }
    offchip = core["offchip"]
    dram_bits = _bits_per_cycle(offchip["bandwidth_bytes_per_cycle"], "offchip")
    dram_pj_bit = float(offchip["energy_pj_per_bit"])
    dram_ops = ["I1", "I2", "O"]
    memories["dram"] = {
        "size": DRAM_SIZE_BITS,
        "r_cost": dram_pj_bit * dram_bits,
        "w_cost": float(offchip.get("write_energy_pj_per_bit", dram_pj_bit)) * dram_bits,
        "area": 0.0,
        "latency": 1,
        "operands": dram_ops,
        "ports": [_port("rw_port_1", "read_write", dram_bits, word_bits, _allocations(dram_ops, ("tl",), ("fl",)))],
        "served_dimensions": list(oa_dims),
    }
    return {
        "name": name,
        "memories": memories,
        "operational_array": {
            "unit_energy": float(core["mac_energy_pj"]),
            "unit_area": 1.0,
            "dimensions": oa_dims,
            "sizes": [int(size) for size in core["pe_array"].values()],
        },
    }


def mapping_list(core: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Build ZigZag's mapping YAML: the spatial mapping fixed to ``pe_array``, no temporal ordering (LOMA searches it).

    Args:
        core: The hardware description (see :func:`run_zigzag`).

    Returns:
        The mapping entries (``default`` plus identical ``Conv`` and ``Gemm`` entries, which silences ZigZag's
        "operator not defined in mapping" warning).
    """
    spatial = {oa_dim: [f"{dim}, {int(size)}"] for oa_dim, (dim, size) in zip(OA_DIMS, core["pe_array"].items(), strict=False)}
    links = {"O": MEM_OPERAND["O"], "W": MEM_OPERAND["W"], "I": MEM_OPERAND["I"]}
    return [{"name": name, "spatial_mapping": spatial, "memory_operand_links": links} for name in ("default", "Conv", "Gemm")]


def _precisions(core: Mapping[str, Any]) -> dict[str, int]:
    """Operand precisions in bits: ``word_bits`` for all, overridable with an optional ``core["precision"]`` dict.

    Args:
        core: The hardware description.

    Returns:
        ZigZag's ``operand_precision`` (keys ``W``, ``I``, ``O`` (partial sums), ``O_final``).
    """
    bits = int(core["word_bits"])
    precision = {"W": bits, "I": bits, "O": bits, "O_final": bits}
    precision.update({key: int(value) for key, value in core.get("precision", {}).items()})
    return precision


def workload_entry(layer: Mapping[str, Any], layer_id: int, precision: Mapping[str, int]) -> dict[str, Any]:
    """Translate one layer row into a ZigZag workload layer.

    Convs use ZigZag's ResNet-18 example equation with ``ix = stride*ox + 1*fx`` relations (a grouped one, ``G`` > 1,
    the equation ZigZag's ONNX parser gives it, with ``K`` and ``C`` per group); the input extent is fixed
    to the row's ``IX``/``IY`` through ``pr_loop_sizes`` (ZigZag clips every input tile to it), so pass the size of the
    input tensor as stored in memory (unpadded 224 for the ResNet stem: its padding zeros are not stored). GEMMs use
    ``O[b][k][oy][ox] += I[b][c][oy][ox] * W[k][c]``. Both operands come from outside the layer (``operand_source`` is
    the layer itself), so they start in DRAM and the output ends there.

    Args:
        layer: Row with ``name, kind, B, K, C, OY, OX, FY, FX, G, IY, IX, stride, padding``.
        layer_id: ZigZag layer id.
        precision: Operand precisions in bits.

    Returns:
        The workload entry.

    Raises:
        ValueError: For a grouped layer that is not a conv or an unknown kind.
    """
    groups = int(layer.get("G", 1))
    kind = str(layer["kind"]).lower()
    entry: dict[str, Any] = {
        "id": layer_id,
        "name": f"L{layer_id}_{re.sub(r'[^A-Za-z0-9_]', '_', str(layer['name']))}",
        "operand_precision": dict(precision),
        "operand_source": {"I": layer_id, "W": layer_id},
    }
    if kind == "conv":
        stride = int(layer.get("stride", 1))
        pad = int(layer.get("padding", 0))
        sizes = {dim: int(layer[dim]) for dim in CONV_DIMS}
        ix = _input_extent(layer, "IX", out=sizes["OX"], filt=sizes["FX"], stride=stride, pad=pad)
        iy = _input_extent(layer, "IY", out=sizes["OY"], filt=sizes["FY"], stride=stride, pad=pad)
        equation = "O[b][k][oy][ox]+=W[k][c][fy][fx]*I[b][c][iy][ix]"
        if groups != 1:
            equation = "O[b][g][k][oy][ox]+=W[g][k][c][fy][fx]*I[b][g][c][iy][ix]"
            sizes["G"] = groups
        entry.update(
            {
                "operator_type": "Conv",
                "equation": equation,
                "dimension_relations": [f"ix={stride}*ox+1*fx", f"iy={stride}*oy+1*fy"],
                "loop_dims": list(sizes),
                "loop_sizes": list(sizes.values()),
                "pr_loop_dims": ["IX", "IY"],
                "pr_loop_sizes": [ix, iy],
                "padding": [[pad, pad], [pad, pad]],
            }
        )
    elif kind == "gemm":
        if groups != 1:
            raise ValueError(f"layer {layer['name']}: a gemm has no groups (G={groups})")
        if int(layer.get("FY", 1)) != 1 or int(layer.get("FX", 1)) != 1:
            raise ValueError(f"layer {layer['name']}: a gemm must have FY = FX = 1")
        entry.update(
            {
                "operator_type": "Gemm",
                "equation": "O[b][k][oy][ox]+=I[b][c][oy][ox]*W[k][c]",
                "dimension_relations": [],
                "loop_dims": list(GEMM_DIMS),
                "loop_sizes": [int(layer[dim]) for dim in GEMM_DIMS],
            }
        )
    else:
        raise ValueError(f"layer {layer['name']}: kind must be 'conv' or 'gemm', got {layer['kind']!r}")
    return entry


def _input_extent(layer: Mapping[str, Any], key: str, *, out: int, filt: int, stride: int, pad: int) -> int:
    """Input extent along one axis: the row's value, or ``stride*(out-1) + filt - 2*pad`` when it is missing.

    Args:
        layer: The layer row.
        key: ``IX`` or ``IY``.
        out: Output extent.
        filt: Filter extent.
        stride: Stride.
        pad: Padding per side.

    Returns:
        The input extent.
    """
    value = layer.get(key)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return max(1, stride * (out - 1) + filt - 2 * pad)
    return int(value)


def _write_yaml(path: pathlib.Path, data: Any) -> pathlib.Path:
    """Write ``data`` as YAML (block style, keys in insertion order).

    Args:
        path: Target file.
        data: Plain Python data.

    Returns:
        The path.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False, default_flow_style=False), encoding="utf-8")
    return path


# --------------------------------------------------------------------------------------------------------------------
# Running ZigZag
# --------------------------------------------------------------------------------------------------------------------


@contextlib.contextmanager
def _quiet_zigzag(level: int) -> Iterator[None]:
    """Limit ZigZag's logging and undo ``zigzag.api``'s ``logging.basicConfig`` on the root logger.

    ``get_hardware_performance_zigzag`` calls ``logging.basicConfig(level=INFO)``, which installs a root handler when
    there is none; this context restores the root logger as it was and sets the ``zigzag`` logger to ``level``.

    Args:
        level: Logging level for the ``zigzag`` logger while inside the context.

    Yields:
        Nothing.
    """
    root = logging.getLogger()
    root_handlers, root_level = list(root.handlers), root.level
    zz_logger = logging.getLogger("zigzag")
    zz_level = zz_logger.level
    zz_logger.setLevel(level)
    try:
        yield
    finally:
        zz_logger.setLevel(zz_level)
        for handler in list(root.handlers):
            if handler not in root_handlers:
                root.removeHandler(handler)
        root.setLevel(root_level)


def _api() -> Any:
    """Import ``zigzag.api.get_hardware_performance_zigzag`` lazily (so the YAML builders work without ZigZag).

    Returns:
        The API function.
    """
    from zigzag.api import get_hardware_performance_zigzag  # noqa: PLC0415

    return get_hardware_performance_zigzag


def _evaluate(
    entry: dict[str, Any],
    acc_path: pathlib.Path,
    map_path: pathlib.Path,
    layer_dir: pathlib.Path,
    *,
    optimise: str,
    lpf_limit: int,
    zigzag_log_level: int,
) -> tuple[Any, float]:
    """Run ZigZag on one workload layer.

    Args:
        entry: The workload entry (see :func:`workload_entry`).
        acc_path: Accelerator YAML.
        map_path: Mapping YAML.
        layer_dir: Folder for this layer's workload YAML and ZigZag's dumps.
        optimise: ``latency``, ``energy`` or ``EDP``.
        lpf_limit: LOMA's loop-prime-factor limit (search size grows as its factorial).
        zigzag_log_level: Logging level for ZigZag's own logger.

    Returns:
        The best ``CostModelEvaluation`` and the seconds the API call took.
    """
    api = _api()
    wl_path = _write_yaml(layer_dir / "workload.yaml", [entry])
    with _quiet_zigzag(zigzag_log_level):
        start = time.perf_counter()
        _, _, cmes = api(
            str(wl_path),
            str(acc_path),
            str(map_path),
            opt=optimise,
            dump_folder=str(layer_dir / "zigzag_out"),
            lpf_limit=lpf_limit,
            loma_show_progress_bar=False,
        )
        seconds = time.perf_counter() - start
    per_layer = cmes[0][1]
    if len(per_layer) != 1:
        raise RuntimeError(f"expected one layer result from ZigZag, got {len(per_layer)}")
    return per_layer[0][0], seconds


def _prepare(core: Mapping[str, Any], workdir: pathlib.Path) -> tuple[pathlib.Path, pathlib.Path]:
    """Write the accelerator and mapping YAML files for ``core``.

    Args:
        core: The hardware description.
        workdir: Folder to write into.

    Returns:
        Paths of the accelerator and mapping files.
    """
    workdir.mkdir(parents=True, exist_ok=True)
    acc_path = _write_yaml(workdir / "accelerator.yaml", accelerator_dict(core))
    map_path = _write_yaml(workdir / "mapping.yaml", mapping_list(core))
    return acc_path, map_path


def _spatial_mapping_str(cme: Any) -> str:
    """The spatial unrolling ZigZag used, e.g. ``D1:K=32 D2:C=3``.

    Args:
        cme: A ``CostModelEvaluation``.

    Returns:
        A compact string.
    """
    parts = []
    for oa_dim, single in sorted(cme.layer.spatial_mapping.items(), key=lambda item: str(item[0])):
        unrolls = ",".join(f"{dim}={float(size):g}" for dim, size in single.items())
        parts.append(f"{oa_dim}:{unrolls}")
    return " ".join(parts)


def _temporal_mapping_str(cme: Any) -> str:
    """The temporal loops ZigZag allocated to each memory level, per operand (innermost level and loop first).

    Args:
        cme: A ``CostModelEvaluation``.

    Returns:
        A compact string such as ``I: local[OX56 OY56] | dram[K2]; O: ...; W: rf[OX56 OY56] | local[K2] | dram[]``.
    """
    mapping = cme.temporal_mapping.mapping_dic_origin
    hierarchy = cme.accelerator.memory_hierarchy
    out = {}
    for layer_op, levels in mapping.items():
        mem_op = cme.memory_operand_links.layer_to_mem_op(layer_op)
        names = [level.name for level in hierarchy.get_memory_levels(mem_op)]
        loops = " | ".join(
            f"{name}[{' '.join(f'{dim}{size:g}' for dim, size in loops)}]" for name, loops in zip(names, levels, strict=False)
        )
        out[str(layer_op)] = loops
    return "; ".join(f"{op}: {loops}" for op, loops in sorted(out.items()))


def _row(name: str, cme: Any, seconds: float, core: Mapping[str, Any]) -> dict[str, Any]:
    """Flatten a ``CostModelEvaluation`` into one result row.

    Args:
        name: Layer name from the input.
        cme: The best ``CostModelEvaluation`` of the layer.
        seconds: Wall seconds of the ZigZag call.
        core: The hardware description (for the per-level names and the expected unrolling).

    Returns:
        The row.
    """
    row: dict[str, Any] = {
        "name": name,
        "latency_cycles": float(cme.latency_total2),
        "energy_pj": float(cme.energy_total),
        "mac_energy_pj": float(cme.mac_energy),
        "memory_energy_pj": float(cme.mem_energy),
        "spatial_utilization": float(cme.mac_spatial_utilization),
        "macs": int(cme.layer.total_mac_count),
        "ideal_cycles": float(cme.ideal_cycle),
        "temporal_cycles": float(cme.ideal_temporal_cycle),
        "stall_cycles": float(cme.latency_total0 - cme.ideal_temporal_cycle),
        "onloading_cycles": float(cme.data_onloading_cycle),
        "offloading_cycles": float(cme.data_offloading_cycle),
        "mac_utilization": float(cme.mac_utilization2),
    }
    hierarchy = cme.accelerator.memory_hierarchy
    level_names = [level["name"] for level in core["levels"]] + ["dram"]
    per_level = dict.fromkeys(level_names, 0.0)
    per_operand: dict[str, float] = {}
    for layer_op, energies in cme.mem_energy_breakdown.items():
        mem_op = cme.memory_operand_links.layer_to_mem_op(layer_op)
        for level, energy in zip(hierarchy.get_memory_levels(mem_op), energies, strict=False):
            per_level[level.name] += float(energy)
        per_operand[str(layer_op)] = float(sum(energies))
    for level_name in level_names:
        row[f"energy_{level_name}_pj"] = per_level[level_name]
    for op in ("W", "I", "O"):
        row[f"energy_{op}_pj"] = per_operand.get(op, 0.0)
    dram_pj_bit = float(core["offchip"]["energy_pj_per_bit"])
    row["dram_traffic_bytes"] = per_level["dram"] / dram_pj_bit / 8 if dram_pj_bit > 0 else math.nan
    row["spatial_mapping"] = _spatial_mapping_str(cme)
    row["temporal_mapping"] = _temporal_mapping_str(cme)
    row["zigzag_seconds"] = seconds
    return row


def _check_spatial(name: str, cme: Any, core: Mapping[str, Any]) -> None:
    """Warn when ZigZag unrolled less than ``pe_array`` for a reason other than a small layer dimension.

    ZigZag lowers a requested unrolling to the layer size (expected) and, silently apart from its own log, to what the
    bandwidth of the innermost memory can multicast (``bandwidth_max // precision`` per array axis) or its capacity.

    Args:
        name: Layer name.
        cme: The ``CostModelEvaluation``.
        core: The hardware description.
    """
    sizes = {str(dim): int(size) for dim, size in cme.layer.layer_dim_sizes.items()}
    used: dict[str, float] = {}
    for single in cme.layer.spatial_mapping.values():
        for dim, size in single.items():
            used[str(dim)] = float(size)
    for dim, size in core["pe_array"].items():
        expected = min(int(size), sizes[dim]) if dim in sizes else 1
        got = used.get(dim, 1.0)
        if not math.isclose(got, expected):
            logger.warning(
                "%s: ZigZag unrolled %s by %g instead of %d (limited by the innermost memory's bandwidth or size)",
                name,
                dim,
                got,
                expected,
            )


def run_zigzag(
    layers: pd.DataFrame,
    core: dict[str, Any],
    *,
    workdir: pathlib.Path,
    optimise: str = "latency",
    lpf_limit: int = 6,
    skip_errors: bool = False,
    zigzag_log_level: int = logging.ERROR,
) -> pd.DataFrame:
    """Evaluate every layer with ZigZag on ``core`` and return per-layer latency and energy.

    Each layer is a separate ``zigzag.api.get_hardware_performance_zigzag`` call (its own workload YAML and dump folder
    under ``workdir``), so rows are independent and ``zigzag_seconds`` is the time of that layer alone.

    Args:
        layers: One row per layer with columns ``name`` (str), ``kind`` (``"conv"`` or ``"gemm"``), ``B K C OY OX FY
            FX G`` (ints, ZigZag naming; a GEMM (M x C)(C x N) is B=1, OY=M, OX=1, K=N, FY=FX=1), ``IY IX`` (input
            extent as stored in memory, derived as ``stride*(O-1)+F-2*padding`` when missing/NaN), ``stride`` and
            ``padding`` (per side, informational for ZigZag). ``G`` must be 1.
        core: Hardware, e.g. :data:`EXAMPLE_CORE`: ``pe_array`` (layer dim -> unrolling, one array axis each, at most
            4), ``mac_energy_pj``, ``word_bits`` (precision of W, I, partial and final O; optional ``precision`` dict
            overrides per operand), ``levels`` (innermost first, each shared by the whole array: ``name``,
            ``size_bytes``, ``operands`` (subset of W, I, O), ``read_bw_bytes_per_cycle``, ``write_bw_bytes_per_cycle``
            (default: read), ``read_energy_pj_per_bit``, ``write_energy_pj_per_bit`` (default: read), and optionally
            ``per_pe: True`` for a level replicated in every PE (size and bandwidths then per PE), and
            ``shared_ports: True`` for one read and one write port shared by its operands instead of a pair per
            operand (see the module docstring)) and ``offchip``
            (``bandwidth_bytes_per_cycle``, ``energy_pj_per_bit``, optional ``write_energy_pj_per_bit``): a DRAM on top
            holding W, I and O with unbounded size.
        workdir: Folder for the generated YAML files and ZigZag's outputs (created if needed).
        optimise: What LOMA's search minimises: ``"latency"``, ``"energy"`` (or ``"EDP"``).
        lpf_limit: LOMA's loop-prime-factor limit; the number of loop orders tried grows as its factorial (6: <= 720).
        skip_errors: If true, a layer ZigZag cannot map (e.g. no temporal mapping fits) gets NaN results and its
            error in column ``error`` instead of raising.
        zigzag_log_level: Level of ZigZag's own logger during the calls.

    Returns:
        One row per input layer, in input order: ``name, latency_cycles, energy_pj, mac_energy_pj, memory_energy_pj,
        spatial_utilization`` and ``macs, ideal_cycles, temporal_cycles, stall_cycles, onloading_cycles,
        offloading_cycles, mac_utilization, energy_<level>_pj`` (each level and ``dram``), ``energy_W_pj,
        energy_I_pj, energy_O_pj, dram_traffic_bytes, spatial_mapping, temporal_mapping, zigzag_seconds, error``.
        Cycles are ZigZag's ``latency_total2`` = temporal cycles + stalls + on-loading + off-loading.

    Raises:
        ValueError: On a bad ``optimise``, core or layer.
    """
    if optimise not in OPTIMISE_CHOICES:
        raise ValueError(f"optimise must be one of {OPTIMISE_CHOICES}, got {optimise!r}")
    workdir = pathlib.Path(workdir)
    acc_path, map_path = _prepare(core, workdir)
    precision = _precisions(core)
    rows: list[dict[str, Any]] = []
    for position, layer in enumerate(layers.to_dict("records")):
        entry = workload_entry(layer, position, precision)
        layer_dir = workdir / entry["name"]
        try:
            cme, seconds = _evaluate(
                entry, acc_path, map_path, layer_dir, optimise=optimise, lpf_limit=lpf_limit, zigzag_log_level=zigzag_log_level
            )
        except Exception as error:
            if not skip_errors:
                raise
            logger.warning("%s: ZigZag failed: %r", layer["name"], error)
            rows.append({"name": layer["name"], "error": repr(error)})
            continue
        _check_spatial(str(layer["name"]), cme, core)
        row = _row(str(layer["name"]), cme, seconds, core)
        row["error"] = ""
        rows.append(row)
        logger.debug("%s: %.0f cycles, %.4g pJ in %.2f s", layer["name"], row["latency_cycles"], row["energy_pj"], seconds)
    table = pd.DataFrame(rows)
    # Failed rows (skip_errors) have only name and error: keep the main columns present even if every layer failed.
    return table.reindex(columns=list(dict.fromkeys([*MAIN_COLUMNS, *table.columns])))


def time_one_layer(
    layer_row: Mapping[str, Any] | pd.Series,
    core: dict[str, Any],
    *,
    workdir: pathlib.Path,
    optimise: str = "latency",
    lpf_limit: int = 6,
) -> float:
    """Wall seconds of one ZigZag evaluation (API call incl. parsing, LOMA search and its dumps) of one layer.

    ZigZag is imported before the clock starts, so the import (about 1-2 s) is not counted.

    Args:
        layer_row: One layer (a row as described in :func:`run_zigzag`).
        core: The hardware description.
        workdir: Folder for the generated files.
        optimise: ``"latency"`` or ``"energy"``.
        lpf_limit: LOMA's loop-prime-factor limit.

    Returns:
        Seconds.
    """
    _api()
    workdir = pathlib.Path(workdir)
    acc_path, map_path = _prepare(core, workdir)
    entry = workload_entry(dict(layer_row), 0, _precisions(core))
    _, seconds = _evaluate(
        entry,
        acc_path,
        map_path,
        workdir / entry["name"],
        optimise=optimise,
        lpf_limit=lpf_limit,
        zigzag_log_level=logging.ERROR,
    )
    return seconds


# --------------------------------------------------------------------------------------------------------------------
# Demo
# --------------------------------------------------------------------------------------------------------------------


def resnet18_demo_layers() -> pd.DataFrame:
    """Two ResNet-18 layers (ImageNet, batch 1): the 7x7/2 stem (unpadded 224x224 input) and a 3x3 conv of stage 1.

    Returns:
        The layer table.
    """
    base = {"B": 1, "G": 1}
    return pd.DataFrame(
        [
            {"name": "conv1", "kind": "conv", **base, "K": 64, "C": 3, "OY": 112, "OX": 112, "FY": 7, "FX": 7,
             "IY": 224, "IX": 224, "stride": 2, "padding": 3},
            {"name": "layer1.0.conv1", "kind": "conv", **base, "K": 64, "C": 64, "OY": 56, "OX": 56, "FY": 3, "FX": 3,
             "IY": 56, "IX": 56, "stride": 1, "padding": 1},
        ]
    )  # fmt: skip


def main(argv: list[str] | None = None) -> pd.DataFrame:
    """Run the demo layers on :data:`EXAMPLE_CORE` and log a table.

    Args:
        argv: Command-line arguments (``--workdir``, ``--optimise``, ``--lpf-limit``).

    Returns:
        The result table.
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=pathlib.Path, default=None, help="output folder (default: a new temp folder)")
    parser.add_argument("--optimise", choices=OPTIMISE_CHOICES, default="latency")
    parser.add_argument("--lpf-limit", type=int, default=6)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    workdir = args.workdir or pathlib.Path(tempfile.mkdtemp(prefix="zigzag_side_"))
    start = time.perf_counter()
    result = run_zigzag(resnet18_demo_layers(), EXAMPLE_CORE, workdir=workdir, optimise=args.optimise, lpf_limit=args.lpf_limit)
    columns = ["name", "latency_cycles", "energy_pj", "mac_energy_pj", "memory_energy_pj", "spatial_utilization",
               "stall_cycles", "onloading_cycles", "offloading_cycles", "energy_dram_pj", "zigzag_seconds"]  # fmt: skip
    with pd.option_context("display.width", 250, "display.max_columns", 50):
        logger.info(
            "ZigZag on the example core (%s-optimal mappings), outputs in %s:\n%s", args.optimise, workdir, result[columns]
        )
        logger.info("spatial / temporal mappings:\n%s", result[["name", "spatial_mapping", "temporal_mapping"]].to_string())
    logger.info("total wall time %.1f s", time.perf_counter() - start)
    return result


if __name__ == "__main__":
    main()
