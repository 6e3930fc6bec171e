"""The MONET figures drawn from small synthetic inputs: no axis has tick labels that overlap once drawn.

``save_figure`` measures every drawn tick label (``overlapping_tick_labels``) and logs a warning per overlapping pair;
each test draws one figure and asserts there is none.
"""

from __future__ import annotations

import itertools
import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from traincost.analysis.edge_tpu import edge_tpu_resources
from traincost.plots.fusion import module_blocks, plot_fused_graph, plot_fusion_strategies
from traincost.plots.hardware_sweeps import overlapping_tick_labels, plot_compute_resources, plot_energy_latency
from traincost.plots.memory import plot_memory_breakdown

EDGE_GRID = {"x_pes": [1, 4], "y_pes": [1, 4], "simd_units": [16, 64], "lanes": [1, 4], "local_memory_mb": [0.5, 2]}


def _edge_sweep(latency_spread: float, energy_spread: float) -> pd.DataFrame:
    """An Edge TPU grid whose latency and energy span ``*_spread`` times their smallest value (1.1: a tenth of a decade)."""
    rows = pd.DataFrame(list(itertools.product(*EDGE_GRID.values())), columns=list(EDGE_GRID))
    compute = rows["simd_units"] * rows["lanes"] * rows["x_pes"] * rows["y_pes"]
    share = np.log(compute) / np.log(compute).max()
    return rows.assign(
        latency_cycles=2.4e5 * latency_spread ** (1 - share),
        energy_pj=3.1e9 * energy_spread**share,
        buffer_bandwidth=np.where(rows["lanes"] > 1, 16384, 8192),
    )


def _overlaps(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "tick labels overlap" in r.getMessage()]


def test_the_check_finds_labels_that_overlap() -> None:
    fig = Figure(figsize=(2, 2))
    ax = fig.subplots()
    ax.set_xticks(range(6), [f"a long strategy name {i}" for i in range(6)])
    assert overlapping_tick_labels(fig)
    ax.tick_params(axis="x", rotation=90)
    assert not overlapping_tick_labels(fig)


# spreads of the sweeps: within a tenth of a decade (Figure 1's inference energy), a decade, five decades
SPREADS = [(1.3, 1.1), (12.0, 8.0), (3e4, 1e5)]


