"""Cross-check of our cost model against ZigZag, networks x hardware, layer by layer.

Networks: ResNet-18 and MobileNetV2 (ImageNet, 224x224, batch 1: the shape-only ONNX files bundled with
zigzag-dse 3.9.1) and the GEMMs of one GPT-2 (124M) block at 1,024 tokens (QKV, one head's QK^T and AV
counted 12 times, the attention projection, the two MLP GEMMs). Hardware: every machine bundled with ZigZag
that imports (``importable``): ``tpu_like``, ``edge_tpu_like``, ``ascend_like``, ``eyeriss_like``,
``meta_prototype``, ``tesla_npu_like``, ``generic_array_cacti`` with their bundled mappings (``eyeriss_like`` and
``generic_array_cacti`` with ``default.yaml``), given to ZigZag as they are and to us through ``traincost
hardware import zigzag`` (``traincost.hardware.import_zigzag``); the GEMM core ``gemm_l1_l3``, whose bundled
mapping unrolls ZigZag's GEMM loops (D0, D1, D2), with the same unrolling in the networks' loops given to both
tools (``REMEDIES``: OY, K, C, in a mapping file written to ``bench/results`` that both read); the
in-memory-computing arrays ``aimc`` and ``dimc`` (128 x 128 macros; the import gives the core ZigZag's model of
in-memory computing, ``traincost.hardware.in_memory``), with their mapping ``default_imc.yaml`` as it is: it hints K
along D1 and C, FX or FY along D2, ZigZag picks per layer among its three candidates of highest utilisation, and the
import gives the D2 axis C with FX and FY as ``alternatives`` and both axes ``divisors: [2]`` (half of the macro:
ZigZag's next candidates), which our engine picks among per layer; and ``gemm_l1``, ``gemm_l1_l3``'s core without
``l3``: it has no DRAM, so ZigZag finds no loop order for a layer that does not fit its 512 KB ``l1``
(``NoValidLoopOrderingFoundException``), and those layers are counted (``unmapped``) but not judged. ZigZag's five
mixed mappings (``MIXED``, each with the machine it is for) are compared too, named by their files (the default
``--hardware`` takes both).

ZigZag parses each network itself (its Conv and Gemm layers; Add, ReLU and pooling are not costed) and searches
each layer's temporal mapping: LOMA (``--engine loma``, the default, at ``--lpf-limit``, 6 by default as in
ZigZag: every order of each loop's prime factors merged down to that many), SALSA (``--engine salsa``: ZigZag's
simulated annealing over the order of every loop's prime factors, 1,000 swaps from a shuffled start, run seeded
and in process, ``_salsa_stage``), or per layer and objective the cheaper of the two (``--engine best``). One
LOMA search serves every objective (``_best_per_objective_stage``); SALSA searches each objective apart.
``--zigzag-sizes exact`` runs ZigZag with the input of a fractional unrolling sized exactly instead of from its
floor (``_exact_tensor_dim``). Our side costs the same layers, with the dimensions, strides and input sizes ZigZag
parsed, on the imported core with the scheduler that ``traincost cost`` and the studies run (``ours``: loop order
chosen by the objective; tiles of any size, or with ``--tiling divisors`` each a divisor of its loop, as ZigZag's),
plus what ZigZag also counts: each layer's
inputs read from DRAM and written into the top memory, and its output read out of the top memory and written to
DRAM (the off-chip link's read and write energies per bit: ZigZag's DRAM ``r_cost``/``w_cost``). Our latency is
max(core latency, off-chip bytes / off-chip bandwidth), as the scheduler times an op.

``--protocol matched`` (the default) judges latency where both tools minimise latency and energy where both
minimise energy; ``--protocol latency``, ``energy`` or ``edp`` has both minimise that objective and judges both
metrics there.

Output: the per-layer table (``--out``, by default ``bench/results/zigzag_crosscheck.parquet``, not committed):
each layer's cycles and energy in both tools (per memory too), their ratios, what our engine chose
(``ours_mapping``, ``ours_reduction_levels``, ``ours_held_rows``, ``ours_spatial``, ...), ZigZag's temporal mapping
(``zigzag_temporal_mapping``) and, for a layer outside 1.3x on a metric it is judged on, its ``hint``: the measured
differences that point at the cause (off-chip bytes against each operand moved once, on-chip energy and the memory
that differs most, serial load and store, ZigZag's cycles against its own off-chip bytes over the link, cycles over
our compute cycles, a fractional unrolling ZigZag floors). It prints that table, the summary per pair (``summary``:
the median, worst layer and whole network of ours / ZigZag's, per metric) and the memories whose energy is outside
1.3x ZigZag's and holds at least 1 % of it (``memory_summary``).

Results: ``docs/zigzag_crosscheck.md``, written from the cached tables by ``bench/crosscheck/zigzag_page.py`` (which costs our
side again, in seconds), has the ratios per machine and network against LOMA, against ``best`` and with ZigZag given
our engine's loop order (``bench/crosscheck/zigzag_in_order.py``), the layers and memories outside 1.3x, and what differs
between the two tools and why, found by comparing ZigZag's per-level accesses (``cme.memory_word_access``, its
energy per memory) with ours one layer at a time.

ZigZag's per-layer results are cached in ``bench/results/zigzag_<network>_<hardware>_<search>_<opt>.parquet``
(``<search>``: ``lpf6``, ``salsa``, ``lpf6-exact``; one file per objective, all of a search's objectives written by
it; delete them to re-run ZigZag), so re-running our side after a change to the engine takes seconds. ZigZag's side
takes, per network x hardware, on this project's 2-core machine (``zigzag_cpu_seconds`` in each table; measured
under ``nice`` beside other jobs, 6 December 2026): LOMA at lpf 6, one search for every objective, 37-51 s of CPU on
ResNet-18 on the digital machines (13 on ``gemm_l1``, 3 minutes on ``aimc`` and ``dimc``), 6-12 s on the GPT-2 block
(26 on the in-memory arrays) and 1.5-2 minutes on MobileNetV2 (45 s on ``gemm_l1``, 5 minutes on the in-memory
arrays); SALSA, per objective, 40-105 s on the GPT-2 block (2.5 minutes on the in-memory arrays) and about 2 minutes
on ResNet-18 on ``tpu_like`` (earlier runs: 3-10 minutes on the other machines' ResNet-18, 17-45 on the in-memory
arrays', 3-30 on MobileNetV2).

Install (a venv of its own; the project first, then ZigZag: ``bench/crosscheck/requirements-zigzag.txt``)::

    python3 -m venv bench/.venv-zigzag
    bench/.venv-zigzag/bin/pip install -e .
    bench/.venv-zigzag/bin/pip install -r bench/crosscheck/requirements-zigzag.txt
    bench/.venv-zigzag/bin/python bench/crosscheck/zigzag_crosscheck.py --networks resnet18 --hardware tpu_like
    # ZigZag's better search, our engine in ZigZag's mapping space
    bench/.venv-zigzag/bin/python bench/crosscheck/zigzag_crosscheck.py --engine best --tiling divisors
    # the page, from the cached tables (the project's own venv is enough)
    .venv/bin/python bench/crosscheck/zigzag_page.py

Measured on this project's 2-core machine, from a fresh venv, the first three commands above up to the run: 30 min
41 s wall, 1 min 56 s of user CPU, with the machine's load average at about 20 (other jobs); an earlier fresh install
of the same packages at a load near 10 took 8 min 27 s wall, 1 min 42 s user. ``pip check`` is clean; pip keeps the
project's protobuf 6.33.6, ortools 9.15.6755 and onnx 1.23.2.
"""

