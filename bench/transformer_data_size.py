"""Our "data size per iteration" of the five TM-Training workloads next to the paper's (Table 3), with
per-chip numbers of the training steps the tiered-memory study simulates, and how long each takes to
generate.

    python bench/transformer_data_size.py

The table is :func:`traincost.analysis.tiered_workloads.workload_table` (the workflow writes it to
``results/tiered/table3.csv``); the paper's numbers come only from ``data/paper/tm_training_table3.csv``.
"""

from __future__ import annotations

import time
from pathlib import Path

import pandas as pd

from traincost.analysis.tiered_workloads import workload_table
from traincost.models.tm_training_workloads import TM_TRAINING_WORKLOADS, tm_training_workload

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    names = list(TM_TRAINING_WORKLOADS)
    table = workload_table(pd.read_csv(REPO / "data/paper/tm_training_table3.csv"), names)
    build_s = []
    for name in names:
        began = time.perf_counter()
        tm_training_workload(name)
        build_s.append(time.perf_counter() - began)
    table["build_s"] = build_s
    shown = pd.DataFrame(
        {
            "workload": table["workload"],
            "layout": table["layout_matches_table3"].map({True: "same", False: "differs"}),
            "params_b": table["parameters"] / 1e9,
            "paper_params_b": table["paper_parameters"] / 1e9,
            "data_gb": table["data_bytes"] / 1e9,
            "paper_data_gb": table["paper_data_bytes"] / 1e9,
            "ratio": table["data_vs_paper"],
            "ops": table["ops_per_chip"],
            "chip_peak_gb": table["peak_bytes_per_chip"] / 1e9,
            "chip_param_mb": table["parameter_bytes_per_chip"] / 1e6,
            "chip_tmacs": table["macs_per_chip"] / 1e12,
            "build_s": table["build_s"],
        }
    )
    with pd.option_context("display.width", 250, "display.max_columns", None, "display.float_format", "{:,.2f}".format):
        print(shown.to_string(index=False))


if __name__ == "__main__":
    main()
