"""The batch server's and its queues' run limits (qmgr max_user_run, max_group_run, server
max_running): pbs_server does not enforce them at pbs_runjob, so the plan must. Seen live:
with 'set queue atlas max_user_run = 1' mysched started two of bob's atlas jobs at once."""

from __future__ import annotations

from dataclasses import replace

import pytest

from mysched.config import config_from_text
from mysched.core.place.nodeindex import NodeIndex
from mysched.core.model.batch import Job, JobState, Queue, ServerLimits
from mysched.core.planner import plan
from mysched.core.model.reasons import BLOCKING, REASONS
from mysched.core.share.usage import Usage

from ..conftest import nodes, queued, running, snap

CFG = config_from_text('vos = { atlas = { groups = ["atlas"]; share = 50; }; cms = { groups = ["cms"]; share = 50; }; };')


def started(p) -> list[str]:
    return sorted(s.job_id for s in p.starts)


def test_queue_max_user_run_counts_running_jobs_and_this_plans_starts():
    jobs = [running("r", "bob", "atlas", "wn01", queue="atlas"),
            queued("b1", "bob", "atlas", queue="atlas", submit=1),
            queued("b2", "bob", "atlas", queue="cms", submit=2),  # another queue: not limited
            queued("a1", "alice", "atlas", queue="atlas", submit=3),
            queued("a2", "alice", "atlas", queue="atlas", submit=4)]
    queues = [Queue("atlas", max_user_run=1), Queue("cms")]
    p = plan(snap(jobs, nodes(2, 4), queues), CFG, Usage(), 1000)
    assert started(p) == ["a1", "b2"]
    assert p.waits["b1"].reason == p.waits["a2"].reason == "queue_user_limit"


def test_queue_max_group_run():
    jobs = [queued(f"a{i}", f"u{i}", "atlas", queue="q", submit=i) for i in range(3)] + [
        queued("c", "carol", "cms", queue="q", submit=9)]
    p = plan(snap(jobs, nodes(2, 4), [Queue("q", max_group_run=2)]), CFG, Usage(), 1000)
    assert started(p) == ["a0", "a1", "c"] and p.waits["a2"].reason == "queue_group_limit"


@pytest.mark.parametrize("limits, reason, starts", [
    (ServerLimits(max_running=3), "server_max_running", 2),
    (ServerLimits(max_user_run=2), "server_user_limit", 3),  # bob: 1 running + 1; alice: 2
    (ServerLimits(max_group_run=3), "server_group_limit", 2),
])
def test_server_limits(limits, reason, starts):
    jobs = [running("r", "bob", "atlas", "wn01", queue="q")] + [
        queued(f"{u}{i}", u, "atlas", queue="q", submit=10 * i + k) for i in range(3) for k, u in
        enumerate(("alice", "bob"))]
    s = replace(snap(jobs, nodes(2, 4), [Queue("q")]), limits=limits)
    p = plan(s, CFG, Usage(), 1000)
    assert len(p.starts) == starts
    assert {w.reason for w in p.waits.values()} == {reason}


def test_the_limits_block_and_are_explained():
    for r in ("queue_user_limit", "queue_group_limit", "server_max_running", "server_user_limit",
              "server_group_limit"):
        assert r in BLOCKING and "qmgr" in REASONS[r]


def test_limits_hold_from_cycle_to_cycle_with_a_kept_index():
    """The daemon keeps a NodeIndex: the counts come from the snapshot each cycle."""
    idx = NodeIndex()
    queues = [Queue("q", max_user_run=1)]
    first = plan(snap([queued("j1", "bob", "atlas", queue="q"), queued("j2", "bob", "atlas", queue="q", submit=1)],
                      nodes(1, 4), queues), CFG, Usage(), 1000, index=idx)
    assert started(first) == ["j1"]
    again = plan(snap([running("j1", "bob", "atlas", "wn01", queue="q"), queued("j2", "bob", "atlas", queue="q",
                                                                                 submit=1)],
                      nodes(1, 4), queues), CFG, Usage(), 1001, index=idx)
    assert again.starts == [] and again.waits["j2"].reason == "queue_user_limit"
    freed = plan(snap([queued("j2", "bob", "atlas", queue="q", submit=1)], nodes(1, 4), queues), CFG, Usage(), 1002,
                 index=idx)
    assert started(freed) == ["j2"]


def test_no_limits_no_change():
    jobs = [queued(f"j{i}", "bob", "atlas", queue="q", submit=i) for i in range(3)]
    p = plan(snap(jobs, nodes(1, 4), [Queue("q")]), CFG, Usage(), 1000)
    assert len(p.starts) == 3


def _sub(i: int, state: JobState = JobState.QUEUED, array: str = "7[].s", user: str = "bob") -> Job:
    """Sub-job i of an array, as TORQUE names them."""
    j = queued(f"{array[:-4]}[{i}].s", user, "atlas", queue="q", submit=i) if state is JobState.QUEUED else \
        running(f"{array[:-4]}[{i}].s", user, "atlas", "wn01", queue="q")
    return j._replace(array=array)


def test_an_array_runs_no_more_sub_jobs_than_its_slot_limit_and_the_rest_wait_for_it():
    """qsub -t 0-400%1: 301 sub-jobs queued; the plan started all it had room for, and
    pbs_runjob refused each but one (15004), taking the slots others were planned for."""
    jobs = [_sub(i) for i in range(301)] + [queued("c1", "carol", "cms", queue="q", submit=500)]
    s = replace(snap(jobs, nodes(3, 4), [Queue("q")]), arrays={"7[].s": 1})
    p = plan(s, CFG, Usage(), 1000)
    assert started(p) == ["7[0].s", "c1"]
    assert {p.waits[f"7[{i}].s"].reason for i in range(1, 301)} == {"array_slot_limit"}
    assert p.waits["7[1].s"].detail == "array 7[].s runs 1 sub-job(s); its slot limit is 1"
    assert "array_slot_limit" in BLOCKING and "%N" in REASONS["array_slot_limit"]


def test_running_sub_jobs_count_against_the_limit_and_an_array_without_one_is_free():
    jobs = [_sub(0, JobState.RUNNING), _sub(1, JobState.RUNNING), _sub(2), _sub(3),
            _sub(0, array="8[].s"), _sub(1, array="8[].s")]
    p = plan(replace(snap(jobs, nodes(2, 4), [Queue("q")]), arrays={"7[].s": 3}), CFG, Usage(), 1000)
    assert started(p) == ["7[2].s", "8[0].s", "8[1].s"] and p.waits["7[3].s"].reason == "array_slot_limit"
