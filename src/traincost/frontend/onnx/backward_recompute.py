"""Forward ops recomputed inside the backward pass, as a fused kernel's backward does.

A kernel's backward can recompute what it needs from a tensor it saved instead of saving every intermediate:
torch's ``hardswish_backward`` reads the input alone, FlashAttention's backward the log-sum-exp and Q, K, V.
Where the training step computes such an op as several primitive ops, the backward pass would read their
intermediates, and liveness would count each as a saved activation. ``BackwardEdits`` clones those primitive
ops into the backward pass, just before their first backward reader, and makes every backward reader read the
clones: the step computes the same (the clones run the same kernels on the same values), and its saved
activations are the kernel's.

``recompute_rewritten_activations`` does it for the elementwise activations ``forward_rewrites`` writes as
several ops (``HardSwish``, ``HardSigmoid``, ``Softplus``, ``Elu``, ``Selu``, ``Celu``: torch's kernels keep
one tensor); ``fused_attention`` for the attention's scores.
"""

from __future__ import annotations

import json

import onnx

from traincost.frontend.onnx.graph import PHASE_KEY, model_meta, node_meta, set_node_meta

__all__ = ["REWRITES_META", "BackwardEdits", "recompute_rewritten_activations"]

REWRITES_META = "forward_rewrites"  # model metadata: JSON {rewritten node name: its op type}
# Rewritten activations whose torch kernel saves one tensor (its input, or for the ELU family its output).
_ONE_SAVED = frozenset({"HardSwish", "HardSigmoid", "Softplus", "Elu", "Selu", "Celu"})


class BackwardEdits:
    """Edits to one training step: nodes appended after forward nodes, nodes inserted before backward nodes, and the
    tensors backward nodes read from the inserted nodes instead; ``apply`` makes the edited copy."""

    def __init__(self, model: onnx.ModelProto) -> None:
        self.model = model
        graph = model.graph
        self._readers: dict[str, list[int]] = {}  # tensor -> indices of the nodes that read it
        for index, node in enumerate(graph.node):
            for name in dict.fromkeys(node.input):
                if name:
                    self._readers.setdefault(name, []).append(index)
        phases = [node_meta(node, PHASE_KEY) for node in graph.node]
        self._backward = {i for i, phase in enumerate(phases) if phase in ("backward", "recompute")}
        self._optimizer = {i for i, phase in enumerate(phases) if phase == "optimizer"}
        self.after: dict[int, list[onnx.NodeProto]] = {}
        self.before: dict[int, list[onnx.NodeProto]] = {}
        self.renamed: dict[int, dict[str, str]] = {}
        self.infos: list[onnx.ValueInfoProto] = []

    def backward_readers(self, tensors: list[str]) -> list[int]:
        """Indices of the backward nodes that read any of ``tensors``, in graph order."""
        found = {index for name in tensors for index in self._readers.get(name, [])}
        return sorted(found & self._backward)

    def forward_readers(self, tensor: str) -> list[int]:
        """Indices of the forward nodes that read ``tensor``."""
        return [index for index in self._readers.get(tensor, []) if index not in self._backward and index not in self._optimizer]

    def clones(self, indices: list[int], suffix: str) -> tuple[list[onnx.NodeProto], dict[str, str]]:
        """Copies of the nodes at ``indices`` (in order) in the backward pass, each output renamed with ``suffix`` and
        read by the later copies; the copies and the renaming of their outputs."""
        made, local = [], {}
        for index in indices:
            clone = onnx.NodeProto()
            clone.CopyFrom(self.model.graph.node[index])
            clone.name = f"{clone.name}{suffix}"
            clone.input[:] = [local.get(i, i) for i in clone.input]
            for position, output in enumerate(clone.output):
                if output:
                    local[output] = clone.output[position] = f"{output}{suffix}"
            set_node_meta(clone, phase="backward")
            made.append(clone)
        return made, local

    def recompute(self, nodes: list[onnx.NodeProto], replaced: dict[str, str]) -> bool:
        """Insert ``nodes`` before the first backward reader of any tensor of ``replaced`` (forward tensor → the name
        the nodes write it under) and make every backward reader read them; False if the backward reads none."""
        readers = self.backward_readers(list(replaced))
        if not readers:
            return False
        self.before.setdefault(readers[0], []).extend(nodes)
        for index in readers:
            self.renamed.setdefault(index, {}).update(replaced)
        return True

    def apply(self) -> onnx.ModelProto:
        """The edited copy of the step (the step itself if nothing was edited)."""
        if not self.after and not self.before:
            return self.model
        out = onnx.ModelProto()
        out.CopyFrom(self.model)
        del out.graph.node[:]
        for index, node in enumerate(self.model.graph.node):
            out.graph.node.extend(self.before.get(index, []))
            copy = out.graph.node.add()
            copy.CopyFrom(node)
            if index in self.renamed:
                copy.input[:] = [self.renamed[index].get(i, i) for i in copy.input]
            out.graph.node.extend(self.after.get(index, []))
        out.graph.value_info.extend(self.infos)
        return out


def recompute_rewritten_activations(model: onnx.ModelProto) -> onnx.ModelProto:
    """``model`` (a training step) with the intermediates of each rewritten one-tensor activation recomputed in the
    backward pass from the activation's input (``BackwardEdits``); ``model`` itself if there is none. The new tensors
    are untyped: ``record_shapes`` types them."""
    recorded = model_meta(model).get(REWRITES_META)
    rewritten = {name for name, op in json.loads(recorded).items() if op in _ONE_SAVED} if recorded else set()
    if not rewritten:
        return model
    graph = model.graph
    edits = BackwardEdits(model)
    groups: dict[str, list[int]] = {}
    for index, node in enumerate(graph.node):
        owner = node.name.rpartition("/")[0]
        if owner in rewritten and node_meta(node, PHASE_KEY) in (None, "forward"):
            groups.setdefault(owner, []).append(index)
    forward_readers = edits.forward_readers
    for indices in groups.values():
        written = [o for i in indices for o in graph.node[i].output if o]
        # the activation's output is what forward nodes outside the group read (the next layer): kept as it is
        outside = {o for o in written if set(forward_readers(o)) - set(indices)}
        clones, renamed = edits.clones(indices, "/backward")
        edits.recompute(clones, {o: renamed[o] for o in written if o not in outside})
    return edits.apply()
