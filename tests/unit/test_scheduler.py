"""The Stream-style scheduler: a hand-computed two-op schedule and invariants on real workloads."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from tests.hardware_files import tiny_variant
from tests.workloads import ZIGZAG_LAYERS, conv_relu_workload, conv_workload, separate_layers_workload
from traincost.cost import op_table
from traincost.cost.core import MAPPINGS, ExternalPath, mac_cost
from traincost.cost.optable import COST_FIELDS, OpTable
from traincost.errors import ConfigError
from traincost.hardware import HardwareError, HardwareSpec, load_hardware
from traincost.hardware.import_zigzag import hardware_yaml_text, zigzag_hardware
from traincost.schedule import SchedulePlan, schedule
from traincost.schedule.evaluate import evaluate_sweep
from traincost.schedule.lanes import Lanes, ScalarLanes, VectorLanes
from traincost.schedule.manual_fusion import read_manual_fusion
from traincost.schedule.scheduler import OpCosts, _Memory, _Static, place_ops
from traincost.workload import STEP_PHASES

REPO = Path(__file__).resolve().parents[2]
TINY = REPO / "tests/fixtures/hardware/tiny.yaml"
EDGE_TPU = REPO / "config/hardware/edge_tpu.yaml"
FUSEMAX = REPO / "config/hardware/fusemax.yaml"
GPT2_TINY = {"n_layer": 1, "d_model": 32, "n_head": 2, "seq_len": 16, "vocab_size": 64}
ZIGZAG = REPO / "tests/fixtures/hardware/zigzag/hardware"
ENERGY_PARTS = ["energy_mac_pj", "energy_bus_pj", "energy_offchip_pj"]


def test_hand_computed_conv_then_relu_layer_by_layer() -> None:
    hw = load_hardware(TINY)
    cost = schedule(op_table(conv_relu_workload()), hw, SchedulePlan.from_mode("layer_by_layer"), per_op=True)
    row = cost.summary.iloc[0]
    # conv: 69 cycles on the PE core (see test_core_cost); reads W 16 + x 64 B from off chip; y stays on chip.
    # relu: 16 cycles on the vector core; y comes over the bus from the PE core; z (the step's output) goes off chip.
    assert row.latency_cycles == pytest.approx(69 + 16)
    assert row.offchip_bytes == 16 + 64 + 64
    assert row.bus_bytes == 80 + 64 + 64
    # energy: conv internal 256 MACs + 32 rf + 672 local = 960, relu internal 32 + 512 = 544 (test_core_cost);
    # moving x,w in: 80 B x (8 pJ off chip + 0.5 bus + 2 local write); y out of the local memory, over the bus,
    # into the vector memory: 64 B x (2 + 0.5 + 4); z out: 64 B x (4 read from vector memory + 0.5 + 8)
    assert row.energy_pj == pytest.approx(960 + 544 + 80 * 10.5 + 64 * 6.5 + 64 * 12.5)
    assert row.energy_offchip_pj == 144 * 8 and row.energy_bus_pj == 208 * 0.5
    # each access once: the conv's own, x and w written in, y read out for the relu
    assert row.energy_local_pj == pytest.approx(672 + 80 * 2 + 64 * 2)
    assert row.energy_vector_memory_pj == pytest.approx(512 + 64 * 4 + 64 * 4)
    ops = cost.ops.set_index("op")
    assert ops.loc[1, "start_cycles"] == ops.loc[0, "end_cycles"] == pytest.approx(69)


def test_streams_layer_by_layer_sends_every_tensor_through_off_chip_memory() -> None:
    """Stream's layer by layer (``fusion_cut_points: per-layer``): one op at a time, each layer from DRAM to the cores
    and back. The hand-computed chain above keeps y on chip; here y is written off chip by the conv and read back by
    the relu, and each op's own traffic is in the per-op table."""
    hw = load_hardware(TINY)
    plan = SchedulePlan.from_mode("stream_layer_by_layer")
    assert (plan.pipeline, plan.tensor_parallel, plan.resident_fraction) == (False, True, 0.0)
    cost = schedule(op_table(conv_relu_workload()), hw, plan, per_op=True)
    assert cost.summary["offchip_bytes"].iloc[0] == 16 + 64 + 64 + 64 + 64  # x, w in; y out and back; z out
    ops = cost.ops.set_index("op")
    assert list(ops["offchip_traffic_bytes"]) == [16 + 64 + 64, 64 + 64]
    assert ops["offchip_traffic_bytes"].sum() == cost.summary["offchip_bytes"].iloc[0]
    assert ops["bus_traffic_bytes"].sum() == cost.summary["bus_bytes"].iloc[0]
    assert ops.loc[1, "start_cycles"] >= ops.loc[0, "end_cycles"]
    with pytest.raises(ConfigError, match=r"resident_fraction 0.5: mode stream_layer_by_layer keeps no tensor on chip"):
        SchedulePlan.from_mode("stream_layer_by_layer", resident_fraction=0.5)


