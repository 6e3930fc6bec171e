"""Fused attention as a modelling choice: save the log-sum-exp, recompute the scores in the backward pass.

A materialised attention (``softmax(Q Kᵀ) V`` as separate ops, torch's math kernel) keeps its probabilities
``P`` for the backward pass: ``N·H·L²`` values per attention. A fused kernel (FlashAttention; torch's
``scaled_dot_product_attention`` on this CPU without dropout, ``_scaled_dot_product_flash_attention_for_cpu``)
keeps only each row's log-sum-exp ``LSE`` (``N·H·L`` values) and, in the backward pass, recomputes the scores
``S = Q Kᵀ`` (with their scale and mask) and ``P = exp(S − LSE)`` before the gradients.

``fuse_attention`` rewrites a decomposed training step to the fused form: after each chosen attention
softmax, a forward ``ReduceLogSumExp`` of its input; before its first backward reader, the ops from the
attention's ``Q Kᵀ`` product to the softmax's input cloned into the backward pass, then ``Exp(S − LSE)``;
the backward readers of ``P`` read the recomputed one. The step computes the same loss, gradients and updates
(``traincost cost`` checks it by execution); its cost gains the recompute and loses ``P`` from the saved
activations.

Which attentions torch runs fused is recorded at export (``export._SoftmaxKernels``, the ``attention`` metadata):
per ONNX ``Softmax`` in graph order, ``fused`` where torch called its flash kernel, ``materialised`` where it
computed a softmax itself (its math kernel, taken with attention dropout, or a model's own softmax).
"""

from __future__ import annotations

import json
from collections.abc import Iterable

import onnx
from onnx import helper

from traincost.errors import ConfigError, GraphError
from traincost.frontend import ATTENTION_CHOICES
from traincost.frontend.onnx.backward_recompute import BackwardEdits
from traincost.frontend.onnx.execute import Executable, example_feeds
from traincost.frontend.onnx.graph import PHASE_KEY, consumers, model_meta, node_meta, set_node_meta
from traincost.frontend.onnx.randomness import without_randomness
from traincost.frontend.onnx.shapes import tensor_types
from traincost.frontend.shared.rounding import TOLERANCE, max_relative_error

__all__ = [
    "ATTENTION_META",
    "SUFFIX",
    "attention_softmaxes",
    "attention_line",
    "check_fused",
    "costed_attention",
    "fuse_attention",
]

ATTENTION_META = "attention"  # model metadata: JSON {softmax node name: "fused" | "materialised"}, as torch ran it
SUFFIX = "/fused"
# Ops between an attention's Q Kᵀ product and its softmax: scale, mask, casts and views.
_BETWEEN = frozenset({"Mul", "Div", "Add", "Sub", "Where", "Cast", "Identity", "Reshape", "Neg"})
_PRODUCTS = frozenset({"MatMul"})
_DEPTH = 6


def attention_softmaxes(model: onnx.ModelProto) -> dict[str, list[int]]:
    """Every forward ``Softmax`` of an attention: name → the indices (in graph order) of the ops from its ``Q Kᵀ``
    product to its input, the product first.

    An attention softmax reads, through at most ``_DEPTH`` scale, mask, cast or view ops, a ``MatMul``, and its
    output is read (directly or through a ``Dropout``) by a forward ``MatMul``.
    """
    graph = model.graph
    writer = {name: index for index, node in enumerate(graph.node) for name in node.output if name}
    readers = consumers(graph)
    forward = [node_meta(node, PHASE_KEY) in (None, "forward") for node in graph.node]
    found: dict[str, list[int]] = {}
    for index, node in enumerate(graph.node):
        if node.op_type != "Softmax" or not forward[index]:
            continue
        chain = _chain_to_product(graph, writer, node.input[0])
        if chain is None or not _feeds_product(graph, readers, node.output[0]):
            continue
        found[node.name] = chain
    return found


def _chain_to_product(graph: onnx.GraphProto, writer: dict[str, int], scores: str) -> list[int] | None:
    """Indices of the ops from the nearest ``MatMul`` behind ``scores`` to ``scores``'s writer, in graph order."""
    on_path: set[int] = set()
    frontier = [(scores, 0)]
    product = None
    while frontier:
        name, depth = frontier.pop()
        index = writer.get(name)
        if index is None or depth > _DEPTH:
            continue
        node = graph.node[index]
        if node.op_type in _PRODUCTS:
            product = index if product is None else max(product, index)
            on_path.add(index)
        elif node.op_type in _BETWEEN:
            on_path.add(index)
            frontier += [(i, depth + 1) for i in node.input if i]
    if product is None:
        return None
    # only the ops the product reaches: a mask computed beside the scores stays where it is
    reached, chain = set(graph.node[product].output), [product]
    for index in sorted(i for i in on_path if i > product):
        if any(i in reached for i in graph.node[index].input):
            chain.append(index)
            reached.update(graph.node[index].output)
    return chain


def _feeds_product(graph: onnx.GraphProto, readers: dict[str, list[onnx.NodeProto]], probabilities: str) -> bool:
    for reader in readers.get(probabilities, []):
        if reader.op_type in _PRODUCTS:
            return True
        if reader.op_type == "Dropout" and any(r.op_type in _PRODUCTS for r in readers.get(reader.output[0], [])):
            return True
    return False


