"""What the simulation report's figures mean: each moves with the change it should show, and a
run that measured nothing says so instead of printing confident zeros."""

from __future__ import annotations

import random

from mysched.backends.sim.farm import make_nodes
from mysched.config import config_from_text
from mysched.core.model.batch import Job, TraceJob
from mysched.core.model.request import NodePart, Request
from mysched.sim.replay import SimOptions, simulate
from mysched.sim.report import format_comparison, format_result

T0 = 1e9


def contended(n: int = 1500) -> list[TraceJob]:
    """Two VOs, a: 70 % of the jobs, b: 30 %, more work than 2 x 4 slots can take at once."""
    rnd = random.Random(7)
    wl, t = [], T0
    for i in range(n):
        t += rnd.expovariate(1 / 20.0)
        g = "a" if rnd.random() < 0.7 else "b"
        wl.append(TraceJob(Job(str(i), "q", f"{g}{rnd.randrange(4)}", g, submit_time=t), rnd.expovariate(1 / 200)))
    return wl


def shares(b: int) -> str:
    return f'vos = {{ a = {{ groups = ["a"]; share = {100 - b}; }}; b = {{ groups = ["b"]; share = {b}; }}; }};'


def test_a_larger_share_shows_in_the_vos_waits_and_slots_not_in_its_part_of_the_work():
    wl = contended()
    small = simulate(wl, config_from_text(shares(10)), make_nodes(2, 4), SimOptions())
    large = simulate(wl, config_from_text(shares(70)), make_nodes(2, 4), SimOptions())
    b0, b1 = small.vo["b"], large.vo["b"]
    assert b1["wait_mean_s"] < 0.8 * b0["wait_mean_s"]
    assert b1["slots_while_waiting"] > b0["slots_while_waiting"] + 0.05
    assert b0["used"] == b1["used"]  # every job ran: the workload's mix, whatever the share
    assert b0["jobs"] == b1["jobs"] == sum(tj.job.group == "b" for tj in wl)
    text = format_result(large)
    assert "wait mean" in text and "slots while waiting" in text and "the workload's mix" in text
    both = format_comparison([small, large])
    assert "b wait mean" in both and "b slots waiting" in both and "b used" not in both


def test_a_configured_vo_with_no_job_says_so():
    cfg = config_from_text('vos = { a = { groups = ["a"]; share = 50; }; c = { groups = ["c"]; share = 10; }; };')
    wl = [TraceJob(Job("1", "q", "u", "a", submit_time=T0), 100.0)]
    r = simulate(wl, cfg, make_nodes(1, 2), SimOptions())
    assert r.vo["c"]["jobs"] == 0 and r.vo["c"]["wait_mean_s"] is None
    row = next(line for line in format_result(r).splitlines() if line.startswith("  c "))
    assert "no jobs in the workload" in row and "0s" not in row


def test_a_run_where_nothing_starts_prints_no_waits_and_names_the_closed_nodes():
    cfg = config_from_text('vos = { a = { groups = ["a"]; share = 50; }; s = { groups = ["s"]; share = 50; }; };\n'
                           'node_types = { sw = { nodes = ["wn0001"]; groups = ["s"]; }; };')
    wl = [TraceJob(Job(str(i), "q", "u", "a", submit_time=T0 + i), 100.0) for i in range(3)]
    r = simulate(wl, cfg, make_nodes(1, 2), SimOptions())
    assert r.started == 0 and r.closed_nodes == {"wn0001": "node type sw"}
    text = format_result(r)
    assert "no job started" in text and "mean 0s" not in text
    assert "diversity              -" in text and r.to_json()["diversity"] is None
    assert "closed nodes           1   of 1 admit no job of the workload (node type sw: wn0001)" in text


def test_occupancy_with_no_job_ever_waiting_is_no_figure():
    cfg = config_from_text(shares(50) + "\nscheduler = { min_interval = 1; };")
    wl = [TraceJob(Job(str(i), "q", "u", "a", submit_time=T0 + 1000 * i), 10.0) for i in range(5)]
    r = simulate(wl, cfg, make_nodes(4, 4), SimOptions(event_driven=True, min_interval=0))
    assert r.started == 5 and r.occupancy is None and r.to_json()["occupancy"] is None
    assert 0 < r.utilisation < 0.01
    assert "no job ever waited" in format_result(r) and "100.00%" not in format_result(r)


def test_a_job_larger_than_the_farm_is_not_waiting_work():
    # The 4-core job can never start on 1 x 2 slots. Before it was left out, the hour it
    # "waited" alone on an idle farm made the occupancy while jobs waited 0.24 and b below
    # its guarantee for 4980 s.
    cfg = config_from_text(shares(50))
    wl = [TraceJob(Job("big", "q", "u", "b", cores=4, submit_time=T0), 600.0)]
    wl += [TraceJob(Job(f"s{i}", "q", "u", "a", submit_time=T0 + 3600), 600.0) for i in range(4)]
    r = simulate(wl, cfg, make_nodes(1, 2), SimOptions())
    assert r.started == 4 and r.unplaceable == {"never_fits": 1}
    assert r.too_large_jobs == 1 and r.too_large == 4
    assert r.occupancy > 0.8
    assert r.vo["b"]["below_guarantee_s"] == 0 and r.vo["b"]["waiting_s"] == 0
    assert r.to_json()["larger_than_farm"] == {"jobs": 1, "max_cores": 4}
    assert "jobs ask for more cores, nodes or memory than the farm's nodes have (up to 4 cores; 1 x 2 slots)" \
        in format_result(r)


