"""The dynamic multi-core partition: nodes drain only while multi-core jobs wait, at the
configured rate, least waste first; single-core work stays off them; the multi-core job
gets the drained node; with no multi-core job waiting every drain ends."""

from __future__ import annotations

from mysched.config import config_from_text
from mysched.core.model.batch import Job, JobState, Node
from mysched.core.planner import plan
from mysched.core.share.usage import Usage

from ..conftest import snap

NOW = 10_000.0
CFG = ('vos = { atlas = { groups = ["atlas"]; share = 100; }; };\n'
       'scheduler = { reservation_depth = 0; };\n'
       'drain = { rate = 2; max_draining = 2; keep = "30m"; min_cores = 4; };\n')


def run(jid, node, cores=1, left=3600.0):
    return Job(jid, "q", "u", "atlas", cores, JobState.RUNNING, 0.0, NOW - 100, left + 100, placement=((node, cores),))


def q(jid, cores=1, submit=0.0, walltime=3600.0):
    return Job(jid, "q", "v", "atlas", cores, JobState.QUEUED, submit, None, walltime)


def full_farm():
    # wn01: 3 short jobs; wn02: 3 long ones; wn03: 2 short; wn04: 4 long (full)
    jobs = [run(f"a{i}", "wn01", left=600) for i in range(3)] + [run(f"b{i}", "wn02", left=9000) for i in range(3)]
    jobs += [run(f"c{i}", "wn03", left=600) for i in range(2)] + [run(f"d{i}", "wn04", left=9000) for i in range(4)]
    return jobs, [Node(f"wn0{i}", 4) for i in range(1, 5)]


CONFIG = config_from_text(CFG)


def test_drains_start_only_while_multicore_jobs_wait_least_waste_first():
    running, nodes = full_farm()
    p = plan(snap(running + [q("s1")], nodes), CONFIG, Usage(), NOW)
    assert not p.drains  # nobody needs the partition
    p = plan(snap(running + [q("mc", cores=4), q("mc2", cores=4)], nodes), CONFIG, Usage(), NOW)
    assert set(p.drains) == {"wn03", "wn01"}  # least busy cores x remaining time first, at most 2
    assert p.waits["mc"].reason == "no_free_slot"


def test_a_draining_node_takes_only_multicore_jobs():
    running, nodes = full_farm()
    first = plan(snap(running + [q("mc", cores=4, submit=1)], nodes), CONFIG, Usage(), NOW)
    assert set(first.drains) == {"wn03"}  # one job waits: one node drains
    jobs = running + [q("mc", cores=4, submit=1), q("s1", submit=2), q("s2", submit=3), q("s3", submit=4)]
    p = plan(snap(jobs, nodes), CONFIG, Usage(), NOW + 60, drains=first.drains)
    where = [s.placement[0][0] for s in p.starts]
    assert "wn03" not in where and sorted(where) == ["wn01", "wn02"]  # wn03 keeps its 2 free cores
    assert p.waits["s3"].reason == "draining" and p.waits["s3"].nodes_rejected["draining"] == 1


def test_the_multicore_job_gets_the_drained_node_and_the_partition_ends_with_the_demand():
    running, nodes = full_farm()
    first = plan(snap(running + [q("mc", cores=4, submit=1)], nodes), CONFIG, Usage(), NOW)
    later = [j for j in running if not j.id.startswith("c")]  # wn03's jobs ended
    jobs = later + [q("s1", submit=0.5), q("mc", cores=4, submit=1)]
    p = plan(snap(jobs, nodes), CONFIG, Usage(), NOW + 700, drains=first.drains)
    where = {s.job_id: s.placement[0][0] for s in p.starts}
    assert where["mc"] == "wn03" and where["s1"] != "wn03"
    assert not p.drains  # no multi-core job waits any more: the node leaves the partition


