"""A decomposition checked by execution: the graph before and after ``decompose`` run in ONNX Runtime.

Node by node, each rewritten node's replacement runs on the very tensors the original node read; end
to end, the loss, every gradient and every updated tensor must match the original to within what
float32 rounding can move them (``verify_decomposition``). The workflow runs it as its own rule,
``verify_decomposition`` (``traincost verify-decomposition``), beside the jobs that only need the
decomposed graph; ``traincost cost`` runs it in its one process.
"""

from __future__ import annotations

import json
import logging
from collections import ChainMap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import onnx
from onnx import helper, numpy_helper

from traincost.errors import GraphError
from traincost.frontend.onnx.decompose import is_primitive, rewrite_node
from traincost.frontend.onnx.execute import Executable, example_feeds, run
from traincost.frontend.onnx.graph import (
    IR_VERSION,
    LOSS_OUTPUT,
    OPSET,
    NodeFactory,
    initializer_map,
    initializer_values,
    model_meta,
)
from traincost.frontend.onnx.randomness import without_randomness
from traincost.frontend.onnx.shapes import TensorType, tensor_types
from traincost.frontend.shared.optimizer import updated_name
from traincost.frontend.shared.rounding import (
    NOISE,
    NUDGES,
    TOLERANCE,
    allowed_error,
    differs,
    max_relative_error,
    nudge,
    sensitivity,
)
from traincost.frontend.shared.step_check import FOLLOWS_REASON, NOISE_REASON, DecompositionCheck, TensorCheck
from traincost.progress import progress

__all__ = ["verify_decomposition"]

log = logging.getLogger(__name__)

# Bytes of reference tensors fetched per execution of the original graph for the node-by-node check: GPT-2 124M's
# composite nodes read 3.9 GB, fetched in one execution (peak 6.8 GB; 1 GB per execution took five, 45 s more).
_CHECK_BYTES = 4_000_000_000
# Ops whose outputs are sums of products (a convolution's dX, dW, dB). Float32 rounds a sum relative
# to the sum of its terms' absolute values, not to the sum: the bias gradient of a convolution
# followed by training-mode BatchNorm is 0 exactly, and about one ulp of Σ|dY| in float32, in ONNX
# Runtime's kernel as in the rewrite. Their outputs are compared relative to that magnitude. A BatchNorm's
# gradients are such sums too: ShuffleNetV2's BatchNorm before a 1x1 convolution and another BatchNorm has a bias
# gradient that is 0 exactly; over the 2 values per channel of a 1x1 map at batch 2, ONNX Runtime's kernel gives 0
# exactly, the rewrite one ulp of Σ|dY|.
_SUM_OF_PRODUCTS_OPS = frozenset({"ConvGrad", "BatchNormalizationGrad"})
# Ops with one output such a sum (by index): a LayerNorm's bias gradient, Σ dY over its rows, is 0 exactly where every
# position's logits are then shifted alike along the class axis (a token cross-entropy over dimension 1).
_SUM_OUTPUTS = {"LayerNormalizationGrad": 2}


