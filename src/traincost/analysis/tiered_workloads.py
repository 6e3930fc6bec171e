"""TM-Training Table 3 beside our workloads: layout, parameters and data size per iteration.

Our data size is :func:`traincost.models.tm_training_workloads.data_size_per_iteration` at the presets' precision
(bf16 tensors; mixed-precision Adam with fp32 master weights and moments), see
``docs/tiered/workloads.md``. Per chip: the step the tiered study simulates (ops, peak live bytes,
parameter bytes, MACs).
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from traincost.errors import ConfigError
from traincost.memory.liveness import memory_profile
from traincost.models.tm_training_workloads import TM_TRAINING_WORKLOADS, data_size_per_iteration, tm_training_workload
from traincost.models.transformer import parameter_count

__all__ = ["workload_table", "OPTIMIZER_STATE_BYTES"]

OPTIMIZER_STATE_BYTES = 4
"""The presets' optimizer states: fp32 master weights and Adam moments."""
_UNIT_BYTES = {"GB": 1e9, "TB": 1e12}
_LAYOUT = ("sequence_length", "batch_size", "tpu_pods", "model_parallelism", "data_parallelism", "total_tpu_chips")


def workload_table(paper: pd.DataFrame, workloads: Sequence[str]) -> pd.DataFrame:
    """One row per workload: ours beside Table 3 (``data/paper/tm_training_table3.csv``, long format).

    Raises:
        ConfigError: a workload that is not a preset or not in the paper's table.
    """
    table = paper.copy()
    size = table["quantity"] == "data_size_per_iteration"
    table.loc[size, "value"] = table.loc[size, "value"] * table.loc[size, "unit"].map(_UNIT_BYTES)
    wide = table.pivot(index="workload", columns="quantity", values="value")
    missing = [w for w in workloads if w not in wide.index or w not in TM_TRAINING_WORKLOADS]
    if missing:
        raise ConfigError(f"Table 3 comparison: workloads {missing} are not both presets and rows of the paper's table")
    return pd.DataFrame([_row(name, wide.loc[name]) for name in workloads])


def _row(name: str, paper: pd.Series) -> dict[str, object]:
    config, parallel = TM_TRAINING_WORKLOADS[name]
    model_parallel = parallel.model_parallel * parallel.pipeline_stages  # Table 3's chips per replica, either kind
    ours = (config.seq_len, config.batch, parallel.pods, model_parallel, parallel.data_parallel, parallel.chips)
    theirs = tuple(int(paper[q]) for q in _LAYOUT)
    workload = tm_training_workload(name)
    tensors = workload.tensors
    size = data_size_per_iteration(config, parallel=parallel, optimizer_state_bytes=OPTIMIZER_STATE_BYTES)
    return {
        "workload": name,
        "layout_matches_table3": ours == theirs,
        "parameters": parameter_count(config),
        "paper_parameters": float(paper["parameter_size"]),
        "data_bytes": size.total_bytes,
        "paper_data_bytes": float(paper["data_size_per_iteration"]),
        "data_vs_paper": size.total_bytes / float(paper["data_size_per_iteration"]),
        "state_bytes": size.weights_bytes + size.weight_grads_bytes + size.optimizer_states_bytes,
        "saved_activation_bytes": size.saved_activations_bytes,
        "ops_per_chip": len(workload.ops),
        "peak_bytes_per_chip": memory_profile(workload).peak_bytes,
        "parameter_bytes_per_chip": int(tensors.loc[(tensors["kind"] == "weight") & (tensors["updates"] < 0), "bytes"].sum()),
        "macs_per_chip": workload.total_macs,
        "macs_all_chips": workload.total_macs * parallel.chips,
    }
