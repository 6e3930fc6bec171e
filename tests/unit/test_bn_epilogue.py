"""BatchNorm as its convolution's epilogue (the ``bn_epilogue`` ablation): the Workload transform, costed."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.workloads import conv_bn_relu_workload
from traincost.cost import op_table
from traincost.frontend.onnx.decompose import decompose
from traincost.frontend.onnx.export import export_model
from traincost.frontend.onnx.lower import lower
from traincost.frontend.onnx.train_graph import build_train_step
from traincost.frontend.shared.optimizer import OptimizerSpec
from traincost.hardware import load_hardware
from traincost.models import factory_architecture
from traincost.schedule import SchedulePlan, schedule
from traincost.schedule.bn_epilogue import bn_epilogue, bn_layers
from traincost.schedule.scheduler import place_ops
from traincost.signature import InputSpec

pytestmark = pytest.mark.ort  # the ONNX front end throughout (tests/conftest.py: pytest_ignore_collect)

EDGE_TPU = Path(__file__).resolve().parents[2] / "config/hardware/edge_tpu.yaml"


def _simd_ops(workload, hardware) -> int:
    core_of = place_ops(op_table(workload), hardware)
    return int((core_of == hardware.cores.index(next(c for c in hardware.cores if c.name == "simd"))).sum())


def _offchip_bytes(workload, hardware) -> float:
    """Every op one at a time, nothing kept on chip: each op reads its inputs from and writes its outputs to DRAM."""
    plan = SchedulePlan.from_mode("layer_by_layer", resident_fraction=0.0)
    return float(schedule(op_table(workload), hardware, plan).summary["offchip_bytes"].iloc[0])


def test_the_epilogue_removes_the_simd_ops_and_the_round_trips_by_hand() -> None:
    before = conv_bn_relu_workload()
    after = bn_epilogue(before)
    hardware = load_hardware(EDGE_TPU)
    assert hardware.word_bytes == 2
    # ReduceMean, Sub, Mul, Relu on the SIMD core before; the Relu alone after
    assert (_simd_ops(before, hardware), _simd_ops(after, hardware)) == (4, 1)
    conv = after.ops.iloc[0]
    assert conv["kind"] == "conv" and conv["macs"] == 256 and conv["elementwise_ops"] == 3 * 64
    names = after.tensors.set_index("tensor")["name"]
    assert [names[t] for t in conv["inputs"]] == ["x", "w", "gamma"] and [names[t] for t in conv["outputs"]] == ["n"]
    assert set(after.tensors["name"]) == {"x", "w", "gamma", "n", "z"}  # y, m, d never leave the epilogue
    # DRAM traffic in elements. Before: conv x 64 + w 16 + y 64; ReduceMean y 64 + m 4; Sub y 64 + m 4 + d 64;
    # Mul d 64 + gamma 4 + n 64; Relu n 64 + z 64: 604. After: conv x 64 + w 16 + gamma 4 + n 64; Relu 128: 276.
    assert _offchip_bytes(before, hardware) == 604 * 2
    assert _offchip_bytes(after, hardware) == 276 * 2


def test_a_workload_without_batchnorm_is_unchanged() -> None:
    from tests.workloads import conv_relu_workload  # noqa: PLC0415

    workload = conv_relu_workload()
    assert bn_epilogue(workload) is workload


@pytest.fixture(scope="module")
def conv_bn_training():
    name = factory_architecture(
        "tests.workloads:conv_bn_net", inputs=(InputSpec("x", (1, 4, 4), "float32", 0, 3),), name="conv_bn_net"
    )
    model = export_model(name, batch=2, seed=0)
    return lower(decompose(build_train_step(model, OptimizerSpec(kind="sgd", lr=0.1))))


def test_a_real_training_step_keeps_what_backward_reads(conv_bn_training) -> None:
    before = conv_bn_training
    layers = bn_layers(before)
    assert len(layers) == 1
    ((conv, members),) = layers.values()
    bn_ops = before.ops.set_index("op").loc[members]
    after = bn_epilogue(before)
    hardware = load_hardware(EDGE_TPU)
    # the BatchNorm layer's 16 arithmetic ops (its 5 layout ops are not costed) leave the SIMD core
    assert int((bn_ops["kind"] != "layout").sum()) == 16
    assert _simd_ops(before, hardware) - _simd_ops(after, hardware) == 16
    assert len(after.ops) == len(before.ops) - len(members)
    assert after.ops["elementwise_ops"].sum() == before.ops["elementwise_ops"].sum()  # the work is moved, not dropped
    # the conv output is still made: the BatchNorm's backward reads it
    conv_out = before.tensors.loc[before.ops.set_index("op").at[conv, "outputs"][0], "name"]
    kept = after.tensors.set_index("name")
    assert kept.at[conv_out, "producer"] == conv
    assert any(after.ops.at[c, "phase"] == "backward" for c in kept.at[conv_out, "consumers"])
    # the round trips inside the BatchNorm are gone: less DRAM traffic, the MACs unchanged
    assert _offchip_bytes(after, hardware) < _offchip_bytes(before, hardware)
    assert np.array_equal(after.ops["macs"][after.ops["macs"] > 0], before.ops["macs"][before.ops["macs"] > 0])
