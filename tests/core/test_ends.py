"""When each node's cores free, by the requested walltimes of what runs there: soonest first
per node, a job past its walltime may end now, one without a walltime never (by what is
known), and the plan's own starts count as soon as it reports them."""

from __future__ import annotations

import math

from mysched.core.hold.ends import Ends
from mysched.core.model.batch import Job, JobState, Node, Snapshot

NOW = 10_000.0
NODES = (Node("wn01", 8), Node("wn02", 8))


def _run(jid: str, placement, start: float, wall: float | None, state: JobState = JobState.RUNNING) -> Job:
    return Job(jid, "q", "u", "g", sum(c for _, c in placement), state, 0.0, start, wall, placement=placement)


def _ends(*jobs: Job) -> Ends:
    return Ends(Snapshot(NOW, jobs, NODES), NOW)


def test_each_node_lists_its_jobs_ends_soonest_first():
    e = _ends(_run("1", (("wn01", 2),), NOW - 100, 3000.0),
              _run("2", (("wn01", 1), ("wn02", 4)), NOW - 100, 1000.0),
              _run("3", (("wn01", 3),), NOW - 50, 2000.0))
    assert e.by_node() == {"wn01": [(NOW + 900, 1), (NOW + 1950, 3), (NOW + 2900, 2)], "wn02": [(NOW + 900, 4)]}


def test_a_job_past_its_walltime_may_end_now_and_one_without_walltime_never():
    e = _ends(_run("1", (("wn01", 2),), NOW - 5000, 1000.0), _run("2", (("wn01", 1),), NOW - 10, None))
    assert e.by_node() == {"wn01": [(NOW, 2), (math.inf, 1)]}


def test_only_jobs_holding_cores_on_nodes_count():
    e = _ends(_run("1", (("wn01", 2),), NOW - 10, 100.0, JobState.EXITING),
              _run("2", (("wn01", 1),), NOW - 10, 200.0, JobState.SUSPENDED),
              _run("3", (("wn02", 1),), NOW - 10, 100.0, JobState.COMPLETE),
              _run("4", (), NOW - 10, 100.0))
    assert e.by_node() == {"wn01": [(NOW + 90, 2), (NOW + 190, 1)]}


def test_starts_reported_after_the_first_read_are_included_in_order():
    e = _ends(_run("1", (("wn01", 2),), NOW - 100, 1000.0))
    assert e.by_node() == {"wn01": [(NOW + 900, 2)]}
    e.add(Job("9", "q", "u", "g", 3, walltime=500.0), (("wn01", 1), ("wn02", 2)))
    e.add(Job("10", "q", "u", "g", 1), (("wn02", 1),))
    want = {"wn01": [(NOW + 500, 1), (NOW + 900, 2)], "wn02": [(NOW + 500, 2), (math.inf, 1)]}
    assert e.by_node() == want
    assert e.by_node() == want  # read again: each start counted once


def test_starts_reported_before_the_first_read_are_included():
    e = _ends()
    e.add(Job("9", "q", "u", "g", 2, walltime=60.0), (("wn02", 2),))
    assert e.by_node() == {"wn02": [(NOW + 60, 2)]}
