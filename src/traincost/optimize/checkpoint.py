"""Activation checkpointing: drop saved activations and recompute them before the backward pass needs them.

Given a training graph and a set of saved activations to drop (tensors made by the forward pass and
read by the backward pass), every dropped tensor gets a recomputation subgraph: the fewest forward
ops that rebuild it from what is still available in the backward pass (graph inputs, parameters,
the saved activations that are kept, and tensors already recomputed). The clones carry phase
``recompute`` and ``/recompute``-suffixed names, are inserted just before the first backward op that
reads the dropped tensor, and that op and every later reader read the clone instead. Random ops
(dropout masks) are never recomputed: an activation behind one cannot be dropped.

The same plan is applied to an ONNX training graph (so it can be executed and checked in ONNX
Runtime) and to a Workload (so the cost model sees the same ops without re-lowering).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import onnx
import pandas as pd

from traincost.errors import GraphError
from traincost.frontend.onnx.graph import PHASE_KEY, node_meta, set_node_meta
from traincost.frontend.shared.saved import saved_for_backward
from traincost.workload import Workload

__all__ = [
    "RECOMPUTE_CHECK_COLUMNS",
    "GraphNode",
    "RecomputePlan",
    "SUFFIX",
    "onnx_nodes",
    "workload_nodes",
    "plan_recompute",
    "RecomputePlanner",
    "recompute_onnx",
    "recompute_workload",
    "saved_activations",
    "unchecked_recompute",
]

SUFFIX = "/recompute"
# the table of a recompute check (``checkpoint_check.verify_recompute``): per rewrite and output, its worst error
RECOMPUTE_CHECK_COLUMNS = {"rewrite": str, "recomputed": "int64", "output": str, "error": float, "limit": float}
_RANDOM = frozenset(
    {"Dropout", "RandomUniform", "RandomNormal", "RandomUniformLike", "RandomNormalLike", "Bernoulli", "Multinomial"}
)


@dataclass(frozen=True, slots=True)
class GraphNode:
    """What the planner needs of an op: its type, phase and tensor names."""

    op_type: str
    phase: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class RecomputePlan:
    """Where to insert which clones: ``insertions[position]`` = node indices to clone before node ``position``."""

    insertions: dict[int, tuple[int, ...]]
    dropped: tuple[str, ...]

    def renamed(self, name: str, recomputed: set[str]) -> str:
        return name + SUFFIX if name in recomputed else name


def saved_activations(nodes: Sequence[GraphNode]) -> list[str]:
    """Tensors made by forward nodes and read by backward nodes, in the order they are made."""
    read_in_backward = {t for n in nodes if n.phase == "backward" for t in n.inputs}
    return [t for n in nodes if n.phase == "forward" for t in n.outputs if t in read_in_backward]


def plan_recompute(nodes: Sequence[GraphNode], dropped: Iterable[str], *, external: set[str]) -> RecomputePlan:
    """The clones that rebuild every dropped activation, and where they go.

    Args:
        nodes: the graph's ops in execution order.
        dropped: saved activations to recompute.
        external: tensors that exist without any op (graph inputs, initializers).

    Raises:
        GraphError: a dropped tensor is not a saved activation, or can only be rebuilt through a random op.
    """
    return RecomputePlanner(nodes, external=external).plan(dropped)


class RecomputePlanner:
    """``plan_recompute`` for one graph and many choices: what does not depend on the choice is found once."""

    def __init__(self, nodes: Sequence[GraphNode], *, external: set[str]) -> None:
        self.nodes = nodes
        self.external = external
        self.saved = saved_activations(nodes)
        self.saved_set = set(self.saved)
        self.producer = {t: i for i, n in enumerate(nodes) for t in n.outputs}
        self.first_use: dict[str, int] = {}
        for i, n in enumerate(nodes):
            if n.phase != "forward":
                for t in n.inputs:
                    self.first_use.setdefault(t, i)

    def plan(self, dropped: Iterable[str]) -> RecomputePlan:
        """The plan of ``plan_recompute`` for this graph.

        Raises:
            GraphError: a dropped tensor is not a saved activation, or can only be rebuilt through a random op.
        """
        nodes, external, producer, first_use = self.nodes, self.external, self.producer, self.first_use
        dropped = tuple(dict.fromkeys(dropped))
        unknown = [t for t in dropped if t not in self.saved_set]
        if unknown:
            raise GraphError(f"recompute: {unknown[:5]} are not saved activations (forward outputs read by the backward pass)")
        kept = self.saved_set - set(dropped)
        recomputed: set[str] = set()
        insertions: dict[int, list[int]] = {}
        for tensor in sorted(dropped, key=first_use.__getitem__):
            if tensor in recomputed:
                continue
            chain: list[int] = []
            todo, seen = [producer[tensor]], set()
            while todo:
                index = todo.pop()
                if index in seen:
                    continue
                seen.add(index)
                if nodes[index].op_type in _RANDOM:
                    raise GraphError(
                        f"recompute: {tensor!r} depends on random op {nodes[index].op_type} ({index}); keep it saved"
                    )
                chain.append(index)
                for t in nodes[index].inputs:
                    if t and t not in external and t not in kept and t not in recomputed:
                        todo.append(producer[t])
            chain.sort()
            insertions.setdefault(first_use[tensor], []).extend(chain)
            recomputed.update(t for i in chain for t in nodes[i].outputs)
        return RecomputePlan(insertions={k: tuple(v) for k, v in insertions.items()}, dropped=dropped)


def onnx_nodes(model: onnx.ModelProto) -> list[GraphNode]:
    """The ops of an ONNX training graph as the planner sees them (phase from the node annotation)."""
    return [GraphNode(n.op_type, node_meta(n, PHASE_KEY) or "", tuple(n.input), tuple(n.output)) for n in model.graph.node]


def recompute_onnx(model: onnx.ModelProto, dropped: Iterable[str]) -> onnx.ModelProto:
    """A copy of ``model`` whose backward pass recomputes ``dropped`` instead of reading the saved tensors."""
    graph = model.graph
    external = {i.name for i in graph.input} | {i.name for i in graph.initializer}
    nodes = onnx_nodes(model)
    plan = plan_recompute(nodes, dropped, external=external)
    recomputed = {t for chain in plan.insertions.values() for i in chain for t in nodes[i].outputs}
    out = onnx.ModelProto()
    out.CopyFrom(model)
    del out.graph.node[:]
    for index, node in enumerate(graph.node):
        for clone_of in plan.insertions.get(index, ()):
            clone = onnx.NodeProto()
            clone.CopyFrom(graph.node[clone_of])
            clone.name = clone.name + SUFFIX
            clone.input[:] = [plan.renamed(t, recomputed) for t in clone.input]
            clone.output[:] = [t + SUFFIX for t in clone.output]
            set_node_meta(clone, phase="recompute")
            out.graph.node.append(clone)
        copy = out.graph.node.add()
        copy.CopyFrom(node)
        if nodes[index].phase != "forward":
            copy.input[:] = [t + SUFFIX if t in plan.dropped else t for t in copy.input]
    _copy_value_info(out, recomputed)
    return out


def _copy_value_info(model: onnx.ModelProto, recomputed: set[str]) -> None:
    """Shapes of the recomputed tensors, copied from the originals (lowering needs them)."""
    known = {v.name: v for v in model.graph.value_info}
    for name in sorted(recomputed):
        if name in known:
            info = model.graph.value_info.add()
            info.CopyFrom(known[name])
            info.name = name + SUFFIX


def workload_nodes(workload: Workload) -> tuple[list[GraphNode], set[str]]:
    """The ops of a Workload as the planner sees them, and the tensors no op makes (inputs, parameters)."""
    ops, tensors = workload.ops.sort_values("op"), workload.tensors.set_index("tensor")
    names = tensors["name"]
    nodes = [
        GraphNode(row.op_type, row.phase, tuple(names[t] for t in row.inputs), tuple(names[t] for t in row.outputs))
        for row in ops.itertuples()
    ]
    return nodes, set(tensors.loc[tensors["producer"] < 0, "name"])


def recompute_workload(workload: Workload, dropped: Iterable[str]) -> Workload:
    """The same rewrite on a Workload: cloned ops (phase ``recompute``) and tensors, readers redirected."""
    ops, tensors = workload.ops.sort_values("op"), workload.tensors.set_index("tensor")
    names = tensors["name"]
    nodes, external = workload_nodes(workload)
    plan = plan_recompute(nodes, dropped, external=external)
    recomputed = {t for chain in plan.insertions.values() for i in chain for t in nodes[i].outputs}
    ids = {name: int(t) for t, name in names.items()}
    new_tensors = tensors.loc[[ids[n] for n in sorted(recomputed)]].copy()
    new_tensors.index = np.arange(len(ids), len(ids) + len(new_tensors))
    new_tensors["name"] = new_tensors["name"] + SUFFIX
    new_tensors["kind"] = "activation"
    ids |= {name: int(t) for t, name in new_tensors["name"].items()}
    rows = []
    records = ops.to_dict("records")
    for index, record in enumerate(records):
        for clone_of in plan.insertions.get(index, ()):
            clone = dict(records[clone_of])
            clone["name"] += SUFFIX
            clone["phase"] = "recompute"
            clone["inputs"] = [ids[plan.renamed(names[t], recomputed)] for t in clone["inputs"]]
            clone["outputs"] = [ids[names[t] + SUFFIX] for t in clone["outputs"]]
            rows.append(clone)
        if record["phase"] != "forward":
            redirected = [ids[names[t] + SUFFIX] if names[t] in plan.dropped else t for t in record["inputs"]]
            rows.append(dict(record, inputs=redirected))
        else:
            rows.append(record)
    new_ops = pd.DataFrame(rows).reset_index(drop=True)
    new_ops["op"] = np.arange(len(new_ops))
    all_tensors = pd.concat([tensors, new_tensors])
    if "view_of" in all_tensors.columns:
        copies = {ids[name]: ids[name + SUFFIX] for name in recomputed}
        all_tensors["view_of"] = _views_of_copies(new_ops, all_tensors["view_of"], copies)
    return Workload(ops=new_ops, tensors=_relink(new_ops, all_tensors), meta=dict(workload.meta))


def _views_of_copies(ops: pd.DataFrame, view_of: pd.Series, copies: dict[int, int]) -> pd.Series:
    """``view_of`` with every view made from a recomputed copy (directly or through views) viewing that copy."""
    view_of = view_of.copy()
    for row in ops.itertuples():
        for t in row.outputs:
            copy = copies.get(int(view_of[t]))
            if copy is not None and any(copy in (i, view_of[i]) for i in row.inputs):
                view_of[t] = copy
    return view_of


def _relink(ops: pd.DataFrame, tensors: pd.DataFrame) -> pd.DataFrame:
    """Producer, consumers and saved_for_backward recomputed from the ops, by the rule lowering uses (views count once)."""
    producer = {int(t): int(row.op) for row in ops.itertuples() for t in row.outputs}
    consumers: dict[int, list[int]] = {}
    for row in ops.itertuples():
        for t in row.inputs:
            consumers.setdefault(int(t), []).append(int(row.op))
    out = tensors.copy()
    out["producer"] = [producer.get(int(t), -1) for t in out.index]
    out["consumers"] = [consumers.get(int(t), []) for t in out.index]
    out["saved_for_backward"] = saved_for_backward(out.assign(view_of=out.get("view_of", -1)), ops)
    return out.rename_axis("tensor").reset_index()


def unchecked_recompute() -> pd.DataFrame:
    """A recompute check's table with no rows: no rewrite run (a workload with no ONNX graph, the torch front end's).
    Unlike the check, it needs no ONNX Runtime."""
    return pd.DataFrame(columns=list(RECOMPUTE_CHECK_COLUMNS)).astype(RECOMPUTE_CHECK_COLUMNS)
