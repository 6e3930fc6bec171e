"""What float32 rounding explains, and what a failed check tells a user to do."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

from traincost.frontend.shared.rounding import NOISE, TOLERANCE, allowed_error, differs, nudge, sensitivity


def test_the_allowed_error_is_ten_times_the_sensitivity_and_at_least_the_tolerance() -> None:
    assert allowed_error(0.0) == TOLERANCE
    assert allowed_error(2e-4) == 2e-3  # above NOISE: a sensitive tensor is held to what rounding explains, not capped
    assert allowed_error(2e-4) > NOISE


def test_a_failure_suggests_a_retry_only_near_rounding() -> None:
    near = differs("at 'w_grad'", 1.5e-3, 1e-4, retry="another --seed, or --no-verify")
    assert "1.50e-03" in near and "1.00e-03" in near and "1.00e-04" in near  # the error, the limit, the sensitivity
    assert "try another --seed, or --no-verify" in near
    far = differs("at 'w_grad'", 0.5, 1e-4, retry="another --seed, or --no-verify")
    assert "far beyond rounding" in far and "--no-verify" not in far


def test_a_nudge_moves_floats_by_one_ulp_and_leaves_integers() -> None:
    rng = np.random.default_rng(0)
    floats, labels = np.ones(1000, np.float32), np.arange(10)
    nudge(floats, rng)
    nudge(labels, rng)
    assert set(np.unique(floats)) == {np.float32(1 - 2**-23), np.float32(1 + 2**-23)}
    assert np.array_equal(labels, np.arange(10))


@pytest.mark.ort
def test_a_node_that_cancels_is_as_sensitive_as_its_cancellation() -> None:
    """A - B with A and B equal to 1e-6: one-ulp nudges of its inputs (1.2e-7 of 1) move the difference by about
    0.1 of itself; a node computing A + B moves by one or two ulps."""
    from onnx import TensorProto, helper  # noqa: PLC0415

    from traincost.frontend.onnx.execute import run  # noqa: PLC0415

    def single(op: str) -> onnx.ModelProto:
        typed = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1000]) for n in ("a", "b", "y")]
        graph = helper.make_graph([helper.make_node(op, ["a", "b"], ["y"])], op, typed[:2], typed[2:])
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10)

    a = np.full(1000, 1 + 2e-6, np.float32)
    inputs = {"a": a, "b": np.ones(1000, np.float32)}
    for op, low, high in (("Sub", 0.02, 0.5), ("Add", 1e-8, 5e-7)):
        reference = run(single(op), inputs, ["y"])
        moved = sensitivity(lambda feeds, op=op: run(single(op), feeds, ["y"]), inputs, reference, seed=0)
        assert low < moved < high, op
