"""What float32 rounding explains: the rule by which the checks by execution (the export against torch, the
decomposition end to end) tell a wrong graph from rounding.

Two computations of the same tensor round differently, and a graph can amplify the difference: a BatchNorm
over the two values per channel of a 1x1 map at batch 2 turns one ulp of its input into a relative change of
the output near 1. A tensor's *sensitivity* is its largest relative change when every float input is
nudged by one or two ulps (``nudge``); an error is explained by rounding while it stays within
``SENSITIVITY_FACTOR`` times that (``allowed_error``). A tensor that rounding alone moves by more than
``NOISE`` is float32 noise: comparing it says nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

__all__ = [
    "NOISE",
    "NUDGES",
    "SENSITIVITY_FACTOR",
    "TOLERANCE",
    "allowed_error",
    "differs",
    "max_relative_error",
    "nudge",
    "sensitivities",
    "sensitivity",
]

# Largest relative difference allowed whatever the sensitivity: two float32 graphs of the same computation
# agree this closely unless the graph amplifies rounding.
TOLERANCE = 1e-4
# Nudged executions; a tensor's sensitivity is its largest change over them. One can miss a tensor
# whose largest change sits in one element (an Adam update where the second moment is near 0): on
# VGG-16-BN (CIFAR) with Adam an error end to end was 8 times one nudge's change, at most 2.4 times
# the larger of two.
NUDGES = 2
# How many times its sensitivity a tensor may differ. Measured on VGG-16-BN (CIFAR), ResNet-18 (CIFAR, ImageNet),
# AlexNet and GPT-2 with SGD and Adam, 4 to 12 seeds each, errors above 1e-6 were at most 4 times their
# sensitivity; on torchvision's ShuffleNetV2, MNASNet and RegNetY (batch 2, Adam) 1.2 to 7 times. A rewrite
# 0.1 % off is still caught in every tensor that rounding moves by less than 1e-4.
SENSITIVITY_FACTOR = 10
# A tensor that rounding alone moves by more than this is float32 noise (a sum that cancels to 0).
NOISE = 1e-3
# An error within this factor of what rounding allows may still be rounding (a seed whose batch lands near a
# kink); beyond it, the graph computes something else.
_NEAR_ROUNDING = 10


def max_relative_error(expected: np.ndarray, actual: np.ndarray, *, magnitude: float = 0.0) -> float:
    """max |actual - expected| / max(max |expected|, magnitude, tiny): a scale-aware error of a whole tensor.

    ``magnitude`` is the size float32 rounding scales with when it exceeds the values themselves,
    e.g. the largest sum of absolute terms for a tensor of sums that cancel.
    """
    # Float tensors are compared in their own precision (a float64 copy of GPT-2's logits is 400 MB);
    # float32 rounds the difference of two values this close by less than one of their ulps.
    expected, actual = np.asarray(expected), np.asarray(actual)
    if not np.issubdtype(expected.dtype, np.floating):
        expected, actual = expected.astype(np.float64), actual.astype(np.float64)
    if expected.shape != actual.shape:
        return float("inf")
    if expected.size == 0:
        return 0.0
    scale = max(float(np.max(np.abs(expected))), magnitude, 1e-12)
    return float(np.max(np.abs(actual - expected))) / scale


def allowed_error(sensitivity: float) -> float:
    """The largest error rounding explains for a tensor of ``sensitivity``: ``SENSITIVITY_FACTOR`` times it, at least
    ``TOLERANCE``."""
    return max(TOLERANCE, SENSITIVITY_FACTOR * sensitivity)


def nudge(value: np.ndarray, rng: np.random.Generator) -> None:
    """Multiply a float array in place by 1 ± one ulp of its precision per element (float32: 2^-23, float64: 2^-52; one
    to two ulps of the value), the sign at random; integers are left as they are."""
    if np.issubdtype(value.dtype, np.floating):
        ulp = np.finfo(value.dtype).eps
        value *= rng.choice(np.array([1 - ulp, 1 + ulp], dtype=value.dtype), size=value.shape)


def sensitivities(
    execute: Callable[[dict[str, np.ndarray]], Mapping[str, np.ndarray]],
    inputs: Mapping[str, np.ndarray],
    reference: Mapping[str, np.ndarray],
    *,
    seed: int,
    magnitudes: Mapping[str, float] | None = None,
) -> dict[str, float]:
    """How far rounding moves each output of ``execute`` computed from ``inputs``: its largest relative change against
    ``reference`` (relative to ``magnitudes`` where larger, see ``max_relative_error``) over ``NUDGES`` executions on
    copies of ``inputs`` nudged by one ulp (``nudge``, random signs drawn with ``seed``)."""
    rng = np.random.default_rng(seed)
    magnitudes = magnitudes or {}
    change = dict.fromkeys(reference, 0.0)
    for _ in range(NUDGES):
        nudged = {name: np.array(value, copy=True) for name, value in inputs.items()}
        for value in nudged.values():
            nudge(value, rng)
        moved = execute(nudged)
        for n in reference:
            change[n] = max(change[n], max_relative_error(reference[n], moved[n], magnitude=magnitudes.get(n, 0.0)))
        del nudged, moved  # a copy of the inputs and of every output: freed before the next execution makes its own
    return change


def sensitivity(
    execute: Callable[[dict[str, np.ndarray]], Mapping[str, np.ndarray]],
    inputs: Mapping[str, np.ndarray],
    reference: Mapping[str, np.ndarray],
    *,
    seed: int,
    magnitudes: Mapping[str, float] | None = None,
) -> float:
    """The largest of ``sensitivities``: how far rounding moves any output of ``execute``."""
    return max(sensitivities(execute, inputs, reference, seed=seed, magnitudes=magnitudes).values(), default=0.0)


def differs(what: str, error: float, sensitivity: float, *, retry: str) -> str:
    """The end of a failed check's message: the error, what rounding explains, and what to do.

    ``retry`` is what a user can try where the error is within ``_NEAR_ROUNDING`` times the allowed error
    (e.g. "another --seed, or --no-verify"); beyond that the message says the graph computes something else.
    """
    limit = allowed_error(sensitivity)
    told = (
        f"{what} by {error:.2e}; rounding explains {limit:.2e} ({SENSITIVITY_FACTOR} times the {sensitivity:.2e} "
        f"that one-ulp nudges of the inputs move it, at least {TOLERANCE})"
    )
    if error <= _NEAR_ROUNDING * limit:
        return f"{told}: within {_NEAR_ROUNDING} times rounding, so it may be rounding this graph amplifies; try {retry}"
    return f"{told}: far beyond rounding, the graphs compute different things"
