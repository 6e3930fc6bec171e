"""ZigZag's and Stream's hardware files as traincost hardware: every bundled one imports, loads and costs a workload."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from tests.workloads import conv_relu_workload, conv_workload
from traincost.cli import main
from traincost.cost import mac_cost, op_table
from traincost.cost.core import MAPPINGS, ExternalPath
from traincost.hardware import HardwareError, HardwareSpec, load_hardware
from traincost.hardware.import_stream import stream_hardware
from traincost.hardware.import_zigzag import hardware_yaml_text, parse_unroll, zigzag_hardware
from traincost.schedule import SchedulePlan, schedule

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures/hardware"
ZIGZAG = FIXTURES / "zigzag/hardware"
STREAM = FIXTURES / "stream/hardware"
# what a few bundled files need besides the file: gemm_l1's mapping unrolls ZigZag's GEMM loops D0..D2
ZIGZAG_OPTIONS = {
    "gemm_l1.yaml": {"unroll": parse_unroll("D1=K,D2=C,D3=OX")},
    "gemm_l1_l3.yaml": {"unroll": parse_unroll("D1=K,D2=C,D3=OX")},
}
# tpu_v7's VMEM memory cores are translated, but each is shared by one TensorCore's MXUs and VPU: 4 memories among 8
# identical MXUs, which traincost groups into one core with a count
STREAM_UNSUPPORTED = {"tpu_v7_ironwood.yaml": "sharing between cores listed more than once is not translated"}


def _load(data: dict, tmp_path: Path) -> HardwareSpec:
    path = tmp_path / "ours.yaml"
    path.write_text(hardware_yaml_text(data, header="test"))
    return load_hardware(path)


def _costs_a_workload(hw: HardwareSpec) -> None:
    cost = schedule(op_table(conv_relu_workload()), hw, SchedulePlan.from_mode("layer_by_layer"))
    row = cost.summary.iloc[0]
    assert np.isfinite(row.latency_cycles) and row.latency_cycles > 0
    assert np.isfinite(row.energy_pj) and row.energy_pj > 0


def test_every_bundled_zigzag_file_is_here() -> None:
    assert len(list(ZIGZAG.glob("*.yaml"))) == 11  # zigzag-dse 3.9.1 zigzag/inputs/hardware/


@pytest.mark.parametrize("name", sorted(p.name for p in ZIGZAG.glob("*.yaml")))
def test_every_zigzag_file_imports_loads_and_costs(name: str, tmp_path: Path) -> None:
    hw = _load(zigzag_hardware(ZIGZAG / name, **ZIGZAG_OPTIONS.get(name, {})), tmp_path)
    (core,) = hw.cores
    source = yaml.safe_load((ZIGZAG / name).read_text())
    assert core.pes[0] <= np.prod(source["operational_array"]["sizes"])
    assert len(core.levels) == len(source["memories"]) - ("dram" in source["memories"])
    _costs_a_workload(hw)


def test_edge_tpu_like_by_hand(tmp_path: Path) -> None:
    hw = _load(zigzag_hardware(ZIGZAG / "edge_tpu_like.yaml"), tmp_path)
    (core,) = hw.cores
    assert [(a.dim, int(a.size[0])) for a in core.pe_array] == [("K", 8), ("C", 8), ("OX", 4), ("OY", 4)]
    assert core.pes[0] == 1024 and core.mac_energy_pj[0] == 0.04
    assert core.tile_io == "serial"  # ZigZag's on- and off-loading around each layer
    assert {k: int(v[0]) for k, v in core.precision_bits.items()} == {
        "inputs": 8,
        "weights": 8,
        "outputs": 8,
        "partial_sums": 16,
    }
    assert hw.word_bytes == 1
    assert [(lv.memory.name, "".join(sorted(lv.operands))) for lv in core.levels] == [
        ("rf_1B", "W"),
        ("rf_2B", "O"),
        ("sram_32KB", "W"),
        ("sram_2MB", "IO"),
    ]
    sram = hw.memories["sram_2MB"]
    assert sram.size_bytes[0] == 2 * 2**20
    assert sram.read_energy_pj_per_bit[0] == pytest.approx(416.16 / 2048)  # r_cost per 2048-bit access
    assert sram.write_energy_pj_per_bit[0] == pytest.approx(378.4 / 2048)
    assert sram.read_bandwidth_bytes_per_cycle[0] == sram.write_bandwidth_bytes_per_cycle[0] == 256
    assert sram.min_access_bits[0] == 64 and sram.instances[0] == 1
    weights = hw.memories["sram_32KB"]
    assert weights.read_energy_pj_per_bit[0] == pytest.approx(22.9 / 512)
    assert weights.write_energy_pj_per_bit[0] == pytest.approx(52.01 / 512)
    # served_dimensions: the weight register is shared over D3, D4 (8 x 8 copies), the output register over D2
    assert hw.memories["rf_1B"].instances[0] == 64 and hw.memories["rf_2B"].instances[0] == 8 * 4 * 4
    # ... and each spans those axes in the core; the SRAMs serve every axis (one instance), so they say nothing
    assert [lv.served_axes for lv in core.levels] == [("D3_OX", "D4_OY"), ("D2_C",), None, None]
    assert hw.offchip.bandwidth_bytes_per_cycle[0] == 8
    assert hw.offchip.read_energy_pj_per_bit[0] == pytest.approx(700 / 64)
    assert hw.offchip.write_energy_pj_per_bit[0] == pytest.approx(750 / 64)


def test_tpu_like_repeated_key_and_per_pe_registers(tmp_path: Path) -> None:
    # tpu_like.yaml gives sram_2MB `ports` twice; ZigZag's yaml.safe_load keeps the second, and so do we
    hw = _load(zigzag_hardware(ZIGZAG / "tpu_like.yaml"), tmp_path)
    sram = hw.memories["sram_2MB"]
    assert [(p.direction, p.bandwidth_bytes_per_cycle[0]) for p in sram.ports] == [("read", 256), ("write", 256)]
    weights = hw.memories["rf_128B"]  # served_dimensions: [] — one per multiplier
    assert weights.per_pe and weights.instances[0] == 1024 and weights.size_bytes[0] == 128


def test_zigzag_mapping_and_options(tmp_path: Path) -> None:
    # eyeriss_like has no mapping of its own: ZigZag's generic default.yaml names the loops, the array the sizes
    hw = _load(zigzag_hardware(ZIGZAG / "eyeriss_like.yaml"), tmp_path)
    assert [(a.dim, int(a.size[0])) for a in hw.cores[0].pe_array] == [("K", 14), ("C", 12)]
    hw = _load(zigzag_hardware(ZIGZAG / "eyeriss_like.yaml", unroll=parse_unroll("D1=OX,D2=FY:3")), tmp_path)
    assert [(a.dim, int(a.size[0])) for a in hw.cores[0].pe_array] == [("OX", 14), ("FY", 3)]
    hw = _load(zigzag_hardware(ZIGZAG / "tpu_like.yaml", mapping=FIXTURES / "zigzag/mapping/default.yaml"), tmp_path)
    assert hw.cores[0].pes[0] == 1024
    # gemm_l1 has no DRAM: its l1 stays on chip, and the off-chip link is marked as not in the file
    data = zigzag_hardware(ZIGZAG / "gemm_l1.yaml", **ZIGZAG_OPTIONS["gemm_l1.yaml"])
    assert "l1" in data["memories"] and "not in gemm_l1.yaml" in data["offchip"]["source"]
    hw = _load(zigzag_hardware(ZIGZAG / "aimc.yaml", mac_energy_pj=0.02), tmp_path)
    assert hw.cores[0].mac_energy_pj[0] == 0.02 and hw.memories["cells"].per_pe and hw.cores[0].in_memory is None


@pytest.mark.parametrize(
    ("name", "kind", "serial_bits", "adc_bits"), [("aimc.yaml", "analog", 2, 8), ("dimc.yaml", "digital", 1, 0)]
)
def test_an_in_memory_array_imports_with_zigzags_model_of_it(
    tmp_path: Path, name: str, kind: str, serial_bits: int, adc_bits: int
) -> None:
    # default_imc.yaml hints K along D1 (the wordlines, as ZigZag sorts the dimensions) and C, FX or FY along D2
    data = zigzag_hardware(ZIGZAG / name)
    assert data["description"].endswith(f"computing in memory ({kind}, {8 // serial_bits} cycles a MAC)")
    core = _load(data, tmp_path).cores[0]
    assert core.in_memory is not None
    assert (core.in_memory.kind, core.in_memory.bit_serial_bits, core.in_memory.adc_bits) == (kind, serial_bits, adc_bits)
    assert (core.in_memory.wordline_axes, core.in_memory.bitline_axes) == (("D1_K",), ("D2",))
    # the hint's other loops along D2, and each hinted axis also half filled (ZigZag's next candidates by
    # utilisation): the engine picks per op, as ZigZag picks per layer
    assert [(axis.name, axis.dim, axis.alternatives, axis.divisors) for axis in core.pe_array] == [
        ("D1_K", "K", (), (2,)),
        ("D2", "C", ("FX", "FY"), (2,)),
    ]
    assert len(core.spatial_variants()) == 2 * 3 * 2
    assert core.in_memory.wordline_size == core.in_memory.bitline_size == 128
    assert core.in_memory.cycles_per_mac == 8 / serial_bits
    # the other ops pay the model's energy per MAC with the macro full: 2 / ZigZag 3.9.1's topsw_peak of the array
    assert core.mac_energy_pj[0] == pytest.approx({"aimc.yaml": 0.20785329, "dimc.yaml": 0.2670215625}[name], rel=1e-12)


def test_cells_holding_several_weights_are_refused(tmp_path: Path) -> None:
    data = yaml.safe_load((ZIGZAG / "aimc.yaml").read_text())
    data["memories"]["cells"]["size"] = 16
    path = tmp_path / "aimc.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(HardwareError, match=r"memories.cells.size: 16 bits; traincost models cells of one weight"):
        zigzag_hardware(path, unroll=parse_unroll("D1=K,D2=C"))


def test_a_mapping_is_cut_to_what_the_innermost_memories_pass(tmp_path: Path) -> None:
    # gemm_l1_l3's output register (32-bit write port from below) is shared along D2: with K on D2 it must take
    # that many outputs a cycle, and 16-bit partial sums allow 2 of the mapping's 8, as ZigZag cuts it (128 of the
    # 512 PEs). C on D3 and OY on D1 pass: l1 reads 512 bits, 64 8-bit inputs or weights, a cycle.
    mapping = tmp_path / "mapping.yaml"
    links = {"O": "O", "W": "I2", "I": "I1"}
    spatial = {"D1": ["OY, 8"], "D2": ["K, 8"], "D3": ["C, 8"]}
    mapping.write_text(yaml.safe_dump([{"name": "default", "spatial_mapping": spatial, "memory_operand_links": links}]))
    hw = _load(zigzag_hardware(ZIGZAG / "gemm_l1_l3.yaml", mapping=mapping), tmp_path)
    assert [(a.dim, int(a.size[0])) for a in hw.cores[0].pe_array] == [("OY", 8), ("K", 2), ("C", 8)]
    # given directly (--unroll), the unrolling is the user's and is not cut
    hw = _load(zigzag_hardware(ZIGZAG / "gemm_l1_l3.yaml", unroll=parse_unroll("D1=OY,D2=K,D3=C")), tmp_path)
    assert hw.cores[0].pes[0] == 512


def test_zigzags_forced_double_buffering_is_kept(tmp_path: Path) -> None:
    # gemm_l1_l3's l1 has force_double_buffering: True, its other memories and every other bundled file none
    hw = _load(zigzag_hardware(ZIGZAG / "gemm_l1_l3.yaml", **ZIGZAG_OPTIONS["gemm_l1_l3.yaml"]), tmp_path)
    assert {name: memory.double_buffered for name, memory in hw.memories.items()} == {"reg_O": False, "l1": True, "l3": False}
    tpu = _load(zigzag_hardware(ZIGZAG / "tpu_like.yaml"), tmp_path)
    assert not any(memory.double_buffered for memory in tpu.memories.values())


def test_an_operand_on_a_narrower_port_pays_zigzags_cost_per_access_of_that_port(tmp_path: Path) -> None:
    # ZigZag charges r_cost (w_cost) per access of the port that serves the operand: gemm_l1_l3's l1 reads and writes
    # inputs and weights through 512-bit ports, 118 (141.6) pJ per 512 bits, and its outputs through a 2048-bit one,
    # the memory's own 118 (141.6) pJ per 2048 bits; a file whose ports are all alike gets no energies per operand
    hw = _load(zigzag_hardware(ZIGZAG / "gemm_l1_l3.yaml", **ZIGZAG_OPTIONS["gemm_l1_l3.yaml"]), tmp_path)
    l1 = hw.memories["l1"]
    assert (l1.read_energy_pj_per_bit[0], l1.write_energy_pj_per_bit[0]) == (118 / 2048, 141.6 / 2048)
    for operand in ("I", "W"):
        assert [pj[0] for pj in l1.energy_pj_per_bit(operand)] == [118 / 512, 141.6 / 512]
    assert [pj[0] for pj in l1.energy_pj_per_bit("O")] == [118 / 2048, 141.6 / 2048]
    tpu = _load(zigzag_hardware(ZIGZAG / "tpu_like.yaml"), tmp_path)
    assert all(not memory.operand_energy_pj_per_bit for memory in tpu.memories.values())


def test_every_stream_example_is_here() -> None:
    assert len(list(STREAM.glob("*.yaml"))) == 9  # stream-dse 2.1.1 stream/inputs/examples/hardware/


# the examples whose PE array may unroll its loops 256 ways (Core.spatial_variants), each costed: 8 to 19 s each on this
# project's 2-core machine, so they run with the slow suite
_STREAM_MANY_VARIANTS = {"meta_prototype_dual_core_simd_offchip.yaml", "simba.yaml", "simba_small.yaml"}


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(path.name, marks=[pytest.mark.slow] if path.name in _STREAM_MANY_VARIANTS else [])
        for path in sorted(STREAM.glob("*.yaml"))
    ],
)
def test_every_stream_example_imports_loads_and_costs(name: str, tmp_path: Path) -> None:
    if name in STREAM_UNSUPPORTED:
        with pytest.raises(HardwareError, match=STREAM_UNSUPPORTED[name]):
            stream_hardware(STREAM / name)
        return
    hw = _load(stream_hardware(STREAM / name), tmp_path)
    assert hw.cores[0].runs[:3] == ("conv", "conv_dgrad", "conv_wgrad"), name
    _costs_a_workload(hw)


def test_tpu_like_quad_core_by_hand(tmp_path: Path) -> None:
    hw = _load(stream_hardware(STREAM / "tpu_like_quad_core.yaml"), tmp_path)
    tpu, pooling, simd = hw.cores
    assert (tpu.name, int(tpu.count[0]), int(tpu.pes[0]), tpu.dataflow) == ("tpu_like", 4, 1024, "weight_stationary")
    assert tpu.tile_io == "overlapped"  # Stream schedules the transfers itself
    assert tpu.precision_bits["inputs"][0] == 8 and tpu.precision_bits["partial_sums"][0] == 32  # int8, int32
    assert pooling.runs == ("pool",) and pooling.dataflow == "simd"
    assert simd.dataflow == "simd" and {"eltwise", "norm", "optimizer", "layout"} <= set(simd.runs)
    assert simd.mac_energy_pj[0] == 0.1 and simd.pes[0] == 64
    assert hw.bus.bandwidth_bytes_per_cycle[0] == 128 / 8 and hw.bus.energy_pj_per_bit[0] == 0
    assert hw.offchip.bandwidth_bytes_per_cycle[0] == 8
    assert hw.offchip.read_energy_pj_per_bit[0] == pytest.approx(1000 / 64)
    assert "tpu_like_sram_2MB" in hw.memories and "simd_sram_128KB_2rw" in hw.memories


def test_stream_memory_sharing_is_one_shared_memory(tmp_path: Path) -> None:
    hw = _load(stream_hardware(STREAM / "fusemax.yaml"), tmp_path)
    array, vector = hw.cores
    assert array.top is vector.top and array.top.shared


def _write(path: Path, data: object) -> Path:
    path.write_text(yaml.safe_dump(data))
    return path


def _edited(tmp_path: Path, edit) -> Path:
    data = yaml.safe_load((ZIGZAG / "edge_tpu_like.yaml").read_text())
    edit(data)
    folder = tmp_path / "hardware"
    folder.mkdir(exist_ok=True)
    (tmp_path / "mapping").mkdir(exist_ok=True)
    (tmp_path / "mapping/edge.yaml").write_text((FIXTURES / "zigzag/mapping/edge_tpu_like.yaml").read_text())
    return _write(folder / "edge.yaml", data)


@pytest.mark.parametrize(
    ("edit", "words"),
    [
        (lambda d: d.pop("operational_array"), ["operational_array: missing"]),
        (lambda d: d["memories"]["sram_2MB"].pop("r_cost"), ["memories.sram_2MB.r_cost: missing"]),
        (lambda d: d["memories"]["rf_1B"].update(served_dimensions=["D7"]), ["memories.rf_1B.served_dimensions", "D7"]),
        (lambda d: d["memories"]["rf_1B"].update(operands=["I3"]), ["memories.rf_1B.operands", "'I3'"]),
        (lambda d: d["memories"]["rf_1B"].update(ports=[]), ["memories.rf_1B.ports", "should be non-empty"]),
        (lambda d: d["operational_array"].pop("unit_energy"), ["operational_array.unit_energy", "--mac-energy-pj"]),
        (lambda d: d["operational_array"].update(dimensions=4), ["operational_array.dimensions", "is not of type 'array'"]),
    ],
)
def test_bad_zigzag_file_names_file_and_key(tmp_path: Path, edit, words: list[str]) -> None:
    path = _edited(tmp_path, edit)
    with pytest.raises(HardwareError) as error:
        zigzag_hardware(path)
    message = str(error.value)
    assert str(path) in message and "\n" not in message
    for word in words:
        assert word in message, message


def test_bad_mapping_and_stream_files(tmp_path: Path) -> None:
    with pytest.raises(HardwareError, match=r"gemm_l1.yaml: default.spatial_mapping.D1: unrolls 'D0'.*--unroll"):
        zigzag_hardware(ZIGZAG / "gemm_l1.yaml")
    with pytest.raises(HardwareError, match=r"--unroll 'D1=Q': expected"):
        parse_unroll("D1=Q")
    accelerator = yaml.safe_load((STREAM / "tpu_like_quad_core.yaml").read_text())
    accelerator["offchip_core_id"] = 9
    bad = _write(tmp_path / "quad.yaml", accelerator)
    with pytest.raises(HardwareError, match=r"quad.yaml: offchip_core_id: 9 is not a key of cores"):
        stream_hardware(bad)
    with pytest.raises(HardwareError, match=r"cores: missing"):
        stream_hardware(_write(tmp_path / "list.yaml", [1, 2]))


def test_cli_writes_a_loadable_file_or_one_error_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "ours.yaml"
    assert main(["--quiet", "hardware", "import", "zigzag", str(ZIGZAG / "edge_tpu_like.yaml"), "--out", str(out)]) == 0
    assert load_hardware(out).cores[0].pes[0] == 1024
    assert out.read_text().startswith("# Written by `traincost hardware import zigzag")
    out = tmp_path / "stream.yaml"
    assert main(["--quiet", "hardware", "import", "stream", str(STREAM / "simba_small.yaml"), "--out", str(out)]) == 0
    assert load_hardware(out).cores[0].count[0] == 4
    capsys.readouterr()
    out = tmp_path / "gemm.yaml"
    assert main(["--quiet", "hardware", "import", "zigzag", str(ZIGZAG / "gemm_l1.yaml"), "--out", str(out)]) == 2
    error = capsys.readouterr().err
    assert error.startswith("traincost: error: ") and error.count("\n") == 1 and "gemm_l1.yaml" in error
    assert not out.exists() and not list(tmp_path.glob(".gemm.yaml.*"))


def test_an_input_that_fits_zigzags_edge_tpu_sram_is_fetched_once(tmp_path: Path) -> None:
    """MobileNetV2's 960 -> 320 pointwise convolution at 7x7 on ZigZag's own edge_tpu_like, imported as it is:
    its 47 KB input fits the 2 MB input/output SRAM, its 307 KB of weights do not fit the 32 KB weight SRAM.
    Streaming the input past each weight tile fetched it from DRAM about ten times; keeping it resident
    fetches it once and the weights once, as ZigZag's mapping search does."""
    hw = _load(zigzag_hardware(ZIGZAG / "edge_tpu_like.yaml"), tmp_path)
    table = op_table(conv_workload(batch=1, channels_in=960, channels_out=320, input_hw=7))
    core = hw.cores[0]
    native = mac_cost(core, table, np.array([0]))
    chosen = mac_cost(core, table, np.array([0]), external=ExternalPath.of(hw, core), objective="energy")
    input_bytes, weight_bytes = 7 * 7 * 960, 960 * 320  # 8-bit operands
    assert native.ext_in_bytes["I"][0, 0] >= 5 * input_bytes
    assert MAPPINGS[chosen.mapping[0, 0]] == "input_resident"
    assert chosen.ext_in_bytes["I"][0, 0] == input_bytes and chosen.ext_in_bytes["W"][0, 0] == weight_bytes


