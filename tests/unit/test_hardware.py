"""Hardware as data: the shipped templates, sweep expansion, and clear errors on bad YAML."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from traincost.errors import ConfigError
from traincost.hardware import HardwareError, expand_grid, load_hardware, shard
from traincost.hardware.expressions import ExpressionError, evaluate
from traincost.hardware.spec import at_rows
from traincost.limits import MAX_COUNT

REPO = Path(__file__).resolve().parents[2]
EDGE_TPU = REPO / "config/hardware/edge_tpu.yaml"
FUSEMAX = REPO / "config/hardware/fusemax.yaml"
TINY = REPO / "tests/fixtures/hardware/tiny.yaml"

TABLE_II = {
    "x_pes": [1, 2, 4, 6, 8],
    "y_pes": [1, 2, 4, 6, 8],
    "simd_units": [16, 32, 64, 128],
    "lanes": [1, 2, 4, 8],
    "local_memory_mb": [0.5, 1, 2, 3, 4],
    "register_file_kb": [8, 16, 32, 64, 128],
}
TABLE_III = {
    "x_pes": [64, 128, 256, 512],
    "y_pes": [64, 128, 256, 512],
    "vector_pes": [32, 64, 128, 256],
    "buffer_bandwidth": [8192, 16384],
    "buffer_mb": [4, 8, 16, 32],
    "offchip_bandwidth": [512, 1024, 2048, 4096, 8192],
}


def test_edge_tpu_baseline_is_table_ii_bold() -> None:
    hw = load_hardware(EDGE_TPU)
    assert hw.n_configs == 1
    pe, simd = hw.cores
    assert pe.dataflow == "weight_stationary" and simd.dataflow == "simd"
    assert pe.count[0] == 16  # 4 x 4 PE cores
    assert pe.pes[0] == 64 * 4 * 4  # U SIMD units x 4 ways x L lanes
    assert hw.memories["local_memory"].size_bytes[0] == 2 * 1024 * 1024
    assert hw.memories["register_file"].size_bytes[0] == 64 * 1024
    assert "conv_dgrad" in pe.runs and "optimizer" in simd.runs


def test_full_grids_have_the_papers_sizes_and_stable_ids() -> None:
    edge = load_hardware(EDGE_TPU, sweep=TABLE_II)
    fusemax = load_hardware(FUSEMAX, sweep=TABLE_III)
    assert edge.n_configs == 10_000 and fusemax.n_configs == 2_560
    assert edge.configs["config_id"].is_unique and fusemax.configs["config_id"].is_unique
    again = load_hardware(EDGE_TPU, sweep=TABLE_II)
    assert (again.configs["config_id"] == edge.configs["config_id"]).all()
    # the baseline keeps its id inside the grid
    baseline = load_hardware(EDGE_TPU).configs["config_id"][0]
    assert baseline in set(edge.configs["config_id"])


def test_template_expressions_follow_the_parameters() -> None:
    hw = load_hardware(EDGE_TPU, sweep={"x_pes": [1, 8], "lanes": [1, 8]})
    pe = hw.cores[0]
    assert list(pe.count) == [4, 4, 32, 32]  # x_pes * y_pes with y_pes = 4
    assert list(pe.pes) == [256, 2048, 256, 2048]
    # CACTI-style sqrt scaling of energy per bit with capacity
    one = load_hardware(EDGE_TPU, sweep={"local_memory_mb": [0.5, 2]}).memories["local_memory"]
    assert one.read_energy_pj_per_bit[1] == pytest.approx(2 * one.read_energy_pj_per_bit[0])


def test_shards_partition_the_grid() -> None:
    grid = expand_grid("edge_tpu", {"a": 1.0, "b": 2.0}, {"a": [1, 2, 3], "b": [4, 5, 6, 7]})
    parts = [shard(grid, i, 5) for i in range(5)]
    joined = np.concatenate([p["config_id"].to_numpy() for p in parts])
    assert list(joined) == list(grid["config_id"])
    with pytest.raises(ConfigError, match="shard 5 of 5"):
        shard(grid, 5, 5)


def test_unknown_sweep_parameter_is_named() -> None:
    with pytest.raises(ConfigError, match="'z_pes' is not a parameter"):
        load_hardware(EDGE_TPU, sweep={"z_pes": [1]})


def test_expressions_are_arithmetic_only() -> None:
    assert evaluate("2 * KiB + x", {"x": 3}) == 2051
    with pytest.raises(ExpressionError, match="unknown parameter 'y'"):
        evaluate("y + 1", {"x": 1})
    with pytest.raises(ExpressionError, match="only numbers"):
        evaluate("__import__('os').getcwd()", {})


def test_functions_take_their_arguments_and_no_more() -> None:
    """max of three values is their maximum (numpy's third argument is its output array: the x_pes array was
    written over); min of none and sqrt of two are errors naming the function."""
    pes = np.array([1.0, 300.0])
    assert evaluate("max(256, 64, x_pes)", {"x_pes": pes}).tolist() == [256, 300] and pes.tolist() == [1, 300]
    assert evaluate("min(4, x, 2)", {"x": 3}) == 2 and evaluate("sqrt(2.25)", {}) == 1.5
    with pytest.raises(ExpressionError, match=r"min\(\) takes one or more arguments, given 0"):
        evaluate("min()", {})
    with pytest.raises(ExpressionError, match=r"sqrt\(\) takes one argument, given 2"):
        evaluate("sqrt(2.25, 1)", {})


def _broken(tmp_path: Path, edit) -> Path:
    data = yaml.safe_load(TINY.read_text())
    edit(data)
    path = tmp_path / "broken.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize(
    ("edit", "words"),
    [
        (lambda d: d["cores"][0]["memory"].append({"level": "l3", "operands": ["W"]}), ["cores[0].memory[2].level", "'l3'"]),
        (lambda d: d["memories"]["rf"].update(size_bytes=-64), ["memories.rf.size_bytes", "-64", ">= 1 (one word"]),
        # smaller than one word (it cost what 64 KiB costs), past the instance count the scheduler keeps a clock for
        (lambda d: d["memories"]["rf"].update(size_bytes=0.5), ["memories.rf.size_bytes", "0.5", ">= 1 (one word"]),
        (
            lambda d: (d.update(word_bytes=4), d["memories"]["rf"].update(size_bytes=2)),
            ["memories.rf.size_bytes", ">= 4 (one word"],
        ),
        (lambda d: d["cores"][0].update(count=10**9), ["cores[0].count", f"at most {MAX_COUNT:,}"]),
        (lambda d: d["memories"]["local"].update(instances=MAX_COUNT + 1), ["memories.local.instances", "at most"]),
        (lambda d: d["cores"][0]["pe_array"].append({"dim": "Q", "size": 2}), ["cores[0].pe_array[2].dim", "'Q'"]),
        (
            lambda d: d["cores"][0]["pe_array"][1].update(alternatives=["FX", "C"]),
            ["cores[0].pe_array[1].alternatives", "'C' is the axis's dim already"],
        ),
        (lambda d: d["memories"]["local"].pop("size_bytes"), ["memories.local", "size_bytes"]),
        (lambda d: d["cores"][0].update(count="n_cores * 2"), ["cores[0].count", "n_cores"]),
        (lambda d: d["cores"][1]["runs"].append("conv"), ["cores[1].runs", "'conv'", "already run by core 'pe'"]),
        (lambda d: d["cores"][0].update(count=0.5), ["cores[0].count", "positive integer"]),
        (lambda d: d["cores"][0].update(memory=[]), ["cores[0].memory", "should be non-empty"]),
        (
            lambda d: d["memories"]["rf"].update(ports=[{"direction": "read", "bandwidth_bytes_per_cycle": 4}]),
            ["memories.rf", "give ports or read_bandwidth_bytes_per_cycle", "not both"],
        ),
        (
            lambda d: d["memories"]["rf"].pop("write_bandwidth_bytes_per_cycle"),
            ["memories.rf", "write_bandwidth_bytes_per_cycle is missing"],
        ),
        (
            lambda d: (
                [d["memories"]["rf"].pop(k) for k in ("read_bandwidth_bytes_per_cycle", "write_bandwidth_bytes_per_cycle")]
                and d["memories"]["rf"].update(ports=[{"direction": "read", "bandwidth_bytes_per_cycle": 4}])
            ),
            ["memories.rf.ports", "no port can write"],
        ),
        (lambda d: d["memories"]["rf"].update(per_pe=True, instances=4), ["memories.rf", "instances or per_pe"]),
        (lambda d: d["memories"]["rf"].update(instances=0), ["memories.rf.instances", "positive integer"]),
        (lambda d: d["memories"]["rf"].update(min_access_bits=-8), ["memories.rf.min_access_bits", ">= 0"]),
        (lambda d: d["cores"][0]["pe_array"][0].update(divisors=[1]), ["cores[0].pe_array[0].divisors", "minimum"]),
        (lambda d: d["cores"][0].update(tiling="powers_of_2"), ["cores[0].tiling", "'powers_of_2'", "divisors"]),
        (
            lambda d: d["cores"][0]["memory"][0].update(served_axes=["K9"]),
            ["cores[0].memory[0].served_axes", "'K9' is not a pe_array axis", "['K0', 'C1']"],
        ),
        (
            lambda d: d["cores"][0]["memory"][0].update(served_axes=["K0"]),
            ["cores[0].memory[0].served_axes", "['K0'] leave 2 PEs along the other axes (C1 2)", "memories.rf.instances is 1"],
        ),
        (
            lambda d: d["memories"]["rf"].update(operand_energy_pj_per_bit={"X": {"read_energy_pj_per_bit": 1}}),
            ["memories.rf.operand_energy_pj_per_bit", "'X'"],
        ),
        (
            lambda d: d["memories"]["rf"].update(operand_energy_pj_per_bit={"W": {"read_energy_pj_per_bit": -1}}),
            ["memories.rf.operand_energy_pj_per_bit.W.read_energy_pj_per_bit", ">= 0"],
        ),
        (lambda d: d.update(precision_bits={"inputs": 8.5}), ["precision_bits.inputs", "positive integer"]),
        (lambda d: d["cores"][0].update(precision_bits={"halves": 8}), ["cores[0].precision_bits", "halves"]),
        (lambda d: d["offchip"].pop("energy_pj_per_bit"), ["offchip", "read_energy_pj_per_bit and write_energy_pj_per_bit"]),
        (
            lambda d: (
                d["memories"]["vector_memory"].update(per_pe=True)
                or d["cores"][0]["memory"].append({"level": "vector_memory", "operands": ["O"]})
                or d["cores"][1]["pe_array"][0].update(size=8)
            ),
            ["memories.vector_memory.per_pe", "different numbers of PEs"],
        ),
    ],
)
def test_bad_hardware_yaml_names_the_field(tmp_path: Path, edit, words: list[str]) -> None:
    path = _broken(tmp_path, edit)
    with pytest.raises(HardwareError) as error:
        load_hardware(path)
    message = str(error.value)
    assert str(path) in message
    for word in words:
        assert word in message, message


def test_negative_value_in_one_configuration_names_it(tmp_path: Path) -> None:
    path = _broken(tmp_path, lambda d: d["memories"]["local"].update(size_bytes="(local_kb - 2) * KiB"))
    with pytest.raises(HardwareError, match=r"memories.local.size_bytes.*local_kb=1"):
        load_hardware(path, sweep={"local_kb": [4, 1]})


def test_missing_file_and_invalid_yaml(tmp_path: Path) -> None:
    with pytest.raises(HardwareError, match="cannot read"):
        load_hardware(tmp_path / "none.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: [unclosed")
    with pytest.raises(HardwareError, match="not valid YAML"):
        load_hardware(bad)


def test_the_grid_limit_is_checked_before_expansion_and_can_be_raised() -> None:
    defaults = {"a": 1.0, "b": 1.0}
    grid = {"a": [1, 2], "b": [1, 2, 3]}
    with pytest.raises(ConfigError, match="6 configurations .* limit of 5"):
        expand_grid("t", defaults, grid, max_configs=5)
    assert len(expand_grid("t", defaults, grid, max_configs=6)) == 6


def test_new_keys_default_to_todays_single_word_and_plain_ports() -> None:
    hw = load_hardware(TINY)
    pe, vector = hw.cores
    for core in hw.cores:
        assert {key: int(bits[0]) for key, bits in core.precision_bits.items()} == {
            "inputs": 8,
            "weights": 8,
            "outputs": 8,
            "partial_sums": 8,
        }
    rf = hw.memories["rf"]
    assert rf.instances[0] == 1 and not rf.per_pe and rf.min_access_bits[0] == 0
    assert [(port.direction, port.bandwidth_bytes_per_cycle[0]) for port in rf.ports] == [("read", 4), ("write", 4)]
    assert hw.offchip.read_energy_pj_per_bit[0] == hw.offchip.write_energy_pj_per_bit[0] == hw.offchip.energy_pj_per_bit[0] == 1
    assert pe.levels[0].memory is rf and vector.pes[0] == 4


def test_precisions_ports_instances_and_access_width_load(tmp_path: Path) -> None:
    def edit(d: dict) -> None:
        d["precision_bits"] = {"inputs": 8, "weights": "2 * 4", "partial_sums": 32}
        d["cores"][1]["precision_bits"] = {"inputs": 16, "outputs": 16}
        rf = d["memories"]["rf"]
        rf.pop("read_bandwidth_bytes_per_cycle")
        rf.pop("write_bandwidth_bytes_per_cycle")
        rf.update(
            per_pe=True,
            min_access_bits=64,
            ports=[
                {"name": "rw", "direction": "read_write", "bandwidth_bytes_per_cycle": 8, "operands": ["W"]},
                {"direction": "read", "bandwidth_bytes_per_cycle": 2},
            ],
        )
        d["memories"]["local"]["instances"] = "local_kb * 2"
        d["memories"]["local"]["operand_energy_pj_per_bit"] = {"I": {"read_energy_pj_per_bit": "local_kb / 4"}}
        d["offchip"] = {"bandwidth_bytes_per_cycle": 8, "read_energy_pj_per_bit": 10, "write_energy_pj_per_bit": 12}

    hw = load_hardware(_broken(tmp_path, edit), sweep={"local_kb": [1, 3]})
    pe, vector = hw.cores
    assert {key: list(bits) for key, bits in pe.precision_bits.items()} == {
        "inputs": [8, 8],
        "weights": [8, 8],
        "outputs": [8, 8],  # word_bytes 1 = 8 bits
        "partial_sums": [32, 32],
    }
    assert vector.precision_bits["inputs"][0] == 16 and vector.precision_bits["partial_sums"][0] == 32
    rf = hw.memories["rf"]
    assert rf.per_pe and list(rf.instances) == [4, 4]  # the pe core's 2 x 2 PEs
    assert list(rf.min_access_bits) == [64, 64]
    assert rf.read_bandwidth_bytes_per_cycle[0] == 10 and rf.write_bandwidth_bytes_per_cycle[0] == 8
    assert rf.ports[0].operands == frozenset({"W"}) and rf.ports[1].name == "port1"
    assert list(hw.memories["local"].instances) == [2, 6]
    read_pj, write_pj = hw.memories["local"].energy_pj_per_bit("I")
    assert list(read_pj) == [0.25, 0.75] and list(write_pj) == [0.25, 0.25]  # the write is the memory's own
    assert list(hw.memories["local"].energy_pj_per_bit("W")[0]) == [0.25, 0.25]
    assert hw.offchip.energy_pj_per_bit[0] == 11 and hw.offchip.write_energy_pj_per_bit[0] == 12
    one = hw.take(slice(1, 2))
    assert one.memories["local"].instances[0] == 6 and one.cores[0].precision_bits["partial_sums"].shape == (1,)
    assert one.memories["rf"].ports[0].bandwidth_bytes_per_cycle.shape == (1,)
    assert list(one.memories["local"].energy_pj_per_bit("I")[0]) == [0.75]


def test_every_hardware_schema_key_is_described() -> None:
    schema = yaml.safe_load((REPO / "src/traincost/hardware/hardware.schema.yaml").read_text())
    undocumented = []

    def walk(node: object, path: str) -> None:
        if isinstance(node, dict):
            for key, value in node.get("properties", {}).items():
                if "description" not in value:
                    undocumented.append(f"{path}.{key}")
            for key, value in node.items():
                walk(value, f"{path}.{key}")
        elif isinstance(node, list):
            for item in node:
                walk(item, path)

    walk(schema, "")
    assert not undocumented, undocumented


def test_a_slice_of_the_configurations_keeps_the_axes_each_memory_serves(tmp_path: Path) -> None:
    """The scheduler costs a sweep in slices of its configurations (``take``); each slice keeps every core level as
    it is, the PE axes one instance of its memory serves (``served_axes``) with it."""

    def edit(d: dict) -> None:
        d["memories"]["rf"]["instances"] = 2
        d["cores"][0]["memory"][0]["served_axes"] = ["K0"]

    hw = load_hardware(_broken(tmp_path, edit), sweep={"local_kb": [1, 3]})
    for one in (hw.take(slice(0, 1)), hw.take(slice(1, 2))):
        assert [level.served_axes for level in one.cores[0].levels] == [("K0",), None]
        assert [level.operands for level in one.cores[0].levels] == [level.operands for level in hw.cores[0].levels]
        assert one.cores[0].levels[1].memory.size_bytes[0] in (1024, 3072)


def test_configurations_alike_in_every_number_are_one() -> None:
    """The PE cores' count is ``x_pes * y_pes``: a 3 x 3 grid of them with 1, 2 and 4 on each side has the counts
    1, 2, 4, 2, 4, 8, 4, 8, 16, five distinct designs; with two register files, ten. Those alike but in the count
    come together, each register file's five in a run."""
    hw = load_hardware(EDGE_TPU, sweep={"x_pes": [1, 2, 4], "y_pes": [1, 2, 4], "register_file_kb": [8, 64]})
    first, alike = hw.distinct_configs()
    assert len(first) == 10 and len(alike) == hw.n_configs == 18
    count = hw.cores[0].count
    rf = hw.memories["register_file"].size_bytes
    assert sorted(count[first[:5]]) == sorted(count[first[5:]]) == [1, 2, 4, 8, 16]
    assert len(set(rf[first[:5]])) == len(set(rf[first[5:]])) == 1
    # each configuration is alike to a distinct one with its own numbers, and the distinct ones all differ
    assert (count[first[alike]] == count).all() and (rf[first[alike]] == rf).all()
    assert len({(count[i], rf[i]) for i in first}) == 10
    # 2 x 4 PE cores and 4 x 2 are one design
    swapped = load_hardware(EDGE_TPU, sweep={"x_pes": [2, 4], "y_pes": [4, 2]}).take(np.array([0, 3]))
    assert list(swapped.configs["x_pes"]) == [2, 4] and len(swapped.distinct_configs()[0]) == 1


def test_at_rows_takes_every_array_of_a_core() -> None:
    hw = load_hardware(EDGE_TPU, sweep={"simd_units": [16, 32, 64], "local_memory_mb": [1, 2]})
    core = hw.cores[0]
    picked = at_rows(core, np.array([5, 0]))
    assert list(picked.count) == [16, 16]
    assert [axis.size[0] for axis in picked.pe_array] == [64, 4, 4] and picked.pe_array[0].size[1] == 16
    assert list(picked.levels[1].memory.size_bytes) == [2 * 2**20, 2**20]
    assert list(picked.precision_bits["weights"]) == [16, 16]
    assert (picked.dataflow, picked.runs) == (core.dataflow, core.runs)