def test_a_tensor_that_does_not_fit_spills_off_chip(tmp_path: Path) -> None:
    data = yaml.safe_load(TINY.read_text())
    data["parameters"]["local_kb"]["default"] = 0.0625  # 64 B local memory: 32 B may stay resident, y is 64 B
    path = tmp_path / "small.yaml"
    path.write_text(yaml.safe_dump(data))
    cost = schedule(op_table(conv_relu_workload()), load_hardware(path), SchedulePlan(), per_op=True)
    # x and w in, y out and back in, z out
    assert cost.summary["offchip_bytes"].iloc[0] == 16 + 64 + 64 + 64 + 64
    timeline = cost.ops.set_index("op")
    assert timeline.loc[0, "onchip_bytes"] == 0 and timeline.loc[0, "offchip_bytes"] == 80 + 64  # x, w and spilled y
    roomy = schedule(op_table(conv_relu_workload()), load_hardware(TINY), SchedulePlan(), per_op=True).ops.set_index("op")
    assert roomy.loc[0, "onchip_bytes"] == 64 and roomy.loc[0, "offchip_bytes"] == 80


def test_energy_is_the_sum_of_its_parts(chain) -> None:
    hw = load_hardware(EDGE_TPU, sweep={"x_pes": [1, 4], "local_memory_mb": [0.5, 4]})
    summary = schedule(op_table(chain("resnet18_cifar", 1).workload), hw, SchedulePlan()).summary
    levels = [f"energy_{name}_pj" for name in hw.memories]
    assert np.allclose(summary["energy_pj"], summary[ENERGY_PARTS + levels].sum(axis=1))
    phases = [c for c in summary.columns if c in ("energy_forward_pj", "energy_backward_pj", "energy_optimizer_pj")]
    assert len(phases) == 3
    assert np.allclose(summary["energy_pj"], summary[phases].sum(axis=1))


def test_more_bandwidth_is_never_slower(chain) -> None:
    workload = chain("gpt2", 2, "adam", GPT2_TINY).workload
    for parameter in ("offchip_bandwidth", "buffer_bandwidth"):
        hw = load_hardware(FUSEMAX, sweep={"buffer_mb": [4, 32], parameter: [512, 1024, 4096, 16384]})
        latency = schedule(op_table(workload), hw, SchedulePlan.from_mode("pipeline")).summary["latency_cycles"].to_numpy()
        assert (np.diff(latency.reshape(2, 4), axis=1) <= 1e-9).all(), parameter


def test_more_local_memory_never_adds_offchip_traffic(chain) -> None:
    workload = chain("resnet18_cifar", 1).workload
    hw = load_hardware(EDGE_TPU, sweep={"local_memory_mb": [0.5, 1, 2, 3, 4]})
    traffic = schedule(op_table(workload), hw, SchedulePlan()).summary["offchip_bytes"].to_numpy()
    assert (np.diff(traffic) <= 0).all()


