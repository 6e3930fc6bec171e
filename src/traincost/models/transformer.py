"""An analytic transformer training step, emitted straight as the Workload IR from hyper-parameters.

For language models far too big to export (GPT-3, PaLM), ``transformer_workload`` writes the ops
and tensors of one training iteration (forward, backward, optimizer) of **one chip**, in execution
order, with the columns and conventions of :func:`traincost.frontend.lower.lower` (see
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
    Kinds and ``saved_for_backward`` as :mod:`traincost.frontend.lower` sets them: ``input`` (token
    ids and labels, int64), ``activation`` (forward and recompute outputs), ``gradient`` (backward
    outputs), ``weight`` and ``optimizer_state`` (persistent; the ``.updated`` copies carry
    ``updates``), ``weight_grad`` (the gradient the optimizer reads), ``output`` (the loss), and
    ``temporary`` for weights all-gathered from their shards. The GELU form ``"gelu_tanh"`` is the
    tanh approximation as torch exports it to ONNX: its backward reads x, x², tanh(·) and
    1 + tanh(·), so these are saved; ``"gelu"`` is a fused kernel whose backward reads its input.
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
    of a block's first GEMMs is saved whole, not re-gathered in the backward pass. With
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

TM-Training's five workloads are presets of this generator: :mod:`traincost.models.tm_training_workloads`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal, get_args

import pandas as pd

from traincost.errors import ConfigError
from traincost.models._validation import check_positive_int
from traincost.models.gpt2 import GPT2Config
from traincost.workload import LOOP_DIMS, Workload

__all__ = [
    "Activation",
    "OptimizerName",
    "Recompute",
    "Parallelism",
    "TransformerConfig",
    "gpt2_transformer_config",
    "parameter_count",
    "transformer_workload",
]

Activation = Literal["gelu", "gelu_tanh", "relu", "swish"]
OptimizerName = Literal["sgd", "adam"]
Recompute = Literal["none", "layer"]

_INDEX_BYTES = 8  # token ids and labels are int64, as in the exported graphs
_NORM_OPS_PER_ELEMENT = 7  # as traincost.frontend.lower counts LayerNormalization
_NORM_GRAD_OPS_PER_ELEMENT = 13  # the element-wise ops of the decomposed LayerNormalizationGrad
_SOFTMAX_OPS_PER_ELEMENT = 7  # scale, mask, then max, subtract, exp, sum, divide
_SOFTMAX_GRAD_OPS_PER_ELEMENT = 6  # y·dy, sum, subtract, multiply, unmask, unscale
_LOSS_OPS_PER_ELEMENT = 5  # log-softmax over the logits
_LOSS_GRAD_OPS_PER_ELEMENT = 4  # one-hot, exp, subtract, scale
# (forward, backward) element-wise ops per element of the activation's input
_ACTIVATION_OPS: Mapping[str, tuple[int, int]] = MappingProxyType(
    {"gelu": (9, 13), "gelu_tanh": (9, 13), "relu": (1, 1), "swish": (4, 6)}
)
_OPTIMIZER_OPS_PER_ELEMENT: Mapping[str, int] = MappingProxyType({"sgd": 2, "adam": 13})
_OPTIMIZER_STATES: Mapping[str, tuple[str, ...]] = MappingProxyType({"sgd": (), "adam": ("exp_avg", "exp_avg_sq")})
_ACTIVATION_OP_TYPES: Mapping[str, str] = MappingProxyType(
    {"gelu": "Gelu", "gelu_tanh": "Gelu", "relu": "Relu", "swish": "Swish"}
)
_PRECISION = MappingProxyType({1: "int8", 2: "bf16", 4: "fp32", 8: "fp64"})


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
        activation: ``gelu`` (fused kernel), ``gelu_tanh`` (as the ONNX path computes it), ``relu``
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
    """How a training step is spread over chips (Megatron tensor parallelism × data parallelism).

    Attributes:
        pods: Pods; each holds ``model_parallel × data_parallel`` chips and its own data replicas.
        model_parallel: Tensor-parallel chips per replica (heads, FFN columns and vocabulary split).
        data_parallel: Data-parallel replicas per pod.
        sequence_parallel: LayerNorms and the residual stream split over the sequence.
        fully_sharded: Parameters and optimizer states sharded over the ``pods × data_parallel``
            replicas (ZeRO-3 / FSDP); weights are all-gathered per block before use.

    Raises:
        ConfigError: A field has the wrong type or range; the message names it.
    """

    pods: int = 1
    model_parallel: int = 1
    data_parallel: int = 1
    sequence_parallel: bool = False
    fully_sharded: bool = False

    def __post_init__(self) -> None:
        """Check every field; see the class docstring."""
        for key in ("pods", "model_parallel", "data_parallel"):
            check_positive_int(getattr(self, key), field=key)
        for key in ("sequence_parallel", "fully_sharded"):
            if not isinstance(getattr(self, key), bool):
                raise ConfigError(f"{key!r} must be a bool, got {getattr(self, key)!r}")

    @property
    def chips(self) -> int:
        """Chips in total."""
        return self.pods * self.model_parallel * self.data_parallel

    @property
    def replicas(self) -> int:
        """Data-parallel replicas in total (``pods × data_parallel``)."""
        return self.pods * self.data_parallel


@dataclass(frozen=True, slots=True)
class _Shard:
    """One chip's sizes, checked against the configuration."""

    sequences: int
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

    @property
    def tokens(self) -> int:
        return self.sequences * self.seq_len

    @property
    def d_attn(self) -> int:
        return self.heads * self.d_head

    @property
    def d_kv(self) -> int:
        return self.kv_heads * self.d_head


