"""The simulator's shortcuts change no result: a Walk shared by many simulations, the fast paths of the engine
(checked against outcomes recorded before them, bit for bit), and the study's one set of runs per Tier 1 size."""

from __future__ import annotations

import json
import math
from dataclasses import asdict
from pathlib import Path

import pandas as pd
import pytest

from traincost.tiered.engine import simulate
from traincost.tiered.policies import POLICIES, make_policy
from traincost.tiered.study import model_bytes_per_chip, study_runs
from traincost.tiered.system import TieredSystem, load_tiered_system
from traincost.tiered.trace import Trace, build_trace
from traincost.tiered.walk import Walk
from traincost.workload import Workload

HARDWARE = "config/hardware/tpuv4_tiered.yaml"
RECORDED = Path(__file__).parents[1] / "fixtures" / "tiered_outcomes.json"


@pytest.fixture(scope="module")
def system() -> TieredSystem:
    return load_tiered_system(HARDWARE)


@pytest.fixture(scope="module")
def tiny_trace(tiny_transformer: Workload, system: TieredSystem) -> Trace:
    return build_trace(tiny_transformer, system)


@pytest.fixture(scope="module")
def recorded() -> list[dict]:
    return json.loads(RECORDED.read_text())["runs"]


@pytest.mark.parametrize("shared", [True, False], ids=["one walk for all", "a walk each"])
def test_every_policy_gives_the_outcomes_recorded_before_the_speed_up(
    shared: bool, recorded: list[dict], tiny_trace: Trace, system: TieredSystem
) -> None:
    walk = Walk.of(tiny_trace)
    for run in recorded:
        share, policy = run["tier1_share_of_live_peak"], run["policy"]
        capacity = system.capacity_bytes if policy == "hbm_only" else share * tiny_trace.live_peak_bytes()
        out = simulate(walk if shared else Walk.of(tiny_trace), system, make_policy(policy), tier1_bytes=capacity)
        expected = {key: value for key, value in run.items() if key not in ("policy", "tier1_share_of_live_peak")}
        assert _same(asdict(out), expected), (policy, share)
    assert {run["policy"] for run in recorded} == set(POLICIES)


def _same(ours: dict, recorded: dict) -> bool:
    """Equal to the bit, NaN equal to NaN (a policy that splits nothing has NaN split-ratio quantiles)."""
    return ours.keys() == recorded.keys() and all(
        a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))
        for a, b in ((ours[k], recorded[k]) for k in ours)
    )


def test_the_walk_repeats_the_trace_and_releases_each_tensor_at_its_last_use(tiny_trace: Trace) -> None:
    walk = Walk.of(tiny_trace, 2)
    assert len(walk.compute_s) == 2 * len(tiny_trace)
    assert walk.size_bytes == walk.trace.size_bytes.tolist()
    released = [t for ops in walk.released for t in ops]
    assert len(released) == len(set(released))  # once each
    for k, tensors in enumerate(walk.released):
        for t in tensors:
            assert walk.trace.last_use(t) == k and not walk.persistent[t]
            assert t in walk.touched[k]


def test_ratios_with_the_same_tier1_share_one_set_of_runs(tiny_transformer: Workload, system: TieredSystem) -> None:
    # an address space of twice the live peak: ratios 1,000 and 2,000 both cap Tier 1 at all of it
    small = system.with_capacity(2 * build_trace(tiny_transformer, system).live_peak_bytes())
    assert 1000 * model_bytes_per_chip(tiny_transformer, word_bytes=system.hardware.word_bytes) > small.capacity_bytes
    policies = ["hor_off", "autotm", "tm_training"]
    both = study_runs(tiny_transformer, small, variant="base", ratios=[1000, 2000], policies=policies).table
    alone = study_runs(tiny_transformer, small, variant="base", ratios=[2000], policies=policies).table
    second = both[both["ratio"] == 2000].reset_index(drop=True)
    pd.testing.assert_frame_equal(second, alone, check_exact=True)
    first = both[both["ratio"] == 1000].drop(columns="ratio").reset_index(drop=True)
    pd.testing.assert_frame_equal(first, alone.drop(columns="ratio"), check_exact=True)