def verify_decomposition(before: onnx.ModelProto, after: onnx.ModelProto, *, seed: int = 0) -> DecompositionCheck:
    """Check a decomposition by execution, node by node and end to end.

    Node by node: each rewritten node's replacement runs on the tensors the original node read in an
    execution of ``before``; every output must match within ``TOLERANCE``. End to end: both graphs
    run on the same batch and random optimizer states; the loss, every parameter's gradient and every
    updated parameter (and BatchNorm statistic) must match within what rounding explains
    (``rounding.allowed_error``): ``TOLERANCE`` or, if larger, ten times its sensitivity, its largest
    change over ``NUDGES`` executions of ``before`` with every float input nudged by one ulp with
    random signs (``rounding.nudge``). The two graphs round differently, and the differences add up through the
    layers; where a graph amplifies them, e.g. BatchNorm over the 4 values per channel of
    VGG-16-BN's 2x2 maps at batch 1, they reach 1e-4, and nudging the inputs moves those tensors as
    far. A tensor that rounding moves by more than ``rounding.NOISE`` is float32 noise (a sum that cancels to
    0): it is reported and left to the node-by-node check. Optimizer states are not compared: the
    same primitive ops compute them from the gradients in both graphs.

    A ReLU, max-pool or Clip (ReLU6) element whose input lies within rounding of a kink may take another
    branch in ``after`` (ImageNet-sized CNNs have about one per image), and the gradients jump there,
    which says nothing about the rewrite. ``after`` runs with each element that flips pinned: the op
    (and a Clip's gradient, which compares the input with the bounds) reads that element of its input
    from ``before``, every other element as ``after`` computes it (a max-pool that flips has its whole
    input pinned), an element's flip told inside that execution, after the pins upstream of it
    (``_Pinner``); the loss moves by a rounding where an element flips, the gradients follow the
    branches ``before`` took. Errors are relative to a tensor's largest value, or for a ConvGrad output
    to its largest sum of absolute products if that is larger.

    Dropout and other random masks draw anew at every execution, so both graphs are checked with every
    draw at its keep value (``randomness.without_randomness``: a dropout keeps every element, scaled by
    ``1 / (1 - p)``): the same deterministic graph before and after the rewrite.

    Raises:
        GraphError: naming the node or tensor that differs by more than allowed.
    """
    before, after = without_randomness(before), without_randomness(after)
    feeds = example_feeds(before, seed=seed, states="random")
    types = tensor_types(before.graph)
    original = Executable(before)
    rewritten = Executable(after, weights=original.weights)
    names = _compared(before)
    branches = _branching(before)
    told = [b.source for b in branches.values()] + [b.observed for b in branches.values() if b.kind == "choice"]
    constants = initializer_map(original.skeleton.graph) | dict(original.weights)  # the weights not copied again
    sums = _sums(before, names)
    addends = [name for node in sums for name in node.input if name and name not in constants]
    per_rule, node_limits, magnitudes, expected = _check_nodes(
        before, original, feeds, types, constants, also=list(dict.fromkeys(names + told + addends))
    )
    magnitudes |= _sum_magnitudes(sums, before, types, constants | expected)
    for name in set(addends) - {*names, *told}:
        del expected[name]  # fetched in the same execution as the references, for the sums' magnitudes only
    in_after = {name: b for name, b in _branching(after).items() if name in branches}
    run = _Pinner(rewritten, in_after, expected).run(feeds, names)
    errors = {name: max_relative_error(expected[name], run.values[name], magnitude=magnitudes.get(name, 0.0)) for name in names}
    flips, pinned = run.flips, len(run.pins)
    del run  # a whole execution's tensors fewer in memory while the others run
    del feeds  # the optimizer states are drawn again for each nudge: one copy of them in memory, not two
    pinner = _Pinner(original, branches, expected)
    sensitivity = _sensitivity(pinner, before, expected, names=names, magnitudes=magnitudes, seed=seed)
    cancelled = {
        name for name in names if float(np.max(np.abs(expected[name]), initial=0.0)) <= NOISE * magnitudes.get(name, 0.0)
    }
    tensors = _noise_follows_gradients(tuple(_judged(name, errors[name], sensitivity[name]) for name in names), cancelled)
    held = [t for t in tensors if t.held]
    worst = max(held, key=lambda t: t.error, default=None)
    log.info(
        "end to end: %d tensors held (worst %s), %d float32 noise beyond %.0e; %d branch flips, %d branching ops pinned",
        len(held),
        f"{worst.error:.1e} at {worst.name}" if worst else "none",
        len(tensors) - len(held),
        NOISE,
        flips,
        pinned,
    )
    for t in tensors:
        log.debug("%s: error %.2e, sensitivity %.2e, limit %.2e, held %s", t.name, t.error, t.sensitivity, t.limit, t.held)
    failed = [t for t in tensors if t.held and not t.error <= t.limit]
    loss = next(t for t in tensors if t.name == LOSS_OUTPUT)
    if not loss.held:
        raise GraphError(
            f"graph {before.graph.name!r}: float32 rounding moves the loss by {loss.sensitivity:.2e}; nothing to compare"
        )
    if failed:
        worst = max(failed, key=lambda t: t.error / t.limit)
        told = differs(f"at {worst.name!r}", worst.error, worst.sensitivity, retry="another --seed, or --no-verify")
        raise GraphError(f"graph {before.graph.name!r}: the decomposed graph differs {told}")
    noise = [t.name for t in tensors if not t.held]
    if noise:
        log.warning(
            "%d tensors are float32 noise beyond %.0e (checked node by node only): %s", len(noise), NOISE, ", ".join(noise)
        )
    return DecompositionCheck(per_rule=per_rule, tensors=tensors, branch_flips=flips, pinned=pinned, node_limits=node_limits)


