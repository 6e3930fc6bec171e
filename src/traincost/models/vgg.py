"""VGG-16 (configuration D) in the torchvision layout: 138,357,544 parameters, or 138,365,992 with
BatchNorm after every convolution (torchvision's ``vgg16_bn``); and VGG-16-BN for CIFAR-10.

Thirteen 3x3 convolutions with ReLU in five blocks, each closed by a 2x2/2 max-pool,
``AdaptiveAvgPool2d((7, 7))``, then a classifier of two 4096-wide linear layers with ReLU and a
1000-way linear layer, for 3x224x224 inputs. Dropout after each hidden linear layer's ReLU is the
``dropout`` option; with ``dropout=0.0`` the model holds no Dropout module at all, so the exported
training graph is deterministic. Activations are not in-place.

The CIFAR-10 variant (3x32x32 inputs) keeps the thirteen convolutions with BatchNorm; the five pools
leave 512 x 1 x 1 features, read by one 10-way linear layer (14,728,266 parameters), the usual
CIFAR head of VGG-16 (Liu and Deng 2015).
"""

from __future__ import annotations

from typing import Final

import torch
from torch import nn

from traincost.models._validation import check_dropout

__all__ = ["VGG", "VGG16_LAYERS", "vgg16", "vgg16_bn", "vgg16_bn_cifar"]

VGG16_LAYERS: Final[tuple[int | None, ...]] = (
    64, 64, None,
    128, 128, None,
    256, 256, 256, None,
    512, 512, 512, None,
    512, 512, 512, None,
)  # fmt: skip
"""Configuration D: output channels of each 3x3 convolution, ``None`` for a 2x2/2 max-pool."""


class VGG(nn.Module):
    """VGG feature extractor, adaptive average pooling and classifier."""

    def __init__(
        self, *, layers: tuple[int | None, ...], dropout: float, num_classes: int, batch_norm: bool = False, cifar: bool = False
    ) -> None:
        """Create the network.

        Args:
            layers: Output channels of each 3x3 convolution in order, ``None`` for a max-pool.
            dropout: Dropout probability after each hidden linear layer; 0 leaves Dropout out.
            num_classes: Outputs of the final linear layer.
            batch_norm: A BatchNorm2d between each convolution and its ReLU.
            cifar: For 3x32x32 inputs: no average pooling, one linear layer on the flattened features.
        """
        super().__init__()
        features: list[nn.Module] = []
        in_channels = 3
        for channels in layers:
            if channels is None:
                features.append(nn.MaxPool2d(kernel_size=2, stride=2))
            else:
                features.append(nn.Conv2d(in_channels, channels, kernel_size=3, padding=1))
                if batch_norm:
                    features.append(nn.BatchNorm2d(channels))
                features.append(nn.ReLU(inplace=False))
                in_channels = channels
        self.features = nn.Sequential(*features)
        self.avgpool = nn.Identity() if cifar else nn.AdaptiveAvgPool2d((7, 7))
        classifier: list[nn.Module] = []
        in_features = in_channels if cifar else in_channels * 7 * 7
        for _ in range(0 if cifar else 2):
            classifier += [nn.Linear(in_features, 4096), nn.ReLU(inplace=False)]
            if dropout > 0.0:
                classifier.append(nn.Dropout(p=dropout))
            in_features = 4096
        classifier.append(nn.Linear(in_features, num_classes))
        self.classifier = nn.Sequential(*classifier)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Map images (N, 3, H, W) to logits (N, num_classes)."""
        features = self.avgpool(self.features(x))
        return self.classifier(torch.flatten(features, 1))


def vgg16(*, dropout: float = 0.5) -> VGG:
    """Build VGG-16 (configuration D, no BatchNorm) for 3x224x224 inputs and 1000 classes.

    Args:
        dropout: Dropout probability in the classifier, ``0 <= dropout < 1``; 0 builds no Dropout.

    Returns:
        The model, initialised from torch's global random state.

    Raises:
        ConfigError: ``dropout`` is outside ``[0, 1)``.
    """
    return VGG(layers=VGG16_LAYERS, dropout=check_dropout(dropout), num_classes=1000)


def vgg16_bn(*, dropout: float = 0.5) -> VGG:
    """Build VGG-16 with BatchNorm after every convolution (torchvision's ``vgg16_bn``), 3x224x224, 1000 classes.

    Args:
        dropout: Dropout probability in the classifier, ``0 <= dropout < 1``; 0 builds no Dropout.

    Raises:
        ConfigError: ``dropout`` is outside ``[0, 1)``.
    """
    return VGG(layers=VGG16_LAYERS, dropout=check_dropout(dropout), num_classes=1000, batch_norm=True)


def vgg16_bn_cifar() -> VGG:
    """Build VGG-16 with BatchNorm for CIFAR-10: 3x32x32 inputs, one linear layer to 10 classes."""
    return VGG(layers=VGG16_LAYERS, dropout=0.0, num_classes=10, batch_norm=True, cifar=True)
