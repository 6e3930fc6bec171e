"""ResNet classifiers: ImageNet ResNet-18 and ResNet-50, CIFAR ResNet-18 and ResNet-56.

Layouts:

* ``resnet18`` and ``resnet50`` follow torchvision: a 7x7/2 convolution, BatchNorm, ReLU and a
  3x3/2 max-pool stem, four stages of BasicBlocks ``[2, 2, 2, 2]`` or Bottlenecks ``[3, 4, 6, 3]``,
  global average pooling and a 1000-way linear layer, for 3x224x224 inputs. Bottlenecks carry
  their stride on the 3x3 convolution (the "v1.5" layout).
* ``resnet18_cifar`` is the usual ResNet-18 for CIFAR-10: a 3x3/1 convolution stem with no
  max-pool, the same four BasicBlock stages at 64/128/256/512 channels, 10 classes, 3x32x32 inputs.
* ``resnet56`` is the CIFAR ResNet of He et al. (2016): a 3x3 convolution stem to 16 channels and
  three stages of 9 BasicBlocks at 16/32/64 channels, 10 classes, 3x32x32 inputs. The paper's
  CIFAR models use identity shortcuts with zero padding (option A); we use a 1x1 convolution plus
  BatchNorm projection where the shape changes (option B), as in the other ResNets here, so the
  exported graph needs no padding or strided-slice shortcut. This adds 2,752 parameters to the
  853,018 of option A.

Every shortcut that changes shape (stride 2 or a new channel count) is a 1x1 convolution with the
block's stride followed by BatchNorm; other shortcuts are the identity. Activations are not
in-place, so every intermediate tensor stays a distinct tensor in the exported graph.
"""

from __future__ import annotations

from typing import ClassVar

import torch
from torch import nn

__all__ = ["BasicBlock", "Bottleneck", "ResNet", "resnet18", "resnet18_cifar", "resnet50", "resnet56"]


def _shortcut(in_channels: int, out_channels: int, *, stride: int) -> nn.Module:
    """Return the identity, or a 1x1 convolution plus BatchNorm projection when the shape changes."""
    if stride == 1 and in_channels == out_channels:
        return nn.Identity()
    return nn.Sequential(
        nn.Conv2d(in_channels, out_channels, kernel_size=1, stride=stride, bias=False),
        nn.BatchNorm2d(out_channels),
    )


