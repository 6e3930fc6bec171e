"""A decomposition checked by execution: the graph before and after ``decompose`` run in ONNX Runtime.

Node by node, each rewritten node's replacement runs on the very tensors the original node read; end
to end, the loss, every gradient and every updated tensor must match the original to within what
float32 rounding can move them (``verify_decomposition``). The workflow runs it as its own rule,
``verify_decomposition`` (``traincost verify-decomposition``), beside the jobs that only need the
decomposed graph; ``traincost cost`` runs it in its one process.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import onnx
import pandas as pd
from onnx import helper, numpy_helper

from traincost.errors import GraphError
from traincost.frontend.decompose import is_primitive, rewrite_node
from traincost.frontend.execute import Executable, example_feeds, max_relative_error, run
from traincost.frontend.onnx_graph import IR_VERSION, LOSS_OUTPUT, OPSET, NodeFactory, initializer_map, model_meta
from traincost.frontend.optimizer import updated_name
from traincost.frontend.shapes import TensorType, tensor_types
from traincost.progress import progress

__all__ = ["CAP", "TOLERANCE", "DecompositionCheck", "TensorCheck", "verify_decomposition", "without_dropout"]

log = logging.getLogger(__name__)

# Largest relative difference allowed between the graphs before and after the pass, unless float32
# rounding alone moves a tensor further (see verify_decomposition).
TOLERANCE = 1e-4
# Relative size of the random nudge given to every float input to measure how far rounding moves
# each tensor of the original graph: one to two ulps.
_NUDGE = 2.0**-23
# Nudged executions; a tensor's sensitivity is its largest change over them. One can miss a tensor
# whose largest change sits in one element (an Adam update where the second moment is near 0): on
# VGG-16-BN (CIFAR) with Adam an error end to end was 8 times one nudge's change, at most 2.4 times
# the larger of two.
_NUDGES = 2
# How many times its sensitivity a tensor may differ end to end. Measured on VGG-16-BN (CIFAR),
# ResNet-18 (CIFAR, ImageNet), AlexNet and GPT-2 with SGD and Adam, 4 to 12 seeds each, errors above
# 1e-6 were at most 4 times their sensitivity (those above TOLERANCE at most 2.4 times). A rewrite
# 0.1 % off is still caught in every tensor that rounding moves by less than 1e-4.
_SENSITIVITY_FACTOR = 10
# The largest error allowed end to end, whatever rounding moves a tensor by.
CAP = 1e-3
# Bytes of reference tensors fetched per execution of the original graph for the node-by-node check.
_CHECK_BYTES = 1_000_000_000
# Rounds of pinning the elements of branching ops that flipped (each can let ops downstream flip).
_PIN_ROUNDS = 8
# Ops whose outputs are sums of products (a convolution's dX, dW, dB). Float32 rounds a sum relative
# to the sum of its terms' absolute values, not to the sum: the bias gradient of a convolution
# followed by training-mode BatchNorm is 0 exactly, and about one ulp of Σ|dY| in float32, in ONNX
# Runtime's kernel as in the rewrite. Their outputs are compared relative to that magnitude.
_SUM_OF_PRODUCTS_OPS = frozenset({"ConvGrad"})


@dataclass(frozen=True, slots=True)
class TensorCheck:
    """How one tensor of the step compared end to end.

    Attributes:
        name: the loss, a gradient ``<param>_grad`` or an updated parameter ``<param>.updated``.
        error: largest relative difference between the two graphs (see ``max_relative_error``).
        sensitivity: how far float32 rounding moves it in the original graph: its largest relative
            change when the float inputs are nudged by one ulp.
        limit: the error allowed, ``_SENSITIVITY_FACTOR`` times the sensitivity within
            [``TOLERANCE``, ``CAP``].
        held: False when rounding alone moves the tensor by more than ``CAP`` (its value is float32
            noise, e.g. a sum that cancels to 0): reported, not compared; node by node it is.
    """

    name: str
    error: float
    sensitivity: float
    limit: float
    held: bool


@dataclass(frozen=True, slots=True)
class DecompositionCheck:
    """What ``verify_decomposition`` found.

    Attributes:
        per_rule: for each rewritten op type, the worst error of any of its nodes' outputs when the
            replacement runs on the very tensors the original node read.
        tensors: the end-to-end comparison of the loss, every gradient and every updated parameter.
        branch_flips: elements of ReLU, LeakyReLU and MaxPool outputs and Clip inputs that took another
            branch in the rewritten graph because their input was within rounding of a kink.
        pinned: branching ops with elements of their input the rewritten graph read from the original
            graph for the gradients to follow the same branches (0 when no element flipped).
    """

    per_rule: dict[str, float]
    tensors: tuple[TensorCheck, ...]
    branch_flips: int
    pinned: int

    @property
    def end_to_end(self) -> dict[str, float]:
        return {t.name: t.error for t in self.tensors}

    @property
    def sensitivity(self) -> dict[str, float]:
        return {t.name: t.sensitivity for t in self.tensors}

    @property
    def worst_end_to_end(self) -> tuple[str, float]:
        worst = max((t for t in self.tensors if t.held), key=lambda t: t.error / t.limit)
        return worst.name, worst.error

    def table(self) -> pd.DataFrame:
        """One row per rewritten op type (node by node) and per compared tensor (end to end)."""
        nodes = [
            {"check": "node", "name": op, "error": error, "sensitivity": np.nan, "limit": TOLERANCE, "held": True}
            for op, error in sorted(self.per_rule.items())
        ]
        tensors = [
            {
                "check": "end_to_end",
                "name": t.name,
                "error": t.error,
                "sensitivity": t.sensitivity,
                "limit": t.limit,
                "held": t.held,
            }
            for t in self.tensors
        ]
        columns = {"check": str, "name": str, "error": float, "sensitivity": float, "limit": float, "held": bool}
        return pd.DataFrame(nodes + tensors, columns=list(columns)).astype(columns)


_NO_DROPOUT = "traincost/verification/dropout_off"


def without_dropout(model: onnx.ModelProto) -> onnx.ModelProto:
    """``model`` with every Dropout's ``training_mode`` input a constant false (a copy; ``model`` itself if it has
    no Dropout)."""
    if not any(node.op_type == "Dropout" for node in model.graph.node):
        return model
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    copy.graph.initializer.append(numpy_helper.from_array(np.array(False), _NO_DROPOUT))
    for node in copy.graph.node:
        if node.op_type == "Dropout":
            while len(node.input) < 3:
                node.input.append("")
            node.input[2] = _NO_DROPOUT
    return copy


def verify_decomposition(before: onnx.ModelProto, after: onnx.ModelProto, *, seed: int = 0) -> DecompositionCheck:
    """Check a decomposition by execution, node by node and end to end.

    Node by node: each rewritten node's replacement runs on the tensors the original node read in an
    execution of ``before``; every output must match within ``TOLERANCE``. End to end: both graphs
    run on the same batch and random optimizer states; the loss, every parameter's gradient and every
    updated parameter (and BatchNorm statistic) must match within ``TOLERANCE`` or, if larger,
    ``_SENSITIVITY_FACTOR`` times its sensitivity, its largest change over ``_NUDGES`` executions of
    ``before`` with every float input nudged by a relative ``_NUDGE`` with random signs, and never
    more than ``CAP``. The two graphs round differently, and the differences add up through the
    layers; where a graph amplifies them, e.g. BatchNorm over the 4 values per channel of
    VGG-16-BN's 2x2 maps at batch 1, they reach 1e-4, and nudging the inputs moves those tensors as
    far. A tensor that rounding moves by more than ``CAP`` is float32 noise (a sum that cancels to
    0): it is reported and left to the node-by-node check. Optimizer states are not compared: the
    same primitive ops compute them from the gradients in both graphs.

    A ReLU, max-pool or Clip (ReLU6) element whose input lies within rounding of a kink may take another
    branch in ``after`` (ImageNet-sized CNNs have about one per image), and the gradients jump there,
    which says nothing about the rewrite. The loss is compared as run; for the gradients and updated
    tensors, each element that flipped is pinned: the op (and a Clip's gradient, which compares the
    input with the bounds) reads that element of its input from ``before``, every other element as
    ``after`` computed it, until no element flips (a max-pool that flipped has its whole input
    pinned). Errors are relative to a tensor's largest value, or for a ConvGrad output to its
    largest sum of absolute products if that is larger.

    Dropout draws a new mask at every execution, so both graphs are checked with every Dropout in
    inference mode (its mask all kept): the same deterministic graph before and after the rewrite.

    Raises:
        GraphError: naming the node or tensor that differs by more than allowed.
    """
    before, after = without_dropout(before), without_dropout(after)
    feeds = example_feeds(before, seed=seed, states="random")
    types = tensor_types(before.graph)
    original = Executable(before)
    rewritten = Executable(after, weights=original.weights)
    per_rule, magnitudes = _check_nodes(before, original, feeds, types)

    names = _compared(before)
    branches = _branching(before)
    expected = original.run(feeds, names + list(branches))
    actual = rewritten.run(feeds, names + list(branches))
    errors = {name: max_relative_error(expected[name], actual[name], magnitude=magnitudes.get(name, 0.0)) for name in names}
    flips = sum(int(np.count_nonzero(mask)) for mask in _flips(expected, actual, branches).values())
    del actual  # a whole execution's tensors fewer in memory while the others run
    fetched: dict[str, np.ndarray] = {}

    def reference(sources: list[str]) -> dict[str, np.ndarray]:
        """The original graph's values of ``sources`` on the unnudged feeds (drawn again when needed)."""
        missing = [name for name in sources if name not in fetched]
        if missing:
            fetched.update(original.run(example_feeds(before, seed=seed, states="random"), missing))
        return {name: fetched[name] for name in sources}

    pinned = 0
    if flips:
        in_after = {name: b for name, b in _branching(after).items() if name in branches}
        run = _pin_flips(rewritten, feeds, expected, outputs=names, branches=in_after, reference=reference, whole_tensors=True)
        if run is None:
            raise GraphError(
                f"graph {after.graph.name!r}: branching ops still flip after {_PIN_ROUNDS} rounds of pinning the "
                "elements that took another branch"
            )
        values, pinned = run
        errors |= {
            name: max_relative_error(expected[name], values[name], magnitude=magnitudes.get(name, 0.0))
            for name in names
            if name != LOSS_OUTPUT
        }
        del values, run
    del feeds  # the optimizer states are drawn again for each nudge: one copy of them in memory, not two
    sensitivity = _sensitivity(
        original, before, expected, names=names, branches=branches, reference=reference, magnitudes=magnitudes, seed=seed
    )
    tensors = tuple(_judged(name, errors[name], sensitivity[name]) for name in names)
    held = [t for t in tensors if t.held]
    worst = max(held, key=lambda t: t.error, default=None)
    log.info(
        "end to end: %d tensors held (worst %s), %d float32 noise beyond %.0e; %d branch flips, %d branching ops pinned",
        len(held),
        f"{worst.error:.1e} at {worst.name}" if worst else "none",
        len(tensors) - len(held),
        CAP,
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
        raise GraphError(
            f"graph {before.graph.name!r}: decomposed graph differs at {worst.name!r} by {worst.error:.2e} "
            f"(> {worst.limit:.2e}: {_SENSITIVITY_FACTOR} times the {worst.sensitivity:.2e} that one-ulp nudges "
            f"of the inputs move it, within [{TOLERANCE}, {CAP}])"
        )
    noise = [t.name for t in tensors if not t.held]
    if noise:
        log.warning("%d tensors are float32 noise beyond %.0e (checked node by node only): %s", len(noise), CAP, ", ".join(noise))
    return DecompositionCheck(per_rule=per_rule, tensors=tensors, branch_flips=flips, pinned=pinned)


def _check_nodes(
    before: onnx.ModelProto, original: Executable, feeds: dict[str, np.ndarray], types: dict[str, TensorType]
) -> tuple[dict[str, float], dict[str, float]]:
    """The node-by-node check: worst error per rewritten op type, and the magnitudes of sum-of-products outputs.

    The composite nodes are taken in slices whose inputs take at most ``_CHECK_BYTES``, fetched in
    one execution of the part of ``before`` they depend on; each node's reference outputs come from
    the node itself executed alone on them (the same kernel on the same tensors).
    """
    composite = [node for node in before.graph.node if not is_primitive(node)]
    constants = initializer_map(original.skeleton.graph) | dict(original.weights)  # the weights not copied again
    per_rule: dict[str, float] = {}
    magnitudes: dict[str, float] = {}
    for nodes in progress(_slices(composite, types, constants), desc="checking rewritten nodes", unit="slice"):
        wanted = sorted({name for node in nodes for name in node.input if name and name not in constants})
        reference = original.run(feeds, wanted) | constants
        for node in nodes:
            make = rewrite_node(node, types, constants)
            outputs = [name for name in node.output if name]
            inputs = {name: reference[name] for name in node.input if name}
            reference |= run(_alone(node, before, types), inputs, outputs)
            values = run(_isolated(node, make, types, constants, outputs), inputs, outputs)
            if node.op_type in _SUM_OF_PRODUCTS_OPS:
                magnitudes |= _magnitudes(node, before, types, reference)
            error = max(
                max_relative_error(reference[name], values[name], magnitude=magnitudes.get(name, 0.0)) for name in outputs
            )
            if not error <= TOLERANCE:
                raise GraphError(f"node {node.name!r} ({node.op_type}): its decomposition differs by {error:.2e} (> {TOLERANCE})")
            per_rule[node.op_type] = max(per_rule.get(node.op_type, 0.0), error)
        del reference
    return per_rule, magnitudes


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


def _judged(name: str, error: float, sensitivity: float) -> TensorCheck:
    """The verdict on one tensor: its limit, and whether rounding leaves anything to compare (it moves the
    tensor by at most ``CAP``; one it moves by more than ``CAP / _SENSITIVITY_FACTOR`` is held to ``CAP``)."""
    scaled = _SENSITIVITY_FACTOR * sensitivity
    return TensorCheck(
        name=name, error=error, sensitivity=sensitivity, limit=min(CAP, max(TOLERANCE, scaled)), held=sensitivity <= CAP
    )


@dataclass(frozen=True, slots=True)
class _Branching:
    """One op whose gradient jumps at a kink, and how to tell which branch each element took.

    Attributes:
        node: the op's node name.
        source: its input, the tensor pinned when an element flips.
        observed: the tensor whose values tell the branch: a ReLU's output (its gradient reads the
            output), a MaxPool's indices, a Clip's input (its gradient compares the input with the bounds).
        classify: the branch per element of ``observed``.
        elementwise: each element of ``observed`` depends on the same element of ``source`` alone (not
            MaxPool), so a flipped element can be pinned alone.
        readers: the nodes that read ``source`` for the op or its gradient: the op, and for a Clip every
            node reading its input (the gradient's comparisons with the bounds).
    """

    node: str
    source: str
    observed: str
    classify: Callable[[np.ndarray], np.ndarray]
    elementwise: bool
    readers: frozenset[str]


def _branching(model: onnx.ModelProto) -> dict[str, _Branching]:
    """Every op of ``model`` whose gradient jumps at a kink (ReLU, LeakyReLU, MaxPool, Clip: ReLU6 and
    Hardtanh), by the tensor that tells its branches.

    ReLU and LeakyReLU: the sign of the output; MaxPool: the chosen index (its output if it has no
    index output); Clip: below the lower bound, within the bounds (both included, as in ONNX Runtime's
    gradient, which passes dY where min <= X <= max) or above the upper bound, told from the input, since
    an input exactly at a bound and one a rounding above it give the same output but not the same
    gradient. A Clip with bounds computed at run time is left out.
    """
    constants = initializer_map(model.graph) | {
        node.output[0]: numpy_helper.to_array(node.attribute[0].t)
        for node in model.graph.node
        if node.op_type == "Constant" and node.attribute and node.attribute[0].name == "value"
    }
    readers: dict[str, set[str]] = {}
    for node in model.graph.node:
        for name in node.input:
            readers.setdefault(name, set()).add(node.name)
    branches: dict[str, _Branching] = {}
    for node in model.graph.node:
        source = node.input[0] if node.input else ""
        if node.op_type in ("Relu", "LeakyRelu"):
            observed, classify, elementwise, gradient = node.output[0], _positive, True, set()
        elif node.op_type == "MaxPool" and node.output[-1]:
            observed, classify, elementwise, gradient = node.output[-1], _values, False, set()
        elif node.op_type == "Clip":
            bounds = [node.input[i] if len(node.input) > i else "" for i in (1, 2)]
            if not all(not name or name in constants for name in bounds):
                continue
            low, high = (float(constants[name]) if name else None for name in bounds)
            observed, elementwise, gradient = source, True, readers[source]
            classify = functools.partial(_clip_region, low=low, high=high)
        else:
            continue
        branches[observed] = _Branching(
            node=node.name,
            source=source,
            observed=observed,
            classify=classify,
            elementwise=elementwise,
            readers=frozenset({node.name} | gradient),
        )
    return branches


def _flips(
    expected: dict[str, np.ndarray], actual: dict[str, np.ndarray], branches: dict[str, _Branching]
) -> dict[str, np.ndarray]:
    """Per branching op that flipped (by its ``observed`` tensor): the elements that took another branch in
    ``actual`` than in ``expected``."""
    flips = {n: b.classify(expected[n]) != b.classify(actual[n]) for n, b in branches.items()}
    return {n: mask for n, mask in flips.items() if mask.any()}


def _pin_flips(
    executable: Executable,
    feeds: dict[str, np.ndarray],
    expected: dict[str, np.ndarray],
    *,
    outputs: list[str],
    branches: dict[str, _Branching],
    reference: Callable[[list[str]], dict[str, np.ndarray]],
    whole_tensors: bool,
) -> tuple[dict[str, np.ndarray], int] | None:
    """``outputs`` of ``executable`` on ``feeds`` with every branch taken as in ``expected``, and how many ops
    had to be pinned for it.

    Where an element of a branching op took another branch, the op (and, for a Clip, its gradient) reads
    that element of its input from ``reference`` (the original graph's values of the given tensors on
    the unperturbed feeds) and every other element as computed: the graph stays consistent with
    itself everywhere else (pinning a whole tensor of a rewritten graph would pair its own BatchNorm
    statistics with the original's activations, a mismatch that its gradients' cancelling sums
    amplify). A MaxPool that flipped has its whole input pinned if ``whole_tensors``; else, and
    when flips remain after ``_PIN_ROUNDS`` rounds (pinning one op can let another downstream flip),
    None.
    """
    observed = list(branches)
    values = executable.run(feeds, outputs + observed)
    masks: dict[str, np.ndarray] = {}  # pinned source → its pinned elements
    sources: dict[str, np.ndarray] = {}
    for _ in range(_PIN_ROUNDS):
        # A pinned element reads the reference value: what a Clip's input (its observed tensor) still shows there
        # is not what the Clip and its gradient read.
        flips = {
            name: mask & ~masks[branches[name].source] if branches[name].elementwise and branches[name].source in masks else mask
            for name, mask in _flips(expected, values, branches).items()
        }
        flips = {name: mask for name, mask in flips.items() if mask.any()}
        if not flips:
            return {name: values[name] for name in outputs}, len(masks)
        if not whole_tensors and not all(branches[n].elementwise for n in flips):
            return None
        wanted = [branches[n].source for n in flips if branches[n].source not in sources]
        sources |= reference(list(dict.fromkeys(wanted)))
        for name, flipped in flips.items():
            source = branches[name].source
            mask = flipped if branches[name].elementwise else np.ones(sources[source].shape, dtype=bool)
            masks[source] = masks[source] | mask if source in masks else mask
        pinned, pinned_feeds = _with_pins(executable, branches, masks, sources)
        values = pinned.run(feeds | pinned_feeds, outputs + observed)
        del pinned, pinned_feeds
    return None


def _with_pins(
    executable: Executable, branches: dict[str, _Branching], masks: dict[str, np.ndarray], sources: dict[str, np.ndarray]
) -> tuple[Executable, dict[str, np.ndarray]]:
    """A copy of ``executable`` in which the readers of each pinned source (a key of ``masks``) read
    ``Where(mask, reference value, source)``, and the feeds of those masks and reference values."""
    model = onnx.ModelProto()
    model.CopyFrom(executable.skeleton)
    readers: dict[str, set[str]] = {}
    for branch in branches.values():
        if branch.source in masks:
            readers.setdefault(branch.source, set()).update(branch.readers)
    nodes: list[onnx.NodeProto] = []
    feeds: dict[str, np.ndarray] = {}
    for node in model.graph.node:
        for index, source in enumerate(node.input):
            if source not in readers or node.name not in readers[source]:
                continue
            mask, value, pinned = f"{source}.pin_mask", f"{source}.pin_value", f"{source}.pinned"
            if mask not in feeds:
                feeds[mask], feeds[value] = masks[source], sources[source]
                nodes.append(helper.make_node("Where", [mask, value, source], [pinned], name=f"{source}/pin"))
            node.input[index] = pinned
        nodes.append(node)
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    for name, array in feeds.items():
        model.graph.input.append(helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(array.dtype), array.shape))
    return Executable(model, weights=executable.weights), feeds


