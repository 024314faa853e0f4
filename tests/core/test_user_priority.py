"""TORQUE's job priority (qsub -p / qalter -p) orders a user's own jobs, and nothing else:
a user cannot pass another user or VO with it."""

from __future__ import annotations

from mysched.backends.torque.backend import job_from_attrs
from mysched.config import config_from_text
from mysched.core.model.batch import Node
from mysched.core.planner import plan
from mysched.core.share.usage import Usage

from ..conftest import queued, snap

CFG = config_from_text('vos = { atlas = { groups = ["atlas"]; share = 50; }; cms = { groups = ["cms"]; share = 50; }; };')


def test_a_users_higher_priority_job_goes_before_the_older_ones():
    jobs = [queued("1.s", "alice", "atlas", submit=1), queued("2.s", "alice", "atlas", submit=2),
            queued("3.s", "alice", "atlas", submit=3)._replace(priority=100)]
    p = plan(snap(jobs, [Node("wn01", 2)]), CFG, Usage(), 1000.0)
    assert [s.job_id for s in p.starts] == ["3.s", "1.s"]
    assert p.waits["2.s"].reason == "no_free_slot"
    # a negative priority goes last
    jobs = [queued("1.s", "alice", "atlas", submit=1)._replace(priority=-5), queued("2.s", "alice", "atlas", submit=2)]
    assert [s.job_id for s in plan(snap(jobs, [Node("wn01", 1)]), CFG, Usage(), 1000.0).starts] == ["2.s"]


def test_priority_does_not_pass_other_users():
    # cms has used nothing and bob's job is older: carol's 1023 does not put her first
    usage = Usage(vo={"atlas": 1.0})
    jobs = [queued("1.s", "carol", "atlas", submit=1)._replace(priority=1023), queued("2.s", "bob", "cms", submit=2)]
    p = plan(snap(jobs, [Node("wn01", 1)]), CFG, usage, 1000.0)
    assert [s.job_id for s in p.starts] == ["2.s"]


def test_the_priority_is_read_from_pbs_server_and_bad_values_are_named():
    warn: list[str] = []
    j = job_from_attrs("1.s", {"job_state": "Q", "euser": "u", "Priority": "250"}, warn)
    assert j.priority == 250 and not warn
    assert job_from_attrs("1.s", {"job_state": "Q", "euser": "u", "Priority": "99999"}, warn).priority == 1023
    j = job_from_attrs("1.s", {"job_state": "Q", "euser": "u", "Priority": "high"}, warn)
    assert j.priority == 0 and warn == ["job 1.s: bad Priority 'high'; taken as 0"]
