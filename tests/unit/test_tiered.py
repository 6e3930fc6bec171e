"""The tiered-memory simulator: hand-computed traces, policy invariants, energy accounting, bad input."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from traincost.errors import ConfigError
from traincost.models.transformer import TransformerConfig, transformer_workload
from traincost.tiered.engine import Simulator, simulate, tier1_bytes_for_ratio
from traincost.tiered.outcome import price
from traincost.tiered.policies import POLICIES, AutoTM, VerOn, _best_case, make_policy
from traincost.tiered.split_ratio import DataCost, adjust_ratio, approximate_ratio
from traincost.tiered.study import study_runs
from traincost.tiered.system import Tier, TieredSystem, load_tiered_system
from traincost.tiered.trace import Trace, build_trace
from traincost.tiered.walk import Walk
from traincost.workload import Workload

HARDWARE = "config/hardware/tpuv4_tiered.yaml"
HORIZONTAL = [name for name, cls in POLICIES.items() if not cls.vertical and name != "hbm_only"]
SPLITTING = ["tm_training", "tm_training_off"]  # Algorithms 1-3 (the ideal tunes its ratios on energy alone)


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


def _trace(
    name: str, reads: tuple, writes: tuple, size_bytes: list[float], persistent: list[bool], *, compute_s: float = 1.0
) -> Trace:
    """A hand-made one-iteration trace: ops in order, each its reads and writes as (tensor, bytes) pairs."""
    uses: list[list[int]] = [[] for _ in size_bytes]
    for k, pairs in enumerate(zip(reads, writes, strict=True)):
        for t in sorted({t for side in pairs for t, _ in side}):
            uses[t].append(k)
    n = len(reads)
    return Trace(
        name=name,
        compute_s=np.full(n, compute_s),
        accel_energy_pj=np.zeros(n),
        signature=np.arange(n),
        phase=np.array(["forward"] * n),
        reads=reads,
        writes=writes,
        size_bytes=np.array(size_bytes),
        persistent=np.array(persistent),
        accesses=tuple(tuple(u) for u in uses),
        ops_per_iteration=n,
        samples=1.0,
        seq_len=4,
    )


def _hand_trace() -> Trace:
    """op0 reads A (a 200-byte weight) and writes B; op1 reads B and writes C; op2 reads A and C. 1 s each."""
    reads = (((0, 200.0),), ((1, 100.0),), ((0, 200.0), (2, 100.0)))
    writes = (((1, 100.0),), ((2, 100.0),), ())
    return _trace("hand", reads, writes, [200.0, 100.0, 100.0], [True, False, False])


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


@pytest.mark.parametrize("policy", [p for p in HORIZONTAL if p not in SPLITTING])
def test_horizontal_policies_equal_hbm_only_traffic_when_tier1_holds_everything(
    policy: str, tiny_trace: Trace, system: TieredSystem
) -> None:
    room = 2 * tiny_trace.live_peak_bytes()
    hbm = simulate(Walk.of(tiny_trace), system, make_policy("hbm_only"), tier1_bytes=system.capacity_bytes)
    tiered = simulate(Walk.of(tiny_trace), system, make_policy(policy), tier1_bytes=room)
    assert tiered.migrated_bytes == 0.0
    assert tiered.tier2_read_bytes == 0.0 and tiered.tier2_write_bytes == 0.0
    assert tiered.tier1_read_bytes == pytest.approx(hbm.tier1_read_bytes)
    assert tiered.tier1_write_bytes == pytest.approx(hbm.tier1_write_bytes)
    assert tiered.iteration_s == pytest.approx(hbm.iteration_s)


@pytest.mark.parametrize("policy", SPLITTING)
def test_tm_training_splits_by_timing_even_where_tier1_has_room(policy: str, tiny_trace: Trace, system: TieredSystem) -> None:
    # Algorithm 1 sizes r' from the request timing alone and Algorithm 3 only lowers it: Tier 2 shares even with room
    room = 2 * tiny_trace.live_peak_bytes()
    tiered = simulate(Walk.of(tiny_trace), system, make_policy(policy), tier1_bytes=room)
    assert tiered.migrated_bytes == 0.0
    assert 0.0 < tiered.split_ratio_min < 1.0 and tiered.split_ratio_max <= 1.0
    assert tiered.tier2_write_bytes > 0.0


@pytest.mark.parametrize("policy", list(POLICIES))
def test_energy_is_the_sum_of_its_parts(policy: str, tiny_trace: Trace, system: TieredSystem) -> None:
    tier1 = 0.3 * tiny_trace.live_peak_bytes()
    capacity = system.capacity_bytes if policy == "hbm_only" else tier1
    out = simulate(Walk.of(tiny_trace), system, make_policy(policy), tier1_bytes=capacity)
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


def test_unknown_policy_is_a_clear_error() -> None:
    with pytest.raises(ConfigError, match="tiered policy 'lfu'"):
        make_policy("lfu")


def test_split_ratio_approximation_by_hand() -> None:
    # enough time: Tier 2 streams its share in T_req = 1 s at 50 B/s, so 50 of 100 bytes go to Tier 2
    assert approximate_ratio(1.0, 100.0, 900.0, 50.0) == pytest.approx(0.5)
    # not enough time (T_min = 100 / 950 s): split by bandwidth
    assert approximate_ratio(0.05, 100.0, 900.0, 50.0) == pytest.approx(900 / 950)


def _prefetch_s(r: float, data: float, bw1: float, bw2: float) -> float:
    """Both tiers stream their shares of ``data`` at once: the prefetch ends with the slower."""
    return max(r * data / bw1, (1 - r) * data / bw2)


@given(
    t_req=st.floats(1e-4, 10.0),
    data=st.floats(1.0, 1e6),
    bw1=st.floats(10.0, 1e6),
    bw2=st.floats(1.0, 1e5),
)
def test_algorithm_1_as_printed_is_the_smallest_ratio_off_the_critical_path(t_req, data, bw1, bw2) -> None:
    t_min = data / (bw1 + bw2)
    r = approximate_ratio(t_req, data, bw1, bw2)
    if t_req >= t_min:  # time to spare: the whole datum streams within its window, and no smaller r does
        assert _prefetch_s(r, data, bw1, bw2) <= t_req * (1 + 1e-9)
        assert r == 0.0 or (1 - r) * data / bw2 == pytest.approx(t_req)  # exactly in T_req: a smaller r outlasts it
    else:  # memory-bound: the least prefetch time any split reaches
        assert _prefetch_s(r, data, bw1, bw2) == pytest.approx(t_min)
        prose = approximate_ratio(t_req, data, bw1, bw2, reading="prose")
        assert _prefetch_s(prose, data, bw1, bw2) >= t_min * (1 - 1e-9)


def test_split_ratio_as_the_prose_words_algorithm_1() -> None:
    # the branches swapped (an ablation): with T_req >= T_min the bandwidths' proportion, otherwise the share that
    # streams within T_req (0.05 s at 50 B/s: 2.5 of 100 bytes)
    assert approximate_ratio(1.0, 100.0, 900.0, 50.0, reading="prose") == pytest.approx(900 / 950)
    assert approximate_ratio(0.05, 100.0, 900.0, 50.0, reading="prose") == pytest.approx(1 - 0.05 * 50 / 100)


def _cost(**changes: float | bool) -> DataCost:
    """100 bytes read once at 50 B/s from Tier 2 within T_req = 1.02 s: Algorithm 1's r' is 1 - 1.02 * 50 / 100 = 0.49."""
    base = {
        "size_bytes": 100.0,
        "read_bytes": 100.0,
        "next_read_bytes": 100.0,
        "t_req_s": 1.02,
        "t_write_s": 100.0,  # writing the Tier 2 share never outlasts its producer here
        "evicted": False,
        "w1_pj": 1.0,
        "rd1_pj": 1.0,
        "w2_pj": 10.0,
        "rd2_pj": 10.0,
        "bw2_bytes_per_s": 50.0,
        "bw2_write_bytes_per_s": 50.0,
        "static_w": 0.0,
    }
    return DataCost(**(base | changes))


def test_algorithm_3_never_raises_the_ratio_and_keeps_a_split() -> None:
    start = approximate_ratio(1.02, 100.0, 900.0, 50.0)
    assert start == pytest.approx(0.49)
    # Tier 1 is cheaper when the data stays there, but RATIOADJUSTMENT only lowers r: it keeps r' = 0.49
    assert adjust_ratio(start, 4, _cost()) == pytest.approx(0.49)
    # the simulator's accounting, evicted data: each 1/4 step down saves 100 * (w1 + rd1) / 4 = 50 pJ of demotion and
    # store, and costs 100 / 4 / 50 = 0.5 s more of Tier 2 at the static power: 1 nW makes that 500 pJ, so the split stays
    per_access = {"evicted": True, "accounting": "per_access"}
    assert adjust_ratio(start, 4, _cost(**per_access, static_w=1e-9)) == pytest.approx(0.49)
    # with no static power every step saves energy: 0.49, 0.24, then 0 (steps of 1 / seq_len, clipped at 0)
    assert adjust_ratio(start, 4, _cost(**per_access)) == 0.0
    path = _cost(**per_access).energy_pj(np.array([0.49, 0.24]))
    assert path[0] - path[1] == pytest.approx(0.25 * 100 * (1.0 + 1.0))


def test_algorithm_3_as_printed_moves_data_fetched_often_to_flash() -> None:
    """ENERGYOVERHEAD as printed: a step of 1/4 down saves 2 * 0.25 * R * rd1 of HBM and costs 0.25 * D * rd2 of flash
    (rd1 = 1, rd2 = 10 pJ/B, D = 100 B): fetched once (R = 100) the step costs 250 - 50 pJ and the ratio stays; fetched
    eight times (R = 800) it saves 400 - 250 pJ, so every step is taken, down to 0."""
    start = approximate_ratio(1.02, 100.0, 900.0, 50.0)
    assert adjust_ratio(start, 4, _cost()) == pytest.approx(0.49)
    assert adjust_ratio(start, 4, _cost(read_bytes=800.0)) == 0.0
    path = _cost(read_bytes=800.0).energy_pj(np.array([0.49, 0.24]))
    assert path[0] - path[1] == pytest.approx(2 * 0.25 * 800 * 1.0 - 0.25 * 100 * 10.0)
    # the run-time overhead it then causes is charged at the static power: 100 / 50 - 1.02 s more at 1 mW outweighs it
    assert adjust_ratio(start, 4, _cost(read_bytes=800.0, static_w=1e-3)) == pytest.approx(0.49)


def test_runtime_overhead_depends_on_the_tier2_share() -> None:
    # Algorithm 3 line 3: T_o = D (1 - r) / BW2 - T_req, never negative, evicted or not
    for evicted in (False, True):
        cost = _cost(evicted=evicted)
        assert cost.runtime_overhead_s(0.49) == pytest.approx(0.0)
        assert cost.runtime_overhead_s(0.0) == pytest.approx(100 / 50 - 1.02)
        assert cost.runtime_overhead_s(1.0) == 0.0
    # writing the Tier 2 share outlasting its producer (1 s here) adds the excess: 0.51 * 100 / 50 - 1
    assert _cost(t_write_s=1.0).runtime_overhead_s(0.49) == pytest.approx(0.51 * 100 / 50 - 1.0)


def _hot_trace() -> Trace:
    """Two producer/reader pairs of one op type each: op0 and op2 write B (1,000 bytes), op1 and op3 read it in three
    passes (3,000 bytes: hot data). 20 s per op, so B's read gets T_req = 20 * 3,000 / 4,000 = 15 s of its window."""
    reads = ((), ((0, 3000.0),), (), ((1, 3000.0),))
    writes = (((0, 1000.0),), (), ((1, 1000.0),), ())
    trace = _trace("hot", reads, writes, [1000.0, 1000.0], [False, False], compute_s=20.0)
    return replace(trace, signature=np.array([0, 1, 0, 1]))