def _check_nodes(
    before: onnx.ModelProto,
    original: Executable,
    feeds: dict[str, np.ndarray],
    types: dict[str, TensorType],
    constants: dict[str, np.ndarray],
    *,
    also: list[str],
) -> tuple[dict[str, float], dict[str, float], dict[str, float], dict[str, np.ndarray]]:
    """The node-by-node check: worst error per rewritten op type (against its limit) and that node's limit, the
    magnitudes of sum-of-products outputs, and the values of the tensors ``also`` (the end-to-end comparison's),
    fetched in the same execution.

    A node's outputs must match the kernel's within ``rounding.TOLERANCE`` or, where the kernel itself moves more
    on inputs nudged by one ulp (``rounding.sensitivity``), within what rounding explains.

    The composite nodes are taken in slices whose inputs take at most ``_CHECK_BYTES``, fetched in
    one execution of the part of ``before`` they depend on and let go after their last reader in the
    slice; each node's reference outputs come from the node itself executed alone on them (the same
    kernel on the same tensors).
    """
    composite = [node for node in before.graph.node if not is_primitive(node)]
    per_rule: dict[str, float] = {}
    limits: dict[str, float] = {}  # per op type: the limit of its node worst against its limit
    magnitudes: dict[str, float] = {}
    kept: dict[str, np.ndarray] | None = None  # the values of ``also``, from the first slice's execution
    for nodes in progress(_slices(composite, types, constants), desc="checking rewritten nodes", unit="slice"):
        last_reader = {name: index for index, node in enumerate(nodes) for name in node.input if name and name not in constants}
        fetched = original.run(feeds, list(dict.fromkeys(sorted(last_reader) + (also if kept is None else []))))
        if kept is None:
            kept = {name: fetched[name] for name in also}
        for index, node in enumerate(nodes):
            make = rewrite_node(node, types, constants)
            outputs = [name for name in node.output if name]
            inputs = {name: fetched[name] if name in fetched else constants[name] for name in node.input if name}
            for name in inputs:
                if last_reader.get(name) == index:
                    del fetched[name]  # the slice's last reader: one tensor fewer in memory
            alone = _alone(node, before, types)
            reference = run(alone, inputs, outputs)
            values = run(_isolated(node, make, types, constants, outputs), inputs, outputs)
            if node.op_type in _SUM_OF_PRODUCTS_OPS:
                magnitudes |= _magnitudes(alone, inputs, outputs)
            elif node.op_type in _SUM_OUTPUTS and len(node.output) > _SUM_OUTPUTS[node.op_type]:
                summed = node.output[_SUM_OUTPUTS[node.op_type]]
                magnitudes |= {summed: _magnitudes(alone, inputs, outputs)[summed]} if summed else {}
            error = max(
                max_relative_error(reference[name], values[name], magnitude=magnitudes.get(name, 0.0)) for name in outputs
            )
            limit = TOLERANCE
            if not error <= TOLERANCE:  # what rounding explains: the kernel itself on inputs nudged by one ulp
                moved = sensitivity(
                    lambda feeds, alone=alone, outputs=outputs: run(alone, feeds, outputs),
                    inputs,
                    reference,
                    seed=0,
                    magnitudes=magnitudes,
                )
                limit = allowed_error(moved)
                if not error <= limit:
                    told = differs("its decomposition differs", error, moved, retry="another --seed, or --no-verify")
                    raise GraphError(f"node {node.name!r} ({node.op_type}): {told}")
            if error / limit >= per_rule.get(node.op_type, 0.0) / limits.get(node.op_type, TOLERANCE):
                per_rule[node.op_type], limits[node.op_type] = error, limit
            del inputs, reference, values
    return per_rule, limits, magnitudes, kept if kept is not None else original.run(feeds, also)


