"""The embedded DESY-HH-like synthetic workload."""

from __future__ import annotations

import math
import time
from collections import Counter
from statistics import median

import pytest

from mysched.sim.workloads.synthetic import (CAMPAIGN_BLOCK, DESY_GROUPS, DESY_QUEUE_VOS, DESY_QUEUES, DESY_VOS,
                                        SyntheticSpec, capped_lognormal_mean, generate)

from ..conftest import REPO


@pytest.fixture(scope="module")
def default():
    return generate(SyntheticSpec())


def offered(workload, spec: SyntheticSpec) -> float:
    """Slot-seconds submitted per second of the duration, as a multiple of the farm."""
    return sum(tj.runtime * tj.job.cores for tj in workload) / (spec.slots * spec.duration)


def test_deterministic_per_seed_and_different_across_seeds():
    spec = SyntheticSpec(duration=12 * 3600, slots=200, seed=7)
    assert generate(spec) == generate(spec)
    other = generate(SyntheticSpec(duration=12 * 3600, slots=200, seed=8))
    assert [(t.job.submit_time, t.runtime) for t in other] != [(t.job.submit_time, t.runtime) for t in generate(spec)]


def test_sorted_with_ids_counting_up(default):
    times = [tj.job.submit_time for tj in default]
    assert times == sorted(times)
    assert [tj.job.id for tj in default] == [f"{i}.sim" for i in range(1, len(default) + 1)]
    spec = SyntheticSpec()
    assert spec.start <= times[0] and times[-1] < spec.start + spec.duration + 3600


def test_runtimes_never_exceed_queue_limits_and_requests_cover_them(default):
    for tj in default:
        limit = DESY_QUEUES[tj.job.queue]
        assert 0 <= tj.runtime <= limit
        assert tj.runtime <= tj.job.walltime <= limit
    # the cap is reached: some jobs run into the 90 h limit, as on a real farm
    assert any(tj.runtime == DESY_QUEUES["atlas"] for tj in generate(SyntheticSpec(duration=7 * 86400)))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_offered_load_matches_the_farm(seed):
    spec = SyntheticSpec(seed=seed)
    assert 1.05 <= offered(generate(spec), spec) <= 1.45  # load = 1.2 on average


def test_offered_load_scales_with_slots_and_load():
    small = SyntheticSpec(slots=400, seed=5)
    big = SyntheticSpec(slots=2000, seed=5)
    assert offered(generate(big), big) == pytest.approx(1.2, rel=0.12)
    light = SyntheticSpec(slots=2000, load=0.6, seed=5)
    assert offered(generate(light), light) == pytest.approx(0.6, rel=0.12)
    assert 4 < len(generate(big)) / len(generate(small)) < 6