def test_training_costs_more_than_inference(chain) -> None:
    workload = chain("resnet18_cifar", 1).workload
    hw = load_hardware(EDGE_TPU, sweep={"x_pes": [1, 8], "simd_units": [16, 128], "local_memory_mb": [0.5, 4]})
    step = {s: schedule(op_table(workload, phases=p), hw, SchedulePlan()).summary for s, p in STEP_PHASES.items()}
    assert (step["training"]["latency_cycles"] > step["inference"]["latency_cycles"]).all()
    assert (step["training"]["energy_pj"] > step["inference"]["energy_pj"]).all()


def test_a_one_configuration_sweep_equals_the_grid_row(chain) -> None:
    table = op_table(chain("resnet18_cifar", 1).workload)
    grid = load_hardware(EDGE_TPU, sweep={"x_pes": [1, 2, 6], "lanes": [1, 8], "register_file_kb": [8, 128]})
    together = schedule(table, grid, SchedulePlan()).summary
    for index in (0, 5, 11):
        alone = schedule(table, load_hardware(EDGE_TPU, configs=grid.configs.iloc[[index]]), SchedulePlan()).summary
        row = together.iloc[index]
        assert alone["config_id"].iloc[0] == row["config_id"]
        numbers = alone.columns.drop("config_id")
        # equal up to the order of floating-point sums
        assert np.allclose(alone[numbers].iloc[0].astype(float), row[numbers].astype(float), rtol=1e-12, atol=0)


def test_pipelining_and_tensor_parallelism_never_slow_down(chain) -> None:
    table = op_table(chain("resnet18_cifar", 1).workload)
    hw = load_hardware(EDGE_TPU, sweep={"x_pes": [1, 4, 8]})
    latency = {
        mode: schedule(table, hw, SchedulePlan.from_mode(mode)).summary["latency_cycles"]
        for mode in ("layer_by_layer", "pipeline")
    }
    assert (latency["pipeline"] <= latency["layer_by_layer"]).all()
    one_core = load_hardware(EDGE_TPU, sweep={"x_pes": [1], "y_pes": [1]})
    split = schedule(table, one_core, SchedulePlan.from_mode("pipeline_tensor")).summary
    plain = schedule(table, one_core, SchedulePlan.from_mode("pipeline")).summary
    assert split["latency_cycles"].iloc[0] == pytest.approx(plain["latency_cycles"].iloc[0])


def test_manual_fusion_of_training_mode_blocks_does_not_fit_and_runs_unfused(chain) -> None:
    workload = chain("resnet18_cifar", 1).workload
    groups = read_manual_fusion(REPO / "config/fusion/resnet18_manual.yaml", workload.ops)
    assert len(groups) == 2 * 11 - 2  # stem, 8 blocks, pool and fc, forward and backward (pool/fc backward: 1 op each)
    hw = load_hardware(EDGE_TPU)
    table = op_table(workload, phases=STEP_PHASES["inference"])
    base = schedule(table, hw, SchedulePlan()).summary.iloc[0]
    fused = schedule(table, hw, SchedulePlan(fused=groups)).summary.iloc[0]
    # a training-mode BatchNorm reduces over whole feature maps: its block runs in one tile, and a whole 128 KB
    # feature map does not fit the SIMD core's 64 KB share, so no block is fused and nothing is saved
    assert not fused.fusion_fits
    assert fused.offchip_bytes == base.offchip_bytes
    assert fused.latency_cycles == base.latency_cycles


def test_an_op_kind_without_a_core_is_an_error(tmp_path: Path) -> None:
    data = yaml.safe_load(TINY.read_text())
    data["cores"][1]["runs"].remove("eltwise")
    path = tmp_path / "no_eltwise.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(HardwareError, match=r"no core runs op kind 'eltwise' \(first at Workload op 1\)"):
        schedule(op_table(conv_relu_workload()), load_hardware(path), SchedulePlan())


def test_overlapping_fused_groups_are_rejected() -> None:
    with pytest.raises(Exception, match=r"fused\[1\]: ops \[3\]"):
        SchedulePlan(fused=((1, 2, 3), (3, 4)))


