"""Recompute rewrites checked by execution: the training step must compute the same with and without them.

A recompute rewrite (``checkpoint.recompute_onnx``) clones forward ops into the backward pass; the
clones run the same kernels on the same values as the ops they copy, so every output of the step
(loss, updated parameters, optimizer states) must come out the same. Both graphs run in ONNX
Runtime on the same batch and random optimizer states, every random draw at its keep value (a mask
drawn anew at every execution would differ between any two runs: ``randomness.without_randomness``),
and every output is compared.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import onnx
import pandas as pd

from traincost.errors import GraphError
from traincost.frontend.onnx.execute import Executable, example_feeds
from traincost.frontend.onnx.randomness import without_randomness
from traincost.frontend.shared.rounding import max_relative_error
from traincost.optimize.checkpoint import RECOMPUTE_CHECK_COLUMNS, recompute_onnx

__all__ = ["LIMIT", "verify_recompute"]

# Largest relative difference allowed per output. The clones repeat the original kernels on the same
# values (measured: bit-identical on ResNet-18 with Adam); the limit leaves room for a kernel that
# splits a reduction over threads differently from one execution to the next, and none for a clone
# that reads or computes anything else.
LIMIT = 1e-6


def verify_recompute(model: onnx.ModelProto, rewrites: Mapping[str, Sequence[str]], *, seed: int = 0) -> pd.DataFrame:
    """Run ``model`` and each of its recompute rewrites in ONNX Runtime and compare every output.

    Args:
        model: a decomposed training step (``traincost decompose``).
        rewrites: rewrite name (e.g. a scenario or budget of the study) → the saved activations it
            recomputes. Rewrites that recompute nothing are the step itself and are not run.
        seed: seed of the batch and of the random optimizer states.

    Returns:
        One row per rewrite and output: ``rewrite``, ``recomputed`` (how many activations),
        ``output``, ``error`` (largest relative difference, see ``max_relative_error``) and ``limit``.

    Raises:
        GraphError: naming the rewrite and the output that differs by more than ``LIMIT``, or a
            rewrite the planner refuses (an activation that is not saved, or is behind a random op).
    """
    model = without_randomness(model)
    feeds = example_feeds(model, seed=seed, states="random")
    original = Executable(model)
    outputs = [value.name for value in model.graph.output]
    expected = original.run(feeds, outputs)
    rows = []
    for name, dropped in rewrites.items():
        if not dropped:
            continue
        try:
            rewritten = Executable(recompute_onnx(model, dropped), weights=original.weights)
        except GraphError as err:
            raise GraphError(f"recompute rewrite {name!r}: {err}") from err
        actual = rewritten.run(feeds, outputs)
        for output in outputs:
            error = max_relative_error(expected[output], actual[output])
            if not error <= LIMIT:
                raise GraphError(
                    f"recompute rewrite {name!r} ({len(dropped)} activations recomputed) changes the step: "
                    f"output {output!r} differs by {error:.2e} (> {LIMIT:.0e})"
                )
            rows.append({"rewrite": name, "recomputed": len(dropped), "output": output, "error": error, "limit": LIMIT})
        del actual, rewritten
    return pd.DataFrame(rows, columns=list(RECOMPUTE_CHECK_COLUMNS)).astype(RECOMPUTE_CHECK_COLUMNS)