def test_a_mapping_file_is_unrolled_as_zigzag_reads_it(tmp_path: Path) -> None:
    """ZigZag cuts each factor of a mapping file to its array dimension (SpatialMapping.check_and_reduce): the
    generic default.yaml's K 32 x C 32 on generic_array_cacti's 256 x 256 array uses 1,024 of its 65,536 PEs, on
    eyeriss_like's 14 x 12 all 168; edge_tpu_like's OX 4 on a D3 of 2 becomes 2."""
    data = zigzag_hardware(ZIGZAG / "generic_array_cacti.yaml")
    assert [(a["dim"], a["size"]) for a in data["cores"][0]["pe_array"]] == [("K", 32), ("C", 32)]
    assert data["description"].endswith("the spatial unrolling uses 1,024 of the array's 65,536 PEs")
    assert "uses 168 of the array's 168 PEs" in zigzag_hardware(ZIGZAG / "eyeriss_like.yaml")["description"]
    narrow = zigzag_hardware(_edited(tmp_path, lambda d: d["operational_array"].update(sizes=[8, 8, 2, 4])))
    assert [(a["dim"], a["size"]) for a in narrow["cores"][0]["pe_array"]] == [("K", 8), ("C", 8), ("OX", 2), ("OY", 4)]


# ZigZag's bundled mixed mappings (several loops on one array dimension, or dimensions left to a hint) and the
# hardware each is for
MIXED = {
    "tpu_like_mixed.yaml": "tpu_like.yaml",
    "edge_tpu_like_mixed.yaml": "edge_tpu_like.yaml",
    "ascend_like_mixed.yaml": "ascend_like.yaml",
    "meta_prototype_like_mixed.yaml": "meta_prototype.yaml",
    "tesla_npu_like_mixed.yaml": "tesla_npu_like.yaml",
}


