"""The tiered-memory simulator: hand-computed traces, policy invariants, energy accounting, bad input."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from traincost.errors import ConfigError
from traincost.models.transformer import TransformerConfig, transformer_workload
from traincost.tiered.autotm import plan_autotm
from traincost.tiered.engine import Simulator, simulate
from traincost.tiered.policies import POLICIES, VerOn, make_policy
from traincost.tiered.split_ratio import DataCost, adjust_ratio, approximate_ratio
from traincost.tiered.system import Tier, TieredSystem, load_tiered_system
from traincost.tiered.trace import Trace, build_trace
from traincost.tiered.walk import Walk

HARDWARE = "config/hardware/tpuv4_tiered.yaml"
HORIZONTAL = [name for name, cls in POLICIES.items() if not cls.vertical and name != "hbm_only"]


@pytest.fixture(scope="module")
def system() -> TieredSystem:
    return load_tiered_system(HARDWARE)


@pytest.fixture(scope="module")
def tiny_trace(system: TieredSystem) -> Trace:
    config = TransformerConfig(
        name="tiny", n_layer=2, d_model=64, n_head=4, d_head=16, d_ff=256, vocab_size=128, seq_len=32, batch=4
    )
    return build_trace(transformer_workload(config), system)


def _simple_system(system: TieredSystem) -> TieredSystem:
    """Round numbers: Tier 1 1,000 B/s, Tier 2 100 B/s, 100-byte pages, 1 pJ/B and 10 pJ/B, no static power."""
    tier1 = Tier("fast", 1000.0, 1000.0, 1.0, 1.0, 0.0)
    tier2 = Tier("slow", 100.0, 100.0, 10.0, 10.0, 0.0)
    return replace(system, tier1=tier1, tier2=tier2, page_bytes=100.0, accelerator_static_w=0.0, capacity_bytes=1e6)


def _hand_trace() -> Trace:
    """op0 reads A (a 200-byte weight) and writes B; op1 reads B and writes C; op2 reads A and C. 1 s each."""
    reads = (((0, 200.0),), ((1, 100.0),), ((0, 200.0), (2, 100.0)))
    writes = (((1, 100.0),), ((2, 100.0),), ())
    return Trace(
        name="hand",
        compute_s=np.ones(3),
        accel_energy_pj=np.zeros(3),
        signature=np.arange(3),
        phase=np.array(["forward"] * 3),
        reads=reads,
        writes=writes,
        size_bytes=np.array([200.0, 100.0, 100.0]),
        persistent=np.array([True, False, False]),
        accesses=((0, 2), (0, 1), (1, 2)),
        ops_per_iteration=3,
        samples=1.0,
        seq_len=4,
    )


def test_hand_trace_gives_hand_computed_migrations_and_stalls(system: TieredSystem) -> None:
    # Hor_On, 300 B of Tier 1, A starts in Tier 2. op0: promote A (2 s on Tier 2), read it (0.2 s): stall 2.2.
    # op1: writing C needs room: A (least recently used) loses one page (demoted, 1 s on Tier 2); no stall.
    # op2: promote A's other page behind that demotion (Tier 2 busy until 4.2, done at 5.2), read A and C: stall 1.3.
    chip = _simple_system(system)
    outcome = Simulator(Walk.of(_hand_trace(), 1), chip, make_policy("hor_on"), tier1_bytes=300.0).run()
    assert outcome.promoted_bytes == 300.0
    assert outcome.demoted_bytes == 100.0
    assert outcome.stall_s == pytest.approx(3.5)
    assert outcome.iteration_s == pytest.approx(6.5)
    assert outcome.tier2_read_bytes == 0.0 and outcome.tier2_write_bytes == 0.0
    # migration energy: promotions read Tier 2 and write Tier 1, demotions the reverse
    assert outcome.energy_migration_j == pytest.approx((300 * (10 + 1) + 100 * (1 + 10)) * 1e-12)


def test_hand_trace_fits_in_tier1_then_nothing_migrates(system: TieredSystem) -> None:
    chip = _simple_system(system)
    outcome = Simulator(Walk.of(_hand_trace(), 2), chip, make_policy("hor_off"), tier1_bytes=1000.0).run()
    assert outcome.migrated_bytes == 0.0
    # in the steady iteration op0's read of A (0.2 s) is prefetched while the previous iteration's op2 computes
    assert outcome.stall_s == 0.0
    assert outcome.iteration_s == pytest.approx(3.0)


def test_belady_never_migrates_more_than_lru(tiny_trace: Trace, system: TieredSystem) -> None:
    class VerBelady(VerOn):
        name = "ver_belady"
        belady = True

    live = tiny_trace.live_peak_bytes()
    for share in (0.1, 0.25, 0.5, 0.8):
        lru = simulate(Walk.of(tiny_trace), system, VerOn(), tier1_bytes=share * live)
        belady = simulate(Walk.of(tiny_trace), system, VerBelady(), tier1_bytes=share * live)
        assert belady.promoted_bytes <= lru.promoted_bytes, share


@pytest.mark.parametrize("policy", HORIZONTAL)
def test_horizontal_policies_equal_hbm_only_traffic_when_tier1_holds_everything(
    policy: str, tiny_trace: Trace, system: TieredSystem
) -> None:
    room = 2 * tiny_trace.live_peak_bytes()
    plan = plan_autotm(tiny_trace, system, tier1_bytes=room).arrays()
    hbm = simulate(Walk.of(tiny_trace), system, make_policy("hbm_only"), tier1_bytes=system.capacity_bytes)
    tiered = simulate(Walk.of(tiny_trace), system, make_policy(policy, plan=plan), tier1_bytes=room)
    assert tiered.migrated_bytes == 0.0
    assert tiered.tier2_read_bytes == 0.0 and tiered.tier2_write_bytes == 0.0
    assert tiered.tier1_read_bytes == pytest.approx(hbm.tier1_read_bytes)
    assert tiered.tier1_write_bytes == pytest.approx(hbm.tier1_write_bytes)
    assert tiered.iteration_s == pytest.approx(hbm.iteration_s)


@pytest.mark.parametrize("policy", list(POLICIES))
def test_energy_is_the_sum_of_its_parts(policy: str, tiny_trace: Trace, system: TieredSystem) -> None:
    tier1 = 0.3 * tiny_trace.live_peak_bytes()
    plan = plan_autotm(tiny_trace, system, tier1_bytes=tier1).arrays()
    capacity = system.capacity_bytes if policy == "hbm_only" else tier1
    out = simulate(Walk.of(tiny_trace), system, make_policy(policy, plan=plan), tier1_bytes=capacity)
    t1, t2 = system.tier1, system.tier2
    assert out.energy_j == pytest.approx(
        out.energy_accelerator_j + out.energy_tier_sram_j + out.energy_migration_j + out.energy_static_j
    )
    sram = out.tier1_read_bytes * t1.read_pj_per_byte + out.tier1_write_bytes * t1.write_pj_per_byte
    sram += out.tier2_read_bytes * t2.read_pj_per_byte + out.tier2_write_bytes * t2.write_pj_per_byte
    assert out.energy_tier_sram_j == pytest.approx(sram * 1e-12)
    static = (t1.static_w(out.tier1_bytes) + t2.static_w(out.tier2_bytes)) * out.iteration_s
    assert out.energy_static_j == pytest.approx(static)
    accelerator = tiny_trace.accel_energy_pj.sum() * 1e-12 + system.accelerator_static_w * out.iteration_s
    assert out.energy_accelerator_j == pytest.approx(accelerator)
    assert out.iteration_s >= tiny_trace.compute_s.sum()


def test_more_tier1_never_migrates_more_for_tm_training(tiny_trace: Trace, system: TieredSystem) -> None:
    live = tiny_trace.live_peak_bytes()
    migrated = [
        simulate(Walk.of(tiny_trace), system, make_policy("tm_training"), tier1_bytes=s * live).migrated_bytes
        for s in (0.2, 0.5, 1.5)
    ]
    assert migrated[-1] == 0.0
    assert migrated[0] >= migrated[-1]


def test_data_larger_than_the_chip_fails_naming_the_workload(system: TieredSystem) -> None:
    config = TransformerConfig(
        name="too_big", n_layer=2, d_model=64, n_head=4, d_head=16, d_ff=256, vocab_size=128, seq_len=32, batch=4
    )
    trace = build_trace(transformer_workload(config), system)
    small = system.with_capacity(trace.live_peak_bytes() / 2)
    with pytest.raises(ConfigError, match=r"workload too_big: .* GiB of live data per chip does not fit"):
        simulate(Walk.of(trace), small, make_policy("tm_training"), tier1_bytes=1e3)


def test_unknown_policy_and_missing_plan_are_clear_errors() -> None:
    with pytest.raises(ConfigError, match="tiered policy 'lfu'"):
        make_policy("lfu")
    with pytest.raises(ConfigError, match="needs an AutoTM plan"):
        make_policy("autotm")


def test_split_ratio_approximation_by_hand() -> None:
    # enough time: Tier 2 streams its share in T_req = 1 s at 50 B/s, so 50 of 100 bytes go to Tier 2
    assert approximate_ratio(1.0, 100.0, 900.0, 50.0) == pytest.approx(0.5)
    # not enough time (T_min = 100 / 950 s): split by bandwidth
    assert approximate_ratio(0.05, 100.0, 900.0, 50.0) == pytest.approx(900 / 950)


def test_ratio_adjustment_moves_toward_lower_energy() -> None:
    base = {
        "size_bytes": 100.0,
        "read_bytes": 100.0,
        "next_read_bytes": 100.0,
        "t_req_s": 10.0,
        "w1_pj": 1.0,
        "rd1_pj": 1.0,
        "w2_pj": 10.0,
        "rd2_pj": 10.0,
        "bw2_bytes_per_s": 50.0,
        "static_w": 0.0,
    }
    kept = DataCost(evicted=False, **base)
    evicted = DataCost(evicted=True, **base)
    assert adjust_ratio(0.5, 4, kept) == 1.0  # Tier 1 is cheaper when the data stays there
    assert adjust_ratio(0.5, 4, evicted) == 0.0  # storing in Tier 1 only to be demoted costs more
    assert adjust_ratio(0.5, 4, kept) - 0.5 == pytest.approx(2 * 0.25)  # steps of 1 / seq_len


def test_autotm_plan_uses_tier1_only_when_it_has_room(tiny_trace: Trace, system: TieredSystem) -> None:
    none = plan_autotm(tiny_trace, system, tier1_bytes=0.0)
    assert not none.tier1.any()
    ample = plan_autotm(tiny_trace, system, tier1_bytes=2 * tiny_trace.live_peak_bytes())
    used = np.array([bool(a) for a in tiny_trace.accesses])
    assert ample.tier1[used].all()
    assert ample.status == "optimal"


def test_trace_repeats_with_fresh_activations_and_shared_weights(tiny_trace: Trace) -> None:
    twice = tiny_trace.repeated(2)
    n, m = len(tiny_trace), len(tiny_trace.size_bytes)
    assert len(twice) == 2 * n
    for first, second in zip(twice.reads[:n], twice.reads[n:], strict=True):
        for (t1, b1), (t2, b2) in zip(first, second, strict=True):
            assert b1 == b2
            assert t2 == (t1 if tiny_trace.persistent[t1] else t1 + m)