from __future__ import annotations

import argparse
import logging
import math
import random
import re
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import nullcontext
from dataclasses import replace
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np
import pandas as pd
import yaml

from traincost.cost import op_table
from traincost.hardware import HardwareError, HardwareSpec, load_hardware
from traincost.hardware.import_zigzag import bundled_mapping, hardware_yaml_text, parse_unroll, zigzag_hardware
from traincost.hardware.spec import TILINGS, Core
from traincost.schedule import SchedulePlan, schedule
from traincost.schedule.scheduler import OpCosts
from traincost.workload import LOOP_DIMS, Workload

sys.path.insert(0, str(Path(__file__).parent))
from zigzag_side import _quiet_zigzag, _temporal_mapping_str, workload_entry  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "bench/results"
FIXTURES = REPO / "tests/fixtures/hardware/zigzag"
NETWORKS = ("resnet18", "mobilenetv2", "gpt2_block")
HARDWARE = (
    *("tpu_like", "edge_tpu_like", "ascend_like", "eyeriss_like", "meta_prototype", "tesla_npu_like", "generic_array_cacti"),
    *("gemm_l1_l3", "gemm_l1"),
    *("aimc", "dimc"),
)
# ZigZag's bundled mixed mappings, each named by its file and compared on the hardware it is for: several loops on one
# array dimension (tpu_like's C 2 x FX 3 x FY 3 on D2), or a dimension left to a hint (meta_prototype's D2,
# tesla_npu_like's D3, which ZigZag fills per layer; ``traincost.hardware.import_zigzag._filled``)
MIXED = {
    "tpu_like_mixed": "tpu_like",
    "edge_tpu_like_mixed": "edge_tpu_like",
    "ascend_like_mixed": "ascend_like",
    "meta_prototype_like_mixed": "meta_prototype",
    "tesla_npu_like_mixed": "tesla_npu_like",
}
# the remedy for the GEMM cores, whose bundled mappings unroll ZigZag's GEMM loops (O[D0][D2] += I[D0][D1] W[D1][D2]):
# the same unrolling in the networks' loops (rows D0 -> OY, reduction D1 -> C, outputs D2 -> K), given to both tools
REMEDIES = {"gemm_l1": "D1=OY,D2=K,D3=C", "gemm_l1_l3": "D1=OY,D2=K,D3=C"}
# ZigZag's ONNX reader: 8-bit inputs, weights and final outputs, partial sums in twice the input bits
ZIGZAG_PRECISION = {"W": 8, "I": 8, "O": 16, "O_final": 8}
# one GPT-2 (124M) block at 1,024 tokens: (name, M, C (reduction), K (outputs), times)
GPT2_BLOCK = (
    ("qkv", 1024, 768, 2304, 1),
    ("attn_qk_per_head", 1024, 64, 1024, 12),
    ("attn_av_per_head", 1024, 1024, 64, 12),
    ("attn_proj", 1024, 768, 768, 1),
    ("mlp_fc", 1024, 768, 3072, 1),
    ("mlp_proj", 1024, 3072, 768, 1),
)
# our objective -> ZigZag's ``opt``
ZIGZAG_OPT = {"latency": "latency", "energy": "energy", "edp": "EDP"}
# the objectives ZigZag's SALSA minimises
SALSA_OPT = ("latency", "energy")
# --engine -> the ZigZag searches whose better evaluation of each layer is compared, given LOMA's lpf limit
ENGINES = {"loma": lambda lpf: [f"lpf{lpf}"], "salsa": lambda lpf: ["salsa"], "best": lambda lpf: [f"lpf{lpf}", "salsa"]}
# --zigzag-sizes -> the suffix of a search's name: ZigZag as shipped, or with a fractional unrolling's input sized
# exactly (``_exact_tensor_dim``)
SIZES = {"shipped": "", "exact": "-exact"}
# per protocol, the objective both tools optimise when a metric is compared
PROTOCOLS = {
    "matched": {"latency": "latency", "energy": "energy"},
    **{objective: {"latency": objective, "energy": objective} for objective in ZIGZAG_OPT},
}
# the records of the loop order our engine took that the table keeps (the scheduler's per-op columns)
_RECORDS = ("reduction_levels", "held_rows", "held_columns", "reduction_chunk", "widened_columns")
_RELATION = re.compile(r"I([XY])\s*=\s*(\d+)\s*\*\s*O[XY]\s*\+\s*(\d+)\s*\*\s*F[XY]")


def zigzag_inputs() -> Path:
    """ZigZag's bundled ``inputs`` folder (hardware, mapping, workload); without ZigZag installed, the copies of its
    hardware and mapping files in ``tests/fixtures/hardware/zigzag`` (enough to re-run our side on cached layers)."""
    try:
        import zigzag  # noqa: PLC0415
    except ImportError:
        return FIXTURES
    return Path(zigzag.__file__).parent / "inputs"


def _workload(network: str, inputs: Path) -> str | list[dict[str, Any]]:
    if network == "gpt2_block":
        layers = [
            {"name": name, "kind": "gemm", "B": 1, "K": k, "C": c, "OY": m, "OX": 1, "FY": 1, "FX": 1, "G": 1}
            for name, m, c, k, _ in GPT2_BLOCK
        ]
        return [workload_entry(layer, i, ZIGZAG_PRECISION) for i, layer in enumerate(layers)]
    return str(inputs / f"workload/{network}.onnx")


# ZigZag's numbers for a layer (NaN where it finds no loop order)
_RESULTS = ("zigzag_cycles", "zigzag_pj", "zigzag_dram_pj", "zigzag_dram_bytes", "zigzag_onloading_cycles")
_RESULTS += ("zigzag_offloading_cycles", "zigzag_spatial_utilization")


def _layer_row(layer: Any, cme: Any | None, times: int) -> dict[str, Any]:
    """One ZigZag layer: its name, dimensions in our loop names, window geometry and ZigZag's results (NaN where
    ``cme`` is None: ZigZag found no loop order that fits the layer in the memories)."""
    sizes = {str(dim): int(size) for dim, size in layer.layer_dim_sizes.items()}
    if "D" in sizes:  # ZigZag's Gemm: O[d][k] += I[d][c] * W[c][k]
        sizes["OY"] = sizes.pop("D")
    dims = {dim: sizes.get(dim, 1) for dim in LOOP_DIMS}
    window = {"stride_y": 1, "stride_x": 1, "dilation_y": 1, "dilation_x": 1}
    for relation in layer.dimension_relations:
        match = _RELATION.search(str(relation))
        if match:
            axis = match.group(1).lower()
            window |= {f"stride_{axis}": int(match.group(2)), f"dilation_{axis}": int(match.group(3))}
    extent = {str(dim): int(size) for dim, size in (layer.pr_layer_dim_sizes or {}).items()}
    shape = {
        "layer": str(layer.name).removeprefix("/").replace("/Conv", "").replace("/Gemm", ""),
        "kind": "conv" if str(layer.type) == "Conv" else "gemm",
        **dims,
        **window,
        "IY": extent.get("IY", dims["OY"]),
        "IX": extent.get("IX", dims["OX"]),
        "times": times,
        "macs": int(layer.total_mac_count),
    }
    if cme is None:
        return shape | dict.fromkeys(_RESULTS, np.nan) | {"zigzag_temporal_mapping": ""}
    zz = cme.accelerator.memory_hierarchy
    per_memory: dict[str, float] = {}
    dram_bytes = 0.0
    for layer_op, energies in cme.mem_energy_breakdown.items():
        mem_op = cme.memory_operand_links.layer_to_mem_op(layer_op)
        levels = zz.get_memory_levels(mem_op)
        for level, energy, accesses in zip(levels, energies, cme.memory_word_access[layer_op], strict=False):
            per_memory[level.name] = per_memory.get(level.name, 0.0) + float(energy)
            if level.name == "dram":  # accesses of the port's full width (ZigZag charges whole ones)
                dram_bytes += sum(n * level.get_max_bandwidth(mem_op, way) / 8 for way, n in accesses.data.items() if n)
    return shape | {
        "zigzag_cycles": float(cme.latency_total2),
        "zigzag_pj": float(cme.energy_total),
        "zigzag_dram_pj": per_memory.pop("dram", 0.0),
        "zigzag_dram_bytes": dram_bytes,
        "zigzag_onloading_cycles": float(cme.data_onloading_cycle),
        "zigzag_offloading_cycles": float(cme.data_offloading_cycle),
        "zigzag_spatial_utilization": float(cme.mac_spatial_utilization),
        "zigzag_temporal_mapping": _temporal_mapping_str(cme),
        **{f"zigzag_pj_{name}": pj for name, pj in per_memory.items()},
    }