def _slices(
    nodes: list[onnx.NodeProto], types: dict[str, TensorType], constants: dict[str, np.ndarray]
) -> list[list[onnx.NodeProto]]:
    """``nodes`` in order, cut into slices whose non-constant inputs take at most ``_CHECK_BYTES``."""
    slices: list[list[onnx.NodeProto]] = [[]]
    seen: set[str] = set()
    size = 0
    for node in nodes:
        tensors = {name for name in node.input if name and name not in constants and name not in seen}
        added = sum(types[name].numel * types[name].dtype_bytes for name in tensors if name in types)
        if slices[-1] and size + added > _CHECK_BYTES:
            slices.append([])
            seen, size = set(), 0
            tensors = {name for name in node.input if name and name not in constants}
            added = sum(types[name].numel * types[name].dtype_bytes for name in tensors if name in types)
        slices[-1].append(node)
        seen |= tensors
        size += added
    return [chunk for chunk in slices if chunk]


def _compared(model: onnx.ModelProto) -> list[str]:
    """The loss, every parameter's gradient, every updated parameter and BatchNorm statistic (not the
    optimizer states, not the gradients of activations)."""
    initialized = {init.name for init in model.graph.initializer}
    states = {updated_name(value.name) for value in model.graph.input if value.name not in initialized}
    outputs = [o.name for o in model.graph.output if o.name not in states]
    written = {out for node in model.graph.node for out in node.output}
    grads = [f"{name}_grad" for name in json.loads(model_meta(model)["parameters"]) if f"{name}_grad" in written]
    return outputs + [name for name in grads if name not in outputs]


def _noise_follows_gradients(tensors: tuple[TensorCheck, ...], cancelled: set[str]) -> tuple[TensorCheck, ...]:
    """``tensors`` with each updated parameter whose gradient is float32 noise, or ``cancelled`` (a sum that cancels to
    less than ``rounding.NOISE`` of its addends: 0 in exact arithmetic, ``_sum_magnitudes``), marked noise too.

    The update is computed from the gradient by the same primitive optimizer ops in both graphs (checked on their
    own against ``torch.optim``); where rounding moves the gradient by more than ``rounding.NOISE``, the two graphs'
    gradients are different noise, and the update carries it, though scaled down by the random optimizer states it
    is added to: nudges of the inputs move the update by less than they can move the gradient (timm MobileViTv2 at
    32x32: a gradient moved by 0.30 by nudges, its Adam update by 3e-4, the two graphs' updates 7.8e-3 apart).
    """
    noise = {t.name.removesuffix("_grad") for t in tensors if t.name.endswith("_grad") and (not t.held or t.name in cancelled)}
    follows = {updated_name(name) for name in noise}
    return tuple(replace(t, held=False, reason=FOLLOWS_REASON) if t.name in follows else t for t in tensors)


def _judged(name: str, error: float, sensitivity: float) -> TensorCheck:
    """The verdict on one tensor: its limit (what rounding explains), and whether rounding leaves anything to
    compare (it moves the tensor by at most ``rounding.NOISE``)."""
    held = sensitivity <= NOISE
    limit = allowed_error(sensitivity)
    return TensorCheck(name, error, sensitivity, limit, held, "" if held else NOISE_REASON)


