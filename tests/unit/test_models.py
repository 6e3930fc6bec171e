"""Tests of the model zoo: parameter counts, output contract, options, errors and ONNX export."""

from __future__ import annotations

import collections
from pathlib import Path

import onnx
import pytest
import torch
from torch import nn

from traincost.errors import ConfigError, TraincostError, UnknownModelError
from traincost.models import (
    ARCHITECTURES,
    InputSpec,
    build_model,
    factory_architecture,
    get_architecture,
    input_shape,
    make_batch,
    parameter_count,
)
from traincost.models.tiny_yolo import TinyYOLOv3

# Models whose forward pass at full size is too slow for unit tests.
_HEAVY = {"gpt2", "gpt2_124m"}

# Options that make the configurable GPT-2 cheap to run.
_TINY_SEQ_LEN = 16
_TINY_VOCAB = 50
_TINY_GPT2 = {"n_layer": 1, "d_model": 32, "n_head": 2, "seq_len": _TINY_SEQ_LEN, "vocab_size": _TINY_VOCAB}


@pytest.fixture(autouse=True)
def _seeded() -> None:
    """Seed torch's global random state so every model is built with the same weights."""
    torch.manual_seed(0)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("resnet18", 11_689_512),
        ("resnet18_cifar", 11_173_962),
        ("resnet50", 25_557_032),
        ("resnet56", 855_770),
        ("alexnet", 61_100_840),
        ("vgg16", 138_357_544),
        ("vgg16_bn", 138_365_992),  # torchvision's vgg16_bn
        ("vgg16_bn_cifar", 14_728_266),
        ("tiny_yolov3", 8_852_366),
        ("gpt2_small", 536_064),
        ("gpt2_124m", 124_439_808),
        ("gpt2", 124_439_808),
        ("mlp", 64 * 128 + 128 + 128 * 128 + 128 + 128 * 10 + 10),
    ],
)
def test_parameter_count(name: str, expected: int) -> None:
    assert parameter_count(build_model(name)) == expected


def test_resnet56_projection_shortcuts_add_two_convolutions() -> None:
    # Option A (zero-padded identity shortcuts) has 853,018 parameters; option B adds a 1x1
    # convolution plus BatchNorm at the two stage transitions: 16*32 + 2*32 + 32*64 + 2*64.
    assert parameter_count(build_model("resnet56")) - 853_018 == 16 * 32 + 2 * 32 + 32 * 64 + 2 * 64


@pytest.mark.parametrize("name", sorted(set(ARCHITECTURES) - _HEAVY))
def test_forward_gives_one_logit_row_per_label(name: str) -> None:
    model = build_model(name)
    inputs, labels = make_batch(name, batch=2, seed=1)
    assert tuple(inputs.shape) == input_shape(name, batch=2)
    rows, classes = model(inputs).shape
    assert tuple(labels.shape) == (rows,)
    assert labels.dtype == torch.int64
    assert int(labels.min()) >= 0
    assert int(labels.max()) < classes


@pytest.mark.parametrize(
    ("name", "shape"),
    [
        ("resnet18", (2, 1000)),
        ("resnet18_cifar", (2, 10)),
        ("resnet50", (2, 1000)),
        ("resnet56", (2, 10)),
        ("alexnet", (2, 1000)),
        ("vgg16", (2, 1000)),
        ("vgg16_bn_cifar", (2, 10)),
        ("tiny_yolov3", (2 * 3 * (13 * 13 + 26 * 26), 85)),
        ("gpt2_small", (2 * 64, 1024)),
    ],
)
def test_output_shape_at_batch_2(name: str, shape: tuple[int, int]) -> None:
    inputs, _ = make_batch(name, batch=2, seed=0)
    assert tuple(build_model(name)(inputs).shape) == shape


def test_input_shapes() -> None:
    assert input_shape("resnet18", batch=2) == (2, 3, 224, 224)
    assert input_shape("resnet18_cifar", batch=2) == (2, 3, 32, 32)
    assert input_shape("tiny_yolov3", batch=1) == (1, 3, 416, 416)
    assert input_shape("gpt2_124m", batch=2) == (2, 1024)
    assert input_shape("gpt2", batch=3, options={"seq_len": 8}) == (3, 8)


def test_configurable_gpt2_forward() -> None:
    model = build_model("gpt2", options=_TINY_GPT2)
    tokens, labels = make_batch("gpt2", batch=2, seed=0, options=_TINY_GPT2)
    assert tokens.dtype == torch.int64
    assert int(tokens.max()) < _TINY_VOCAB
    assert tuple(model(tokens).shape) == (2 * _TINY_SEQ_LEN, _TINY_VOCAB)
    assert tuple(labels.shape) == (2 * _TINY_SEQ_LEN,)


