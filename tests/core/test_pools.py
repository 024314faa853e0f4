"""Package guarantees: packages counted as the seed counts them, held packages go to their
owners only, idle guarantees are lent under the loan policy, and every wait says why."""

from __future__ import annotations

from mysched.config import config_from_text
from mysched.core.settings import PoolConfig
from mysched.core.hold.pools import HELD
from mysched.core.model.batch import Job, JobState, Node, NodeState
from mysched.core.planner import plan
from mysched.core.model.request import NodePart, Request
from mysched.core.share.usage import Usage

from ..conftest import snap

NOW = 10_000.0
GB = 1024**3
BASE = ('vos = { atlas = { groups = ["atlas"]; share = 0.5; }; cms = { groups = ["cms"]; share = 0.5; }; };\n'
        'scheduler = { reservation_depth = 0; };\n')


def cfg(loan: str = "", pct: str = "50%"):
    return config_from_text(BASE + 'pools = { mc = { hosts = ["wn*"]; package = { slots = 8; mem = "16gb"; };\n'
                            f'  vos = {{ atlas = "{pct}"; }}; {loan} }}; }};\n')


def cms_running(n, node, queue="cms"):
    return [Job(f"r{node}{i}", queue, "c1", "cms", 1, JobState.RUNNING, 0.0, NOW - 100, 90 * 3600.0,
                placement=((node, 1),)) for i in range(n)]


def cms_queued(n, queue="cms", walltime=90 * 3600.0, submit=0.0, prefix=""):
    return [Job(f"q{prefix or queue}{i}", queue, "c2", "cms", 1, JobState.QUEUED, submit + i, None, walltime)
            for i in range(n)]


def atlas_mcore(jid="m1", submit=100.0):
    return Job(jid, "atlas", "a1", "atlas", 8, JobState.QUEUED, submit, None, 48 * 3600.0,
               request=Request(parts=(NodePart(1, 8),), mem=16 * GB))


def farm():
    return [Node("wn01", 8, mem=32 * GB), Node("wn02", 8, mem=32 * GB)]


def test_packages_fit_into_free_slots_and_memory_as_the_seed_counts_them():
    pool = PoolConfig("p", slots=2, mem=2 * GB)
    assert pool.fit(5, 5 * GB) == 2  # the seed's example
    assert pool.fit(8, 3 * GB) == 1 and pool.fit(1, 100 * GB) == 0
    assert pool.packages(3, GB) == 2 and pool.packages(1, 5 * GB) == 3  # a whole multiple, at least one
    assert PoolConfig("s", slots=8).fit(16, None) == 2  # memory unknown: not limiting


def test_held_packages_go_to_the_owner_and_other_vos_wait_pool_held():
    jobs = cms_running(6, "wn01") + cms_running(4, "wn02") + cms_queued(10) + [atlas_mcore()]
    p = plan(snap(jobs, farm()), cfg(), Usage(), NOW)
    # atlas is owed its package: wn01 (the guarded host) is held; cms may use wn02 only
    assert p.pool_gates == {"wn01": ("mc", "held")}
    started = sorted(n for s in p.starts for n, _ in s.placement)
    assert started == ["wn02"] * 4
    held = [w for w in p.waits.values() if w.reason == "pool_held"]
    assert len(held) == 6 and "pool mc" in held[0].detail and "vo atlas owed 1" in held[0].detail
    st = p.pools["mc"]
    assert (st["total"], st["guaranteed"], st["status"]) == (2, 1, "ok")
    assert st["consumers"][0]["owed"] == 1 and st["consumers"][0]["pending"] == 1
    # without the pool cms takes every free slot
    p0 = plan(snap(jobs, farm()), config_from_text(BASE), Usage(), NOW)
    assert len(p0.starts) == 6 and all(s.vo == "cms" for s in p0.starts)


