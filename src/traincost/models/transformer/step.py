"""One chip's whole training step: blocks (with their recomputation), embedding, head and loss, optimizer.

``TrainingStep.build`` writes the step in execution order. With ``recompute="layer"``, a block keeps
only its input from the forward pass and re-runs its forward (phase ``recompute``) just before its
backward, up to the last tensor the backward reads (``block_backward``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from traincost.models.transformer.config import NORM_OF_PART, Shard, TransformerConfig, block_params, block_parts, top_params
from traincost.models.transformer.graph import OpGraph
from traincost.models.transformer.layers import LayerStep, SavedAttention, SavedMlp, SavedNorm

__all__ = ["TrainingStep"]

_INDEX_BYTES = 8  # token ids and labels are int64, as in the exported graphs
_LOSS_OPS_PER_ELEMENT = 5  # log-softmax over the logits
_LOSS_GRAD_OPS_PER_ELEMENT = 4  # one-hot, exp, subtract, scale
_OPTIMIZER_OPS_PER_ELEMENT: Mapping[str, int] = MappingProxyType({"sgd": 2, "adam": 13})


@dataclass(frozen=True, slots=True)
class SavedHead:
    """What the head's and loss's backward reads."""

    norm: SavedNorm
    h: int
    log_prob: int
    labels: int


@dataclass(frozen=True, slots=True)
class SavedSublayer:
    """What a sub-block's backward reads."""

    norm: SavedNorm
    body: SavedAttention | SavedMlp


class TrainingStep(LayerStep):
    """Writes one chip's training step into an ``OpGraph``; ``build`` runs it."""

    def __init__(
        self, config: TransformerConfig, shard: Shard, *, optimizer: str, dtype_bytes: int, state_bytes: int, recompute: str
    ) -> None:
        super().__init__(
            config, shard, optimizer=optimizer, dtype_bytes=dtype_bytes, state_bytes=state_bytes, recompute=recompute
        )
        self.block_inputs: dict[int, int] = {}
        self.block_acts: dict[int, list[SavedSublayer]] = {}
        self.enc_grad = -1  # the encoder output's gradient summed so far (-1: none yet)

    def sublayer(self, x: int, part: str, block: int, phase: str, *, enc_out: int, full: bool) -> tuple[int, SavedSublayer]:
        """``x + body(norm(x))`` of one sub-block (``full`` False: stop after the MLP activation).

        ``enc_out`` is the encoder's output, which a ``cross`` sub-block attends to (-1 without an encoder).
        """
        prefix = f"blocks.{block}.{part}"
        norm = self.norm(x, f"blocks.{block}.{NORM_OF_PART[part]}", phase)
        h = self.enter(norm.y, f"{prefix}.in", phase)
        body: SavedAttention | SavedMlp
        if part == "mlp":
            out, body = self.mlp(h, prefix, phase, full=full)
        else:
            source = self.enter(enc_out, f"{prefix}.source", phase) if part == "cross" else None
            out, body = self.attention(h, source, prefix, phase)
        saved = SavedSublayer(norm=norm, body=body)
        if not full:
            return -1, saved
        y = self.leave(out, f"{prefix}.out", phase)
        return self.add(x, y, f"{prefix}.residual", phase), saved

    def sublayer_grad(self, dy: int, saved: SavedSublayer, part: str, block: int) -> int:
        """Backward of ``sublayer``: the gradient of its input (the residual branch included)."""
        prefix = f"blocks.{block}.{part}"
        d_out = self.leave_grad(dy, f"{prefix}.out")
        if isinstance(saved.body, SavedMlp):
            dh = self.mlp_grad(d_out, saved.body, prefix)
        else:
            dh, d_source = self.attention_grad(d_out, saved.body, prefix)
            if d_source is not None:
                self.accumulate_encoder_grad(self.enter_grad(d_source, f"{prefix}.source"), prefix)
        d_norm = self.enter_grad(dh, f"{prefix}.in")
        return self.norm_grad(d_norm, saved.norm, f"blocks.{block}.{NORM_OF_PART[part]}", residual=dy)

    def accumulate_encoder_grad(self, d_source: int, prefix: str) -> None:
        """Sum the encoder output's gradient over the decoder blocks' cross-attentions."""
        if self.enc_grad < 0:
            self.enc_grad = d_source
            return
        self.enc_grad = self.add(self.enc_grad, d_source, f"{prefix}.source_grad_sum", "backward")

    def block_forward(self, block: int, x: int, enc_out: int) -> int:
        """One block's forward (its weights gathered first when sharded)."""
        params = [name for name, _ in block_params(self.config, self.shard, block)]
        self.gather(params, f"blocks.{block}", "forward")
        self.block_inputs[block] = x
        acts_list = []
        for part in block_parts(self.config, block):
            x, acts = self.sublayer(x, part, block, "forward", enc_out=enc_out, full=True)
            acts_list.append(acts)
        self.block_acts[block] = acts_list
        return x

    def block_backward(self, block: int, dy: int, enc_out: int) -> int:
        """One block's backward, after recomputing its forward if asked; reduces its gradients."""
        params = [name for name, _ in block_params(self.config, self.shard, block)]
        self.gather(params, f"blocks.{block}", "backward")
        parts = block_parts(self.config, block)
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

    def head_and_loss(self, x: int, labels: int) -> SavedHead:
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
        return SavedHead(norm=norm, h=h, log_prob=log_prob, labels=labels)

    def head_and_loss_grad(self, head: SavedHead) -> int:
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

    def build(self) -> OpGraph:
        """Every op of the step, in execution order."""
        config, s = self.config, self.shard
        token_shape = [s.sequences, s.seq_len]
        streams = ["encoder", "decoder"] if config.is_encoder_decoder else ["input"]
        tokens = {name: self.graph.tensor(f"{name}_tokens", "input", token_shape, _INDEX_BYTES) for name in streams}
        labels = self.graph.tensor("labels", "input", [s.tokens], _INDEX_BYTES)
        top = [name for name, _ in top_params(config, s)]
        self.declare(top_params(config, s))
        blocks = range(config.n_layer)
        for block in blocks:
            self.declare(block_params(config, s, block))
        self.gather(top, "embedding", "forward")
        enc_norm: SavedNorm | None = None
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
            self.update([name for name, _ in block_params(config, s, block)], f"blocks.{block}")
        return self.graph