class BasicBlock(nn.Module):
    """Two 3x3 convolutions with BatchNorm and a residual connection; the first carries the stride."""

    expansion: ClassVar[int] = 1

    def __init__(self, in_channels: int, channels: int, *, stride: int) -> None:
        """Create the block.

        Args:
            in_channels: Channels of the block input.
            channels: Channels of both convolutions and of the block output.
            stride: Stride of the first convolution and of the projection shortcut.
        """
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, channels, kernel_size=3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.relu1 = nn.ReLU(inplace=False)
        self.conv2 = nn.Conv2d(channels, channels, kernel_size=3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)
        self.shortcut = _shortcut(in_channels, channels, stride=stride)
        self.relu2 = nn.ReLU(inplace=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Apply the block to a (N, C, H, W) tensor."""
        out = self.relu1(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu2(out + self.shortcut(x))


class Bottleneck(nn.Module):
    """1x1 reduce, 3x3 (carrying the stride), 1x1 expand by 4, with BatchNorm and a residual connection."""

    expansion: ClassVar[int] = 4

    def __init__(self, in_channels: int, channels: int, *, stride: int) -> None:
        """Create the block.

        Args:
            in_channels: Channels of the block input.
            channels: Width of the 1x1 and 3x3 convolutions; the output has ``4 * channels``.
            stride: Stride of the 3x3 convolution and of the projection shortcut.
        """
        super().__init__()
        out_channels = channels * self.expansion
        self.conv1 = nn.Conv2d(in_channels, channels, kernel_size=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.relu1 = nn.ReLU(inplace=False)
        self.conv2 = nn.Conv2d(channels, channels, kernel_size=3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)
        self.relu2 = nn.ReLU(inplace=False)
        self.conv3 = nn.Conv2d(channels, out_channels, kernel_size=1, bias=False)
        self.bn3 = nn.BatchNorm2d(out_channels)
        self.shortcut = _shortcut(in_channels, out_channels, stride=stride)
        self.relu3 = nn.ReLU(inplace=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Apply the block to a (N, C, H, W) tensor."""
        out = self.relu1(self.bn1(self.conv1(x)))
        out = self.relu2(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu3(out + self.shortcut(x))


def _stages(
    block: type[BasicBlock | Bottleneck], *, in_channels: int, widths: tuple[int, ...], depths: tuple[int, ...]
) -> tuple[nn.Sequential, int]:
    """Stack residual stages; every stage after the first halves the resolution in its first block.

    Args:
        block: Residual block type used in every stage.
        in_channels: Channels entering the first stage.
        widths: Block width of each stage.
        depths: Number of blocks in each stage.

    Returns:
        The stages and the number of channels they output.
    """
    stages: list[nn.Module] = []
    for index, (width, depth) in enumerate(zip(widths, depths, strict=True)):
        blocks: list[nn.Module] = []
        for position in range(depth):
            stride = 2 if index > 0 and position == 0 else 1
            blocks.append(block(in_channels, width, stride=stride))
            in_channels = width * block.expansion
        stages.append(nn.Sequential(*blocks))
    return nn.Sequential(*stages), in_channels


class ResNet(nn.Module):
    """A stem, residual stages, global average pooling and a linear classifier."""

    def __init__(self, *, stem: nn.Sequential, stages: nn.Sequential, features: int, num_classes: int) -> None:
        """Create the network.

        Args:
            stem: Layers applied to the image before the first stage.
            stages: Residual stages.
            features: Channels the last stage outputs.
            num_classes: Outputs of the final linear layer.
        """
        super().__init__()
        self.stem = stem
        self.stages = stages
        self.pool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(features, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Map images (N, 3, H, W) to logits (N, num_classes)."""
        features = self.stages(self.stem(x))
        return self.fc(torch.flatten(self.pool(features), 1))


def _imagenet_stem() -> nn.Sequential:
    """7x7/2 convolution to 64 channels, BatchNorm, ReLU, 3x3/2 max-pool."""
    return nn.Sequential(
        nn.Conv2d(3, 64, kernel_size=7, stride=2, padding=3, bias=False),
        nn.BatchNorm2d(64),
        nn.ReLU(inplace=False),
        nn.MaxPool2d(kernel_size=3, stride=2, padding=1),
    )


def _cifar_stem(channels: int) -> nn.Sequential:
    """3x3/1 convolution, BatchNorm, ReLU; no max-pool."""
    return nn.Sequential(
        nn.Conv2d(3, channels, kernel_size=3, stride=1, padding=1, bias=False),
        nn.BatchNorm2d(channels),
        nn.ReLU(inplace=False),
    )


def resnet18() -> ResNet:
    """ResNet-18 with the ImageNet stem: 3x224x224 inputs, 1000 classes, 11,689,512 parameters."""
    stages, features = _stages(BasicBlock, in_channels=64, widths=(64, 128, 256, 512), depths=(2, 2, 2, 2))
    return ResNet(stem=_imagenet_stem(), stages=stages, features=features, num_classes=1000)


def resnet18_cifar() -> ResNet:
    """ResNet-18 with the CIFAR stem: 3x32x32 inputs, 10 classes, 11,173,962 parameters."""
    stages, features = _stages(BasicBlock, in_channels=64, widths=(64, 128, 256, 512), depths=(2, 2, 2, 2))
    return ResNet(stem=_cifar_stem(64), stages=stages, features=features, num_classes=10)


def resnet50() -> ResNet:
    """ResNet-50 (v1.5) with the ImageNet stem: 3x224x224 inputs, 1000 classes, 25,557,032 parameters."""
    stages, features = _stages(Bottleneck, in_channels=64, widths=(64, 128, 256, 512), depths=(3, 4, 6, 3))
    return ResNet(stem=_imagenet_stem(), stages=stages, features=features, num_classes=1000)


def resnet56() -> ResNet:
    """CIFAR ResNet-56 with projection shortcuts: 3x32x32 inputs, 10 classes, 855,770 parameters."""
    stages, features = _stages(BasicBlock, in_channels=16, widths=(16, 32, 64), depths=(9, 9, 9))
    return ResNet(stem=_cifar_stem(16), stages=stages, features=features, num_classes=10)