@dataclass(frozen=True, slots=True)
class _Branching:
    """One op whose gradient jumps at a kink, and how to tell which branch each element took.

    Attributes:
        node: the op's node name.
        source: its input, the tensor pinned when an element flips.
        observed: the tensor whose values tell the branch: a ReLU's output (its gradient reads the
            output), a MaxPool's indices, a Clip's input (its gradient compares the input with the bounds).
        kind: how ``observed`` tells the branch: ``"sign"`` (ReLU, LeakyReLU: positive or not), ``"choice"``
            (MaxPool: the chosen index, not elementwise: a flipped choice pins the whole input) or
            ``"bounds"`` (Clip: below ``low``, within, above ``high``).
        readers: the nodes that read ``source`` for the op or its gradient: the op, and for a Clip every
            node reading its input (the gradient's comparisons with the bounds).
        low: a Clip's lower bound (None: none).
        high: a Clip's upper bound (None: none).
    """

    node: str
    source: str
    observed: str
    kind: str
    readers: frozenset[str]
    low: float | None = None
    high: float | None = None


def _branching(model: onnx.ModelProto) -> dict[str, _Branching]:
    """Every op of ``model`` whose gradient jumps at a kink (ReLU, LeakyReLU, MaxPool, Clip: ReLU6 and
    Hardtanh), by the tensor that tells its branches.

    ReLU and LeakyReLU: the sign of the output; MaxPool: the chosen index (its output if it has no
    index output); Clip: below the lower bound, within the bounds (both included, as in ONNX Runtime's
    gradient, which passes dY where min <= X <= max) or above the upper bound, told from the input, since
    an input exactly at a bound and one a rounding above it give the same output but not the same
    gradient. A Clip with bounds computed at run time, or with none, is left out.
    """
    computed = {
        node.output[0]: numpy_helper.to_array(node.attribute[0].t)
        for node in model.graph.node
        if node.op_type == "Constant" and node.attribute and node.attribute[0].name == "value"
    }
    constants = ChainMap(computed, initializer_values(model.graph))  # a Clip's bounds become arrays, not the weights
    readers: dict[str, set[str]] = {}
    for node in model.graph.node:
        for name in node.input:
            readers.setdefault(name, set()).add(node.name)
    branches: dict[str, _Branching] = {}
    for node in model.graph.node:
        source = node.input[0] if node.input else ""
        op = {"node": node.name, "source": source}
        if node.op_type in ("Relu", "LeakyRelu"):
            branch = _Branching(**op, observed=node.output[0], kind="sign", readers=frozenset({node.name}))
        elif node.op_type == "MaxPool" and node.output[-1]:
            branch = _Branching(**op, observed=node.output[-1], kind="choice", readers=frozenset({node.name}))
        elif node.op_type == "Clip":
            bounds = [node.input[i] if len(node.input) > i else "" for i in (1, 2)]
            if not any(bounds) or not all(not name or name in constants for name in bounds):
                continue
            low, high = (float(constants[name]) if name else None for name in bounds)
            branch = _Branching(**op, observed=source, kind="bounds", readers=frozenset(readers[source]), low=low, high=high)
        else:
            continue
        branches[branch.observed] = branch
    return branches


@dataclass(frozen=True, slots=True)
class _Pinned:
    """One execution with every branch pinned (``_Pinner.run``).

    Attributes:
        values: the tensors asked for.
        flips: elements of the branching ops that took another branch than in the reference (a max-pool's
            chosen indices), each told after the pins upstream of it.
        pins: per source with pinned elements, how many were read from the reference (all of a max-pool's
            input where its choice flipped).
        whole: some max-pool's choice flipped, so its whole input was read from the reference.
    """

    values: dict[str, np.ndarray]
    flips: int
    pins: dict[str, int]
    whole: bool


