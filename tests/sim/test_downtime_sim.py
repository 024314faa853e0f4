"""A what-if run of a scheduled downtime: the replay starts nothing that would run into the
window on its nodes, and the closed slot-hours count as idle slots of the farm."""

from __future__ import annotations

import calendar
from dataclasses import replace
import random
import time

from mysched.backends.sim import farm as simfarm
from mysched.backends.sim.farm import make_nodes
from mysched.config import config_from_text
from mysched.core.model.batch import Job, TraceJob
from mysched.sim.workloadfit import idle_settings
from mysched.sim.replay import SimOptions, simulate
from mysched.sim.report import format_result

T0 = float(calendar.timegm(time.strptime("2026-01-05T00:00", "%Y-%m-%dT%H:%M")))
CFG = ('vos = { a = { groups = ["a"]; share = 50; }; b = { groups = ["b"]; share = 50; }; };\n'
       'downtimes = { disk = { start = "2026-01-05T06:00"; end = "2026-01-05T08:00"; hosts = ["wn0001"]; }; };\n')


def workload(n: int = 400) -> list[TraceJob]:
    rnd = random.Random(3)
    out = []
    for i in range(n):
        wall = rnd.choice([1800.0, 3600.0, 4 * 3600.0])
        out.append(TraceJob(Job(f"j{i}", "q", f"u{i % 5}", rnd.choice("ab"), submit_time=T0 + i * 60, walltime=wall),
                            wall * rnd.uniform(0.3, 1.0)))
    return out


def test_no_job_runs_into_the_window_on_its_node(monkeypatch):
    starts = []
    orig = simfarm.SimulatedFarm.run_job

    def run_job(self, jid, placement):
        starts.append((self.now, self.jobs[jid].walltime, tuple(placement)))
        return orig(self, jid, placement)

    monkeypatch.setattr(simfarm.SimulatedFarm, "run_job", run_job)
    s, e = T0 + 6 * 3600, T0 + 8 * 3600
    r = simulate(workload(), config_from_text(CFG), make_nodes(2, 4), SimOptions())
    assert r.started == 400 and r.share_violations == 0
    mine = [(t, w) for t, w, pl in starts if any(n == "wn0001" for n, _ in pl)]
    assert mine and all(t + w <= s - 300 or t >= e for t, w in mine)
    # the other node went on through the window
    assert any(s <= t < e for t, _, pl in starts if pl[0][0] == "wn0002")
    assert r.downtime_slot_s == 4 * (2 * 3600 + 300)  # with its 5-minute margin
    assert r.to_json()["downtime_slot_h"] == 8.333
    assert "8.3   slot-hours closed by scheduled downtimes" in format_result(r)


def test_the_closed_slots_count_as_idle_slots():
    # One node, closed for 2 of the hours jobs wait: those slot-hours are in the base, idle.
    # Leaving them out made a run look fuller (0.97) the longer its farm was short.
    wl = [TraceJob(Job(f"j{i}", "q", "u", "a", submit_time=T0 + 5 * 3600, walltime=3600.0), 3600.0) for i in range(12)]
    cfg = config_from_text(CFG.replace("wn0001", "wn*").replace('hosts = ["wn*"];', 'hosts = ["wn*"]; margin = "0";'))
    r = simulate(wl, cfg, make_nodes(1, 4), SimOptions())
    assert r.started == 12
    assert r.occupancy is not None and 0.45 < r.occupancy < 0.55  # 2 busy hours of the 4 jobs waited
    assert r.utilisation < 0.65
    assert "in the figures below as idle slots" in format_result(r)


def test_a_downtime_does_not_raise_the_occupancy():
    # 8 of 40 nodes down 4 hours on a lightly loaded farm whose jobs also wait for their
    # queue's nodes: the window makes jobs wait while the rest of the farm is full. With its
    # slots left out of the base the occupancy rose (79.6 % to 83.7 % on the synthetic workload).
    from mysched.cli.common import default_config_text
    from mysched.sim.workloads.synthetic import SyntheticSpec, generate

    base = config_from_text(default_config_text())
    wl = generate(SyntheticSpec(duration=4 * 3600.0, slots=40 * 8, seed=1))
    nodes = make_nodes(40, 8)
    dt = config_from_text('vos = { a = { groups = ["a"]; share = 50; }; };\n'
                          'downtimes = { rack1 = { start = "2026-01-05T01:00"; end = "2026-01-05T05:00"; '
                          'hosts = ["wn000[1-8]"]; }; };\n').downtimes
    without = simulate(wl, base, nodes, SimOptions())
    with_ = simulate(wl, replace(base, downtimes=dt), nodes, SimOptions())
    assert with_.downtime_slot_s > 0
    assert with_.occupancy <= without.occupancy
    assert with_.occupancy_submitting <= without.occupancy_submitting
    assert with_.utilisation <= without.utilisation


def test_a_window_before_the_workload_is_said_to_close_nothing():
    cfg = config_from_text(CFG.replace("2026-01-05T0", "2025-01-05T0"))
    said = idle_settings(cfg, workload(10))
    assert any("downtime disk (2025-01-05 06:00 to 2025-01-05 08:00 UTC; jobs end 5 min before) ends before the "
               "workload's first "
               "submission" in s for s in said)


def test_a_long_job_the_window_keeps_off_is_no_share_violation():
    # b is below its guarantee, but its 4-hour jobs may not start on wn0001 two hours before
    # the window; a's half-hour jobs may. The share-violation check counted those starts.
    wl = [TraceJob(Job(f"b{i}", "q", "u", "b", submit_time=T0 + 4 * 3600, walltime=4 * 3600.0), 3600.0)
          for i in range(4)]
    wl += [TraceJob(Job(f"a{i}", "q", "v", "a", submit_time=T0 + 4 * 3600 + 1, walltime=1800.0), 1700.0)
           for i in range(4)]
    r = simulate(wl, config_from_text(CFG), make_nodes(1, 4), SimOptions())
    assert r.started == 8 and r.share_violations == 0


def test_jobs_running_past_their_walltime_into_a_window_keep_the_figures_at_most_100_percent():
    # Traces hold jobs that ran past their request: two ask for 2 h and run 4 h, through a
    # window from 02:00 (no margin). Its slots were left out while they ran there: 199 %.
    base = 'vos = { a = { groups = ["a"]; share = 100; }; };\n'
    dt = 'downtimes = { d = { start = "2026-01-05T02:00"; end = "2026-01-05T04:00"; margin = "0"; }; };\n'
    wl = [TraceJob(Job(f"j{i}", "q", "u", "a", submit_time=T0, walltime=2 * 3600.0), 4 * 3600.0) for i in range(2)]
    wl.append(TraceJob(Job("w", "q", "u", "a", submit_time=T0 + 60, walltime=3600.0), 3600.0))
    r = simulate(wl, config_from_text(base + dt), make_nodes(1, 2), SimOptions())
    assert r.started == 3 and r.occupancy <= 1.0 and r.utilisation <= 1.0