def test_tm_training_does_not_promote_what_its_split_placed_in_tier2(system: TieredSystem) -> None:
    # r' = 1 - 15 * 100 / 3,000 = 0.5 (Tier 2 at 100 B/s); Tier 2 costs more energy, so Algorithm 3 keeps it.
    # B is hot (read three times its size), yet its Tier 2 half streams from Tier 2 in every pass: no promotion.
    chip = _simple_system(system)
    outcome = Simulator(Walk.of(_hot_trace(), 2), chip, make_policy("tm_training"), tier1_bytes=1e5).run()
    assert outcome.split_ratio_count == 1 and outcome.split_ratio_min == pytest.approx(0.5)
    assert outcome.promoted_bytes == 0.0
    assert outcome.tier2_read_bytes == pytest.approx(2 * 0.5 * 3000)  # two reads of B, half from Tier 2
    assert outcome.tier2_write_bytes == pytest.approx(2 * 0.5 * 1000)


def test_without_hot_promotion_tm_training_reads_where_the_data_lies(system: TieredSystem) -> None:
    # op0 writes A, op1 writes C (1,000 B each; 1,200 B of Tier 1, so C pushes 800 B of A out), op2 reads A in three
    # passes: hot data, partly in Tier 2. With promotion its 800 B come back to Tier 1 once; without, they stream from
    # Tier 2 in every pass
    reads = ((), (), ((0, 3000.0),))
    writes = (((0, 1000.0),), ((1, 1000.0),), ())
    trace = _trace("evicted", reads, writes, [1000.0, 1000.0], [False, False], compute_s=20.0)
    chip = _simple_system(system)
    promoting = Simulator(Walk.of(trace, 1), chip, make_policy("tm_training"), tier1_bytes=1200.0).run()
    reading = Simulator(
        Walk.of(trace, 1), replace(chip, hot_promotion=False), make_policy("tm_training"), tier1_bytes=1200.0
    ).run()
    assert promoting.promoted_bytes == pytest.approx(800.0) and promoting.tier2_read_bytes == 0.0  # a promotion is migration
    assert reading.promoted_bytes == 0.0 and reading.tier2_read_bytes == pytest.approx(3 * 800.0)


