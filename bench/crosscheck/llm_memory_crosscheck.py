"""Per-chip memory of GPT-3 and PaLM as TM-Training runs them: ours beside a hand count and llm-analysis.

    python bench/crosscheck/llm_memory_crosscheck.py [--llm-analysis-python bench/.venv-llm-analysis/bin/python]

For each TM-Training preset (``traincost.models.tm_training_workloads``; GPT-3: 4-way tensor parallelism, PaLM: 12
pipeline stages, 1F1B over 4 micro-batches, a middle stage; both fully sharded over 512 replicas, mixed-precision Adam,
block recomputation) it prints, per chip in GB: weights, optimizer states and reduced weight gradients as stored, the
largest working set during the forward and the backward pass (``traincost.memory.liveness``), and the same
quantities by hand (parameters of the chip's blocks x bytes per parameter / replicas) and by llm-analysis 0.2.2
(``LLMAnalysis.training``, ZeRO-3, full recomputation, run in its own venv: ``bench/crosscheck/requirements-llm-analysis.txt``;
skipped when that interpreter is absent).

Where the three count differently (the columns are not meant to be equal):

* **Gradients.** Ours keeps the reduced gradient as BF16 shards, reduce-scattered after each micro-batch (2 B per
  parameter / replicas); the unsharded local gradient of one block lives only within its backward and shows in the
  backward working set. llm-analysis counts FP32 gradients (4 B per parameter), sharded by ZeRO.
* **Weights.** llm-analysis spreads the layers and the embedding evenly over the pipeline stages (118 / 12 = 9.83
  layers each); ours is one stage (9 blocks, no embedding). Neither counts the other's replicated multi-query
  key/value head the same way (ours replicates it on every tensor-parallel chip).
* **Gathered weights.** Under ZeRO-3 a block's weights are all-gathered before use. llm-analysis's memory is the
  shards alone; ours counts the gathered block, which is the bulk of the working sets (PaLM: 9.1 GB a block, the
  paper's "about 9 GB for the forward pass").
* **Activations.** llm-analysis divides them by the tensor-parallel degree as with sequence parallelism
  (``sp_size`` = ``tp_size``) and, with full recomputation, counts one layer's activations per micro-batch in
  flight; ours is op-level liveness (GPT-3's preset has no sequence parallelism, so its LayerNorm activations are
  replicated on the four chips).
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd

from traincost.memory.liveness import memory_profile
from traincost.models.tm_training_workloads import PIPELINE_STAGE, TM_TRAINING_WORKLOADS, tm_training_workload
from traincost.models.transformer.config import block_params, shard_sizes, stage_blocks

REPO = Path(__file__).resolve().parents[2]
GB = 1e9
_STATE_BYTES = 12  # FP32 master copy and Adam's two moments
_LLM_ANALYSIS = """
import json, sys
from llm_analysis.analysis import ActivationRecomputation, DSZeRO, LLMAnalysis
from llm_analysis.config import DtypeConfig, GPUConfig, ModelConfig, ParallelismConfig
gpu = GPUConfig(name="tpuv4_like", mem_per_GPU_in_GB=32, hbm_bandwidth_in_GB_per_sec=1200,
                intra_node_bandwidth_in_GB_per_sec=300, intra_node_min_message_latency=1e-5, peak_fp16_TFLOPS=275)
out = {}
for case in json.load(sys.stdin):
    model = ModelConfig(**case["model"])
    analysis = LLMAnalysis(model, gpu, DtypeConfig(), ParallelismConfig(**case["parallel"]))
    result = analysis.training(activation_recomputation=ActivationRecomputation.FULL, ds_zero=DSZeRO.STAGE_3,
                               flash_attn=False, **case["training"])
    out[case["name"]] = {k: result[k] for k in ("weight_memory_per_gpu", "optimizer_state_memory_per_gpu",
                                                "gradient_memory_per_gpu", "activation_memory_per_gpu")}