def test_tiny_yolo_heads_and_per_cell_rows() -> None:
    model = build_model("tiny_yolov3")
    assert isinstance(model, TinyYOLOv3)
    images, _ = make_batch("tiny_yolov3", batch=2, seed=0)
    coarse, fine = model.heads(images)
    assert tuple(coarse.shape) == (2, 255, 13, 13)
    assert tuple(fine.shape) == (2, 255, 26, 26)
    rows = model(images)
    # Row order: coarse head then fine head, each (batch, anchor, y, x) with 85 values per row.
    assert torch.equal(rows[0], coarse[0, 0:85, 0, 0])
    assert torch.equal(rows[1], coarse[0, 0:85, 0, 1])
    assert torch.equal(rows[13 * 13], coarse[0, 85:170, 0, 0])
    first_fine = 2 * 3 * 13 * 13
    assert torch.equal(rows[first_fine], fine[0, 0:85, 0, 0])


@pytest.mark.parametrize("name", ["resnet18_cifar", "gpt2_small"])
def test_loss_and_backward(name: str) -> None:
    model = build_model(name)
    inputs, labels = make_batch(name, batch=2, seed=0)
    loss = nn.functional.cross_entropy(model(inputs), labels)
    assert torch.isfinite(loss)
    loss.backward()
    for parameter_name, parameter in model.named_parameters():
        assert parameter.grad is not None, parameter_name
        assert torch.isfinite(parameter.grad).all(), parameter_name


def test_gpt2_attention_is_causal() -> None:
    model = build_model("gpt2_small")
    tokens, _ = make_batch("gpt2_small", batch=1, seed=0)
    changed = tokens.clone()
    changed[0, 40:] = (changed[0, 40:] + 1) % 1024
    with torch.no_grad():
        before = model(tokens)
        after = model(changed)
    assert torch.equal(before[:40], after[:40])
    assert not torch.allclose(before[40:], after[40:])


def test_gpt2_mask_is_a_buffer_and_embeddings_are_tied() -> None:
    model = build_model("gpt2_small")
    assert not any("causal_mask" in name for name in model.state_dict())
    assert not any("causal_mask" in name for name, _ in model.named_parameters())
    mask = next(buffer for name, buffer in model.named_buffers() if name.endswith("causal_mask"))
    assert torch.equal(mask, torch.tril(torch.ones(64, 64, dtype=torch.bool)))
    assert model.get_submodule("lm_head").weight is model.get_submodule("token_embedding").weight


def test_gpt2_rejects_sequences_longer_than_seq_len() -> None:
    model = build_model("gpt2_small")
    with pytest.raises(ConfigError, match="seq_len"):
        model(torch.zeros(1, 65, dtype=torch.int64))


def _dropout_probabilities(model: nn.Module) -> list[float]:
    return [module.p for module in model.modules() if isinstance(module, nn.Dropout)]


@pytest.mark.parametrize("name", ["alexnet", "vgg16"])
def test_dropout_option(name: str) -> None:
    assert _dropout_probabilities(build_model(name)) == [0.5, 0.5]
    assert _dropout_probabilities(build_model(name, options={"dropout": 0.25})) == [0.25, 0.25]
    without = build_model(name, options={"dropout": 0.0})
    assert _dropout_probabilities(without) == []
    assert parameter_count(without) == parameter_count(build_model(name))


@pytest.mark.parametrize("name", sorted(set(ARCHITECTURES) - _HEAVY))
def test_activations_are_not_in_place(name: str) -> None:
    for module in build_model(name).modules():
        assert not getattr(module, "inplace", False), module


def test_building_is_deterministic_under_manual_seed() -> None:
    torch.manual_seed(3)
    first = build_model("resnet18_cifar").state_dict()
    torch.manual_seed(3)
    second = build_model("resnet18_cifar").state_dict()
    assert all(torch.equal(first[key], second[key]) for key in first)


def test_make_batch_is_deterministic_and_leaves_global_state_alone() -> None:
    state = torch.get_rng_state()
    images, labels = make_batch("resnet18_cifar", batch=4, seed=7)
    assert torch.equal(torch.get_rng_state(), state)
    again_images, again_labels = make_batch("resnet18_cifar", batch=4, seed=7)
    assert torch.equal(images, again_images)
    assert torch.equal(labels, again_labels)
    other_images, _ = make_batch("resnet18_cifar", batch=4, seed=8)
    assert not torch.equal(images, other_images)
    assert images.dtype == torch.float32


def test_registry_entries_are_consistent() -> None:
    for name, arch in ARCHITECTURES.items():
        assert arch.name == name
        assert get_architecture(name) is arch
        assert arch.description
        assert "\n" not in arch.description
    assert ARCHITECTURES["gpt2_small"].input_kind == "tokens"
    assert ARCHITECTURES["resnet18"].input_kind == "image"


