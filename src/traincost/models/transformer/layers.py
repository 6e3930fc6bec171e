"""The layers of a transformer block, forward and backward: linear, LayerNorm, residual add, attention, MLP.

Each forward method appends its ops to the step's graph and returns what its backward reads (the
``Saved…`` records); each ``…_grad`` method appends the backward ops. Element-wise op counts per
element are those of the decomposed ONNX graph (:mod:`traincost.frontend.onnx.lower`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from traincost.models.transformer.collectives import ParallelStep

__all__ = ["LayerStep", "SavedAttention", "SavedMlp", "SavedNorm"]

_NORM_OPS_PER_ELEMENT = 7  # as traincost.frontend.onnx.lower counts LayerNormalization
_NORM_GRAD_OPS_PER_ELEMENT = 13  # the element-wise ops of the decomposed LayerNormalizationGrad
_SOFTMAX_OPS_PER_ELEMENT = 7  # scale, mask, then max, subtract, exp, sum, divide
_SOFTMAX_GRAD_OPS_PER_ELEMENT = 6  # y·dy, sum, subtract, multiply, unmask, unscale
# (forward, backward) element-wise ops per element of the activation's input
_ACTIVATION_OPS: Mapping[str, tuple[int, int]] = MappingProxyType(
    {"gelu": (9, 13), "gelu_tanh": (9, 13), "relu": (1, 1), "swish": (4, 6)}
)
_ACTIVATION_OP_TYPES: Mapping[str, str] = MappingProxyType(
    {"gelu": "Gelu", "gelu_tanh": "Gelu", "relu": "Relu", "swish": "Swish"}
)


@dataclass(frozen=True, slots=True)
class SavedNorm:
    """A LayerNorm's input and the tensors its forward wrote."""

    x: int
    y: int
    mean: int
    inv_std: int


@dataclass(frozen=True, slots=True)
class SavedAttention:
    """What an attention's backward reads: its inputs (``source``: cross-attention's keys/values input)."""

    h: int
    source: int | None
    q: int
    k: int
    v: int
    probs: int
    context: int


@dataclass(frozen=True, slots=True)
class SavedMlp:
    """What an MLP's backward reads: its input, the pre-activations and the activation's outputs."""

    h: int
    fc: int
    gate: int | None
    a: int
    kept: tuple[int, ...]


class LayerStep(ParallelStep):
    """The layers of a block on one chip; :class:`~traincost.models.transformer.step.TrainingStep` assembles them."""

    @property
    def activation_op_type(self) -> str:
        """The op type of the MLP's activation (``Gated…`` with a gated MLP)."""
        return ("Gated" if self.config.gated_ffn else "") + _ACTIVATION_OP_TYPES[self.config.activation]

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
        params = [f"{param}.weight"] + ([f"{param}.bias"] if self.config.bias else [])
        earlier = self.accumulated(params)
        outputs = [self.grad(p) for p in params]
        self.graph.op(
            f"{param}/wgrad",
            "Gemm",
            "gemm",
            phase="backward",
            layer=param,
            inputs=[x, dy, *earlier],
            outputs=outputs,
            dims={"OY": d_in, "C": tokens, "K": d_out},
            elementwise_ops=(tokens * d_out if self.config.bias else 0) + sum(self.graph.elements(t) for t in earlier),
        )
        return dx

    def norm(self, x: int, name: str, phase: str) -> SavedNorm:
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
        return SavedNorm(x=x, y=y, mean=mean, inv_std=inv_std)

    def norm_grad(self, dy: int, saved: SavedNorm, name: str, residual: int | None) -> int:
        """LayerNorm gradient (plus the residual branch's gradient ``residual``) and its parameters' gradients."""
        dx = self.like(saved.x, f"{name}.in_grad", "backward")
        params = [f"{name}.weight"] + ([f"{name}.bias"] if self.config.bias else [])
        earlier = self.accumulated(params)
        grads = [self.grad(p) for p in params]
        extra = [residual] if residual is not None else []
        elements = self.graph.elements(saved.x)
        self.graph.op(
            f"{name}/grad",
            "LayerNormalizationGrad",
            "norm",
            phase="backward",
            layer=name,
            inputs=[dy, saved.x, saved.mean, saved.inv_std, self.reading[f"{name}.weight"], *extra, *earlier],
            outputs=[dx, *grads],
            elementwise_ops=_NORM_GRAD_OPS_PER_ELEMENT * elements
            + (elements if extra else 0)
            + sum(self.graph.elements(t) for t in earlier),
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

    def attention(self, h: int, kv_source: int | None, prefix: str, phase: str) -> tuple[int, SavedAttention]:
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
        acts = SavedAttention(h=h, source=kv_source, q=q, k=k, v=v, probs=probs, context=context)
        return self.linear(context, f"{prefix}.proj", phase, [b, n, s.d_model]), acts

    def attention_grad(self, dy: int, acts: SavedAttention, prefix: str) -> tuple[int, int | None]:
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

    def mlp(self, h: int, prefix: str, phase: str, *, full: bool) -> tuple[int, SavedMlp]:
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
        acts = SavedMlp(h=h, fc=fc, gate=gate, a=a, kept=kept)
        out = self.linear(a, f"{prefix}.proj", phase, [s.sequences, s.seq_len, s.d_model]) if full else -1
        return out, acts

    def mlp_grad(self, dy: int, acts: SavedMlp, prefix: str) -> int:
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