def test_every_op_but_views_costs_time_and_energy(chain) -> None:
    workload = chain("resnet18_cifar", 1, "adam").workload
    table = op_table(workload)
    hw = load_hardware(EDGE_TPU)
    ops = schedule(table, hw, SchedulePlan(), per_op=True).ops
    assert (ops["latency_cycles"] > 0).all() and (ops["energy_pj"] > 0).all()
    # dropped ops are exactly the views (reshapes, shape reads), whose output aliases their input
    dropped = workload.ops[~workload.ops["op"].isin(ops["op"])]
    assert set(dropped["op_type"]) <= {"Reshape", "Unsqueeze", "Squeeze", "Flatten", "Identity", "Shape"}
    assert len(dropped) == table.views
    # gradients of a convolution cost at least their MACs on the PE array, like the forward conv
    pes = hw.cores[0].pes[0] * hw.cores[0].count[0]
    for kind in ("conv", "conv_dgrad", "conv_wgrad"):
        mine = ops["kind"] == kind
        macs = table.macs[np.isin(table.op, ops.loc[mine, "op"])]
        assert mine.sum() >= 19 and (ops.loc[mine, "latency_cycles"].to_numpy() >= macs / pes).all(), kind


def test_more_shards_than_configurations_leave_some_empty_and_concat_to_the_grid() -> None:
    """A workflow may ask for more shards than its grid has configurations: the extra shards are empty
    tables with the sweep's columns, and the shards still concatenate to the unsharded sweep."""
    workload, grid = conv_relu_workload(), {"x_pes": [1, 2, 4]}
    whole = evaluate_sweep(workload, EDGE_TPU, grid=grid, step="training", plan=SchedulePlan())
    parts = [
        evaluate_sweep(workload, EDGE_TPU, grid=grid, step="training", plan=SchedulePlan(), shard_index=i, shard_count=5)
        for i in range(5)
    ]
    assert [len(part) for part in parts] == [0, 1, 0, 1, 1]
    assert all(list(part.columns) == list(whole.columns) for part in parts)
    pd.testing.assert_frame_equal(pd.concat(parts, ignore_index=True), whole)


def test_the_per_op_table_records_each_mac_ops_mapping() -> None:
    hw = load_hardware(TINY)
    cost = schedule(op_table(conv_relu_workload()), hw, SchedulePlan(), per_op=True).ops.set_index("op")
    assert cost.loc[0, "mapping"] in MAPPINGS and cost.loc[1, "mapping"] == ""
    # tiny's conv keeps the dataflow's order inside the core (the register holds all its weights); no MAC, no band
    assert cost.loc[0, "reduction_levels"] == 0 and cost.loc[1, "reduction_levels"] == -1
    # tiny has no output memory below its top one to hold rows in; the vector op has none
    assert cost.loc[0, "held_rows"] == 0 and cost.loc[1, "held_rows"] == -1
    assert cost.loc[0, "held_columns"] == 0 and cost.loc[1, "held_columns"] == -1
    # tiny's local memory holds the whole conv: no chunk of the reduction
    assert cost.loc[0, "reduction_chunk"] == 0 and cost.loc[1, "reduction_chunk"] == -1
    # nor an input memory below a weight memory to widen its tile for
    assert cost.loc[0, "widened_columns"] == 0 and cost.loc[1, "widened_columns"] == -1
    # a conv whose weights do not fit the local memory's share but whose input does keeps the input resident
    wide = conv_workload(batch=1, channels_in=32, channels_out=32, input_hw=2)
    assert schedule(op_table(wide), hw, SchedulePlan(), per_op=True).ops["mapping"].iloc[0] == "input_resident"
    with pytest.raises(ConfigError, match="mapping objective"):
        SchedulePlan(mapping_objective="throughput")