def test_the_owner_starts_on_its_held_package_once_it_is_free():
    jobs = cms_running(4, "wn02") + cms_queued(10) + [atlas_mcore()]
    p = plan(snap(jobs, farm()), cfg(), Usage(), NOW)
    by_job = {s.job_id: s.placement for s in p.starts}
    assert by_job["m1"] == (("wn01", 8),)  # on the held host, though cms ranked first
    assert sum(1 for s in p.starts if s.vo == "cms") == 4
    c = p.pools["mc"]["consumers"][0]
    assert (c["allocated"], c["owner_use"], c["owed"]) == (1, 1, 0)


def test_idle_guarantees_are_lent_only_under_the_loan_policy():
    loan = 'loan = { queues = ["short"]; max_walltime = "2:00:00"; };'
    jobs = cms_queued(4) + cms_queued(4, "short", 3600.0, submit=50) + cms_queued(2, "short", 5 * 3600.0, 60, "long")
    nodes = [Node("wn01", 8, mem=32 * GB), Node("wn02", 2, mem=32 * GB)]
    p = plan(snap(jobs, nodes), cfg(loan, pct="100%"), Usage(), NOW)
    # wn01 keeps atlas's idle package: only short jobs of at most 2 h borrow it
    assert p.pool_gates == {"wn01": ("mc", "guarded")}
    on = {s.job_id: s.placement[0][0] for s in p.starts}
    assert sorted(j for j, n in on.items() if n == "wn01") == [f"qshort{i}" for i in range(4)]
    assert set(p.pool_loans) == {f"qshort{i}" for i in range(4)}
    refused = {j: w for j, w in p.waits.items() if w.reason == "loan_refused"}
    assert "at most 2 h, the job asks walltime 5 h" in refused["qlong0"].detail
    assert "queue cms may not borrow" in refused["qcms2"].detail  # qcms0 and 1 took wn02's 2 slots
    assert p.pools["mc"]["loan_use"] == 4  # 4 one-core loans, one package each


def test_restricted_loans_stop_while_an_owner_waits():
    loan = 'loan = { queues = ["all"]; restricted = true; };'
    nodes = [Node("wn01", 8, mem=32 * GB), Node("wn02", 8, mem=32 * GB), Node("wn03", 8, mem=32 * GB)]
    # atlas guaranteed 2 of 3 packages, owed 1: one host held, one guarded for its idle package
    jobs = cms_running(8, "wn03") + cms_running(1, "wn01") + cms_running(1, "wn02") + cms_queued(4) + [atlas_mcore()]
    p = plan(snap(jobs, nodes), cfg(loan, pct="67%"), Usage(), NOW)
    assert sorted(g for _, g in p.pool_gates.values()) == ["guarded", "held"]
    assert not any(s.vo == "cms" for s in p.starts)
    assert {w.reason for j, w in p.waits.items() if j.startswith("q")} == {"pool_held"}
    # unrestricted, the guarded host lends its slots
    p2 = plan(snap(jobs, nodes), cfg('loan = { queues = ["all"]; };', pct="67%"), Usage(), NOW)
    assert sum(1 for s in p2.starts if s.vo == "cms") == 4


def test_jobs_on_a_down_host_count_towards_no_guarantee():
    nodes = [Node("wn01", 8, mem=32 * GB), Node("wn02", 8, state=NodeState.DOWN, mem=32 * GB)]
    run = Job("a", "atlas", "a1", "atlas", 8, JobState.RUNNING, 0.0, NOW - 10, 3600.0, placement=(("wn02", 8),),
              request=Request(parts=(NodePart(1, 8),), mem=16 * GB))
    p = plan(snap([run, atlas_mcore()], nodes), cfg(), Usage(), NOW)
    st = p.pools["mc"]
    assert (st["hosts"], st["total"], st["consumers"][0]["allocated"]) == (1, 1, 0)
    assert [s.job_id for s in p.starts] == ["m1"]


