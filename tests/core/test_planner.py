"""Each planner rule on a small farm: order, placement, limits and the reasons it gives."""

from __future__ import annotations

from mysched.config import config_from_text
from mysched.core.model.batch import JobState, Node, NodeState, Queue
from mysched.core.planner import plan
from mysched.core.share.usage import Usage

from ..conftest import nodes, queued, running, snap

TWO_VOS = '''
vos = { atlas = { groups = ["atlas", "atlassgm"]; share = 50; };
        cms = { groups = ["cms"]; share = 50; }; };
'''


def cfg(extra: str = "", base: str = TWO_VOS):
    return config_from_text(base + extra)


def started(p) -> list[str]:
    return [s.job_id for s in p.starts]


def node_of(p, jid: str) -> str:
    return next(s.placement[0][0] for s in p.starts if s.job_id == jid)


def test_every_queued_job_is_started_or_has_a_reason():
    jobs = [queued(f"a{i}", f"u{i % 3}", "atlas", submit=i) for i in range(10)]
    jobs += [queued("h", "u", "atlas", state=JobState.HELD)]
    p = plan(snap(jobs, nodes(2, 2)), cfg(), Usage(), 1000)
    assert len(p.starts) == 4
    assert set(started(p)) | set(p.waits) == {j.id for j in jobs}
    assert p.waits["h"].reason == "held"
    assert {w.reason for jid, w in p.waits.items() if jid != "h"} == {"no_free_slot"}
    ranks = sorted([s.rank for s in p.starts] + [w.rank for w in p.waits.values()])
    assert ranks == list(range(1, len(jobs) + 1))


def test_vo_below_guarantee_goes_first_even_with_more_usage_and_later_submission():
    # atlas runs 3 of 4 slots, above its 2-slot guarantee; cms runs nothing.
    run = [running(f"r{i}", "a", "atlas", "wn01") for i in range(3)]
    jobs = run + [queued("a1", "a", "atlas", submit=0), queued("c1", "c", "cms", submit=50)]
    usage = Usage(vo={"cms": 1e9, "atlas": 1.0})
    p = plan(snap(jobs, [Node("wn01", 4)]), cfg(), usage, 1000)
    assert started(p) == ["c1"]
    assert p.starts[0].reason == "share"
    assert p.waits["a1"].reason == "no_free_slot"


def test_most_under_served_vo_first():
    c = cfg(base='vos = { a = { groups=["a"]; share = 40; }; b = { groups=["b"]; share = 40; }; };')
    # 10 slots: guarantees 4 and 4. a runs 3 (75 %), b runs 1 (25 %): b is most under-served.
    run = [running(f"ra{i}", "x", "a", "wn01") for i in range(3)] + [running("rb", "y", "b", "wn01")]
    jobs = run + [queued("a1", "x", "a", submit=0), queued("b1", "y", "b", submit=1)]
    p = plan(snap(jobs, [Node("wn01", 5), Node("wn02", 5)]), c, Usage(), 1000)
    assert started(p)[0] == "b1"


def test_opportunistic_slots_go_by_decayed_usage_and_are_shared_out():
    c = cfg(base='vos = { a = { groups=["a"]; share = 10; }; b = { groups=["b"]; share = 10; }; };')
    jobs = [queued(f"a{i}", "x", "a", submit=i) for i in range(20)]
    jobs += [queued(f"b{i}", "y", "b", submit=100 + i) for i in range(20)]
    # Both VOs get their 2-slot guarantee first; a has used far more in the past.
    p = plan(snap(jobs, nodes(5, 4)), c, Usage(vo={"a": 3000.0, "b": 2000.0}), 1000)
    by_vo = {"a": 0, "b": 0}
    for s in p.starts:
        by_vo[s.vo] += 1
    assert len(p.starts) == 20
    assert by_vo["b"] > by_vo["a"] > 2  # b favoured, yet a is not starved once b's u_run grows
    first_fairshare = next(s for s in p.starts if s.reason == "fairshare")
    assert first_fairshare.vo == "b"


