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

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from traincost.cost.optable import MAC_KINDS, VIEW_OP_TYPES, OpTable, last_uses, op_table, operand_tensors, resolve_views
from traincost.optimize.checkpoint import RecomputePlanner, workload_nodes
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
    "stride",
    "dilation",
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
        self.planner = RecomputePlanner(self.nodes, external=self.external)
        tensors = workload.tensors.sort_values("tensor")
        self.tensor_id = dict(zip(tensors["name"], tensors["tensor"].astype(int), strict=True))
        self.n_tensors = len(self.tensor_id)
        self.constant = np.zeros(self.n_tensors, dtype=bool)
        self.constant[tensors["tensor"].to_numpy()] = (tensors["kind"] == "constant").to_numpy()
        ops = workload.ops.sort_values("op")
        position = {int(op): i for i, op in enumerate(self.base.op)}
        self.row_of_node = [position.get(int(op), -1) for op in ops["op"]]
        # per node, what every rewrite reuses: tensor ids, whether its phase is scheduled, who reads a saved tensor
        self._ids = [
            (tuple(self.tensor_id[t] for t in n.inputs), tuple(self.tensor_id[t] for t in n.outputs)) for n in self.nodes
        ]
        self._scheduled = [n.phase in phases for n in self.nodes]
        self._readers: dict[str, list[int]] = {}
        for index, node in enumerate(self.nodes):
            if node.phase != "forward":
                for t in dict.fromkeys(node.inputs):
                    if t in self.planner.saved_set:
                        self._readers.setdefault(t, []).append(index)
        self._is_mac_row = np.isin(self.base.kind, MAC_KINDS).tolist()
        # the base graph's views resolved once: per scheduled op its inputs and outputs, and every tensor's alias
        self._is_view = [n.op_type in VIEW_OP_TYPES and len(n.inputs) > 0 for n in self.nodes]
        scheduled = [i for i in range(len(self.nodes)) if self._scheduled[i]]
        alias = np.arange(self.n_tensors)
        kept, inputs, outputs = resolve_views(((self.nodes[i].op_type, *self._ids[i]) for i in scheduled), alias, self.constant)
        self._resolved = {scheduled[k]: pair for k, pair in zip(kept, zip(inputs, outputs, strict=True), strict=True)}
        self._alias = alias.tolist()
        self._fixed = self.constant.tolist()

    def rewrite(self, dropped: Iterable[str]) -> Rewrite:
        """The table of the workload with ``dropped`` recomputed (see ``recompute_workload``).

        Raises:
            GraphError: a name that is not a saved activation, or one behind a random op.
        """
        nodes, tensor_id = self.nodes, self.tensor_id
        plan = self.planner.plan(dropped)
        recomputed = sorted({t for chain in plan.insertions.values() for i in chain for t in nodes[i].outputs})
        copy_id = {name: self.n_tensors + k for k, name in enumerate(recomputed)}  # the id of each tensor's recomputed copy
        original = np.array([tensor_id[name] for name in recomputed], dtype=np.int64)
        dropped_names = set(plan.dropped)
        redirected_nodes = {j for name in dropped_names for j in self._readers.get(name, ())}

        def clone_ids(j: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
            node = nodes[j]
            ins = tuple(copy_id[t] if t in copy_id else tensor_id[t] for t in node.inputs)
            return ins, tuple(copy_id[t] for t in node.outputs)

        clones_scheduled = "recompute" in self.phases
        # (node, clone, input ids, output ids, op id: the position in the rewritten graph, every phase counted)
        rows: list[tuple[int, bool, tuple[int, ...], tuple[int, ...], int]] = []
        position = 0
        for index, node in enumerate(nodes):
            for j in plan.insertions.get(index, ()):
                if clones_scheduled:
                    rows.append((j, True, *clone_ids(j), position))
                position += 1
            if self._scheduled[index]:
                ins, outs = self._ids[index]
                if index in redirected_nodes:
                    ins = tuple(copy_id[t] if t in dropped_names else tensor_id[t] for t in node.inputs)
                rows.append((index, False, ins, outs, position))
            position += 1
        n_scheduled = len(rows)

        n_tensors = self.n_tensors + len(recomputed)
        alias = self._alias + list(range(self.n_tensors, n_tensors))
        constant = self._fixed + [False] * len(recomputed)
        kept, inputs, outputs = self._resolve_views(rows, redirected_nodes, alias, constant)
        rows = [rows[k] for k in kept]
        source = np.array([self.row_of_node[row[0]] for row in rows], dtype=np.int64)
        clone = np.array([row[1] for row in rows], dtype=bool)
        base = self.base
        x_tensor, s_tensor = np.full(len(rows), -1, dtype=np.int64), np.full(len(rows), -1, dtype=np.int64)
        is_mac = self._is_mac_row
        for r, s in enumerate(source.tolist()):
            if is_mac[s]:
                x_tensor[r], s_tensor[r] = operand_tensors(rows[r][2], alias, constant)
        phase = base.phase[source]
        phase[clone] = "recompute"
        table = OpTable(
            op=np.array([row[4] for row in rows], dtype=np.int64),
            phase=phase,
            dims={d: values[source] for d, values in base.dims.items()},
            **{name: getattr(base, name)[source] for name in _SHAPE_FIELDS},
            x_tensor=x_tensor,
            s_tensor=s_tensor,
            inputs=tuple(inputs),
            outputs=tuple(outputs),
            tensor_elems=np.concatenate([base.tensor_elems, base.tensor_elems[original]]),
            tensor_rows=np.concatenate([base.tensor_rows, base.tensor_rows[original]]),
            tensor_batch=np.concatenate([base.tensor_batch, base.tensor_batch[original]]),
            tensor_persistent=np.concatenate([base.tensor_persistent, np.zeros(len(original), dtype=bool)]),
            tensor_step_output=np.concatenate([base.tensor_step_output, np.zeros(len(original), dtype=bool)]),
            last_use=last_uses(inputs, n_tensors),
            views=n_scheduled - len(kept),
        )
        base_inputs = base.inputs
        redirected = np.array(
            [not c and ins != base_inputs[s] for c, ins, s in zip(clone.tolist(), inputs, source.tolist(), strict=True)],
            dtype=bool,
        )
        return Rewrite(table=table, source=source, clone=clone, redirected=redirected)

    def _resolve_views(
        self,
        rows: list[tuple[int, bool, tuple[int, ...], tuple[int, ...], int]],
        redirected: set[int],
        alias: list[int],
        constant: list[bool],
    ) -> tuple[list[int], list[tuple[int, ...]], list[tuple[int, ...]]]:
        """``resolve_views`` over the rewritten rows, starting from the base graph's aliases (``alias``, updated in
        place). A base op that reads what it read in the base graph, under the same aliases, resolves as it did
        there; only the clones, the redirected ops and the ops that read a tensor whose alias the rewrite
        changed (a view of a recomputed tensor) are resolved again."""
        base_alias, is_view, resolved = self._alias, self._is_view, self._resolved
        changed: set[int] = set()  # base tensors whose alias differs from the base graph's
        kept, inputs, outputs = [], [], []

        def live(ids: Sequence[int]) -> tuple[int, ...]:
            return tuple(dict.fromkeys(alias[t] for t in ids if not constant[alias[t]]))

        for k, (node, clone, ins, outs, _) in enumerate(rows):
            if not clone and node not in redirected and changed.isdisjoint(ins):
                if not is_view[node]:  # a view's outputs keep their base alias
                    kept.append(k)
                    inputs.append(resolved[node][0])
                    outputs.append(resolved[node][1])
                continue
            if is_view[node]:
                for t in outs:
                    alias[t] = alias[ins[0]]
                    if t < self.n_tensors and alias[t] != base_alias[t]:
                        changed.add(t)
                continue
            kept.append(k)
            inputs.append(live(ins))
            outputs.append(live(outs))
        return kept, inputs, outputs
