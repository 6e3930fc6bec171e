"""Cross-check the multi-core scheduler against Stream 2.1.1 itself: the same networks, built by Stream's own workload
builders, on Stream's own bundled multi-core accelerators, in Stream's two modes, ours lined up with each.

* **Stream** runs in its own Python 3.12 venv (``bench/.venv-stream``, built here on first use from
  ``bench/crosscheck/requirements-stream.txt`` with pyenv's newest 3.12, else ``python3.12`` on PATH, else ``$PYTHON312``), one
  process per case (``stream_side.py``); its JSON is kept in ``bench/.stream-runs`` (``--runs``) and reused unless
  ``--rerun``, which clears the case's artifacts first (Stream would reuse its cost table, and its time would not be
  its own).
* **Ours** costs the ONNX file Stream costed (every node a forward op, its layer the node's name; int8 tensors) on the
  accelerator ``traincost hardware import stream`` makes of the same file.
* **Modes.** Stream's layer fusion (its default: a fused group of every layer, cut into tiles along the output rows)
  against ours with all ops one fused group (``pipeline_tensor``); Stream's layer by layer (``fusion_cut_points:
  per-layer``: every layer from DRAM to the cores and back) against ours in ``stream_layer_by_layer`` mode (one op at
  a time, split over every instance of its core, nothing kept on chip between ops).
* **Per layer**, ours over Stream: cycles (ours: the op's latency; Stream's: its slowest core's tile latency times the
  tiles) and energy inside the cores (ours: the op's energy less its off-chip bytes at the off-chip link's price;
  Stream's: ZigZag's tile energy on each core times the tiles). **Whole network**: latency (Stream's allocation
  latency) and energy (Stream's: its layers' plus its off-chip accesses').

Usage (in the project's venv; the first run installs Stream, about 2.5 minutes, then 10-70 s per Stream case)::

    .venv/bin/python bench/crosscheck/stream.py                      # every case, both modes; prints the tables
    .venv/bin/python bench/crosscheck/stream.py --cases residual_blocks:tpu_like_quad_core --modes layer_fused
    .venv/bin/python bench/crosscheck/stream.py --docs docs/stream_crosscheck.md   # writes the generated page

``tests/integration/test_stream_crosscheck.py`` (slow) runs one case end to end where Stream's venv can be built.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import onnx
import pandas as pd

from traincost.cost.optable import op_table
from traincost.frontend.onnx.graph import set_model_meta, set_node_meta
from traincost.frontend.onnx.lower import lower
from traincost.hardware import load_hardware
from traincost.hardware.import_stream import stream_hardware
from traincost.hardware.import_zigzag import hardware_yaml_text
from traincost.schedule import SchedulePlan, schedule
from traincost.workload import Workload

BENCH = Path(__file__).resolve().parents[1]
VENV = BENCH / ".venv-stream"
RUNS = BENCH / ".stream-runs"
REQUIREMENTS = Path(__file__).with_name("requirements-stream.txt")
SIDE = Path(__file__).with_name("stream_side.py")
MODES = ("layer_fused", "layer_by_layer")
# (network, Stream accelerator): the two cases the issue measured, a heterogeneous machine, two ResNet-18 stages
CASES = (
    ("residual_blocks", "tpu_like_quad_core"),
    ("stride2_block", "tpu_like_quad_core"),
    ("residual_blocks", "eyeriss_like_quad_core"),
    ("stride2_block", "eyeriss_like_quad_core"),
    ("residual_blocks", "meta_prototype_dual_core_simd_offchip"),
    ("resnet18_stage1", "tpu_like_quad_core"),
    ("resnet18_stage2_downsample", "tpu_like_quad_core"),
)


def stream_python() -> Path:
    """Stream's interpreter, its venv built first if it is missing.

    Raises:
        RuntimeError: no Python 3.12 to build it with, or pip failed (its last lines).
    """
    python = VENV / "bin" / "python"
    if python.is_file():
        return python
    base = _python312()
    if base is None:
        raise RuntimeError("no Python 3.12 (pyenv's, python3.12 on PATH or $PYTHON312) to build Stream's venv with")
    subprocess.run([base, "-m", "venv", str(VENV)], check=True)
    install = [str(python), "-m", "pip", "install", "-q", "-r", str(REQUIREMENTS)]
    done = subprocess.run(install, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        shutil.rmtree(VENV, ignore_errors=True)
        raise RuntimeError(f"installing Stream failed: {done.stderr.strip()[-500:]}")
    return python


def _python312() -> str | None:
    given = os.environ.get("PYTHON312")
    if given:
        return given
    pyenv = shutil.which("pyenv")
    root = subprocess.run([pyenv, "root"], capture_output=True, text=True, check=False).stdout.strip() if pyenv else ""
    found = sorted(Path(root, "versions").glob("3.12*/bin/python3.12")) if root else []
    return str(found[-1]) if found else shutil.which("python3.12")


def stream_hardware_dir(python: Path) -> Path:
    """Where Stream's bundled example accelerators lie in its venv."""
    code = "import pathlib, stream; print(pathlib.Path(stream.__file__).parent / 'inputs/examples/hardware')"
    return Path(subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True).stdout.strip())


