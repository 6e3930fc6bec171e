"""One chip's whole training step: blocks (with their recomputation), embedding, head and loss, optimizer.

``TrainingStep.build`` writes the step in execution order. With ``recompute="layer"``, a block keeps
only its input from the forward pass and re-runs its forward (phase ``recompute``) just before its
backward, up to the last tensor the backward reads (``block_backward``).

With pipeline stages the chip is one stage (``stage``): its blocks only, the embedding on the first stage, the final
LayerNorm, head and loss on the last (with tied embeddings the last stage holds its own copy of the embedding for the
head, as Megatron-LM does; the all-reduce between the two copies' gradients is not modelled). Each micro-batch's
forward and backward run in the schedule's order (``pipeline_order``): a stage receives its input (and, backward, its
output's gradient) from the neighbouring stage and sends its output (its input's gradient) on. Weight gradients
accumulate over the micro-batches, on the chip and reduced over the replicas after the last one, or, with full
sharding, as shards reduce-scattered after each (as ZeRO-3 and FSDP do); with full sharding a block's weights are
gathered for each micro-batch's forward and backward.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from traincost.models.transformer.config import (
    NORM_OF_PART,
    Shard,
    TransformerConfig,
    block_params,
    block_parts,
    stage_blocks,
    top_params,
)
from traincost.models.transformer.graph import OpGraph
from traincost.models.transformer.layers import LayerStep, SavedAttention, SavedMlp, SavedNorm

__all__ = ["TrainingStep", "pipeline_order"]

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


def pipeline_order(schedule: str, stages: int, stage: int, micro_batches: int) -> list[tuple[str, int]]:
    """The (``forward`` | ``backward``, micro-batch) passes of pipeline stage ``stage``, in order.

    ``gpipe``: every forward, then every backward. ``1f1b`` (PipeDream-Flush, Narayanan et al. 2021): ``stages - stage
    - 1`` warm-up forwards (at most ``micro_batches``), then one forward and one backward in turn, then the remaining
    backwards. With one stage, 1F1B is gradient accumulation: each micro-batch's forward, then its backward.
    """
    forwards = [("forward", j) for j in range(micro_batches)]
    backwards = [("backward", j) for j in range(micro_batches)]
    if schedule == "gpipe":
        return forwards + backwards
    warmup = min(stages - stage - 1, micro_batches)
    steady = [pass_ for pair in zip(forwards[warmup:], backwards, strict=False) for pass_ in pair]
    return forwards[:warmup] + steady + backwards[micro_batches - warmup :]


class TrainingStep(LayerStep):
    """Writes one chip's training step (pipeline stage ``stage``) into an ``OpGraph``; ``build`` runs it."""

    def __init__(
        self,
        config: TransformerConfig,
        shard: Shard,
        *,
        optimizer: str,
        dtype_bytes: int,
        state_bytes: int,
        recompute: str,
        schedule: str = "1f1b",
        stage: int = 0,
    ) -> None:
        super().__init__(
            config, shard, optimizer=optimizer, dtype_bytes=dtype_bytes, state_bytes=state_bytes, recompute=recompute
        )
        self.schedule, self.stage = schedule, stage
        self.first, self.last = stage == 0, stage == shard.stages - 1
        self.blocks = stage_blocks(config.n_layer, shard.stages, stage)
        self.top = self.top_params()
        self.top_names = [name for name, _ in self.top]
        self.micro = 0  # the micro-batch being written
        self.block_inputs: dict[tuple[int, int], int] = {}  # (micro-batch, block) -> the block's input
        self.block_acts: dict[tuple[int, int], list[SavedSublayer]] = {}
        self.heads: dict[int, SavedHead] = {}
        self.encoder: dict[int, tuple[SavedNorm, int]] = {}  # micro-batch -> the encoder's final norm and output
        self.enc_grad = -1  # the encoder output's gradient summed so far in this micro-batch (-1: none yet)

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
        self.block_inputs[(self.micro, block)] = x
        acts_list = []
        for part in block_parts(self.config, block):
            x, acts = self.sublayer(x, part, block, "forward", enc_out=enc_out, full=True)
            acts_list.append(acts)
        self.block_acts[(self.micro, block)] = acts_list
        return x

    def block_backward(self, block: int, dy: int, enc_out: int) -> int:
        """One block's backward, after recomputing its forward if asked; reduces its gradients after the last
        micro-batch (after each when they are reduced per micro-batch)."""
        params = [name for name, _ in block_params(self.config, self.shard, block)]
        self.gather(params, f"blocks.{block}", "backward")
        parts = block_parts(self.config, block)
        acts_list = self.block_acts.pop((self.micro, block))
        x = self.block_inputs.pop((self.micro, block))
        if self.recompute == "layer":
            acts_list = []
            for i, part in enumerate(parts):
                x, acts = self.sublayer(x, part, block, "recompute", enc_out=enc_out, full=i < len(parts) - 1)
                acts_list.append(acts)
        for part, acts in zip(reversed(parts), reversed(acts_list), strict=True):
            dy = self.sublayer_grad(dy, acts, part, block)
        if self.reduces_each_micro_batch or self.micro == self.shard.micro_batches - 1:
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
        earlier = self.accumulated(params)
        outputs = [self.grad(p) for p in params]
        partials = self.grad_partials.pop("token_embedding.weight", [])
        inputs = [t for pair in dxs for t in pair] + partials + earlier
        self.graph.op(
            "embedding/grad",
            "GatherGrad",
            "eltwise",
            phase="backward",
            layer="embedding",
            inputs=inputs,
            outputs=outputs,
            elementwise_ops=sum(self.graph.elements(dx) for dx, _ in dxs) * len(params)
            + sum(self.graph.elements(t) for t in partials + earlier),
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
        earlier: list[int] = []
        if tied and self.first:  # the embedding's own stage: a partial its gradient op adds in this micro-batch
            dw = self.graph.tensor("lm_head.weight_grad", "gradient", self.param_shape[weight], self.dtype)
            self.grad_partials[weight] = [dw]
        else:
            earlier = self.accumulated([weight])
            dw = self.grad(weight)
        self.graph.op(
            "lm_head/wgrad",
            "Gemm",
            "gemm",
            phase="backward",
            layer="lm_head",
            inputs=[head.h, d_logits, *earlier],
            outputs=[dw],
            dims={"OY": s.d_model, "C": s.tokens, "K": s.vocab},
            elementwise_ops=sum(self.graph.elements(t) for t in earlier),
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
        """This stage's blocks of an ``encoder``, ``decoder`` or (decoder- or encoder-only) ``input`` stream."""
        encoder = self.config.n_encoder_layer
        return [b for b in self.blocks if (b < encoder) == (stream == "encoder")]

    def streams(self) -> list[str]:
        """The token streams: ``encoder`` and ``decoder`` of an encoder-decoder, else one ``input``."""
        return ["encoder", "decoder"] if self.config.is_encoder_decoder else ["input"]

    def top_params(self) -> list[tuple[str, tuple[int, ...]]]:
        """The parameters outside the blocks this stage holds: the embedding on the first, the final norms and the
        head's weight (with tied embeddings, a copy of the embedding) on the last."""
        head = "token_embedding.weight" if self.config.tied_embeddings else "lm_head.weight"
        first = {"token_embedding.weight", "position_embedding.weight"} if self.first else set()
        last = {head} if self.last else set()
        return [
            (name, shape)
            for name, shape in top_params(self.config, self.shard)
            if name in first or name in last or (self.last and name.startswith(("ln_f.", "ln_enc.")))
        ]

    def residual_shape(self) -> list[int]:
        """One micro-batch's residual stream, as a stage passes it on (its positions split with sequence parallelism)."""
        return [self.shard.sequences, self.shard.local_seq, self.shard.d_model]

    def forward(self, tokens: dict[str, int], labels: int) -> None:
        """One micro-batch's forward through this stage: embedded (first stage) or received, then sent on or, on the
        last stage, through the head and loss."""
        enc_out = x = -1
        for stream in self.streams():
            x = (
                self.embed(tokens[stream], f"embedding.{stream}")
                if self.first
                else self.receive(self.residual_shape(), "pipeline.in", "forward")
            )
            for block in self.stream_blocks(stream):
                x = self.block_forward(block, x, enc_out)
            if stream == "encoder":
                enc_norm = self.norm(x, "ln_enc", "forward")
                enc_out = enc_norm.y
                self.encoder[self.micro] = (enc_norm, enc_out)
        if self.last:
            self.heads[self.micro] = self.head_and_loss(x, labels)
        else:
            self.send(x, "pipeline.out", "forward")

    def backward(self, tokens: dict[str, int]) -> None:
        """One micro-batch's backward through this stage, from the loss (last stage) or the received gradient, to the
        embedding's gradient (first stage) or the gradient sent back."""
        self.enc_grad = -1
        if self.last:
            dy = self.head_and_loss_grad(self.heads.pop(self.micro))
        else:
            dy = self.receive(self.residual_shape(), "pipeline.out_grad", "backward")
        enc_norm, enc_out = self.encoder.pop(self.micro, (None, -1))
        grads_in = {}
        for stream in reversed(self.streams()):
            if stream == "encoder" and enc_norm is not None:
                dy = self.norm_grad(self.enc_grad, enc_norm, "ln_enc", residual=None)
            for block in reversed(self.stream_blocks(stream)):
                dy = self.block_backward(block, dy, enc_out)
            grads_in[stream] = dy
        if self.first:
            self.embed_grad([(grads_in[st], tokens[st], f"embedding.{st}") for st in self.streams()])
        else:
            self.send(dy, "pipeline.in_grad", "backward")
        if self.top_names and (self.reduces_each_micro_batch or self.micro == self.shard.micro_batches - 1):
            self.reduce_grads(self.top_names, "embedding")

    def build(self) -> OpGraph:
        """Every op of the step, in execution order."""
        config, s = self.config, self.shard
        token_shape = [s.sequences, s.seq_len]
        micro = range(s.micro_batches)
        tokens = [
            {name: self.graph.tensor(f"{name}_tokens", "input", token_shape, _INDEX_BYTES) for name in self.streams()}
            if self.first
            else {}
            for _ in micro
        ]
        labels = [self.graph.tensor("labels", "input", [s.tokens], _INDEX_BYTES) if self.last else -1 for _ in micro]
        self.declare(self.top)
        for block in self.blocks:
            self.declare(block_params(config, s, block))
        if self.top_names:
            self.gather(self.top_names, "embedding", "forward")
        for phase, j in pipeline_order(self.schedule, s.stages, self.stage, s.micro_batches):
            self.micro = j
            if phase == "forward":
                self.forward(tokens[j], labels[j])
            else:
                self.backward(tokens[j])
        if self.top_names:
            self.update(self.top_names, "embedding")
        for block in self.blocks:
            self.update([name for name, _ in block_params(config, s, block)], f"blocks.{block}")
        return self.graph
