"""The partition with no drain setting follows the demand: it drains for a multi-core job the
share order put ahead of a single-core start, not for one that waits behind every start, and
the jobs it serves take no reservation from walltimes besides; it holds half the nodes at most,
and the room it races for is counted in cores."""

from __future__ import annotations

from mysched.config import config_from_text
from mysched.core.model.batch import Node
from mysched.core.planner import plan
from mysched.core.share.usage import Usage

from ..conftest import snap
from .test_drains import NOW, full_farm, q, run

VOS = 'vos = { atlas = { groups = ["atlas"]; share = 100; }; };\n'
AUTO = config_from_text(VOS)
OFF = config_from_text(VOS + "drain = { rate = 0; };\n")


def test_a_multicore_job_passed_over_by_a_single_core_start_gets_two_nodes_draining():
    running, nodes = full_farm()  # free cores: wn01 1, wn02 1, wn03 2; wn04 full
    jobs = running + [q("mc", cores=4, submit=1), q("s1", submit=2)]
    p = plan(snap(jobs, nodes), AUTO, Usage(), NOW)
    assert [s.job_id for s in p.starts] == ["s1"]
    assert set(p.drains) == {"wn01", "wn03"}  # half the farm races for it, least waste first
    assert p.waits["mc"].reason == "no_free_slot" and "mc" not in p.reservations
    # wn01's and wn03's jobs end by their walltimes, 600 s from now (700 s; they began 100 s ago)
    assert p.waits["mc"].detail.endswith("drain: the partition has room on wn01 within 600 s at the latest "
                                         "(by requested walltimes)")


def test_a_node_closed_to_other_groups_drains_first_for_a_job_that_may_use_it():
    # wn02 (three long jobs) wastes most, but only atlas may use it: what it holds back no other
    # group could have run
    running, nodes = full_farm()
    jobs = running + [q("mc", cores=4, submit=1), q("s1", submit=2)]
    closed = config_from_text(VOS + 'node_types = { sw = { nodes = ["wn02"]; groups = ["atlas"]; }; };')
    assert set(plan(snap(jobs, nodes), closed, Usage(), NOW).drains) == {"wn02", "wn03"}
    opened = config_from_text(VOS + 'node_types = { sw = { nodes = ["wn02"]; }; };')
    assert set(plan(snap(jobs, nodes), opened, Usage(), NOW).drains) == {"wn01", "wn03"}


def test_a_multicore_job_behind_every_start_drains_nothing():
    running, nodes = full_farm()
    jobs = running + [q("s1", submit=1), q("s2", submit=2), q("mc", cores=4, submit=3)]
    p = plan(snap(jobs, nodes), AUTO, Usage(), NOW)
    assert sorted(s.job_id for s in p.starts) == ["s1", "s2"]
    assert not p.drains  # it waits as single-core jobs of its priority would


def test_with_the_partition_off_the_same_job_gets_a_reservation_instead():
    running, nodes = full_farm()
    jobs = running + [q("mc", cores=4, submit=1), q("s1", submit=2)]
    p = plan(snap(jobs, nodes), OFF, Usage(), NOW)
    assert not p.drains and "mc" in p.reservations


def test_the_drained_node_serves_the_job_and_single_core_work_stays_off_it_meanwhile():
    running, nodes = full_farm()
    first = plan(snap(running + [q("mc", cores=4, submit=1), q("s1", submit=2)], nodes), AUTO, Usage(), NOW)
    started = {s.job_id for s in first.starts}
    # wn03's two short jobs end; the next single-core job may not take its room
    left = [j for j in running if not j.id.startswith("c")]
    jobs = left + [q("mc", cores=4, submit=1), q("s2", submit=3)]
    p = plan(snap(jobs, nodes), AUTO, Usage(), NOW + 700, drains=first.drains)
    assert started == {"s1"}
    where = {s.job_id: s.placement[0][0] for s in p.starts}
    assert where.get("mc") == "wn03" and where.get("s2") != "wn03"


def _thin_farm():
    """Eight 4-core nodes, each running one long single-core job: room for no 4-core job."""
    running = [run(f"r{i}", f"wn{i}", left=9000) for i in range(1, 9)]
    return running, [Node(f"wn{i}", 4) for i in range(1, 9)]


def test_with_a_single_core_backlog_the_partition_stays_within_half_the_nodes():
    running, nodes = _thin_farm()
    mc = [q(f"mc{i}", cores=4, submit=i) for i in range(4)]
    backlog = [q(f"s{i}", submit=10 + i) for i in range(40)]
    p = plan(snap(running + mc + backlog, nodes), AUTO, Usage(), NOW)
    assert len(p.starts) == 24 and all(s.cores == 1 for s in p.starts)
    assert len(p.drains) == 4  # four jobs passed over would race on all eight: half the farm


def _farm_of(cores: int, busy: int):
    """Eight nodes of `cores` cores, each running `busy` long single-core jobs."""
    running = [run(f"r{i}-{k}", f"wn{i}", left=9000) for i in range(1, 9) for k in range(busy)]
    return running, [Node(f"wn{i}", cores) for i in range(1, 9)]


def test_the_room_raced_for_is_counted_in_cores_not_nodes():
    # an 8-core job passed over on 8-core nodes: four nodes race for it (four times its cores)
    running, nodes = _farm_of(8, 1)
    p = plan(snap(running + [q("mc", cores=8, submit=1), q("s1", submit=2)], nodes), AUTO, Usage(), NOW)
    assert [s.job_id for s in p.starts] == ["s1"] and len(p.drains) == 4
    # on 32-core nodes one node has room for four such jobs: one node races for it
    running, nodes = _farm_of(32, 25)
    p = plan(snap(running + [q("mc", cores=8, submit=1), q("s1", submit=2)], nodes), AUTO, Usage(), NOW)
    assert [s.job_id for s in p.starts] == ["s1"] and len(p.drains) == 1


def test_a_node_with_room_for_several_such_jobs_keeps_one_jobs_cores_from_smaller_work():
    # four 8-core jobs wait on 32-core nodes: the node drawn keeps 8 cores, not 32 -- its last
    # cores free only when the longest of its jobs ends, its first ones soon (docs/design/drain.md)
    running, nodes = _farm_of(32, 25)
    jobs = running + [q(f"mc{i}", cores=8, submit=i) for i in range(4)] + [q("s1", submit=9)]
    first = plan(snap(jobs, nodes), AUTO, Usage(), NOW)
    assert [s.job_id for s in first.starts] == ["s1"] and first.drains
    p = plan(snap(jobs[:-1], nodes), AUTO, Usage(), NOW + 60, drains=first.drains)
    assert p.drain_wants and set(p.drain_wants.values()) == {8}
