"""Core limits (MAUI's MAXPROC): `max_cores` on VOs, groups and queues counts the cores their
running jobs hold, and `users` limits each user's jobs and cores (MAUI's USERCFG)."""

from __future__ import annotations

import pytest

from mysched.config import config_from_text
from mysched.core.place.nodeindex import NodeIndex
from mysched.core.planner import plan
from mysched.core.model.reasons import BLOCKING, REASONS
from mysched.core.rules.throttle import Reading, throttles
from mysched.core.share.usage import Usage

from ..conftest import nodes, queued, running, snap

VOS = '''
vos = { atlas = { groups = ["atlas", "atlasprd"]; share = 50; };
        cms = { groups = ["cms", "cmsprd"]; share = 50; max_cores = 12; }; };
'''


def started(p) -> list[str]:
    return sorted(s.job_id for s in p.starts)


def five_cms_on_nine_cores() -> list:
    """The admin's dry run: cms runs 5 jobs on 9 cores (one 8-core pilot ... no: 2+2+2+2+1)."""
    return [running(f"r{i}", f"c{i}", "cms", "wn01", cores=c) for i, c in enumerate((2, 2, 2, 2, 1))]


def test_a_vo_at_max_cores_refuses_a_4_core_job_but_starts_a_1_core_one_in_the_same_cycle():
    c = config_from_text(VOS)
    jobs = five_cms_on_nine_cores() + [queued("wide", "u1", "cms", cores=4, submit=1),
                                       queued("one", "u2", "cms", cores=1, submit=2),
                                       queued("wide2", "u2", "cms", cores=8, submit=3)]
    p = plan(snap(jobs, nodes(2, 16)), c, Usage(), 1000)
    assert started(p) == ["one"]
    w = p.waits["wide"]
    assert w.reason == "vo_core_limit"
    assert w.detail == "VO cms runs 5 job(s) on 9 core(s); max_cores 12 leaves 3, the job asks 4"
    assert p.waits["wide2"].reason == "vo_core_limit" and "the job asks 8" in p.waits["wide2"].detail
    # a max_running of 6 (the old, job-counting cap) would have started the 4-core job: 13 cores
    assert sum(s.cores for s in p.starts) + 9 <= 12


def test_several_small_jobs_fill_what_max_cores_leaves_and_no_more():
    c = config_from_text(VOS)
    jobs = five_cms_on_nine_cores() + [queued(f"s{i}", f"u{i % 2}", "cmsprd", cores=1, submit=i) for i in range(6)]
    jobs += [queued("big", "u9", "cmsprd", cores=2, submit=0.5)]
    p = plan(snap(jobs, nodes(2, 16)), c, Usage(), 1000)
    assert sum(s.cores for s in p.starts) == 3  # 9 + 3 = 12
    assert {w.reason for w in p.waits.values()} == {"vo_core_limit"}
    assert any("leaves 0, the job asks 1" in w.detail for w in p.waits.values())


def test_other_vos_start_while_one_waits_at_max_cores():
    c = config_from_text(VOS)
    jobs = five_cms_on_nine_cores() + [queued("c8", "u", "cms", cores=8), queued("a8", "v", "atlas", cores=8)]
    p = plan(snap(jobs, nodes(2, 16)), c, Usage(), 1000)
    assert started(p) == ["a8"] and p.waits["c8"].reason == "vo_core_limit"


def test_group_max_cores():
    c = config_from_text(VOS + 'groups = { atlasprd = { max_cores = 8; }; };')
    jobs = [running("r", "p", "atlasprd", "wn01", cores=6),
            queued("p4", "p", "atlasprd", cores=4, submit=1), queued("p2", "p", "atlasprd", cores=2, submit=2),
            queued("a4", "a", "atlas", cores=4, submit=3)]
    p = plan(snap(jobs, nodes(2, 16)), c, Usage(), 1000)
    assert started(p) == ["a4", "p2"]
    assert p.waits["p4"].reason == "group_core_limit"
    assert p.waits["p4"].detail == "group atlasprd runs 1 job(s) on 6 core(s); max_cores 8 leaves 2, the job asks 4"


def test_queue_max_cores():
    c = config_from_text(VOS + 'queues = { long = { max_cores = 10; }; short = {}; };')
    jobs = [running("r", "a", "atlas", "wn01", queue="long", cores=8),
            queued("l4", "a", "atlas", queue="long", cores=4, submit=1),
            queued("l2", "a", "atlas", queue="long", cores=2, submit=2),
            queued("s4", "b", "atlas", queue="short", cores=4, submit=3)]
    p = plan(snap(jobs, nodes(2, 16)), c, Usage(), 1000)
    assert started(p) == ["l2", "s4"]
    assert p.waits["l4"].reason == "queue_core_limit"
    assert "queue long runs 1 job(s) on 8 core(s); max_cores 10 leaves 2, the job asks 4" == p.waits["l4"].detail