class _Pinner:
    """A graph executed with every branch taken as in a reference execution of the original graph.

    Each branching op (and, for a Clip, its gradient) reads its input through a ``Where``: an element whose
    branch differs from the reference's, told (``_Branching.kind``) from the values this very
    execution computed, is read from the reference (the original graph's value on the unperturbed feeds),
    every other element as computed, so the graph stays consistent with itself everywhere else (pinning a
    whole tensor of a rewritten graph would pair its own BatchNorm statistics with the original's
    activations, a mismatch that its gradients' cancelling sums amplify). A max-pool whose choice differs
    anywhere reads its whole input from the reference. The masks are computed inside the graph, op after
    op, so an op downstream of a pinned one is judged on the pinned values: one execution takes every
    branch as the reference did, wherever the pins upstream move the ops after them.
    """

    __slots__ = ("_executable", "_feeds", "_counts", "_wholes")

    def __init__(self, executable: Executable, branches: dict[str, _Branching], reference: dict[str, np.ndarray]) -> None:
        """Args:
        executable: the graph to execute.
        branches: its branching ops (``_branching`` of its model).
        reference: the reference execution's values of every branch's source and observed tensor.
        """
        model = onnx.ModelProto()
        model.CopyFrom(executable.skeleton)
        by_source: dict[str, list[_Branching]] = {}
        for branch in branches.values():
            by_source.setdefault(branch.source, []).append(branch)
        ops = {node.name: node for node in model.graph.node}
        self._feeds: dict[str, np.ndarray] = {}
        self._counts: dict[str, tuple[str, str]] = {}  # source → the names of its counts of pinned and flipped elements
        self._wholes: list[str] = []  # per max-pool: the name of its flag "its choice flipped"
        pins = {source: self._pin(source, group, ops, reference) for source, group in by_source.items()}
        placed: set[str] = set()
        nodes: list[onnx.NodeProto] = []
        for node in model.graph.node:
            for index, name in enumerate(node.input):
                if name in pins and any(node.name in b.readers for b in by_source[name]):
                    pinning, pinned = pins[name]
                    if name not in placed:  # before the first reader, after the source's writer
                        nodes += pinning
                        placed.add(name)
                    node.input[index] = pinned
            nodes.append(node)
        del model.graph.node[:]
        model.graph.node.extend(nodes)
        model.graph.input.extend(
            helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(array.dtype), array.shape)
            for name, array in self._feeds.items()
        )
        self._executable = Executable(model, weights=executable.weights)

    def run(self, feeds: dict[str, np.ndarray], outputs: list[str]) -> _Pinned:
        """``outputs`` of the graph on ``feeds`` with every branch pinned."""
        counts = [name for pair in self._counts.values() for name in pair]
        values = self._executable.run(feeds | self._feeds, list(dict.fromkeys(outputs + counts + self._wholes)))
        pins = {source: int(values[pinned]) for source, (pinned, _) in self._counts.items() if int(values[pinned])}
        return _Pinned(
            values={name: values[name] for name in outputs},
            flips=sum(int(values[flipped]) for _, flipped in self._counts.values()),
            pins=pins,
            whole=any(bool(values[flag]) for flag in self._wholes),
        )

    def _pin(
        self, source: str, group: list[_Branching], ops: dict[str, onnx.NodeProto], reference: dict[str, np.ndarray]
    ) -> tuple[list[onnx.NodeProto], str]:
        """The nodes that compute ``source`` pinned for the branching ops of ``group`` and count its flipped and
        pinned elements, and the pinned tensor's name."""
        value = self._feed(f"{source}.pin_value", reference[source])
        graph = _Nodes(f"{source}.pin")

        def count(mask: str) -> str:
            return graph.node("ReduceSum", [graph.node("Cast", [mask], to=onnx.TensorProto.INT64)], keepdims=0)

        masks: list[str] = []  # per branch: where its input is pinned (a max-pool's: one flag for all of it)
        flips: list[str] = []  # per branch: how many elements took another branch
        for k, branch in enumerate(group):
            op = ops[branch.node]
            if branch.kind == "choice":
                observed = self._feed(f"{source}.pin{k}_observed", reference[branch.observed])
                outputs = graph.copy(op, [source], outputs=len(op.output))
                changed = graph.node("Not", [graph.node("Equal", [outputs[-1], observed])])
                flips.append(count(changed))
                whole = graph.node("Greater", [flips[-1], graph.constant(np.int64(0))])
                self._wholes.append(whole)
                masks.append(whole)
            else:
                tests = zip(_tests(graph, op, branch, source), _tests(graph, op, branch, value), strict=True)
                masks.append(graph.fold("Or", [graph.node("Xor", [now, then]) for now, then in tests]))
                flips.append(count(masks[-1]))
        mask, flipped = graph.fold("Or", masks), graph.fold("Add", flips)
        pinned = graph.node("Where", [mask, value, source])
        shape = self._feed(f"{source}.pin_shape", np.array(reference[source].shape, dtype=np.int64))
        self._counts[source] = (count(graph.node("Expand", [mask, shape])), flipped)
        return graph.nodes, pinned

    def _feed(self, name: str, array: np.ndarray) -> str:
        self._feeds[name] = array
        return name


