"""A damaged result is found and rebuilt: ``traincost check-results`` reads every table, graph and figure of a
results folder as the next rule would, lists what is cut short or overwritten, and with ``--remove`` deletes it so
that Snakemake (which rebuilds only missing or outdated outputs) rebuilds it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import onnx
import pandas as pd
from matplotlib.figure import Figure
from onnx import TensorProto, helper

from tests.reliability.conftest import cli


def _results(root: Path) -> dict[str, Path]:
    """One whole file of each kind the workflow writes."""
    root.mkdir(parents=True)
    (root / "logs").mkdir()
    files = {suffix: root / "study" / f"table.{suffix}" for suffix in ("parquet", "csv", "json", "png", "pdf", "onnx", "html")}
    files["parquet"].parent.mkdir()
    pd.DataFrame({"a": [1, 2, 3]}).to_parquet(files["parquet"])
    pd.DataFrame({"a": [1, 2, 3]}).to_csv(files["csv"], index=False)
    files["json"].write_text(json.dumps({"groups": [[0, 1]]}))
    figure = Figure()
    figure.add_subplot().plot([0, 1])
    figure.savefig(files["png"])
    figure.savefig(files["pdf"])
    node = helper.make_node("Relu", ["x"], ["y"])
    value = [helper.make_tensor_value_info(name, TensorProto.FLOAT, [1]) for name in "xy"]
    onnx.save(helper.make_model(helper.make_graph([node], "g", value[:1], value[1:])), files["onnx"])
    files["html"].write_text("<!doctype html><html><body>table</body></html>\n")
    (root / "logs" / "job.log").write_bytes(os.urandom(64))  # logs are not results
    return files


def test_a_whole_results_folder_passes(tmp_path: Path) -> None:
    _results(tmp_path / "results")
    result = cli("check-results", "--results", tmp_path / "results")
    assert result.returncode == 0, result.stderr
    assert "7 files checked" in result.stdout and "none damaged" in result.stdout


def test_cut_short_or_overwritten_files_are_listed_and_removed(tmp_path: Path) -> None:
    files = _results(tmp_path / "results")
    for suffix in ("parquet", "png", "pdf", "html"):  # cut in half
        data = files[suffix].read_bytes()
        files[suffix].write_bytes(data[: len(data) // 2])
    for suffix in ("onnx", "json"):  # random bytes, as a final table overwritten
        files[suffix].write_bytes(os.urandom(256))
    result = cli("check-results", "--results", tmp_path / "results")
    assert result.returncode == 2
    listed = {line.split(": ", 2)[1] for line in result.stdout.splitlines() if line.startswith("damaged: ")}
    damaged = {str(files[s]) for s in ("parquet", "png", "pdf", "html", "onnx", "json")}
    assert listed == damaged, result.stdout
    assert "6 of 7 files" in result.stderr and "--remove" in result.stderr
    assert cli("check-results", "--results", tmp_path / "results", "--remove").returncode == 0
    assert {str(p) for p in files.values() if p.exists()} == {str(files["csv"])}
    assert cli("check-results", "--results", tmp_path / "results").returncode == 0