def test_a_job_asking_more_memory_than_any_node_has_is_not_waiting_work():
    # 64 GB on one core, on nodes of 32 GB (a node type's mem): the planner reports it
    # never_fits every cycle. It was counted as waiting work all the same -- the farm idle for
    # its sake looked 24 % used while jobs waited -- and "larger than farm" did not list it.
    typed = config_from_text(shares(50) + '\nnode_types = { wn = { nodes = ["wn*"]; mem = "32gb"; }; };')
    huge = Request((NodePart(1, 1),), mem=64 << 30)
    wl = [TraceJob(Job("big", "q", "u", "b", submit_time=T0, mem=64 << 30, request=huge), 600.0)]
    wl += [TraceJob(Job(f"s{i}", "q", "u", "a", submit_time=T0 + 3600), 600.0) for i in range(4)]
    r = simulate(wl, typed, make_nodes(1, 2), SimOptions())
    assert r.started == 4 and r.unplaceable == {"never_fits": 1}
    assert r.too_large_jobs == 1
    assert r.occupancy > 0.8
    assert "1   jobs ask for more cores, nodes or memory than the farm's nodes have" in format_result(r)
    fits = [TraceJob(Job("ok", "q", "u", "b", submit_time=T0, mem=16 << 30,
                         request=Request((NodePart(1, 1),), mem=16 << 30)), 600.0)]
    assert simulate(fits, typed, make_nodes(1, 2), SimOptions()).too_large_jobs == 0


def test_progress_reaches_100_percent_only_when_the_replay_ends():
    # Progress was the submissions' time alone: 100 % at the last submission, and then the
    # drain-out ran on (a third of the wall time of the synthetic 50 x 8 run) under a full bar.
    cfg = config_from_text(shares(50))
    wl = [TraceJob(Job(str(i), "q", "u", "a", submit_time=T0 + 60 * i), 36000.0) for i in range(20)]
    calls: list[float] = []
    r = simulate(wl, cfg, make_nodes(1, 4), SimOptions(), progress=calls.append)
    assert r.span_s > 10 * 20 * 60  # mostly drain-out
    assert calls[-1] == 1.0 and max(calls[:-1]) < 1.0
    assert calls == sorted(calls) and len(calls) > 10


def test_a_pool_that_selects_no_host_of_the_farm_says_its_guarantee_measured_nothing():
    # The example config's pool asks for min_mem 32gb; simulated nodes have no memory unless a
    # node type gives it, so the pool held 0 packages and reported "unmet 0s" while the
    # pilots it is for waited more than a day.
    pools = ('\npools = { p = { hosts = ["wn*"]; min_mem = "32gb"; package = { slots = 2; };'
             ' groups = { a = "50%"; }; }; };')
    wl = [TraceJob(Job(str(i), "q", "u", "a", cores=2, submit_time=T0 + i), 600.0) for i in range(6)]
    bare = simulate(wl, config_from_text(shares(50) + pools), make_nodes(2, 2), SimOptions())
    assert bare.pools["p"]["guaranteed"] == 0 and bare.pools["p"]["hosts"] == 0
    assert "none guaranteed on this farm: its guarantees measured nothing" in format_result(bare)
    typed = config_from_text(shares(50) + pools + '\nnode_types = { wn = { nodes = ["wn*"]; mem = "64gb"; }; };')
    r = simulate(wl, typed, make_nodes(2, 2), SimOptions())
    assert r.pools["p"]["hosts"] == 2 and r.pools["p"]["guaranteed"] == 1
    assert "pool p           2 hosts, 2 packages (1 guaranteed)" in format_result(r)


def test_a_vo_running_much_of_the_work_with_no_guarantee_is_named():
    # Group b is in no VO: its 30 % of the jobs fall into the default VO "others", which has no
    # share. The report's table showed "others 0.0% ... work 30 %" and nothing more.
    wl = contended(300)
    cfg = config_from_text('vos = { a = { groups = ["a"]; share = 100; }; };')
    r = simulate(wl, cfg, make_nodes(2, 4), SimOptions())
    assert 0.2 < r.vo["others"]["used"] < 0.4
    text = format_result(r)
    assert (f"  note: VO others, the default VO (of the groups no VO names) ran {r.vo['others']['used']:.1%} of the "
            "work with no guarantee (not declared under vos)") in text
    assert "VO a " not in text  # a has its guarantee
    assert "note: VO others" in format_comparison([r, r])
    # both figures are defined where they are printed, side by side
    assert ("  occupancy " in text and "(used / all the farm's slot-seconds while jobs waited" in text
            and "(used / all the farm's slot-seconds over the whole replay)" in text)
    assert ("(occupancy: used / all the farm's slot-seconds while jobs waited; utilisation: used / all the farm's "
            "slot-seconds over the whole replay; a downtime's slots count as idle)") in format_comparison([r, r])
    # given a share, it is no longer named
    fair = simulate(wl, config_from_text(shares(30)), make_nodes(2, 4), SimOptions())
    assert "no guarantee" not in format_result(fair)