def test_a_held_host_lends_only_what_ends_before_its_jobs_do():
    loan = 'loan = { queues = ["all"]; max_walltime = "4:00:00"; };'
    # wn01 runs 6 one-hour cms loans (5 min in): held for atlas, no free package yet
    run = [Job(f"l{i}", "cms", "c1", "cms", 1, JobState.RUNNING, 0.0, NOW - 300, 3600.0, placement=(("wn01", 1),))
           for i in range(6)]
    full = cms_running(8, "wn02")
    jobs = run + full + [atlas_mcore()] + cms_queued(1, walltime=1800.0, prefix="short") + \
        cms_queued(1, walltime=2 * 3600.0, submit=10, prefix="long")
    p = plan(snap(jobs, farm()), cfg(loan), Usage(), NOW)
    assert p.pool_gates == {"wn01": ("mc", "held")} and p.pool_horizons == {"wn01": NOW + 3300.0}
    assert [s.job_id for s in p.starts] == ["qshort0"] and p.pool_loans == {"qshort0": "mc"}
    assert p.waits["qlong0"].reason == "pool_held"


def test_a_held_host_lends_its_free_slots_beyond_the_held_packages():
    loan = 'loan = { queues = ["all"]; max_walltime = "4:00:00"; };'
    nodes = [Node("wn01", 16, mem=64 * GB), Node("wn02", 8, mem=32 * GB)]
    # atlas: 50 % of 3 packages = 1, owed 1 (its 16-core job fits nowhere yet); wn01 has 12
    # free slots: 8 held for the package, 4 to lend
    run = [Job(f"l{i}", "cms", "c1", "cms", 1, JobState.RUNNING, 0.0, NOW - 300, 3600.0, placement=(("wn01", 1),))
           for i in range(4)] + cms_running(8, "wn02")
    big = atlas_mcore()._replace(request=Request(parts=(NodePart(1, 16),), mem=16 * GB), cores=16)
    jobs = run + [big] + cms_queued(6, walltime=2 * 3600.0)
    p = plan(snap(jobs, nodes), cfg(loan, pct="50%"), Usage(), NOW)
    assert p.pool_gates == {"wn01": ("mc", "held")} and p.pool_need == {"wn01": (1, 8)}
    assert len(p.starts) == 4 and set(p.pool_loans) == {s.job_id for s in p.starts}
    assert {w.reason for j, w in p.waits.items() if j.startswith("q")} == {"pool_held"}


def test_a_held_host_stays_held_while_the_owners_are_owed():
    # atlas is guaranteed 2 of 3 packages and owed 1: wn01 and wn02 are guarded, one is held.
    # Alone the plan holds wn01 (a tie, broken by name); after a plan that held wn02 it keeps
    # wn02 -- let go, wn02 would take loans again, and taken back later it could keep atlas
    # waiting longer than a loan may run.
    nodes = [Node(f"wn0{i}", 8, mem=32 * GB) for i in (1, 2, 3)]
    jobs = cms_running(8, "wn01") + cms_running(8, "wn02") + cms_running(8, "wn03") + [atlas_mcore()]
    s = snap(jobs, nodes)
    fresh = plan(s, cfg(pct="67%"), Usage(), NOW)
    assert fresh.pool_gates == {"wn01": ("mc", "held"), "wn02": ("mc", "guarded")}
    kept = plan(s, cfg(pct="67%"), Usage(), NOW + 60, pool_gates={"wn02": ("mc", "held"), "wn01": ("mc", "guarded")})
    assert kept.pool_gates == {"wn01": ("mc", "guarded"), "wn02": ("mc", "held")}
    assert kept.pools["mc"]["held_hosts"] == ["wn02"]
    # a gate of another pool, or of a host no longer in the pool, changes nothing
    other = plan(s, cfg(pct="67%"), Usage(), NOW + 60, pool_gates={"wn09": ("mc", "held"), "wn02": ("x", "held")})
    assert other.pool_gates == fresh.pool_gates
    # once nothing is owed, the held host is let go (it only stays guarded)
    idle = plan(snap(jobs[:-1], nodes), cfg(pct="67%"), Usage(), NOW + 60, pool_gates=kept.pool_gates)
    assert HELD not in {g for _p, g in idle.pool_gates.values()}