def test_hot_jobs_bypass_the_order():
    c = cfg('queues = { q = {}; ops = {}; };\nhot = { queues = ["ops"]; };')
    run = [running("r1", "c", "cms", "wn01")]
    jobs = run + [queued("a1", "a", "atlas", submit=0), queued("ops1", "o", "cms", queue="ops", submit=99)]
    p = plan(snap(jobs, [Node("wn01", 2)]), c, Usage(), 1000)
    assert started(p) == ["ops1"]
    assert p.starts[0].reason == "hot"


def test_inside_a_vo_less_used_group_then_user_then_submit_order():
    c = cfg()
    jobs = [queued("sgm1", "s", "atlassgm", submit=0), queued("prd1", "p", "atlas", submit=5),
            queued("prd2", "p", "atlas", submit=6)]
    usage = Usage(vo={"atlas": 10.0}, group={"atlassgm": 10.0, "atlas": 0.0}, user={"s": 10.0})
    p = plan(snap(jobs, [Node("wn01", 1)]), c, usage, 1000)
    assert started(p) == ["prd1"]
    assert p.waits["sgm1"].reason == "no_free_slot"


def test_users_inside_a_group_alternate_as_jobs_start():
    jobs = [queued(f"p{i}", "heavy", "atlas", submit=i) for i in range(4)]
    jobs += [queued(f"q{i}", "light", "atlas", submit=10 + i) for i in range(4)]
    p = plan(snap(jobs, nodes(1, 4)), cfg(), Usage(), 1000)
    users = sorted(s.user for s in p.starts)
    assert users == ["heavy", "heavy", "light", "light"]


def test_down_offline_and_full_nodes_are_skipped():
    ns = [Node("wn01", 4, NodeState.DOWN), Node("wn02", 4, NodeState.OFFLINE),
          Node("wn03", 4, NodeState.FULL), Node("wn04", 4)]
    p = plan(snap([queued("j", "u", "atlas")], ns), cfg(), Usage(), 1000)
    assert node_of(p, "j") == "wn04"
    assert p.total_slots == 8  # down and offline nodes count for nothing


def test_fewest_jobs_of_the_user_then_highest_diversity():
    run = [running("r1", "alice", "atlas", "wn01"), running("r2", "bob", "cms", "wn02"),
           running("r3", "bob", "cms", "wn02"), running("r4", "carol", "cms", "wn03")]
    # alice must avoid wn01; wn02 (1 user / 2 jobs) has lower diversity than wn03 (1/1).
    p = plan(snap(run + [queued("j", "alice", "atlas")], nodes(3, 4)), cfg(), Usage(), 1000)
    assert node_of(p, "j") == "wn03"


def test_diversity_spreads_one_users_jobs():
    jobs = [queued(f"j{i}", "alice", "atlas", submit=i) for i in range(3)]
    p = plan(snap(jobs, nodes(3, 4)), cfg(), Usage(), 1000)
    assert sorted(node_of(p, f"j{i}") for i in range(3)) == ["wn01", "wn02", "wn03"]


def test_node_types_restrict_groups():
    c = cfg('node_types = { sw = { nodes = ["wn01"]; groups = ["atlassgm"]; }; };')
    run = [running("r", "x", "cms", "wn02")]
    jobs = run + [queued("c1", "c", "cms"), queued("s1", "s", "atlassgm", submit=1)]
    p = plan(snap(jobs, [Node("wn01", 2), Node("wn02", 1)]), c, Usage(), 1000)
    assert started(p) == ["s1"] and node_of(p, "s1") == "wn01"
    assert p.waits["c1"].reason == "node_type"
    assert p.waits["c1"].nodes_rejected["node_type"] == 1


def test_queue_node_assignment_and_exclusive_queue():
    c = cfg('queues = { q = {}; mpi = { nodes = ["wn02"]; exclusive = true; }; };')
    jobs = [queued("m1", "a", "atlas", queue="mpi"), queued("m2", "a2", "atlas", queue="mpi", submit=1),
            queued("q1", "c", "cms", submit=2), queued("q2", "c2", "cms", submit=3)]
    p = plan(snap(jobs, [Node("wn01", 1), Node("wn02", 1)]), c, Usage(), 1000)
    assert node_of(p, "m1") == "wn02"
    assert p.waits["m2"].reason == "no_free_slot"
    assert node_of(p, "q1") == "wn01"
    assert p.waits["q2"].reason == "no_free_slot"
    # with wn01 busy, the cms job may not use the mpi queue's node even if it were free
    p = plan(snap([running("r", "z", "cms", "wn01"), queued("q3", "c", "cms")],
                  [Node("wn01", 1), Node("wn02", 1)]), c, Usage(), 1000)
    assert p.waits["q3"].reason == "queue_nodes"


