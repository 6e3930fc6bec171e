"""The benches a user runs by hand take what they list: ZigZag's bundled hardware with the mapping ZigZag ships for it."""

from __future__ import annotations

import importlib

import pytest

from tests.reliability.conftest import REPO


def test_the_crosscheck_bench_gives_zigzag_the_bundled_mapping_of_every_hardware_it_accepts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """ZigZag ships meta_prototype's mapping as ``meta_prototype_like.yaml``; the bench looked for ``meta_prototype.yaml``
    (a FileNotFoundError traceback) where the importer found the right one."""
    monkeypatch.syspath_prepend(str(REPO / "bench"))
    bench = importlib.import_module("zigzag_crosscheck")
    monkeypatch.setattr(bench, "zigzag_inputs", lambda: REPO / "tests/fixtures/hardware/zigzag")
    accepted = bench.importable()
    assert {"meta_prototype", "tpu_like", "eyeriss_like"} <= set(accepted)
    for hardware in accepted:
        assert bench.zigzag_mapping(hardware).is_file(), hardware
    assert bench.zigzag_mapping("meta_prototype").name == "meta_prototype_like.yaml"