def test_tier2_rereads_are_priced_per_access_or_once_per_store(system: TieredSystem) -> None:
    # the trace above without promotion: 800 B of A are demoted, then read in three passes from Tier 2: the first pass
    # reads what was stored, the other two (1,600 B) re-read it. Per access each pass costs flash read energy; once per
    # store (Algorithm 3's accounting) the re-reads cost nothing, and nothing else changes
    reads = ((), (), ((0, 3000.0),))
    writes = (((0, 1000.0),), ((1, 1000.0),), ())
    trace = _trace("evicted", reads, writes, [1000.0, 1000.0], [False, False], compute_s=20.0)
    chip = replace(_simple_system(system), hot_promotion=False)
    tally = Simulator(Walk.of(trace, 1), chip, make_policy("tm_training"), tier1_bytes=1200.0).count()
    assert tally.tier2_read_bytes == pytest.approx(2400.0) and tally.tier2_reread_bytes == pytest.approx(1600.0)
    per_access = price(tally, chip)
    once = price(tally, replace(chip, tier2_read_energy="once_per_store"))
    reread_j = 1600.0 * chip.tier2.read_pj_per_byte * 1e-12
    assert per_access.energy_tier2_reread_j == pytest.approx(reread_j) and once.energy_tier2_reread_j == 0.0
    assert per_access.energy_tier_sram_j - once.energy_tier_sram_j == pytest.approx(reread_j)
    assert per_access.energy_j - once.energy_j == pytest.approx(reread_j)
    assert (per_access.iteration_s, per_access.tier2_read_bytes) == (once.iteration_s, once.tier2_read_bytes)


