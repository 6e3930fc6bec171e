"""ZigZag's own cost of a layer in one fixed temporal ordering, beside our engine's cost of that layer.

Where the cross-check (``bench/crosscheck/zigzag_crosscheck.py``) finds our energy well below ZigZag's, the question is whether
our engine undercharges its loop order or ZigZag's search (LOMA, which merges each loop's prime factors down to
``--lpf-limit`` of them) cannot reach that order. This gives ZigZag the order (a ``temporal_ordering`` in a copy of
the bundled mapping, loops innermost first) and prints its evaluation per memory next to ours, energy objective.

It answers the question for one layer and one or more orderings; the cases the cross-check's page tracks
(``IN_ORDER`` in ``bench/crosscheck/zigzag_page.py``), with what ZigZag charges in each and why its search does not reach it,
are in ``docs/zigzag_crosscheck.md`` ("In our order"). A layer of the GPT-2 block is given by its name; a layer of
ResNet-18 or MobileNetV2 by its name in the cross-check's table, its dimensions from ZigZag's cached LOMA table of
that network on the hardware (searched first where it is not cached). A grouped layer takes its ``G`` loops. An
order ZigZag cannot place in the memories (``MemoryTooSmallException``; with no DRAM, ``gemm_l1``'s ``l1`` must hold
every operand whole) ends the run with ZigZag's reason.

Usage (in ZigZag's venv, ``bench/crosscheck/zigzag_crosscheck.py`` says how to build it)::

    bench/.venv-zigzag/bin/python bench/crosscheck/zigzag_in_order.py --hardware tesla_npu_like --layer qkv \\
        "C32 OY2 OY128 C24 K72" "C16 OY16 K12 C48 OY16 K6"
    bench/.venv-zigzag/bin/python bench/crosscheck/zigzag_in_order.py --hardware gemm_l1 --network resnet18 \\
        --layer layer1/layer1.0/conv1 "C8 FY3 FX3 OY7 OX56 K32" "K32 C8 FY3 FX3 OY7 OX56"
    bench/.venv-zigzag/bin/python bench/crosscheck/zigzag_in_order.py --hardware gemm_l1_l3 --network mobilenetv2 \\
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