def test_every_bundled_mapping_is_tried() -> None:
    bundled = {p.name for p in (ZIGZAG.parent / "mapping").glob("*.yaml")}
    # the others are each hardware file's own (or default.yaml, default_imc.yaml), read by the tests above
    assert {name for name in bundled if "mixed" in name} == set(MIXED)


@pytest.mark.parametrize("mapping", sorted(MIXED))
def test_every_mixed_mapping_imports_loads_and_costs(mapping: str, tmp_path: Path) -> None:
    hw = _load(zigzag_hardware(ZIGZAG / MIXED[mapping], mapping=ZIGZAG.parent / "mapping" / mapping), tmp_path)
    _costs_a_workload(hw)


def test_a_mixed_mapping_keeps_the_memories_beside_the_pes_it_unrolls(tmp_path: Path) -> None:
    """ascend_like_mixed.yaml unrolls C 4 x FX 3 on D2 (12 of its 16), so the weight register rf_1B, one per PE of
    D1 and D2 (it serves D3 and D4), has 16 x 12 = 192 instances at work of its 256, as ZigZag counts them; rf_2B
    serves D2 and keeps one per PE of D1, D3 and D4, 64."""
    data = zigzag_hardware(ZIGZAG / "ascend_like.yaml", mapping=ZIGZAG.parent / "mapping/ascend_like_mixed.yaml")
    assert [(a["name"], a["size"]) for a in data["cores"][0]["pe_array"]] == [
        ("D1_K", 16),
        ("D2_C", 4),
        ("D2_FX", 3),
        ("D3_OX", 2),
        ("D4_OY", 2),
    ]
    assert data["description"].endswith("the spatial unrolling uses 768 of the array's 1,024 PEs")
    weights, outputs = data["memories"]["rf_1B"], data["memories"]["rf_2B"]
    assert weights["instances"] == 192 and "256 instances over the array, 192 beside the PEs it unrolls" in weights["source"]
    assert outputs["instances"] == 64 and "instances over" not in outputs["source"]
    hw = _load(data, tmp_path)
    assert hw.memories["rf_1B"].instances[0] == 192 and hw.cores[0].pes[0] == 768


