"""TM-Training's five workloads (``tm_training.md`` Table 3) as presets of the transformer generator.

``TM_TRAINING_WORKLOADS`` holds the five workloads of TM-Training (``tm_training.md`` Table 3:
sequence length, global batch, pods, model and data parallelism) with the published
architectures: BERT-Large (Devlin et al. 2019: 24 layers, 1024 wide, 16 heads, 4096 FFN,
30,522 tokens, 512 learned positions), T5-11B (Raffel et al. 2020: 24 + 24 layers, d_model
1024, d_ff 65,536 ReLU, 128 heads of d_kv 128, 32,128 tokens, relative positions, no biases,
shared embeddings), Chinchilla (Hoffmann et al. 2022, Table 4: 80 layers, 8192 wide, 64 heads
of 128, d_ff 32,768, 32,000 tokens, relative positions), GPT-3 175B (Brown et al. 2020: 96
layers, 12,288 wide, 96 heads of 128, d_ff 49,152, 50,257 tokens, 2048 learned positions) and
PaLM 540B (Chowdhery et al. 2022: 118 layers, 18,432 wide, 48 heads of 256, multi-query, d_ff
73,728 SwiGLU, 256,000 tokens, RoPE, no biases, shared embeddings). All are ``fully_sharded``
(so the per-chip "model size" is parameters × 2 bytes / chips, as the paper's Tier 1 ratios
imply) and :func:`tm_training_workload` runs them with ``recompute="layer"``, without which no
preset fits 32 GB per chip. Table 3's "model parallelism" is tensor parallelism for T5 to GPT-3 and pipeline
stages for PaLM: section 5.2 states that "Running PaLM needs about 9 GB of memory space for the forward pass and about
22.5 GB for the backward pass", a whole layer's weights (9.2 GB in BF16) and its gradients per chip, which 12-way
tensor parallelism (a twelfth of a layer per chip: 6 / 7 GB of working set with sequence parallelism) cannot give.
PaLM's 12 model-parallel chips are therefore 12 pipeline stages of 9-10 blocks, 1F1B over the replica's 4 sequences
as 4 micro-batches, and the chip modelled is a middle stage (:data:`PIPELINE_STAGE`: blocks only, neither embedding
nor head): 14 / 16 GB of working set forward / backward (``tests/unit/test_transformer.py``). BERT's next-sentence head,
pooler and token types, T5's relative-position biases and the parallel attention/MLP formulation of PaLM
are left out; BERT's masked-LM head runs over every position. Parameters: BERT 334M (published
340M), T5 11.3B, Chinchilla 64.7B (published 70B), GPT-3 174.6B, PaLM 540.3B.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from types import MappingProxyType

import pandas as pd

from traincost.errors import ConfigError, UnknownModelError
from traincost.models._validation import check_positive_int
from traincost.models.transformer import OptimizerName, Parallelism, Recompute, TransformerConfig, transformer_workload
from traincost.workload import Workload

__all__ = ["DataSize", "PIPELINE_STAGE", "TM_TRAINING_WORKLOADS", "data_size_per_iteration", "tm_training_workload"]

_TM_PARALLEL = Parallelism(fully_sharded=True)
TM_TRAINING_WORKLOADS: Mapping[str, tuple[TransformerConfig, Parallelism]] = MappingProxyType(
    {
        "bert_large": (
            TransformerConfig(
                name="bert_large",
                n_layer=24,
                d_model=1024,
                n_head=16,
                d_head=64,
                d_ff=4096,
                vocab_size=30522,
                seq_len=512,
                batch=256,
            ),
            replace(_TM_PARALLEL, pods=1, model_parallel=1, data_parallel=4),
        ),
        "t5_11b": (
            TransformerConfig(
                name="t5_11b",
                n_layer=48,
                n_encoder_layer=24,
                d_model=1024,
                n_head=128,
                d_head=128,
                d_ff=65536,
                vocab_size=32128,
                seq_len=512,
                batch=128,
                activation="relu",
                learned_positions=False,
                bias=False,
            ),
            replace(_TM_PARALLEL, pods=1, model_parallel=1, data_parallel=16),
        ),
        "chinchilla_70b": (
            TransformerConfig(
                name="chinchilla_70b",
                n_layer=80,
                d_model=8192,
                n_head=64,
                d_head=128,
                d_ff=32768,
                vocab_size=32000,
                seq_len=2048,
                batch=2048,
                learned_positions=False,
            ),
            replace(_TM_PARALLEL, pods=2, model_parallel=2, data_parallel=256),
        ),
        "gpt3_175b": (
            TransformerConfig(
                name="gpt3_175b",
                n_layer=96,
                d_model=12288,
                n_head=96,
                d_head=128,
                d_ff=49152,
                vocab_size=50257,
                seq_len=2048,
                batch=2048,
            ),
            replace(_TM_PARALLEL, pods=2, model_parallel=4, data_parallel=256),
        ),
        "palm_540b": (
            TransformerConfig(
                name="palm_540b",
                n_layer=118,
                d_model=18432,
                n_head=48,
                d_head=256,
                d_ff=73728,
                vocab_size=256000,
                seq_len=2048,
                batch=2048,
                gated_ffn=True,
                activation="swish",
                n_kv_head=1,
                learned_positions=False,
                bias=False,
            ),
            replace(_TM_PARALLEL, pods=2, data_parallel=256, pipeline_stages=12, micro_batches=4),
        ),
    }
)
"""TM-Training's workloads (``tm_training.md`` Table 3) with their published architectures."""