def _best_per_objective_stage(*, per_layer: bool) -> type:
    """A ZigZag reduce stage that keeps, of the evaluations below it, the best by each of ZigZag's objectives (with
    the tie-breaks of its ``MinimalLatencyStage``, ``MinimalEnergyStage`` and ``MinimalEDPStage``: a later mapping
    replaces the best only if strictly better), and yields them in the order of ``ZIGZAG_OPT``. One search then
    serves every objective: the three stages would each evaluate the same mappings.

    A spatial mapping for which LOMA finds no loop order that fits (``NoValidLoopOrderingFoundException``: on a
    machine without DRAM, a layer larger than its top memory) adds nothing; the stage ``per_layer`` (above the
    spatial mappings) yields ``(None, None)`` for each objective where no spatial mapping had one."""
    from zigzag.opt.loma.engine import NoValidLoopOrderingFoundException  # noqa: PLC0415
    from zigzag.stages.stage import Stage  # noqa: PLC0415

    keys = {
        "latency": lambda cme: (cme.latency_total2, cme.energy_total),
        "energy": lambda cme: (cme.energy_total, cme.latency_total2),
        "EDP": lambda cme: (cme.latency_total2 * cme.energy_total,),
    }

    class BestPerObjectiveStage(Stage):
        def run(self) -> Iterator[tuple[Any, Any]]:
            substage = self.list_of_callables[0](self.list_of_callables[1:], **self.kwargs)
            best: dict[str, tuple[Any, Any]] = {}
            try:
                for cme, extra_info in substage.run():
                    for opt, key in keys.items():
                        if opt not in best or key(cme) < key(best[opt][0]):
                            best[opt] = (cme, extra_info)
            except NoValidLoopOrderingFoundException:
                pass
            if best or per_layer:
                for opt in ZIGZAG_OPT.values():
                    yield best.get(opt, (None, None))

    return BestPerObjectiveStage


def _salsa_stage() -> type:
    """ZigZag's ``SalsaStage`` run in this process, seeded: SALSA (simulated annealing over the order of every loop's
    prime factors, each order allocated to the memories as LOMA allocates one) for one layer and spatial mapping,
    ``salsa_iteration_number`` swaps (ZigZag's 1,000) from a shuffled start, minimising ``salsa_opt_criterion``.
    ZigZag's own stage anneals in a forked process that leaves a random state of its own and, should an order not
    fit the memories, never answers; here the random generators start from 0 for every layer (the same layers give
    the same orders) and an order that does not fit ends the layer's search with nothing
    (``NoValidLoopOrderingFoundException``, as LOMA's; on a machine without DRAM, a layer larger than its top memory).
    SALSA evaluates each order with ZigZag's cost model for digital arrays, which refuses an in-memory-computing one;
    here it takes the model ZigZag's ``CostModelStage`` takes for the array (``CostModelEvaluationForIMC``)."""
    from zigzag.cost_model.cost_model_imc import CostModelEvaluationForIMC  # noqa: PLC0415
    from zigzag.hardware.architecture.imc_array import ImcArray  # noqa: PLC0415
    from zigzag.opt.loma.engine import NoValidLoopOrderingFoundException  # noqa: PLC0415
    from zigzag.opt.loma.memory_allocator import MemoryHierarchyTooSmallException, MemoryTooSmallException  # noqa: PLC0415
    from zigzag.opt.salsa import state  # noqa: PLC0415
    from zigzag.opt.salsa.engine import SalsaEngine  # noqa: PLC0415
    from zigzag.stages.mapping.salsa import SalsaStage  # noqa: PLC0415

    class SeededSalsaStage(SalsaStage):
        def run(self) -> Iterator[tuple[Any, Any]]:
            engine = SalsaEngine(
                accelerator=self.accelerator,
                layer=self.layer,
                spatial_mapping=self.spatial_mapping,
                mapping_type=self.mapping_type,
                **self.kwargs,
            )
            found: list[Any] = []
            random.seed(0)
            np.random.seed(0)
            imc = isinstance(self.accelerator.operational_array, ImcArray)
            model = CostModelEvaluationForIMC if imc else state.CostModelEvaluation
            try:
                with mock.patch.object(state, "CostModelEvaluation", model):
                    engine.run(type("Answer", (), {"put": staticmethod(found.append)}))
            except (MemoryTooSmallException, MemoryHierarchyTooSmallException) as error:
                raise NoValidLoopOrderingFoundException(str(error)) from None
            self.compare_stage(found[0])
            kwargs = self.kwargs | {"accelerator": self.accelerator, "layer": self.layer}
            kwargs |= {"spatial_mapping": self.spatial_mapping, "temporal_mapping": self.best_cme.mapping.temporal_mapping}
            sub_stage = self.list_of_callables[0](self.list_of_callables[1:], **kwargs)
            for cme, extra_info in sub_stage.run():
                yield cme, (self.best_cme.mapping.temporal_mapping, extra_info)

    return SeededSalsaStage