def test_a_draining_node_backfills_jobs_that_end_before_its_own_jobs_do():
    # by their requested walltimes (the jobs there started 100 s ago: "expected" would take
    # them to end in 100 s)
    CONFIG = config_from_text(CFG.replace("min_cores = 4;", 'min_cores = 4; backfill = "requested";'))
    running, nodes = full_farm()
    first = plan(snap(running + [q("mc", cores=4, submit=1)], nodes), CONFIG, Usage(), NOW)
    assert set(first.drains) == {"wn03"}  # its two jobs end in 600 s
    # wn01 and wn02 full, so the short jobs have only wn03 left
    others = [run(f"x{i}", "wn01") for i in range(1)] + [run(f"y{i}", "wn02") for i in range(1)]
    jobs = running + others + [q("mc", cores=4, submit=1), q("short", submit=2, walltime=300),
                               q("long", submit=3, walltime=3600), q("open", submit=4, walltime=None)]
    p = plan(snap(jobs, nodes), CONFIG, Usage(), NOW + 60, drains=first.drains)
    assert {s.job_id: s.placement[0][0] for s in p.starts} == {"short": "wn03"}  # ends before the node drains
    assert p.waits["long"].reason == "draining" and p.waits["open"].reason == "draining"
    assert p.drain_horizons["wn03"] == NOW + 600  # when its own jobs end, by their walltimes
    # once the node has room for the multi-core job, it takes no smaller job at all
    later = [j for j in running + others if not j.id.startswith("c")]
    p = plan(snap(later + [q("tiny", submit=0.5, walltime=60), q("mc", cores=4, submit=1)], nodes), CONFIG,
             Usage(), NOW + 700, drains=first.drains)
    assert {s.job_id: s.placement[0][0] for s in p.starts} == {"mc": "wn03"}


def test_a_reserved_multicore_job_gets_its_node_when_a_twin_ranks_first():
    # With reservations on, the first multi-core job that does not fit is promised the node
    # that frees first (wn01; wn03 drains beside it). When that node is empty the job starts
    # there, even if another job of its class (same queue, group, cores, walltime) now ranks
    # before it and is refused the node: the emptied node does not sit idle under the promise.
    cfg = config_from_text(CFG.replace("reservation_depth = 0", "reservation_depth = 1"))
    running, nodes = full_farm()
    first = plan(snap(running + [q("mc", cores=4, submit=1, walltime=9000)], nodes), cfg, Usage(), NOW)
    assert first.reservations["mc"].nodes == ("wn01",) and set(first.drains) == {"wn03"}
    later = [j for j in running if not j.id.startswith("a")]  # wn01's jobs ended
    jobs = later + [q("twin", cores=4, submit=0.5, walltime=9000), q("mc", cores=4, submit=1, walltime=9000)]
    p = plan(snap(jobs, nodes), cfg, Usage(), NOW + 700, reservations=first.reservations, drains=first.drains)
    assert {s.job_id: s.placement[0][0] for s in p.starts} == {"mc": "wn01"}
    assert p.waits["twin"].reason == "no_free_slot"  # kept off wn01 when tried; mc took it after


def test_the_node_whose_jobs_started_recently_drains_before_one_whose_jobs_have_run_long():
    """Pilots all request the queue's maximum: by requested time alone the node whose jobs
    have run for days looks cheapest to drain. Job lifetimes are heavy-tailed -- those have
    likely days left -- so the node whose jobs started an hour ago drains first; a job close
    to its requested walltime is expected to end by then."""
    def pilot(jid, node, ran):
        return Job(jid, "q", "u", "atlas", 1, JobState.RUNNING, 0.0, NOW - ran, 90 * 3600.0,
                   placement=((node, 1),))
    day = 86400.0
    jobs = [pilot(f"old{i}", "wn01", 3 * day) for i in range(3)]   # 66 h requested left, ran 72 h
    jobs += [pilot(f"new{i}", "wn02", 3600.0) for i in range(3)]   # ran 1 h
    jobs += [pilot(f"end{i}", "wn03", 90 * 3600.0 - 600) for i in range(3)]  # ends within 600 s
    jobs += [pilot(f"mid{i}", "wn04", 10 * 3600.0) for i in range(3)]  # ran 10 h
    nodes = [Node(f"wn0{i}", 4) for i in range(1, 5)]
    p = plan(snap(jobs + [q("mc", cores=4), q("mc2", cores=4)], nodes), CONFIG, Usage(), NOW)
    assert set(p.drains) == {"wn03", "wn02"}


