"""The planner keeps a tally of running jobs from cycle to cycle (`NodeIndex`); a plan must
come out the same as from a fresh index whatever happened in between: jobs ending, starting
where the plan said or elsewhere, changing state, coming back as new objects, nodes going
down, exclusive reservations running out."""

from __future__ import annotations

import random

import pytest

from mysched.config import config_from_text
from mysched.core.model.batch import Job, JobState, Node, NodeState, Queue, Snapshot
from mysched.core.planner import NodeIndex, plan
from mysched.core.share.usage import Usage

GROUPS = ["atlas", "atlsgm", "mc", "cms", "lhcb", "other"]
QUEUES = ["grid", "grid", "short", "sw", "ded", "unknown"]


def _config(rnd: random.Random):
    vlim = rnd.choice(["", "max_per_node = 3;", "max_running = 20;", "max_cores = 30;"])
    glim = rnd.choice(["", "lhcb = { max_running = 5; max_per_node = 2; };"])
    ded = rnd.choice(["", 'ded = { nodes = ["wn1[0-1]"]; exclusive = true; };'])
    pol = rnd.choice(["none", "relaxed", "exclusive", "exclusive"])
    ttl = f' ttl = "{rnd.choice(["10m", "1h"])}";' if pol == "exclusive" else ""
    pack = rnd.choice(["", f'packing = {{ mcore = {{ policy = "{pol}"; groups = ["mc"];{ttl} }}; }};'])
    hot = rnd.choice(["", 'hot = { users = ["u1"]; };'])
    hot += rnd.choice(["", 'users = { default = { max_running = 4; max_cores = 9; }; u2 = {}; };'])
    return config_from_text(f"""
vos = {{ atlas = {{ groups = ["atlas", "atlsgm", "mc"]; share = 40; {vlim} }};
        cms = {{ groups = ["cms"]; share = 30; }}; lhcb = {{ groups = ["lhcb"]; share = 10; }}; }};
groups = {{ atlsgm = {{ max_per_node = 1; max_running = 6; }}; {glim} }};
queues = {{ grid = {{}}; short = {{ max_running = 12; }}; sw = {{ node_types = ["big"]; }}; {ded} }};
node_types = {{ big = {{ nodes = ["wn0[0-2]"]; groups = ["atlsgm", "cms", "lhcb"]; }}; }};
{pack}
{hot}
""", "<test>")


def _copy(j: Job, **kw) -> Job:
    d = {f: getattr(j, f) for f in Job._fields}
    d.update(kw)
    return Job(**d)


def _canon(p):
    waits = sorted((k, w.reason, w.rank, w.priority, w.detail, sorted((w.nodes_rejected or {}).items()))
                   for k, w in p.waits.items())
    return (p.starts, waits, p.vos, p.node_classes, p.wake_at, p.total_slots, p.used_slots, p.free_slots)


@pytest.mark.parametrize("seed", range(12))
def test_a_kept_index_plans_as_a_fresh_one(seed):
    rnd = random.Random(seed)
    cfg = _config(rnd)
    policy = ["mysched", "fifo", "least-loaded"][seed % 3]
    nn = rnd.randint(3, 14)
    ns = tuple(Node(f"wn{i:02d}", rnd.choice([1, 2, 4, 8]),
                    rnd.choice([NodeState.FREE] * 8 + [NodeState.DOWN, NodeState.FULL, NodeState.BUSY]))
               for i in range(nn))
    queues = (Queue("grid"), Queue("short", max_running=rnd.choice([None, 8])), Queue("sw", enabled=seed % 4 != 0))
    index = NodeIndex()
    jobs: dict[str, Job] = {}
    now, k = 10_000.0, 0
    starts: list = []
    compared = started = 0
    for _ in range(25):
        now += rnd.choice([1.0, 60.0, 600.0, 3000.0])
        for s in starts:  # the server starts what the last plan said, mostly
            if rnd.random() < 0.9 and s.job_id in jobs:
                jobs[s.job_id] = _copy(jobs[s.job_id], state=JobState.RUNNING, start_time=now, placement=s.placement)
                started += 1
        for jid, j in list(jobs.items()):
            r = rnd.random()
            if j.state == JobState.RUNNING and r < 0.15:
                del jobs[jid]
            elif j.state == JobState.RUNNING and r < 0.18:
                jobs[jid] = _copy(j, state=JobState.EXITING)
            elif j.state == JobState.QUEUED and r < 0.03:
                jobs[jid] = _copy(j, state=JobState.HELD)
            elif j.state == JobState.HELD and r < 0.3:
                jobs[jid] = _copy(j, state=JobState.QUEUED)
        if rnd.random() < 0.3:  # started by someone else, perhaps across nodes or on one not listed
            k += 1
            pl = tuple((rnd.choice(ns).name if rnd.random() < 0.9 else "ghost", 1) for _ in range(rnd.choice([1, 2])))
            jobs[f"x{k}"] = Job(f"x{k}", rnd.choice(QUEUES), f"u{rnd.randrange(6)}", rnd.choice(GROUPS), len(pl),
                                JobState.RUNNING, now - 100, now - rnd.uniform(0, 8000), placement=pl,
                                vo=rnd.choice([None, None, "cms", "newvo"]))
        for _ in range(rnd.choice([0, 1, 3, 10])):
            k += 1
            jobs[f"j{k}"] = Job(f"j{k}", rnd.choice(QUEUES), f"u{rnd.randrange(6)}", rnd.choice(GROUPS),
                                rnd.choice([1, 1, 1, 2, 4, 16]), JobState.QUEUED, now - rnd.uniform(0, 50))
        if rnd.random() < 0.2:  # every job a new object, as a TORQUE snapshot hands them out
            jobs = {i: _copy(j) for i, j in jobs.items()}
        if rnd.random() < 0.1:  # a node changes state: a new node tuple
            i = rnd.randrange(nn)
            ns = ns[:i] + (Node(ns[i].name, ns[i].slots, rnd.choice([NodeState.FREE, NodeState.DOWN])),) + ns[i + 1:]
        elif rnd.random() < 0.2:  # the same nodes read again, with other job lists
            ns = tuple(Node(n.name, n.slots, n.state, n.properties, jobs=(f"{k}",)) for n in ns)
        order = list(jobs.values())
        rnd.shuffle(order)
        usage = Usage(vo={"atlas": rnd.uniform(0, 1e5), "cms": rnd.uniform(0, 1e5)}, user={"u1": 5e3})
        s = Snapshot(now, tuple(order), ns, queues)
        kept = plan(s, cfg, usage, now, policy=policy, index=index)
        fresh = plan(s, cfg, usage, now, policy=policy)
        assert _canon(kept) == _canon(fresh)
        compared += 1
        starts = fresh.starts
    assert started > 5  # the sequences do exercise starts and ends