def _run_zigzag_stages(
    workload: str | list[dict[str, Any]], hardware: str, mapping: Path, search: str = "lpf6", criterion: str = "energy"
) -> list[Any]:
    """ZigZag's best evaluations of each layer of ``workload`` (an ONNX file or workload entries) on its bundled
    ``hardware`` with ``mapping``, one per objective of ``ZIGZAG_OPT`` in turn: the stages of
    ``zigzag.api.get_hardware_performance_zigzag`` with its options (uneven mappings, the mapping's spatial
    unrolling), its two reduce stages replaced by ``_best_per_objective_stage``. The temporal mapping is ``search``'s:
    ``lpfN``, LOMA (every order of the loops' prime factors, merged down to N), or ``salsa``, ZigZag's other engine
    (``_salsa_stage``), which minimises ``criterion`` (latency or energy) alone. A layer whose mapping entry gives a
    complete ``temporal_ordering`` is evaluated in that order (LOMA does not search it)."""
    from zigzag.mapping.temporal_mapping import TemporalMappingType  # noqa: PLC0415
    from zigzag.stages.evaluation.cost_model_evaluation import CostModelStage  # noqa: PLC0415
    from zigzag.stages.main import MainStage  # noqa: PLC0415
    from zigzag.stages.mapping.spatial_mapping_generation import SpatialMappingGeneratorStage  # noqa: PLC0415
    from zigzag.stages.mapping.temporal_mapping_generator_stage import TemporalMappingGeneratorStage  # noqa: PLC0415
    from zigzag.stages.parser.accelerator_parser import AcceleratorParserStage  # noqa: PLC0415
    from zigzag.stages.parser.onnx_model_parser import ONNXModelParserStage  # noqa: PLC0415
    from zigzag.stages.parser.workload_parser import WorkloadParserStage  # noqa: PLC0415
    from zigzag.stages.workload_iterator import WorkloadStage  # noqa: PLC0415

    stages = [
        ONNXModelParserStage if isinstance(workload, str) else WorkloadParserStage,
        AcceleratorParserStage,
        WorkloadStage,
        _best_per_objective_stage(per_layer=True),
        SpatialMappingGeneratorStage,
        _best_per_objective_stage(per_layer=False),
        _salsa_stage() if _engine(search) == "salsa" else TemporalMappingGeneratorStage,
        CostModelStage,
    ]
    exact = search.endswith(SIZES["exact"])
    sized = mock.patch.object(_layer_node(), "calc_tensor_dim", _exact_tensor_dim) if exact else nullcontext()
    with tempfile.TemporaryDirectory() as tmp, _quiet_zigzag(logging.ERROR), sized:
        return MainStage(
            stages,
            accelerator=str(hardware_file(hardware)),
            workload=workload,
            mapping=str(mapping),
            dump_folder=tmp,
            loma_lpf_limit=_lpf_limit(search),
            loma_show_progress_bar=False,
            salsa_opt_criterion=criterion,
            nb_mappings_generated=3,
            enable_mix_spatial_mapping_generation=False,
            access_same_data_considered_as_no_access=True,
            temporal_mapping_type=TemporalMappingType("uneven"),
        ).run()


def _lpf_limit(search: str) -> int:
    """LOMA's loop-prime-factor limit in a ``search`` name: ``lpf6`` -> 6 (SALSA, which takes every prime factor,
    reads none)."""
    match = re.fullmatch(r"lpf(\d+)|salsa", _engine(search))
    if match is None:
        raise ValueError(f"search {search!r}: expected lpfN (LOMA) or salsa, each optionally with {SIZES['exact']}")
    return int(match.group(1) or 6)


def _engine(search: str) -> str:
    """The search a ``search`` name runs, without its sizes: ``lpf6-exact`` -> ``lpf6``."""
    return search.removesuffix(SIZES["exact"])


def _layer_node() -> type:
    from zigzag.workload.layer_node import LayerNode  # noqa: PLC0415

    return LayerNode


def _exact_tensor_dim(layer: Any, dim: Any, layer_dim_sizes: Any) -> Any:
    """ZigZag's ``LayerNode.calc_tensor_dim`` without its ``int`` of the loops an input dimension depends on (its
    comment: "TODO this int conversion is suspicious"). ZigZag unrolls a loop a PE axis does not divide as a fraction
    (14 output columns on 4 PEs: 3.5 a step, four steps) and, as shipped, sizes a tile's input from the floor of it:
    3 columns where the step reads 3.5 on average, 6/7 of the input, so that its memory allocator, weighing the
    accesses a loop saves against the tile it grows, keeps that loop above the memory (``--zigzag-sizes exact``,
    ``bench/results/zigzag_*_lpf6-exact_*.parquet``)."""
    if dim in layer_dim_sizes:
        return layer_dim_sizes[dim]
    if dim not in layer.pr_loop:
        if dim not in layer.layer_dim_sizes:
            raise ValueError(f"{dim}: a dimension of no loop of layer {layer.name}")
        return 1  # a dimension of the layer the tile does not loop over
    (sa, sb) = (factor for _, factor in layer.pr_scaling_factors[dim])
    a, b = (layer_dim_sizes[related] for related in layer.pr_loop[dim])
    return min(layer.pr_layer_dim_sizes[dim], layer.calc_pr_dimension_size(sa=sa, a=a, sb=sb, b=b))


def _search(network: str, hardware: str, search: str, opt: str) -> dict[str, list[tuple[Any, Any]]]:
    """ZigZag's best evaluation of each layer for each objective one search serves, ``opt`` among them: (layer,
    evaluation) pairs, the evaluation None where ZigZag finds no loop order for the layer. LOMA's one search
    serves every objective of ``ZIGZAG_OPT``; SALSA's, ``opt`` alone."""
    workload, mapping = _workload(network, zigzag_inputs()), zigzag_mapping(hardware)
    answers = _run_zigzag_stages(workload, hardware, mapping, search, criterion=opt)
    opts = list(ZIGZAG_OPT.values())
    served = [opt] if _engine(search) == "salsa" else opts
    return {each: [(layer, cme) for cme, (layer, _) in answers[opts.index(each) :: len(opts)]] for each in served}


def zigzag_in_order(hardware: str, layer: str, ordering: str, network: str = "gpt2_block") -> dict[str, Any]:
    """ZigZag's cost of one layer on ``hardware`` in one fixed temporal ordering, its loops innermost first as ZigZag's
    mapping files give them (``"C32 OY2 OY128 C24 K72"``), with the bundled mapping's spatial unrolling: ZigZag's own
    cost model on a loop order of our engine's, where its search did not reach it. ``layer`` is a ``GPT2_BLOCK`` name,
    or, for another of ``NETWORKS``, a layer of it as the cross-check names it (its dimensions from ZigZag's table of
    that network on ``hardware``, cached or searched). A row like ``run_zigzag``'s.

    Raises:
        ValueError: an unknown network or layer, an ordering that is not dimension-size pairs, or one
            ZigZag cannot place in the memories.
    """
    from zigzag.opt.loma.memory_allocator import MemoryTooSmallException  # noqa: PLC0415

    loops = [re.fullmatch(r"([A-Z]+)(\d+)", token) for token in ordering.split()]
    if not loops or None in loops:
        raise ValueError(f"ordering {ordering!r}: expected loops like 'C32 OY2 K72', innermost first")
    entry = workload_entry(_layer_shape(network, hardware, layer), 0, ZIGZAG_PRECISION)
    mapping = yaml.safe_load(zigzag_mapping(hardware).read_text())
    default = next(item for item in mapping if item["name"] == "default")
    fixed = default | {"name": entry["name"], "temporal_ordering": [[x.group(1), int(x.group(2))] for x in loops]}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "mapping.yaml"
        path.write_text(yaml.safe_dump([*mapping, fixed], sort_keys=False))
        try:
            cme, (found, _) = _run_zigzag_stages([entry], hardware, path)[0]
        except MemoryTooSmallException as error:
            raise ValueError(f"ordering {ordering!r}: ZigZag cannot place it in {hardware}'s memories ({error})") from None
    if cme is None:
        raise ValueError(f"ordering {ordering!r}: ZigZag finds it does not fit {hardware}'s memories")
    return _layer_row(found, cme, 1)


