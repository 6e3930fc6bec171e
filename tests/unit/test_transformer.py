"""The analytic transformer generator: agreement with the ONNX path, structure, sharding, the TM presets."""

from __future__ import annotations

import math
import time
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from traincost.cost.optable import op_table
from traincost.errors import ConfigError, UnknownModelError
from traincost.memory.liveness import memory_profile
from traincost.models.gpt2 import GPT2_SMALL
from traincost.models.tm_training_workloads import (
    PIPELINE_STAGE,
    TM_TRAINING_WORKLOADS,
    data_size_per_iteration,
    tm_training_workload,
)
from traincost.models.transformer import (
    Parallelism,
    TransformerConfig,
    gpt2_transformer_config,
    parameter_count,
    transformer_workload,
)
from traincost.models.transformer.config import block_params, shard_sizes, stage_blocks
from traincost.workload import Workload

_CHIP_BYTES = 32 * 10**9  # TM-Training: 32 GB of address space per chip
# A GPT-3-shaped model small enough to build in milliseconds.
_MID = TransformerConfig(
    name="mid", n_layer=4, d_model=1024, n_head=16, d_head=64, d_ff=4096, vocab_size=8000, seq_len=256, batch=8
)


def _bytes_by_kind(workload: Workload) -> dict[str, int]:
    """Bytes of weights, weight gradients, optimizer states and saved activations.

    torch exports ``nn.Linear`` as ``Transpose(W)`` + ``MatMul``; the lowering counts that transpose as
    a view of the weight, not as a saved activation, as the analytic generator reads W transposed in place.
    """
    tensors = workload.tensors
    saved = tensors["saved_for_backward"]
    return {
        "weight": int(tensors.loc[tensors["kind"] == "weight", "bytes"].sum()),
        "weight_grad": int(tensors.loc[tensors["kind"] == "weight_grad", "bytes"].sum()),
        "optimizer_state": int(tensors.loc[tensors["kind"] == "optimizer_state", "bytes"].sum()),
        "saved_for_backward": int(tensors.loc[saved, "bytes"].sum()),
    }


def _gpt2_small() -> Workload:
    return transformer_workload(gpt2_transformer_config(GPT2_SMALL, batch=2), dtype_bytes=4, optimizer="adam")


def test_gpt2_small_agrees_with_the_onnx_path(chain) -> None:
    onnx = chain("gpt2_small", 2, "adam").workload
    ours = _gpt2_small()
    assert ours.total_macs == pytest.approx(onnx.total_macs, rel=0.02)
    assert ours.forward_macs == pytest.approx(onnx.forward_macs, rel=0.02)
    expected = _bytes_by_kind(onnx)
    for kind, value in _bytes_by_kind(ours).items():
        assert value == pytest.approx(expected[kind], rel=0.02), kind
    # op by op: the same MAC ops (matmuls and GEMMs) with the same MACs, forward and backward
    for phase in ("forward", "backward"):
        theirs = onnx.phase(phase)
        mine = ours.phase(phase)
        assert sorted(mine.loc[mine["macs"] > 0, "macs"]) == sorted(theirs.loc[theirs["macs"] > 0, "macs"]), phase


def test_gpt2_small_tensors_follow_the_lowering_conventions(chain) -> None:
    onnx = chain("gpt2_small", 2, "adam").workload
    ours = _gpt2_small()
    assert list(ours.ops.columns) == list(onnx.ops.columns)
    assert list(ours.tensors.columns) == list(onnx.tensors.columns)
    assert set(ours.tensors["kind"]) <= set(onnx.tensors["kind"]) | {"temporary"}
    # the batch inputs (token ids and labels) are saved, as in the lowered graph
    assert ours.tensors.loc[ours.tensors["kind"] == "input", "saved_for_backward"].all()


def _check_structure(workload: Workload) -> None:
    ops, tensors = workload.ops, workload.tensors
    assert list(ops["op"]) == list(range(len(ops)))
    assert ops["name"].is_unique and tensors["name"].is_unique
    for row in tensors.itertuples():
        assert all(reader > row.producer for reader in row.consumers), row.name
    phases = ops["phase"].to_numpy()
    # backward and recompute after every forward op, the optimizer last
    order = {"forward": 0, "recompute": 1, "backward": 1, "optimizer": 2}
    assert np.all(np.diff([order[p] for p in phases]) >= 0)
    updated = tensors[tensors["updates"] >= 0]
    target = tensors.set_index("tensor").loc[updated["updates"]]
    assert target["kind"].isin(["weight", "optimizer_state"]).all() and (target["producer"] == -1).all()
    assert (target["bytes"].to_numpy() == updated["bytes"].to_numpy()).all()
    assert (target["kind"].to_numpy() == updated["kind"].to_numpy()).all()
    assert (ops.loc[ops["phase"] == "optimizer", "kind"] == "optimizer").all()
    mac_ops = ops[ops["kind"].isin(["gemm", "matmul"])]
    assert (mac_ops["macs"] == mac_ops[["B", "K", "C", "OY", "OX", "FY", "FX", "G"]].prod(axis=1)).all()
    assert len(op_table(workload)) == len(ops)


