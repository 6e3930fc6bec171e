"""traincost.models.library: torchvision's and timm's networks by name with random weights, as factory paths of
``traincost cost``; a library that is not installed is named, with the version to install."""

from __future__ import annotations

import sys

import pytest
import torch

from traincost import models
from traincost.errors import ConfigError
from traincost.models.library import timm_model, torchvision_model
from traincost.signature import InputSpec


# building imports torchvision and timm (5 to 10 s): slow; the default suite builds a timm network through
# examples.third_party (tests/integration/test_third_party_networks.py, vit_tiny)
@pytest.mark.slow
@pytest.mark.parametrize(("factory", "name"), [(torchvision_model, "resnet18"), (timm_model, "resnet10t")])
def test_a_library_network_is_built_by_name_with_its_options(factory: object, name: str) -> None:
    torch.manual_seed(0)
    model = factory(name, num_classes=3)
    assert model(torch.randn(2, 3, 32, 32)).shape == (2, 3)


@pytest.mark.slow
def test_a_factory_path_of_the_package_builds_the_named_network() -> None:
    spec = InputSpec("input", (3, 32, 32), "float32")
    arch = models.factory_architecture(
        "traincost.models.library:torchvision_model", inputs=(spec,), kwargs={"name": "resnet18", "num_classes": 4}
    )
    assert arch.name == "torchvision_model"
    assert models.build_model(arch)(torch.randn(2, 3, 32, 32)).shape == (2, 4)


@pytest.mark.parametrize(
    ("factory", "package", "pinned"), [(torchvision_model, "torchvision", "0.28.0"), (timm_model, "timm", "1.0.31")]
)
def test_a_library_that_is_not_installed_is_named(
    factory: object, package: str, pinned: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, package, None)  # `import package` then fails as where it is not installed
    with pytest.raises(ConfigError, match=rf"library:{factory.__name__} needs {package}, .*pip install {package}=={pinned}"):
        factory("resnet18")