def _sensitivity(
    original: Executable,
    before: onnx.ModelProto,
    expected: dict[str, np.ndarray],
    *,
    names: list[str],
    branches: dict[str, _Branching],
    reference: Callable[[list[str]], dict[str, np.ndarray]],
    magnitudes: dict[str, float],
    seed: int,
) -> dict[str, float]:
    """How far float32 rounding moves each of ``names`` in ``expected``, the values of ``original`` (the graph
    ``before``) on the feeds ``example_feeds(before, seed=seed, states="random")``.

    The largest relative change over ``_NUDGES`` executions on nudged feeds, each drawn again and nudged
    in place (GPT-2 124M's Adam states take 1 GB). Where a ReLU, LeakyReLU or Clip element took
    another branch, its gradients jump at the kink, by far more than rounding moves them elsewhere: the
    element's input is read from the unnudged execution (``_pin_flips``), the rest of the tensor
    nudged. An execution in which a max-pool element took another branch, or that still flips after
    ``_PIN_ROUNDS`` rounds, is left out. 0 if every execution was left out.
    """
    rng = np.random.default_rng(seed)
    sensitivity = dict.fromkeys(names, 0.0)
    for _ in range(_NUDGES):
        feeds = example_feeds(before, seed=seed, states="random")
        for value in feeds.values():
            _nudge(value, rng)
        run = _pin_flips(original, feeds, expected, outputs=names, branches=branches, reference=reference, whole_tensors=False)
        del feeds
        if run is None:
            continue
        nudged, _ = run
        for name in names:
            change = max_relative_error(expected[name], nudged[name], magnitude=magnitudes.get(name, 0.0))
            sensitivity[name] = max(sensitivity[name], change)
        del nudged, run
    return sensitivity