def test_per_node_vo_and_group_limits():
    c = cfg('groups = { atlassgm = { max_per_node = 1; }; };',
            base='vos = { atlas = { groups = ["atlas","atlassgm"]; share = 50; max_per_node = 2; }; '
                 'cms = { groups=["cms"]; share = 50; }; };')
    jobs = [queued(f"a{i}", f"u{i}", "atlas", submit=i) for i in range(5)]
    jobs += [queued("s1", "s", "atlassgm", submit=10), queued("s2", "t", "atlassgm", submit=11)]
    p = plan(snap(jobs, nodes(2, 8)), c, Usage(), 1000)
    per_node: dict[str, int] = {}
    for s in p.starts:
        per_node[s.placement[0][0]] = per_node.get(s.placement[0][0], 0) + 1
    assert max(per_node.values()) <= 2 and len(p.starts) == 4
    assert sum(1 for s in p.starts if s.group == "atlassgm") <= 2
    reasons = {w.reason for w in p.waits.values()}
    assert "vo_node_limit" in reasons and reasons <= {"vo_node_limit", "group_node_limit"}


def test_group_node_limit_reason():
    c = cfg('groups = { atlassgm = { max_per_node = 1; }; };')
    jobs = [queued("s1", "s", "atlassgm"), queued("s2", "t", "atlassgm", submit=1)]
    p = plan(snap(jobs, nodes(1, 8)), c, Usage(), 1000)
    assert started(p) == ["s1"] and p.waits["s2"].reason == "group_node_limit"


def test_total_limits_per_vo_group_and_queue():
    c = cfg('groups = { atlassgm = { max_running = 1; }; };\nqueues = { q = { max_running = 3; }; };',
            base='vos = { atlas = { groups = ["atlas","atlassgm"]; share = 50; max_running = 2; }; '
                 'cms = { groups=["cms"]; share = 50; }; };')
    jobs = [queued(f"a{i}", f"u{i}", "atlas", submit=i) for i in range(3)]
    jobs += [queued(f"c{i}", f"c{i}", "cms", submit=10 + i) for i in range(3)]
    p = plan(snap(jobs, nodes(2, 8)), c, Usage(), 1000)
    assert len(p.starts) == 3
    assert sum(1 for s in p.starts if s.vo == "atlas") <= 2
    reasons = p.reasons()
    assert reasons.get("queue_max_running", 0) >= 1
    # group limit
    jobs = [queued("s1", "s", "atlassgm"), queued("s2", "t", "atlassgm", submit=1)]
    p = plan(snap(jobs, nodes(1, 8)), c, Usage(), 1000)
    assert p.waits["s2"].reason == "group_limit"
    # TORQUE's own queue max_running counts too
    p = plan(snap([queued("x", "u", "cms")], nodes(1, 8), [Queue("q", max_running=0)]), cfg(), Usage(), 1000)
    assert p.waits["x"].reason == "queue_max_running"


def test_multicore_job_fits_on_one_node_or_waits():
    run = [running("r1", "x", "cms", "wn01", cores=3), running("r2", "y", "cms", "wn02", cores=2)]
    jobs = run + [queued("big", "a", "atlas", cores=2), queued("huge", "b", "atlas", cores=8, submit=1)]
    p = plan(snap(jobs, nodes(2, 4)), cfg(), Usage(), 1000)
    assert p.starts[0].placement == (("wn02", 2),)
    assert p.waits["huge"].reason == "too_large"


def test_disabled_queue_and_start_limit():
    c = cfg("scheduler = { max_starts_per_cycle = 2; };")
    jobs = [queued(f"j{i}", f"u{i}", "atlas", submit=i) for i in range(4)] + [queued("d", "u", "cms", queue="off")]
    p = plan(snap(jobs, nodes(2, 4), [Queue("q"), Queue("off", started=False)]), c, Usage(), 1000)
    assert len(p.starts) == 2
    assert p.waits["d"].reason == "queue_disabled"
    assert sorted(w.reason for w in p.waits.values()) == ["queue_disabled", "start_limit", "start_limit"]


