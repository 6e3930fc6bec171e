"""Tiny-YOLOv3 (Darknet ``yolov3-tiny.cfg``): 3x416x416 inputs, 80 classes, 8,852,366 parameters.

Layers, following the Darknet configuration file:

* backbone: 3x3 convolutions (no bias) + BatchNorm + LeakyReLU(0.1) at 16, 32, 64, 128, 256
  channels, each but the last followed by a 2x2/2 max-pool; the 256-channel map at 26x26 is
  routed to the second head. Then a 2x2/2 max-pool, a 512-channel convolution, zero padding of
  one column on the right and one row at the bottom (the values of ``nn.ZeroPad2d((0, 1, 0, 1))``)
  with a 2x2 max-pool of stride 1 (size kept at 13x13), a 1024-channel 3x3 and a 256-channel 1x1
  convolution.
* head 1 (13x13): a 512-channel 3x3 convolution and a 1x1 convolution with bias to
  ``255 = 3 * (5 + 80)`` channels (3 anchors, each with box, objectness and 80 class logits).
* head 2 (26x26): the 256-channel 13x13 map through a 128-channel 1x1 convolution, a nearest x2
  upsample, concatenation with the routed 26x26 map (384 channels), a 256-channel 3x3 convolution
  and a 1x1 convolution with bias to 255 channels.

No decoding or post-processing is done. Two layers are written with concatenations so that the
legacy ONNX exporter (with constant folding off, as for training) emits a graph of static shapes
made of Unsqueeze, Concat and Reshape only:

* the nearest x2 upsample is ``x[:, :, :, None, :, None]`` concatenated with itself along both new
  axes, then reshaped; ``nn.Upsample`` would export a ``Resize`` op, whose gradient ONNX Runtime
  Training handles poorly, and ``expand`` a run-time shape computation;
* the zero padding concatenates zero tensors; ``nn.ZeroPad2d`` exports the pad amounts as a
  run-time computation, which hides every later tensor shape from ONNX shape inference.

Loss proxy: so that every model in the zoo trains with
``cross_entropy(model(x), labels)``, :meth:`TinyYOLOv3.forward` returns a "per-cell class loss"
view of the heads. Each head (B, 255, H, W) is viewed as (B, 3, 85, H, W), permuted to
(B, 3, H, W, 85) and flattened to (-1, 85); the two heads are concatenated, giving
(B * 3 * (13 * 13 + 26 * 26), 85) = (2535 B, 85) rows at 416x416. Labels are class ids in
``[0, 80)``, one per anchor and cell. This is not the YOLO loss (no box regression, objectness or
target assignment); it keeps the forward and backward operators and tensor sizes of training while
the cost of the true loss, a small element-wise computation on the head outputs, is left out.
:meth:`TinyYOLOv3.heads` returns the raw head tensors.
"""

from __future__ import annotations

from typing import Final

import torch
from torch import nn

__all__ = ["ANCHORS_PER_HEAD", "NUM_CLASSES", "TinyYOLOv3", "ZeroPadRightBottom", "tiny_yolov3"]

NUM_CLASSES: Final[int] = 80
"""Object classes (COCO)."""

ANCHORS_PER_HEAD: Final[int] = 3
"""Anchor boxes predicted per cell by each head."""

_CELL_OUTPUTS: Final[int] = 5 + NUM_CLASSES


