"""GPT-2 decoder-only language model, with explicit attention matmuls.

Layout (as in GPT-2): learned token and position embeddings, ``n_layer`` pre-LayerNorm decoder
blocks, a final LayerNorm and a language-model head whose weight is tied to the token embedding
(no bias). Each block computes ``x + attn(ln_1(x))`` then ``x + mlp(ln_2(x))``:

* attention: one linear layer to queries, keys and values, ``n_head`` heads,
  ``softmax(masked_fill(q @ k^T / sqrt(d_head))) @ v`` where the causal mask is a lower-triangular
  boolean buffer (registered with ``persistent=False``: neither a parameter nor a state-dict
  entry), then an output projection;
* MLP: linear to ``4 * d_model``, ``GELU(approximate="tanh")``, linear back to ``d_model``.

There is no dropout. The attention is written out rather than calling
``scaled_dot_product_attention``, so the exported ONNX graph holds plain MatMul, Where and Softmax.
Weights are initialised as in GPT-2: normal with standard deviation 0.02, divided by
``sqrt(2 * n_layer)`` for the two projections that add into the residual stream; biases are zero.

Input: token ids, int64, (batch, T) with ``T <= seq_len``. Output: logits flattened to
(batch * T, vocab_size), so the next-token loss is ``cross_entropy(model(x), labels)`` with labels
of shape (batch * T,).

Presets: ``GPT2_124M`` is the original 124M model (12 layers, 768 wide, 12 heads, 1024 positions,
50,257 tokens; 124,439,808 parameters with tied embeddings). ``GPT2_SMALL`` stands in for the
"small GPT-2" of MONET, whose size the paper does not give; 2 layers, 128 wide, 4 heads, 64
positions and a 1024-token vocabulary is our choice.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from traincost.errors import ConfigError
from traincost.models._validation import check_positive_int

__all__ = ["GPT2", "GPT2_124M", "GPT2_SMALL", "Block", "CausalSelfAttention", "GPT2Config", "gpt2"]


@dataclass(frozen=True, slots=True)
class GPT2Config:
    """Validated GPT-2 hyper-parameters.

    Attributes:
        n_layer: Number of decoder blocks.
        d_model: Width of the residual stream.
        n_head: Attention heads; must divide ``d_model``.
        seq_len: Maximum sequence length (number of learned positions).
        vocab_size: Number of tokens.

    Raises:
        ConfigError: A field is not a positive int, or ``d_model`` is not divisible by ``n_head``.
    """

    n_layer: int
    d_model: int
    n_head: int
    seq_len: int
    vocab_size: int

    def __post_init__(self) -> None:
        """Check every field; see the class docstring."""
        for field in ("n_layer", "d_model", "n_head", "seq_len", "vocab_size"):
            check_positive_int(getattr(self, field), field=field)
        if self.d_model % self.n_head != 0:
            raise ConfigError(f"'d_model' ({self.d_model}) must be divisible by 'n_head' ({self.n_head})")


_INIT_STD = 0.02
"""Standard deviation of GPT-2's normal weight initialisation."""

GPT2_124M = GPT2Config(n_layer=12, d_model=768, n_head=12, seq_len=1024, vocab_size=50257)
"""The original GPT-2 "124M" (small) model."""

GPT2_SMALL = GPT2Config(n_layer=2, d_model=128, n_head=4, seq_len=64, vocab_size=1024)
"""Our choice for the small GPT-2 of MONET."""


def _residual_std(config: GPT2Config) -> float:
    """Initial weight spread of the projections that add into the residual stream."""
    return _INIT_STD / math.sqrt(2 * config.n_layer)


def _linear(in_features: int, out_features: int, *, std: float) -> nn.Linear:
    """A linear layer with weights drawn from N(0, std^2) and zero bias."""
    layer = nn.Linear(in_features, out_features)
    nn.init.normal_(layer.weight, std=std)
    nn.init.zeros_(layer.bias)
    return layer


