"""The batch server's and its queues' run limits (qmgr max_user_run, max_group_run, server
max_running): pbs_server does not enforce them at pbs_runjob, so the plan must. Seen live:
with 'set queue atlas max_user_run = 1' mysched started two of bob's atlas jobs at once."""

from __future__ import annotations

from dataclasses import replace

import pytest

from mysched.config import config_from_text
from mysched.core.index import NodeIndex
from mysched.core.model import Queue, ServerLimits
from mysched.core.planner import plan
from mysched.core.reasons import BLOCKING, REASONS
from mysched.core.usage import Usage

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