def test_with_expected_backfill_a_draining_node_takes_only_jobs_that_end_before_its_pilots_likely_do():
    """Pilots that started an hour ago ask for 90 h: by that request a 3-h job backfills the
    draining node; by what they are expected to run (as long again as they have) it would hold
    the node past its room, so `drain.backfill = "expected"` refuses it and takes a 30-min one."""
    def pilot(jid):
        return Job(jid, "q", "u", "atlas", 1, JobState.RUNNING, 0.0, NOW - 3600, 90 * 3600.0, placement=(("wn01", 1),))
    running = [pilot(f"p{i}") for i in range(3)]
    nodes = [Node("wn01", 4)]
    wait = [q("mc", cores=4, submit=1), q("long", submit=2, walltime=3 * 3600.0)]
    got = {}
    for mode in ("requested", "expected"):
        cfg = config_from_text(CFG.replace("min_cores = 4;", f'min_cores = 4; backfill = "{mode}";'))
        first = plan(snap(running + wait[:1], nodes), cfg, Usage(), NOW)
        assert set(first.drains) == {"wn01"}
        p = plan(snap(running + wait, nodes), cfg, Usage(), NOW + 10, drains=first.drains)
        got[mode] = ({s.job_id for s in p.starts}, p.waits.get("long"))
    assert got["requested"][0] == {"long"}
    assert got["expected"][0] == set() and got["expected"][1].reason == "draining"
    cfg = config_from_text(CFG.replace("min_cores = 4;", 'min_cores = 4; backfill = "expected";'))
    first = plan(snap(running + wait[:1], nodes), cfg, Usage(), NOW)
    short = q("short", submit=3, walltime=1800.0)
    p = plan(snap(running + wait[:1] + [short], nodes), cfg, Usage(), NOW + 10, drains=first.drains)
    assert {s.job_id for s in p.starts} == {"short"}


def test_a_node_draining_for_at_most_half_its_cores_takes_jobs_that_end_before_its_jobs_have_likely_ended():
    """A 90-min job, past the pilots' median end (an hour on) but before they have likely ended
    (two hours on: HORIZON_SPAN), backfills a node that needs 4 of its 8 cores -- the first
    pilots of several to end give them -- and not a 4-core node that needs every pilot gone."""
    def pilots(node, n):
        return [Job(f"{node}p{i}", "q", "u", "atlas", 1, JobState.RUNNING, 0.0, NOW - 3600, 90 * 3600.0,
                    placement=((node, 1),)) for i in range(n)]
    cfg = config_from_text(CFG)
    mid = q("mid", submit=3, walltime=5400.0)
    for node, cores, started in (("wn01", 8, {"mid"}), ("wn02", 4, set())):
        running, nodes = pilots(node, cores - 1), [Node(node, cores)]
        first = plan(snap(running + [q("mc", cores=4, submit=1)], nodes), cfg, Usage(), NOW)
        assert set(first.drains) == {node}
        p = plan(snap(running + [q("mc", cores=4, submit=1), mid], nodes), cfg, Usage(), NOW + 10, drains=first.drains)
        assert {s.job_id for s in p.starts} == started, node


def test_an_unknown_drain_backfill_is_named():
    import pytest
    from mysched.errors import ConfigError
    with pytest.raises(ConfigError) as e:
        config_from_text(CFG.replace("min_cores = 4;", 'min_cores = 4; backfill = "guess";'))
    assert "drain.backfill: must be one of requested, expected, got 'guess'" in str(e.value)


def test_with_the_partition_on_jobs_fill_busy_nodes_before_empty_ones():
    """Spreading single-core work over empty nodes leaves none whole for a multi-core job;
    with the partition on a job goes to a node that already runs something (diversity is
    the same there), without it to the emptier one."""
    nodes = [Node("wn01", 4), Node("wn02", 4)]
    busy = Job("x1", "q", "x", "atlas", 1, JobState.RUNNING, 0.0, NOW - 100, 3700.0, placement=(("wn01", 1),))
    jobs = [busy, q("s1")]
    assert plan(snap(jobs, nodes), CONFIG, Usage(), NOW).starts[0].placement == (("wn01", 1),)
    spread = config_from_text(CFG.replace("rate = 2; max_draining = 2;", "rate = 0; max_draining = 0;"))
    assert plan(snap(jobs, nodes), spread, Usage(), NOW).starts[0].placement == (("wn02", 1),)
