"""The cyclic collector is paused around each plan by the callers that plan again and again
(daemon, simulator, `mysched bench`), and put back as it was: the pure core leaves
process-wide state alone."""

from __future__ import annotations

import gc

import pytest

from mysched.config import config_from_text
from mysched.core.model.batch import Job, Node, TraceJob
from mysched.core.share.usage import Usage
from mysched.errors import RunRefused
from mysched.gcpause import gc_paused
from mysched.sim.replay import SimOptions, simulate

from .conftest import nodes, queued, snap

CFG = 'vos = { atlas = { groups = ["atlas"]; share = 50; }; cms = { groups = ["cms"]; share = 50; }; };\n'


def test_plan_under_the_pause_runs_without_the_collector_and_leaves_it_on():
    from mysched.core.planner import plan
    s = snap([queued("1.s", "u1", "atlas"), queued("2.s", "u2", "cms")], nodes(1, 4))
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
        p = plan(s, config_from_text(CFG), Usage(), 1000.0)
        assert not gc.isenabled()
    assert gc.isenabled() and {x.job_id for x in p.starts} == {"1.s", "2.s"}


def test_a_nested_pause_keeps_the_outer_one_and_an_error_still_restores():
    with gc_paused():
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the inner end does not switch it on under the outer pause
    assert gc.isenabled()
    with pytest.raises(RuntimeError), gc_paused():
        raise RuntimeError("bug")
    assert gc.isenabled()


def test_a_collector_switched_off_by_the_process_stays_off():
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def recording(monkeypatch, module, seen: list[bool]):
    """Replace `module`'s plan by one that notes whether the collector runs when it is called."""
    from mysched.core import planner
    real = planner.plan

    def plan(*a, **kw):
        seen.append(gc.isenabled())
        return real(*a, **kw)
    monkeypatch.setattr(module, "plan", plan)


def test_the_daemon_plans_and_plans_again_with_the_collector_paused(monkeypatch):
    from mysched.backends.sim.farm import SimulatedFarm
    from mysched.daemon import cycle
    from mysched.daemon.cycle import Daemon

    wl = [TraceJob(queued(f"{i}.s", f"u{i}", "atlas" if i % 2 else "cms", submit=100.0 + i), 1e6) for i in range(4)]
    farm = SimulatedFarm([Node("wn01", 2), Node("wn02", 2)], wl, start=100.0)
    farm.advance(200.0)
    real_run = farm.run_job
    refused = {"0.s"}

    def run_job(job_id, placement):
        if job_id in refused:
            refused.discard(job_id)
            raise RunRefused("node full", code=15046)
        real_run(job_id, placement)
    farm.run_job = run_job
    farm.close = lambda: None
    seen: list[bool] = []
    recording(monkeypatch, cycle, seen)
    out = Daemon(config_from_text(CFG), farm, wall=lambda: 1000.0).cycle()
    assert out.result == "ok" and out.failures == {"refused": 1}
    assert seen == [False, False]  # the plan, and the plan made again after the refused start
    assert gc.isenabled()


def test_the_simulator_plans_with_the_collector_paused(monkeypatch):
    from mysched.sim import replay

    wl = [TraceJob(Job(str(i), "q", "u", "atlas", cores=4 if i == 0 else 1, submit_time=1e9 + i), 300.0)
          for i in range(6)]
    seen: list[bool] = []
    recording(monkeypatch, replay, seen)
    r = simulate(wl, config_from_text(CFG), tuple(nodes(1, 2)), SimOptions())
    assert r.unplaceable  # the 4-core job never fits: the last plan says why, also paused
    assert len(seen) > 2 and not any(seen)
    assert gc.isenabled()


def test_bench_times_plans_with_the_collector_paused(monkeypatch):
    from mysched.cli.bench import measure
    from mysched.core import planner

    seen: list[bool] = []
    recording(monkeypatch, planner, seen)
    measure(nodes=4, slots=2, running=2, queued=20, repeat=3)
    assert seen == [False, False, False]
    assert gc.isenabled()