@pytest.mark.parametrize(
    ("parallel", "recompute"),
    [
        (Parallelism(), "none"),
        (Parallelism(model_parallel=2, data_parallel=2), "layer"),
        (Parallelism(model_parallel=4, data_parallel=2, sequence_parallel=True, fully_sharded=True), "layer"),
    ],
)
def test_structure(parallel: Parallelism, recompute: str) -> None:
    _check_structure(transformer_workload(_MID, parallel=parallel, recompute=recompute))


def test_encoder_decoder_and_multi_query_structure() -> None:
    t5_like = replace(_MID, n_layer=4, n_encoder_layer=2, activation="relu", bias=False, learned_positions=False)
    palm_like = replace(_MID, gated_ffn=True, activation="swish", n_kv_head=1, bias=False)
    for config in (t5_like, palm_like):
        for parallel in (Parallelism(), Parallelism(model_parallel=2, sequence_parallel=True, fully_sharded=True)):
            _check_structure(transformer_workload(config, parallel=parallel, recompute="layer"))
    ops = transformer_workload(t5_like).ops
    assert ops["layer"].str.contains(r"blocks\.3\.cross").any() and not ops["layer"].str.contains(r"blocks\.1\.cross").any()


def test_forward_macs_match_the_two_n_tokens_rule() -> None:
    """Forward FLOPs (2 per MAC) ≈ 2 · parameters · tokens for a big model; backward MACs = 2 × forward."""
    gpt3, _ = TM_TRAINING_WORKLOADS["gpt3_175b"]
    config = replace(gpt3, batch=1)
    workload = transformer_workload(config)
    tokens = config.batch * config.seq_len
    assert 2 * workload.forward_macs == pytest.approx(2 * parameter_count(config) * tokens, rel=0.04)
    assert workload.phase("backward")["macs"].sum() == 2 * workload.forward_macs
    recomputed = transformer_workload(config, recompute="layer")
    assert 3 * workload.forward_macs < recomputed.total_macs < 4 * workload.forward_macs


def test_ops_per_block() -> None:
    workload = transformer_workload(_MID)
    per_block = workload.ops["layer"].str.extract(r"^blocks\.(\d+)")[0].dropna().value_counts()
    # forward: ln, qkv, split, scores, softmax, context, proj, add, ln, fc, act, proj, add (13);
    # backward: 2 per linear (8), act, 2 ln, 4 attention matmuls, softmax, concat (17); optimizer 1
    assert set(per_block) == {31}
    palm = tm_training_workload("palm_540b")
    assert len(palm.ops) / TM_TRAINING_WORKLOADS["palm_540b"][0].n_layer <= 62


def test_recompute_keeps_only_block_inputs() -> None:
    workload = transformer_workload(_MID, recompute="layer")
    saved = workload.tensors[workload.tensors["saved_for_backward"]]
    block_outputs = {"embedding.input.out"} | {f"blocks.{i}.mlp.residual.out" for i in range(_MID.n_layer)}
    in_blocks = saved["name"].str.startswith("blocks.") | (saved["name"] == "embedding.input.out")
    assert set(saved.loc[in_blocks, "name"]) == block_outputs
    assert (workload.ops["phase"] == "recompute").any()
    assert memory_profile(workload).peak_bytes < memory_profile(transformer_workload(_MID)).peak_bytes


def _weight_bytes(workload: Workload) -> int:
    tensors = workload.tensors
    return int(tensors.loc[(tensors["kind"] == "weight") & (tensors["updates"] < 0), "bytes"].sum())


def test_doubling_model_parallelism_halves_weight_bytes() -> None:
    one, two = (_weight_bytes(transformer_workload(_MID, parallel=Parallelism(model_parallel=mp))) for mp in (2, 4))
    assert two == pytest.approx(one / 2, rel=0.02)
    sharded = transformer_workload(_MID, parallel=Parallelism(model_parallel=2, data_parallel=4, fully_sharded=True))
    assert _weight_bytes(sharded) == pytest.approx(one / 4, rel=0.01)
    assert sharded.meta["chips"] == "8"