def test_load_varies_over_time(default):
    spec = SyntheticSpec()
    windows = Counter()
    for tj in default:
        windows[int((tj.job.submit_time - spec.start) // (6 * 3600))] += tj.runtime * tj.job.cores
    per_window = [w / (spec.slots * 6 * 3600) for w in windows.values()]
    assert max(per_window) > 1.3 and min(per_window) < 1.0  # rushes and lulls


def test_production_campaigns_come_and_go():
    # each production/pilot group runs campaigns: some 6-hour blocks it is silent, though on
    # a farm this size it would otherwise submit dozens of bursts per block
    spec = SyntheticSpec(slots=4000, seed=1)
    groups = [g for g, m in DESY_GROUPS.items() if m.kind in ("prod", "pilot")]
    blocks = int(spec.duration // CAMPAIGN_BLOCK)
    active = {(tj.job.group, int((tj.job.submit_time - spec.start) // CAMPAIGN_BLOCK))
              for tj in generate(spec) if tj.job.group in groups}
    silent = [(g, b) for g in groups for b in range(blocks) if (g, b) not in active]
    assert 2 <= len(silent) <= len(groups) * blocks / 3


def test_default_size(default):
    assert 10_000 <= len(default) <= 30_000


@pytest.mark.bench
def test_default_is_generated_fast():
    t0 = time.perf_counter()
    generate(SyntheticSpec())
    assert time.perf_counter() - t0 < 1.0


def test_queues_vos_and_groups(default):
    group_vo = {g: vo for vo, groups in DESY_VOS.items() for g in groups}
    by_queue = Counter(tj.job.queue for tj in default)
    assert set(by_queue) == set(DESY_QUEUES)
    for tj in default:
        j = tj.job
        assert j.vo is None and j.group in group_vo
        assert group_vo[j.group] in DESY_QUEUE_VOS[j.queue], (j.group, j.queue)
    ops_queues = {tj.job.queue for tj in default if tj.job.group == "ops"}
    assert ops_queues == {"operations", "atlas", "cms", "lhcb"}


def test_ops_probes_every_few_minutes(default):
    spec = SyntheticSpec()
    probes = sorted(tj.job.submit_time for tj in default if tj.job.group == "ops" and tj.job.queue == "cms")
    assert len(probes) == pytest.approx(spec.duration / spec.ops_interval, rel=0.1)
    gaps = [b - a for a, b in zip(probes, probes[1:])]
    assert max(gaps) <= 1.1 * spec.ops_interval
    assert all(tj.runtime <= 3600 for tj in default if tj.job.group in DESY_VOS["ops"])


def test_production_has_few_busy_users_and_analysis_many(default):
    users = {g: Counter(tj.job.user for tj in default if tj.job.group == g) for g in ("atlasprd", "atlasusr")}
    assert len(users["atlasprd"]) <= 3 and len(users["atlasusr"]) >= 15
    # each production account runs many jobs; a typical analysis user few
    assert median(users["atlasprd"].values()) > 2 * median(users["atlasusr"].values())
    assert all(u.startswith("atlasprd") for u in users["atlasprd"])


def test_jobs_arrive_in_bursts(default):
    # production and pilot submissions come in bursts: many jobs seconds apart
    times = sorted(tj.job.submit_time for tj in default if tj.job.group == "atlasprd")
    close = sum(1 for a, b in zip(times, times[1:]) if b - a <= 5)
    assert close > len(times) / 2


def test_multicore_fraction(default):
    assert all(tj.job.cores == 1 for tj in default)  # default: single-core, as at DESY-HH
    five = generate(SyntheticSpec(mcore_fraction=0.05))
    mc = [tj.job for tj in five if tj.job.cores > 1]
    prod = [tj.job for tj in five if tj.job.group in ("atlasprd", "cmsprd")]
    assert {j.cores for j in mc} == {8} and {j.group for j in mc} <= {"atlasprd", "cmsprd"}
    assert 0.02 < len(mc) / len(prod) < 0.09
    all_mc = generate(SyntheticSpec(duration=6 * 3600, mcore_fraction=1.0, mcore_cores=4))
    assert {tj.job.cores for tj in all_mc if tj.job.group in ("atlasprd", "cmsprd")} == {4}


def test_memory_request_is_2gb_per_core(default):
    assert all(tj.job.mem == 2 * 1024**3 * tj.job.cores for tj in default if tj.job.group not in DESY_VOS["ops"])


def test_spec_validation_and_empty():
    assert generate(SyntheticSpec(duration=0)) == []
    with pytest.raises(ValueError):
        SyntheticSpec(mcore_fraction=1.5)
    with pytest.raises(ValueError):
        SyntheticSpec(slots=-1)


def test_capped_lognormal_mean():
    import random
    rnd = random.Random(1)
    xs = [min(5000.0, rnd.lognormvariate(7.0, 1.2)) for _ in range(200_000)]
    assert capped_lognormal_mean(2.718281828 ** 7.0, 1.2, 5000.0) == pytest.approx(sum(xs) / len(xs), rel=0.01)


def test_example_config_knows_every_group_and_queue():
    from mysched.config import load_config

    for path in (REPO / "etc" / "mysched.cfg", REPO / "mysched" / "data" / "mysched.cfg"):
        cfg = load_config(str(path))
        for vo, groups in DESY_VOS.items():
            for g in groups:
                assert cfg.vo_of(g) == vo, (path, g)
        assert set(cfg.queues) == set(DESY_QUEUES), path


@pytest.mark.parametrize("kw", [{"duration": math.inf}, {"duration": 1e308}, {"duration": 2 * 366 * 86400.0},
                                {"burst_jobs": 5, "burst_every": 3.6e-6}])
def test_spec_refuses_a_workload_that_would_never_finish_drawing(kw):
    with pytest.raises(ValueError):
        SyntheticSpec(**kw)
