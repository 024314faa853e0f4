"""The farm's picture at one instant: job and node states as TORQUE reports them, which of
them hold cores or take jobs, and snapshots that nothing can change behind the planner."""

from __future__ import annotations

import dataclasses

import pytest

from mysched.core.model.batch import HOLDS_SLOTS, Job, JobState, Node, NodeState, Snapshot


@pytest.mark.parametrize("code, state", [
    ("R", JobState.RUNNING), ("q", JobState.QUEUED), (" H ", JobState.HELD), ("W", JobState.WAITING),
    ("E", JobState.EXITING), ("C", JobState.COMPLETE), ("T", JobState.TRANSIT), ("S", JobState.SUSPENDED),
    ("Running", JobState.RUNNING),  # the first letter is the state, as qstat -f's job_state
])
def test_job_states_are_read_from_their_qstat_letter(code, state):
    assert JobState.parse(code) is state


@pytest.mark.parametrize("code", ["X", "", "  ", "?"])
def test_an_unknown_job_state_is_named(code):
    with pytest.raises(ValueError) as e:
        JobState.parse(code)
    assert str(e.value) == f"unknown job state {code!r}"


def test_running_exiting_and_suspended_jobs_keep_their_cores_and_no_other():
    assert {s for s in JobState if s.holds_slots} == {JobState.RUNNING, JobState.EXITING, JobState.SUSPENDED}
    assert HOLDS_SLOTS == {s for s in JobState if s.holds_slots}


@pytest.mark.parametrize("flags, state", [
    ("free", NodeState.FREE), ("time-shared", NodeState.FREE), (" Free ", NodeState.FREE),
    ("free,state-unknown", NodeState.FREE),
    ("job-exclusive", NodeState.FULL), ("job-sharing", NodeState.FULL), ("reserve", NodeState.FULL),
    ("job-exclusive,busy", NodeState.BUSY),
    ("offline", NodeState.OFFLINE), ("job-exclusive,offline", NodeState.OFFLINE), ("busy,offline", NodeState.OFFLINE),
    ("down", NodeState.DOWN), ("down,offline", NodeState.DOWN), ("state-unknown,down", NodeState.DOWN),
    ("unknown", NodeState.DOWN), ("", NodeState.DOWN), (" , ", NodeState.DOWN),
    ("free,some-new-flag", NodeState.FREE),  # a flag this TORQUE version does not know changes nothing
])
def test_torques_node_flags_reduce_to_one_state_the_worst_first(flags, state):
    assert NodeState.parse(flags) is state


def test_only_free_and_full_nodes_take_jobs():
    assert {s for s in NodeState if s.usable} == {NodeState.FREE, NodeState.FULL}


def test_a_job_without_more_asks_one_core_on_any_node_and_waits_queued():
    j = Job("1.srv", "q", "alice", "atlas")
    assert (j.cores, j.state, j.request, j.placement, j.vo, j.priority, j.hazard) == \
        (1, JobState.QUEUED, None, (), None, 0, "")


def test_jobs_nodes_and_snapshots_cannot_be_changed_in_place():
    job = Job("1.srv", "q", "alice", "atlas")
    node = Node("wn01", 8)
    s = Snapshot(1000.0, (job,), (node,))
    with pytest.raises(AttributeError):
        job.cores = 4  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        node.slots = 16  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.time = 0.0  # type: ignore[misc]
    assert job._replace(cores=4).cores == 4 and job.cores == 1


def test_two_snapshots_of_the_same_farm_are_equal_whatever_their_token_or_extras():
    a = Snapshot(1000.0, (), (Node("wn01", 8),), token=object(), extra={"x": 1}, arrays={"7[]": 2})
    b = Snapshot(1000.0, (), (Node("wn01", 8),), token=object())
    assert a == b
    assert a != Snapshot(1000.0, (), (Node("wn01", 8, NodeState.DOWN),))