def test_an_array_dimension_the_mapping_leaves_out_is_filled_as_zigzag_fills_it(tmp_path: Path) -> None:
    """ZigZag fills an array dimension the spatial mapping does not name from its hint, or, with none, from every
    layer dimension, picking per layer (SpatialMappingGeneratorStage); of those loops it keeps what the innermost
    memories' ports pass (get_max_unrolling)."""
    folder = ZIGZAG.parent / "mapping"
    # meta_prototype_like_mixed.yaml names D1, D3 and D4; its hint gives D2 (2 PEs) C
    meta = zigzag_hardware(ZIGZAG / "meta_prototype.yaml", mapping=folder / "meta_prototype_like_mixed.yaml")
    axes = meta["cores"][0]["pe_array"]
    assert [(a["name"], a["dim"], a["size"]) for a in axes][0] == ("D1_K", "K", 32)
    assert {"name": "D2_C", "dim": "C", "size": 2, "divisors": [2]} in axes
    assert "uses 1,024 of the array's 1,024 PEs" in meta["description"]
    # tesla_npu_like_mixed.yaml hints K on D1 and OX or OY on D2, nothing on D3 (4 PEs): there ZigZag tries every
    # layer dimension, and its one-weight register per PE along D3 (8 bits a cycle) passes whole only the loops the
    # weights do not depend on
    tesla = _load(zigzag_hardware(ZIGZAG / "tesla_npu_like.yaml", mapping=folder / "tesla_npu_like_mixed.yaml"), tmp_path)
    assert [(a.name, a.dim, int(a.size[0]), a.alternatives, a.divisors) for a in tesla.cores[0].pe_array] == [
        ("D1_K", "K", 32, (), (2,)),
        ("D2", "OX", 32, ("OY",), (2,)),
        ("D3", "B", 4, ("OY", "OX"), (2,)),
    ]
    assert len(tesla.cores[0].spatial_variants()) == 2 * 4 * 6
    # the bundled tesla_npu_like.yaml mapping names every dimension: nothing is filled
    assert [
        (a.dim, a.alternatives) for a in _load(zigzag_hardware(ZIGZAG / "tesla_npu_like.yaml"), tmp_path).cores[0].pe_array
    ] == [
        ("K", ()),
        ("OX", ()),
        ("OY", ()),
    ]


