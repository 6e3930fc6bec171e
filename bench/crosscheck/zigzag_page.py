"""Write the cross-check's page, ``docs/zigzag_crosscheck.md``: our single-core engine against ZigZag, from ZigZag's
per-layer tables cached in ``bench/results``.

``bench/crosscheck/zigzag_crosscheck.py`` runs ZigZag's searches (minutes to tens of minutes of CPU per network x hardware) and
caches each as ``bench/results/zigzag_{network}_{hardware}_{search}_{opt}.parquet``. This script only reads those
caches: it costs the same layers again with our engine (seconds) and writes, per network x hardware, ours / ZigZag's
median, worst layer and whole network for latency and energy, against LOMA (ZigZag's default search) and against
ZigZag's better search (per layer the cheaper of LOMA and SALSA), each pair whose caches are missing marked as not
computed; then ZigZag given our engine's loop order on a few layers (``zigzag_in_order``), the layers and memories
outside 1.3x with their ``hint``, and what differs between the two tools and why (the ``DIFFERENCES`` below, from
ZigZag's per-level accesses). After a change to the engine, regenerate the page from the caches::

    .venv/bin/python bench/crosscheck/zigzag_page.py                     # writes docs/zigzag_crosscheck.md
    .venv/bin/python bench/crosscheck/zigzag_page.py --results DIR --out page.md

It runs without ZigZag installed (the bundled hardware and mapping files are copied in
``tests/fixtures/hardware/zigzag``). In ZigZag's venv, ``--in-order`` also runs ZigZag in our order on the cases of
``IN_ORDER`` not cached yet (seconds each; a case on ResNet-18 or MobileNetV2 needs that network's LOMA table of the
hardware, and is skipped without it)::

    bench/.venv-zigzag/bin/python bench/crosscheck/zigzag_page.py --in-order
"""

from __future__ import annotations

import argparse
import datetime
import re
import sys
import tempfile
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).parent))
import zigzag_crosscheck as crosscheck  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs/zigzag_crosscheck.md"
NAMES = {"resnet18": "ResNet-18", "mobilenetv2": "MobileNetV2", "gpt2_block": "GPT-2 block"}
# the references: LOMA at ZigZag's default loop-prime-factor limit, and per layer the better of LOMA and SALSA
REFERENCES = {"loma": ("lpf6",), "best": ("lpf6", "salsa")}
# a whole network within this factor of ZigZag's counts as agreeing; a layer outside BAND is listed with its hint
AGREE = 1.1
BAND = 1.3


@dataclass(frozen=True)
class InOrder:
    """A layer ZigZag is given one temporal ordering for (loops innermost first, as its mapping files write them):
    our engine's order, where ZigZag's own search does not reach it."""

    hardware: str
    network: str
    layer: str
    ordering: str
    why: str


IN_ORDER = (
    InOrder(
        "tesla_npu_like",
        "gpt2_block",
        "qkv",
        "C32 OY2 OY128 C24 K72",
        "partial sums stay in the per-PE output registers over the 32 of C the 1 KB weight SRAM holds for 32 output "
        "channels; LOMA splits C = 768 only as 16 x 48 or 4 x 12 x 16, so it cannot form C32 and sends its partial "
        "sums to the 1 MB SRAM 48 times instead of 24",
    ),
    InOrder(
        "aimc",
        "gpt2_block",
        "attn_av_per_head",
        "OY128 C8 OY8",
        "blocks of 128 rows in the 32 KB SRAM, the weights fetched 8 times; LOMA splits the 1,024 rows only as "
        "4 x 16 x 16, so its blocks have 64 rows and the weights come 16 times",
    ),
    InOrder("dimc", "gpt2_block", "attn_av_per_head", "OY128 C8 OY8", "as on aimc"),
    InOrder(
        "gemm_l1",
        "resnet18",
        "layer1/layer1.0/conv1",
        "K32 C8 FY3 FX3 OY7 OX56",
        "each input latched at l1's port over the output channels; with no DRAM ZigZag's l1 must hold every operand "
        "whole, the outputs as 16-bit partial sums once a reduction loop lies above the output register, and they do "
        "not fit beside the inputs and weights",
    ),
    InOrder(
        "gemm_l1_l3",
        "mobilenetv2",
        "features/features.12/conv/conv.1/conv.1.0",
        "FX3 FY3 OX14 OY2 G64 G9",
        "a depthwise layer: ZigZag keeps every input in l1 but one channel's outputs at a time, each written to l3 as "
        "accesses of its own; ours writes as many channels' outputs together as l1 holds",
    ),
)


def cached(results: Path, network: str, hardware: str, search: str, opt: str) -> pd.DataFrame | None:
    """ZigZag's cached table of one search at one objective (its name: latency, energy or EDP), None if absent."""
    path = crosscheck.cache_path(network, hardware, search, opt, results=results)
    return pd.read_parquet(path).assign(zigzag_search=search) if path.is_file() else None


def compared(results: Path, network: str, hardware: str, searches: Sequence[str]) -> pd.DataFrame | None:
    """Per layer, ours beside ZigZag's best of ``searches``, as ``bench/crosscheck/zigzag_crosscheck.py`` compares them with its
    defaults: latency judged where both tools minimise latency, energy where both minimise energy, our tiles of any
    size. None where a search's table is not cached."""
    parts = []
    with tempfile.TemporaryDirectory() as tmp:
        for objective in ("latency", "energy"):
            opt = crosscheck.ZIGZAG_OPT[objective]
            found = [cached(results, network, hardware, search, opt) for search in searches]
            if any(table is None for table in found):
                return None
            layers = crosscheck.best_of(found, opt).reset_index(drop=True)
            parts.append(crosscheck.beside_ours(layers, hardware, objective, judged=objective, folder=Path(tmp)))
    return crosscheck.judged_table(parts, band=BAND)