def costed_attention(
    model: onnx.ModelProto, choice: str, *, seed: int, verify: bool = True
) -> tuple[onnx.ModelProto, dict[str, bool]]:
    """The decomposed training step ``model`` with its attentions costed as ``choice`` says, and each attention softmax
    (by name) with whether it is fused.

    ``choice``: ``torch`` (those the export recorded torch running with a fused kernel; none recorded: none),
    ``materialised`` (none) or ``fused`` (every attention). A step with any fused is checked by execution against
    ``model`` (``check_fused``, on the batch of ``seed``) unless ``verify`` is false.

    Raises:
        ConfigError: an unknown choice.
        GraphError: the fused step computes something else.
    """
    if choice not in ATTENTION_CHOICES:
        raise ConfigError(f"attention {choice!r}: expected one of {', '.join(ATTENTION_CHOICES)}")
    found = attention_softmaxes(model)
    recorded = json.loads(model_meta(model).get(ATTENTION_META) or "{}")
    chosen = {name: choice == "fused" or (choice == "torch" and recorded.get(name) == "fused") for name in found}
    fused = fuse_attention(model, [name for name, is_fused in chosen.items() if is_fused], chains=found)
    if fused is not model and verify:
        check_fused(model, fused, seed=seed)
    return fused, chosen


def attention_line(chosen: dict[str, bool], choice: str) -> str:
    """What the command line prints about a step's attentions (``costed_attention``'s second value)."""
    return f"attention: {sum(chosen.values())} of {len(chosen)} costed fused (--attention {choice})"


def fuse_attention(
    model: onnx.ModelProto, softmaxes: Iterable[str], *, chains: dict[str, list[int]] | None = None
) -> onnx.ModelProto:
    """A copy of the decomposed training step ``model`` with each attention of ``softmaxes`` in fused form (see the
    module's docstring); ``model`` itself if there is none. ``chains``: ``attention_softmaxes(model)`` if known."""
    wanted = set(softmaxes)
    found = chains if chains is not None else attention_softmaxes(model)
    chains = {name: chain for name, chain in found.items() if name in wanted}
    edits = BackwardEdits(model)
    types = tensor_types(model.graph)
    for index, softmax in enumerate(model.graph.node):
        if softmax.name not in chains:
            continue
        name, scores, probabilities = softmax.name, softmax.input[0], softmax.output[0]
        axis = next((helper.get_attribute_value(a) for a in softmax.attribute if a.name == "axis"), -1)
        prefix = f"{name}{SUFFIX}"
        lse = helper.make_node("ReduceLogSumExp", [scores], [f"{prefix}/lse"], name=f"{prefix}/lse", axes=[axis], keepdims=1)
        clones, local = edits.clones(chains[name], SUFFIX)
        shifted = helper.make_node("Sub", [local[scores], lse.output[0]], [f"{prefix}/shifted"], name=f"{prefix}/shift")
        exp = helper.make_node("Exp", [shifted.output[0]], [f"{probabilities}{SUFFIX}"], name=f"{prefix}/exp")
        for node, phase in ((lse, "forward"), (shifted, "backward"), (exp, "backward")):
            node.metadata_props.extend(softmax.metadata_props)  # its layer
            set_node_meta(node, phase=phase)
        if not edits.recompute([*clones, shifted, exp], {probabilities: exp.output[0]}):
            continue
        edits.after.setdefault(index, []).append(lse)
        shape, elem = types[scores].shape, types[scores].elem_type
        reduced = tuple(1 if d == axis % len(shape) else n for d, n in enumerate(shape))
        edits.infos.append(helper.make_tensor_value_info(lse.output[0], elem, reduced))
        edits.infos += [helper.make_tensor_value_info(local[o], types[o].elem_type, types[o].shape) for o in local if o in types]
        edits.infos += [helper.make_tensor_value_info(n, elem, shape) for n in (shifted.output[0], exp.output[0])]
    return edits.apply()


def check_fused(before: onnx.ModelProto, after: onnx.ModelProto, *, seed: int) -> float:
    """Run the step before and after ``fuse_attention`` in ONNX Runtime (every random draw at its keep value) on the same
    batch and random optimizer states; returns the largest relative difference of any output (loss, gradients,
    updates).

    Raises:
        GraphError: an output differs by more than ``rounding.TOLERANCE``: ``exp(S − LSE)`` and the softmax agree to a
            few ulps, so more means the rewrite read something else.
    """
    before, after = without_randomness(before), without_randomness(after)
    feeds = example_feeds(before, seed=seed, states="random")
    original = Executable(before)
    outputs = [value.name for value in before.graph.output]
    expected = original.run(feeds, outputs)
    actual = Executable(after, weights=original.weights).run(feeds, outputs)
    errors = {name: max_relative_error(expected[name], actual[name]) for name in outputs}
    worst = max(errors, key=errors.__getitem__)
    if not errors[worst] <= TOLERANCE:
        raise GraphError(
            f"graph {before.graph.name!r}: fused attention changes the step: {worst!r} differs by {errors[worst]:.2e} "
            f"(> {TOLERANCE})"
        )
    return errors[worst]