def test_an_unrolling_given_by_hand_beyond_the_array_is_an_error() -> None:
    with pytest.raises(HardwareError, match=r"eyeriss_like.yaml: the mapping unrolls 32 PEs on D1, which has 14"):
        zigzag_hardware(ZIGZAG / "eyeriss_like.yaml", unroll=parse_unroll("D1=K:32,D2=C"))


def _stream_copy(tmp_path: Path, accelerator: dict, cores: dict[str, dict | None], *, folder: str = "cores") -> Path:
    """An accelerator file in ``tmp_path`` and its core files under ``folder``: each of ``cores`` a fixture core
    (None) or the given data."""
    (tmp_path / folder).mkdir(parents=True, exist_ok=True)
    for name, data in cores.items():
        text = (STREAM / "cores" / name).read_text() if data is None else yaml.safe_dump(data)
        (tmp_path / folder / name).write_text(text)
    return _write(tmp_path / "accelerator.yaml", accelerator)


def test_operand_bits_size_every_operand_as_the_workload_and_keep_the_accumulator(tmp_path: Path) -> None:
    """Stream sizes an operand by its tensor's element type and keeps partial sums at the core's accumulator
    precision: eyeriss_like declares int16 for both, so an int8 workload moves 8-bit words and accumulates in 16."""
    eyeriss, *_ = _load(stream_hardware(STREAM / "eyeriss_like_quad_core.yaml"), tmp_path).cores
    assert eyeriss.precision_bits["inputs"][0] == 16 and eyeriss.precision_bits["partial_sums"][0] == 16
    eyeriss, _, simd = _load(stream_hardware(STREAM / "eyeriss_like_quad_core.yaml", operand_bits=8), tmp_path).cores
    assert [eyeriss.precision_bits[k][0] for k in ("inputs", "weights", "outputs", "partial_sums")] == [8, 8, 8, 16]
    assert all(simd.precision_bits[k][0] == 8 for k in ("inputs", "partial_sums"))  # no accumulator declared