def zigzag_cpu_seconds(results: Path, network: str, hardware: str, searches: Sequence[str]) -> float:
    """ZigZag's CPU seconds for a pair: LOMA's one search serves every objective, SALSA searches each apart."""
    total = 0.0
    for search in searches:
        opts = ("latency", "energy") if search == "salsa" else ("energy",)
        for opt in opts:
            table = cached(results, network, hardware, search, opt)
            total += float(table["zigzag_cpu_seconds"].iloc[0]) if table is not None and len(table) else np.nan
    return total


def _in_order_cache(results: Path, case: InOrder) -> Path:
    slug = re.sub(r"[^A-Za-z0-9]+", "-", f"{case.layer} {case.ordering}").strip("-")
    return results / f"zigzag-in-order_{case.hardware}_{case.network}_{slug}.parquet"


def in_order(results: Path, case: InOrder, *, run: bool) -> pd.DataFrame | None:
    """ZigZag's evaluation of ``case`` (one row; ``error`` says why ZigZag could not place the order), from its cache,
    or, with ``run``, computed and cached; None where it is neither (or the network's LOMA table it needs is missing).
    """
    path = _in_order_cache(results, case)
    if path.is_file():
        return pd.read_parquet(path)
    if not run or (case.network != "gpt2_block" and cached(results, case.network, case.hardware, "lpf6", "energy") is None):
        return None
    with mock.patch.object(crosscheck, "RESULTS", results):  # the layer's shape from that network's cached table
        try:
            row = crosscheck.zigzag_in_order(case.hardware, case.layer, case.ordering, case.network) | {"error": ""}
        except ValueError as error:
            row = {"layer": case.layer, "zigzag_cycles": np.nan, "zigzag_pj": np.nan, "error": str(error)}
    frame = pd.DataFrame([row])
    frame.to_parquet(path)
    return frame


