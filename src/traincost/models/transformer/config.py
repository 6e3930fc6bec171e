"""A transformer's validated architecture and parallelism, one chip's share of it, and its parameters."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal, get_args

from traincost.errors import ConfigError
from traincost.models._validation import check_positive_int
from traincost.models.gpt2 import GPT2Config

__all__ = [
    "Activation",
    "NORM_OF_PART",
    "OPTIMIZER_STATES",
    "OptimizerName",
    "Parallelism",
    "PipelineSchedule",
    "Recompute",
    "Shard",
    "TransformerConfig",
    "block_params",
    "block_parts",
    "gpt2_transformer_config",
    "parameter_count",
    "shard_sizes",
    "stage_blocks",
    "top_params",
]

Activation = Literal["gelu", "gelu_tanh", "relu", "swish"]
OptimizerName = Literal["sgd", "adam"]
Recompute = Literal["none", "layer"]
PipelineSchedule = Literal["1f1b", "gpipe"]

OPTIMIZER_STATES: Mapping[str, tuple[str, ...]] = MappingProxyType({"sgd": (), "adam": ("exp_avg", "exp_avg_sq")})


@dataclass(frozen=True, slots=True)
class TransformerConfig:
    """Validated architecture and global batch of a transformer language model.

    Attributes:
        name: Model name (Workload metadata).
        n_layer: Transformer blocks, both stacks of an encoder-decoder.
        d_model: Width of the residual stream.
        n_head: Query heads.
        d_head: Width of one head (``n_head · d_head`` need not equal ``d_model``).
        d_ff: Hidden width of the MLP (of each of its two input matrices when gated).
        vocab_size: Tokens.
        seq_len: Tokens per sequence (of the encoder and of the decoder).
        batch: Global batch, sequences per iteration.
        gated_ffn: Gated MLP with three matrices (PaLM's SwiGLU).
        tied_embeddings: The head reuses the token embedding.
        activation: ``gelu`` (fused kernel), ``gelu_tanh`` (computed op by op), ``relu``
            or ``swish``.
        n_kv_head: Key/value heads (``None``: ``n_head``; 1: multi-query attention); must divide
            ``n_head``.
        learned_positions: A learned ``seq_len × d_model`` position embedding (else relative or
            rotary positions, which have no parameters worth counting).
        bias: Linear layers and LayerNorms have biases.
        n_encoder_layer: Blocks of ``n_layer`` that form an encoder (0: one stack of blocks).

    Raises:
        ConfigError: A field has the wrong type or range; the message names it.
    """

    name: str
    n_layer: int
    d_model: int
    n_head: int
    d_head: int
    d_ff: int
    vocab_size: int
    seq_len: int
    batch: int
    gated_ffn: bool = False
    tied_embeddings: bool = True
    activation: Activation = "gelu"
    n_kv_head: int | None = None
    learned_positions: bool = True
    bias: bool = True
    n_encoder_layer: int = 0

    def __post_init__(self) -> None:
        """Check every field; see the class docstring."""
        if not isinstance(self.name, str) or not self.name:
            raise ConfigError(f"'name' must be a non-empty string, got {self.name!r}")
        for key in ("n_layer", "d_model", "n_head", "d_head", "d_ff", "vocab_size", "seq_len", "batch"):
            check_positive_int(getattr(self, key), field=key)
        for key in ("gated_ffn", "tied_embeddings", "learned_positions", "bias"):
            if not isinstance(getattr(self, key), bool):
                raise ConfigError(f"{key!r} must be a bool, got {getattr(self, key)!r}")
        if self.activation not in get_args(Activation):
            raise ConfigError(f"'activation' must be one of {', '.join(get_args(Activation))}, got {self.activation!r}")
        if self.n_kv_head is not None:
            check_positive_int(self.n_kv_head, field="n_kv_head")
            if self.n_head % self.n_kv_head:
                raise ConfigError(f"'n_kv_head' ({self.n_kv_head}) must divide 'n_head' ({self.n_head})")
        encoder = self.n_encoder_layer
        if isinstance(encoder, bool) or not isinstance(encoder, int) or not 0 <= encoder < self.n_layer:
            raise ConfigError(f"'n_encoder_layer' must be an int in [0, n_layer), got {encoder!r}")

    @property
    def kv_heads(self) -> int:
        """Key/value heads."""
        return self.n_head if self.n_kv_head is None else self.n_kv_head

    @property
    def is_encoder_decoder(self) -> bool:
        """Whether the blocks form an encoder and a decoder with cross-attention."""
        return self.n_encoder_layer > 0


@dataclass(frozen=True, slots=True)
class Parallelism:
    """How a training step is spread over chips (data × pipeline × Megatron tensor parallelism).

    Attributes:
        pods: Pods; each holds ``pipeline_stages × model_parallel × data_parallel`` chips and its own data replicas.
        model_parallel: Tensor-parallel chips per pipeline stage (heads, FFN columns and vocabulary split).
        data_parallel: Data-parallel replicas per pod.
        sequence_parallel: LayerNorms and the residual stream split over the sequence.
        fully_sharded: Parameters and optimizer states sharded over the ``pods × data_parallel``
            replicas (ZeRO-3 / FSDP); weights are all-gathered per block before use.
        pipeline_stages: Pipeline stages per replica (GPipe, Huang et al. 2019; 1F1B, Narayanan et al. 2021): stage
            ``i`` holds blocks ``⌊i·n_layer/p⌋`` to ``⌊(i+1)·n_layer/p⌋ - 1``, the first the embedding, the last the
            final LayerNorm, head and loss.
        micro_batches: Micro-batches a replica's sequences are split into per iteration (gradients accumulate over
            them; with one stage, gradient accumulation).
        pipeline_schedule: ``1f1b`` (after ``p - i - 1`` warm-up forwards, stage ``i`` alternates one forward and
            one backward, so at most ``p - i`` micro-batches are in flight) or ``gpipe`` (every forward, then every
            backward: all ``micro_batches`` in flight).

    Raises:
        ConfigError: A field has the wrong type or range; the message names it.
    """

    pods: int = 1
    model_parallel: int = 1
    data_parallel: int = 1
    sequence_parallel: bool = False
    fully_sharded: bool = False
    pipeline_stages: int = 1
    micro_batches: int = 1
    pipeline_schedule: PipelineSchedule = "1f1b"

    def __post_init__(self) -> None:
        """Check every field; see the class docstring."""
        for key in ("pods", "model_parallel", "data_parallel", "pipeline_stages", "micro_batches"):
            check_positive_int(getattr(self, key), field=key)
        for key in ("sequence_parallel", "fully_sharded"):
            if not isinstance(getattr(self, key), bool):
                raise ConfigError(f"{key!r} must be a bool, got {getattr(self, key)!r}")
        if self.pipeline_schedule not in get_args(PipelineSchedule):
            raise ConfigError(
                f"'pipeline_schedule' must be one of {', '.join(get_args(PipelineSchedule))}, got {self.pipeline_schedule!r}"
            )

    @property
    def chips(self) -> int:
        """Chips in total."""
        return self.pods * self.model_parallel * self.data_parallel * self.pipeline_stages

    @property
    def replicas(self) -> int:
        """Data-parallel replicas in total (``pods × data_parallel``)."""
        return self.pods * self.data_parallel

    @property
    def bubble_fraction(self) -> float:
        """The share of an iteration a stage idles in the pipeline's fill and drain, ``(p - 1) / (m + p - 1)`` for
        ``p`` stages and ``m`` micro-batches of equal time (GPipe and 1F1B alike; 0 without stages)."""
        p, m = self.pipeline_stages, self.micro_batches
        return (p - 1) / (m + p - 1)


@dataclass(frozen=True, slots=True)
class Shard:
    """One chip's sizes, checked against the configuration."""

    sequences: int  # per micro-batch
    seq_len: int
    local_seq: int  # positions of the residual stream (⌈seq_len / model_parallel⌉ with sequence parallelism)
    heads: int
    kv_heads: int
    d_head: int
    d_model: int
    d_ff: int
    vocab: int
    model_parallel: int
    sequence_parallel: bool
    replicas: int
    fully_sharded: bool
    micro_batches: int = 1
    stages: int = 1

    @property
    def tokens(self) -> int:
        return self.sequences * self.seq_len

    @property
    def d_attn(self) -> int:
        return self.heads * self.d_head

    @property
    def d_kv(self) -> int:
        return self.kv_heads * self.d_head


