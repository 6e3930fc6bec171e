"""BatchNorm as its convolution's epilogue: a Workload transform (the ablation ``bn_epilogue=true`` of MONET).

In training a BatchNorm cannot be folded into the convolution's weights: it normalises with the batch's
own statistics and its backward pass needs them. The lowering therefore decomposes each forward
BatchNorm into standard ops (ReduceMean, Sub, Mul, Sqrt, Reciprocal, Add, Reshape …) that run on the
SIMD core, and the convolution's output makes a round trip through memory to reach them.

This transform models the other choice: the forward BatchNorm runs as the epilogue of the convolution
that produces its input, on the MAC core. Each forward op of a BatchNorm layer (an op whose ``layer``
names a ``BatchNorm`` node) whose input is made by a forward convolution is merged into that
convolution:

* the BatchNorm's ops disappear (no separate SIMD op; layout ops included); their ``elementwise_ops``
  are added to the convolution's, which the MAC core's cost does not charge (the epilogue is assumed
  to keep pace with the array's output, the optimistic end of this assumption);
* the tensors made and read only inside the layer (and the convolution's output, if nothing else
  reads it) disappear, so they never cross a core's boundary;
* everything else the layer made (its output, the statistics saved for backward, the updated running
  statistics) becomes an output of the convolution, and everything it read from outside (scale,
  bias, running statistics, constants) an input.

The backward pass is unchanged: it still reads what the forward saved (the convolution's output among
it, so that tensor is still written once). Op and tensor ids are renumbered densely in the old order.
"""

from __future__ import annotations

import numpy as np

from traincost.errors import GraphError
from traincost.workload import LOOP_DIMS, OP_KINDS, PHASES, TENSOR_KINDS, WINDOW_COLUMNS, Workload
from traincost.workload_check import check_tables

__all__ = ["bn_epilogue", "bn_layers"]

_MARKER = "BatchNorm"


def bn_layers(workload: Workload) -> dict[str, tuple[int, list[int]]]:
    """Per forward BatchNorm layer whose input a forward convolution makes: (that convolution's op id, the layer's
    forward op ids in order). A BatchNorm after anything else is left out (it stays decomposed)."""
    ops = workload.ops.sort_values("op")
    producer = dict(zip(workload.tensors["tensor"], workload.tensors["producer"], strict=True))
    kind = dict(zip(ops["op"], ops["kind"], strict=True))
    phase = dict(zip(ops["op"], ops["phase"], strict=True))
    forward = ops[(ops["phase"] == "forward") & ops["layer"].astype(str).str.contains(_MARKER)]
    layers: dict[str, tuple[int, list[int]]] = {}
    for layer, group in forward.groupby("layer", sort=False):
        members = [int(o) for o in group["op"]]
        inside = set(members)
        sources = {
            int(producer[t])
            for ins in group["inputs"]
            for t in ins
            if producer[t] >= 0 and producer[t] not in inside and kind[producer[t]] == "conv"
        }
        sources = {s for s in sources if phase[s] == "forward"}
        if len(sources) > 1:
            raise GraphError(f"BatchNorm layer {layer!r} reads the outputs of several convolutions {sorted(sources)}")
        if sources:
            layers[str(layer)] = (sources.pop(), members)
    return layers


def bn_epilogue(workload: Workload) -> Workload:
    """``workload`` with every forward BatchNorm that follows a convolution merged into it as its epilogue.

    Raises:
        GraphError: a BatchNorm layer reading several convolutions, or a result the Workload IR does not allow.
    """
    ops = workload.ops.sort_values("op").reset_index(drop=True)
    tensors = workload.tensors.sort_values("tensor").reset_index(drop=True)
    merged_into = {}  # BatchNorm op id -> the convolution it joins
    for conv, members in bn_layers(workload).values():
        merged_into.update(dict.fromkeys(members, conv))
    if not merged_into:
        return workload
    group_of = {**merged_into, **{conv: conv for conv in set(merged_into.values())}}  # op id -> its group's conv

    consumers = [list(c) for c in tensors["consumers"]]
    producer = tensors["producer"].to_numpy()
    internal = np.zeros(len(tensors), dtype=bool)
    for t in range(len(tensors)):
        group = group_of.get(int(producer[t]))
        if group is None or tensors.at[t, "updates"] >= 0 or tensors.at[t, "kind"] == "output" or not consumers[t]:
            continue
        internal[t] = all(group_of.get(int(c)) == group for c in consumers[t])

    ops = ops.copy()
    for conv in sorted(set(merged_into.values())):
        members = [o for o, c in merged_into.items() if c == conv]
        row = ops.index[ops["op"] == conv][0]
        rows = ops.index[ops["op"].isin(members)]
        made = {t for outs in ops.loc[[row, *rows], "outputs"] for t in outs}
        inputs = [t for ins in ops.loc[[row, *rows], "inputs"] for t in ins if t not in made or t in ops.at[row, "inputs"]]
        outputs = [t for outs in ops.loc[[row, *rows], "outputs"] for t in outs if not internal[t]]
        ops.at[row, "inputs"] = list(dict.fromkeys(inputs))
        ops.at[row, "outputs"] = list(dict.fromkeys(outputs))
        ops.at[row, "elementwise_ops"] = int(ops.at[row, "elementwise_ops"] + ops.loc[rows, "elementwise_ops"].sum())
    ops = ops[~ops["op"].isin(list(merged_into))].reset_index(drop=True)

    new_op = {int(old): new for new, old in enumerate(ops["op"])}
    kept = np.flatnonzero(~internal)
    new_tensor = {int(old): new for new, old in enumerate(kept)}
    ops["op"] = np.arange(len(ops))
    ops["inputs"] = [[new_tensor[t] for t in ins] for ins in ops["inputs"]]
    ops["outputs"] = [[new_tensor[t] for t in outs] for outs in ops["outputs"]]

    tensors = tensors.iloc[kept].reset_index(drop=True)
    tensors["tensor"] = np.arange(len(tensors))
    tensors["producer"] = [new_op[group_of.get(int(p), int(p))] if p >= 0 else -1 for p in tensors["producer"]]
    tensors["consumers"] = [list(dict.fromkeys(new_op[group_of.get(int(c), int(c))] for c in consumers[old])) for old in kept]
    # a reader that is its own producer now (the epilogue reads what its conv made): not a consumer
    tensors["consumers"] = [[c for c in cs if c != p] for cs, p in zip(tensors["consumers"], tensors["producer"], strict=True)]
    tensors["updates"] = [new_tensor.get(int(u), -1) if u >= 0 else -1 for u in tensors["updates"]]
    if "view_of" in tensors.columns:  # a view of a tensor that no longer exists holds its own storage
        tensors["view_of"] = [new_tensor.get(int(v), -1) if v >= 0 else -1 for v in tensors["view_of"]]
    check_tables(
        ops,
        tensors,
        ops_path="bn_epilogue ops",
        tensors_path="bn_epilogue tensors",
        vocabularies={"op_kind": OP_KINDS, "phase": PHASES, "tensor_kind": TENSOR_KINDS},
        loop_dims=LOOP_DIMS,
        window_columns=WINDOW_COLUMNS,
    )
    return Workload(ops=ops, tensors=tensors, meta={**workload.meta, "bn_epilogue": "true"})