def test_split_only_if_evicted_keeps_in_tier1_what_tier1_keeps(system: TieredSystem) -> None:
    # the ablation's reading of "splits ... as needed": B, written and read back with 100 kB of Tier 1, is never evicted
    chip = replace(_simple_system(system), split_only_if_evicted=True)
    outcome = Simulator(Walk.of(_hot_trace(), 2), chip, make_policy("tm_training"), tier1_bytes=1e5).run()
    assert outcome.split_ratio_min == 1.0 and outcome.tier2_read_bytes == outcome.tier2_write_bytes == 0.0
    # as printed, Algorithms 1-3 split B by timing alone (r' = 0.5, test above), Tier 1 room or not
    as_printed = Simulator(Walk.of(_hot_trace(), 2), _simple_system(system), make_policy("tm_training"), tier1_bytes=1e5)
    assert as_printed.run().split_ratio_min == pytest.approx(0.5)


def test_tier1_is_the_papers_share_of_the_memory() -> None:
    memory = 32 * 2**30
    assert tier1_bytes_for_ratio(25, 1e6, memory, share_per_ratio=0.005) == memory / 8  # 12.5 %
    assert tier1_bytes_for_ratio(100, 1e6, memory, share_per_ratio=0.005) == memory / 2
    assert tier1_bytes_for_ratio(400, 1e6, memory, share_per_ratio=0.005) == memory  # capped
    assert tier1_bytes_for_ratio(25, 1e6, memory) == 25e6  # by model bytes when no share is given
    with pytest.raises(ConfigError, match="share per unit of ratio"):
        tier1_bytes_for_ratio(25, 1e6, memory, share_per_ratio=0.0)


