"""Replace every composite op of a training graph by primitive standard-domain ONNX ops.

A node is primitive when it is a standard ONNX operator (``onnx.defs``) that is not in
``gradient_rules.COMPOSITE_STANDARD_OPS``. Every other node needs a rule in
``gradient_rules.RULES``; if any has none, the pass stops with one error that names every such op
type and node. The rewritten graph is checked by execution: loss, every gradient and every updated
tensor must match the original to within what float32 rounding can move them.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import helper, numpy_helper

from traincost.errors import GraphError, UnsupportedOpError
from traincost.frontend.execute import example_feeds, max_relative_error, record_shapes, run
from traincost.frontend.gradient_rules import COMPOSITE_STANDARD_OPS, RULES, RuleContext
from traincost.frontend.onnx_graph import IR_VERSION, OPSET, NodeFactory, check_node_order, initializer_map, set_model_meta
from traincost.frontend.shapes import TensorType, tensor_types
from traincost.progress import progress

__all__ = [
    "decompose",
    "rewrite_node",
    "is_primitive",
    "op_histogram",
    "verify_decomposition",
    "DecompositionCheck",
    "TOLERANCE",
]

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
# Composite nodes checked per execution of the original graph.
_CHECK_CHUNK = 100
# Ops whose gradient jumps at a kink (checked for rounding-induced branch flips).
_BRANCHING_OPS = frozenset({"Relu", "LeakyRelu", "MaxPool"})
# Ops whose outputs are sums of products (a convolution's dX, dW, dB). Float32 rounds a sum relative
# to the sum of its terms' absolute values, not to the sum: the bias gradient of a convolution
# followed by training-mode BatchNorm is 0 exactly, and about one ulp of Σ|dY| in float32, in ONNX
# Runtime's kernel as in the rewrite. Their outputs are compared relative to that magnitude.
_SUM_OF_PRODUCTS_OPS = frozenset({"ConvGrad"})


def is_primitive(node: onnx.NodeProto) -> bool:
    """True for a standard ONNX op that needs no decomposition."""
    return node.domain in ("", "ai.onnx") and onnx.defs.has(node.op_type, "") and node.op_type not in COMPOSITE_STANDARD_OPS


def op_histogram(model: onnx.ModelProto) -> Counter[str]:
    """Count of nodes per op type (``domain::op`` for non-standard domains)."""
    return Counter(f"{n.domain}::{n.op_type}" if n.domain not in ("", "ai.onnx") else n.op_type for n in model.graph.node)


def rewrite_node(node: onnx.NodeProto, types: dict[str, TensorType], constants: dict[str, np.ndarray]) -> NodeFactory:
    """The primitive nodes and constants that replace composite ``node`` (same output names)."""
    make = NodeFactory(node.name, template=node)
    RULES[(node.domain, node.op_type)](RuleContext(node=node, types=types, constants=constants, make=make))
    return make


def decompose(model: onnx.ModelProto, *, seed: int = 0) -> onnx.ModelProto:
    """A copy of ``model`` in which every composite op is replaced by primitive ops.

    Raises:
        UnsupportedOpError: naming every op type without a rule and its nodes.
        GraphError: the nodes are not in topological order (a cycle) or a tensor has two writers.
    """
    graph = model.graph
    check_node_order(graph)
    missing: dict[str, list[str]] = {}
    for node in graph.node:
        if not is_primitive(node) and (node.domain, node.op_type) not in RULES:
            missing.setdefault(f"{node.domain or 'ai.onnx'}::{node.op_type}", []).append(node.name)
    if missing:
        listing = "; ".join(f"{op} at {', '.join(nodes)}" for op, nodes in sorted(missing.items()))
        raise UnsupportedOpError(f"graph {graph.name!r}: no decomposition rule for {listing}")

    types = tensor_types(graph)
    constants = initializer_map(graph)
    result = onnx.ModelProto()
    result.CopyFrom(model)
    del result.graph.node[:]
    for node in graph.node:
        if is_primitive(node):
            result.graph.node.append(node)
            continue
        make = rewrite_node(node, types, constants)
        result.graph.node.extend(make.nodes)
        result.graph.initializer.extend(make.initializers)
    del result.opset_import[:]
    result.opset_import.append(helper.make_opsetid("", OPSET))
    result.ir_version = IR_VERSION
    result.graph.name = graph.name.replace("train_step", "train_step_decomposed")
    set_model_meta(result, stage="train_step.decomposed")
    record_shapes(result, example_feeds(result, seed=seed))
    onnx.checker.check_model(result)
    return result


@dataclass(frozen=True, slots=True)
class DecompositionCheck:
    """Largest relative errors found by ``verify_decomposition``.

    Attributes:
        per_rule: for each rewritten op type, the worst error of any of its nodes' outputs when the
            replacement runs on the very tensors the original node read.
        end_to_end: for the loss, every gradient and every updated tensor, the error between the
            two whole graphs run on the same batch and states.
        sensitivity: for the same tensors, how far float32 rounding moves them in the original
            graph: their largest change when its float inputs are nudged by one ulp.
        branch_flips: elements of ReLU, LeakyReLU and MaxPool outputs that took the other branch in
            the rewritten graph because their input was within rounding of the kink.
    """

    per_rule: dict[str, float]
    end_to_end: dict[str, float]
    sensitivity: dict[str, float]
    branch_flips: int

    @property
    def worst_end_to_end(self) -> tuple[str, float]:
        name = max(self.end_to_end, key=self.end_to_end.__getitem__)
        return name, self.end_to_end[name]


def verify_decomposition(before: onnx.ModelProto, after: onnx.ModelProto, *, seed: int = 0) -> DecompositionCheck:
    """Check a decomposition by execution, node by node and end to end.

    Node by node: each rewritten node's replacement runs on the tensors the original node read in an
    execution of ``before``; every output must match within ``TOLERANCE``. End to end: both graphs
    run on the same batch and random optimizer states, and each tensor must match within
    ``TOLERANCE`` or, if larger, ``_SENSITIVITY_FACTOR`` times its sensitivity: its largest change
    over ``_NUDGES`` executions of ``before`` with every float input (batch, optimizer states)
    nudged by a relative ``_NUDGE`` with random signs. The two graphs round differently, and the
    differences add up through the layers; where a graph amplifies them, e.g. BatchNorm over the 4
    values per channel of VGG-16-BN's 2x2 maps at batch 1, they reach 1e-4 (1e-6 in ResNet-18), and
    nudging the inputs moves those tensors as far. Elsewhere the limit stays ``TOLERANCE``, so a
    rewrite 0.1 % off is still caught. This holds for the loss, and for every gradient and updated
    tensor unless a ReLU or max-pool element took the other branch: an input within float32 rounding
    of a kink makes the gradient jump, which says nothing about the rewrite (ImageNet-sized CNNs
    have about one such element per image). Then only the loss is held end to end, the flips are
    counted and logged, and the node-by-node check carries the proof. Errors are relative to a
    tensor's largest value, or for a ConvGrad output to its largest sum of absolute products if that
    is larger.

    Raises:
        GraphError: naming the node or tensor that differs by more than allowed.
    """
    feeds = example_feeds(before, seed=seed, states="random")
    types = tensor_types(before.graph)
    composite = [node for node in before.graph.node if not is_primitive(node)]
    constants = initializer_map(before.graph)
    per_rule: dict[str, float] = {}
    magnitudes: dict[str, float] = {}
    # A slice of nodes at a time, so that the reference tensors of one slice are in memory at once.
    for first in progress(range(0, len(composite), _CHECK_CHUNK), desc="checking rewritten nodes", unit="chunk"):
        nodes = composite[first : first + _CHECK_CHUNK]
        wanted = sorted({name for node in nodes for name in [*node.input, *node.output] if name and name not in constants})
        reference = run(before, feeds, wanted) | constants
        for node in nodes:
            make = rewrite_node(node, types, constants)
            outputs = [name for name in node.output if name]
            local = _isolated(node, make, types, constants, outputs)
            values = run(local, {name: reference[name] for name in node.input if name}, outputs)
            if node.op_type in _SUM_OF_PRODUCTS_OPS:
                magnitudes |= _magnitudes(node, before, types, reference)
            error = max(
                max_relative_error(reference[name], values[name], magnitude=magnitudes.get(name, 0.0)) for name in outputs
            )
            if not error <= TOLERANCE:
                raise GraphError(f"node {node.name!r} ({node.op_type}): its decomposition differs by {error:.2e} (> {TOLERANCE})")
            per_rule[node.op_type] = max(per_rule.get(node.op_type, 0.0), error)
        del reference

    grads = sorted({out for node in before.graph.node for out in node.output if out.endswith("_grad")})
    names = [o.name for o in before.graph.output] + grads
    branches = {
        node.output[-1] if node.op_type == "MaxPool" else node.output[0]: node.op_type
        for node in before.graph.node
        if node.op_type in _BRANCHING_OPS and node.output[-1]
    }
    expected = run(before, feeds, names + list(branches))
    actual = run(after, feeds, names + list(branches))
    flips = _flips(expected, actual, branches)
    end_to_end = {name: max_relative_error(expected[name], actual[name], magnitude=magnitudes.get(name, 0.0)) for name in names}
    del actual  # a whole execution's tensors fewer in memory while the nudged ones run
    sensitivity = _sensitivity(before, feeds, expected, names=names, branches=branches, magnitudes=magnitudes, seed=seed)
    limits = {name: max(TOLERANCE, _SENSITIVITY_FACTOR * sensitivity[name]) for name in names}
    loss = before.graph.output[0].name
    failed = [loss] if flips else names
    worst = max(failed, key=lambda name: end_to_end[name] / limits[name])
    if not end_to_end[worst] <= limits[worst]:
        raise GraphError(
            f"graph {before.graph.name!r}: decomposed graph differs at {worst!r} by {end_to_end[worst]:.2e} "
            f"(> {limits[worst]:.2e}, the larger of {TOLERANCE} and {_SENSITIVITY_FACTOR} times "
            f"the {sensitivity[worst]:.2e} that one-ulp nudges of the inputs move it)"
        )
    if flips:
        log.warning("%d ReLU/max-pool elements took the other branch after rounding; gradients compared node by node only", flips)
    return DecompositionCheck(per_rule=per_rule, end_to_end=end_to_end, sensitivity=sensitivity, branch_flips=flips)


def _sensitivity(
    model: onnx.ModelProto,
    feeds: dict[str, np.ndarray],
    expected: dict[str, np.ndarray],
    *,
    names: list[str],
    branches: dict[str, str],
    magnitudes: dict[str, float],
    seed: int,
) -> dict[str, float]:
    """How far float32 rounding moves each of ``names`` in ``expected``, the values of ``model`` on ``feeds``.

    The largest relative change over ``_NUDGES`` executions on nudged feeds. An execution in which a
    ReLU or max-pool element took the other branch is left out: its gradients jump at the kink, by
    far more than rounding moves them elsewhere. 0 if every execution was left out.
    """
    rng = np.random.default_rng(seed)
    sensitivity = dict.fromkeys(names, 0.0)
    for _ in range(_NUDGES):
        nudged = run(model, {name: _nudged(value, rng) for name, value in feeds.items()}, names + list(branches))
        if _flips(expected, nudged, branches):
            continue
        for name in names:
            change = max_relative_error(expected[name], nudged[name], magnitude=magnitudes.get(name, 0.0))
            sensitivity[name] = max(sensitivity[name], change)
    return sensitivity


def _nudged(value: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A float tensor times 1 ± ``_NUDGE`` per element, the sign at random; labels and token ids unchanged."""
    if not np.issubdtype(value.dtype, np.floating):
        return value
    factors = rng.choice(np.array([1 - _NUDGE, 1 + _NUDGE], dtype=value.dtype), size=value.shape)
    return np.asarray(value * factors)


def _flips(expected: dict[str, np.ndarray], actual: dict[str, np.ndarray], branches: dict[str, str]) -> int:
    """Elements of the ReLU, LeakyReLU and max-pool outputs ``branches`` that took another branch in ``actual``."""
    return sum(int(np.count_nonzero(_branch(expected[n], op) != _branch(actual[n], op))) for n, op in branches.items())


def _branch(values: np.ndarray, op_type: str) -> np.ndarray:
    """Which branch a non-smooth op took per element: its sign, or for MaxPool the chosen index."""
    return values if op_type == "MaxPool" else values > 0


def _magnitudes(
    node: onnx.NodeProto, model: onnx.ModelProto, types: dict[str, TensorType], values: dict[str, np.ndarray]
) -> dict[str, float]:
    """Largest value of each output of ``node`` (of ``model``) run on the absolute values of its inputs."""
    inputs = [name for name in dict.fromkeys(node.input) if name]
    outputs = [name for name in node.output if name]
    single = _standalone(
        f"{node.name}_magnitude", [node], inputs, outputs, types, opset_imports=model.opset_import, ir_version=model.ir_version
    )
    absolute = run(single, {name: np.abs(values[name]) for name in inputs}, outputs)
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