def test_core_files_named_from_the_repository_root_are_found(tmp_path: Path) -> None:
    """Stream's testing accelerators name their cores from the repository root (``stream/inputs/testing/...``)."""
    accelerator = yaml.safe_load((STREAM / "tpu_like_quad_core.yaml").read_text())
    accelerator["cores"] = {k: f"stream/inputs/hw/cores/{Path(v).name}" for k, v in accelerator["cores"].items()}
    deep = tmp_path / "stream/inputs/hw"
    path = _stream_copy(deep, accelerator, dict.fromkeys(["tpu_like.yaml", "pooling.yaml", "simd.yaml", "offchip.yaml"]))
    hw = _load(stream_hardware(path), tmp_path)
    assert [core.name for core in hw.cores] == ["tpu_like", "pooling", "simd"]
    accelerator["cores"][5] = "stream/inputs/hw/cores/missing.yaml"
    with pytest.raises(HardwareError, match=r"no core file 'stream/inputs/hw/cores/missing.yaml'"):
        stream_hardware(_write(path, accelerator))


def test_a_helper_core_without_operator_types_runs_the_element_wise_ops(tmp_path: Path) -> None:
    """A core that names no operator_types is generic in Stream (it accepts every op): the compute cores, with the
    most PEs, take the MAC ops; a one-dimensional helper takes the element-wise ones no core names."""
    simd = yaml.safe_load((STREAM / "cores/simd.yaml").read_text())
    simd.pop("operator_types")
    accelerator = yaml.safe_load((STREAM / "tpu_like_quad_core.yaml").read_text())
    path = _stream_copy(
        tmp_path, accelerator, {"tpu_like.yaml": None, "pooling.yaml": None, "offchip.yaml": None, "simd.yaml": simd}
    )
    tpu, pooling, helper = _load(stream_hardware(path), tmp_path).cores
    assert tpu.runs[:3] == ("conv", "conv_dgrad", "conv_wgrad") and pooling.runs == ("pool",)
    assert helper.dataflow == "simd" and {"eltwise", "norm", "optimizer"} <= set(helper.runs)
    # a second generic two-dimensional array is left with nothing to run: refused, naming it
    accelerator["cores"][4] = "./cores/eyeriss_like.yaml"
    eyeriss = yaml.safe_load((STREAM / "cores/eyeriss_like.yaml").read_text())
    path = _stream_copy(tmp_path, accelerator, {"eyeriss_like.yaml": eyeriss})
    with pytest.raises(HardwareError, match=r"core 'eyeriss_like' runs no op kind .* names no operator_types"):
        stream_hardware(path)


