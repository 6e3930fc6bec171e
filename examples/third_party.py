"""Networks no one here wrote: torchvision and timm models (random weights, nothing downloaded) and a BERT-style
encoder from ``torch.nn.TransformerEncoder``, at test size (``NETWORKS``, zoo entries through :func:`architecture`),
and every builder of the torchvision and timm zoos as ``traincost cost`` takes it (:func:`zoo_case`).

The networks are built through the package's factories (``traincost.models.library``), which import torchvision and
timm only when called, after declaring the operator schemas torchvision's import needs beside the CPU build of torch;
importing this module imports neither.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from traincost import models
from traincost.frontend.onnx.export import output_sensitivity
from traincost.frontend.shared.optimizer import OptimizerSpec
from traincost.frontend.shared.rounding import NOISE
from traincost.frontend.shared.torch_model import built_model, probe_output
from traincost.memory.torch_measure import measure_torch_memory
from traincost.models.library import timm_model, torchvision_model
from traincost.models.torchvision_ops import declare_unloadable_ops

__all__ = [
    "CLASSES",
    "NETWORKS",
    "SIDES",
    "TIMM_MODELS",
    "TORCHVISION_KWARGS",
    "Network",
    "ZooCase",
    "architecture",
    "torchvision_names",
    "zoo_case",
]

CLASSES = 10
# the package's factories as ``traincost cost`` takes them
_FACTORIES = {"torchvision": "traincost.models.library:torchvision_model", "timm": "traincost.models.library:timm_model"}


class _TokenEncoder(nn.Module):
    """Token embedding, learned positions, ``nn.TransformerEncoder`` (GELU, pre-norm), a per-token head."""

    def __init__(self, vocab: int, seq: int, d_model: int, heads: int, layers: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        self.position = nn.Parameter(torch.randn(1, seq, d_model) * 0.02)
        layer = nn.TransformerEncoderLayer(
            d_model, heads, dim_feedforward=4 * d_model, dropout=0.0, activation="gelu", batch_first=True, norm_first=True
        )
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(d_model, CLASSES)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(self.embed(tokens) + self.position)).reshape(-1, CLASSES)


@dataclass(frozen=True)
class Network:
    """A third-party network at its test size, and what was scaled down to get there."""

    name: str
    build: Callable[[], nn.Module]
    shape: tuple[int, ...]
    input_kind: str = "image"
    rows: int = 1
    scaled: str = ""


NETWORKS = {
    net.name: net
    for net in (
        Network(
            "mobilenet_v2",
            lambda: torchvision_model("mobilenet_v2", num_classes=CLASSES, width_mult=0.35, dropout=0.0),
            (3, 96, 96),
            scaled="width 0.35, 96x96 input (3x3 maps in the last stage: BatchNorm over fewer values at batch 2 "
            "turns float32 rounding into differences near 1e-4); classifier dropout off (random draws differ)",
        ),
        Network(
            "efficientnet_b0",
            lambda: torchvision_model("efficientnet_b0", num_classes=CLASSES, stochastic_depth_prob=0.0, dropout=0.0),
            (3, 64, 64),
            scaled="64x64 input; stochastic depth and dropout off (random draws differ between torch and ORT)",
        ),
        Network(
            "convnext_atto",
            lambda: timm_model("convnext_atto", num_classes=CLASSES),
            (3, 64, 64),
            scaled="ConvNeXt-Atto (timm's smallest ConvNeXt), 64x64 input",
        ),
        Network(
            "vit_tiny",
            lambda: timm_model("vit_tiny_patch16_224", num_classes=CLASSES, img_size=32, patch_size=8, depth=2),
            (3, 32, 32),
            scaled="ViT-Tiny width, 2 blocks, 32x32 input in 8x8 patches",
        ),
        Network(
            "bert_encoder",
            lambda: _TokenEncoder(vocab=CLASSES, seq=16, d_model=32, heads=2, layers=2),
            (16,),
            input_kind="tokens",
            rows=16,
            scaled="2 layers, width 32, 16 tokens, vocabulary 10",
        ),
    )
}


def architecture(network: Network) -> models.Architecture:
    """``network`` as a zoo entry, to put into ``traincost.models.ARCHITECTURES`` for as long as it is needed (a test's
    ``monkeypatch.setattr``, the bench's ``unittest.mock.patch.object``)."""
    sample = models.SampleSpec(shape=network.shape, rows=network.rows, num_classes=CLASSES)
    return models.Architecture(network.name, network.scaled, network.build, network.input_kind, {}, lambda: sample)


# --- the zoos: every torchvision classification builder and timm models across families -------------------------

# What a builder needs beyond ``num_classes`` to return one tensor in training mode: GoogLeNet and Inception v3
# return their auxiliary heads' logits too (a named tuple) unless told not to; their ``init_weights`` draws
# with SciPy's truncated normal (minutes for Inception v3), which random weights do not need.
TORCHVISION_KWARGS: dict[str, dict[str, object]] = {
    "googlenet": {"aux_logits": False, "init_weights": False},
    "inception_v3": {"aux_logits": False, "init_weights": False},
}
# timm models across families, each the smallest of its family.
TIMM_MODELS = (
    # CNNs
    "resnet10t",
    "mobilenetv3_small_050",
    "efficientnet_b0",
    "regnetx_002",
    "ghostnet_050",
    "mixnet_s",
    "densenet121",
    "dla34",
    "hrnet_w18_small",
    "convnextv2_atto",
    # vision transformers
    "deit_tiny_patch16_224",
    "pit_ti_224",
    "levit_128s",
    "xcit_nano_12_p16_224",
    # hybrids
    "mobilevitv2_050",
    "edgenext_xx_small",
    "coat_lite_tiny",
    # MLP-mixers and metaformers
    "mixer_s32_224",
    "resmlp_12_224",
    "poolformer_s12",
)
# Image sides tried in turn for a builder's smallest input.
SIDES = (32, 64, 96, 128, 160, 192, 224, 256, 299)


def torchvision_names() -> list[str]:
    """Every classification builder of torchvision (``list_models(module=torchvision.models)``)."""
    declare_unloadable_ops()  # torchvision's import needs them beside the CPU build of torch
    import torchvision  # noqa: PLC0415 (a test-only dependency, imported where it is used)

    return torchvision.models.list_models(module=torchvision.models)


@dataclass(frozen=True)
class ZooCase:
    """One builder of a zoo as ``traincost cost`` takes it: the factory path, its keyword arguments and the smallest
    image side at which its forward runs on a batch of 2 in training mode."""

    name: str
    factory: str
    kwargs: dict[str, object]
    side: int

    def cost_args(self, name: str) -> list[str]:
        """The model as ``traincost cost`` takes it, under ``name``: the factory path, its kwargs and the input shape."""
        shape = f"3,{self.side},{self.side}"
        return [self.factory, "--name", name, "--kwargs", json.dumps(self.kwargs), "--input-shape", shape]

    def torch_memory(self, name: str, *, batch: int, optimizer: OptimizerSpec) -> dict[str, int]:
        """torch's bytes of one step (``memory.torch_measure``), the builder registered under ``name``."""
        spec = models.InputSpec("input", (3, self.side, self.side), "float32")
        registered = models.factory_architecture(self.factory, inputs=(spec,), kwargs=self.kwargs, name=name)
        return measure_torch_memory(registered, batch=batch, optimizer=optimizer, seed=0)


def zoo_case(zoo: str, name: str) -> ZooCase:
    """The builder ``name`` of ``zoo`` (``torchvision`` or ``timm``) at the smallest side of ``SIDES`` its forward accepts
    (a ViT's image size set to that side where the builder takes one) with an output that is not float32 noise: the
    export's own probe, on the weights and batch ``traincost cost`` draws (seed 0, batch 2), moved by at most
    ``rounding.NOISE`` by one-ulp nudges of the input, as the export check requires (a BatchNorm over the 2 values per
    channel of a 1x1 map at batch 2 makes RegNet's and DenseNet's outputs at 32x32 noise).

    Raises:
        ValueError: no side of ``SIDES`` runs.
    """
    factory = _FACTORIES[zoo]
    if zoo == "torchvision":
        base = TORCHVISION_KWARGS.get(name, {})
        sized = {"image_size": lambda side: side, "input_size": lambda side: [side, side]}
    else:
        base = {}
        sized = {"img_size": lambda side: side}
    base = {"name": name, "num_classes": CLASSES, **base}
    failures = []
    for side in SIDES:
        for key, value in [*sized.items(), (None, None)]:
            kwargs = base if key is None else {**base, key: value(side)}
            spec = models.InputSpec("input", (3, side, side), "float32")
            probe = models.factory_architecture(factory, inputs=(spec,), kwargs=kwargs, name=f"{zoo}_{name}_probe")
            try:
                _, _, module, inputs = built_model(probe, batch=2, seed=0, options={})
                module.train()
                output = probe_output(module, inputs, probe.name)
            except Exception as err:  # a builder rejects a size in any way
                failures.append(f"{side}: {type(err).__name__}")
                continue
            if (sensitivity := output_sensitivity(module, inputs, output, seed=0)) > NOISE:
                failures.append(f"{side}: rounding moves the output by {sensitivity:.1e}")
            else:
                return ZooCase(name, factory, kwargs, side)
    raise ValueError(f"{zoo} {name}: no side of {SIDES} runs ({'; '.join(failures[-3:])})")