PIPELINE_STAGE: Mapping[str, int] = MappingProxyType({"palm_540b": 6})
"""The pipeline stage a preset's chip is (0 where it has no pipeline): for PaLM a middle one of its 12."""


def tm_training_workload(
    name: str,
    *,
    optimizer: OptimizerName = "adam",
    dtype_bytes: int = 2,
    optimizer_state_bytes: int | None = 4,
    recompute: Recompute = "layer",
    batch_factor: int = 1,
    layout: Mapping[str, object] | None = None,
    pipeline_stage: int | None = None,
) -> Workload:
    """One chip's training step of a TM-Training preset.

    The defaults are mixed-precision Adam (bf16 weights, activations and gradients as Table 1 says;
    fp32 master weights and moments, 16 bytes per parameter in all, as ZeRO counts them) and block
    recomputation, which every preset needs to fit 32 GB per chip.

    Args:
        name: A key of ``TM_TRAINING_WORKLOADS``.
        optimizer: As for :func:`transformer_workload`.
        dtype_bytes: As for :func:`transformer_workload`.
        optimizer_state_bytes: As for :func:`transformer_workload`.
        recompute: As for :func:`transformer_workload`.
        batch_factor: Multiplies the preset's global batch (TM-Training Figure 13 doubles it).
        layout: Fields of :class:`Parallelism` that replace the preset's (e.g. ``{"model_parallel": 12,
            "pipeline_stages": 1, "micro_batches": 1, "sequence_parallel": True}``: PaLM as tensor-parallel chips).
        pipeline_stage: The stage the chip is (default: the preset's, :data:`PIPELINE_STAGE`, or 0).

    Raises:
        UnknownModelError: ``name`` is not a preset.
        ConfigError: ``batch_factor`` is not a positive integer, ``layout`` names no field of ``Parallelism`` or gives
            one a wrong value, or the layout does not split the model.
    """
    config, parallel = _preset(name)
    check_positive_int(batch_factor, field="batch_factor")
    if layout:
        known = [f.name for f in fields(Parallelism)]
        unknown = sorted(set(layout) - set(known))
        if unknown:
            raise ConfigError(
                f"layout of {name}: {unknown} are not fields of the parallelism (expected some of {', '.join(known)})"
            )
        parallel = replace(parallel, **layout)
    if pipeline_stage is None:
        pipeline_stage = PIPELINE_STAGE.get(name, 0) if parallel.pipeline_stages > 1 else 0
    config = replace(config, batch=config.batch * batch_factor)
    workload = transformer_workload(
        config,
        parallel=parallel,
        optimizer=optimizer,
        dtype_bytes=dtype_bytes,
        optimizer_state_bytes=optimizer_state_bytes,
        recompute=recompute,
        pipeline_stage=pipeline_stage,
    )
    return Workload(ops=workload.ops, tensors=workload.tensors, meta={**workload.meta, "batch_factor": str(batch_factor)})