def shard_sizes(config: TransformerConfig, parallel: Parallelism) -> Shard:
    """Per-chip sizes; raises ConfigError naming the field that does not split evenly."""
    mp = parallel.model_parallel
    if config.batch % parallel.replicas:
        raise ConfigError(f"'batch' ({config.batch}) must be divisible by pods × data_parallel ({parallel.replicas})")
    per_replica = config.batch // parallel.replicas
    if per_replica % parallel.micro_batches:
        raise ConfigError(
            f"'micro_batches' ({parallel.micro_batches}) must divide the {per_replica} sequences of a replica "
            f"('batch' {config.batch} over pods × data_parallel {parallel.replicas})"
        )
    if parallel.pipeline_stages > config.n_layer:
        raise ConfigError(f"'pipeline_stages' ({parallel.pipeline_stages}) must not exceed 'n_layer' ({config.n_layer})")
    if parallel.pipeline_stages > 1 and config.is_encoder_decoder:
        raise ConfigError("'pipeline_stages' > 1: pipelines of an encoder-decoder are not modelled (one stack of blocks only)")
    if config.n_head % mp:
        raise ConfigError(f"'n_head' ({config.n_head}) must be divisible by 'model_parallel' ({mp})")
    if config.d_ff % mp:
        raise ConfigError(f"'d_ff' ({config.d_ff}) must be divisible by 'model_parallel' ({mp})")
    heads = config.n_head // mp
    kv_heads = config.kv_heads // mp if config.kv_heads % mp == 0 else config.kv_heads
    if heads % kv_heads:
        raise ConfigError(
            f"'n_kv_head' ({config.kv_heads}) neither splits over 'model_parallel' ({mp}) nor divides the {heads} local heads"
        )
    split_seq = parallel.sequence_parallel and mp > 1
    return Shard(
        sequences=per_replica // parallel.micro_batches,
        seq_len=config.seq_len,
        local_seq=-(-config.seq_len // mp) if split_seq else config.seq_len,
        heads=heads,
        kv_heads=kv_heads,
        d_head=config.d_head,
        d_model=config.d_model,
        d_ff=config.d_ff // mp,
        vocab=-(-config.vocab_size // mp),
        model_parallel=mp,
        sequence_parallel=split_seq,
        replicas=parallel.replicas,
        fully_sharded=parallel.fully_sharded,
        micro_batches=parallel.micro_batches,
        stages=parallel.pipeline_stages,
    )


def stage_blocks(n_layer: int, stages: int, stage: int) -> range:
    """The blocks pipeline stage ``stage`` of ``stages`` holds: ``⌊stage·n_layer/stages⌋`` up to the next stage's first."""
    return range(stage * n_layer // stages, (stage + 1) * n_layer // stages)


def block_parts(config: TransformerConfig, index: int) -> tuple[str, ...]:
    """The sub-blocks of block ``index``: ``attn``, ``cross`` (decoder of an encoder-decoder), ``mlp``."""
    if config.is_encoder_decoder and index >= config.n_encoder_layer:
        return ("attn", "cross", "mlp")
    return ("attn", "mlp")


NORM_OF_PART = MappingProxyType({"attn": "ln_1", "cross": "ln_cross", "mlp": "ln_2"})


def block_params(config: TransformerConfig, shard: Shard, index: int) -> list[tuple[str, tuple[int, ...]]]:
    """(name, per-chip shape) of every parameter of block ``index``; linear weights are ``d_in × d_out``."""
    d, prefix = shard.d_model, f"blocks.{index}"
    linears: list[tuple[str, int, int]] = []
    norms = []
    for part in block_parts(config, index):
        norms.append(f"{prefix}.{NORM_OF_PART[part]}")
        match part:
            case "attn":
                linears += [(f"{prefix}.attn.qkv", d, shard.d_attn + 2 * shard.d_kv), (f"{prefix}.attn.proj", shard.d_attn, d)]
            case "cross":
                linears += [
                    (f"{prefix}.cross.q", d, shard.d_attn),
                    (f"{prefix}.cross.kv", d, 2 * shard.d_kv),
                    (f"{prefix}.cross.proj", shard.d_attn, d),
                ]
            case "mlp":
                gate = [(f"{prefix}.mlp.gate", d, shard.d_ff)] if config.gated_ffn else []
                linears += [(f"{prefix}.mlp.fc", d, shard.d_ff), *gate, (f"{prefix}.mlp.proj", shard.d_ff, d)]
    params: list[tuple[str, tuple[int, ...]]] = []
    for norm in norms:
        params += [(f"{norm}.weight", (d,))] + ([(f"{norm}.bias", (d,))] if config.bias else [])
    for name, d_in, d_out in linears:
        params += [(f"{name}.weight", (d_in, d_out))] + ([(f"{name}.bias", (d_out,))] if config.bias else [])
    return params


def top_params(config: TransformerConfig, shard: Shard) -> list[tuple[str, tuple[int, ...]]]:
    """(name, per-chip shape) of the parameters outside the blocks (the ``embedding`` group)."""
    d = shard.d_model
    params: list[tuple[str, tuple[int, ...]]] = [("token_embedding.weight", (shard.vocab, d))]
    if config.learned_positions:
        params.append(("position_embedding.weight", (config.seq_len, d)))
    for norm in ("ln_enc", "ln_f") if config.is_encoder_decoder else ("ln_f",):
        params += [(f"{norm}.weight", (d,))] + ([(f"{norm}.bias", (d,))] if config.bias else [])
    if not config.tied_embeddings:
        params.append(("lm_head.weight", (shard.vocab, d)))
    return params


def parameter_count(config: TransformerConfig) -> int:
    """Parameters of the whole model (shared embeddings counted once)."""
    shard = shard_sizes(config, Parallelism())
    groups = [top_params(config, shard), *(block_params(config, shard, i) for i in range(config.n_layer))]
    return sum(math.prod(shape) for group in groups for _, shape in group)


def gpt2_transformer_config(config: GPT2Config, *, batch: int, name: str = "gpt2") -> TransformerConfig:
    """The ``TransformerConfig`` of a zoo GPT-2, its GELU (tanh) one fused kernel as in the ONNX path.

    The ONNX path fuses the exported tanh GELU back into FastGelu, whose backward reads its input
    alone, as torch's ``nn.GELU(approximate="tanh")`` does (``frontend/onnx/gelu_fusion.py``).

    Args:
        config: The GPT-2 hyper-parameters (e.g. ``traincost.models.gpt2.GPT2_SMALL``).
        batch: Sequences per step.
        name: Model name.

    Returns:
        The same architecture: 4x GELU (tanh) MLP, tied embeddings, learned positions, biases.
    """
    return TransformerConfig(
        name=name,
        n_layer=config.n_layer,
        d_model=config.d_model,
        n_head=config.n_head,
        d_head=config.d_model // config.n_head,
        d_ff=4 * config.d_model,
        vocab_size=config.vocab_size,
        seq_len=config.seq_len,
        batch=batch,
        activation="gelu",
    )