def _layer_shape(network: str, hardware: str, layer: str) -> dict[str, Any]:
    """One layer's shape as ``workload_entry`` takes it: a GPT-2 block GEMM, or a layer of ZigZag's table of
    ``network`` on ``hardware`` (its padding from its input extent)."""
    if network == "gpt2_block":
        rows = {name: (m, c, k) for name, m, c, k, _ in GPT2_BLOCK}
        if layer not in rows:
            raise ValueError(f"layer {layer!r}: expected one of {sorted(rows)}")
        m, c, k = rows[layer]
        return {"name": layer, "kind": "gemm", "B": 1, "K": k, "C": c, "OY": m, "OX": 1, "G": 1}
    if network not in NETWORKS:
        raise ValueError(f"network {network!r}: expected one of {NETWORKS}")
    table = run_zigzag(network, hardware, "lpf6", ZIGZAG_OPT["energy"]).set_index("layer")
    if layer not in table.index:
        raise ValueError(f"layer {layer!r} of {network}: expected one of {sorted(table.index)}")
    row = table.loc[layer]
    stride = int(row.stride_y)
    padding = ((int(row.OY) - 1) * stride + int(row.FY) - int(row.IY)) // 2
    shape = {dim: int(row[dim]) for dim in ("B", "K", "C", "OY", "OX", "FY", "FX", "G", "IY", "IX")}
    return {"name": layer, "kind": row.kind, **shape, "stride": stride, "padding": max(padding, 0)}


def cache_path(network: str, hardware: str, search: str, opt: str, *, results: Path | None = None) -> Path:
    """Where ZigZag's table of one search at one objective is cached: in ``results`` (default ``RESULTS``)."""
    return (RESULTS if results is None else results) / f"zigzag_{network}_{hardware}_{search}_{opt}.parquet"


def run_zigzag(network: str, hardware: str, search: str, opt: str) -> pd.DataFrame:
    """ZigZag's per-layer results for one pair at objective ``opt`` (its name: latency, energy or EDP), its temporal
    mappings from ``search`` (``lpfN``: LOMA; ``salsa``: latency or energy only). Cached under bench/results, one
    file per objective, all of a search's objectives written by it (LOMA's three, SALSA's one)."""
    if _engine(search) == "salsa" and opt not in SALSA_OPT:
        raise ValueError(f"ZigZag's SALSA minimises {' or '.join(SALSA_OPT)}, not {opt}")
    if cache_path(network, hardware, search, opt).is_file():
        return pd.read_parquet(cache_path(network, hardware, search, opt)).assign(zigzag_search=search)
    start, cpu = time.perf_counter(), time.process_time()
    found = _search(network, hardware, search, opt)
    seconds = {"zigzag_seconds": time.perf_counter() - start, "zigzag_cpu_seconds": time.process_time() - cpu}
    times = {name: n for name, *_, n in GPT2_BLOCK}
    RESULTS.mkdir(parents=True, exist_ok=True)
    for objective, layers in found.items():
        rows = [
            _layer_row(layer, cme, times.get(re.sub(r"^L\d+_", "", str(layer.name)), 1))
            for layer, cme in layers
            if str(layer.type) in ("Conv", "Gemm", "MatMul")
        ]
        table = pd.DataFrame(rows).assign(network=network, hardware=hardware, **seconds)
        table.to_parquet(cache_path(network, hardware, search, objective))
    return pd.read_parquet(cache_path(network, hardware, search, opt)).assign(zigzag_search=search)


def importable() -> list[str]:
    """The bundled ZigZag hardware that ``traincost hardware import zigzag`` translates and loads with its bundled
    mapping, or with the unrolling of ``REMEDIES`` (the GEMM cores), and the ``MIXED`` mappings that do with their
    hardware."""
    accepted = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in [*sorted(path.stem for path in (zigzag_inputs() / "hardware").glob("*.yaml")), *MIXED]:
            try:
                imported(name, Path(tmp))  # translated and loaded, as the command line writes and checks it
            except HardwareError:
                continue
            accepted.append(name)
    return accepted


def hardware_file(hardware: str) -> Path:
    """ZigZag's bundled hardware file of ``hardware`` (a ``MIXED`` mapping's: the file it is for)."""
    return zigzag_inputs() / f"hardware/{MIXED.get(hardware, hardware)}.yaml"


def _given_mapping(hardware: str) -> Path | None:
    """The mapping the bench gives ``traincost hardware import zigzag`` (None: the bundled one it finds itself)."""
    return zigzag_mapping(hardware) if hardware in REMEDIES or hardware in MIXED else None


def zigzag_mapping(hardware: str) -> Path:
    """The mapping ZigZag bundles for ``hardware`` (``meta_prototype`` has ``meta_prototype_like.yaml``; a ``MIXED``
    name, that file), the one ``traincost hardware import zigzag`` reads too; for a GEMM core, its bundled mapping
    with the spatial unrolling of ``REMEDIES`` instead and no temporal ordering (written to ``bench/results``)."""
    if hardware in MIXED:
        return zigzag_inputs() / f"mapping/{hardware}.yaml"
    file = hardware_file(hardware)
    mapping = bundled_mapping(file, imc=bool(yaml.safe_load(file.read_text())["operational_array"].get("is_imc")))
    if mapping is None:
        sys.exit(f"no mapping bundled with ZigZag's {hardware}")
    if hardware not in REMEDIES:
        return mapping
    default = next(item for item in yaml.safe_load(mapping.read_text()) if item["name"] == "default")
    array = yaml.safe_load(file.read_text())["operational_array"]
    sizes = dict(zip(array["dimensions"], array["sizes"], strict=True))
    remedy = parse_unroll(REMEDIES[hardware]).items()
    spatial = {axis: [f"{dim}, {size or sizes[axis]}" for dim, size in loops] for axis, loops in remedy}
    entry = {"name": "default", "spatial_mapping": spatial, "memory_operand_links": default["memory_operand_links"]}
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"zigzag_mapping_{hardware}.yaml"
    path.write_text(yaml.safe_dump([entry], sort_keys=False))
    return path


def without_dram(hardware: str) -> bool:
    """Whether ZigZag's bundled ``hardware`` has no off-chip memory (its import marks the off-chip link as not in
    the file)."""
    return _translated(hardware)["offchip"]["source"].startswith("not in")


def imported(hardware: str, folder: Path) -> HardwareSpec:
    """ZigZag's bundled hardware through ``traincost hardware import zigzag``, loaded."""
    path = folder / f"{hardware}.yaml"
    path.write_text(
        hardware_yaml_text(_translated(hardware), header=f"ZigZag {hardware}, imported by bench/crosscheck/zigzag_crosscheck.py")
    )
    return load_hardware(path)


def _translated(hardware: str) -> dict[str, Any]:
    """``traincost hardware import zigzag``'s data for ``hardware``, its mapping read as ZigZag reads it."""
    return zigzag_hardware(hardware_file(hardware), mapping=_given_mapping(hardware))