def run_stream(python: Path, network: str, hardware: Path, mode: str, *, runs: Path, rerun: bool) -> dict:
    """Stream's result of one case (``stream_side.py``), kept in ``runs`` and read from there unless ``rerun``."""
    out_dir = runs / f"{network}__{hardware.stem}"
    cached = out_dir / f"{mode}.json"
    if cached.is_file() and not rerun:
        return json.loads(cached.read_text())
    shutil.rmtree(out_dir / mode, ignore_errors=True)  # Stream's artifacts of an earlier run, its cost table among them
    out_dir.mkdir(parents=True, exist_ok=True)
    # -P: the script's folder stays off sys.path, where this file would shadow Stream's package
    command = [str(python), "-P", str(SIDE), "--network", network, "--hardware", str(hardware), "--mode", mode]
    done = subprocess.run([*command, "--out-dir", str(out_dir)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"Stream on {network} / {hardware.stem} ({mode}) failed: {done.stderr.strip()[-800:]}")
    cached.write_text(done.stdout)
    return json.loads(done.stdout)


def stream_workload(path: Path) -> Workload:
    """The network Stream costed, as our Workload: every node a forward op named as Stream names the layer."""
    model = onnx.load(path)
    for node in model.graph.node:
        set_node_meta(node, phase="forward", layer=node.name)
    weights = [init.name for init in model.graph.initializer if len(init.dims) > 1]
    set_model_meta(model, stage="inference_step", model=path.stem, parameters=json.dumps(weights))
    return lower(model, source=str(path))


def our_plan(mode: str, ops: Sequence[int]) -> SchedulePlan:
    """Our mode lined up with Stream's ``mode``, each op's mapping chosen for the least latency, as Stream's core model
    has ZigZag choose it (``ZigZagCostEstimator.instantiate_zigzag_flow``: ``MinimalLatencyStage`` around the spatial
    and the temporal mapping generators; ``run_zigzag`` keeps the faster of its two kinds of spatial mapping)."""
    if mode == "layer_fused":
        return SchedulePlan.from_mode("pipeline_tensor", fused=(tuple(ops),), mapping_objective="latency")
    return SchedulePlan.from_mode("stream_layer_by_layer", mapping_objective="latency")


@dataclass(frozen=True)
class Ours:
    """Our schedule of one case: per layer (cycles, energy inside the cores) and the whole network's."""

    layers: pd.DataFrame
    latency_cycles: float
    energy_pj: float


def run_ours(workload: Workload, hardware_file: Path, mode: str) -> Ours:
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / "hardware.yaml"
        bits = 8 * int(workload.tensors.loc[workload.tensors["kind"] == "input", "dtype_bytes"].iloc[0])
        data = stream_hardware(hardware_file, operand_bits=bits)  # Stream sizes operands by the tensors' type
        target.write_text(hardware_yaml_text(data, header=f"# from {hardware_file.name}\n"))
        spec = load_hardware(target)
    table = op_table(workload, phases=("forward",))
    result = schedule(table, spec, our_plan(mode, [int(op) for op in table.op]), per_op=True)
    ops = result.ops.merge(workload.ops[["op", "layer"]], on="op")
    outside = (
        ops["offchip_traffic_bytes"] * 8 * spec.offchip.energy_pj_per_bit[0]
        + ops["bus_traffic_bytes"] * 8 * spec.bus.energy_pj_per_bit[0]
    )
    layers = pd.DataFrame({"layer": ops["layer"], "cycles": ops["latency_cycles"], "energy_pj": ops["energy_pj"] - outside})
    summary = result.summary.iloc[0]
    return Ours(layers, float(summary["latency_cycles"]), float(summary["energy_pj"]))


def compare(stream: dict, ours: Ours) -> tuple[pd.DataFrame, dict[str, float]]:
    """Per layer and for the whole network: ours, Stream's and ours over Stream's."""
    theirs = pd.DataFrame(stream["layers"])[["layer", "cycles", "energy_pj"]]
    both = ours.layers.merge(theirs, on="layer", suffixes=("_ours", "_stream"))
    both["cycles_ratio"] = both["cycles_ours"] / both["cycles_stream"]
    both["energy_ratio"] = both["energy_pj_ours"] / both["energy_pj_stream"]
    stream_energy = theirs["energy_pj"].sum() + stream["offchip"]["energy_pj"]
    whole = {
        "latency_ours": ours.latency_cycles,
        "latency_stream": stream["latency_cycles"],
        "latency_ratio": ours.latency_cycles / stream["latency_cycles"],
        "energy_ours": ours.energy_pj,
        "energy_stream": stream_energy,
        "energy_ratio": ours.energy_pj / stream_energy,
    }
    return both, whole


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="*", help="network:accelerator pairs (default: every case)")
    parser.add_argument("--modes", nargs="*", choices=MODES, default=list(MODES))
    parser.add_argument("--runs", type=Path, default=RUNS, help="where Stream's results are kept (default bench/.stream-runs)")
    parser.add_argument("--rerun", action="store_true", help="run Stream again instead of reading its kept results")
    parser.add_argument("--docs", type=Path, help="also write the tables as a Markdown page")
    parser.add_argument("--json", type=Path, help="also write the tables as JSON (whole networks, per layer)")
    args = parser.parse_args(argv)
    cases = [tuple(case.split(":", 1)) for case in args.cases] if args.cases else list(CASES)
    python = stream_python()
    hardware_dir = stream_hardware_dir(python)
    wholes, per_layer = [], []
    for network, accelerator in cases:
        hardware_file = hardware_dir / f"{accelerator}.yaml"
        for mode in args.modes:
            stream = run_stream(python, network, hardware_file, mode, runs=args.runs, rerun=args.rerun)
            ours = run_ours(stream_workload(Path(stream["onnx"])), hardware_file, mode)
            layers, whole = compare(stream, ours)
            wholes.append({"network": network, "accelerator": accelerator, "mode": mode, **whole, "stream_s": stream["seconds"]})
            per_layer.append(layers.assign(network=network, accelerator=accelerator, mode=mode))
    whole_table = pd.DataFrame(wholes)
    layer_table = pd.concat(per_layer, ignore_index=True)
    with pd.option_context("display.width", 250, "display.max_rows", 500, "display.float_format", "{:.3g}".format):
        print(whole_table.to_string(index=False))
        print(layer_table.to_string(index=False))
    if args.json:
        tables = {"whole": whole_table.to_dict("records"), "layers": layer_table.to_dict("records")}
        args.json.write_text(json.dumps(tables, indent=1))
    if args.docs:
        args.docs.write_text(_page(whole_table, layer_table))
        print(f"wrote {args.docs}")


