"""Liveness analysis: a hand-computed case, and the real thing against torch."""

from __future__ import annotations

import pandas as pd
import pytest

from traincost.frontend.shared.optimizer import OptimizerSpec
from traincost.memory.compare import TOLERANCES
from traincost.memory.liveness import CATEGORIES, memory_profile
from traincost.memory.torch_measure import measure_torch_memory
from traincost.workload import Workload


def _tiny() -> Workload:
    """w (weight, 100 B) · x (input, 10 B) → a (activation, 40 B, saved) → loss;
    backward: g (gradient, 40 B) → w_grad (weight_grad, 100 B); optimizer writes w.updated in place."""
    tensors = pd.DataFrame(
        [
            # tensor, name, kind, bytes, producer, consumers, saved, updates
            (0, "w", "weight", 100, -1, [0, 2], False, -1),
            (1, "x", "input", 10, -1, [0], False, -1),
            (2, "a", "activation", 40, 0, [1, 3], True, -1),
            (3, "loss", "output", 4, 1, [], False, -1),
            (4, "g", "gradient", 40, 2, [3], False, -1),
            (5, "w_grad", "weight_grad", 100, 3, [4], False, -1),
            (6, "w.updated", "weight", 100, 4, [], False, 0),
        ],
        columns=["tensor", "name", "kind", "bytes", "producer", "consumers", "saved_for_backward", "updates"],
    )
    ops = pd.DataFrame(
        {"op": range(5), "name": list("abcde"), "phase": ["forward", "forward", "backward", "backward", "optimizer"]}
    )
    return Workload(ops=ops, tensors=tensors)


def test_hand_computed_peak() -> None:
    profile = memory_profile(_tiny())
    # live after each op: op0 w+x+a = 150; op1 w+a+loss = 144; op2 w+a+loss+g = 184;
    # op3 w+a+loss+g+w_grad = 284; op4 w+loss+w_grad = 204 (w.updated overwrites w)
    assert list(profile.live_bytes) == [150, 144, 184, 284, 204]
    assert profile.peak_bytes == 284 and profile.peak_op == 3
    assert profile.at_peak_bytes == {
        "weights": 100,
        "gradients": 100,
        "optimizer_states": 0,
        "saved_activations": 40,
        "other": 44,
    }
    assert sum(profile.at_peak_bytes.values()) == profile.peak_bytes
    assert profile.total_bytes["weights"] == 100 and profile.total_bytes["saved_activations"] == 40


def test_breakdown_adds_up_on_a_real_graph(chain) -> None:
    profile = memory_profile(chain("resnet18_cifar", 2, "adam").workload)
    assert sum(profile.at_peak_bytes.values()) == profile.peak_bytes == profile.live_bytes.max()
    assert list(profile.table()["category"]) == list(CATEGORIES)
    # Adam: two states per parameter, all live at once
    assert profile.at_peak_bytes["optimizer_states"] == 2 * profile.total_bytes["weights"]


_SPECS = {
    "adam": OptimizerSpec(kind="adam", lr=1e-3, weight_decay=1e-4),
    "sgd_momentum": OptimizerSpec(kind="sgd_momentum", lr=0.1, weight_decay=1e-4),
}


@pytest.mark.parametrize(("name", "batch", "optimizer"), [("resnet18_cifar", 2, "adam"), ("resnet56", 2, "sgd_momentum")])
def test_cnn_accounting_matches_torch(chain, name: str, batch: int, optimizer: str) -> None:
    ours = memory_profile(chain(name, batch, optimizer).workload).total_bytes
    measured = measure_torch_memory(name, batch=batch, optimizer=_SPECS[optimizer], seed=0)
    for category, tolerance in TOLERANCES.items():
        assert abs(ours[category] - measured[category]) <= tolerance * measured[category], (
            category,
            ours[category],
            measured[category],
        )
    assert measured["saved_activations"] > 0


def test_gpt2_accounting_matches_torch(chain) -> None:
    """GPT-2 computes Linear as Transpose(W) + MatMul and GELU (tanh) as nine element-wise ops in its
    export. A transposed weight is a view of the weight, not a saved activation, and the GELU is
    fused back into one FastGelu whose gradient reads its input alone, as torch's kernel keeps it:
    the saved activations agree with torch's within the 10 % the CNNs are held to (they were +52 %)."""
    ours = memory_profile(chain("gpt2_small", 2, "sgd_momentum").workload).total_bytes
    measured = measure_torch_memory("gpt2_small", batch=2, optimizer=_SPECS["sgd_momentum"], seed=0)
    for category, tolerance in TOLERANCES.items():
        assert abs(ours[category] - measured[category]) <= tolerance * measured[category], (category, ours, measured)


def _with_views() -> Workload:
    """x (input, 16 B) → a (activation, 16 B) → v = Transpose(a) (a view) → loss; the backward reads
    v; t = Transpose(w) (a view of the weight w, 64 B) is read by the backward too."""
    tensors = pd.DataFrame(
        [
            # tensor, name, kind, bytes, producer, consumers, saved, updates, view_of
            (0, "w", "weight", 64, -1, [2], False, -1, -1),
            (1, "x", "input", 16, -1, [0], False, -1, -1),
            (2, "a", "activation", 16, 0, [1], True, -1, -1),
            (3, "v", "activation", 16, 1, [3, 4], False, -1, 2),
            (4, "t", "activation", 64, 2, [4], False, -1, 0),
            (5, "loss", "output", 4, 3, [], False, -1, -1),
            (6, "g", "gradient", 16, 4, [], False, -1, -1),
        ],
        columns=["tensor", "name", "kind", "bytes", "producer", "consumers", "saved_for_backward", "updates", "view_of"],
    )
    ops = pd.DataFrame({"op": range(5), "name": list("abcde"), "phase": ["forward"] * 4 + ["backward"]})
    return Workload(ops=ops, tensors=tensors)


def test_a_view_adds_no_bytes_and_keeps_what_it_views_live() -> None:
    profile = memory_profile(_with_views())
    # live after each op: op0 w+x+a = 96; op1 w+a (+v, a view) = 80; op2 w+a (+t, a view of w) = 80;
    # op3 w+a+loss = 84; op4 w+a+loss+g = 100: a stays live to op 4, the last reader of its view v
    assert list(profile.live_bytes) == [96, 80, 80, 84, 100]
    assert profile.total_bytes["saved_activations"] == 16


def test_bigger_batch_needs_more_activation_memory_only(chain) -> None:
    small = memory_profile(chain("resnet18_cifar", 2).workload).total_bytes
    large = memory_profile(chain("resnet18_cifar", 4).workload).total_bytes
    assert large["weights"] == small["weights"] and large["gradients"] == small["gradients"]
    assert large["saved_activations"] == pytest.approx(2 * small["saved_activations"], rel=0.01)