def test_vertical_tiering_reads_only_from_tier1_and_writes_back_dead_dirty_data(system: TieredSystem) -> None:
    # Ver_On, 300 B of Tier 1. op0: A (200 B) filled from Tier 2; B written into the cache (dirty).
    # op1 reads B (a hit), writes C: room is made by evicting A's least recent page (clean: no traffic). B is now dead,
    # but a cache cannot know that: it stays. op2 reads A: its missing page is filled, evicting B, whose dirty page is
    # written back to Tier 2. C is read from the cache.
    chip = _simple_system(system)
    outcome = Simulator(Walk.of(_hand_trace(), 1), chip, make_policy("ver_on"), tier1_bytes=300.0).run()
    assert outcome.tier2_read_bytes == 0.0 and outcome.tier2_write_bytes == 0.0  # requests never reach Tier 2
    assert outcome.promoted_bytes == pytest.approx(300.0)  # A's two pages, then A's evicted page again
    assert outcome.demoted_bytes == pytest.approx(100.0)  # B, dead and dirty
    # a write the cache cannot hold passes through it: with 100 B, B and C (each written while the op's input fills the
    # cache) go on down to Tier 2, then come back up when read
    small = Simulator(Walk.of(_hand_trace(), 1), chip, make_policy("ver_on"), tier1_bytes=100.0).run()
    assert small.tier2_read_bytes == 0.0 and small.tier2_write_bytes == 0.0
    assert small.demoted_bytes == pytest.approx(200.0)


def _three_ops() -> Trace:
    """op0 reads W (100 B, persistent) and writes X (100 B); op1 reads X in four passes (400 B) and writes Y (300 B);
    op2 reads Y and W. 1 s each."""
    reads = (((0, 100.0),), ((1, 400.0),), ((2, 300.0), (0, 100.0)))
    writes = (((1, 100.0),), ((2, 300.0),), ())
    return _trace("three", reads, writes, [100.0, 100.0, 300.0], [True, False, False])


def test_autotm_applies_the_best_of_four_cases_per_op(system: TieredSystem) -> None:
    chip = _simple_system(system)  # Tier 2: 100 B/s each way
    # op1, Tier 1 empty with room, X in Tier 2, a window of 2 s (op0's compute and op1's own). Tier 2 seconds per case
    # (inputs, outputs): promote X and write Y to Tier 1: 1 s; promote, Y to Tier 2: 1 + 3; X read where it is (four
    # passes), Y to Tier 1: 4; both in Tier 2: 7. Promoting the data read four times stalls least.
    sim = Simulator(Walk.of(_three_ops(), 1), chip, AutoTM(), tier1_bytes=1000.0)
    assert _best_case(sim, 1, 0.0) == (True, True)
    # op2 with 100 B of Tier 1: promoting Y and W (400 B) means demoting 300 B: 4 + 3 s against 4 s for reading them
    # where they are; both outputs cases tie (op2 writes nothing) and the first, Tier 1, is taken
    sim = Simulator(Walk.of(_three_ops(), 1), chip, AutoTM(), tier1_bytes=100.0)
    assert _best_case(sim, 2, 0.0) == (False, True)
    # op0 with W in Tier 1 (placed first, as AutoTM starts): nothing to promote, X's 100 B fit: no Tier 2 time at all,
    # and reading where the data is moves the fewest bytes
    sim.place(0, 1.0)
    sim.tier1_capacity = 1000.0
    assert _best_case(sim, 0, 0.0) == (False, True)
    # a Tier 2 backlog of 10 s makes every case stall; X's single read still goes where it is, not through a promotion
    sim.t2.free_s = 10.0
    assert _best_case(sim, 0, 0.0) == (False, True)
    # the whole run with 100 B of Tier 1, W in it. op0: X to Tier 1 (in Tier 2, its reader would fetch 400 B in a 1 s
    # window), but W, which op0 reads, cannot leave: X goes to Tier 2. op1: promote X (read four times), demoting W for
    # room; Y to Tier 1 (3 s of stall either way, 2 more for op2 reading Y from Tier 2), but X fills Tier 1: Y goes to
    # Tier 2. op2: Y and W read where they are (4 s) rather than promoted behind 300 B of demotions (7 s).
    outcome = Simulator(Walk.of(_three_ops(), 1), chip, make_policy("autotm"), tier1_bytes=100.0).run()
    assert (outcome.promoted_bytes, outcome.demoted_bytes) == (100.0, 100.0)
    assert (outcome.tier2_read_bytes, outcome.tier2_write_bytes) == (400.0, 400.0)


