"""Scheduled downtimes: before a window its nodes take only jobs that end (by requested
walltime) before it starts, during it nothing, after it everything again; jobs kept waiting
say so, reservations and start estimates move past the window."""

from __future__ import annotations

import calendar
import time

import pytest

from mysched.config import config_from_text
from mysched.core.estimate import estimate_start
from mysched.core.model.batch import Job, JobState, Node
from mysched.core.planner import plan
from mysched.core.share.usage import Usage
from mysched.errors import ConfigError

from ..conftest import snap

START = float(calendar.timegm(time.strptime("2026-12-01T08:00", "%Y-%m-%dT%H:%M")))
END = START + 4 * 3600
# reservations from walltimes are what these tests are about: the multi-core partition,
# which would serve one-node jobs instead (`Drains.serves`), is off
VOS = ('vos = { atlas = { groups = ["atlas"]; share = 50; }; cms = { groups = ["cms"]; share = 50; }; };\n'
       'drain = { rate = 0; };\n')


def config(hosts: str = "", extra: str = "", extra_window: str = ""):
    where = f" hosts = [{hosts}];" if hosts else ""
    return config_from_text(VOS + extra + 'downtimes = { gocdb_1 = { start = "2026-12-01T08:00"; '
                            f'end = "2026-12-01T12:00";{where} {extra_window} }}; }};\n')


def q(jid, walltime=3600.0, cores=1, submit=0.0, group="atlas"):
    return Job(jid, "q", "u", group, cores, JobState.QUEUED, submit, None, walltime)


def run(jid, node, cores, start, walltime):
    return Job(jid, "q", "x", "cms", cores, JobState.RUNNING, 0.0, start, walltime, placement=((node, cores),))


NODES = [Node("wn01", 4), Node("wn02", 4)]


def test_before_the_window_only_jobs_that_end_in_time_start_on_its_nodes():
    # in time: by the window's margin (5 minutes unless set) before its start
    now = START - 2 * 3600
    jobs = [q("short", walltime=3600), q("margin", walltime=7200 - 300), q("exact", walltime=7200),
            q("long", walltime=3 * 3600), q("nowall", walltime=None)]
    p = plan(snap(jobs, NODES), config(), Usage(), now)
    assert sorted(s.job_id for s in p.starts) == ["margin", "short"]
    for jid in ("exact", "long", "nowall"):
        w = p.waits[jid]
        assert w.reason == "downtime"
        assert "gocdb_1 (2026-12-01 08:00 to 2026-12-01 12:00 UTC; jobs end 5 min before)" in w.detail
    assert "walltime 3.0 h" in p.waits["long"].detail and "no walltime" in p.waits["nowall"].detail
    assert p.downtimes == {"wn01": (START - 300, END, "gocdb_1", START), "wn02": (START - 300, END, "gocdb_1", START)}
    p = plan(snap(jobs, NODES), config(extra_window='margin = "0";'), Usage(), now)
    assert sorted(s.job_id for s in p.starts) == ["exact", "margin", "short"]


def test_other_nodes_take_what_the_window_keeps_off_its_own():
    p = plan(snap([q("long", walltime=10 * 3600)], NODES), config('"wn01"'), Usage(), START - 3600)
    assert [s.placement for s in p.starts] == [(("wn02", 1),)]


def test_during_the_window_its_nodes_take_nothing_and_a_cycle_is_asked_for_at_its_end():
    jobs = [q("a", walltime=60), q("b", walltime=60)]
    p = plan(snap(jobs, NODES), config('"wn01"'), Usage(), START + 60)
    assert {s.placement[0][0] for s in p.starts} == {"wn02"}
    p = plan(snap(jobs, NODES), config(), Usage(), START + 60)
    assert not p.starts and p.waits["a"].reason == "downtime"
    assert p.waits["a"].nodes_rejected == {"downtime": 2}
    assert p.wake_at == END
    # a node of the window that is full waits for room, not for the window
    full = [run(f"r{i}", "wn01", 1, START - 7200, 3600) for i in range(4)]
    p = plan(snap(full + jobs, [Node("wn01", 4)]), config(), Usage(), START + 60)
    assert p.waits["a"].reason == "no_free_slot"


def test_after_the_window_everything_starts_again():
    jobs = [q("long", walltime=3 * 86400), q("nowall", walltime=None)]
    p = plan(snap(jobs, NODES), config(), Usage(), END)
    assert sorted(s.job_id for s in p.starts) == ["long", "nowall"] and not p.downtimes


def test_a_whole_request_waits_for_the_window_with_the_reason():
    from mysched.core.model.request import NodePart, Request

    req = Request((NodePart(2, 2),))
    job = q("mpi", walltime=6 * 3600, cores=4)._replace(request=req)
    p = plan(snap([job], NODES), config(), Usage(), START - 3600)
    assert not p.starts and p.waits["mpi"].reason == "downtime"
    assert "gocdb_1" in p.waits["mpi"].detail
    p = plan(snap([job._replace(walltime=1800)], NODES), config(), Usage(), START - 3600)
    assert [s.job_id for s in p.starts] == ["mpi"]


def test_a_reservation_moves_past_the_window_it_would_run_into():
    # wn01 frees at START - 1 h; a 4-core job of 2 h would run into the window there: its
    # reservation starts when the window ends, and a 4-core job of 30 min keeps the earlier one.
    now = START - 2 * 3600
    running = [run(f"r{i}", "wn01", 1, now - 600, 3600 + 600) for i in range(4)]
    nodes = [Node("wn01", 4)]
    p = plan(snap(running + [q("wide", walltime=7200, cores=4)], nodes), config(), Usage(), now)
    assert p.waits["wide"].reason == "no_free_slot"
    assert p.reservations["wide"].start == END
    p = plan(snap(running + [q("wide", walltime=1800, cores=4)], nodes), config(), Usage(), now)
    assert p.reservations["wide"].start == now + 3600


def test_the_start_estimate_moves_past_the_window():
    now = START - 2 * 3600
    cfg = config()
    est = estimate_start(q("t", walltime=3 * 3600), "atlas", [], [], NODES, cfg, now)
    assert est.start == END
    est = estimate_start(q("t", walltime=3600), "atlas", [], [], NODES, cfg, now)
    assert est.start == now


@pytest.mark.parametrize("text, where", [
    ('downtimes = { d = { start = "2026-12-01 08:00"; end = "2026-12-01T07:00"; }; };', "downtimes.d.end: must be after"),
    ('downtimes = { d = { start = "tomorrow"; end = "2026-12-01T07:00"; }; };', "downtimes.d.start: expected a date"),
    ('downtimes = { d = { end = "2026-12-01T07:00"; }; };', "downtimes.d: a downtime needs start"),
    ('downtimes = { d = { start = "2026-12-01T07:00"; end = "2026-12-01T09:00"; node_types = ["gpu"]; }; };',
     "downtimes.d.node_types: unknown node type 'gpu'"),
    ('downtimes = ( 1 );', "downtimes: expected a group of downtimes"),
])
def test_bad_downtimes_are_named_by_key(text, where):
    with pytest.raises(ConfigError) as e:
        config_from_text(VOS + text)
    assert where in str(e.value)


def test_times_are_utc_unless_they_carry_an_offset():
    base = 'downtimes = { d = { start = "%s"; end = "2026-12-02T00:00"; }; };'
    for text in ("2026-12-01T08:00", "2026-12-01T08:00:00Z", "2026-12-01T09:00+01:00"):
        assert config_from_text(VOS + base % text).downtimes[0].start == START
