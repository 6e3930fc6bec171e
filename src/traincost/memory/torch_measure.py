"""The memory of one training step of a zoo model, measured in torch on this CPU.

Parameters, gradients and optimizer states are read off the model and the optimizer after one
step; saved activations are the distinct storages that autograd keeps for the backward pass,
collected with ``torch.autograd.graph.saved_tensors_hooks``, the module's parameters and buffers excluded: they
live across steps and are counted as weights and buffers (a BatchNorm's backward keeps its running statistics, which
training does not read, beside the batch's mean and inverse deviation).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping

import torch

from traincost import models
from traincost.frontend.shared.optimizer import OptimizerSpec
from traincost.frontend.shared.torch_model import torch_optimizer

__all__ = ["measure_torch_memory", "saved_storages"]


@contextlib.contextmanager
def saved_storages(module: torch.nn.Module) -> Iterator[dict[int, int]]:
    """The storages autograd saves for the backward pass while the block runs (bytes by storage), ``module``'s
    parameters and buffers excluded."""
    persistent = {t.untyped_storage().data_ptr() for t in [*module.parameters(), *module.buffers()]}
    saved: dict[int, int] = {}

    def pack(tensor: torch.Tensor) -> torch.Tensor:
        storage = tensor.untyped_storage()
        if storage.data_ptr() not in persistent:
            saved[storage.data_ptr()] = storage.nbytes()
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        yield saved


def measure_torch_memory(
    name: models.Model,
    *,
    batch: int,
    optimizer: OptimizerSpec,
    seed: int,
    options: Mapping[str, object] | None = None,
) -> dict[str, int]:
    """Bytes of weights, gradients, optimizer states and saved activations of one step in torch."""
    torch.manual_seed(seed)
    model = models.build_model(name, options=dict(options or {}))
    model.train()
    inputs, labels = models.make_batch(name, batch=batch, seed=seed, options=dict(options or {}))
    params = list(model.parameters())
    opt = torch_optimizer(optimizer, params)
    with saved_storages(model) as saved:
        loss = torch.nn.functional.cross_entropy(model(inputs), labels)
    loss.backward()
    opt.step()
    states = sum(
        value.nbytes
        for param in params
        for value in opt.state.get(param, {}).values()
        if isinstance(value, torch.Tensor) and value.shape == param.shape
    )
    return {
        "weights": sum(p.nbytes for p in params),
        "gradients": sum(p.grad.nbytes for p in params if p.grad is not None),
        "optimizer_states": int(states),
        "saved_activations": sum(saved.values()),
    }
