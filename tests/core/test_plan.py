"""What a cycle decided, as callers read it: each start with its node, rank and why it was
chosen, each wait with its reason, the farm's figures, reasons counted, the VO table."""

from __future__ import annotations

import pytest

from mysched.config import config_from_text
from mysched.core.model.batch import JobState, Node
from mysched.core.model.plan import Plan, Start, VOStatus, Wait
from mysched.core.planner import plan
from mysched.core.share.usage import Usage

from ..conftest import queued, running, snap

CFG = config_from_text('vos = { atlas = { groups = ["atlas"]; share = 50; }; '
                       'cms = { groups = ["cms"]; share = 50; }; };\nhot = { users = ["ops"]; };')


def test_a_start_says_where_why_and_at_which_rank():
    jobs = [queued("c1", "carl", "cms", queue="grid", cores=2, submit=5), queued("o1", "ops", "atlas", submit=9)]
    p = plan(snap(jobs, [Node("wn01", 4)]), CFG, Usage(), 1000)
    hot, share = p.starts
    assert hot == Start("o1", (("wn01", 1),), "hot", "atlas", "atlas", "ops", "q", 1, 1, hot.priority)
    assert share == Start("c1", (("wn01", 2),), "share", "cms", "cms", "carl", "grid", 2, 2, share.priority)
    assert hot.priority == share.priority == pytest.approx(0.5 / 0.01)  # the VO's, as the cycle began


def test_the_farms_figures_are_before_and_after_the_starts():
    jobs = [running("r", "u", "atlas", "wn01", cores=3)] + [queued(f"q{i}", "u", "cms", submit=i) for i in range(4)]
    p = plan(snap(jobs, [Node("wn01", 4), Node("wn02", 2)]), CFG, Usage(), 1000)
    assert len(p.starts) == 3
    assert (p.total_slots, p.used_slots, p.free_slots) == (6, 3, 0)
    assert p.now == 1000 and p.policy == "mysched"


def test_waits_are_counted_by_reason_and_ranked_after_the_starts():
    jobs = [queued("h1", "u", "atlas", state=JobState.HELD), queued("h2", "u", "atlas", state=JobState.HELD),
            queued("a1", "u", "atlas", submit=1), queued("a2", "u", "atlas", submit=2)]
    p = plan(snap(jobs, [Node("wn01", 1)]), CFG, Usage(), 1000)
    assert p.reasons() == {"held": 2, "no_free_slot": 1}
    assert (p.waits["a2"].reason, p.waits["a2"].rank) == ("no_free_slot", 4)  # the held are screened first
    assert Plan(now=0).reasons() == {}


def test_the_baselines_start_jobs_in_submit_order_and_say_so():
    jobs = [queued("c1", "c", "cms", submit=2), queued("a1", "a", "atlas", submit=1)]
    for policy, why in (("fifo", "fifo"), ("least-loaded", "fifo"), ("easy", "easy")):
        p = plan(snap(jobs, [Node("wn01", 4)]), CFG, Usage(), 1000, policy=policy)
        assert [(s.job_id, s.reason) for s in p.starts] == [("a1", why), ("c1", why)]


def test_the_vo_table_is_made_once_on_first_read():
    made = []

    def table():
        made.append(1)
        return {"a": VOStatus("a", 0.5, 2, 1, 1, 0, 0.0, 0.0, 1.0)}

    p = Plan(now=0, vo_table=table)
    assert p.vos is p.vos and len(made) == 1
    assert Plan(now=0).vos == {}


def test_a_vo_is_below_its_guarantee_only_while_it_runs_fewer_slots():
    v = VOStatus("a", 0.5, 2, 1, 1, 0, 0.0, 0.0, 1.0)
    assert v.below_guarantee
    assert not v._replace(running_slots=2).below_guarantee
    assert not v._replace(guarantee=0, running_slots=0).below_guarantee


def test_a_wait_without_more_has_no_detail_and_no_node_counts():
    assert Wait("j", "held")[2:] == (0, 0.0, "", None)