@pytest.mark.parametrize("lanes", [ScalarLanes(), VectorLanes(1)], ids=["scalars", "arrays"])
def test_release_gives_back_what_keep_and_spill_took_and_nothing_else(lanes: Lanes) -> None:
    hw = load_hardware(TINY)
    table = op_table(conv_relu_workload())
    plan = SchedulePlan()
    memory = _Memory(table, hw, plan, _Static.build(table, hw, plan, place_ops(table, hw)), lanes)
    kept, spilled, untouched = 0, 2, 3  # x, y, z (tensor 1, the weight, is persistent: never spilled)
    memory.keep(kept, 0, True, 48.0)  # in every configuration
    memory.spill(spilled, True)

    def state() -> tuple[np.ndarray, ...]:
        return tuple(np.array(part, dtype=float) for part in (memory.occupancy, memory.offchip_live, memory.pool))

    before = state()
    memory.release(untouched)
    assert all(np.array_equal(now, then) for now, then in zip(state(), before, strict=True))
    assert np.sum(memory.occupancy) == 48.0 and np.sum(memory.offchip_live) > 0
    memory.release(kept)
    memory.release(spilled)
    assert np.sum(memory.occupancy) == 0 and np.sum(memory.offchip_live) == 0
    assert (np.array(memory.pool) == -1).all() and not np.any(memory.held) and not np.any(memory.spilled)


def test_off_chip_reads_and_writes_each_cost_their_own_energy(tmp_path: Path) -> None:
    """x, w and y read from off-chip memory at 1 pJ per bit, y and z written at 3 (not both at their mean, 2)."""

    def edit(d: dict) -> None:
        d["offchip"] = {"bandwidth_bytes_per_cycle": 8, "read_energy_pj_per_bit": 1, "write_energy_pj_per_bit": 3}

    plan = SchedulePlan.from_mode("stream_layer_by_layer")
    cost = schedule(op_table(conv_relu_workload()), tiny_variant(tmp_path, edit), plan, per_op=True)
    # the conv reads x 64 B and w 16 B and writes y 64 B; the relu reads y back and writes z 64 B
    assert cost.summary["energy_offchip_pj"].iloc[0] == 8 * ((64 + 16 + 64) * 1 + (64 + 64) * 3)
    assert list(cost.ops["energy_offchip_pj"]) == [8 * (80 * 1 + 64 * 3), 8 * (64 * 1 + 64 * 3)]


def test_bytes_crossing_a_core_go_to_the_memory_that_keeps_their_operand(tmp_path: Path) -> None:
    """A core whose outermost memories keep weights apart from inputs and outputs (ZigZag's meta_prototype): w is
    written into its weight buffer at 1.5 pJ per bit, x into the local memory at 0.25, and y, the step's output, read
    out of the local memory at 0.25; each op's energy splits by where it is spent as the summary's does."""

    def edit(d: dict) -> None:
        d["memories"]["wbuf"] = {
            "size_bytes": 256,
            "read_bandwidth_bytes_per_cycle": 8,
            "write_bandwidth_bytes_per_cycle": 8,
            "read_energy_pj_per_bit": 0.75,
            "write_energy_pj_per_bit": 1.5,
        }
        d["cores"][0]["memory"] = [
            {"level": "rf", "operands": ["W"]},
            {"level": "local", "operands": ["I", "O"]},
            {"level": "wbuf", "operands": ["W"]},
        ]

    hw = tiny_variant(tmp_path, edit)
    table = op_table(conv_relu_workload(relu=False))
    plan = SchedulePlan.from_mode("stream_layer_by_layer")
    inside = OpCosts.of(table, hw, plan).level_pj
    cost = schedule(table, hw, plan, per_op=True)
    op = cost.ops.iloc[0]
    assert op.energy_wbuf_pj - inside["wbuf"][0, 0] == pytest.approx(16 * 8 * 1.5)
    assert op.energy_local_pj - inside["local"][0, 0] == pytest.approx(64 * 8 * 0.25 + 64 * 8 * 0.25)
    parts = ["energy_mac_pj", *(f"energy_{name}_pj" for name in hw.memories), "energy_bus_pj", "energy_offchip_pj"]
    assert op[parts].sum() == pytest.approx(op.energy_pj)
    assert cost.summary[parts].iloc[0].to_numpy() == pytest.approx(cost.ops[parts].sum().to_numpy())


