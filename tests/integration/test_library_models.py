"""Models of libraries as they come: every command of the "Cost a Hugging Face model" section of docs/models.md runs as
written (the output directory moved into the test's), and the forward adapter's rules on hand-made modules."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import torch
from torch import nn

from examples.library_cases import library_cost_commands
from tests.reliability.conftest import cli
from traincost.errors import ConfigError
from traincost.models.forward_adapter import adapt_forward, output_used, select_output

COMMANDS = library_cost_commands()


def _case(args: list[str]) -> str:
    return args[1].replace(":", "_")


@pytest.mark.parametrize(
    "args", [COMMANDS[0], *(pytest.param(c, marks=pytest.mark.slow) for c in COMMANDS[1:])], ids=[_case(c) for c in COMMANDS]
)
def test_every_command_of_the_models_page_section_costs_its_model_verified(args: list[str], tmp_path: Path) -> None:
    at = args.index("--out-dir")
    out = tmp_path / "cost"
    args = [*args[:at], "--out-dir", str(out), *args[at + 2 :]]
    result = cli(*args)
    assert result.returncode == 0, result.stderr[-2000:]
    first = result.stdout.splitlines()[1]
    own = '"labels"' in " ".join(args) and "ViT" not in args[1]
    expected = "loss: the model's own (its output 'loss'" if own else "loss: "
    assert first.strip().startswith(expected), first
    assert "traced step verified in float64 against eager torch" in result.stdout
    verification = pd.read_parquet(out / "verification.parquet")
    assert verification["held"].any()
    ops = pd.read_parquet(out / "ops.parquet")
    assert {"forward", "backward", "optimizer"} <= set(ops["phase"])
    assert ops.loc[ops["phase"] == "forward", "macs"].sum() > 0


def test_the_models_page_section_covers_an_encoder_a_decoder_both_a_vision_model_a_unet_and_torchvision_nets() -> None:
    models = [args[1] for args in COMMANDS]
    assert models[:5] == [
        "transformers:BertForSequenceClassification",
        "transformers:GPT2LMHeadModel",
        "transformers:T5ForConditionalGeneration",
        "transformers:ViTForImageClassification",
        "diffusers:UNet2DModel",
    ]
    assert all(model.startswith("torchvision.models") for model in models[5:]) and len(models) == 8


class _Keywords(nn.Module):
    """A forward of named inputs returning a dict: the rules' hand-made case."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(3, 2)

    def forward(self, first: torch.Tensor, second: torch.Tensor | None = None, labels: torch.Tensor | None = None) -> dict:
        logits = self.linear(first) - (second if second is not None else 0.0)
        out = {"hidden": first, "logits": logits}
        if labels is not None:
            out["loss"] = nn.functional.cross_entropy(logits, labels)
        return out


def test_inputs_go_to_the_parameters_of_their_names_and_the_rule_picks_the_output() -> None:
    first, second = torch.randn(4, 3), torch.randn(4, 2)
    module = adapt_forward(_Keywords(), ["second", "first"], output=None, where="m")  # given in another order
    expected = module.linear(first) - second
    assert torch.equal(module(second, first), expected) and output_used(module) == "logits"
    labels = torch.tensor([0, 1, 1, 0])
    module = adapt_forward(_Keywords(), ["first", "labels"], output=None, where="m")
    loss = module(first, labels)
    assert loss.dim() == 0 and output_used(module) == "loss"
    module.eval()  # an inference step predicts: the loss is not its output
    assert module(first, labels).shape == (4, 2) and output_used(module) == "logits"
    module = adapt_forward(_Keywords(), ["first"], output="hidden", where="m")
    assert torch.equal(module(first), first) and output_used(module) == "hidden"


def test_unnamed_inputs_go_in_order_and_a_tuple_gives_its_first_tensor() -> None:
    module = adapt_forward(nn.LSTM(3, 5, batch_first=True), ["x"], output=None, where="lstm")
    output = module(torch.randn(2, 4, 3))
    assert output.shape == (2, 4, 5) and output_used(module) == "0"  # (output, (h, c)): the output sequence
    named = {n for n, _ in module.named_parameters()}
    assert "weight_ih_l0" in named  # the module keeps its own names: adapted in place


def test_select_output_names_what_it_found_when_the_named_entry_is_missing() -> None:
    with pytest.raises(ConfigError, match=r"--output 'nope': its forward returns dict with tensors \['a', 'b'\]"):
        select_output({"a": torch.zeros(1), "b": torch.ones(1), "c": 3}, named="nope", training=True, where="m")
    with pytest.raises(ConfigError, match="holding no tensor"):
        select_output({"a": None}, named=None, training=True, where="m")
    assert select_output((None, [torch.ones(2)]), named=None, training=True, where="m")[0] == "1"


@pytest.mark.ort
def test_the_onnx_front_end_verifies_a_bert_whose_key_bias_gradient_is_zero_in_exact_arithmetic(tmp_path: Path) -> None:
    """A softmax reads every key's bias alike along its axis, so that bias's gradient cancels to rounding: compared
    against its addends it holds, and its update, the optimizer on the two graphs' residues, is set aside with it."""
    args = COMMANDS[0][: COMMANDS[0].index("--inputs")]  # the page's BERT without the labels: logits out
    tokens = '{"input_ids": {"shape": [32], "dtype": "int64", "range": [0, 1000]}}'
    result = cli(*args, "--inputs", tokens, "--frontend", "onnx", "--out-dir", tmp_path / "cost")
    assert result.returncode == 0, result.stderr[-2000:]
    table = pd.read_parquet(tmp_path / "cost" / "verification.parquet")
    checked = table[table["check"] == "end_to_end"].set_index("name")
    keys = [name for name in checked.index if name.endswith("attention.self.key.bias_grad")]
    assert keys and checked.loc[keys, "held"].all()
    updates = [name.removesuffix("_grad") + ".updated" for name in keys]
    assert (checked.loc[updates, "set_aside"] == "update of a gradient rounding dominates").all()
