"""An analytic transformer training step, emitted straight as the Workload IR from hyper-parameters.

For language models far too big to export (GPT-3, PaLM), ``transformer_workload`` writes the ops
and tensors of one training iteration (forward, backward, optimizer) of **one chip**, in execution
order, with the columns and conventions of :func:`traincost.frontend.onnx.lower.lower` (see
:mod:`traincost.workload`). On the zoo's ``gpt2_small`` it reproduces the lowered ONNX training graph:
the same MACs and the same bytes of weights, saved activations, weight gradients and optimizer
states (``tests/unit/test_transformer.py``). It differs in op granularity (fused LayerNorm, GELU,
softmax, loss and optimizer ops), in order (each weight gradient right after its layer's input
gradient, where ONNX Runtime puts them all at the end of the backward pass) and in reading weights
transposed in place (the exported graph keeps a transposed copy of every linear weight).

The model
    Token embedding (optionally plus learned positions), ``n_layer`` pre-LayerNorm blocks, a final
    LayerNorm, a language-model head (tied to the token embedding or its own matrix) and a
    softmax cross-entropy over every position. A block is ``x + attn(ln_1(x))`` then
    ``x + mlp(ln_2(x))``. Attention has ``n_head`` query heads of width ``d_head`` and ``n_kv_head``
    key/value heads (fewer for multi-query attention, as PaLM); the MLP is ``d_model → d_ff → d_model``
    or, with ``gated_ffn``, ``act(x·W_gate) ⊙ (x·W_fc)`` then ``→ d_model`` (SwiGLU with
    ``activation="swish"``). With ``n_encoder_layer > 0`` the first ``n_encoder_layer`` of the
    ``n_layer`` blocks form an encoder over its own ``seq_len`` tokens, closed by a LayerNorm, and
    every later (decoder) block has a cross-attention sub-block between self-attention and MLP
    whose keys and values are projected from the encoder output (T5); the decoder sequence is also
    ``seq_len`` long. There is no dropout; the attention mask is part of the softmax op.

Ops (``name`` is ``<layer>/<role>``; ``layer`` names the forward computation an op derives from)
    Forward: LayerNorm (kind ``norm``; outputs y, mean, 1/std), linear layers as kind ``gemm`` on
    ``tokens × d_in`` activations (``B=1, OY=tokens, C=d_in, K=d_out``; the bias is the Gemm's
    third input), the q/k/v ``Split`` (kind ``layout``), attention scores and context as batched
    ``matmul`` (``B=b·kv_heads, OY=(heads/kv_heads)·seq, …``), one ``softmax`` op that also scales
    and masks, one activation op (``eltwise``), residual ``Add`` s. Backward: per linear a
    ``dgrad`` (``OY=tokens, C=d_out, K=d_in``) and a ``wgrad`` (``OY=d_in, C=tokens, K=d_out``;
    it also reduces the bias gradient), per LayerNorm one ``norm`` gradient op that also adds the
    residual gradient, the attention's four matmuls and softmax gradient, a ``Concat`` of dq/dk/dv.
    Optimizer: one fused op (kind ``optimizer``) per block and one for the embedding/head group,
    reading every parameter, gradient and state of the group and writing ``<p>.updated`` and
    ``<p>.<state>.updated`` (``updates`` points at the persistent tensor). ``layer`` is
    ``blocks.<i>.<sub-layer>`` (e.g. ``blocks.3.attn.qkv``, ``blocks.3.ln_2``) for block ops,
    ``blocks.<i>`` for a block's collectives of weights and its optimizer op, and ``embedding``,
    ``ln_enc``, ``ln_f``, ``lm_head``, ``loss`` outside the blocks: ops of the same kind, phase and
    loop dimensions repeat identically in every block.

Tensors
    Kinds and ``saved_for_backward`` as :mod:`traincost.frontend.onnx.lower` sets them: ``input`` (token
    ids and labels, int64), ``activation`` (forward and recompute outputs), ``gradient`` (backward
    outputs), ``weight`` and ``optimizer_state`` (persistent; the ``.updated`` copies carry
    ``updates``), ``weight_grad`` (the gradient the optimizer reads), ``output`` (the loss), and
    ``temporary`` for weights all-gathered from their shards. The GELU form ``"gelu_tanh"`` is the
    tanh approximation computed op by op (as eager code that spells it out): its backward reads x,
    x², tanh(·) and 1 + tanh(·), so these are saved; ``"gelu"`` is a fused kernel whose backward
    reads its input, as torch's ``nn.GELU`` (either form) and the ONNX path's FastGelu do.
    When optimizer states are wider than ``dtype_bytes`` (mixed precision), every parameter also has
    a ``master`` state, which the optimizer updates and rounds into the parameter.

Parallelism (one chip's share)
    Data parallelism over ``pods × data_parallel`` replicas: each chip runs ``batch / (pods ×
    data_parallel)`` sequences. Megatron tensor parallelism over ``model_parallel`` chips: attention
    heads, the FFN's ``d_ff`` columns and the vocabulary are split; its f/g operators are
    ``AllReduce`` ops (kind ``eltwise``, reading the partial sum and writing the reduced tensor)
    after the attention and MLP output projections and the embedding (forward) and after the input
    projections' and the head's input gradients (backward). Key/value heads fewer than
    ``model_parallel`` (multi-query) are replicated. With ``sequence_parallel`` (Korthikanti et al.
    2022) the LayerNorms and residual stream hold ``⌈seq_len / model_parallel⌉`` positions and each
    AllReduce becomes an ``AllGather`` into the tensor-parallel region and a ``ReduceScatter`` out
    of it (all collectives are kind ``eltwise``; an AllGather does no arithmetic); the gathered input
    of a block's first GEMMs is saved whole, not re-gathered in the backward pass. Pipeline parallelism over
    ``pipeline_stages`` stages (GPipe or 1F1B micro-batching, :mod:`~traincost.models.transformer.step`): the chip is
    one stage (``pipeline_stage``), holding its blocks' weights; a replica's sequences run in ``micro_batches``
    micro-batches, whose activations stay on the stage from their forward to their backward (the schedule decides how
    many are in flight), passed between stages by ``Recv``/``Send`` ops (kind ``eltwise``); the pipeline's idle fill
    and drain, ``(p - 1) / (m + p - 1)`` of the iteration, has no ops and is recorded in the metadata
    (``pipeline_bubble_fraction``). With
    ``fully_sharded`` (ZeRO-3 / FSDP, as PaLM) every parameter and optimizer state is
    stored as a flat shard over the ``pods × data_parallel`` replicas: an ``AllGather`` per block
    writes the block's weights (kind ``temporary``, ``<p>/gathered``) before its forward and again
    before its backward, the embedding/head group is gathered once and kept to the end of the
    backward (FSDP's root unit), and a ``ReduceScatter`` per block writes the gradient shards.
    Without it, more than one replica all-reduces each block's gradients (``AllReduce``). Gradients
    of LayerNorm parameters under sequence parallelism and the vocabulary-parallel loss's two
    per-token all-reduces are not modelled (a few bytes per token).

Recomputation
    ``recompute="layer"`` keeps only each block's input from the forward pass; just before the
    block's backward, its forward is re-run (phase ``recompute``, ``/recompute`` names) up to the
    last tensor the backward reads (the MLP activation), as ``traincost.optimize.checkpoint`` would.

Layout: ``config`` (architecture, parallelism, one chip's sizes, parameters), ``graph`` (the op and
tensor rows), ``collectives`` (parameters and the collectives of parallelism), ``layers`` (a block's
layers, forward and backward), ``step`` (blocks, recomputation, embedding, head, loss, optimizer).

TM-Training's five workloads are presets of this generator: :mod:`traincost.models.tm_training_workloads`.
"""