class _Nodes:
    """Nodes appended one after another, each output named after ``prefix`` and a counter."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.nodes: list[onnx.NodeProto] = []

    def node(self, op_type: str, inputs: list[str], **attributes: object) -> str:
        """Append a node of one output; returns the output's name."""
        return self.copy(helper.make_node(op_type, [], [], **attributes), inputs, outputs=1)[0]

    def constant(self, value: np.generic) -> str:
        """Append a scalar constant of ``value``'s type; returns its name."""
        return self.node("Constant", [], value=numpy_helper.from_array(np.array(value)))

    def fold(self, op_type: str, inputs: list[str]) -> str:
        """``inputs`` combined pairwise by a binary op (``Or``, ``Add``); the one input if there is one."""
        folded = inputs[0]
        for other in inputs[1:]:
            folded = self.node(op_type, [folded, other])
        return folded

    def copy(self, op: onnx.NodeProto, inputs: list[str], *, outputs: int) -> list[str]:
        """Append a node of ``op``'s type, domain and attributes reading ``inputs``; returns its outputs' names."""
        index = len(self.nodes)
        names = [f"{self.prefix}{index}.{i}" for i in range(outputs)]
        node = helper.make_node(op.op_type, inputs, names, name=f"{self.prefix}{index}", domain=op.domain)
        node.attribute.extend(op.attribute)
        self.nodes.append(node)
        return names


def _tests(graph: _Nodes, op: onnx.NodeProto, branch: _Branching, tensor: str) -> list[str]:
    """Booleans per element of ``tensor`` read as the source of the elementwise ``branch`` (of node ``op``) that
    together tell its branch: a ReLU's or LeakyReLU's output is positive; a Clip's input is below its lower
    bound, above its upper bound."""
    if branch.kind == "sign":
        (output,) = graph.copy(op, [tensor], outputs=1)
        return [graph.node("Greater", [output, graph.constant(np.float32(0.0))])]
    bounds = ((branch.low, "Less"), (branch.high, "Greater"))
    return [graph.node(compare, [tensor, graph.constant(np.float32(bound))]) for bound, compare in bounds if bound is not None]


def _sensitivity(
    pinner: _Pinner,
    before: onnx.ModelProto,
    expected: dict[str, np.ndarray],
    *,
    names: list[str],
    magnitudes: dict[str, float],
    seed: int,
) -> dict[str, float]:
    """How far float32 rounding moves each of ``names`` in ``expected``, the values of the graph ``before`` on the
    feeds ``example_feeds(before, seed=seed, states="random")``, executed by ``pinner``.

    The largest relative change over ``NUDGES`` executions on nudged feeds, each drawn again and nudged
    in place (GPT-2 124M's Adam states take 1 GB). Where a ReLU, LeakyReLU or Clip element took
    another branch, its gradients jump at the kink, by far more than rounding moves them elsewhere: the
    element's input is read from the unnudged execution (``pinner``), the rest of the tensor nudged. An
    execution in which a max-pool's choice flipped is left out. 0 if every execution was left out.
    """
    rng = np.random.default_rng(seed)
    sensitivity = dict.fromkeys(names, 0.0)
    for _ in range(NUDGES):
        feeds = example_feeds(before, seed=seed, states="random")
        for value in feeds.values():
            nudge(value, rng)
        run = pinner.run(feeds, names)
        del feeds
        if run.whole:
            continue
        for name in names:
            change = max_relative_error(expected[name], run.values[name], magnitude=magnitudes.get(name, 0.0))
            sensitivity[name] = max(sensitivity[name], change)
        del run
    return sensitivity


