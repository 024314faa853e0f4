"""Walltimes the scheduler does not believe: 0 s, or beyond the queue's or the configured
ceiling, are taken as unknown. Seen live: a walltime=0 job backfilled onto the node reserved for
a wide job (pbs_mom killed it), and walltime=99999999999:00:00 put the reservation of the job
behind it "in 4376707887580 s (about year 140719)", its nodes' free slots held for it."""

from __future__ import annotations

from dataclasses import replace

from mysched.config import config_from_text
from mysched.core.model.batch import Job, JobState, Node, Queue
from mysched.core.planner import plan
from mysched.core.share.usage import Usage
from mysched.core.rules.walltimes import YEAR, believed, horizon

from ..conftest import snap

NOW = 1000.0
# reservations from walltimes are what these tests are about: the multi-core partition,
# which would serve one-node jobs instead (`Drains.serves`), is off
CFG = 'vos = { atlas = { groups = ["atlas"]; share = 100; }; };\ndrain = { rate = 0; };\n'


def run(jid: str, node: str, walltime: float | None, cores: int = 1) -> Job:
    return Job(jid, "q", "u", "atlas", cores, JobState.RUNNING, 0.0, NOW - 10, walltime, placement=((node, cores),))


def q(jid: str, cores: int = 1, walltime: float | None = None, submit: float = 0.0) -> Job:
    return Job(jid, "q", "v", "atlas", cores, JobState.QUEUED, submit, None, walltime)


def test_zero_and_beyond_the_ceiling_are_unknown():
    jobs = [q("zero", walltime=0.0), q("ok", walltime=3600.0), q("huge", walltime=99999999999 * 3600.0),
            q("none"), q("long", walltime=7200.0)._replace(queue="short")]
    s = snap(jobs, [Node("wn01", 4)], [Queue("q"), Queue("short", max_walltime=3600.0)])
    got = {j.id: j.walltime for j in believed(s, None).jobs}
    assert got == {"zero": None, "ok": 3600.0, "huge": None, "none": None, "long": None}
    assert {j.id: j.walltime for j in believed(s, 1800.0).jobs}["ok"] is None  # scheduler.max_walltime
    clean = snap([q("ok", walltime=3600.0)], [Node("wn01", 4)])
    assert believed(clean, None) is clean
    assert horizon(None, (Queue("q"), Queue("x", max_walltime=2 * YEAR))) == 2 * YEAR
    assert horizon(86400.0, (Queue("x", max_walltime=2 * YEAR),)) == 86400.0


def test_a_walltime_of_zero_never_backfills_onto_a_reserved_node():
    # wn01: 2 of 4 busy for 100 s more; wn02 full for long; "wide" (4 cores) is reserved wn01
    jobs = [run("a0", "wn01", 110.0), run("a1", "wn01", 110.0)] + [run(f"b{i}", "wn02", 10 * YEAR)
                                                                    for i in range(4)]
    jobs += [q("wide", cores=4, walltime=500.0, submit=1), q("zero", walltime=0.0, submit=2),
             q("short", walltime=50.0, submit=3)]
    s = believed(snap(jobs, [Node("wn01", 4), Node("wn02", 4)]), None)
    p = plan(s, config_from_text(CFG), Usage(), NOW)
    assert p.reservations["wide"].nodes == ("wn01",)
    assert [st.job_id for st in p.starts] == ["short"]  # it ends before the reservation starts
    assert p.waits["zero"].reason == "reserved"


def test_no_reservation_lies_beyond_the_ceiling():
    jobs = [run("r", "wn01", 99999999999 * 3600.0, cores=4), q("wide", cores=4, walltime=60.0, submit=1)]
    cfg = config_from_text(CFG)
    raw = snap(jobs, [Node("wn01", 4)])
    assert plan(believed(raw, None), cfg, Usage(), NOW).reservations == {}
    # not believed (a trace replayed as it is): the horizon still keeps it off
    assert plan(raw, cfg, Usage(), NOW).reservations == {}
    near = replace(raw, jobs=(run("r", "wn01", 7200.0, cores=4), jobs[1]))
    assert plan(near, cfg, Usage(), NOW).reservations["wide"].start == NOW - 10 + 7200.0
    capped = config_from_text(CFG + "scheduler = { max_walltime = \"1h\"; };\n")
    assert capped.max_walltime == 3600.0
    assert plan(near, capped, Usage(), NOW).reservations == {}


def test_the_ceiling_setting_is_checked():
    import pytest

    from mysched.errors import ConfigError

    assert config_from_text(CFG).max_walltime is None
    assert config_from_text('scheduler = { max_walltime = "2d"; };').max_walltime == 2 * 86400.0
    for bad in ('"0"', '"inf"'):
        with pytest.raises(ConfigError, match=r"<config>:1: scheduler.max_walltime: must be a positive, finite"):
            config_from_text(f"scheduler = {{ max_walltime = {bad}; }};")
