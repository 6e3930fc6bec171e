"""A training step as MTrain sees it: per forward layer, its FP, BP, WU and update sub-operations.

Built from the Workload IR of a batch-1 training step (``phases`` forward, backward, optimizer):

* **FP** = the layer's forward ops; **BP** = its backward ops that propagate the loss; **WU** = its
  backward ops that make weight gradients (conv_wgrad, bias and BN-parameter reductions: every op
  writing a ``weight_grad`` tensor); **UPD** = its optimizer ops, which apply the gathered gradients.
* A layer is **batch-wise** when its forward pass reduces over the batch (BatchNormalization, and the
  loss's mean); its FP and BP are never split across accelerators. UPD is never split either.
* **Edges** carry data between sub-operations: a tensor made by one and read by another (activations
  in FP, losses in BP, activations and losses into WU, weight gradients into UPD), with its bytes per
  sample when it grows with the batch or its bytes once otherwise; and a layer's weights, which live
  with its FP sub-operation, are sent to every other sub-operation that reads them (BP, UPD).
* **Memory**: each node's outputs that other nodes read (each tensor once, per sample or once) stay
  in the DRAM of the accelerator that made them until their last reader finishes; each layer's
  weights and optimizer states stay where its sub-operations run.
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx
import numpy as np
import pandas as pd

from traincost.cost.optable import OpTable, op_table
from traincost.errors import GraphError, cycle_text, find_cycle
from traincost.fpga.ip_models import WORD_BYTES, OpCosts
from traincost.workload import Workload

__all__ = ["TrainingDag", "PHASES", "training_dag"]

PHASES = ("FP", "BP", "WU", "UPD")
_PER_SAMPLE_KINDS = frozenset({"input", "activation", "gradient", "temporary", "output"})


@dataclass(frozen=True, slots=True)
class TrainingDag:
    """Sub-operations (layer, phase) of one training sample, with their ops, edges and memory."""

    layer: tuple[str, ...]  # per node
    phase: tuple[str, ...]
    splittable: np.ndarray  # bool per node: may be divided along the batch
    ops: tuple[np.ndarray, ...]  # per node: positions in ``costs``
    costs: OpCosts
    edges: tuple[tuple[int, int, float, bool], ...]  # (src, dst, bytes, per sample)
    state_bytes: np.ndarray  # per node: weights and optimizer states it keeps (FP and UPD nodes)
    out_bytes: np.ndarray  # per node: (bytes per sample, bytes once) of the outputs other nodes read, each tensor once
    flops_per_sample: float
    fixed_flops: float  # the update's FLOPs, once per step

    def __len__(self) -> int:
        return len(self.layer)

    def flops(self, batch: int) -> float:
        return batch * self.flops_per_sample + self.fixed_flops


def training_dag(workload: Workload) -> TrainingDag:
    """The MTrain sub-operation graph of a batch-1 training step."""
    table = op_table(workload, phases=("forward", "backward", "optimizer"))
    ops = workload.ops.set_index("op")
    tensors = workload.tensors.set_index("tensor").sort_index()
    kinds = np.full(len(table.tensor_elems), "", dtype=object)
    kinds[tensors.index.to_numpy()] = tensors["kind"].to_numpy()
    per_sample = np.isin(kinds, list(_PER_SAMPLE_KINDS))
    layers = ops.loc[table.op, "layer"].to_numpy()
    costs = _op_costs(table, ops, layers, per_sample)
    order = list(dict.fromkeys(layers[table.phase == "forward"]))
    order += [name for name in dict.fromkeys(layers) if name not in order]
    # named by the ONNX front end (``bn1/BatchNormalization``, ``loss``) or running a BatchNorm (the torch front end's
    # ``bn1/batch_norm``), its loss ``loss/cross_entropy``
    normalising = set(layers[(table.phase == "forward") & (ops.loc[table.op, "op_type"].to_numpy() == "BatchNormalization")])
    batch_wise = {name for name in order if "BatchNorm" in name or name in normalising or name.split("/")[0] == "loss"}
    phase = np.where(table.phase == "forward", "FP", np.where(table.phase == "optimizer", "UPD", "BP"))
    makes_grad = np.array([any(kinds[t] == "weight_grad" for t in outs) for outs in table.outputs])
    # a batch-wise layer's parameter gradients come out of its (unsplit) backward pass
    phase = np.where((phase == "BP") & makes_grad & ~np.isin(layers, list(batch_wise)), "WU", phase)
    keys = list(dict.fromkeys(zip(layers, phase, strict=True)))
    node_of = {key: n for n, key in enumerate(keys)}
    node = np.array([node_of[key] for key in zip(layers, phase, strict=True)])
    producer = table.producers()
    edges: dict[tuple[int, int], list[float]] = {}
    weight_home: dict[int, int] = {}
    seen: set[tuple[int, int]] = set()  # (tensor, reader node): each tensor moves to a node once
    exported: set[int] = set()  # tensors made by one node and read by another
    first_reader: dict[int, int] = {}  # per tensor: the node of its first reader
    for i, ins in enumerate(table.inputs):
        for t in ins:
            first_reader.setdefault(t, int(node[i]))
            if producer[t] >= 0:
                src = int(node[producer[t]])
            elif kinds[t] == "weight":
                src = weight_home.setdefault(
                    t, int(node[i]) if phase[i] == "FP" else node_of.get((layers[i], "FP"), int(node[i]))
                )
            else:
                continue
            if src != node[i] and (t, int(node[i])) not in seen:
                seen.add((t, int(node[i])))
                if producer[t] >= 0:
                    exported.add(t)
                entry = edges.setdefault((src, int(node[i]), bool(per_sample[t])), [0.0])
                entry[0] += table.tensor_elems[t] * WORD_BYTES
    state = np.zeros(len(keys))
    for t in np.flatnonzero(np.isin(kinds, ["weight", "optimizer_state"])):
        if t in first_reader:  # weights live with their FP node, optimizer states with their first reader
            state[weight_home.get(t, first_reader[t])] += table.tensor_elems[t] * WORD_BYTES
    out = np.zeros((len(keys), 2))
    for t in exported:
        out[node[producer[t]], 0 if per_sample[t] else 1] += table.tensor_elems[t] * WORD_BYTES
    rank = _topological(keys, edges, order)
    keys = [keys[n] for n in rank]
    renumber = np.argsort(rank)
    node, state, out = renumber[node], state[rank], out[rank]
    edges = {(int(renumber[s]), int(renumber[d]), ps): b for (s, d, ps), b in edges.items()}
    flops = 2 * costs.macs + costs.elementwise
    return TrainingDag(
        layer=tuple(k[0] for k in keys),
        phase=tuple(k[1] for k in keys),
        splittable=np.array([k[1] == "WU" or (k[1] in ("FP", "BP") and k[0] not in batch_wise) for k in keys]),
        ops=tuple(np.flatnonzero(node == n) for n in range(len(keys))),
        costs=costs,
        edges=tuple((s, d, b[0], ps) for (s, d, ps), b in sorted(edges.items())),
        state_bytes=state,
        out_bytes=out,
        flops_per_sample=float(flops[phase != "UPD"].sum()),
        fixed_flops=float(flops[phase == "UPD"].sum()),
    )


def _op_costs(table: OpTable, ops: pd.DataFrame, layers: np.ndarray, per_sample: np.ndarray) -> OpCosts:
    """The IP models' per-op facts, with each op's convolution stride and whether it belongs to a ReLU layer (its
    forward and the mask of its gradient; not the sum of a residual's gradients)."""
    op_types = ops.loc[table.op, "op_type"].to_numpy()
    activation = np.isin(layers, np.unique(layers[op_types == "Relu"])) & (op_types != "Sum")
    stride = pd.to_numeric(ops.loc[table.op, "stride_y"], errors="coerce").fillna(1).to_numpy(dtype=np.float64)
    return OpCosts.from_table(table, per_sample=per_sample, stride=stride, activation=activation)


def _topological(keys: list[tuple[str, str]], edges: dict, order: list[str]) -> list[int]:
    """Nodes in an order where every edge goes forward: FP in layer order first, then the backward pass
    from the last layer, each node as early as its inputs allow.

    Raises:
        GraphError: the sub-operations depend on each other in a cycle.
    """
    graph = nx.DiGraph()
    graph.add_nodes_from(range(len(keys)))
    graph.add_edges_from((s, d) for s, d, _ in edges)

    def priority(n: int) -> tuple[int, int]:
        layer, phase = keys[n]
        position = order.index(layer)
        return (0, position) if phase == "FP" else (1, -position)

    try:
        return list(nx.lexicographical_topological_sort(graph, key=priority))
    except nx.NetworkXUnfeasible:
        cycle = [" ".join(keys[node]) for node in find_cycle(dict(graph.pred))]
        raise GraphError(f"MTrain sub-operations depend on each other in a cycle: {cycle_text(cycle)}") from None
