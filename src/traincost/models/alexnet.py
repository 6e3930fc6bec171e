"""AlexNet in the torchvision layout: 3x224x224 inputs, 1000 classes, 61,100,840 parameters.

Five convolutions with ReLU and three 3x3/2 max-pools, ``AdaptiveAvgPool2d((6, 6))``, then a
classifier of two 4096-wide linear layers with ReLU and a 1000-way linear layer. Dropout before
each of the two hidden linear layers is the ``dropout`` option; with ``dropout=0.0`` the model holds
no Dropout module at all, so the exported training graph is deterministic. Activations are not
in-place.
"""

from __future__ import annotations

import torch
from torch import nn

from traincost.models._validation import check_dropout

__all__ = ["AlexNet", "alexnet"]


class AlexNet(nn.Module):
    """AlexNet feature extractor, adaptive average pooling and classifier."""

    def __init__(self, *, dropout: float, num_classes: int) -> None:
        """Create the network.

        Args:
            dropout: Dropout probability before each hidden linear layer; 0 leaves Dropout out.
            num_classes: Outputs of the final linear layer.
        """
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 64, kernel_size=11, stride=4, padding=2),
            nn.ReLU(inplace=False),
            nn.MaxPool2d(kernel_size=3, stride=2),
            nn.Conv2d(64, 192, kernel_size=5, padding=2),
            nn.ReLU(inplace=False),
            nn.MaxPool2d(kernel_size=3, stride=2),
            nn.Conv2d(192, 384, kernel_size=3, padding=1),
            nn.ReLU(inplace=False),
            nn.Conv2d(384, 256, kernel_size=3, padding=1),
            nn.ReLU(inplace=False),
            nn.Conv2d(256, 256, kernel_size=3, padding=1),
            nn.ReLU(inplace=False),
            nn.MaxPool2d(kernel_size=3, stride=2),
        )
        self.avgpool = nn.AdaptiveAvgPool2d((6, 6))
        layers: list[nn.Module] = []
        in_features = 256 * 6 * 6
        for _ in range(2):
            if dropout > 0.0:
                layers.append(nn.Dropout(p=dropout))
            layers += [nn.Linear(in_features, 4096), nn.ReLU(inplace=False)]
            in_features = 4096
        layers.append(nn.Linear(in_features, num_classes))
        self.classifier = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Map images (N, 3, H, W) to logits (N, num_classes)."""
        features = self.avgpool(self.features(x))
        return self.classifier(torch.flatten(features, 1))


def alexnet(*, dropout: float = 0.5) -> AlexNet:
    """Build AlexNet for 3x224x224 inputs and 1000 classes.

    Args:
        dropout: Dropout probability in the classifier, ``0 <= dropout < 1``; 0 builds no Dropout.

    Returns:
        The model, initialised from torch's global random state.

    Raises:
        ConfigError: ``dropout`` is outside ``[0, 1)``.
    """
    return AlexNet(dropout=check_dropout(dropout), num_classes=1000)
