"""Pipeline parallelism in the transformer generator: the schedules' order, what a stage holds, the activations a
schedule keeps in flight, gradient accumulation over micro-batches, and PaLM's stage as the paper sizes its data."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from traincost.errors import ConfigError
from traincost.models.tm_training_workloads import PIPELINE_STAGE, TM_TRAINING_WORKLOADS, tm_training_workload
from traincost.models.transformer import Parallelism, TransformerConfig, transformer_workload
from traincost.models.transformer.config import block_params, shard_sizes, stage_blocks
from traincost.models.transformer.step import pipeline_order
from traincost.tiered.study import layer_footprint_bytes
from traincost.workload import Workload

_MID = TransformerConfig(
    name="mid", n_layer=4, d_model=1024, n_head=16, d_head=64, d_ff=4096, vocab_size=8000, seq_len=256, batch=8
)


def _passes(order: list[tuple[str, int]]) -> str:
    return " ".join(f"{phase[0].upper()}{j}" for phase, j in order)


def _in_flight(order: list[tuple[str, int]]) -> int:
    """The most micro-batches whose forward has run and whose backward has not."""
    live, most = 0, 0
    for phase, _ in order:
        live += 1 if phase == "forward" else -1
        most = max(most, live)
    return most


def test_the_schedules_order_the_passes_as_gpipe_and_1f1b_do() -> None:
    assert _passes(pipeline_order("1f1b", 4, 0, 6)) == "F0 F1 F2 F3 B0 F4 B1 F5 B2 B3 B4 B5"
    assert _passes(pipeline_order("1f1b", 4, 3, 3)) == "F0 B0 F1 B1 F2 B2"
    assert _passes(pipeline_order("gpipe", 4, 3, 3)) == "F0 F1 F2 B0 B1 B2"
    assert _passes(pipeline_order("1f1b", 1, 0, 2)) == "F0 B0 F1 B1"  # one stage: gradient accumulation
    for stages, micro in ((4, 6), (4, 2), (8, 16)):
        for stage in range(stages):
            assert _in_flight(pipeline_order("1f1b", stages, stage, micro)) == min(stages - stage, micro)
            assert _in_flight(pipeline_order("gpipe", stages, stage, micro)) == micro


def _stage(stage: int, **parallel: object) -> Workload:
    layout = Parallelism(pipeline_stages=2, micro_batches=4) if not parallel else Parallelism(**parallel)
    return transformer_workload(_MID, parallel=layout, optimizer="adam", recompute="layer", pipeline_stage=stage)


def _weights(workload: Workload) -> int:
    t = workload.tensors
    return int(t.loc[(t["kind"] == "weight") & (t["updates"] < 0), "bytes"].sum())


def test_the_stages_split_the_model_and_its_work() -> None:
    whole = transformer_workload(_MID, optimizer="adam", recompute="layer")
    first, last = _stage(0), _stage(1)
    # every MAC once: the micro-batches split the tokens, the stages the blocks, the head runs on the last stage
    assert first.total_macs + last.total_macs == whole.total_macs
    # the weights too, but for the last stage's copy of the tied embedding (vocabulary x d_model, BF16)
    assert _weights(first) + _weights(last) == _weights(whole) + 8000 * 1024 * 2
    assert set(first.ops["layer"].str.extract(r"^blocks\.(\d+)")[0].dropna().astype(int)) == {0, 1}
    assert "lm_head/forward" not in set(first.ops["name"]) and "embedding.input/forward" not in set(last.ops["name"])
    # the neighbours exchange a micro-batch's residual stream (2 sequences x 256 x 1024 x 2 B) each way
    for workload, sends, receives in ((first, "forward", "backward"), (last, "backward", "forward")):
        ops = workload.ops
        assert list(ops.loc[ops["op_type"] == "Send", "phase"]) == [sends] * 4
        assert list(ops.loc[ops["op_type"] == "Recv", "phase"]) == [receives] * 4
    received = last.tensors.loc[last.ops.loc[last.ops["op_type"] == "Recv", "outputs"].iloc[0][0]]
    assert received["bytes"] == 2 * 256 * 1024 * 2
    assert first.meta["batch"] == "8" and first.meta["micro_batch"] == "2"
    assert float(first.meta["pipeline_bubble_fraction"]) == pytest.approx(1 / 5)


def _saved_in_flight_bytes(workload: Workload) -> int:
    """The most bytes of activations saved for the backward pass that are live at once."""
    t, n = workload.tensors, len(workload.ops)
    change = np.zeros(n + 1)
    for _, row in t[t["saved_for_backward"]].iterrows():
        start = max(row["producer"], 0)
        change[start] += row["bytes"]
        change[max(row["consumers"]) + 1] -= row["bytes"]
    return int(np.cumsum(change).max())


def test_1f1b_keeps_fewer_micro_batches_in_flight_than_gpipe_by_hand() -> None:
    # stage 0 of 2, 4 micro-batches of 2 sequences, recomputation: a micro-batch in flight keeps its 2 block inputs
    # (2 x 256 x 1024 x 2 B each); the token ids of all 4 (2 x 256 x 8 B each) are there from the start, as inputs.
    # 1F1B holds 2 micro-batches in flight, GPipe all 4
    per_micro, tokens = 2 * (2 * 256 * 1024 * 2), 4 * (2 * 256 * 8)
    one_f_one_b = _stage(0)
    gpipe = _stage(0, pipeline_stages=2, micro_batches=4, pipeline_schedule="gpipe")
    assert _saved_in_flight_bytes(one_f_one_b) == 2 * per_micro + tokens
    assert _saved_in_flight_bytes(gpipe) == 4 * per_micro + tokens
    assert one_f_one_b.total_macs == gpipe.total_macs


def test_weight_gradients_accumulate_over_micro_batches() -> None:
    # one stage, two micro-batches, one replica: the second micro-batch's weight-gradient op adds to the first's, and
    # the optimizer reads the sum
    workload = transformer_workload(_MID, parallel=Parallelism(micro_batches=2), optimizer="sgd")
    ops, t = workload.ops, workload.tensors
    wgrads = ops[ops["name"] == "blocks.0.mlp.fc/wgrad"]
    assert len(wgrads) == 2
    first_out = wgrads["outputs"].iloc[0][0]
    assert first_out in wgrads["inputs"].iloc[1] and first_out not in wgrads["inputs"].iloc[0]
    final = wgrads["outputs"].iloc[1][0]
    update = ops[ops["name"] == "blocks.0/sgd"].iloc[0]
    assert final in update["inputs"] and t.loc[final, "kind"] == "weight_grad"
    # fully sharded over replicas, each micro-batch's gradients are reduce-scattered and the shards summed instead
    sharded = transformer_workload(
        _MID, parallel=Parallelism(data_parallel=2, micro_batches=2, fully_sharded=True), optimizer="sgd"
    )
    scatters = sharded.ops[sharded.ops["name"] == "blocks.0/reduce_scatter_grads"]
    assert len(scatters) == 2 and set(scatters["outputs"].iloc[0]) <= set(scatters["inputs"].iloc[1])


@pytest.mark.parametrize(
    ("parallel", "stage", "message"),
    [
        (Parallelism(micro_batches=3), 0, "'micro_batches' \\(3\\) must divide the 8 sequences"),
        (Parallelism(pipeline_stages=5), 0, "'pipeline_stages' \\(5\\) must not exceed 'n_layer' \\(4\\)"),
        (Parallelism(pipeline_stages=2), 2, "'pipeline_stage' must be an int in \\[0, pipeline_stages\\) = \\[0, 2\\)"),
    ],
)
def test_a_pipeline_that_does_not_fit_the_model_is_refused(parallel: Parallelism, stage: int, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        transformer_workload(_MID, parallel=parallel, pipeline_stage=stage)
    with pytest.raises(ConfigError, match="pipeline_schedule"):
        Parallelism(pipeline_schedule="interleaved")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="encoder-decoder"):
        transformer_workload(replace(_MID, n_encoder_layer=2), parallel=Parallelism(pipeline_stages=2))


def test_palm_runs_a_whole_layer_per_chip_as_the_paper_sizes_its_data() -> None:
    # "about 9 GB of memory space for the forward pass and about 22.5 GB for the backward pass" (section 5.2): a chip
    # gathers whole layers (a PaLM block is 4.5 B parameters, 9.1 GB in BF16), as pipeline stages do
    config, parallel = TM_TRAINING_WORKLOADS["palm_540b"]
    shard = shard_sizes(config, parallel)
    stage = PIPELINE_STAGE["palm_540b"]
    workload = tm_training_workload("palm_540b")
    t = workload.tensors
    gathered = t[t["kind"] == "temporary"]
    block = sum(int(np.prod(shape)) for _, shape in block_params(config, shard, stage_blocks(118, 12, stage)[0]))
    assert 2 * block == pytest.approx(9.08e9, rel=0.01)
    per_block = gathered.groupby(gathered["name"].str.extract(r"^blocks\.(\d+)\.")[0])["bytes"].sum() / 4 / 2
    assert (per_block == 2 * block).all()  # each block gathered whole, per micro-batch, forward and backward
    assert workload.meta["batch"] == "4" and json.loads(workload.meta["parallelism"])["pipeline_stage"] == stage


def test_a_preset_takes_another_layout_and_refuses_an_unknown_field() -> None:
    tensor = tm_training_workload(
        "palm_540b", layout={"model_parallel": 12, "pipeline_stages": 1, "micro_batches": 1, "sequence_parallel": True}
    )
    assert len(tensor.ops) == 7096 and json.loads(tensor.meta["parallelism"])["pipeline_stage"] == 0
    with pytest.raises(ConfigError, match=r"\['tensor_parallel'\] are not fields of the parallelism"):
        tm_training_workload("palm_540b", layout={"tensor_parallel": 12})


def test_a_layers_footprint_is_one_pass_of_its_weights_and_activations() -> None:
    # one stage, no sharding: a pass reads the block's weights whole and the activations of its micro-batch, which halve
    # with two micro-batches; so 2 x (two micro-batches) - (one) leaves the block's weights, 2 bytes per parameter
    one, two = (
        layer_footprint_bytes(transformer_workload(_MID, parallel=Parallelism(micro_batches=m), optimizer="sgd")) for m in (1, 2)
    )
    shard = shard_sizes(_MID, Parallelism())
    weights = 2 * sum(int(np.prod(shape)) for _, shape in block_params(_MID, shard, 0))
    assert 2 * two[0] - one[0] == weights
    assert one[1] > one[0]  # the backward pass reads the forward's activations and writes gradients as well