def test_autotm_without_look_ahead_weighs_only_the_ops_own_traffic(system: TieredSystem) -> None:
    # op0 with 100 B of Tier 1 holding W: X to Tier 1 means demoting W (100 B each way); to Tier 2, only X is written
    # (1 s, within op0's window), but its reader op1 then fetches 400 B of it from Tier 2 in a short window and stalls.
    # With the look-ahead that stall is charged to op0's case, so X goes to Tier 1; without it, the case that moves
    # fewer bytes wins: X to Tier 2
    chip = _simple_system(system)
    cases = []
    for lookahead in (True, False):
        sim = Simulator(Walk.of(_three_ops(), 1), replace(chip, autotm_lookahead=lookahead), AutoTM(), tier1_bytes=100.0)
        sim.place(0, 1.0)
        cases.append(_best_case(sim, 0, 0.0))
    assert cases == [(False, True), (False, False)]


def test_trace_repeats_with_fresh_activations_and_shared_weights(tiny_trace: Trace) -> None:
    twice = tiny_trace.repeated(2)
    n, m = len(tiny_trace), len(tiny_trace.size_bytes)
    assert len(twice) == 2 * n
    for first, second in zip(twice.reads[:n], twice.reads[n:], strict=True):
        for (t1, b1), (t2, b2) in zip(first, second, strict=True):
            assert b1 == b2
            assert t2 == (t1 if tiny_trace.persistent[t1] else t1 + m)


def test_no_policy_beats_the_static_ceiling_which_is_computed_by_hand(tiny_transformer: Workload, system: TieredSystem) -> None:
    table = study_runs(tiny_transformer, system, variant="base", ratios=[3.0, 30.0], policies=list(POLICIES)).table
    assert (table["energy_efficiency_vs_hbm"] <= table["static_ceiling_vs_hbm"] * (1 + 1e-12)).all()
    for ratio, runs in table.groupby("ratio"):
        hbm = runs[runs["policy"] == "hbm_only"].iloc[0]
        tier1 = runs[runs["policy"] == "tm_training"].iloc[0]["tier1_bytes"]
        capacity = system.capacity_bytes
        swapped_w = system.tier1.static_w(capacity) - system.tier1.static_w(tier1) - system.tier2.static_w(capacity - tier1)
        static_s = hbm["energy_static_j"] / system.tier1.static_w(capacity)
        expected = hbm["energy_j"] / (hbm["energy_j"] - swapped_w * static_s)
        ceilings = runs.set_index("policy")["static_ceiling_vs_hbm"]
        assert ceilings["hbm_only"] == 1.0
        assert ceilings.drop("hbm_only").to_numpy() == pytest.approx(expected, rel=1e-12), ratio


def test_a_switch_given_an_unknown_name_is_refused(system: TieredSystem) -> None:
    for name in ("split_ratio_reading", "split_energy", "tier2_read_energy"):
        with pytest.raises(ConfigError, match=f"{name} 'sometimes': expected one of"):
            replace(system, **{name: "sometimes"})