def test_a_memory_core_shared_by_compute_cores_is_their_shared_top_memory(tmp_path: Path) -> None:
    """A zigzag.memory core listed first in a core_memory_sharing group is the top memory its group's cores read
    their operands from (Stream's tpu_v7 VMEM); one that no group lists first is refused, naming it."""
    accelerator = {
        "name": "one_tensor_core",
        "cores": {0: "tpu_v7_mxu.yaml", 1: "tpu_v7_vpu.yaml", 2: "tpu_v7_vmem.yaml", 3: "tpu_v7_hbm.yaml"},
        "offchip_core_id": 3,
        "core_memory_sharing": ["2, 0, 1"],
        "core_connectivity": [{"type": "link", "cores": [2, 3], "bandwidth": 13400}],
    }
    names = ["tpu_v7_mxu.yaml", "tpu_v7_vpu.yaml", "tpu_v7_vmem.yaml", "tpu_v7_hbm.yaml"]
    path = _stream_copy(tmp_path, accelerator, dict.fromkeys(names))
    hw = _load(stream_hardware(path), tmp_path)
    mxu, vpu = hw.cores
    assert mxu.top is vpu.top and mxu.top.shared and mxu.top.name == "tpu_v7_vmem_vmem"
    assert mxu.top.size_bytes[0] == 536870912 / 8
    assert "tpu_v7_mxu_vmem" not in hw.memories and "tpu_v7_vpu_vmem" not in hw.memories
    accelerator["core_memory_sharing"] = ["0, 1"]
    with pytest.raises(HardwareError, match=r"core 2 \(tpu_v7_vmem.yaml\) is a zigzag.memory core no core_memory_sharing"):
        stream_hardware(_write(path, accelerator))