def test_a_disabled_but_started_queue_runs_the_jobs_it_holds():
    """enabled = False only refuses new submissions (qmgr: an admin closes a queue to drain
    it); pbs_sched and MAUI run what it holds while it is started. Seen live: its jobs waited
    queue_disabled beside an idle core."""
    jobs = [queued("held", "u", "cms", queue="closed"), queued("s", "u", "cms", queue="stopped", submit=1)]
    p = plan(snap(jobs, nodes(1, 4), [Queue("closed", enabled=False), Queue("stopped", started=False)]), cfg(),
             Usage(), 1000)
    assert [s.job_id for s in p.starts] == ["held"]
    assert p.waits["s"].reason == "queue_disabled"


def test_baselines_fifo_first_fit_and_least_loaded():
    jobs = [queued(f"j{i}", "alice", "atlas", submit=i) for i in range(3)]
    p = plan(snap(jobs, nodes(3, 4)), cfg(), Usage(), 1000, policy="fifo")
    assert [node_of(p, f"j{i}") for i in range(3)] == ["wn01"] * 3
    assert {s.reason for s in p.starts} == {"fifo"}
    run = [running("r", "x", "cms", "wn01")]
    p = plan(snap(run + jobs, nodes(3, 4)), cfg(), Usage(), 1000, policy="least-loaded")
    assert node_of(p, "j0") == "wn02"


def test_plan_is_deterministic_and_pure():
    """Same facts, same plan: whatever order the server lists jobs and nodes in, and whatever
    was planned before with the same index (no state leaks between calls)."""
    from mysched.core.place.nodeindex import NodeIndex
    jobs = [queued(f"j{i}", f"u{i % 4}", "atlas" if i % 2 else "cms", submit=i) for i in range(30)]
    jobs += [running(f"r{i}", f"u{i}", "cms", f"wn0{i % 4 + 1}") for i in range(5)]
    s = snap(jobs, nodes(4, 4))

    def answer(p):
        return ([(x.job_id, x.placement, x.reason, x.rank) for x in p.starts],
                sorted((w.job_id, w.reason, w.rank) for w in p.waits.values()))
    a = answer(plan(s, cfg(), Usage(), 1000))
    shuffled = snap(list(reversed(jobs)), list(reversed(nodes(4, 4))))
    assert answer(plan(shuffled, cfg(), Usage(), 1000)) == a
    idx = NodeIndex()
    plan(snap(jobs[:7], nodes(4, 4)), cfg(), Usage(), 900, index=idx)  # something else first
    assert answer(plan(s, cfg(), Usage(), 1000, index=idx)) == a
    assert len(a[0]) == 16 - 5 and len(a[1]) == 30 - 11


def test_suspended_jobs_keep_their_cores():
    """A suspended job resumes where it stopped: its node is not free for new work."""
    sus = running("s1", "alice", "atlas", "wn01")._replace(state=JobState.SUSPENDED)
    p = plan(snap([sus, queued("q1", "bob", "cms")], nodes(1, 1)), cfg(), Usage(), 1000)
    assert p.starts == [] and p.waits["q1"].reason == "no_free_slot"
    assert p.used_slots == 1 and p.vos["atlas"].running_slots == 1
    p = plan(snap([sus, queued("q1", "bob", "cms")], nodes(2, 1)), cfg(), Usage(), 1000)
    assert [(s.job_id, s.placement[0][0]) for s in p.starts] == [("q1", "wn02")]


def test_jobs_in_a_routing_queue_wait_for_pbs_server():
    """Jobs in a queue the server does not list as an execution queue (a routing queue)
    cannot be run there: they wait with their own reason instead of failing every cycle."""
    jobs = [queued("r1", "alice", "atlas", queue="route"), queued("b1", "bob", "cms", queue="batch")]
    p = plan(snap(jobs, nodes(2, 2), [Queue("batch")]), cfg(), Usage(), 1000)
    assert started(p) == ["b1"]
    assert p.waits["r1"].reason == "not_execution_queue" and "route" in p.waits["r1"].detail