class CausalSelfAttention(nn.Module):
    """Multi-head self-attention with a causal mask, written with explicit matmuls."""

    causal_mask: torch.Tensor

    def __init__(self, config: GPT2Config) -> None:
        """Create the layer.

        Args:
            config: Model hyper-parameters (``d_model``, ``n_head``, ``seq_len`` are used).
        """
        super().__init__()
        self.d_model = config.d_model
        self.n_head = config.n_head
        self.d_head = config.d_model // config.n_head
        self.qkv = _linear(config.d_model, 3 * config.d_model, std=_INIT_STD)
        self.proj = _linear(config.d_model, config.d_model, std=_residual_std(config))
        causal = torch.tril(torch.ones(config.seq_len, config.seq_len, dtype=torch.bool))
        self.register_buffer("causal_mask", causal, persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Attend over (B, T, d_model) and return (B, T, d_model)."""
        b, t, _ = x.shape
        q, k, v = self.qkv(x).split(self.d_model, dim=2)
        q = q.view(b, t, self.n_head, self.d_head).transpose(1, 2)
        k = k.view(b, t, self.n_head, self.d_head).transpose(1, 2)
        v = v.view(b, t, self.n_head, self.d_head).transpose(1, 2)
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(self.d_head)
        future = self.causal_mask[:t, :t].logical_not()
        weights = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
        out = (weights @ v).transpose(1, 2).reshape(b, t, self.d_model)
        return self.proj(out)


class Block(nn.Module):
    """Pre-LayerNorm decoder block: attention and a 4x GELU MLP, each with a residual connection."""

    def __init__(self, config: GPT2Config) -> None:
        """Create the block.

        Args:
            config: Model hyper-parameters.
        """
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.d_model)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = nn.LayerNorm(config.d_model)
        self.mlp = nn.Sequential(
            _linear(config.d_model, 4 * config.d_model, std=_INIT_STD),
            nn.GELU(approximate="tanh"),
            _linear(4 * config.d_model, config.d_model, std=_residual_std(config)),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Apply the block to (B, T, d_model)."""
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT2(nn.Module):
    """GPT-2 with tied token embedding and language-model head; returns flattened logits."""

    def __init__(self, config: GPT2Config) -> None:
        """Create the model.

        Args:
            config: Model hyper-parameters.
        """
        super().__init__()
        self.config = config
        self.token_embedding = nn.Embedding(config.vocab_size, config.d_model)
        self.position_embedding = nn.Embedding(config.seq_len, config.d_model)
        self.blocks = nn.Sequential(*(Block(config) for _ in range(config.n_layer)))
        self.ln_f = nn.LayerNorm(config.d_model)
        self.lm_head = nn.Linear(config.d_model, config.vocab_size, bias=False)
        self.lm_head.weight = self.token_embedding.weight
        nn.init.normal_(self.token_embedding.weight, std=_INIT_STD)
        nn.init.normal_(self.position_embedding.weight, std=_INIT_STD)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """Map token ids (B, T), int64, to logits (B * T, vocab_size).

        Args:
            tokens: Token ids in ``[0, vocab_size)``; ``T`` must not exceed ``seq_len``.

        Returns:
            Next-token logits, one row per input position.

        Raises:
            ConfigError: ``T`` exceeds the configured ``seq_len``.
        """
        t = tokens.shape[1]
        if t > self.config.seq_len:
            raise ConfigError(f"input length {t} exceeds 'seq_len' ({self.config.seq_len})")
        x = self.token_embedding(tokens) + self.position_embedding.weight[:t]
        x = self.ln_f(self.blocks(x))
        return self.lm_head(x).reshape(-1, self.config.vocab_size)


def gpt2(
    *,
    n_layer: int = GPT2_124M.n_layer,
    d_model: int = GPT2_124M.d_model,
    n_head: int = GPT2_124M.n_head,
    seq_len: int = GPT2_124M.seq_len,
    vocab_size: int = GPT2_124M.vocab_size,
) -> GPT2:
    """Build a GPT-2; the defaults give the original 124M model.

    Args:
        n_layer: Number of decoder blocks.
        d_model: Width of the residual stream.
        n_head: Attention heads; must divide ``d_model``.
        seq_len: Maximum sequence length.
        vocab_size: Number of tokens.

    Returns:
        The model, initialised from torch's global random state.

    Raises:
        ConfigError: An option is not a positive int, or ``d_model`` is not divisible by ``n_head``.
    """
    config = GPT2Config(n_layer=n_layer, d_model=d_model, n_head=n_head, seq_len=seq_len, vocab_size=vocab_size)
    return GPT2(config)