# What differs between the two, each read in both codes (Stream 2.1.1's files named; the page's tables measure them)
TRACED = """\
- **Fill, drain and the steady state of a fused group.** Stream solves a fused group's tiles as a steady-state
  pipeline whose latency is `iterations x per_iteration - (iterations - 1) x overlap + fill`
  (`stream/opt/allocation/constraint_optimization/families/overlap.py`, `Overlap.objective`); the fill is the time the
  tensors a run holds in one buffer take to arrive, sharing each path and the off-chip port (`_resident_fill`), plus
  the systolic arrays' drain along the longest chain of layers (`_drain`). Ours has each member of a fused group hold
  its weights in one buffer and start its first tile once they are in (the per-op table's `fill_cycles`), a consumer
  start on its producer's first tile and end one of its own tiles after it. What ours leaves out: Stream's iteration
  runs its slots one after another, the transfers between cores among them (on its links, see below), and overlaps the
  next iteration only as far as their resources allow (the residual blocks on tpu_like: 6,404 cycles an iteration,
  3,072 from one iteration to the next, `allocation/reports/slot_latency_breakdown.yaml`), where ours overlaps any two
  ops on different cores; and the systolic drain (tens of cycles a layer).
- **Splitting an op across cores.** Stream splits a convolution's output rows across the cores it gives it (the
  group's `mapping.yaml`: `inter_core_tiling: D2`, the output rows in its ONNX parser's naming,
  `stream/parser/onnx/conv.py`). Ours takes per op the better, by the mapping objective, of its output channels
  and its output rows with their halo (the per-op table's `rows_split`): here the rows win for the stride-2 block's
  three convolutions on eyeriss_like and for the 1x1 stride-2 shortcuts on tpu_like; elsewhere a share of the
  output channels fills the arrays as well and keeps each core to its share of the weights.
- **A fused layer is costed tile by tile in Stream, whole in ours.** Stream has ZigZag map each tile of a fused layer
  (two output rows of the residual blocks) on its own (`CoreCostEstimationStage`, one `ComputationNode` per tile); ours
  maps the op's share of a core once, its partial sums leaving the array every step of the reduction where it latches
  the inputs over the output channels (`traincost.cost.core.orders.latched_column_tiles`). Per convolution on tpu_like ours
  costs about twice Stream's energy inside the core in layer-fused mode and close to it layer by layer, where Stream's
  tiles are whole layers.
- **Layer by layer is still tiled in Stream.** With `fusion_cut_points: per-layer` each layer is its own group but is
  still cut into intra-core tiles (`fusion_splits`, e.g. `{z2: 2, z4: 2}` for a convolution), each mapped by ZigZag
  for the least latency (`MinimalLatencyStage`); on meta_prototype and eyeriss_like these tiles map far worse than
  the whole layer (meta_prototype: a quarter of a convolution takes 25,121 cycles there, the whole convolution 26,768
  in the layer-fused run), which ours, mapping whole ops, does not reproduce.
- **Where a core's boundary lies.** Ours charges every byte that crosses a core's boundary in the top memory it
  arrives in and leaves from; Stream's core energy is ZigZag's loop nest inside the core, and its transfers are the
  off-chip core's accesses and the links' `unit_energy_cost` (0 in every bundled example). So an element-wise layer
  costs the same inside the core in both when its operands stay on the core (layer-fused) and about twice in ours
  layer by layer.
- **Links.** Stream's point-to-point links between cores of two kinds are one link in ours, their bandwidths summed
  (tpu_like_quad_core: 4 links of 32 bits a cycle from the compute cores to the SIMD core, 16 B a cycle between our
  `tpu_like` and `simd`), which carries what one reads out of the other's top memory; its bus carries the off-chip
  traffic in both. The mesh among instances of one kind has no counterpart: our instances of a kind share each op
  and do not pass tensors between them. On these cases no latency moves: fused intermediates stay in a core's own
  memory and, layer by layer, every tensor goes through DRAM.
- **A register read once for the cycles its data stays at the MAC.** ZigZag, inside Stream, counts one read of an
  innermost memory for as long as the same data stays at its output pins (`zigzag/mapping/mapping.py`,
  `Mapping.calc_data_access`: `access_same_data_considered_as_no_access`, on in `CostModelEvaluationStage`); ours
  counts a read per MAC. On the 1x1 stride-2 shortcuts on tpu_like each weight in a PE's `rf_128B` feeds the
  output pixels of a tile (64 cycles in Stream's tiles of the stride-2 block): ZigZag charges it once, ours 64 times
  (50 nJ of our 113.5 a core, at 0.095 pJ a read). Counted as ZigZag counts it, ours would be about 0.74 of Stream's
  inside the core instead of 1.30: the other terms, the SRAM's above all, differ the other way and are not itemised.
- **Stream computes a fused tile's halo again.** A tile of a layer whose consumer slides a window over it spans the
  window, not the step: its tensors carry the halo, `window - step` along the fused axis
  (`stream/workload/fusion/analysis.py`, `FusionWindow.halo`), and ZigZag costs the tile whole. In ResNet-18's
  downsampling block, layer-fused, each of the 14 tiles of the stride-2 convolution and its ReLU is 4 columns wide
  and advances 2 (`relu1_out` tiles of 1 x 128 x 28 x 4): the ReLU costs 14 x 224 = 3,136 cycles for 100,352
  elements that take 1,568 once, and the convolution likewise twice its work. Ours reads a fused tile's halo again
  (`traincost.schedule.tile_overhead`) but computes each output once. (A layer's tiles are read as the product of
  its group's `fusion_splits`, each at its LUT entry.)"""


def _page(whole: pd.DataFrame, layers: pd.DataFrame) -> str:
    def markdown(table: pd.DataFrame) -> str:
        return table.to_markdown(index=False, floatfmt=".3g")

    return (
        "\n\n".join(
            [
                "# The multi-core scheduler against Stream 2.1.1",
                "Generated by `bench/crosscheck/stream.py` (its docstring says how each number is read and how to run it). "
                "Ratios are ours over Stream's; `stream_s` is Stream's wall time for the case.",
                "## Whole networks",
                markdown(whole),
                "## What differs, and where Stream does it",
                TRACED,
                "## Per layer",
                markdown(layers),
            ]
        )
        + "\n"
    )


if __name__ == "__main__":
    sys.exit(main())
