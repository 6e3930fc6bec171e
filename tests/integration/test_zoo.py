"""A sample of the torchvision and timm zoos through ``traincost cost`` as a user gives them (``bench/third_party.py``
runs every builder): each one a construct the zoo run found missing before (general adaptive pooling, strided
slices, stochastic depth, attention dropout, shapes computed at run time, fused attention)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from examples import third_party
from tests.reliability.conftest import EDGE_TPU, cli
from traincost.frontend.shared.optimizer import OptimizerSpec

pytestmark = pytest.mark.ort  # the ONNX front end throughout (tests/conftest.py: pytest_ignore_collect)

BATCH = 2
ADAM = OptimizerSpec(kind="adam", lr=0.001)
# (zoo, builder, how far our saved activations may be from torch's): CPU torch's dropout keeps the float mask and
# its input (ONNX Runtime, as torch's GPU kernel, a one-byte mask), so a classifier with dropout saves less here.
SAMPLE = [
    ("torchvision", "alexnet", 0.15),  # 1x1 map pooled to 6x6 at 64x64; dropout in the classifier
    ("torchvision", "swin_t", 0.05),  # PatchMerging's strided slices, stochastic depth, attention fused by torch
    ("torchvision", "vit_b_32", 0.05),  # attention fused by torch (its flash kernel: no dropout)
    ("torchvision", "efficientnet_b0", 0.15),  # stochastic depth, classifier dropout
    ("torchvision", "regnet_y_400mf", 0.05),  # at 64x64: at 32x32 its output is float32 noise at batch 2
    ("timm", "mobilevitv2_050", 0.05),  # GroupNorm after a Reshape to a shape computed at run time
]


@pytest.mark.slow
@pytest.mark.parametrize(("zoo", "name", "saved_within"), SAMPLE, ids=[f"{z}-{n}" for z, n, _ in SAMPLE])
def test_a_zoo_builder_is_costed_and_verified(zoo: str, name: str, saved_within: float, tmp_path: Path) -> None:
    case = third_party.zoo_case(zoo, name)
    out = tmp_path / "cost"
    training = ("--batch", BATCH, "--optimizer", "adam", "--lr", "0.001")
    result = cli("cost", *case.cost_args(f"zoo_{name}"), *training, "--hardware", EDGE_TPU, "--out-dir", out)
    assert result.returncode == 0, result.stderr
    checked = pd.read_parquet(out / "verification.parquet")
    compared = checked[checked["check"] == "end_to_end"]
    assert len(compared) > 0 and (compared.loc[compared["held"], "error"] <= compared.loc[compared["held"], "limit"]).all()
    torch_bytes = case.torch_memory(f"zoo_{name}_torch", batch=BATCH, optimizer=ADAM)
    memory = pd.read_parquet(out / "memory.parquet").set_index("category")["total_bytes"]
    for category in ("weights", "gradients", "optimizer_states"):
        assert memory[category] == torch_bytes[category], category
    assert memory["saved_activations"] == pytest.approx(torch_bytes["saved_activations"], rel=saved_within)
