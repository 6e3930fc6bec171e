"""ZigZag's own cost of a layer in one fixed temporal ordering, beside our engine's cost of that layer.

Where the cross-check (``bench/zigzag_crosscheck.py``) finds our energy well below ZigZag's, the question is whether
our engine undercharges its loop order or ZigZag's search (LOMA, which merges each loop's prime factors down to
``--lpf-limit`` of them) cannot reach that order. This gives ZigZag the order (a ``temporal_ordering`` in a copy of
the bundled mapping, loops innermost first) and prints its evaluation per memory next to ours, energy objective.

Result, 27 November 2026 (ZigZag 3.9.1, ``tesla_npu_like``, ``qkv``: 1,024 x 768 x 2,304): in our engine's order,
``C32 OY2 OY128 C24 K72`` (the 1 KB weight SRAM full with 32 K x 32 C, partial sums kept in the per-PE output
registers over those 32 of C and accumulated 24 times in the 1 MB activation SRAM), ZigZag charges 1.157e9 pJ and we
charge 1.146e9; every memory but that SRAM agrees to the digit, and there ZigZag reads back all 24 partial sums at
16 bits where we read back 23 and write the last as an 8-bit output (1.1e7 pJ). ZigZag's own search finds 1.466e9 pJ
at lpf 6, 7 and 8 alike: C = 768 is only ever split 16 x 48 (lpf 6, 7) or 4 x 12 x 16 (lpf 8), so C32 cannot be
formed and its partial sums go to the 1 MB SRAM 48 times (7.2e8 pJ there). ``C16 OY2 OY128 C48 K72`` costs 1.511e9.

On ``gemm_l1_l3``, ``qkv`` in the input-resident order our engine had taken there before it knew ``l1`` is
double-buffered (151 rows of inputs in ``l1``; ``C96 OY16 K1152 OY8``, 128 rows), ZigZag keeps one row's inputs in
``l1`` (``I: l1[C96] | l3[OY16 K1152 OY8]``: two of a 128-row block do not fit) and charges 2.4e11 pJ. On ``gemm_l1``,
ResNet-18 ``layer1.0.conv1`` with each input latched over the output channels (``K32 C8 FY3 FX3 OY7 OX56``, our
engine's energy-optimal order there, 2.34e7 pJ) ZigZag cannot place (``MemoryTooSmallException``): with no DRAM its
``l1`` must hold every operand whole, the outputs as 16-bit partial sums once a reduction loop lies above the output
register (401 KB, beside 201 KB of inputs and 37 KB of weights, in 512 KB); its own search keeps them in the register
over ``C8 FY3 FX3`` (3.28e7 pJ). A grouped layer takes its ``G`` loops: MobileNetV2's depthwise ``features.12`` on
``gemm_l1_l3`` in ``FX3 FY3 OX14 OY2 G64 G9`` keeps every input in ``l1`` but one channel's outputs at a time, each
written to ``l3`` as accesses of their own (``l3`` 8.48e7 pJ; ours, 98 channels' outputs together, 7.19e7).

    bench/.venv-zigzag/bin/python bench/zigzag_in_order.py --hardware tesla_npu_like --layer qkv \\
        "C32 OY2 OY128 C24 K72" "C16 OY16 K12 C48 OY16 K6"
    bench/.venv-zigzag/bin/python bench/zigzag_in_order.py --hardware gemm_l1 --network resnet18 \\
        --layer layer1/layer1.0/conv1 "C8 FY3 FX3 OY7 OX56 K32" "K32 C8 FY3 FX3 OY7 OX56"
    bench/.venv-zigzag/bin/python bench/zigzag_in_order.py --hardware gemm_l1_l3 --network mobilenetv2 \\
        --layer features/features.12/conv/conv.1/conv.1.0 "FX3 FY3 OX14 OY2 G64 G9"
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).parent))
from zigzag_crosscheck import GPT2_BLOCK, NETWORKS, imported, ours, without_dram, zigzag_in_order  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hardware", default="tesla_npu_like", help="a bundled ZigZag hardware that imports")
    parser.add_argument("--network", default="gpt2_block", help=f"one of {', '.join(NETWORKS)}")
    parser.add_argument(
        "--layer",
        default="qkv",
        help=f"a GPT-2 block layer ({', '.join(name for name, *_ in GPT2_BLOCK)}) or a layer of --network as named there",
    )
    parser.add_argument("orderings", nargs="+", help="temporal orderings, loops innermost first, e.g. 'C32 OY2 OY128 C24 K72'")
    args = parser.parse_args()
    rows = []
    for ordering in args.orderings:
        try:
            rows.append(pd.Series(zigzag_in_order(args.hardware, args.layer, ordering, args.network), name=ordering))
        except ValueError as error:
            sys.exit(str(error))
    theirs = pd.DataFrame(rows)
    with tempfile.TemporaryDirectory() as tmp:
        hw = imported(args.hardware, Path(tmp))
        mine = ours(theirs.iloc[:1].reset_index(drop=True), hw, "energy", without_dram=without_dram(args.hardware))
    energy = [column for column in theirs.columns if column.startswith("zigzag_pj")] + ["zigzag_dram_pj"]
    table = theirs[["zigzag_cycles", *energy]].dropna(axis=1).T
    table.index = table.index.str.removeprefix("zigzag_")
    table["ours"] = [mine[f"ours_{name}"].iloc[0] if f"ours_{name}" in mine else float("nan") for name in table.index]
    table.loc["cycles", "ours"] = mine["ours_cycles"].iloc[0]
    with pd.option_context("display.width", 200, "display.float_format", "{:.4g}".format):
        print(table.to_string())
    for ordering, mapping in theirs["zigzag_temporal_mapping"].items():
        print(f"\n{ordering}: {mapping}")


if __name__ == "__main__":
    main()