def _preset(name: str) -> tuple[TransformerConfig, Parallelism]:
    """The preset called ``name``; raises UnknownModelError listing the presets."""
    if name not in TM_TRAINING_WORKLOADS:
        raise UnknownModelError(f"unknown TM-Training workload {name!r}; expected one of: {', '.join(TM_TRAINING_WORKLOADS)}")
    return TM_TRAINING_WORKLOADS[name]


@dataclass(frozen=True, slots=True)
class DataSize:
    """The data of one training iteration of one data-parallel replica (its ``model_parallel`` chips).

    Attributes:
        weights_bytes: Parameters.
        weight_grads_bytes: Their gradients.
        optimizer_states_bytes: Optimizer states (master weights included).
        saved_activations_bytes: Activations (and batch inputs) saved for the backward pass.
    """

    weights_bytes: int
    weight_grads_bytes: int
    optimizer_states_bytes: int
    saved_activations_bytes: int

    @property
    def total_bytes(self) -> int:
        """All four together."""
        return self.weights_bytes + self.weight_grads_bytes + self.optimizer_states_bytes + self.saved_activations_bytes


def data_size_per_iteration(
    config: TransformerConfig,
    *,
    parallel: Parallelism = Parallelism(),  # noqa: B008 - frozen, so sharing the default is safe
    optimizer: OptimizerName = "adam",
    dtype_bytes: int = 2,
    optimizer_state_bytes: int | None = None,
) -> DataSize:
    """The data one data-parallel replica keeps for one iteration when nothing is sharded or recomputed.

    That is every parameter, weight gradient and optimizer state of the model (a replica holds the
    whole model) and the activations its ``batch / (pods × data_parallel)`` sequences save for the
    backward pass, summed over its ``model_parallel`` chips (each chip's copy of a replicated tensor
    counts) and its pipeline stages. Sharding over replicas and recomputation change where and how long this data lives, not
    how much of it one iteration uses, so they are switched off here.

    Args:
        config: The architecture and global batch.
        parallel: The layout; only ``pods``, ``model_parallel`` and ``data_parallel`` matter.
        optimizer: As for :func:`transformer_workload`.
        dtype_bytes: As for :func:`transformer_workload`.
        optimizer_state_bytes: As for :func:`transformer_workload`.

    Returns:
        The replica's data by category.

    Raises:
        ConfigError: As for :func:`transformer_workload`.
    """
    plain = replace(parallel, fully_sharded=False, sequence_parallel=False, pipeline_stages=1, micro_batches=1)
    workload = transformer_workload(
        config, parallel=plain, optimizer=optimizer, dtype_bytes=dtype_bytes, optimizer_state_bytes=optimizer_state_bytes
    )
    tensors = workload.tensors[workload.tensors["updates"] < 0]
    kind = tensors["kind"]

    def total(mask: pd.Series) -> int:
        return int(tensors.loc[mask, "bytes"].sum()) * parallel.model_parallel

    return DataSize(
        weights_bytes=total(kind == "weight"),
        weight_grads_bytes=total(kind == "weight_grad"),
        optimizer_states_bytes=total(kind == "optimizer_state"),
        saved_activations_bytes=total(tensors["saved_for_backward"]),
    )