def test_unknown_model_name() -> None:
    with pytest.raises(UnknownModelError, match="resnet19") as excinfo:
        build_model("resnet19")
    assert "resnet18" in str(excinfo.value)
    assert isinstance(excinfo.value, TraincostError)
    with pytest.raises(UnknownModelError, match="resnet19"):
        make_batch("resnet19", batch=1, seed=0)


def test_unknown_option() -> None:
    with pytest.raises(ConfigError, match="n_layers") as excinfo:
        build_model("gpt2_small", options={"n_layers": 3})
    assert "allowed options: d_model, n_head, n_layer, seq_len, vocab_size" in str(excinfo.value)
    with pytest.raises(ConfigError, match="'dropout'.*resnet18.*none"):
        build_model("resnet18", options={"dropout": 0.1})
    with pytest.raises(ConfigError, match="width"):
        input_shape("alexnet", batch=1, options={"width": 2})


def test_bad_gpt2_options() -> None:
    with pytest.raises(ConfigError, match="d_model.*n_head"):
        build_model("gpt2_small", options={"d_model": 130})
    with pytest.raises(ConfigError, match="n_layer"):
        build_model("gpt2", options={**_TINY_GPT2, "n_layer": 0})
    with pytest.raises(ConfigError, match="vocab_size"):
        make_batch("gpt2_small", batch=1, seed=0, options={"vocab_size": 2.5})
    with pytest.raises(ConfigError, match="seq_len"):
        input_shape("gpt2_small", batch=1, options={"seq_len": True})


@pytest.mark.parametrize("value", [-0.1, 1.0, "0.5", None])
def test_bad_dropout(value: object) -> None:
    with pytest.raises(ConfigError, match="dropout"):
        build_model("alexnet", options={"dropout": value})
    with pytest.raises(ConfigError, match="dropout"):
        make_batch("vgg16", batch=1, seed=0, options={"dropout": value})


def test_bad_batch_and_seed() -> None:
    with pytest.raises(ConfigError, match="batch"):
        input_shape("resnet18", batch=0)
    with pytest.raises(ConfigError, match="batch"):
        make_batch("resnet18", batch=0, seed=0)
    with pytest.raises(ConfigError, match="seed"):
        make_batch("resnet18", batch=1, seed=-1)


def _export_op_types(model: nn.Module, inputs: torch.Tensor, path: Path) -> tuple[collections.Counter[str], list[int]]:
    """Export for training as the pipeline does; return the op-type histogram and output shape."""
    torch.onnx.export(
        model,
        (inputs,),
        path,
        dynamo=False,
        training=torch.onnx.TrainingMode.TRAINING,
        do_constant_folding=False,
        opset_version=17,
    )
    graph = onnx.load(path, load_external_data=False).graph
    (output,) = graph.output
    shape = [dim.dim_value for dim in output.type.tensor_type.shape.dim]
    return collections.Counter(node.op_type for node in graph.node), shape


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize(
    ("name", "rows", "forbidden"),
    [
        ("resnet18_cifar", 1, {"Shape", "Dropout"}),
        ("tiny_yolov3", 3 * (13 * 13 + 26 * 26), {"Resize", "Pad", "Shape", "Expand"}),
        ("gpt2_small", 64, {"Shape", "Dropout"}),
    ],
)
def test_onnx_training_export_has_static_shapes(name: str, rows: int, forbidden: set[str], tmp_path: Path) -> None:
    model = build_model(name)
    inputs, _ = make_batch(name, batch=1, seed=0)
    op_types, shape = _export_op_types(model, inputs, tmp_path / "model.onnx")
    assert not forbidden & set(op_types)
    assert shape[0] == rows


@pytest.mark.filterwarnings("ignore")
def test_onnx_export_without_dropout_has_no_dropout_node(tmp_path: Path) -> None:
    model = build_model("alexnet", options={"dropout": 0.0})
    inputs, _ = make_batch("alexnet", batch=1, seed=0, options={"dropout": 0.0})
    op_types, _ = _export_op_types(model, inputs, tmp_path / "model.onnx")
    assert "Dropout" not in op_types


def test_a_users_architecture_is_a_value_no_registry_keeps() -> None:
    """Two user models of one name in one process: each builds its own module, and the zoo does not learn the name."""
    spec = InputSpec("x", (8,), "float32")
    small = factory_architecture("torch.nn:Linear", inputs=(spec,), kwargs={"in_features": 8, "out_features": 2}, name="mine")
    wide = factory_architecture("torch.nn:Linear", inputs=(spec,), kwargs={"in_features": 8, "out_features": 32}, name="mine")
    assert parameter_count(build_model(small)) == 18 and parameter_count(build_model(wide)) == 288
    assert "mine" not in ARCHITECTURES
    with pytest.raises(UnknownModelError):
        get_architecture("mine")