print(json.dumps(out))
"""


def ours(name: str) -> dict[str, float]:
    """Per-chip GB of the preset as generated: stored kinds and the forward and backward working sets."""
    workload = tm_training_workload(name)
    t = workload.tensors
    stored = t["updates"] < 0
    profile = memory_profile(workload)
    phase = workload.ops["phase"].to_numpy()
    backward = (phase == "backward") | (phase == "recompute")
    # the gradients as the optimizer reads them (earlier micro-batches' shards were summed into these)
    optimizer_inputs = {i for inputs in workload.ops.loc[phase == "optimizer", "inputs"] for i in inputs}
    return {
        "weights": t.loc[stored & (t["kind"] == "weight"), "bytes"].sum() / GB,
        "optimizer_states": t.loc[stored & (t["kind"] == "optimizer_state"), "bytes"].sum() / GB,
        "gradients": t.loc[list(optimizer_inputs & set(t.index[t["kind"] == "weight_grad"])), "bytes"].sum() / GB,
        "forward_working_set": float(profile.live_bytes[phase == "forward"].max()) / GB,
        "backward_working_set": float(profile.live_bytes[backward].max()) / GB,
    }


def by_hand(name: str) -> dict[str, float]:
    """Per-chip GB from the chip's parameters (BF16 weight and gradient shards, 12 B of optimizer state each) and, for
    the working sets, one gathered block (and, backward, its local gradient) beside every block input the schedule
    keeps in flight (block recomputation saves only those)."""
    config, parallel = TM_TRAINING_WORKLOADS[name]
    shard = shard_sizes(config, parallel)
    stage = PIPELINE_STAGE.get(name, 0)
    blocks = stage_blocks(config.n_layer, parallel.pipeline_stages, stage)
    params = sum(math.prod(shape) for b in blocks for _, shape in block_params(config, shard, b))
    if parallel.pipeline_stages == 1:  # the embedding too (vocabulary-parallel)
        params += shard.vocab * config.d_model + (config.seq_len * config.d_model if config.learned_positions else 0)
    per_replica = params / parallel.replicas
    block = sum(math.prod(shape) for _, shape in block_params(config, shard, blocks[0]))
    in_flight = min(parallel.pipeline_stages - stage, parallel.micro_batches)
    saved = len(blocks) * in_flight * shard.sequences * shard.local_seq * shard.d_model * 2
    return {
        "weights": 2 * per_replica / GB,
        "optimizer_states": _STATE_BYTES * per_replica / GB,
        "gradients": 2 * per_replica / GB,
        "forward_working_set": (2 * block + saved) / GB,
        "backward_working_set": (4 * block + saved) / GB,
    }


def llm_analysis(python: Path, names: list[str]) -> dict[str, dict[str, float]]:
    """llm-analysis's per-GPU memory for each preset, run with ``python`` (its venv)."""
    cases = []
    for name in names:
        config, parallel = TM_TRAINING_WORKLOADS[name]
        micro = config.batch // parallel.replicas // parallel.micro_batches
        cases.append(
            {
                "name": name,
                "model": {
                    "name": name,
                    "num_layers": config.n_layer,
                    "n_head": config.n_head,
                    "hidden_dim": config.d_model,
                    "vocab_size": config.vocab_size,
                    "max_seq_len": config.seq_len,
                    "num_key_value_heads": config.kv_heads,
                    "ffn_embed_dim": config.d_ff,
                },
                "parallel": {
                    "tp_size": parallel.model_parallel,
                    "pp_size": parallel.pipeline_stages,
                    "dp_size": parallel.replicas,
                },
                "training": {
                    "batch_size_per_gpu": micro,
                    "gradient_accumulation_steps": parallel.micro_batches,
                    "seq_len": config.seq_len,
                    "mlp_gated_linear_units": config.gated_ffn,
                },
            }
        )
    done = subprocess.run([str(python), "-c", _LLM_ANALYSIS], input=json.dumps(cases), capture_output=True, text=True, check=True)
    raw = json.loads(done.stdout.strip().splitlines()[-1])
    return {
        name: {
            "weights": v["weight_memory_per_gpu"] / GB,
            "optimizer_states": v["optimizer_state_memory_per_gpu"] / GB,
            "gradients": v["gradient_memory_per_gpu"] / GB,
            "activations": v["activation_memory_per_gpu"] / GB,
        }
        for name, v in raw.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--llm-analysis-python", type=Path, default=REPO / "bench/.venv-llm-analysis/bin/python")
    args = parser.parse_args()
    names = ["gpt3_175b", "palm_540b"]
    rows = []
    theirs = llm_analysis(args.llm_analysis_python, names) if args.llm_analysis_python.exists() else {}
    for name in names:
        for source, values in (("ours", ours(name)), ("by hand", by_hand(name)), ("llm-analysis", theirs.get(name))):
            if values is not None:
                rows.append({"workload": name, "source": source} | values)
    table = pd.DataFrame(rows).replace({np.nan: None})
    with pd.option_context("display.width", 200, "display.max_columns", None, "display.float_format", "{:,.3f}".format):
        print(table.to_string(index=False, na_rep="-"))
    if not theirs:
        print(f"(llm-analysis skipped: no {args.llm_analysis_python}; see bench/crosscheck/requirements-llm-analysis.txt)")


if __name__ == "__main__":
    main()