def _shard(config: TransformerConfig, parallel: Parallelism) -> _Shard:
    """Per-chip sizes; raises ConfigError naming the field that does not split evenly."""
    mp = parallel.model_parallel
    if config.batch % parallel.replicas:
        raise ConfigError(f"'batch' ({config.batch}) must be divisible by pods × data_parallel ({parallel.replicas})")
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
    return _Shard(
        sequences=config.batch // parallel.replicas,
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
    )


def _block_parts(config: TransformerConfig, index: int) -> tuple[str, ...]:
    """The sub-blocks of block ``index``: ``attn``, ``cross`` (decoder of an encoder-decoder), ``mlp``."""
    if config.is_encoder_decoder and index >= config.n_encoder_layer:
        return ("attn", "cross", "mlp")
    return ("attn", "mlp")


_NORM_OF_PART = MappingProxyType({"attn": "ln_1", "cross": "ln_cross", "mlp": "ln_2"})


def _block_params(config: TransformerConfig, shard: _Shard, index: int) -> list[tuple[str, tuple[int, ...]]]:
    """(name, per-chip shape) of every parameter of block ``index``; linear weights are ``d_in × d_out``."""
    d, prefix = shard.d_model, f"blocks.{index}"
    linears: list[tuple[str, int, int]] = []
    norms = []
    for part in _block_parts(config, index):
        norms.append(f"{prefix}.{_NORM_OF_PART[part]}")
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


def _top_params(config: TransformerConfig, shard: _Shard) -> list[tuple[str, tuple[int, ...]]]:
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
    shard = _shard(config, Parallelism())
    groups = [_top_params(config, shard), *(_block_params(config, shard, i) for i in range(config.n_layer))]
    return sum(math.prod(shape) for group in groups for _, shape in group)


@dataclass(slots=True)
class _Tensor:
    """One row of the tensors table (producer, consumers and ``saved_for_backward`` come from the ops)."""

    name: str
    kind: str
    shape: list[int]
    dtype_bytes: int
    updates: int = -1

    @property
    def elements(self) -> int:
        return math.prod(self.shape)


@dataclass(frozen=True, slots=True)
class _Op:
    """One row of the ops table."""

    name: str
    op_type: str
    kind: str
    phase: str
    layer: str
    dims: Mapping[str, int]
    macs: int
    elementwise_ops: int
    inputs: list[int]
    outputs: list[int]


@dataclass(slots=True)
class _Graph:
    """The ops and tensors of a step, appended in execution order."""

    ops: list[_Op] = field(default_factory=list)
    tensors: list[_Tensor] = field(default_factory=list)

    def tensor(self, name: str, kind: str, shape: Sequence[int], dtype_bytes: int) -> int:
        """Add a tensor and return its id."""
        self.tensors.append(_Tensor(name=name, kind=kind, shape=[int(n) for n in shape], dtype_bytes=dtype_bytes))
        return len(self.tensors) - 1

    def op(
        self,
        name: str,
        op_type: str,
        kind: str,
        *,
        phase: str,
        layer: str,
        inputs: Sequence[int],
        outputs: Sequence[int],
        dims: Mapping[str, int] | None = None,
        elementwise_ops: int = 0,
    ) -> None:
        """Add an op; ``dims`` are its loop dimensions (MACs = their product), absent for non-MAC ops."""
        loops = dict.fromkeys(LOOP_DIMS, 1) | dict(dims or {})
        macs = math.prod(loops.values()) if dims else 0
        self.ops.append(_Op(name, op_type, kind, phase, layer, loops, macs, int(elementwise_ops), list(inputs), list(outputs)))

    def elements(self, tensor: int) -> int:
        """Elements of a tensor."""
        return self.tensors[tensor].elements

    def workload(self, meta: Mapping[str, str]) -> Workload:
        """The Workload: producers, consumers and ``saved_for_backward`` derived from the ops."""
        producer = [-1] * len(self.tensors)
        consumers: list[list[int]] = [[] for _ in self.tensors]
        for index, op in enumerate(self.ops):
            for t in op.outputs:
                producer[t] = index
            for t in dict.fromkeys(op.inputs):
                consumers[t].append(index)
        phases = [op.phase for op in self.ops]
        saved = [
            row.kind in ("input", "activation")
            and (made < 0 or phases[made] == "forward")
            and any(phases[reader] == "backward" for reader in readers)
            for row, made, readers in zip(self.tensors, producer, consumers, strict=True)
        ]
        ops = pd.DataFrame(
            {
                "op": range(len(self.ops)),
                "name": [op.name for op in self.ops],
                "op_type": [op.op_type for op in self.ops],
                "kind": [op.kind for op in self.ops],
                "phase": phases,
                "layer": [op.layer for op in self.ops],
                **{dim: [op.dims[dim] for op in self.ops] for dim in LOOP_DIMS},
                "macs": [op.macs for op in self.ops],
                "elementwise_ops": [op.elementwise_ops for op in self.ops],
                "inputs": [op.inputs for op in self.ops],
                "outputs": [op.outputs for op in self.ops],
            }
        ).astype({d: "int64" for d in (*LOOP_DIMS, "macs", "elementwise_ops")})
        tensors = pd.DataFrame(
            {
                "tensor": range(len(self.tensors)),
                "name": [t.name for t in self.tensors],
                "kind": [t.kind for t in self.tensors],
                "shape": [t.shape for t in self.tensors],
                "dtype_bytes": [t.dtype_bytes for t in self.tensors],
                "bytes": [t.elements * t.dtype_bytes for t in self.tensors],
                "producer": producer,
                "consumers": consumers,
                "saved_for_backward": saved,
                "updates": [t.updates for t in self.tensors],
            }
        ).astype({"tensor": "int64", "dtype_bytes": "int64", "bytes": "int64", "producer": "int64", "updates": "int64"})
        return Workload(ops=ops, tensors=tensors, meta=dict(meta))