def test_jobs_on_offline_nodes_count_in_the_farm_and_in_their_vo():
    """Slots still busy on an offline node are in use: the farm's total and the VO's running
    slots agree, so shares and occupancy are computed on the same footing."""
    jobs = [running("o1", "alice", "atlas", "wn01"), running("o2", "bob", "atlas", "wn01"),
            queued("q1", "carol", "cms")]
    farm = [Node("wn01", 4, NodeState.OFFLINE), Node("wn02", 4)]
    p = plan(snap(jobs, farm), cfg(), Usage(), 1000)
    assert p.total_slots == 4 + 2 and p.used_slots == 2
    assert p.vos["atlas"].running_slots == 2 and p.vos["atlas"].guarantee == 3
    assert started(p) == ["q1"] and node_of(p, "q1") == "wn02"
    # once those jobs end, the offline node counts for nothing
    p = plan(snap(jobs[2:], farm), cfg(), Usage(), 1000)
    assert p.total_slots == 4 and p.vos["atlas"].guarantee == 2


def test_random_farms_never_overfill_nodes_or_break_limits():
    """Property check on random farms: capacity, per-node limits, one answer per job, and a
    reused NodeIndex changes nothing."""
    import random

    from mysched.core.model.batch import Snapshot
    from mysched.core.planner import NodeIndex
    c = cfg('groups = { atlassgm = { max_per_node = 1; }; };',
            base='vos = { atlas = { groups = ["atlas", "atlassgm"]; share = 50; max_per_node = 3; }; '
                 'cms = { groups = ["cms"]; share = 30; }; };')
    index = NodeIndex()
    ns = tuple(Node(f"wn{i:02d}", [1, 2, 4, 8][i % 4], NodeState.DOWN if i % 7 == 6 else NodeState.FREE)
               for i in range(14))
    for trial in range(60):
        rnd = random.Random(trial)
        free = {n.name: n.slots for n in ns}
        jobs = []
        for i in range(rnd.randint(0, 40)):
            n = rnd.choice(ns)
            if free[n.name] and n.state == NodeState.FREE:
                free[n.name] -= 1
                jobs.append(running(f"r{i}", f"u{rnd.randrange(5)}", rnd.choice(["atlas", "cms", "atlassgm"]), n.name))
        jobs += [queued(f"q{i}", f"u{rnd.randrange(5)}", rnd.choice(["atlas", "cms", "atlassgm", "other"]),
                        cores=rnd.choice([1, 1, 2, 4]), submit=i) for i in range(rnd.randint(1, 50))]
        s = Snapshot(1000.0, tuple(jobs), ns)
        p = plan(s, c, Usage(), 1000, index=index)
        q = plan(s, c, Usage(), 1000)
        assert [(x.job_id, x.placement) for x in p.starts] == [(x.job_id, x.placement) for x in q.starts]
        assert {x.job_id for x in p.starts} | set(p.waits) == {j.id for j in jobs if j.state == JobState.QUEUED}
        used = {n.name: n.slots - free[n.name] for n in ns}
        vo_on: dict[tuple[str, str], int] = {}
        sgm_on: dict[str, int] = {}
        for j in jobs:
            if j.state == JobState.RUNNING:
                vo = c.vo_of(j.group)
                vo_on[(vo, j.placement[0][0])] = vo_on.get((vo, j.placement[0][0]), 0) + 1
                if j.group == "atlassgm":
                    sgm_on[j.placement[0][0]] = sgm_on.get(j.placement[0][0], 0) + 1
        for x in p.starts:
            node = x.placement[0][0]
            used[node] += x.cores
            assert next(n for n in ns if n.name == node).state == NodeState.FREE
            if x.vo == "atlas":
                assert vo_on.get(("atlas", node), 0) < 3
                vo_on[("atlas", node)] = vo_on.get(("atlas", node), 0) + 1
            if x.group == "atlassgm":
                assert sgm_on.get(node, 0) == 0
                sgm_on[node] = sgm_on.get(node, 0) + 1
        assert all(used[n.name] <= n.slots for n in ns)
