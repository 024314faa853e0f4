"""The order jobs start in, start by start: hot lists in submit order, then VOs below their
guarantee, the most under-served first, then fair-share priority -- re-ranked after every
start -- and inside a VO the least-used group and user, a user's jobs in submit order."""

from __future__ import annotations


from mysched.config import config_from_text
from mysched.core.model.batch import Node
from mysched.core.planner import plan
from mysched.core.share.usage import Usage

from ..conftest import nodes, queued, running, snap

TWO = 'vos = { a = { groups = ["a"]; share = 50; }; b = { groups = ["b"]; share = 50; }; };\n'


def order(p) -> list[tuple[str, str]]:
    return [(s.job_id, s.reason) for s in p.starts]


def test_below_their_guarantee_the_vo_with_the_smaller_fraction_goes_first_after_every_start():
    # 8 slots, guarantees 4 and 4; b runs 2. a: 0/4 1/4 2/4, then a tie at 3/4 goes by name
    run = [running("rb1", "y", "b", "wn01"), running("rb2", "y", "b", "wn01")]
    jobs = run + [queued(f"a{i}", "x", "a", submit=i) for i in range(6)]
    jobs += [queued(f"b{i}", "y", "b", submit=i) for i in range(6)]
    p = plan(snap(jobs, nodes(2, 4)), config_from_text(TWO), Usage(), 1000)
    assert order(p) == [("a0", "share"), ("a1", "share"), ("a2", "share"), ("b0", "share"), ("a3", "share"),
                        ("b1", "share")]


def test_past_their_guarantees_vos_go_by_fair_share_priority_with_this_cycles_starts_counted():
    cfg = config_from_text('vos = { a = { groups = ["a"]; share = 20; }; b = { groups = ["b"]; share = 20; }; };')
    jobs = [queued(f"a{i}", "x", "a", submit=i) for i in range(6)] + [queued(f"b{i}", "y", "b", submit=i)
                                                                       for i in range(6)]
    # guarantees 2 and 2 on 10 slots; a used three times as much: priority 0.2 / (0.01 + 0.75 + run/10)
    # is 0.21 for a with its 2 slots, and b's stays above it up to 6 slots: 0.2 / (0.01 + 0.25 + 0.6)
    p = plan(snap(jobs, nodes(2, 5)), cfg, Usage(vo={"a": 3000.0, "b": 1000.0}), 1000)
    assert order(p) == [("a0", "share"), ("b0", "share"), ("a1", "share"), ("b1", "share"),
                        ("b2", "fairshare"), ("b3", "fairshare"), ("b4", "fairshare"), ("b5", "fairshare"),
                        ("a2", "fairshare"), ("a3", "fairshare")]


def test_hot_jobs_of_every_list_go_first_in_submit_order_whatever_their_vo():
    cfg = config_from_text(TWO + 'queues = { q = {}; ops = {}; };\n'
                           'hot = { queues = ["ops"]; groups = ["b"]; users = ["pilot"]; };')
    jobs = [queued("a0", "x", "a", submit=0), queued("q5", "y", "a", queue="ops", submit=5),
            queued("b3", "z", "b", submit=3), queued("p4", "pilot", "a", submit=4)]
    p = plan(snap(jobs, nodes(1, 8)), cfg, Usage(vo={"b": 1e9}), 1000)
    assert order(p) == [("b3", "hot"), ("p4", "hot"), ("q5", "hot"), ("a0", "share")]


def test_hot_jobs_that_fill_the_farm_leave_the_rest_waiting_for_a_slot():
    cfg = config_from_text(TWO + 'hot = { users = ["pilot"]; };')
    jobs = [queued("a0", "x", "a", submit=0), queued("p1", "pilot", "b", submit=1),
            queued("p2", "pilot", "b", submit=2), queued("p3", "pilot", "b", submit=3)]
    p = plan(snap(jobs, nodes(1, 2)), cfg, Usage(), 1000)
    assert order(p) == [("p1", "hot"), ("p2", "hot")]
    assert {j: w.reason for j, w in p.waits.items()} == {"p3": "no_free_slot", "a0": "no_free_slot"}


def test_inside_a_vo_the_user_with_less_past_and_running_use_goes_first():
    cfg = config_from_text('vos = { a = { groups = ["a"]; share = 100; }; };')
    jobs = [queued(f"h{i}", "heavy", "a", submit=i) for i in range(3)]
    jobs += [queued(f"l{i}", "light", "a", submit=10 + i) for i in range(3)]
    # heavy: 0.01 + 0.5 of the past; light: 0.01 + 0.1 per slot it runs, up to 0.31 with all three
    p = plan(snap(jobs, nodes(1, 10)), cfg, Usage(vo={"a": 100.0}, user={"heavy": 50.0}), 1000)
    assert [s.job_id for s in p.starts] == ["l0", "l1", "l2", "h0", "h1", "h2"]


def test_a_users_jobs_go_in_submit_order_whatever_order_the_server_lists_them():
    cfg = config_from_text('vos = { a = { groups = ["a"]; share = 100; }; };')
    jobs = [queued("7.srv", "u", "a", submit=30), queued("5.srv", "u", "a", submit=10),
            queued("6.srv", "u", "a", submit=20), queued("4.srv", "u", "a", submit=40)]
    p = plan(snap(jobs, [Node("wn01", 2)]), cfg, Usage(), 1000)
    assert [s.job_id for s in p.starts] == ["5.srv", "6.srv"]
    assert sorted(p.waits, key=lambda j: p.waits[j].rank) == ["7.srv", "4.srv"]


def test_jobs_submitted_in_the_same_second_go_in_the_order_torque_numbered_them():
    cfg = config_from_text('vos = { a = { groups = ["a"]; share = 100; }; };')
    jobs = [queued(f"77[{i}].srv", "u", "a", submit=5) for i in (1, 2, 10)] + [queued("9.srv", "v", "a", submit=6),
                                                                                 queued("10.srv", "v", "a", submit=6)]
    p = plan(snap(jobs, [Node("wn01", 2)]), cfg, Usage(), 1000, policy="fifo")
    assert [s.job_id for s in p.starts] == ["77[1].srv", "77[2].srv"]
    p = plan(snap(jobs[3:], [Node("wn01", 1)]), cfg, Usage(), 1000, policy="fifo")
    assert [s.job_id for s in p.starts] == ["9.srv"]