def test_data_parallelism_splits_the_batch() -> None:
    workload = transformer_workload(_MID, parallel=Parallelism(pods=2, data_parallel=2))
    assert workload.meta["batch"] == "2"
    assert workload.total_macs == pytest.approx(transformer_workload(_MID).total_macs / 4, rel=0.01)


@pytest.mark.parametrize(
    ("config", "parallel", "field"),
    [
        (_MID, Parallelism(pods=3), "batch"),
        (_MID, Parallelism(data_parallel=3), "batch"),
        (replace(_MID, n_head=6), Parallelism(model_parallel=4), "n_head"),
        (replace(_MID, d_ff=4098), Parallelism(model_parallel=4), "d_ff"),
    ],
)
def test_indivisible_shapes_name_the_field(config: TransformerConfig, parallel: Parallelism, field: str) -> None:
    with pytest.raises(ConfigError, match=f"'{field}'"):
        transformer_workload(config, parallel=parallel)


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"n_layer": 0}, "n_layer"),
        ({"batch": 2.5}, "batch"),
        ({"activation": "tanh"}, "activation"),
        ({"n_kv_head": 5}, "n_kv_head"),
        ({"n_encoder_layer": 4}, "n_encoder_layer"),
        ({"gated_ffn": 1}, "gated_ffn"),
    ],
)
def test_config_validation_names_the_field(changes: dict[str, object], field: str) -> None:
    with pytest.raises(ConfigError, match=f"'{field}'"):
        replace(_MID, **changes)


def test_option_validation() -> None:
    with pytest.raises(ConfigError, match="'model_parallel'"):
        Parallelism(model_parallel=0)
    with pytest.raises(ConfigError, match="'optimizer'"):
        transformer_workload(_MID, optimizer="lamb")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="'recompute'"):
        transformer_workload(_MID, recompute="all")  # type: ignore[arg-type]
    with pytest.raises(UnknownModelError, match="bert_large"):
        tm_training_workload("bert")


def test_mixed_precision_adds_a_master_copy() -> None:
    workload = transformer_workload(_MID, dtype_bytes=2, optimizer_state_bytes=4)
    states = workload.tensors[(workload.tensors["kind"] == "optimizer_state") & (workload.tensors["updates"] < 0)]
    assert states["bytes"].sum() == 3 * 2 * _weight_bytes(workload)  # master, exp_avg, exp_avg_sq in fp32


def test_data_size_counts_one_replica() -> None:
    parallel = Parallelism(model_parallel=2, data_parallel=4, fully_sharded=True)
    size = data_size_per_iteration(_MID, parallel=parallel)
    assert size.weights_bytes == pytest.approx(2 * parameter_count(_MID), rel=0.01)
    assert size.weight_grads_bytes == size.weights_bytes
    assert size.optimizer_states_bytes == 2 * size.weights_bytes
    plain = transformer_workload(_MID, parallel=replace(parallel, fully_sharded=False))
    saved = plain.tensors.loc[plain.tensors["saved_for_backward"], "bytes"].sum()
    assert size.saved_activations_bytes == 2 * saved
    assert size.total_bytes == sum(
        (size.weights_bytes, size.weight_grads_bytes, size.optimizer_states_bytes, size.saved_activations_bytes)
    )


@pytest.mark.parametrize("name", list(TM_TRAINING_WORKLOADS))
def test_tm_presets_build_fast_and_fit_a_chip(name: str) -> None:
    config, parallel = TM_TRAINING_WORKLOADS[name]
    began = time.perf_counter()
    workload = tm_training_workload(name)
    assert time.perf_counter() - began < 5.0
    assert parallel.chips == {"bert_large": 4, "t5_11b": 16, "chinchilla_70b": 1024, "gpt3_175b": 2048, "palm_540b": 6144}[name]
    assert memory_profile(workload).peak_bytes < _CHIP_BYTES
    # fully sharded: each chip stores parameters × 2 bytes / chips ("model size" of the Tier 1 ratio); PaLM's chip is a
    # pipeline stage: its blocks' parameters × 2 bytes / replicas
    if parallel.pipeline_stages > 1:
        shard = shard_sizes(config, parallel)
        blocks = stage_blocks(config.n_layer, parallel.pipeline_stages, PIPELINE_STAGE[name])
        params = sum(math.prod(shape) for b in blocks for _, shape in block_params(config, shard, b))
        assert _weight_bytes(workload) == pytest.approx(2 * params / parallel.replicas, rel=1e-3)
    else:
        assert _weight_bytes(workload) == pytest.approx(2 * parameter_count(config) / parallel.chips, rel=0.03)
    assert isinstance(workload.ops, pd.DataFrame) and len(op_table(workload)) == len(workload.ops)