@dataclass(frozen=True, slots=True)
class _Norm:
    """A LayerNorm's input and the tensors its forward wrote."""

    x: int
    y: int
    mean: int
    inv_std: int


@dataclass(frozen=True, slots=True)
class _Attention:
    """What an attention's backward reads: its inputs (``source``: cross-attention's keys/values input)."""

    h: int
    source: int | None
    q: int
    k: int
    v: int
    probs: int
    context: int


@dataclass(frozen=True, slots=True)
class _Mlp:
    """What an MLP's backward reads: its input, the pre-activations and the activation's outputs."""

    h: int
    fc: int
    gate: int | None
    a: int
    kept: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class _Head:
    """What the head's and loss's backward reads."""

    norm: _Norm
    h: int
    log_prob: int
    labels: int


@dataclass(frozen=True, slots=True)
class _Sublayer:
    """What a sub-block's backward reads."""

    norm: _Norm
    body: _Attention | _Mlp


class _Step:
    """Writes one chip's training step into a ``_Graph``; ``build`` runs it."""

    def __init__(
        self, config: TransformerConfig, shard: _Shard, *, optimizer: str, dtype_bytes: int, state_bytes: int, recompute: str
    ) -> None:
        self.config, self.shard, self.optimizer = config, shard, optimizer
        self.dtype, self.state_bytes, self.recompute = dtype_bytes, state_bytes, recompute
        self.graph = _Graph()
        self.param_shape: dict[str, tuple[int, ...]] = {}
        self.stored: dict[str, int] = {}  # parameter -> its persistent tensor (or shard)
        self.states: dict[str, dict[str, int]] = {}
        self.reading: dict[str, int] = {}  # parameter -> the tensor ops read now (stored or gathered)
        self.grads: dict[str, int] = {}  # parameter -> its (local) gradient
        self.grad_partials: dict[str, list[int]] = {}  # tied-embedding contributions to sum
        self.block_inputs: dict[int, int] = {}
        self.block_acts: dict[int, list[_Sublayer]] = {}
        self.enc_grad = -1  # the encoder output's gradient summed so far (-1: none yet)

    @property
    def state_names(self) -> tuple[str, ...]:
        """Optimizer states per parameter: an fp32-style ``master`` copy when states are wider than weights."""
        master = ("master",) if self.state_bytes > self.dtype else ()
        return master + _OPTIMIZER_STATES[self.optimizer]

    @property
    def activation_op_type(self) -> str:
        """The op type of the MLP's activation (``Gated…`` with a gated MLP)."""
        return ("Gated" if self.config.gated_ffn else "") + _ACTIVATION_OP_TYPES[self.config.activation]

    # ------------------------------------------------------------------ tensors
    def act(self, name: str, shape: Sequence[int], phase: str) -> int:
        """A tensor written by an op of ``phase``, kind by phase as the lowering assigns it."""
        match phase:
            case "forward":
                return self.graph.tensor(name, "activation", shape, self.dtype)
            case "recompute":
                return self.graph.tensor(f"{name}/recompute", "activation", shape, self.dtype)
        return self.graph.tensor(name, "gradient", shape, self.dtype)

    def like(self, tensor: int, name: str, phase: str, *, rows: int | None = None) -> int:
        """A new tensor shaped like ``tensor`` (its second axis set to ``rows``)."""
        shape = list(self.graph.tensors[tensor].shape)
        if rows is not None:
            shape[1] = rows
        return self.act(name, shape, phase)

    def sequence_shape(self) -> list[int]:
        """Shape of a whole-sequence hidden state: (sequences, seq_len, d_model)."""
        return [self.shard.sequences, self.shard.seq_len, self.shard.d_model]

    # ------------------------------------------------------------------ parameters
    def declare(self, params: list[tuple[str, tuple[int, ...]]]) -> None:
        """Persistent tensors of ``params`` and their optimizer states (shards when fully sharded)."""
        for name, shape in params:
            self.param_shape[name] = shape
            stored = (-(-math.prod(shape) // self.shard.replicas),) if self.shard.fully_sharded else shape
            self.stored[name] = self.reading[name] = self.graph.tensor(name, "weight", stored, self.dtype)
            self.states[name] = {
                state: self.graph.tensor(f"{name}.{state}", "optimizer_state", stored, self.state_bytes)
                for state in self.state_names
            }

    def gather(self, params: list[str], layer: str, phase: str) -> None:
        """With full sharding, one AllGather writes every weight of ``params`` before use."""
        if not self.shard.fully_sharded:
            return
        suffix = "" if phase == "forward" else f".{phase}"
        gathered = [self.graph.tensor(f"{p}/gathered{suffix}", "temporary", self.param_shape[p], self.dtype) for p in params]
        self.graph.op(
            f"{layer}/all_gather{suffix}",
            "AllGather",
            "eltwise",
            phase=phase,
            layer=layer,
            inputs=[self.stored[p] for p in params],
            outputs=gathered,
        )
        self.reading |= dict(zip(params, gathered, strict=True))

    def grad(self, param: str) -> int:
        """A new tensor for the local gradient of ``param`` (the optimizer's input without data parallelism)."""
        reduced = self.shard.replicas == 1
        name = f"{param}_grad" if reduced else f"{param}_grad.local"
        tensor = self.graph.tensor(name, "weight_grad" if reduced else "gradient", self.param_shape[param], self.dtype)
        self.grads[param] = tensor
        return tensor

    def reduce_grads(self, params: list[str], layer: str) -> None:
        """Sum the gradients of ``params`` over the replicas: ReduceScatter into shards, or AllReduce."""
        if self.shard.replicas == 1:
            return
        sharded = self.shard.fully_sharded
        outputs = []
        for p in params:
            outputs.append(self.graph.tensor(f"{p}_grad", "weight_grad", self.graph.tensors[self.stored[p]].shape, self.dtype))
        inputs = [self.grads[p] for p in params]
        self.graph.op(
            f"{layer}/{'reduce_scatter' if sharded else 'all_reduce'}_grads",
            "ReduceScatter" if sharded else "AllReduce",
            "eltwise",
            phase="backward",
            layer=layer,
            inputs=inputs,
            outputs=outputs,
            elementwise_ops=sum(self.graph.elements(t) for t in inputs),
        )
        self.grads |= dict(zip(params, outputs, strict=True))

    # ------------------------------------------------------------------ collectives of tensor parallelism
    def collective(self, op_type: str, x: int, layer: str, phase: str) -> int:
        """An AllReduce, AllGather (positions × model_parallel) or ReduceScatter (÷ model_parallel) of ``x``."""
        s = self.shard
        rows = {"AllGather": s.seq_len, "ReduceScatter": s.local_seq}.get(op_type)
        out = self.like(x, f"{layer}.{op_type}" + ("_grad" if phase == "backward" else ""), phase, rows=rows)
        self.graph.op(
            f"{layer}/{op_type}" + ("/recompute" if phase == "recompute" else ""),
            op_type,
            "eltwise",
            phase=phase,
            layer=layer,
            inputs=[x],
            outputs=[out],
            elementwise_ops=0 if op_type == "AllGather" else self.graph.elements(x),
        )
        return out

    def enter(self, x: int, layer: str, phase: str) -> int:
        """Megatron's f: into the tensor-parallel region (AllGather with sequence parallelism)."""
        return self.collective("AllGather", x, layer, phase) if self.shard.sequence_parallel else x

    def enter_grad(self, dx: int, layer: str) -> int:
        """The gradient of f: sum the partial input gradients over the tensor-parallel chips."""
        if self.shard.model_parallel == 1:
            return dx
        return self.collective("ReduceScatter" if self.shard.sequence_parallel else "AllReduce", dx, layer, "backward")

    def leave(self, y: int, layer: str, phase: str) -> int:
        """Megatron's g: sum the partial outputs (ReduceScatter with sequence parallelism)."""
        if self.shard.model_parallel == 1:
            return y
        return self.collective("ReduceScatter" if self.shard.sequence_parallel else "AllReduce", y, layer, phase)

    def leave_grad(self, dy: int, layer: str) -> int:
        """The gradient of g: AllGather with sequence parallelism, else the identity."""
        return self.collective("AllGather", dy, layer, "backward") if self.shard.sequence_parallel else dy

    # ------------------------------------------------------------------ layers
    def linear(self, x: int, param: str, phase: str, shape: Sequence[int]) -> int:
        """``x · W (+ b)`` on every token; ``shape`` is the output's."""
        d_in, d_out = self.param_shape[f"{param}.weight"]
        y = self.act(f"{param}.out", shape, phase)
        bias = [self.reading[f"{param}.bias"]] if self.config.bias else []
        self.graph.op(
            f"{param}/{phase}",
            "Gemm",
            "gemm",
            phase=phase,
            layer=param,
            inputs=[x, self.reading[f"{param}.weight"], *bias],
            outputs=[y],
            dims={"OY": self.shard.tokens, "C": d_in, "K": d_out},
            elementwise_ops=self.shard.tokens * d_out if bias else 0,
        )
        return y

    def linear_grad(self, dy: int, x: int, param: str, dx_shape: Sequence[int], accumulate: int | None = None) -> int:
        """Input gradient (plus ``accumulate``) then weight and bias gradients of a linear layer."""
        d_in, d_out = self.param_shape[f"{param}.weight"]
        tokens = self.shard.tokens
        dx = self.act(f"{param}.in_grad", dx_shape, "backward")
        extra = [accumulate] if accumulate is not None else []
        self.graph.op(
            f"{param}/dgrad",
            "Gemm",
            "gemm",
            phase="backward",
            layer=param,
            inputs=[dy, self.reading[f"{param}.weight"], *extra],
            outputs=[dx],
            dims={"OY": tokens, "C": d_out, "K": d_in},
            elementwise_ops=tokens * d_in if extra else 0,
        )
        outputs = [self.grad(f"{param}.weight")] + ([self.grad(f"{param}.bias")] if self.config.bias else [])
        self.graph.op(
            f"{param}/wgrad",
            "Gemm",
            "gemm",
            phase="backward",
            layer=param,
            inputs=[x, dy],
            outputs=outputs,
            dims={"OY": d_in, "C": tokens, "K": d_out},
            elementwise_ops=tokens * d_out if self.config.bias else 0,
        )
        return dx

    def norm(self, x: int, name: str, phase: str) -> _Norm:
        """LayerNorm: y, and the mean and 1/std its gradient reads."""
        shape = list(self.graph.tensors[x].shape)
        y = self.act(f"{name}.out", shape, phase)
        mean = self.act(f"{name}.mean", [*shape[:-1], 1], phase)
        inv_std = self.act(f"{name}.inv_std", [*shape[:-1], 1], phase)
        params = [self.reading[f"{name}.weight"]] + ([self.reading[f"{name}.bias"]] if self.config.bias else [])
        self.graph.op(
            f"{name}/{phase}",
            "LayerNormalization",
            "norm",
            phase=phase,
            layer=name,
            inputs=[x, *params],
            outputs=[y, mean, inv_std],
            elementwise_ops=_NORM_OPS_PER_ELEMENT * self.graph.elements(x),
        )
        return _Norm(x=x, y=y, mean=mean, inv_std=inv_std)

    def norm_grad(self, dy: int, saved: _Norm, name: str, residual: int | None) -> int:
        """LayerNorm gradient (plus the residual branch's gradient ``residual``) and its parameters' gradients."""
        dx = self.like(saved.x, f"{name}.in_grad", "backward")
        grads = [self.grad(f"{name}.weight")] + ([self.grad(f"{name}.bias")] if self.config.bias else [])
        extra = [residual] if residual is not None else []
        elements = self.graph.elements(saved.x)
        self.graph.op(
            f"{name}/grad",
            "LayerNormalizationGrad",
            "norm",
            phase="backward",
            layer=name,
            inputs=[dy, saved.x, saved.mean, saved.inv_std, self.reading[f"{name}.weight"], *extra],
            outputs=[dx, *grads],
            elementwise_ops=_NORM_GRAD_OPS_PER_ELEMENT * elements + (elements if extra else 0),
        )
        return dx

    def add(self, a: int, b: int, name: str, phase: str) -> int:
        """Element-wise sum (the residual connection)."""
        out = self.like(a, f"{name}.out", phase)
        self.graph.op(
            f"{name}/{phase}",
            "Add",
            "eltwise",
            phase=phase,
            layer=name,
            inputs=[a, b],
            outputs=[out],
            elementwise_ops=self.graph.elements(a),
        )
        return out

    def layout(self, op_type: str, inputs: list[int], shapes: list[list[int]], name: str, phase: str) -> list[int]:
        """A zero-cost Split or Concat."""
        backward = phase == "backward"
        label = "in_grad" if backward else "out"
        outputs = [self.act(f"{name}.{label}{i if len(shapes) > 1 else ''}", shape, phase) for i, shape in enumerate(shapes)]
        self.graph.op(
            f"{name}/{'grad' if backward else phase}", op_type, "layout", phase=phase, layer=name, inputs=inputs, outputs=outputs
        )
        return outputs

    def batched(
        self, name: str, role: str, inputs: list[int], out_shape: Sequence[int], dims: Mapping[str, int], *, phase: str
    ) -> int:
        """A batched activation × activation matmul of the attention; ``role`` names a backward one."""
        backward = phase == "backward"
        out = self.act(f"{name}.{role}" if backward else f"{name}.out", out_shape, phase)
        self.graph.op(
            f"{name}/{role if backward else phase}",
            "MatMul",
            "matmul",
            phase=phase,
            layer=name,
            inputs=inputs,
            outputs=[out],
            dims=dims,
        )
        return out

    # ------------------------------------------------------------------ attention and MLP bodies
    def attention(self, h: int, kv_source: int | None, prefix: str, phase: str) -> tuple[int, _Attention]:
        """Self-attention (``kv_source`` None) or cross-attention; returns the partial output and saved tensors."""
        s = self.shard
        b, n, heads, kv, dh = s.sequences, s.seq_len, s.heads, s.kv_heads, s.d_head
        q_shape, kv_shape = [b, heads, n, dh], [b, kv, n, dh]
        if kv_source is None:
            qkv = self.linear(h, f"{prefix}.qkv", phase, [b, n, s.d_attn + 2 * s.d_kv])
            q, k, v = self.layout("Split", [qkv], [q_shape, kv_shape, kv_shape], f"{prefix}.split", phase)
        else:
            q = self.linear(h, f"{prefix}.q", phase, q_shape)
            kv_out = self.linear(kv_source, f"{prefix}.kv", phase, [b, n, 2 * s.d_kv])
            k, v = self.layout("Split", [kv_out], [kv_shape, kv_shape], f"{prefix}.split", phase)
        group = {"B": b * kv, "OY": heads // kv * n}
        scores = self.batched(f"{prefix}.scores", "out", [q, k], [b, heads, n, n], group | {"C": dh, "K": n}, phase=phase)
        probs = self.act(f"{prefix}.softmax.out", [b, heads, n, n], phase)
        self.graph.op(
            f"{prefix}.softmax/{phase}",
            "Softmax",
            "softmax",
            phase=phase,
            layer=f"{prefix}.softmax",
            inputs=[scores],
            outputs=[probs],
            elementwise_ops=_SOFTMAX_OPS_PER_ELEMENT * self.graph.elements(scores),
        )
        context = self.batched(f"{prefix}.context", "out", [probs, v], [b, n, s.d_attn], group | {"C": n, "K": dh}, phase=phase)
        acts = _Attention(h=h, source=kv_source, q=q, k=k, v=v, probs=probs, context=context)
        return self.linear(context, f"{prefix}.proj", phase, [b, n, s.d_model]), acts

    def attention_grad(self, dy: int, acts: _Attention, prefix: str) -> tuple[int, int | None]:
        """Backward of ``attention``: the partial input gradient and (cross-attention) the encoder output's."""
        s = self.shard
        b, n, heads, kv, dh = s.sequences, s.seq_len, s.heads, s.kv_heads, s.d_head
        group = {"B": b * kv}
        rows = heads // kv * n
        d_context = self.linear_grad(dy, acts.context, f"{prefix}.proj", [b, n, s.d_attn])
        probs, q, k, v = acts.probs, acts.q, acts.k, acts.v
        d_probs = self.batched(
            f"{prefix}.context",
            "dprobs",
            [d_context, v],
            [b, heads, n, n],
            group | {"OY": rows, "C": dh, "K": n},
            phase="backward",
        )
        dv = self.batched(
            f"{prefix}.context", "dv", [probs, d_context], [b, kv, n, dh], group | {"OY": n, "C": rows, "K": dh}, phase="backward"
        )
        d_scores = self.act(f"{prefix}.softmax.in_grad", [b, heads, n, n], "backward")
        self.graph.op(
            f"{prefix}.softmax/grad",
            "SoftmaxGrad",
            "softmax",
            phase="backward",
            layer=f"{prefix}.softmax",
            inputs=[d_probs, probs],
            outputs=[d_scores],
            elementwise_ops=_SOFTMAX_GRAD_OPS_PER_ELEMENT * self.graph.elements(d_scores),
        )
        dq = self.batched(
            f"{prefix}.scores", "dq", [d_scores, k], [b, heads, n, dh], group | {"OY": rows, "C": n, "K": dh}, phase="backward"
        )
        dk = self.batched(
            f"{prefix}.scores", "dk", [d_scores, q], [b, kv, n, dh], group | {"OY": n, "C": rows, "K": dh}, phase="backward"
        )
        h_shape = [b, n, s.d_model]
        if acts.source is None:
            (dqkv,) = self.layout("Concat", [dq, dk, dv], [[b, n, s.d_attn + 2 * s.d_kv]], f"{prefix}.split", "backward")
            return self.linear_grad(dqkv, acts.h, f"{prefix}.qkv", h_shape), None
        (dkv,) = self.layout("Concat", [dk, dv], [[b, n, 2 * s.d_kv]], f"{prefix}.split", "backward")
        d_source = self.linear_grad(dkv, acts.source, f"{prefix}.kv", h_shape)
        return self.linear_grad(dq, acts.h, f"{prefix}.q", h_shape), d_source

    def mlp(self, h: int, prefix: str, phase: str, *, full: bool) -> tuple[int, _Mlp]:
        """The MLP up to its activation (``full``: and its output projection); partial output and saved tensors."""
        s, activation = self.shard, self.config.activation
        hidden = [s.sequences, s.seq_len, s.d_ff]
        fc = self.linear(h, f"{prefix}.fc", phase, hidden)
        gate = self.linear(h, f"{prefix}.gate", phase, hidden) if self.config.gated_ffn else None
        extras = ("square", "tanh", "one_plus_tanh") if activation == "gelu_tanh" else ()
        a = self.act(f"{prefix}.act.out", hidden, phase)
        kept = tuple(self.act(f"{prefix}.act.{extra}", hidden, phase) for extra in extras)
        pre = gate if gate is not None else fc
        gated = [fc] if gate is not None else []
        self.graph.op(
            f"{prefix}.act/{phase}",
            self.activation_op_type,
            "eltwise",
            phase=phase,
            layer=f"{prefix}.act",
            inputs=[pre, *gated],
            outputs=[a, *kept],
            elementwise_ops=(_ACTIVATION_OPS[activation][0] + len(gated)) * self.graph.elements(pre),
        )
        acts = _Mlp(h=h, fc=fc, gate=gate, a=a, kept=kept)
        out = self.linear(a, f"{prefix}.proj", phase, [s.sequences, s.seq_len, s.d_model]) if full else -1
        return out, acts

    def mlp_grad(self, dy: int, acts: _Mlp, prefix: str) -> int:
        """Backward of ``mlp``: the partial input gradient."""
        s, activation = self.shard, self.config.activation
        hidden = [s.sequences, s.seq_len, s.d_ff]
        da = self.linear_grad(dy, acts.a, f"{prefix}.proj", hidden)
        fc, gate = acts.fc, acts.gate
        pre = gate if gate is not None else fc
        d_pre = self.act(f"{prefix}.act.in_grad", hidden, "backward")
        d_fc = self.act(f"{prefix}.act.fc_grad", hidden, "backward") if gate is not None else d_pre
        outputs = [d_pre] if gate is None else [d_pre, d_fc]
        inputs = [da, pre, *([fc] if gate is not None else []), *acts.kept]
        self.graph.op(
            f"{prefix}.act/grad",
            f"{self.activation_op_type}Grad",
            "eltwise",
            phase="backward",
            layer=f"{prefix}.act",
            inputs=inputs,
            outputs=outputs,
            elementwise_ops=(_ACTIVATION_OPS[activation][1] + 2 * (gate is not None)) * self.graph.elements(da),
        )
        h_shape = [s.sequences, s.seq_len, s.d_model]
        dh = self.linear_grad(d_fc, acts.h, f"{prefix}.fc", h_shape)
        if gate is None:
            return dh
        return self.linear_grad(d_pre, acts.h, f"{prefix}.gate", h_shape, accumulate=dh)

    # ------------------------------------------------------------------ blocks
    def sublayer(self, x: int, part: str, block: int, phase: str, *, enc_out: int, full: bool) -> tuple[int, _Sublayer]:
        """``x + body(norm(x))`` of one sub-block (``full`` False: stop after the MLP activation).

        ``enc_out`` is the encoder's output, which a ``cross`` sub-block attends to (-1 without an encoder).
        """
        prefix = f"blocks.{block}.{part}"
        norm = self.norm(x, f"blocks.{block}.{_NORM_OF_PART[part]}", phase)
        h = self.enter(norm.y, f"{prefix}.in", phase)
        body: _Attention | _Mlp
        if part == "mlp":
            out, body = self.mlp(h, prefix, phase, full=full)
        else:
            source = self.enter(enc_out, f"{prefix}.source", phase) if part == "cross" else None
            out, body = self.attention(h, source, prefix, phase)
        saved = _Sublayer(norm=norm, body=body)
        if not full:
            return -1, saved
        y = self.leave(out, f"{prefix}.out", phase)
        return self.add(x, y, f"{prefix}.residual", phase), saved

    def sublayer_grad(self, dy: int, saved: _Sublayer, part: str, block: int) -> int:
        """Backward of ``sublayer``: the gradient of its input (the residual branch included)."""
        prefix = f"blocks.{block}.{part}"
        d_out = self.leave_grad(dy, f"{prefix}.out")
        if isinstance(saved.body, _Mlp):
            dh = self.mlp_grad(d_out, saved.body, prefix)
        else:
            dh, d_source = self.attention_grad(d_out, saved.body, prefix)
            if d_source is not None:
                self.accumulate_encoder_grad(self.enter_grad(d_source, f"{prefix}.source"), prefix)
        d_norm = self.enter_grad(dh, f"{prefix}.in")
        return self.norm_grad(d_norm, saved.norm, f"blocks.{block}.{_NORM_OF_PART[part]}", residual=dy)

    def accumulate_encoder_grad(self, d_source: int, prefix: str) -> None:
        """Sum the encoder output's gradient over the decoder blocks' cross-attentions."""
        if self.enc_grad < 0:
            self.enc_grad = d_source
            return
        self.enc_grad = self.add(self.enc_grad, d_source, f"{prefix}.source_grad_sum", "backward")

    def block_forward(self, block: int, x: int, enc_out: int) -> int:
        """One block's forward (its weights gathered first when sharded)."""
        params = [name for name, _ in _block_params(self.config, self.shard, block)]
        self.gather(params, f"blocks.{block}", "forward")
        self.block_inputs[block] = x
        acts_list = []
        for part in _block_parts(self.config, block):
            x, acts = self.sublayer(x, part, block, "forward", enc_out=enc_out, full=True)
            acts_list.append(acts)
        self.block_acts[block] = acts_list
        return x

    def block_backward(self, block: int, dy: int, enc_out: int) -> int:
        """One block's backward, after recomputing its forward if asked; reduces its gradients."""
        params = [name for name, _ in _block_params(self.config, self.shard, block)]
        self.gather(params, f"blocks.{block}", "backward")
        parts = _block_parts(self.config, block)
        acts_list = self.block_acts[block]
        if self.recompute == "layer":
            x, acts_list = self.block_inputs[block], []
            for i, part in enumerate(parts):
                x, acts = self.sublayer(x, part, block, "recompute", enc_out=enc_out, full=i < len(parts) - 1)
                acts_list.append(acts)
        for part, acts in zip(reversed(parts), reversed(acts_list), strict=True):
            dy = self.sublayer_grad(dy, acts, part, block)
        self.reduce_grads(params, f"blocks.{block}")
        return dy

    # ------------------------------------------------------------------ embedding, head and loss
    def embed(self, tokens: int, name: str) -> int:
        """Token (and position) embedding of one stream; vocabulary-parallel, so summed over the chips."""
        params = ["token_embedding.weight"] + (["position_embedding.weight"] if self.config.learned_positions else [])
        full = self.act(f"{name}.out", self.sequence_shape(), "forward")
        self.graph.op(
            f"{name}/forward",
            "Gather",
            "eltwise",
            phase="forward",
            layer=name,
            inputs=[tokens, *(self.reading[p] for p in params)],
            outputs=[full],
            elementwise_ops=self.graph.elements(full),
        )
        return self.leave(full, name, "forward")

    def embed_grad(self, streams: list[tuple[int, int, str]]) -> None:
        """Gradients of the embeddings from every stream's (input gradient, tokens, name), plus the tied head's."""
        dxs = [(self.leave_grad(dx, name), tokens) for dx, tokens, name in streams]
        params = ["token_embedding.weight"] + (["position_embedding.weight"] if self.config.learned_positions else [])
        outputs = [self.grad(p) for p in params]
        partials = self.grad_partials.get("token_embedding.weight", [])
        inputs = [t for pair in dxs for t in pair] + partials
        self.graph.op(
            "embedding/grad",
            "GatherGrad",
            "eltwise",
            phase="backward",
            layer="embedding",
            inputs=inputs,
            outputs=outputs,
            elementwise_ops=sum(self.graph.elements(dx) for dx, _ in dxs) * len(params)
            + sum(self.graph.elements(t) for t in partials),
        )

    def head_and_loss(self, x: int, labels: int) -> _Head:
        """Final LayerNorm, LM head and cross-entropy."""
        s = self.shard
        norm = self.norm(x, "ln_f", "forward")
        h = self.enter(norm.y, "lm_head.in", "forward")
        weight = "token_embedding.weight" if self.config.tied_embeddings else "lm_head.weight"
        logits = self.act("lm_head.out", [s.tokens, s.vocab], "forward")
        self.graph.op(
            "lm_head/forward",
            "Gemm",
            "gemm",
            phase="forward",
            layer="lm_head",
            inputs=[h, self.reading[weight]],
            outputs=[logits],
            dims={"OY": s.tokens, "C": s.d_model, "K": s.vocab},
        )
        log_prob = self.act("loss.log_prob", [s.tokens, s.vocab], "forward")
        loss = self.graph.tensor("loss", "output", [], self.dtype)
        self.graph.op(
            "loss/forward",
            "SoftmaxCrossEntropyLoss",
            "softmax",
            phase="forward",
            layer="loss",
            inputs=[logits, labels],
            outputs=[log_prob, loss],
            elementwise_ops=_LOSS_OPS_PER_ELEMENT * s.tokens * s.vocab + 2 * s.tokens,
        )
        return _Head(norm=norm, h=h, log_prob=log_prob, labels=labels)

    def head_and_loss_grad(self, head: _Head) -> int:
        """Backward of ``head_and_loss``: the gradient of the last block's output."""
        s = self.shard
        d_logits = self.act("lm_head.out_grad", [s.tokens, s.vocab], "backward")
        self.graph.op(
            "loss/grad",
            "SoftmaxCrossEntropyLossGrad",
            "eltwise",
            phase="backward",
            layer="loss",
            inputs=[head.log_prob, head.labels],
            outputs=[d_logits],
            elementwise_ops=_LOSS_GRAD_OPS_PER_ELEMENT * s.tokens * s.vocab,
        )
        tied = self.config.tied_embeddings
        weight = "token_embedding.weight" if tied else "lm_head.weight"
        dh = self.act("lm_head.in_grad", self.sequence_shape(), "backward")
        self.graph.op(
            "lm_head/dgrad",
            "Gemm",
            "gemm",
            phase="backward",
            layer="lm_head",
            inputs=[d_logits, self.reading[weight]],
            outputs=[dh],
            dims={"OY": s.tokens, "C": s.vocab, "K": s.d_model},
        )
        if tied:
            dw = self.graph.tensor("lm_head.weight_grad", "gradient", self.param_shape[weight], self.dtype)
            self.grad_partials[weight] = [dw]
        else:
            dw = self.grad(weight)
        self.graph.op(
            "lm_head/wgrad",
            "Gemm",
            "gemm",
            phase="backward",
            layer="lm_head",
            inputs=[head.h, d_logits],
            outputs=[dw],
            dims={"OY": s.d_model, "C": s.tokens, "K": s.vocab},
        )
        d_norm = self.enter_grad(dh, "lm_head.in")
        return self.norm_grad(d_norm, head.norm, "ln_f", residual=None)

    # ------------------------------------------------------------------ optimizer and the whole step
    def update(self, params: list[str], layer: str) -> None:
        """One fused optimizer op over ``params``: new parameters and states overwrite the old in place.

        With a ``master`` copy the update reads it instead of the parameter, then rounds it into the parameter.
        """
        master = "master" in self.state_names
        inputs, outputs = [], []
        for p in params:
            inputs += ([] if master else [self.stored[p]]) + [self.grads[p], *self.states[p].values()]
            for tensor in [self.stored[p], *self.states[p].values()]:
                row = self.graph.tensors[tensor]
                new = self.graph.tensor(f"{row.name}.updated", row.kind, row.shape, row.dtype_bytes)
                self.graph.tensors[new].updates = tensor
                outputs.append(new)
        elements = sum(self.graph.elements(self.stored[p]) for p in params)
        self.graph.op(
            f"{layer}/{self.optimizer}",
            self.optimizer.capitalize(),
            "optimizer",
            phase="optimizer",
            layer=layer,
            inputs=inputs,
            outputs=outputs,
            elementwise_ops=(_OPTIMIZER_OPS_PER_ELEMENT[self.optimizer] + master) * elements,
        )

    def stream_blocks(self, stream: str) -> list[int]:
        """The blocks of an ``encoder``, ``decoder`` or (decoder- or encoder-only) ``input`` stream."""
        encoder = self.config.n_encoder_layer
        return [b for b in range(self.config.n_layer) if (b < encoder) == (stream == "encoder")]

    def build(self) -> _Graph:
        """Every op of the step, in execution order."""
        config, s = self.config, self.shard
        token_shape = [s.sequences, s.seq_len]
        streams = ["encoder", "decoder"] if config.is_encoder_decoder else ["input"]
        tokens = {name: self.graph.tensor(f"{name}_tokens", "input", token_shape, _INDEX_BYTES) for name in streams}
        labels = self.graph.tensor("labels", "input", [s.tokens], _INDEX_BYTES)
        top = [name for name, _ in _top_params(config, s)]
        self.declare(_top_params(config, s))
        blocks = range(config.n_layer)
        for block in blocks:
            self.declare(_block_params(config, s, block))
        self.gather(top, "embedding", "forward")
        enc_norm: _Norm | None = None
        enc_out = x = -1
        for stream in streams:
            x = self.embed(tokens[stream], f"embedding.{stream}")
            for block in self.stream_blocks(stream):
                x = self.block_forward(block, x, enc_out)
            if stream == "encoder":
                enc_norm = self.norm(x, "ln_enc", "forward")
                enc_out = enc_norm.y
        dy = self.head_and_loss_grad(self.head_and_loss(x, labels))
        grads_in = {}
        for stream in reversed(streams):
            if stream == "encoder" and enc_norm is not None:
                dy = self.norm_grad(self.enc_grad, enc_norm, "ln_enc", residual=None)
            for block in reversed(self.stream_blocks(stream)):
                dy = self.block_backward(block, dy, enc_out)
            grads_in[stream] = dy
        self.embed_grad([(grads_in[st], tokens[st], f"embedding.{st}") for st in streams])
        self.reduce_grads(top, "embedding")
        self.update(top, "embedding")
        for block in blocks:
            self.update([name for name, _ in _block_params(config, s, block)], f"blocks.{block}")
        return self.graph


def transformer_workload(
    config: TransformerConfig,
    *,
    parallel: Parallelism = Parallelism(),  # noqa: B008 - frozen, so sharing the default is safe
    optimizer: OptimizerName = "adam",
    dtype_bytes: int = 2,
    optimizer_state_bytes: int | None = None,
    recompute: Recompute = "none",
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
    shard = _shard(config, parallel)
    step = _Step(config, shard, optimizer=optimizer, dtype_bytes=dtype_bytes, state_bytes=state_bytes, recompute=recompute)
    meta = {
        "model": config.name,
        "batch": str(shard.sequences),
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
            }
        ),
        "chips": str(parallel.chips),
        "parameters_total": str(parameter_count(config)),
        "source": "traincost.models.transformer",
    }
    return step.build().workload(meta)


def gpt2_transformer_config(config: GPT2Config, *, batch: int, name: str = "gpt2") -> TransformerConfig:
    """The ``TransformerConfig`` of a zoo GPT-2, computing its GELU as the exported ONNX graph does.

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
        activation="gelu_tanh",
    )
