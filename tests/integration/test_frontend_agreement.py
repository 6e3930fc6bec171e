"""Both front ends on the zoo's networks: the torch front end's step checked by execution against eager torch, and
then MACs per phase within 1 %, the bytes of weights, gradients and optimizer states equal, saved activations within
5 % (``traincost.frontend.agreement``). The whole zoo, GPT-2 124M included, is in ``bench/frontend.py --agreement``."""

from __future__ import annotations

import pytest

from tests.conftest import OPTIMIZERS, ZooStep, zoo_params
from traincost.frontend.agreement import frontend_agreement
from traincost.frontend.torch.check import verify_step
from traincost.frontend.torch.lower import lower_step
from traincost.frontend.torch.step import trace_step

pytestmark = pytest.mark.ort

# Where torch's derivative formula reads an op's input and ONNX Runtime's gradient op its output, torch saves one more
# tensor: Tiny-YOLOv3's LeakyReLUs (leaky_relu_backward reads self; LeakyReluGrad reads Y), whose inputs are the
# BatchNorm outputs, 23.8 MB at batch 1 (torch's own saved_tensors_hooks agree with the torch front end to 0.03 %).
READS_ITS_INPUT = {"tiny_yolov3": "aten::leaky_relu"}


@pytest.mark.parametrize(("name", "zoo_step"), zoo_params(onnx_too=True))
def test_both_front_ends_agree_on_a_zoo_network(chain, name: str, zoo_step: ZooStep) -> None:
    batch, optimizer = zoo_step.batch, zoo_step.optimizer
    onnx_workload = chain(name, batch, optimizer).workload
    step = trace_step(name, batch=batch, seed=0, optimizer=OPTIMIZERS[optimizer])
    check = verify_step(step)  # raises naming the tensor if the traced step computes something else
    assert sum(t.held for t in check.tensors) >= len(check.tensors) // 2
    torch_workload = lower_step(step)
    table = frontend_agreement(torch_workload, onnx_workload).set_index("total")
    if name in READS_ITS_INPUT:  # torch keeps the op's input for its backward, ONNX Runtime's gradient its output
        tensors, ops = torch_workload.tensors, torch_workload.ops
        inputs = [row.inputs[0] for row in ops[ops["op_type"] == READS_ITS_INPUT[name]].itertuples()]
        kept = int(tensors.loc[inputs].query("saved_for_backward")["bytes"].sum())
        saved = table.loc["saved_activation_bytes"]
        assert saved["torch"] - saved["onnx"] == pytest.approx(kept, rel=0.01)
        table = table.drop("saved_activation_bytes")
    assert table["within"].all(), table.to_string()