def test_users_default_limits_each_user_alone_and_a_user_block_replaces_it():
    c = config_from_text(VOS + 'users = { default = { max_running = 2; max_cores = 4; }; '
                                'prd = { max_cores = 8; }; free = {}; };')
    jobs = [queued(f"a{i}", "alice", "atlas", submit=i) for i in range(4)]        # 2 jobs at most
    jobs += [queued(f"b{i}", "bob", "atlas", cores=3, submit=10 + i) for i in range(2)]  # 4 cores at most
    jobs += [queued(f"p{i}", "prd", "atlas", cores=2, submit=20 + i) for i in range(5)]  # 8 cores, any number
    jobs += [queued(f"f{i}", "free", "atlas", submit=30 + i) for i in range(5)]          # no limit
    p = plan(snap(jobs, nodes(4, 16)), c, Usage(), 1000)
    got = started(p)
    assert [j for j in got if j[0] == "a"] == ["a0", "a1"]
    assert p.waits["a2"].reason == "user_limit"
    assert p.waits["a2"].detail == "user alice runs 2 job(s); users.default max_running 2"
    assert [j for j in got if j[0] == "b"] == ["b0"]
    assert p.waits["b1"].reason == "user_core_limit"
    assert p.waits["b1"].detail == ("user bob runs 1 job(s) on 3 core(s); users.default max_cores 4 leaves 1, "
                                    "the job asks 3")
    assert len([j for j in got if j[0] == "p"]) == 4 and p.waits["p4"].reason == "user_core_limit"
    assert "users.prd max_cores 8" in p.waits["p4"].detail
    assert len([j for j in got if j[0] == "f"]) == 5


def test_user_limits_count_running_jobs_of_every_group_and_queue():
    c = config_from_text(VOS + 'users = { default = { max_cores = 4; }; };')
    jobs = [running("r1", "alice", "atlas", "wn01", cores=2), running("r2", "alice", "cms", "wn01", queue="x"),
            queued("q2", "alice", "atlasprd", cores=2), queued("q1", "alice", "cmsprd", submit=1)]
    p = plan(snap(jobs, nodes(2, 8)), c, Usage(), 1000)
    assert started(p) == ["q1"] and p.waits["q2"].reason == "user_core_limit"


@pytest.mark.parametrize("policy", ["fifo", "easy"])
def test_core_limits_hold_for_every_policy(policy):
    c = config_from_text(VOS)
    jobs = five_cms_on_nine_cores() + [queued("wide", "u", "cms", cores=4), queued("one", "u", "cms", submit=1)]
    p = plan(snap(jobs, nodes(2, 16)), c, Usage(), 1000, policy=policy)
    assert started(p) == ["one"] and p.waits["wide"].reason == "vo_core_limit"


def test_a_kept_index_gives_the_same_plans_as_a_fresh_one():
    c = config_from_text(VOS + 'groups = { atlasprd = { max_cores = 5; }; };\n'
                               'queues = { q = { max_cores = 30; }; };\nusers = { default = { max_cores = 6; }; };')
    idx = NodeIndex()
    run = five_cms_on_nine_cores()
    for cycle in range(4):
        jobs = run + [queued(f"{cycle}.{i}", f"u{i % 3}", ("cms", "atlasprd", "atlas")[i % 3], cores=1 + i % 4,
                             submit=i) for i in range(12)]
        s = snap(jobs, nodes(3, 8))
        a, b = plan(s, c, Usage(), 1000, index=idx), plan(s, c, Usage(), 1000)
        assert [(x.job_id, x.placement) for x in a.starts] == [(x.job_id, x.placement) for x in b.starts]
        assert {k: (w.reason, w.detail) for k, w in a.waits.items()} == \
               {k: (w.reason, w.detail) for k, w in b.waits.items()}
        run = run + [running(x.job_id, x.user, x.group, x.placement[0][0], cores=x.cores) for x in a.starts]


def test_a_load_rule_scales_max_cores_too():
    c = config_from_text(VOS + '''load_sources = { se = { type = "file"; path = "/x"; }; };
load_rules = { cms_se = { source = "se"; vos = ["cms"]; low = 0; high = 100; }; };''')
    ts = throttles(c, {"se": Reading("se", 50.0, 99.0)}, 100.0)  # half way: 6 of the 12 cores
    jobs = [queued(f"c{i}", f"u{i}", "cms", cores=2, submit=i) for i in range(5)]
    p = plan(snap(jobs, nodes(2, 16)), c, Usage(), 100.0, throttles=ts)
    assert len(p.starts) == 3
    w = p.waits["c3"]
    assert w.reason == "external_load"
    assert "VO cms runs 6 core(s), the load allows 6 of its max_cores 12, the job asks 2" in w.detail


def test_the_new_reasons_are_explained_and_block():
    for r in ("vo_core_limit", "group_core_limit", "queue_core_limit", "user_limit", "user_core_limit"):
        assert r in REASONS and r in BLOCKING
