"""Reservations and EASY backfill: the first multi-core job that does not fit is promised the
nodes that free up first; later jobs use those nodes only if they end before."""

from __future__ import annotations

from mysched.config import config_from_text
from mysched.core.model import Job, JobState, Node
from mysched.core.planner import plan
from mysched.core.usage import Usage

from ..conftest import snap

NOW = 1000.0
CFG = 'vos = { atlas = { groups = ["atlas"]; share = 100; }; };\n'


def run(jid, node, end, cores=1):
    return Job(jid, "q", "u", "atlas", cores, JobState.RUNNING, 0.0, NOW - 10, end - (NOW - 10),
               placement=((node, cores),))


def q(jid, cores=1, walltime=None, submit=0.0, user="u"):
    return Job(jid, "q", user, "atlas", cores, JobState.QUEUED, submit, None, walltime)


def farm():
    # wn01: 3 of 4 busy until NOW+100; wn02: 2 of 4 busy until NOW+1000
    running = [run(f"a{i}", "wn01", NOW + 100) for i in range(3)] + [run(f"b{i}", "wn02", NOW + 1000) for i in range(2)]
    return running, [Node("wn01", 4), Node("wn02", 4)]


def test_the_big_job_gets_the_node_that_frees_first_and_only_short_jobs_backfill_there():
    running, nodes = farm()
    running.append(run("b2", "wn02", NOW + 1000))  # wn02: one slot left
    jobs = running + [q("big", cores=4, walltime=500, submit=1), q("long", walltime=5000, submit=2),
                      q("long2", walltime=5000, submit=3), q("short", walltime=50, submit=4)]
    p = plan(snap(jobs, nodes), config_from_text(CFG), Usage(), NOW)
    r = p.reservations["big"]
    assert r.nodes == ("wn01",) and r.start == NOW + 100
    where = {s.job_id: s.placement[0][0] for s in p.starts}
    assert where["short"] == "wn01"  # ends before the reservation starts
    assert where["long"] == "wn02"  # would delay it: kept off wn01
    assert "long2" not in where and p.waits["long2"].reason == "reserved"
    w = p.waits["big"]
    assert w.reason == "no_free_slot" and "reserved wn01 in 100 s" in w.detail


def test_without_reservations_the_long_job_may_take_the_node():
    running, nodes = farm()
    jobs = running + [q("big", cores=4, walltime=500, submit=1), q("long", walltime=5000, submit=3, user="v")]
    cfg = config_from_text(CFG + "scheduler = { reservation_depth = 0; };\n")
    p = plan(snap(jobs, nodes), cfg, Usage(), NOW)
    assert not p.reservations
    assert {s.job_id for s in p.starts} == {"long"}


def test_a_job_without_walltime_never_backfills_on_reserved_nodes():
    running, nodes = farm()
    nodes = [Node("wn01", 4)]
    jobs = running[:3] + [q("big", cores=4, walltime=500, submit=1), q("nowall", submit=2)]
    p = plan(snap(jobs, nodes), config_from_text(CFG), Usage(), NOW)
    assert not p.starts and p.waits["nowall"].reason == "reserved"


def test_a_kept_reservation_holds_its_nodes_against_higher_ranked_jobs():
    running, nodes = farm()
    first = plan(snap(running + [q("big", cores=4, walltime=500, submit=1)], nodes), config_from_text(CFG),
                 Usage(), NOW)
    # next cycle a long job submitted earlier than big (ranked higher) arrives
    jobs = running + [q("early", walltime=5000, submit=0.5), q("big", cores=4, walltime=500, submit=1)]
    p = plan(snap(jobs, nodes), config_from_text(CFG), Usage(), NOW + 1, reservations=first.reservations)
    assert p.reservations["big"].nodes == ("wn01",)
    assert [s.placement[0][0] for s in p.starts if s.job_id == "early"] == ["wn02"]


def test_the_reserved_job_starts_on_its_nodes_when_they_free():
    _, nodes = farm()
    first = plan(snap(farm()[0] + [q("big", cores=4, walltime=500, submit=1)], nodes), config_from_text(CFG),
                 Usage(), NOW)
    later = [run(f"b{i}", "wn02", NOW + 1000) for i in range(2)]  # wn01's jobs ended
    jobs = later + [q("other", walltime=9000, submit=0.5, user="v"), q("big", cores=4, walltime=500, submit=1)]
    p = plan(snap(jobs, nodes), config_from_text(CFG), Usage(), NOW + 100, reservations=first.reservations)
    where = {s.job_id: s.placement[0][0] for s in p.starts}
    assert where["big"] == "wn01" and where.get("other") == "wn02"


def test_jobs_running_past_their_walltime_ask_for_no_cycle_now():
    running, nodes = farm()
    running.append(run("b2", "wn02", NOW + 1000))
    jobs = running + [q("big", cores=4, walltime=500, submit=1)]
    cfg = config_from_text(CFG)
    first = plan(snap(jobs, nodes), cfg, Usage(), NOW)
    assert first.reservations["big"].start == NOW + 100 and first.wake_at == NOW + 100
    # at NOW+200 wn01's jobs still run, past their walltime: they may end any moment, but a
    # cycle asked for "now" (and again every min_interval) would change nothing
    later = plan(snap(jobs, nodes), cfg, Usage(), NOW + 200, reservations=first.reservations)
    assert later.wake_at is None or later.wake_at > NOW + 200