@pytest.mark.parametrize("policy", ["mysched", "fifo"])
def test_a_farm_reporting_its_changes_plans_as_a_fresh_index(policy):
    """The simulated farm tells the planner what changed since its previous snapshot; the
    tally then applies only that. Plans must not differ from a fresh index's, also when a
    snapshot the planner never saw comes in between (the change list no longer fits)."""
    from mysched.backends.sim.farm import SimulatedFarm, make_nodes
    from mysched.core.model.batch import TraceJob

    rnd = random.Random(5)
    cfg = _config(random.Random(3))
    work = [TraceJob(Job(f"{i}", rnd.choice(["grid", "short"]), f"u{rnd.randrange(6)}", rnd.choice(GROUPS),
                         rnd.choice([1, 1, 1, 2]), JobState.QUEUED, 1000.0 + 20 * i), rnd.uniform(30, 3000))
            for i in range(400)]
    farm = SimulatedFarm(make_nodes(8, 4), work, vo_of=cfg.vo_of)
    index = NodeIndex()
    t, cycles, with_changes, planned = 1000.0, 0, 0, None
    while not farm.exhausted and cycles < 300:
        farm.advance(t)
        if rnd.random() < 0.1:
            farm.snapshot()  # someone else asked: the next change list is relative to this one
        s = farm.snapshot()
        with_changes += s.changes is not None and s.changes.since is planned
        planned = s.token
        kept = plan(s, cfg, Usage(), t, policy=policy, index=index)
        assert _canon(kept) == _canon(plan(s, cfg, Usage(), t, policy=policy))
        for st in kept.starts:
            farm.run_job(st.job_id, st.placement)
        cycles += 1
        t += 60.0
    assert cycles > 100 and with_changes > 0.7 * cycles


def test_a_server_reread_keeps_the_tally():
    """A TORQUE snapshot brings new node and job objects every cycle; when they say the same,
    the index keeps its tally instead of counting every running job again."""
    from ..conftest import nodes, queued, running

    c = _config(random.Random(1))
    ns = tuple(nodes(4, 4))
    jobs = [running("r1", "u1", "atlas", "wn01"), running("r2", "u2", "cms", "wn02"), queued("q1", "u3", "cms")]
    index = NodeIndex()
    first = plan(Snapshot(1000.0, tuple(jobs), ns), c, Usage(), 1000.0, index=index)
    tally = index.tally("mysched")
    again = Snapshot(1060.0, tuple(_copy(j) for j in jobs),
                     tuple(Node(n.name, n.slots, n.state, n.properties, jobs=("r1",)) for n in ns))
    second = plan(again, c, Usage(), 1060.0, index=index)
    assert index.tally("mysched") is tally and set(tally.jobs) == {"r1", "r2"}
    assert _canon(second)[:2] == _canon(first)[:2]
    down = Snapshot(1120.0, again.jobs, (Node("wn01", 4, NodeState.DOWN),) + again.nodes[1:])
    plan(down, c, Usage(), 1120.0, index=index)
    assert index.tally("mysched") is not tally  # a node went down: the index starts afresh