def _nudge(value: np.ndarray, rng: np.random.Generator) -> None:
    """Multiply a float tensor in place by 1 ± ``_NUDGE`` per element, the sign at random; labels and token ids
    are left as they are."""
    if np.issubdtype(value.dtype, np.floating):
        value *= rng.choice(np.array([1 - _NUDGE, 1 + _NUDGE], dtype=value.dtype), size=value.shape)


def _positive(values: np.ndarray) -> np.ndarray:
    return values > 0


def _values(values: np.ndarray) -> np.ndarray:
    return values


def _clip_region(values: np.ndarray, *, low: float | None, high: float | None) -> np.ndarray:
    """Per element of a Clip's input: 0 below ``low``, 2 above ``high``, 1 within (both bounds included)."""
    region = np.ones(values.shape, dtype=np.int8)
    if low is not None:
        region[values < low] = 0
    if high is not None:
        region[values > high] = 2
    return region


def _alone(node: onnx.NodeProto, model: onnx.ModelProto, types: dict[str, TensorType]) -> onnx.ModelProto:
    """``node`` of ``model`` as a model of its own, reading its inputs (constants included) as graph inputs."""
    inputs = [name for name in dict.fromkeys(node.input) if name]
    outputs = [name for name in node.output if name]
    return _standalone(
        f"{node.name}_alone", [node], inputs, outputs, types, opset_imports=model.opset_import, ir_version=model.ir_version
    )


def _magnitudes(
    node: onnx.NodeProto, model: onnx.ModelProto, types: dict[str, TensorType], values: dict[str, np.ndarray]
) -> dict[str, float]:
    """Largest value of each output of ``node`` (of ``model``) run on the absolute values of its inputs."""
    outputs = [name for name in node.output if name]
    absolute = run(_alone(node, model, types), {name: np.abs(values[name]) for name in node.input if name}, outputs)
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