def as_workload(layers: pd.DataFrame) -> Workload:
    """ZigZag's layers as independent ops of one Workload: each its own input, weight and output tensor."""
    ops, tensors = [], []
    for i, row in enumerate(layers.itertuples()):
        dims = {dim: int(getattr(row, dim)) for dim in LOOP_DIMS}
        shapes = {
            "input": [dims["B"], dims["C"] * dims["G"], int(row.IY), int(row.IX)],
            "weight": [dims["K"] * dims["G"], dims["C"], dims["FY"], dims["FX"]],
            "output": [dims["B"], dims["K"] * dims["G"], dims["OY"], dims["OX"]],
        }
        ids = {kind: 3 * i + j for j, kind in enumerate(shapes)}
        ops.append(
            {"op": i, "name": row.layer, "op_type": "Conv" if row.kind == "conv" else "Gemm", "kind": row.kind}
            | {"phase": "forward", "layer": row.layer}
            | dims
            | {key: int(getattr(row, key)) for key in ("stride_y", "stride_x", "dilation_y", "dilation_x")}
            | {"macs": int(row.macs), "elementwise_ops": 0, "inputs": [ids["input"], ids["weight"]], "outputs": [ids["output"]]}
        )
        for kind, shape in shapes.items():
            tensors.append(
                {
                    "tensor": ids[kind],
                    "name": f"{row.layer}.{kind}",
                    "kind": kind,
                    "shape": shape,
                    "bytes": int(np.prod(shape)),
                    "producer": i if kind == "output" else -1,
                    "consumers": [] if kind == "output" else [i],
                }
            )
    frame = pd.DataFrame(tensors).assign(dtype_bytes=1, saved_for_backward=False, updates=-1)
    return Workload(ops=pd.DataFrame(ops), tensors=frame, meta={"model": "zigzag_layers"})


def ours(
    layers: pd.DataFrame, hw: HardwareSpec, objective: str, *, without_dram: bool = False, tiling: str = "any"
) -> pd.DataFrame:
    """Our latency and energy per layer, from the scheduler that ``traincost cost`` and the studies run
    (``traincost.schedule.schedule``): the layers as independent ops (``as_workload``) one at a time, every tensor
    from and to off-chip memory (resident fraction 0), each operand read off chip and written into the outermost
    memory of the core that keeps it and the output read out of its own and written off chip, as ZigZag charges it;
    the loop order at the top memory chosen by ``objective``. On a machine ``without_dram`` (ZigZag's ``gemm_l1``
    and ``gemm_l1_l3``: its top memory is where every layer starts and ends, and the import's off-chip link is free)
    ZigZag charges no layer's operands for entering or leaving the core, nor do we: the energy is what the scheduler
    charges inside the core (its ``OpCosts``). The core's tiles as ``tiling`` allows (``Core.tiling``)."""
    hw = _cores_with(hw, tiling=tiling)
    table = op_table(as_workload(layers), phases=("forward",))
    plan = SchedulePlan.from_mode("layer_by_layer", resident_fraction=0.0, mapping_objective=objective)
    costs = OpCosts.of(table, hw, plan)
    ops = schedule(table, hw, plan, per_op=True, op_costs=costs).ops
    overlapped = schedule(table, _cores_with(hw, tile_io="overlapped"), plan, per_op=True).ops
    if without_dram:
        total_pj = costs.energy[0]
        per_memory = {name: costs.level_pj[name][0] for name in hw.memories}
    else:
        total_pj = ops["energy_pj"].to_numpy()
        per_memory = {name: ops[f"energy_{name}_pj"].to_numpy() for name in hw.memories}
    offchip_bytes = ops["offchip_traffic_bytes"].to_numpy()
    bandwidth = hw.offchip.bandwidth_bytes_per_cycle[0]
    variants = hw.cores[0].spatial_variants()
    return pd.DataFrame(
        {
            "ours_cycles": (ops["end_cycles"] - ops["start_cycles"]).to_numpy(),
            "ours_pj": total_pj,
            "ours_mac_pj": ops["energy_mac_pj"].to_numpy(),
            "ours_dram_pj": ops["energy_offchip_pj"].to_numpy(),
            "ours_dram_bytes": offchip_bytes,
            "ours_utilization": ops["utilization"].to_numpy(),
            "ours_compute_cycles": ops["compute_cycles"].to_numpy(),
            "ours_serial_cycles": (ops["latency_cycles"] - overlapped["latency_cycles"]).to_numpy(),
            "ours_offchip_cycles": offchip_bytes / bandwidth,
            "offchip_bytes_per_cycle": bandwidth,
            "ours_mapping": ops["mapping"].to_numpy(),
            **{f"ours_{name}": ops[name].to_numpy() for name in _RECORDS},
            "ours_spatial": [_unrolled(variants[v]) for v in ops["spatial_variant"]],
            **{f"ours_pj_{name}": pj for name, pj in per_memory.items()},
        },
        index=layers.index,
    )


def _cores_with(hw: HardwareSpec, **changes: str) -> HardwareSpec:
    """``hw`` with every core's ``changes`` (``tiling``, ``tile_io``)."""
    return replace(hw, cores=tuple(replace(core, **changes) for core in hw.cores))


def _unrolled(core: Core) -> str:
    """What each PE axis of ``core`` unrolls over how many PEs, e.g. ``D1_K=K128 D2=FX64``."""
    return " ".join(f"{axis.name}={axis.dim}{axis.size[0]:.0f}" for axis in core.pe_array)


def _outside(ratio: float, band: float) -> bool:
    return bool(abs(np.log(ratio)) > np.log(band))


def _largest_gap(row: pd.Series) -> str:
    """The on-chip memory whose energy differs most between the two tools, both values."""
    names = {col.removeprefix("zigzag_pj_") for col in row.index if col.startswith("zigzag_pj_")}
    gaps = {
        name: (float(row.get(f"ours_pj_{name}", 0.0)), float(row[f"zigzag_pj_{name}"]))
        for name in names
        if not pd.isna(row[f"zigzag_pj_{name}"])
    }
    name, (mine, theirs) = max(gaps.items(), key=lambda item: abs(item[1][0] - item[1][1]))
    return f"most at {name} (ours {mine:.3g} pJ, ZigZag {theirs:.3g})"


def _compulsory_bytes(row: pd.Series) -> float:
    """Each operand moved once, in 8 bits (``ZIGZAG_PRECISION``): the input as ZigZag stores it, weights, outputs."""
    inputs = row.B * row.C * row.G * row.IY * row.IX
    return float(inputs + row.K * row.C * row.G * row.FY * row.FX + row.B * row.K * row.G * row.OY * row.OX)


def _energy_hints(row: pd.Series, band: float) -> list[str]:
    found = []
    dram = row.ours_dram_pj / row.zigzag_dram_pj if row.zigzag_dram_pj > 0 else (np.inf if row.ours_dram_pj > 0 else 1.0)
    if _outside(dram, band):
        found.append(f"off-chip traffic ours/ZigZag {dram:.2f} ({_passes(row)})")
    onchip = (row.ours_pj - row.ours_dram_pj) / max(row.zigzag_pj - row.zigzag_dram_pj, 1e-30)
    if _outside(onchip, band):
        found.append(f"on-chip energy ours/ZigZag {onchip:.2f}, {_largest_gap(row)}")
    return found


def _passes(row: pd.Series) -> str:
    once = _compulsory_bytes(row)
    return f"each operand once: ZigZag {row.zigzag_dram_bytes / once:.2f}x, ours {row.ours_dram_bytes / once:.2f}x"


