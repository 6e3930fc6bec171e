"""The OpTable of a recompute rewrite, patched from the base workload's table instead of rebuilt.

``op_table(recompute_workload(workload, dropped))`` rebuilds pandas frames for every choice (about
0.15 s on ResNet-18 training); NSGA-II evaluates thousands of choices. ``RecomputeTables`` keeps the
base graph and its table and builds the rewritten table by copying rows: a clone copies the row of
the op it clones (same shapes, so the same GEMM view and sizes), each recomputed tensor copies its
original's size, and views, inputs, outputs and last uses are resolved again over the new op order.
Tensor and op ids are numbered exactly as ``recompute_workload`` numbers them, so the result equals
the rebuilt table field by field (tested).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from traincost.cost.optable import MAC_KINDS, OpTable, last_uses, op_table, operand_tensors, resolve_views
from traincost.optimize.checkpoint import SUFFIX, plan_recompute, workload_nodes
from traincost.workload import Workload

__all__ = ["Rewrite", "RecomputeTables"]

# per-op arrays that depend only on the op's shape, so a clone or a redirected reader copies them
_SHAPE_FIELDS = (
    "kind",
    "macs",
    "elementwise_ops",
    "m",
    "n",
    "r",
    "groups",
    "window",
    "s_elems",
    "x_elems",
    "o_elems",
    "in_elems",
)


@dataclass(frozen=True, slots=True)
class Rewrite:
    """A rewritten table and, per row, where it comes from in the base table."""

    table: OpTable
    source: np.ndarray  # position in the base table of the row this one copies
    clone: np.ndarray  # bool: a recomputation
    redirected: np.ndarray  # bool: a base op that now reads a recomputed tensor


class RecomputeTables:
    """Rewritten OpTables of one workload, for any set of dropped activations."""

    def __init__(self, workload: Workload, *, phases: tuple[str, ...]) -> None:
        self.phases = phases
        self.base = op_table(workload, phases=phases)
        self.nodes, self.external = workload_nodes(workload)
        tensors = workload.tensors.sort_values("tensor")
        self.tensor_id = dict(zip(tensors["name"], tensors["tensor"].astype(int), strict=True))
        self.n_tensors = len(self.tensor_id)
        self.constant = np.zeros(self.n_tensors, dtype=bool)
        self.constant[tensors["tensor"].to_numpy()] = (tensors["kind"] == "constant").to_numpy()
        ops = workload.ops.sort_values("op")
        position = {int(op): i for i, op in enumerate(self.base.op)}
        self.row_of_node = [position.get(int(op), -1) for op in ops["op"]]

    def rewrite(self, dropped: Iterable[str]) -> Rewrite:
        """The table of the workload with ``dropped`` recomputed (see ``recompute_workload``).

        Raises:
            GraphError: a name that is not a saved activation, or one behind a random op.
        """
        nodes = self.nodes
        plan = plan_recompute(nodes, dropped, external=self.external)
        recomputed = sorted({t for chain in plan.insertions.values() for i in chain for t in nodes[i].outputs})
        ids = self.tensor_id | {name + SUFFIX: self.n_tensors + k for k, name in enumerate(recomputed)}
        original = np.array([self.tensor_id[name] for name in recomputed], dtype=np.int64)
        renamed = set(recomputed)
        dropped_names = set(plan.dropped)

        order: list[tuple[int, bool, tuple[int, ...], tuple[int, ...]]] = []  # (node, clone, input ids, output ids)
        for index, node in enumerate(nodes):
            for j in plan.insertions.get(index, ()):
                ins = tuple(ids[plan.renamed(t, renamed)] for t in nodes[j].inputs)
                order.append((j, True, ins, tuple(ids[t + SUFFIX] for t in nodes[j].outputs)))
            names = node.inputs
            if node.phase != "forward":
                names = tuple(t + SUFFIX if t in dropped_names else t for t in names)
            order.append((index, False, tuple(ids[t] for t in names), tuple(ids[t] for t in node.outputs)))
        in_phase = [k for k, (j, clone, _, _) in enumerate(order) if ("recompute" if clone else nodes[j].phase) in self.phases]

        n_tensors = len(ids)
        alias = np.arange(n_tensors)
        constant = np.concatenate([self.constant, np.zeros(len(recomputed), dtype=bool)])
        rows = [order[k] for k in in_phase]
        kept, inputs, outputs = resolve_views(((nodes[j].op_type, ins, outs) for j, _, ins, outs in rows), alias, constant)
        rows = [rows[k] for k in kept]
        source = np.array([self.row_of_node[j] for j, _, _, _ in rows], dtype=np.int64)
        clone = np.array([c for _, c, _, _ in rows], dtype=bool)
        base = self.base
        x_tensor, s_tensor = np.full(len(rows), -1, dtype=np.int64), np.full(len(rows), -1, dtype=np.int64)
        for r, (_, _, ins, _) in enumerate(rows):
            if base.kind[source[r]] in MAC_KINDS:
                x_tensor[r], s_tensor[r] = operand_tensors(ins, alias, constant)
        phase = base.phase[source].copy()
        phase[clone] = "recompute"
        table = OpTable(
            op=np.array([in_phase[k] for k in kept], dtype=np.int64),
            phase=phase,
            dims={d: values[source] for d, values in base.dims.items()},
            **{name: getattr(base, name)[source] for name in _SHAPE_FIELDS},
            x_tensor=x_tensor,
            s_tensor=s_tensor,
            inputs=inputs,
            outputs=outputs,
            tensor_elems=np.concatenate([base.tensor_elems, base.tensor_elems[original]]),
            tensor_rows=np.concatenate([base.tensor_rows, base.tensor_rows[original]]),
            tensor_persistent=np.concatenate([base.tensor_persistent, np.zeros(len(original), dtype=bool)]),
            tensor_step_output=np.concatenate([base.tensor_step_output, np.zeros(len(original), dtype=bool)]),
            last_use=last_uses(inputs, n_tensors),
            views=len(in_phase) - len(kept),
        )
        redirected = ~clone & np.array([ins != base.inputs[s] for ins, s in zip(inputs, source, strict=True)], dtype=bool)
        return Rewrite(table=table, source=source, clone=clone, redirected=redirected)