def _imported(machine: str, folder: Path) -> HardwareSpec:
    path = folder / f"{machine}.yaml"
    path.write_text(hardware_yaml_text(zigzag_hardware(ZIGZAG / f"{machine}.yaml"), header=f"ZigZag {machine}"))
    return load_hardware(path)


def _as_zigzag_charges(hw: HardwareSpec, table: OpTable, objective: str) -> tuple[np.ndarray, np.ndarray]:
    """Per op of ``table``, each a layer that starts and ends in DRAM, its cycles and energy as ZigZag charges it on
    ``hw``'s one core: the core's own cost, each operand read from DRAM at the DRAM's read energy and written into the
    outermost memory that keeps it, the output read out of the outermost memory that keeps it and written to DRAM at
    the DRAM's write energy (partial sums out and back included; each memory at its own energies); the core's cycles
    or the DRAM traffic's over the link, whichever is longer."""
    (core,) = hw.cores
    cost = mac_cost(core, table, np.arange(len(table)), external=ExternalPath.of(hw, core), objective=objective)

    def outermost(operand: str):
        return [level.memory for level in core.levels if operand in level.operands][-1]

    energy = cost.energy_mac_pj + sum(cost.energy_level_pj.values())
    for operand, moved in cost.ext_in_bytes.items():
        energy = energy + 8 * moved * outermost(operand).write_energy_pj_per_bit[:, None]
    energy = energy + 8 * cost.ext_write_bytes * outermost("O").read_energy_pj_per_bit[:, None]
    fetched, written = sum(cost.ext_in_bytes.values()), cost.ext_write_bytes
    offchip = hw.offchip
    energy = energy + 8 * (fetched * offchip.read_energy_pj_per_bit[:, None] + written * offchip.write_energy_pj_per_bit[:, None])
    cycles = np.maximum(cost.latency_cycles, (fetched + written) / offchip.bandwidth_bytes_per_cycle[:, None])
    return cycles[0], energy[0]


@pytest.mark.parametrize(
    ("machine", "objective"),
    [("meta_prototype", "energy"), ("tesla_npu_like", "edp"), ("tpu_like", "energy"), ("aimc", "latency")],
)
def test_a_zigzag_machines_layers_cost_what_zigzag_charges_them(tmp_path: Path, machine: str, objective: str) -> None:
    """Layers that share no tensor, on a machine imported from ZigZag (``traincost hardware import zigzag``), through
    the scheduler (what ``traincost cost``, the studies and the ZigZag cross-check run): one at a time with nothing
    kept on chip, as the cross-check runs them, and with the default plan's pipelining, tensor parallelism and
    resident share, each layer costs what ZigZag charges it (``_as_zigzag_charges``). meta_prototype keeps weights in
    a top memory of their own, its DRAM reads cost less than its writes and its output registers serve one PE axis;
    tpu_like's weights go from DRAM straight into the array's registers; aimc's depthwise layer sends partial sums off
    chip and back at latency."""
    hw = _imported(machine, tmp_path)
    table = op_table(separate_layers_workload(ZIGZAG_LAYERS))
    cycles, energy = _as_zigzag_charges(hw, table, objective)
    one_by_one = SchedulePlan.from_mode("layer_by_layer", resident_fraction=0.0, mapping_objective=objective)
    for plan in (one_by_one, SchedulePlan(mapping_objective=objective)):
        cost = schedule(table, hw, plan, per_op=True)
        ops = cost.ops
        assert ops["energy_pj"].to_numpy() == pytest.approx(energy, rel=1e-12)
        assert (ops["end_cycles"] - ops["start_cycles"]).to_numpy() == pytest.approx(cycles, rel=1e-12)
        assert cost.summary["energy_pj"].iloc[0] == pytest.approx(energy.sum(), rel=1e-12)