def _in_order_table(results: Path, *, run: bool) -> list[str]:
    """The page's rows of ZigZag in our order: its cycles and energy there and ours, and its own search's energy."""
    rows = []
    for case in IN_ORDER:
        theirs = in_order(results, case, run=run)
        searched = cached(results, case.network, case.hardware, "lpf6", "energy")
        head = f"| {case.hardware} | {NAMES[case.network]} | `{_short(case.layer)}` | `{case.ordering}` "
        if theirs is None:
            rows.append(head + "| not computed | | | | |")
            continue
        shape = theirs if theirs["error"].iloc[0] == "" else _layer_of(searched, case.layer)
        mine = None
        if shape is not None:
            with tempfile.TemporaryDirectory() as tmp:
                hw = crosscheck.imported(case.hardware, Path(tmp))
                mine = crosscheck.ours(
                    shape.reset_index(drop=True), hw, "energy", without_dram=crosscheck.without_dram(case.hardware)
                )
        loma = _layer_of(searched, case.layer)
        ours_cycles, ours_pj = (mine["ours_cycles"].iloc[0], mine["ours_pj"].iloc[0]) if mine is not None else (np.nan,) * 2
        zz_cycles, zz_pj = theirs["zigzag_cycles"].iloc[0], theirs["zigzag_pj"].iloc[0]
        in_zigzag = "cannot place it" if theirs["error"].iloc[0] else f"{zz_cycles:,.0f} / {zz_pj:.4g}"
        rows.append(
            head + f"| {in_zigzag} | {ours_cycles:,.0f} / {ours_pj:.4g} | {_ratio(ours_pj / zz_pj)} "
            f"| {_value(loma['zigzag_pj'].iloc[0] if loma is not None else np.nan)} "
            f"| {_ratio(ours_pj / loma['zigzag_pj'].iloc[0]) if loma is not None else 'not computed'} |"
        )
    header = [
        "| hardware | network | layer | ZigZag given the order (loops innermost first) | ZigZag there: cycles / pJ "
        "| ours: cycles / pJ | energy ours / ZigZag there | ZigZag's LOMA, pJ | ours / LOMA |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    return header + rows


def _layer_of(table: pd.DataFrame | None, layer: str) -> pd.DataFrame | None:
    """``layer``'s row of ZigZag's ``table`` (a GPT-2 block's layers are named there with their index, ``L0_qkv``)."""
    if table is None:
        return None
    found = table[table["layer"].str.replace(r"^L\d+_", "", regex=True) == layer]
    return found.head(1) if len(found) else None


def _short(layer: str) -> str:
    """A layer's name without the ONNX path's repeats: ``layer3/layer3.0/downsample/downsample.0`` ->
    ``layer3.0.downsample.0``."""
    parts = layer.split("/")
    kept = [part for i, part in enumerate(parts) if not any(later.startswith(part + ".") for later in parts[i + 1 :])]
    return ".".join(kept) if kept else layer


def _value(value: float) -> str:
    return "" if pd.isna(value) else f"{value:.4g}"


def _ratio(ratio: float) -> str:
    """A ratio to two decimals, in bold where it is outside ``AGREE``."""
    if pd.isna(ratio):
        return "n/a"
    text = f"{ratio:.2f}"
    return f"**{text}**" if abs(np.log(ratio)) > np.log(AGREE) else text


def _three(row: pd.Series, metric: str) -> str:
    if pd.isna(row.get(f"{metric}_median", np.nan)):
        return "(ZigZag maps none)"
    median, worst = (f"{row[f'{metric}_{part}']:.2f}" for part in ("median", "worst"))
    return f"{median} / {worst} / {_ratio(row[f'{metric}_network'])}"


def summary_rows(results: Path, pairs: Sequence[tuple[str, str]], reference: str) -> tuple[list[str], pd.DataFrame]:
    """The page's table against ``reference`` (a key of ``REFERENCES``), and every compared layer row."""
    searches = REFERENCES[reference]
    rows = [
        "| network | hardware | layers judged | latency: median / worst / network | energy: median / worst / network "
        "| ZigZag, CPU s |",
        "|---|---|---|---|---|---|",
    ]
    tables = []
    for network, hardware in pairs:
        table = compared(results, network, hardware, searches)
        if table is None:
            missing = [s for s in searches for opt in ("latency", "energy") if cached(results, network, hardware, s, opt) is None]
            rows.append(f"| {NAMES[network]} | {hardware} | not computed ({', '.join(sorted(set(missing)))}) | | | |")
            continue
        tables.append(table)
        row = crosscheck.summary(table).iloc[0]
        judged = f"{int(row['layers'])} of {int(row['layers'] + row['unmapped'])}"
        cpu = zigzag_cpu_seconds(results, network, hardware, searches)
        rows.append(
            f"| {NAMES[network]} | {hardware} | {judged} | {_three(row, 'latency')} | {_three(row, 'energy')} | {cpu:,.0f} |"
        )
    return rows, (pd.concat(tables, ignore_index=True) if tables else pd.DataFrame())


def _agreeing(table: pd.DataFrame, agree: str) -> str:
    """How many of the compared pairs agree within ``AGREE`` over the whole network on both metrics."""
    if table.empty:
        return "No pair is computed."
    found = crosscheck.summary(table)
    ratios = found[["latency_network", "energy_network"]].to_numpy(dtype=float)
    judged = ~np.isnan(ratios).any(axis=1)
    within = (np.abs(np.log(ratios[judged])) <= np.log(AGREE)).all(axis=1)
    return (
        f"{within.sum()} of the {judged.sum()} pairs computed and judged are within {agree} of ZigZag on both "
        "metrics over the whole network."
    )


def outside_rows(table: pd.DataFrame) -> list[str]:
    """The layer rows outside ``BAND`` on the metric they are judged on, with their ``hint``."""
    rows = ["| network | hardware | layer | metric | ours / ZigZag | hint |", "|---|---|---|---|---|---|"]
    if table.empty:
        return rows
    for _, pair in table.groupby(["network", "hardware"], sort=False):
        for metric in ("latency", "energy"):
            judged = pair[(pair["judged"] == metric) & pair["zigzag_cycles"].notna()]
            far = judged[np.abs(np.log(judged[f"{metric}_ratio"].astype(float))) > np.log(BAND)]
            rows += [
                f"| {NAMES[row.network]} | {row.hardware} | `{_short(row.layer)}` | {metric} "
                f"| {row[f'{metric}_ratio']:.2f} | {row.hint} |"
                for _, row in far.iterrows()
            ]
    return rows


def memory_rows(table: pd.DataFrame) -> list[str]:
    """The memories outside ``BAND`` of ZigZag's energy there that hold at least 1 % of a pair's energy."""
    rows = ["| network | hardware | memory | ours / ZigZag | ZigZag's share of the energy |", "|---|---|---|---|---|"]
    if table.empty:
        return rows
    for _, row in crosscheck.memory_summary(table, band=BAND).iterrows():
        share = f"{row.zigzag_share * 100:.0f} %"
        rows.append(f"| {NAMES[row.network]} | {row.hardware} | `{row.memory}` | {row.ratio:.2f} | {share} |")
    return rows


def zigzag_version() -> str:
    """The ZigZag release the bench pins (``bench/crosscheck/requirements-zigzag.txt``)."""
    pins = (REPO / "bench/crosscheck/requirements-zigzag.txt").read_text()
    found = re.search(r"^zigzag-dse==(\S+)", pins, flags=re.MULTILINE)
    return found.group(1) if found else "unpinned"


def page(results: Path, pairs: Sequence[tuple[str, str]], *, run_in_order: bool, today: datetime.date) -> str:
    """The page's Markdown."""
    loma, loma_layers = summary_rows(results, pairs, "loma")
    best, best_layers = summary_rows(results, pairs, "best")
    version = zigzag_version()
    agree = f"{(AGREE - 1) * 100:.0f} %"
    parts = [
        f"# Our single-core engine against ZigZag {version}",
        _wrap(
            f"Generated by `bench/crosscheck/zigzag_page.py` on {today.day} {today:%B %Y} from ZigZag's per-layer "
            "tables cached in `bench/results/` (`bench/crosscheck/zigzag_crosscheck.py` fills them; its docstring says "
            "how to install ZigZag and run it). Regenerate the page after a change to the engine with "
            "`.venv/bin/python bench/crosscheck/zigzag_page.py`: only our side is costed again, in seconds. A pair "
            "whose ZigZag tables are not cached is marked *not computed*."
        ),
        "## What is compared",
        _reflow(SETTINGS.format(version=version, agree=agree)),
        "## Against LOMA, ZigZag's default search",
        _wrap(
            "Ours / ZigZag per layer: the median, the worst layer (the farthest from 1 either way) and the whole "
            f"network (each layer as many times as the network takes it); a whole network outside {agree} in bold. "
            "`layers judged`: the layers ZigZag maps, of all it parses. `ZigZag, CPU s`: its search for the pair. "
            + _agreeing(loma_layers, agree)
        ),
        "\n".join(loma),
        "## Against ZigZag's better search",
        _wrap(
            "Per layer and objective the cheaper of LOMA and SALSA, ZigZag's simulated annealing over the order of "
            "every loop's prime factors (1,000 swaps from a shuffled start, seeded, one search per objective; "
            "`--engine best`). SALSA reaches orders that LOMA's merged factors cannot form. " + _agreeing(best_layers, agree)
        ),
        "\n".join(best),
        "## In our order",
        _wrap(
            "ZigZag's own cost model given our engine's loop order for a layer (`bench/crosscheck/zigzag_in_order.py`; energy "
            "objective), where its search did not reach that order: what ZigZag charges there against what we charge "
            "(our engine picks its order itself, so a change to the engine may leave this order behind), and against "
            "ZigZag's own LOMA search."
        ),
        "\n".join(_in_order_table(results, run=run_in_order)),
        "\n".join(_wrap(f"- {case.hardware} `{_short(case.layer)}`: {case.why}.", indent="  ") for case in IN_ORDER),
        "## Layers outside 1.3x, against LOMA",
        _wrap(
            "Each with its `hint`: the measured differences that point at the cause (`hints` in "
            "`bench/crosscheck/zigzag_crosscheck.py`)."
        ),
        "\n".join(outside_rows(loma_layers)),
        "## Memories outside 1.3x, against LOMA",
        _wrap(
            "Over the layers judged on energy, the memories whose energy is outside 1.3x ZigZag's there and that hold "
            "at least 1 % of the pair's energy, the largest gap first. Where the tools take other loop orders, energy "
            "moves from one memory to another; a memory far off where the whole network agrees points at a count."
        ),
        "\n".join(memory_rows(loma_layers)),
        "## What differs, and why",
        _reflow(DIFFERENCES),
    ]
    return "\n\n".join(parts) + "\n"


def _reflow(markdown: str) -> str:
    """Headings kept, each paragraph and list item filled to 120 columns (``_wrap``)."""
    blocks = []
    for block in markdown.split("\n\n"):
        if block.startswith("#"):
            blocks.append(block)
        elif block.startswith("- "):
            items = re.split(r"\n(?=- )", block)
            blocks.append("\n".join(_wrap(" ".join(item.split()), indent="  ") for item in items))
        else:
            blocks.append(_wrap(" ".join(block.split())))
    return "\n\n".join(blocks)


def _wrap(text: str, *, indent: str = "") -> str:
    """A paragraph in lines of at most 120 characters, as the project's Markdown is written, no code span broken."""
    kept = re.sub(r"`[^`]*`", lambda code: code.group(0).replace(" ", "\0"), text)
    filled = textwrap.fill(kept, width=120, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False)
    return filled.replace("\0", " ")


SETTINGS = """\
- **Networks.** ResNet-18 and MobileNetV2 (ImageNet, 224 x 224, batch 1: the shape-only ONNX files bundled with
  ZigZag; their Conv and Gemm layers, which ZigZag costs) and the GEMMs of one GPT-2 (124M) block at 1,024 tokens
  (QKV, one head's QK^T and AV counted 12 times, the attention projection, the two MLP GEMMs).
- **Hardware.** Every machine bundled with ZigZag that imports with its bundled mapping (`tpu_like`, `edge_tpu_like`,
  `ascend_like`, `eyeriss_like`, `meta_prototype`, `tesla_npu_like`, `generic_array_cacti`), the GEMM cores
  `gemm_l1_l3` and `gemm_l1` (the unrolling of their mapping given in the networks' loops to both tools), the
  in-memory-computing arrays `aimc` and `dimc`, and ZigZag's five mixed mappings (`*_mixed`, each on the machine it
  is for). ZigZag reads its files as they are; ours are the same files through `traincost hardware import zigzag`.
- **ZigZag {version}**: its stages of `get_hardware_performance_zigzag` with uneven temporal mappings, the mapping's
  spatial unrolling (its three best spatial candidates), `access_same_data_considered_as_no_access`, and per layer
  the best evaluation by each objective. LOMA at a loop-prime-factor limit of 6 (its default); SALSA as above.
- **Ours**: the same layers, with the dimensions, strides and input sizes ZigZag parsed, costed on the imported core
  by the scheduler that `traincost cost` and the studies run, tiles of any size (`tiling: any`), plus what ZigZag
  also counts:
  each layer's inputs read from DRAM into the top memory and its output back, at ZigZag's DRAM energy per bit. Our
  latency is the larger of the core's and the off-chip bytes over the link's bandwidth, as the scheduler times an
  op. On a machine without DRAM (`gemm_l1_l3`, `gemm_l1`) neither tool charges the transfer.
- **Protocol.** Latency is judged where both tools minimise latency, energy where both minimise energy. A pair
  agrees where its whole network is within {agree} on both. Both tools are compared in cycles (ZigZag's clock
  period of an in-memory macro is not modelled)."""


# What differs between the two tools, each found by comparing ZigZag's per-level accesses (``cme.memory_word_access``,
# its energy per memory) with ours, one layer at a time; the tables above measure them
DIFFERENCES = """\
### On every machine

- **LOMA's reach.** LOMA merges each loop's prime factors down to six and tries every order of those; a loop order that
  needs a factor the merging lost is out of its reach (C = 768 split only as 16 x 48, never C32; 1,024 rows only as 4 x
  16 x 16). Where ours is well below ZigZag against LOMA, the question is whether our engine undercharges its order or
  LOMA cannot reach it: SALSA, which keeps every prime factor but samples the orders, and ZigZag given our order (the
  two sections above) answer it. At a limit of 7 ZigZag's own costs drop by 10-18 % on some GEMMs, at three to five
  times its CPU time.
- **Tiles that divide each loop.** ZigZag's temporal mappings split every loop into factors of its size; our engine
  takes as much of a loop as a memory holds, the last tile partial (`tiling: any`, the default). With
  `--tiling divisors` (`bench/crosscheck/zigzag_crosscheck.py`) our engine searches ZigZag's space instead; the in-memory arrays,
  whose blocks of rows set their DRAM traffic, are the pairs it moves most.
- **ZigZag's timing of its one DRAM port.** On MobileNetV2's 14 x 14 and 7 x 7 pointwise layers on `edge_tpu_like`,
  `ascend_like`, `meta_prototype` and `tesla_npu_like`, and ResNet-18's `layer3.0.downsample` on `ascend_like`, both
  tools move the same off-chip bytes and ours is their time over the link, while ZigZag's cycles are 67-77 % of it: its
  stalls (`CostModelEvaluation.combine_data_transfer_rate_per_physical_port`) set each operand's transfers on a shared
  port against its own window, adding the stalls and letting one operand's slack absorb the overlap of the others', not
  the port's bytes over its bandwidth. Ours is never below its own off-chip bytes over the link.
- **A fractional unrolling, floored.** Where a PE axis does not divide a loop into equal steps, ZigZag unrolls it as the
  fraction of the steps it takes (14 output columns on OX 4: 3.5 a step), and `LayerNode.calc_tensor_dim` sizes an input
  tile from the `int` of it (its own comment: "TODO this int conversion is suspicious"): 3 columns where a step reads
  3.5 on average. Its off-chip bytes then fall short of each operand once (MobileNetV2 `features.12` `conv.2` on
  `edge_tpu_like`: 170,880 B where the input, weights and output are 187,008 B, ours), and its memory allocator leaves
  the input's outer loops above the SRAM, so that the input streams in under the compute where a whole input that fits
  is loaded first. `--zigzag-sizes exact` runs ZigZag with that one function exact (cached as `lpf6-exact`): it then
  keeps the input whole, moves our bytes to the byte and that layer goes 1.51 -> 1.16 on latency and 1.15 -> 0.99 on
  energy; the machines whose array splits an image or filter axis unequally (`edge_tpu_like`, `ascend_like`,
  `meta_prototype`, `tesla_npu_like` and their mixed mappings) move, the GPT-2 GEMMs do not. A row where our unrolling
  (ZigZag's, where both read one mapping) leaves such a fraction says so in its `hint`.
- **A serial load.** ZigZag loads an input whose only on-chip memory holds all of it before the compute (the whole input
  over the link, thousands of cycles a layer); the import sets the core's `tile_io: serial`, and ours loads it so too.
  ZigZag's off-loading of a whole output after the compute is not modelled (the stride-2 shortcuts).
- **A register read once while its data stays.** ZigZag counts one read of an innermost memory for as long as the same
  data stays at its output pins (`access_same_data_considered_as_no_access`); ours counts what the order moves. It
  matters where an order latches an operand at a port (`gemm_l1`, `tesla_npu_like_mixed`).
- **What ZigZag's files say, both charge.** A memory's minimum access width (ZigZag's `bandwidth_min`, our
  `min_access_bits`: MobileNetV2's depthwise layers on `tpu_like` read their inputs one byte at a time, charged as
  64-bit accesses), the energy of each operand's own port (`operand_energy_pj_per_bit`), a `read_write` port whose
  bandwidth reads and writes share, a memory serving some of the array's dimensions (ZigZag's `served_dimensions`, our
  `served_axes`: an instance per busy PE of the others, holding side by side what varies along the ones it serves), and
  a per-PE memory charged once per copy it keeps (an input broadcast over the unrolled output channels written into
  every PE; each PE of an unrolled reduction accumulating its own partial sum).
- **ZigZag's latency objective takes the first of equal mappings.** Minimising latency, ZigZag keeps the first of many
  mappings of equal latency, not the cheapest, so energy read off its latency mapping is no reference; the protocol
  judges energy where both minimise energy.

### tpu_like

A weight-stationary array with per-PE 128-byte weight and 2-byte output registers under a 2 MB SRAM. Its output
registers are too small for the partial sums of every streamed row, so both tools read each weight from its per-PE
register every MAC (ResNet-18 `layer1.0.conv1`: 115.6 M reads, 1.10e7 pJ in both). On GPT-2's `mlp_proj` ZigZag keeps
all 1,024 x 768 partial sums in the 2 MB SRAM over six chunks of the reduction (`O: sram_2MB[OY64 K6 OY16 K4 C6]`), so
weights, inputs and outputs cross the chip's edge once (6.29e6 B); our engine tries every order inside the core again
over chunks of the reduction, the tiles cut to a chunk and wider, and takes the same.

### edge_tpu_like

A 2-byte output register serving the array's C axis, a 1-byte weight register, a 32 KB weight SRAM and a 2 MB SRAM for
inputs and outputs. ZigZag keeps C, FY and FX innermost under the output registers (`O: [[C 16, FY 3, FX 3], ...]`): the
partial sums never leave them; our engine chooses per op how many innermost levels keep the reduction innermost
(`reduction_levels`) and takes the same (2.59e6 pJ from the weight SRAM, 2.36e7 from the 2 MB SRAM on ResNet-18
`layer2.0.conv2`, as ZigZag). Its array unrolls OX 4 and OY 4, which divide neither 14 nor 7: the floored fractional
unrolling above sets its MobileNetV2 14 x 14 and 7 x 7 layers' worst rows (`features.12` and `13` `conv.2` at 1.51 on
latency), and its one DRAM port's timing the rest.

### ascend_like

An 8 KB input register file lies between the band (partial sums kept in the output registers over the reduction) and the
8 KB weight register file. SALSA's order for GPT-2's `mlp_fc` keeps 128 of the reduction x 64 columns in the weight file
(`W: rf_64KB_W[C2 C2 C2 OY2 K2 OY2 OY2 OY2 OY2 K2 ...]`), so the inputs in the input file serve all 64 columns before
they are replaced; our engine tries that memory's tile cut in the reduction to 2, 4 or 8 times the columns, and takes it
(`widened_columns`). GPT-2's `mlp_proj` keeps 512 rows x all 768 channels of partial sums in the 1 MB activation SRAM
(`O: sram_1MB_A[OY2 OY2 C2 C2]`): the weights come twice, the inputs once; our output block takes, of a few shapes that
fit, the one that brings the fewest bytes in, the same. LOMA reaches neither order, so the GPT-2 block's energy is below
ZigZag's against LOMA and at it against SALSA. ResNet-18's `layer3.0.downsample` (1.30 on latency) is ZigZag's DRAM port
timing.

### eyeriss_like

Row-stationary: per-PE 64-byte input and weight registers and 16-byte output registers, the array 14 x 12, under an 8 KB
output SRAM, a 64 KB weight SRAM and a 1 MB SRAM. ZigZag keeps the reduction inside the PE (`O: rf_16B[C6 FY3 FX3]`);
our engine's held-rows order runs the whole reduction of the weight registers over as many rows as the output registers
hold partial sums for, the weights read again per block of rows, and its held-columns order one row over as many output
columns as they hold (ZigZag's `I: rf_64B_A[K7 C2 OY16]` on MobileNetV2's pointwise layers). Each of the 12 PEs of an
output accumulates its own partial sum and each input is written into the 14 PEs of the unrolled K, in both. SALSA's
order for GPT-2's `qkv` keeps 8 rows x 8 of C in each input register while 5 output channels' weights pass
(`I: rf_64B_A[OY8 C8 K5]`); ours tries the held block with the weight tile cut to the reduction whose inputs the input
register holds, and takes it. A block fits an input register only with its halo: 8 outputs of a 3x3 window touch 4 x 6
= 24 pixels of each channel, not the 8 the layer's ratio of unique inputs would give, so on ResNet-18's 3x3 layers
the block runs over chunks of the reduction whose inputs fit, and each block loads its own pixels. LOMA reaches neither
at lpf 6: on ResNet-18's `layer2.0.conv2` its loops are
`OY28 OX28 FY3 FX3 K10 C11`, so no block of fewer than 28 rows fits the output registers and it accumulates there over
`FY3` only; at lpf 7 it splits `OX7 x OX4` and keeps `O: rf_16B[OX7 FX3 C11]`, the rows held in the PE. So ResNet-18's
and the GPT-2 block's energy is well below ZigZag's against LOMA and within a few percent against SALSA. With C 12 on 64
channels, ZigZag's plain mapping counts the idle PEs' output registers too (48 partial sums a copy, 54 with them).

### meta_prototype

Its 2-byte output register serves the array's C axis, as `edge_tpu_like`'s does. On the GPT-2 block ZigZag splits the
256 row steps only as `OY16 OY16`, and 16 rows' inputs (48 KB) do not fit the 32 KB input SRAM, so its inputs stay there
over `C16 C24` only and come again from the 1 MB SRAM for each of the 72 K tiles
(`I: sram_32KB[C16 C24] | sram_1MB_A[OY16 OY16 K12 K6]`); ours keeps a block of rows as large as fits. GPT-2's
`mlp_proj` keeps 512 rows of partial sums above the core over chunks of 512 of the reduction, which LOMA does not reach
(0.66 against it, 0.99 against SALSA).

### tesla_npu_like

A 1 KB weight SRAM and a 1 KB input SRAM under 1 MB ones, 1-byte weight registers shared along two array dimensions and
a 4-byte output register per PE. On GPT-2's `qkv` our engine keeps partial sums in the output registers over the 32 of C
the weight SRAM holds for 32 output channels (`C32 OY2 OY128 C24 K72`): given that order ZigZag charges what we charge,
every memory but the 1 MB activation SRAM to the digit (there it reads back all 24 partial sums at 16 bits, where we
read back 23 and write the last as an 8-bit output). LOMA cannot form C32 at lpf 6, 7 or 8 (C = 768 splits as 16 x 48 or
4 x 12 x 16), so its partial sums go to that SRAM 48 times; SALSA reaches the order, and `mlp_proj`'s order over chunks
of the reduction (0.62 against LOMA, 1.03 against SALSA). Its weight registers cost ours 2x ZigZag's: ZigZag keeps a
weight over its two OX steps, where our order reads it again.

### generic_array_cacti

A 128-byte register per PE for each operand under a 32 MB SRAM that holds every layer, so the loop order is chosen below
the top, around a block in the registers (`mapping_below_top`), and every block is weighed only where its memory holds
it beside the slices it keeps for the others. An input block below the top keeps its partial sums in the output
registers, a copy in each PE of the reduction, so it takes no more rows than those hold (64 of ResNet-18
`layer1.0.conv1`'s 3,136). The orders can differ where the totals agree: on GPT-2's `qkv` ZigZag keeps each PE's 72
weights over all 1,024 rows and 16 rows' partial sums in its output register over 6 steps of C
(`O: rf_O[OY16 C6] | sram_32MB[K12 OY64 K6 C4]`), where ours keeps an input block over chunks of 192 of C below the SRAM
(over the block its SRAM energy 2.9x ZigZag's, its output registers 0.97x, the whole 0.99). Its weight registers'
energy, far below ZigZag's on the GPT-2 block, is an order LOMA does not reach.

### gemm_l1_l3

A GEMM core: its bundled mapping unrolls ZigZag's GEMM loops (D0, D1, D2), so both tools are given the same unrolling in
the networks' loops (OY, K, C). ZigZag cuts the mapping's K 8 to 2 (its 32-bit output register, shared along K, passes
two 16-bit partial sums a cycle: `limit_unrolling_to_mem_bandwidth`), and so does the import. It has no DRAM: its 1.25
GB `l3` holds every layer, where each starts and ends. So the loop order is chosen between `l1` and `l3` (ResNet-18
`layer4.0.conv1`: `I: l1[C4 FY3 FX3 C8 OX7 K256] | l3[]`, the whole input in `l1` and the weights streamed once; ours
3.170e8 pJ in `l3`, ZigZag 3.169e8), and again over chunks of the reduction (GPT-2's `mlp_proj`: 128 rows' inputs of 384
of the reduction stay in `l1` while every column passes, which LOMA does not reach: 0.82 against it). `l1` is
double-buffered (`force_double_buffering`, the import's `double_buffered`): every block counts two of a tile. A level
holding whole groups of a depthwise layer moves as many groups' tiles in one transfer as it holds (ZigZag's `G` loops
inside `l1`). On MobileNetV2's depthwise `features.12`-`13` ZigZag keeps one channel's outputs in `l1` at a time and
writes each to `l3` as an access of its own (in our order too), where ours writes many channels together: 0.81 there.
Its 1x1 expansions `features.15`-`17` `conv.0` (1.05) move the same `l3` bytes, each operand once, in accesses narrower
than `l3`'s 64-byte minimum.

### gemm_l1

`gemm_l1_l3`'s core without `l3`: it has no DRAM, so ZigZag finds no loop order for a layer that does not fit its 512 KB
`l1` (`NoValidLoopOrderingFoundException`: 8 of ResNet-18's 21 layers, 11 of MobileNetV2's 53, all six GPT-2 GEMMs);
those layers are counted but not judged. The weights have no memory below the top, so the array may keep each input at
`l1`'s port over all the output channels while the weights change every step and the partial sums leave every reduction
step (`inputs_latched`): ZigZag's energy-optimal order from `layer2` on (`I: l1[K64 ...]`). ZigZag's latched layers take
twice our cycles: it times a port in whole accesses per period, and its `read_write` output port reads 256 bits of
partial sums down and writes 256 back in separate cycles, two cycles a step, where ours times the 512 bits a step moves
as bytes over the bandwidth (latency is judged where both minimise it, and agrees). Our engine takes the latched order
on ResNet-18's `layer1` too (0.71 on energy), where ZigZag cannot place it: with no DRAM its `l1` must hold every
operand whole, the outputs as 16-bit partial sums once a reduction loop lies above the output register (401 KB beside
238 KB of inputs and weights, in 512 KB); likewise MobileNetV2's `features.18.0`. That sets ResNet-18's energy at about
0.8.

### aimc and dimc

In-memory-computing arrays, 128 x 128 macros under a 32 KB SRAM (`sram_256KB` is 262,144 bits). The import gives the
core ZigZag's model of the macro (`traincost.hardware.in_memory`): its MAC energy (DACs, ADCs or adder trees,
multipliers, accumulators, from the rows and columns a layer fills) equals ZigZag's on every layer to 1e-14 where both
tools unroll the same loops (`mac_energy_ratio`), and a step takes `activation_bits / bit_serial_bits` cycles. The
mapping hints K along D1 and C, FX or FY along D2; ZigZag picks per layer among its three candidates of highest
utilisation, and the import gives the D2 axis C with FX and FY as `alternatives` and both axes `divisors: [2]` (half the
macro, ZigZag's next candidates), which our engine picks among per layer by its own costs. A cell holds the weight the
array computes with, one weight each, so the cells are never double-buffered and are written only between uses: the
latency is the compute's plus the cells' writes at the external path's pace (`dimc` ResNet-18 `layer3.0.conv2`: 112,896
cycles of compute and 1,179,648 B of weights over the 8-byte link, 260,352 of ZigZag's 260,780 cycles). The weights have
no memory but the cells, so each block of rows the SRAM keeps fetches them from DRAM again, and the layers are
DRAM-bound: what differs is the block. Ours takes as many rows as the SRAM holds (ResNet-18 `layer1.0.conv1`: 165 of
3,136 rows); LOMA tiles the rows by factors of their count (64: `OX8 OY8`), so it fetches the weights more often and
ours is well below it; SALSA and our divisor tiles meet at 112 rows
(`W: cells[OX2 OY7 OX2 OX2 OY2] | dram[FY3 FX3 OY2 OX7 OY2]`). A convolution's blocks of outputs each read the input
pixels their own windows touch (the halo a block shares with its neighbours comes in once per block: 16 x 10 pixels for
14 x 8 outputs, 286,720 B of inputs on ZigZag's layer, in both). On ResNet-18's `layer2.0.conv2` ZigZag keeps 112 rows
one filter row at a time (`I: sram_256KB[OX28 OY4 FX3] | dram[FY3 OY7 K2]`, the inputs loaded three times over FY and
twice over K), where ours keeps blocks of 7 x 14 outputs over all of the reduction with their halo, an order SALSA does
not find (0.74). On the GPT-2 block both tools are bound by the off-chip link; our blocks of rows are as large as the
SRAM holds where ZigZag's are a power of 2 (`mlp_fc`: 4.8e7 B off chip against 5.98e7), so ours is about 0.8 on latency;
given our 128-row blocks (in our order) ZigZag agrees. ZigZag's clock period of a macro (`tclk`, from its adder trees'
and ADCs' delays) is not modelled: both are compared in cycles.

### The mixed mappings

ZigZag's `*_mixed.yaml` put several loops on one array dimension (`tpu_like`'s C 2 x FX 3 x FY 3 on D2,
`edge_tpu_like`'s OX 2 x OY 2 on D3 and on D4), or leave a dimension to a hint that ZigZag fills per layer
(`meta_prototype`'s D2, hinted C; `tesla_npu_like`'s D3, unhinted: every layer dimension whose loop the innermost
memories' ports pass whole). The import fills a dimension as ZigZag does (the first loop the axis's `dim`, the others
its `alternatives`, with `divisors: [2]`), and a memory serving some dimensions counts its instances beside the PEs the
mapping unrolls.

- **One array step at a time.** Where an axis unrolls several loops, each loop takes its own steps, its last one padded:
  a 3x3 layer's 64 x 9 reduction over `edge_tpu_like_mixed`'s C 2 x FX 2 x FY 2 takes 128 steps, and what moves once per
  step of the array (partial sums out of it, weights re-read per step of rows) moves that many times, as in ZigZag. A
  PE's own copy of an output takes a partial sum only in the steps its PE works in, as the MAC energy counts only the
  MACs done (`tpu_like_mixed`'s `conv1`: 147 an output), where ZigZag's plain mappings count the idle PEs' registers
  too.
- **Overlapping windows in one step.** `edge_tpu_like_mixed` (OX 4 beside FX 2) and `ascend_like_mixed` (OX 2 beside FX
  3) unroll a convolution's outputs and its filter taps on the same image axis, so one step's windows overlap and the
  memory that feeds the array reads each of their pixels once (4 outputs x 2 taps at stride 1: 5 columns, not 8), in
  both. FX 3 on two PEs takes two steps in ours and 1.5 floored to 1 tap in ZigZag's input sizes (above). On
  `edge_tpu_like_mixed`'s 14 x 14 layers ZigZag writes 16 x 16 outputs per channel to DRAM (4 steps of OX 4 and of OY 4:
  `features.8` `conv.0.0` 98,304 outputs for 75,264), where ours writes the 14 x 14 it computes.
- **`tesla_npu_like_mixed` is output-stationary.** The import makes it so (an output register per PE, none for weights).
  Its PE accumulates in its own register, which ZigZag reads and writes every step of the reduction
  (`O: rf_4B[K2 C64 FY3 FX3]`: two accesses a MAC), and so does ours (`per_pe`). Where its innermost output memory lies
  below its innermost input memory, our engine also runs the column tiles of that memory's block innermost, each input
  staying at the input buffer's port while they pass (ZigZag's `I: sram_1KB_I[K2]`, `O: rf_4B[K2 C64 FY3 FX3]`), so its
  input reads fit the buffer's 32 bytes a cycle. LOMA does not reach that order on the GPT-2 block (it keeps OY 2
  innermost, its input port stalling it at twice its compute cycles) and, on ResNet-18, takes 1.6-2.3x as long on ten
  layers, so ours is well below on latency against LOMA; SALSA reaches it (`I: sram_1KB_I[K2 C2 C3 C2]`)."""


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=crosscheck.RESULTS, help="where ZigZag's tables are cached")
    parser.add_argument("--out", type=Path, default=PAGE, help="the page to write (default docs/zigzag_crosscheck.md)")
    parser.add_argument("--in-order", action="store_true", help="run ZigZag in our order where not cached (its venv)")
    args = parser.parse_args(argv)
    hardware = [*crosscheck.HARDWARE, *crosscheck.MIXED]
    pairs = [(network, name) for network in crosscheck.NETWORKS for name in hardware]
    args.out.write_text(page(args.results, pairs, run_in_order=args.in_order, today=datetime.date.today()))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