def _alone(node: onnx.NodeProto, model: onnx.ModelProto, types: dict[str, TensorType]) -> onnx.ModelProto:
    """``node`` of ``model`` as a model of its own, reading its inputs (constants included) as graph inputs."""
    inputs = [name for name in dict.fromkeys(node.input) if name]
    outputs = [name for name in node.output if name]
    return _standalone(
        f"{node.name}_alone", [node], inputs, outputs, types, opset_imports=model.opset_import, ir_version=model.ir_version
    )


def _sums(before: onnx.ModelProto, names: list[str]) -> list[onnx.NodeProto]:
    """The ReduceSum nodes of ``before`` that compute a tensor of ``names`` (each once)."""
    producer = {output: node for node in before.graph.node for output in node.output}
    summed = [producer[name] for name in names if name in producer and producer[name].op_type == "ReduceSum"]
    return list({node.name: node for node in summed}.values())


def _sum_magnitudes(
    sums: list[onnx.NodeProto], before: onnx.ModelProto, types: dict[str, TensorType], values: Mapping[str, np.ndarray]
) -> dict[str, float]:
    """The magnitude of each output of ``sums`` (ReduceSums of ``before``, their inputs' ``values`` fetched with the
    references): its largest sum of absolute addends (``_magnitudes``). A gradient that is 0 in exact arithmetic, e.g.
    the bias of a layer whose output a softmax reads along the axis the bias is constant on (attention keys, a
    cross-entropy's class axis), is a sum that cancels: rounding leaves in it what scales with its addends, not with
    the sum."""
    magnitudes: dict[str, float] = {}
    for node in sums:
        inputs = {name: values[name] for name in node.input if name}
        magnitudes |= _magnitudes(_alone(node, before, types), inputs, [name for name in node.output if name])
    return magnitudes


def _magnitudes(alone: onnx.ModelProto, values: dict[str, np.ndarray], outputs: list[str]) -> dict[str, float]:
    """Largest value of each of ``outputs`` of a node run alone (``_alone``) on the absolute values of its float inputs
    (an integer input, a ReduceSum's axes, as it is)."""
    absolute = run(alone, {name: np.abs(v) if np.issubdtype(v.dtype, np.floating) else v for name, v in values.items()}, outputs)
    return {name: float(np.max(absolute[name])) for name in outputs}


def _isolated(
    node: onnx.NodeProto,
    make: NodeFactory,
    types: dict[str, TensorType],
    constants: dict[str, np.ndarray],
    outputs: list[str],
) -> onnx.ModelProto:
    """A model made of ``node``'s replacement alone, reading the node's inputs as graph inputs."""
    inputs = [name for name in dict.fromkeys(node.input) if name]
    return _standalone(
        f"{node.name}_decomposed",
        make.nodes,
        [n for n in inputs if n not in constants],
        outputs,
        types,
        initializer=[*make.initializers, *(numpy_helper.from_array(constants[n], n) for n in inputs if n in constants)],
        opset_imports=[helper.make_opsetid("", OPSET)],
        ir_version=IR_VERSION,
    )


def _standalone(
    name: str,
    nodes: Sequence[onnx.NodeProto],
    inputs: Sequence[str],
    outputs: Sequence[str],
    types: dict[str, TensorType],
    *,
    opset_imports: Sequence[onnx.OperatorSetIdProto],
    ir_version: int,
    initializer: Sequence[onnx.TensorProto] = (),
) -> onnx.ModelProto:
    """A model of ``nodes`` alone, reading ``inputs`` as graph inputs and returning ``outputs``."""

    def typed(names: Sequence[str]) -> list[onnx.ValueInfoProto]:
        return [helper.make_tensor_value_info(n, types[n].elem_type, types[n].shape) for n in names]

    graph = helper.make_graph(list(nodes), name, typed(inputs), typed(outputs), initializer=list(initializer))
    model = helper.make_model(graph, opset_imports=list(opset_imports))
    model.ir_version = ir_version
    return model