from __future__ import annotations

import json
from types import MappingProxyType
from typing import get_args

from traincost.errors import ConfigError
from traincost.models._validation import check_positive_int
from traincost.models.transformer.config import (
    Activation,
    OptimizerName,
    Parallelism,
    PipelineSchedule,
    Recompute,
    TransformerConfig,
    gpt2_transformer_config,
    parameter_count,
    shard_sizes,
)
from traincost.models.transformer.step import TrainingStep
from traincost.workload import Workload

__all__ = [
    "Activation",
    "OptimizerName",
    "Recompute",
    "Parallelism",
    "PipelineSchedule",
    "TransformerConfig",
    "gpt2_transformer_config",
    "parameter_count",
    "transformer_workload",
]

_PRECISION = MappingProxyType({1: "int8", 2: "bf16", 4: "fp32", 8: "fp64"})


def transformer_workload(
    config: TransformerConfig,
    *,
    parallel: Parallelism = Parallelism(),  # noqa: B008 - frozen, so sharing the default is safe
    optimizer: OptimizerName = "adam",
    dtype_bytes: int = 2,
    optimizer_state_bytes: int | None = None,
    recompute: Recompute = "none",
    pipeline_stage: int = 0,
) -> Workload:
    """One chip's training step of ``config`` under ``parallel``, as a Workload (see the module docstring).

    Args:
        config: The architecture and global batch.
        parallel: How the step is spread over chips; the Workload is one chip's share.
        optimizer: ``sgd`` (no state) or ``adam`` (two states per parameter).
        dtype_bytes: Bytes per element of weights, activations and gradients (2: bf16).
        optimizer_state_bytes: Bytes per optimizer-state element (``None``: ``dtype_bytes``).
        recompute: ``none``, or ``layer`` (only block inputs are saved; each block's forward is
            re-run before its backward).
        pipeline_stage: The stage the chip is, from 0 (the first, which holds the embedding and, under 1F1B, the
            most micro-batches in flight) to ``parallel.pipeline_stages - 1`` (the head and loss).

    Returns:
        The Workload; its metadata records the model, the per-chip and global batch, the
        parallelism, the optimizer, the precision and ``source`` ``traincost.models.transformer``.

    Raises:
        ConfigError: An option is out of range, or the batch, heads, FFN width or sequence does not
            split over the chips; the message names the field.
    """
    if optimizer not in get_args(OptimizerName):
        raise ConfigError(f"'optimizer' must be one of {', '.join(get_args(OptimizerName))}, got {optimizer!r}")
    if recompute not in get_args(Recompute):
        raise ConfigError(f"'recompute' must be one of {', '.join(get_args(Recompute))}, got {recompute!r}")
    check_positive_int(dtype_bytes, field="dtype_bytes")
    state_bytes = (
        dtype_bytes if optimizer_state_bytes is None else check_positive_int(optimizer_state_bytes, field="optimizer_state_bytes")
    )
    shard = shard_sizes(config, parallel)
    stages = parallel.pipeline_stages
    if isinstance(pipeline_stage, bool) or not isinstance(pipeline_stage, int) or not 0 <= pipeline_stage < stages:
        raise ConfigError(
            f"'pipeline_stage' must be an int in [0, pipeline_stages) = [0, {parallel.pipeline_stages}), got {pipeline_stage!r}"
        )
    step = TrainingStep(
        config,
        shard,
        optimizer=optimizer,
        dtype_bytes=dtype_bytes,
        state_bytes=state_bytes,
        recompute=recompute,
        schedule=parallel.pipeline_schedule,
        stage=pipeline_stage,
    )
    meta = {
        "model": config.name,
        "batch": str(shard.sequences * shard.micro_batches),
        "global_batch": str(config.batch),
        "input_shape": json.dumps([shard.sequences, shard.seq_len]),
        "optimizer": optimizer,
        "precision": _PRECISION.get(dtype_bytes, f"{8 * dtype_bytes}-bit"),
        "optimizer_state_bytes": str(state_bytes),
        "recompute": recompute,
        "parallelism": json.dumps(
            {
                "pods": parallel.pods,
                "model_parallel": parallel.model_parallel,
                "data_parallel": parallel.data_parallel,
                "sequence_parallel": parallel.sequence_parallel,
                "fully_sharded": parallel.fully_sharded,
                "pipeline_stages": parallel.pipeline_stages,
                "micro_batches": parallel.micro_batches,
                "pipeline_schedule": parallel.pipeline_schedule,
                "pipeline_stage": pipeline_stage,
            }
        ),
        "micro_batch": str(shard.sequences),
        "pipeline_bubble_fraction": f"{parallel.bubble_fraction:.6g}",
        "chips": str(parallel.chips),
        "parameters_total": str(parameter_count(config)),
        "source": "traincost.models.transformer",
    }
    return step.build().workload(meta)
