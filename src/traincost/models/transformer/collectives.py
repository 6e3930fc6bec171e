"""One chip's tensors and parameters, and the collectives of data, tensor, sequence and pipeline parallelism.

``ParallelStep`` holds the state every part of the step builder shares: the graph written so far,
each parameter's persistent tensor (a flat shard with full sharding), its optimizer states, the
tensor ops read it from now (stored or all-gathered) and its gradient (accumulated over micro-batches:
each micro-batch's gradient op reads the gradient the earlier ones summed). Its collectives are
Megatron's f and g operators (``enter``/``leave`` and their gradients), the gradient reduction
over data-parallel replicas and the point-to-point ``send``/``receive`` between pipeline stages;
:class:`~traincost.models.transformer.layers.LayerStep` builds on it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from traincost.models.transformer.config import OPTIMIZER_STATES, Shard, TransformerConfig
from traincost.models.transformer.graph import OpGraph

__all__ = ["ParallelStep"]


class ParallelStep:
    """One chip's tensors, parameters and collectives; the base of the step builder."""

    def __init__(
        self, config: TransformerConfig, shard: Shard, *, optimizer: str, dtype_bytes: int, state_bytes: int, recompute: str
    ) -> None:
        self.config, self.shard, self.optimizer = config, shard, optimizer
        self.dtype, self.state_bytes, self.recompute = dtype_bytes, state_bytes, recompute
        self.graph = OpGraph()
        self.param_shape: dict[str, tuple[int, ...]] = {}
        self.stored: dict[str, int] = {}  # parameter -> its persistent tensor (or shard)
        self.states: dict[str, dict[str, int]] = {}
        self.reading: dict[str, int] = {}  # parameter -> the tensor ops read now (stored or gathered)
        self.grads: dict[str, int] = {}  # parameter -> its (local) gradient
        self.reduced: dict[str, int] = {}  # parameter -> its gradient reduced over the replicas so far
        self.grad_partials: dict[str, list[int]] = {}  # tied-embedding contributions to sum

    @property
    def state_names(self) -> tuple[str, ...]:
        """Optimizer states per parameter: an fp32-style ``master`` copy when states are wider than weights."""
        master = ("master",) if self.state_bytes > self.dtype else ()
        return master + OPTIMIZER_STATES[self.optimizer]

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

    @property
    def reduces_each_micro_batch(self) -> bool:
        """Whether gradients are reduced over the replicas after every micro-batch (full sharding, as ZeRO-3 and FSDP
        reduce-scatter them, accumulating the shards) rather than summed on the chip and reduced once."""
        return self.shard.fully_sharded and self.shard.replicas > 1

    def accumulated(self, params: Sequence[str]) -> list[int]:
        """The local gradients of ``params`` earlier micro-batches summed, which the next gradient op adds to (none in
        the first micro-batch, nor when each micro-batch's are reduced). Read before ``grad`` replaces them."""
        if self.reduces_each_micro_batch:
            return []
        return [self.grads[p] for p in params if p in self.grads]

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
        earlier = [self.reduced[p] for p in params if p in self.reduced]  # shards earlier micro-batches summed
        self.graph.op(
            f"{layer}/{'reduce_scatter' if sharded else 'all_reduce'}_grads",
            "ReduceScatter" if sharded else "AllReduce",
            "eltwise",
            phase="backward",
            layer=layer,
            inputs=inputs + earlier,
            outputs=outputs,
            elementwise_ops=sum(self.graph.elements(t) for t in inputs + earlier),
        )
        self.grads |= dict(zip(params, outputs, strict=True))
        self.reduced |= dict(zip(params, outputs, strict=True))

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

    def receive(self, shape: Sequence[int], name: str, phase: str) -> int:
        """A point-to-point Recv from the neighbouring pipeline stage: writes the stage's boundary tensor."""
        out = self.act(name, shape, phase)
        self.graph.op(f"{name}/recv", "Recv", "eltwise", phase=phase, layer=name, inputs=[], outputs=[out])
        return out

    def send(self, x: int, name: str, phase: str) -> None:
        """A point-to-point Send of ``x`` to the neighbouring pipeline stage."""
        self.graph.op(f"{name}/send", "Send", "eltwise", phase=phase, layer=name, inputs=[x], outputs=[])