def _latency_hints(row: pd.Series) -> list[str]:
    found = []
    bound = row.zigzag_dram_bytes / row.offchip_bytes_per_cycle
    traffic = row.ours_dram_bytes / row.zigzag_dram_bytes
    if bound >= 0.5 * row.zigzag_cycles and _outside(traffic, 1.3):
        found.append(
            f"off-chip bytes ours/ZigZag {traffic:.2f} ({_passes(row)}), which take {bound / row.zigzag_cycles:.0%} of "
            f"ZigZag's cycles and {row.ours_offchip_cycles / row.ours_cycles:.0%} of ours"
        )
    if row.zigzag_cycles < 0.9 * bound:
        found.append(
            f"ZigZag's cycles are {row.zigzag_cycles / bound:.0%} of its own off-chip bytes over the link's "
            "bandwidth (ours are at least that)"
        )
    theirs = row.zigzag_onloading_cycles + row.zigzag_offloading_cycles
    if abs(theirs - row.ours_serial_cycles) > 0.1 * row.zigzag_cycles:
        found.append(
            f"serial load + store: ZigZag {theirs / row.zigzag_cycles:.0%} of its cycles, "
            f"ours {row.ours_serial_cycles / row.zigzag_cycles:.0%}"
        )
    if row.ours_offchip_cycles >= 0.9 * row.ours_cycles and row.zigzag_cycles > 1.3 * bound:
        found.append(f"the off-chip link bounds ours; ZigZag's cycles are {row.zigzag_cycles / bound:.2f}x its own bytes over it")
    inside = (row.ours_cycles - row.ours_serial_cycles) / row.ours_compute_cycles
    zigzag_inside = (row.zigzag_cycles - theirs) / row.ours_compute_cycles
    if max(row.ours_offchip_cycles, bound) < 0.9 * row.ours_cycles and max(inside, zigzag_inside) > 1.3:
        found.append(
            f"cycles over our compute cycles: ours {inside:.2f}x, ZigZag's {zigzag_inside:.2f}x (a memory inside the core "
            "bounds the larger)"
        )
    if row.zigzag_spatial_utilization < 0.9 * row.ours_utilization:
        found.append(
            f"ZigZag unrolls less (spatial utilisation {row.zigzag_spatial_utilization:.2f} vs ours {row.ours_utilization:.2f})"
        )
    return found


def _fractional_hints(row: pd.Series) -> list[str]:
    """Where our spatial unrolling (``ours_spatial``, as ZigZag's where both read one mapping) does not divide one of
    the loops an input dimension depends on into equal steps: ZigZag unrolls it as the fraction of the steps it takes
    (14 on 4: 3.5) and, as shipped, sizes that input's tiles from its floor (``_exact_tensor_dim``)."""
    unrolls: dict[str, int] = {}
    for dim, unroll in re.findall(r"\bD\d+(?:_[A-Z]+)?=(OX|OY|FX|FY)(\d+)", str(row.get("ours_spatial", ""))):
        unrolls[dim] = unrolls.get(dim, 1) * int(unroll)  # a loop on several axes: their product a step
    found = []
    for dim, unroll in unrolls.items():
        size = int(row[dim])
        step = size / math.ceil(size / unroll)
        if step != int(step):
            found.append(f"ZigZag unrolls {dim} {size} as {step:g} a step and sizes its input from int({step:g})")
    return found


def hints(table: pd.DataFrame, *, band: float = 1.3) -> pd.Series:
    """For a layer outside ``band`` on a metric its row is judged on (``judged``), the measured differences that
    point at the cause (the module docstring says, from ZigZag's per-level accesses, what lies behind each)."""

    def one(row: pd.Series) -> str:
        if pd.isna(row.zigzag_cycles):
            return "ZigZag finds no loop order that fits the layer in the memories"
        judged = row.judged.split(",")
        late = "latency" in judged and _outside(row.latency_ratio, band)
        costly = "energy" in judged and _outside(row.energy_ratio, band)
        if not (late or costly):
            return ""
        found = ["depthwise/grouped"] if row.G > 1 else []
        found += _energy_hints(row, band) if costly else []
        found += _latency_hints(row) if late else []
        found += _fractional_hints(row)
        return "; ".join(found) or "none of the measured differences"

    return table.apply(one, axis=1)


def _judged_on(table: pd.DataFrame, metric: str) -> pd.Series:
    """Which rows of ``table`` are judged on ``metric`` (``judged``: the metrics, comma-separated)."""
    return table["judged"].str.split(",").map(lambda judged: metric in judged)


def summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per pair: for each metric, at the objective it is judged at, the median and worst layer ratio (worst as a
    factor either way) and the whole network's ratio, over the layers ZigZag maps (``layers``; ``unmapped``: those
    for which it finds no loop order, on a machine without DRAM the layers larger than its top memory)."""
    rows = []
    for (network, hardware), whole in table.groupby(["network", "hardware"], sort=False):
        row: dict[str, Any] = {"network": network, "hardware": hardware}
        pair = whole[whole["zigzag_cycles"].notna()]
        row["unmapped"] = int(whole["zigzag_cycles"].isna().sum()) // len(set(whole["objective"]))
        for what, ours_col, zz_col in (("latency", "ours_cycles", "zigzag_cycles"), ("energy", "ours_pj", "zigzag_pj")):
            group = pair[_judged_on(pair, what)]
            if group.empty:
                continue
            ratio = group[f"{what}_ratio"]
            worst = int(np.argmax(np.abs(np.log(ratio.to_numpy()))))
            row[f"{what}_objective"] = str(group["objective"].iloc[0])
            row[f"{what}_median"] = float(ratio.median())
            row[f"{what}_worst"] = float(ratio.iloc[worst])
            row[f"{what}_worst_layer"] = str(group["layer"].iloc[worst])
            row[f"{what}_network"] = float((group[ours_col] * group["times"]).sum() / (group[zz_col] * group["times"]).sum())
        row["layers"] = len(group)
        rows.append(row)
    return pd.DataFrame(rows)


def memory_summary(table: pd.DataFrame, *, band: float = 1.3, least_share: float = 0.01) -> pd.DataFrame:
    """Per pair and memory, over the layers judged on energy (each as many times as the network takes it): both
    tools' energy in that memory, ours / ZigZag's, and ZigZag's share of the pair's energy there; the memories
    outside ``band`` that hold at least ``least_share`` of it, the largest gap first. Where the tools take other loop
    orders energy moves from one memory to another; a memory far off where the whole network agrees points at a count
    (sixteenth round: ``tesla_npu_like_mixed``'s ``rf_4B`` at 0.0007x, the network at 0.96)."""
    rows = []
    for (network, hardware), pair in table.groupby(["network", "hardware"], sort=False):
        group = pair[pair["zigzag_pj"].notna() & _judged_on(pair, "energy")]
        total_pj = (group["zigzag_pj"] * group["times"]).sum()
        for column in [c for c in group.columns if c.startswith("ours_pj_")]:
            memory = column.removeprefix("ours_pj_")
            if f"zigzag_pj_{memory}" not in group or group[column].isna().all():
                continue
            ours_pj = (group[column].fillna(0.0) * group["times"]).sum()
            theirs_pj = (group[f"zigzag_pj_{memory}"].fillna(0.0) * group["times"]).sum()
            if theirs_pj > 0:
                rows.append(
                    {"network": network, "hardware": hardware, "memory": memory, "ours_pj": ours_pj, "zigzag_pj": theirs_pj}
                    | {"ratio": ours_pj / theirs_pj, "zigzag_share": theirs_pj / total_pj}
                )
    frame = pd.DataFrame(rows, columns=["network", "hardware", "memory", "ours_pj", "zigzag_pj", "ratio", "zigzag_share"])
    gap = np.abs(np.log(frame["ratio"].astype(float)))
    kept = (gap > math.log(band)) & (frame["zigzag_share"] >= least_share)
    return frame[kept].iloc[np.argsort(-gap[kept].to_numpy(), kind="stable")].reset_index(drop=True)


def _pair(job: tuple[str, str, str, str]) -> pd.DataFrame:
    return run_zigzag(*job)


def zigzag_tables(pairs: list[tuple[str, str, str]], searches: list[str], jobs: int) -> list[pd.DataFrame]:
    """ZigZag's table of each (network, hardware, opt) of ``pairs``: per layer, the best evaluation its ``searches``
    found (``best_of``), searched ``jobs`` at a time where not cached."""
    runs = [(network, hardware, search, opt) for network, hardware, opt in pairs for search in searches]
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        found = list(pool.map(_pair, runs))
    return [best_of(found[i * len(searches) : (i + 1) * len(searches)], opt) for i, (*_, opt) in enumerate(pairs)]


def best_of(searches: list[pd.DataFrame], opt: str) -> pd.DataFrame:
    """Per layer, the row of the search that found the cheaper evaluation at ``opt`` (latency, ties by energy; energy,
    ties by latency: ZigZag's ``MinimalLatencyStage`` and ``MinimalEnergyStage``), the first search kept on a tie;
    a layer no search maps keeps the first's row. Each table lists the same layers in the same order."""
    first, *others = searches
    keys = ["zigzag_cycles", "zigzag_pj"] if opt == "latency" else ["zigzag_pj", "zigzag_cycles"]
    best = first.copy()
    for other in others:
        if list(other["layer"]) != list(best["layer"]):
            raise ValueError(f"searches of {best['network'].iloc[0]} on {best['hardware'].iloc[0]} list other layers")
        mine, theirs = best[keys].fillna(np.inf).to_numpy(), other[keys].fillna(np.inf).to_numpy()
        better = (theirs[:, 0] < mine[:, 0]) | ((theirs[:, 0] == mine[:, 0]) & (theirs[:, 1] < mine[:, 1]))
        best = pd.concat([best[~better], other[better]]).loc[best.index]
    return best


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--networks", default=",".join(NETWORKS), help=f"comma-separated subset of {','.join(NETWORKS)}")
    parser.add_argument(
        "--hardware",
        default=",".join([*HARDWARE, *MIXED]),
        help=f"comma-separated ZigZag hardware or mixed mapping, e.g. {','.join(HARDWARE)},{','.join(MIXED)}",
    )
    parser.add_argument(
        "--lpf-limit",
        type=int,
        default=6,
        help="ZigZag LOMA loop-prime-factor limit (6, ZigZag's default; search grows as its factorial)",
    )
    parser.add_argument(
        "--engine",
        default="loma",
        choices=ENGINES,
        help="ZigZag's temporal-mapping search: loma (at --lpf-limit), salsa, or per layer the better of the two",
    )
    parser.add_argument(
        "--protocol",
        default="matched",
        choices=list(PROTOCOLS),
        help="the objective both tools optimise for each metric: matched = latency at latency, energy at energy",
    )
    parser.add_argument(
        "--tiling",
        default="any",
        choices=TILINGS,
        help="our engine's tiles: any (as much of a loop as a memory holds) or divisors (of each loop, as ZigZag's)",
    )
    parser.add_argument(
        "--zigzag-sizes",
        default="shipped",
        choices=list(SIZES),
        help="ZigZag as shipped, or with the input of a fractional unrolling sized exactly (not floored)",
    )
    parser.add_argument("--jobs", type=int, default=1, help="ZigZag runs in parallel (one per network x hardware x objective)")
    parser.add_argument("--out", type=Path, default=RESULTS / "zigzag_crosscheck.parquet", help="per-layer table (Parquet)")
    return parser


def beside_ours(
    layers: pd.DataFrame, hardware: str, objective: str, *, judged: str, folder: Path, tiling: str = "any"
) -> pd.DataFrame:
    """ZigZag's ``layers`` of one pair at ``objective`` with ours beside them (``ours``, the hardware imported into
    ``folder``), and the metrics ``judged`` there."""
    hw = imported(hardware, folder)
    mine = ours(layers, hw, objective, without_dram=without_dram(hardware), tiling=tiling)
    return pd.concat([layers, mine], axis=1).assign(objective=objective, judged=judged)


def judged_table(parts: list[pd.DataFrame], *, band: float = 1.3) -> pd.DataFrame:
    """The per-layer table of ``beside_ours``'s ``parts``: ours over ZigZag's latency, energy and MAC energy, and each
    layer's ``hints`` outside ``band``."""
    table = pd.concat(parts, ignore_index=True)
    table["latency_ratio"] = table["ours_cycles"] / table["zigzag_cycles"]
    table["energy_ratio"] = table["ours_pj"] / table["zigzag_pj"]
    # ZigZag's operational energy: what its total leaves besides the memories and DRAM
    memories = table.filter(regex=r"^zigzag_pj_").fillna(0.0).sum(axis=1)
    table["mac_energy_ratio"] = table["ours_mac_pj"] / (table["zigzag_pj"] - memories - table["zigzag_dram_pj"])
    table["hint"] = hints(table, band=band)
    return table


def main() -> None:
    args = _parser().parse_args()
    logging.basicConfig(level=logging.WARNING)
    networks = [n for n in args.networks.split(",") if n]
    unknown = [n for n in networks if n not in NETWORKS]
    if unknown:
        sys.exit(f"--networks: unknown {unknown}; expected some of {NETWORKS}")
    hardware = [h for h in args.hardware.split(",") if h]
    accepted = importable()
    unknown = [h for h in hardware if h not in accepted]
    if unknown:
        sys.exit(f"--hardware: {unknown}: no bundled hardware that imports with its mapping; expected some of {accepted}")
    protocol = PROTOCOLS[args.protocol]
    objectives = sorted(set(protocol.values()))
    searches = [search + SIZES[args.zigzag_sizes] for search in ENGINES[args.engine](args.lpf_limit)]
    if any(_engine(search) == "salsa" for search in searches) and not {ZIGZAG_OPT[o] for o in objectives} <= set(SALSA_OPT):
        sys.exit(f"--engine {args.engine}: ZigZag's SALSA minimises latency or energy, --protocol {args.protocol} {objectives}")
    pairs = [(n, h, ZIGZAG_OPT[o]) for n in networks for h in hardware for o in objectives]
    theirs = zigzag_tables(pairs, searches, args.jobs)
    parts = []
    with tempfile.TemporaryDirectory() as tmp:
        for (_, hw_name, _), objective, layers in zip(pairs, objectives * len(networks) * len(hardware), theirs, strict=True):
            judged = ",".join(metric for metric, at in protocol.items() if at == objective)
            parts.append(beside_ours(layers, hw_name, objective, judged=judged, folder=Path(tmp), tiling=args.tiling))
    table = judged_table(parts)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    table.to_parquet(args.out)
    columns = ["network", "hardware", "objective", "layer", "macs", "latency_ratio", "energy_ratio", "ours_mapping"]
    columns += ["ours_reduction_levels", "ours_held_rows", "ours_held_columns", "ours_reduction_chunk", "ours_widened_columns"]
    columns += ["zigzag_search", "hint"]
    with pd.option_context("display.width", 250, "display.max_rows", 1000, "display.float_format", "{:.3g}".format):
        print(table[columns].to_string(index=False))
        print()
        print(summary(table).to_string(index=False))
        memories = memory_summary(table)
        print("\nmemories whose energy is outside 1.3x ZigZag's and holds at least 1 % of it (layers judged on energy):")
        print(memories.to_string(index=False) if len(memories) else "none")
    print(f"\nprotocol {args.protocol} (metric: objective on both sides) {protocol}, ZigZag's search {' and '.join(searches)}")
    print(f"per-layer table: {args.out}")


if __name__ == "__main__":
    main()