@pytest.mark.ort
@pytest.mark.parametrize("mode", ["pipeline_tensor", "layer_by_layer"])
def test_ops_alike_are_costed_once_and_copied_bit_for_bit(chain, mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # ResNet-18 repeats its layers: OpCosts costs each distinct op once (OpTable.distinct_rows) and copies its columns;
    # costing every op on its own gives the same arrays, bit for bit (tensor parallel with the per-op allocation too)
    table = op_table(chain("resnet18_cifar", 1, "adam").workload)
    hardware = load_hardware(EDGE_TPU, sweep={"x_pes": [1, 4, 8], "lanes": [1, 8]})
    plan = SchedulePlan.from_mode(mode, allocation="per_op") if mode == "pipeline_tensor" else SchedulePlan.from_mode(mode)
    mac = np.flatnonzero(table.is_mac)
    first, group = table.distinct_rows(mac)
    assert len(first) < 0.6 * len(mac) and np.array_equal(group[first], np.arange(len(first)))  # 35 of 62 here
    once = OpCosts.of(table, hardware, plan)
    monkeypatch.setattr(OpTable, "distinct_rows", lambda self, index: (np.arange(len(index)), np.arange(len(index))))
    each = OpCosts.of(table, hardware, plan)
    for cost_once, cost_each in ((once, each), (once.whole, each.whole)):
        if cost_once is None:
            continue
        for field in dataclasses.fields(OpCosts):
            a, b = getattr(cost_once, field.name), getattr(cost_each, field.name)
            if isinstance(a, dict):
                assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a), field.name
            elif isinstance(a, np.ndarray):
                assert a.dtype == b.dtype and np.array_equal(a, b), field.name


def test_every_per_op_field_of_the_table_is_a_cost_field_or_places_the_op() -> None:
    # a field added to OpTable must be classified: read by the cost of an op on a core (COST_FIELDS, so that ops that
    # differ in it are costed apart), or telling where the op sits in the graph
    table = op_table(conv_relu_workload())
    values = {field.name: getattr(table, field.name) for field in dataclasses.fields(OpTable)}
    per_op = {
        name
        for name, value in values.items()
        if name != "dims"
        and not name.startswith("tensor_")
        and isinstance(value, np.ndarray | tuple)
        and len(value) == len(table)
    }
    placing = {"op", "inputs", "outputs", "x_tensor", "s_tensor", "last_use"}
    assert per_op - placing == set(COST_FIELDS) - {"dims"}


def test_configurations_of_one_design_cost_what_each_costs_alone(chain) -> None:
    """2 x 4 PE cores and 4 x 2 are one design (``HardwareSpec.distinct_configs``): the scheduler costs it once and
    copies it to both, and an op's cost on one instance of its core (the ``per_op`` allocation's) once for every
    count of the core. Each configuration of a grid with repeated counts costs, in total and op by op, what it costs
    scheduled alone (up to the order of floating-point sums), under its own id and parameters."""
    table = op_table(chain("resnet18_cifar", 1).workload, phases=STEP_PHASES["inference"])
    grid = load_hardware(EDGE_TPU, sweep={"x_pes": [1, 2, 4], "y_pes": [4, 2], "lanes": [1, 8]})
    assert (grid.n_configs, len(grid.distinct_configs()[0])) == (12, 8)
    plan = SchedulePlan.from_mode("pipeline_tensor", allocation="per_op")
    together = schedule(table, grid, plan, per_op=True)
    assert list(together.summary["config_id"]) == list(grid.configs["config_id"])
    # 2 x 2 x 1 lane, costed as 1 x 4 x 1 is; 4 x 2 x 8 lanes, as 2 x 4 x 8; 4 x 4 x 8, a design of its own
    for index in (6, 11, 9):
        alone = schedule(table, grid.take(slice(index, index + 1)), plan, per_op=True)
        row = together.summary.iloc[[index]].reset_index(drop=True)
        pd.testing.assert_frame_equal(alone.summary, row, check_exact=False, rtol=1e-12, atol=0)
        ops = together.ops[together.ops["config_id"] == row["config_id"].iloc[0]].reset_index(drop=True)
        pd.testing.assert_frame_equal(alone.ops, ops, check_exact=False, rtol=1e-12, atol=0)