@pytest.mark.parametrize(("latency_spread", "energy_spread"), SPREADS)
def test_figure1_and_8_ticks_do_not_overlap(
    latency_spread: float, energy_spread: float, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    steps = [(step, edge_tpu_resources(_edge_sweep(latency_spread, energy_spread))) for step in ("inference", "training")]
    plot_energy_latency(steps, hue="total_compute", hue_label="U·L·n_PEs", outputs=[tmp_path / "f1.png"], title="Figure 1")
    plot_compute_resources(steps, outputs=[tmp_path / "f8.png"], title="Figure 8")
    assert _overlaps(caplog) == []


def test_figure1_labels_each_log_axis_at_least_twice_and_its_legend_in_whole_numbers(tmp_path: Path) -> None:
    captured: list[Figure] = []
    steps = [(step, edge_tpu_resources(_edge_sweep(1.3, 1.1))) for step in ("inference", "training")]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("traincost.plots.hardware_sweeps.save_figure", lambda fig, outputs: captured.append(fig))
        plot_energy_latency(steps, hue="total_compute", hue_label="U·L·n_PEs", outputs=[tmp_path / "f1.png"], title="F1")
    (fig,) = captured
    overlapping_tick_labels(fig)  # draws the figure, so that the ticks are placed
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            low, high = sorted(axis.get_view_interval())
            shown = [t for t in axis.get_major_ticks() if low <= t.get_loc() <= high and t.label1.get_text()]
            assert len(shown) >= 2, (ax.get_title(), [t.label1.get_text() for t in shown])
        legend = [text.get_text() for text in ax.get_legend().get_texts()]
        assert not any(label.endswith(".0") for label in legend), legend


def test_figure9_ticks_do_not_overlap(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    steps = [(step, _edge_sweep(2.0, 1.5)) for step in ("inference", "training")]
    plot_energy_latency(
        steps, hue="buffer_bandwidth", hue_label="bandwidth", outputs=[tmp_path / "f9.png"], title="Figure 9", log_hue=False
    )
    assert _overlaps(caplog) == []


def _strategies(limits: range, *, not_fitting: tuple[str, ...]) -> pd.DataFrame:
    names = ["base", "manual", *(f"limit{n}" for n in limits), *(f"limit{n}_free" for n in limits)]
    rows = [
        {
            "strategy": name,
            "step": step,
            "fusion_fits": name not in not_fitting,
            "latency_cycles": 1e6 * (1 + i / 10),
            "energy_pj": 4e10 * (1 + i / 20),
        }
        for i, name in enumerate(names)
        for step in ("inference", "training")
    ]
    return pd.DataFrame(rows)


def test_figure10_strategy_labels_do_not_overlap(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    table = _strategies(range(4, 9), not_fitting=("manual", "limit4", "limit4_free"))
    plot_fusion_strategies(table, [tmp_path / "f10.png"], title="Figure 10")
    assert _overlaps(caplog) == []


@dataclass(frozen=True)
class _Ops:
    """What the fused-graph picture reads of an op table: op ids and phases."""

    op: np.ndarray
    phase: np.ndarray

    def __len__(self) -> int:
        return len(self.op)


def _resnet_like_step() -> tuple[_Ops, list[str]]:
    """Ten blocks of five modules, 40 forward ops each, their backward in reverse block order, one optimizer op per block."""
    blocks = ["stem/stem.0/Conv", *(f"stages/stages.{s}/stages.{s}.{b}" for s in range(4) for b in range(2)), "fc/Gemm"]
    modules = ["conv1", "bn1", "relu1", "conv2", "bn2"]
    forward = [f"{block}/{modules[i % 5]}/Op" for block in blocks for i in range(40)]
    backward = [f"{block}/{modules[i % 5]}/Op" for block in reversed(blocks) for i in range(45)]
    optimizer = [f"{block}/conv1/Op" for block in blocks]
    layers = forward + backward + optimizer
    phases = ["forward"] * len(forward) + ["backward"] * len(backward) + ["optimizer"] * len(optimizer)
    return _Ops(op=np.arange(len(layers)), phase=np.array(phases)), layers


def test_fused_graph_rows_are_module_blocks_and_ticks_do_not_overlap(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    table, layers = _resnet_like_step()
    assert list(dict.fromkeys(module_blocks(layers)))[:3] == ["stem.0/Conv", "stages.0.0", "stages.0.1"]
    groups = [list(range(start, start + 4)) for start in range(0, len(table) - 4, 6)]
    plot_fused_graph(table, layers, groups, [tmp_path / "fused.png"], title="training, limit 4")  # type: ignore[arg-type]
    assert (tmp_path / "fused.png").stat().st_size > 10_000
    forward = table.phase == "forward"  # inference: one panel
    inference = _Ops(op=table.op[forward], phase=table.phase[forward])
    plot_fused_graph(inference, layers[: len(inference)], groups[:10], [tmp_path / "inference.png"], title="inference, limit 8")  # type: ignore[arg-type]
    assert _overlaps(caplog) == []


@pytest.fixture(autouse=True)
def _warnings_logged(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="traincost.plots")


def test_figure3_ticks_do_not_overlap(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The full config's four Figure 3 workloads (ResNet-50, batch 1 and 8, SGD and Adam), each category's bytes."""
    workloads = [f"resnet50 batch {b} {o}" for b in (1, 8) for o in ("sgd", "adam")]
    sizes = {"weights": 1.0e8, "gradients": 1.0e8, "optimizer_states": 2.0e8, "saved_activations": 8.6e7, "other": 5e6}
    table = pd.DataFrame(
        [
            {"workload": w, "category": c, "ours_at_peak_bytes": b, "ours_total_bytes": b, "torch_bytes": b * 1.01}
            for w in workloads
            for c, b in sizes.items()
        ]
    )
    plot_memory_breakdown(table, [tmp_path / "figure3.png"])
    assert (tmp_path / "figure3.png").stat().st_size > 0
    assert _overlaps(caplog) == []
