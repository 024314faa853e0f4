"""A VO's standing in a plan: its share and guarantee on this farm, its decayed usage and
fair-share priority at the start of the cycle, and the per-VO table `mysched status` shows."""

from __future__ import annotations

import pytest

from mysched.config import config_from_text
from mysched.core.model.batch import Node
from mysched.core.planner import plan
from mysched.core.share.usage import Usage
from mysched.core.share.standing import VOFact, VOFacts

from ..conftest import queued, running, snap

CFG = config_from_text('vos = { a = { groups = ["a"]; share = 40; }; b = { groups = ["b"]; slots = 3; }; '
                       'idle = { groups = ["i"]; share = 10; }; };')
USAGE = Usage(vo={"a": 30.0, "b": 10.0})


def test_share_guarantee_usage_and_priority_of_a_vo():
    facts = VOFacts(CFG, 10, {}, USAGE, 0.01, {"a": 3})
    # priority = share / (eps + usage fraction + running fraction of the farm)
    assert facts["a"] == pytest.approx(VOFact(0.4, 4, 30.0, 0.75, 0.76, 0.4 / (0.76 + 0.3)))
    assert facts["b"] == pytest.approx(VOFact(0.3, 3, 10.0, 0.25, 0.26, 0.3 / 0.26))  # 3 slots of 10


def test_a_vo_nobody_declared_has_no_share_and_no_priority():
    facts = VOFacts(CFG, 10, {}, USAGE, 0.01, {"others": 5})
    assert facts["others"] == pytest.approx(VOFact(0.0, 0, 0.0, 0.0, 0.01, 0.0))


def test_without_past_usage_only_the_running_slots_lower_a_priority():
    facts = VOFacts(CFG, 10, {}, Usage(), 0.01, {"a": 2})
    assert facts["a"].usage_fraction == 0.0
    assert facts["a"].priority == pytest.approx(0.4 / 0.21)
    assert facts["idle"].priority == pytest.approx(0.1 / 0.01)


def test_a_guarantee_in_slots_is_at_most_the_farm():
    facts = VOFacts(CFG, 2, {}, Usage(), 0.01, {})
    assert (facts["b"].share, facts["b"].guarantee) == (1.5, 2)
    empty = VOFacts(CFG, 0, {}, Usage(), 0.01, {"b": 0})
    assert (empty["b"].share, empty["b"].guarantee, empty["b"].priority) == (0.0, 0, 0.0)


def test_the_plans_vo_table_shows_each_vos_position_and_what_it_started():
    jobs = [running("ra1", "u", "a", "wn01"), running("ra2", "u", "a", "wn01", cores=2),
            queued("a1", "u", "a", submit=1), queued("a2", "u", "a", submit=2),
            queued("b1", "v", "b", submit=3), queued("x1", "w", "x", submit=4)]
    p = plan(snap(jobs, [Node("wn01", 5), Node("wn02", 1)]), CFG, USAGE, 1000)
    assert list(p.vos) == ["a", "b", "idle", "others"]  # configured, and any with jobs
    a, b, idle, others = p.vos.values()
    assert (a.running_slots, a.running_jobs, a.queued_jobs, a.started) == (3, 2, 2, 2)
    assert (b.running_slots, b.running_jobs, b.queued_jobs, b.started) == (0, 0, 1, 1)
    assert (others.queued_jobs, others.started, others.guarantee) == (1, 0, 0)  # no share: a goes first
    assert (idle.queued_jobs, idle.started, idle.guarantee) == (0, 0, 0)
    assert a.guarantee == 2 and a.below_guarantee is False  # 40 % of 6 slots
    assert b.below_guarantee is True                          # as the cycle began
    assert a.priority == pytest.approx(0.4 / (0.01 + 0.75 + 3 / 6))  # at the start of the cycle
    assert p.starts[0].priority == pytest.approx(b.priority)