def _conv(in_channels: int, out_channels: int, *, kernel_size: int) -> nn.Sequential:
    """Darknet convolution: stride 1, same padding, no bias, BatchNorm, LeakyReLU(0.1)."""
    return nn.Sequential(
        nn.Conv2d(in_channels, out_channels, kernel_size=kernel_size, padding=kernel_size // 2, bias=False),
        nn.BatchNorm2d(out_channels),
        nn.LeakyReLU(negative_slope=0.1, inplace=False),
    )


def _upsample_nearest_2x(x: torch.Tensor) -> torch.Tensor:
    """Nearest-neighbour x2 upsampling of (N, C, H, W) using only indexing, concatenation and reshape."""
    n, c, h, w = x.shape
    cells = x[:, :, :, None, :, None]
    cells = torch.cat((cells, cells), dim=5)
    cells = torch.cat((cells, cells), dim=3)
    return cells.reshape(n, c, 2 * h, 2 * w)


class ZeroPadRightBottom(nn.Module):
    """Append one column of zeros on the right and one row at the bottom of (N, C, H, W).

    Same values as ``nn.ZeroPad2d((0, 1, 0, 1))``, written as concatenations so that the exported
    ONNX graph keeps static shapes.
    """

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Return the padded (N, C, H + 1, W + 1) tensor."""
        x = torch.cat((x, torch.zeros_like(x[:, :, :, :1])), dim=3)
        return torch.cat((x, torch.zeros_like(x[:, :, :1, :])), dim=2)


def _cells(head: torch.Tensor) -> torch.Tensor:
    """View a head (B, 3 * 85, H, W) as one row of 85 logits per anchor and cell."""
    b, _, h, w = head.shape
    cells = head.view(b, ANCHORS_PER_HEAD, _CELL_OUTPUTS, h, w).permute(0, 1, 3, 4, 2)
    return cells.reshape(-1, _CELL_OUTPUTS)


class TinyYOLOv3(nn.Module):
    """Tiny-YOLOv3 backbone and two detection heads, with the per-cell class loss view as output."""

    def __init__(self) -> None:
        """Create the network with 80 classes and 3 anchors per head."""
        super().__init__()
        head_channels = ANCHORS_PER_HEAD * _CELL_OUTPUTS
        self.backbone = nn.Sequential(
            _conv(3, 16, kernel_size=3),
            nn.MaxPool2d(kernel_size=2, stride=2),
            _conv(16, 32, kernel_size=3),
            nn.MaxPool2d(kernel_size=2, stride=2),
            _conv(32, 64, kernel_size=3),
            nn.MaxPool2d(kernel_size=2, stride=2),
            _conv(64, 128, kernel_size=3),
            nn.MaxPool2d(kernel_size=2, stride=2),
            _conv(128, 256, kernel_size=3),
        )
        self.neck = nn.Sequential(
            nn.MaxPool2d(kernel_size=2, stride=2),
            _conv(256, 512, kernel_size=3),
            ZeroPadRightBottom(),
            nn.MaxPool2d(kernel_size=2, stride=1),
            _conv(512, 1024, kernel_size=3),
            _conv(1024, 256, kernel_size=1),
        )
        self.head_coarse = nn.Sequential(
            _conv(256, 512, kernel_size=3),
            nn.Conv2d(512, head_channels, kernel_size=1),
        )
        self.lateral = _conv(256, 128, kernel_size=1)
        self.head_fine = nn.Sequential(
            _conv(128 + 256, 256, kernel_size=3),
            nn.Conv2d(256, head_channels, kernel_size=1),
        )

    def heads(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Return the raw head outputs for images (B, 3, H, W), H and W multiples of 32.

        Args:
            x: Input images.

        Returns:
            The coarse head (B, 255, H/32, W/32) and the fine head (B, 255, H/16, W/16).
        """
        routed = self.backbone(x)
        neck = self.neck(routed)
        upsampled = _upsample_nearest_2x(self.lateral(neck))
        fine = self.head_fine(torch.cat((upsampled, routed), dim=1))
        return self.head_coarse(neck), fine

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Map images (B, 3, H, W) to per-cell logits (B * 3 * (H*W/1024 + H*W/256), 85)."""
        coarse, fine = self.heads(x)
        return torch.cat((_cells(coarse), _cells(fine)), dim=0)


def tiny_yolov3() -> TinyYOLOv3:
    """Build Tiny-YOLOv3 for 3x416x416 inputs, 80 classes and 3 anchors per head."""
    return TinyYOLOv3()
