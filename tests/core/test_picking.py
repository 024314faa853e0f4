"""Which nodes a reservation picks: those where the waiting request has room earliest, by
the requested walltimes of what runs there -- the nodes the job may use, with the properties
or names it asks for, cores anywhere as they free -- and when it starts."""

from __future__ import annotations

from mysched.config import config_from_text
from mysched.core.model.batch import Job, JobState, Node, NodeState
from mysched.core.planner import plan
from mysched.core.model.request import NodePart, Request
from mysched.core.hold.reservations import Reservation
from mysched.core.share.usage import Usage

from ..conftest import snap

NOW = 1000.0
# reservations from walltimes are what these tests are about: the multi-core partition,
# which would serve one-node jobs instead (`Drains.serves`), is off
CFG = config_from_text('vos = { atlas = { groups = ["atlas", "sgm"]; share = 100; }; };\ndrain = { rate = 0; };')


def busy(node: str, ends_in: float | None, cores: int = 4, jid: str = "") -> Job:
    """A job holding `cores` of `node` until NOW + `ends_in` by its walltime (None: no walltime)."""
    wall = None if ends_in is None else ends_in + 10
    return Job(jid or f"r-{node}-{ends_in}", "q", "x", "atlas", cores, JobState.RUNNING, 0.0, NOW - 10, wall,
               placement=((node, cores),))


def wide(jid: str = "big", cores: int = 4, request: Request | None = None, group: str = "atlas") -> Job:
    return Job(jid, "q", "u", group, cores, JobState.QUEUED, 1.0, None, 3600.0, request=request)


def reserve(jobs, nodes, cfg=CFG, policy="mysched") -> Reservation | None:
    p = plan(snap(jobs, nodes), cfg, Usage(), NOW, policy=policy)
    assert "big" not in {s.job_id for s in p.starts}
    return p.reservations.get("big")


def farm(n: int, slots: int = 4) -> list[Node]:
    return [Node(f"wn{i:02d}", slots) for i in range(1, n + 1)]


def test_the_node_that_frees_first_and_of_nodes_freeing_together_the_first_by_name():
    run = [busy("wn01", 300), busy("wn02", 100), busy("wn03", 100)]
    assert reserve(run + [wide()], farm(3)) == Reservation("big", NOW + 100, ("wn02",))


def test_a_part_of_several_nodes_takes_those_freeing_first_and_starts_when_the_last_does():
    req = Request((NodePart(2, 4),))
    run = [busy("wn01", 300), busy("wn02", 100), busy("wn03", 200)]
    assert reserve(run + [wide(cores=8, request=req)], farm(3)) == Reservation("big", NOW + 200, ("wn02", "wn03"))


def test_only_nodes_with_the_asked_properties_or_name_are_picked():
    nodes = farm(2) + [Node("gpu01", 4, NodeState.FREE, frozenset({"gpu"}))]
    run = [busy("wn01", 100), busy("wn02", 200), busy("gpu01", 900)]
    gpu = Request((NodePart(1, 4, None, frozenset({"gpu"})),))
    assert reserve(run + [wide(request=gpu)], nodes) == Reservation("big", NOW + 900, ("gpu01",))
    host = Request((NodePart(1, 4, "wn02"),))
    assert reserve(run + [wide(request=host)], nodes) == Reservation("big", NOW + 200, ("wn02",))


def test_only_nodes_the_job_may_use_are_picked():
    cfg = config_from_text('vos = { atlas = { groups = ["atlas", "sgm"]; share = 100; }; };\n'
                           'drain = { rate = 0; };\n'
                           'node_types = { sw = { nodes = ["wn01"]; groups = ["sgm"]; }; };')
    run = [busy("wn01", 100), busy("wn02", 500)]
    assert reserve(run + [wide()], farm(2), cfg) == Reservation("big", NOW + 500, ("wn02",))
    assert reserve(run + [wide(group="sgm")], farm(2), cfg) == Reservation("big", NOW + 100, ("wn01",))


def test_a_node_whose_jobs_have_no_walltime_is_never_picked():
    run = [busy("wn01", None), busy("wn02", 5000)]
    assert reserve(run + [wide()], farm(2)) == Reservation("big", NOW + 5000, ("wn02",))
    assert reserve([busy("wn01", None), busy("wn02", None), wide()], farm(2)) is None


def test_a_part_needing_fewer_cores_is_picked_where_just_those_free_first():
    # 2 cores: wn01 frees 2 of its 4 at +100 and the rest at +900; wn02 frees all 4 at +300
    run = [busy("wn01", 100, 2, "a"), busy("wn01", 900, 2, "b"), busy("wn02", 300)]
    assert reserve(run + [wide(cores=2)], farm(2)) == Reservation("big", NOW + 100, ("wn01",))


def test_cores_anywhere_are_picked_as_they_free_on_the_nodes_busy_now():
    # procs=5 on 2-core nodes: 2 free now (wn05); wn01 frees at +100, wn02 and wn03 at +200,
    # wn04 at +300. At +200 there are 8: the busy nodes give the 5, wn05 stays open to backfill
    nodes = farm(5, slots=2)
    run = [busy("wn01", 100, 2), busy("wn02", 200, 2), busy("wn03", 200, 2), busy("wn04", 300, 2)]
    big = wide(cores=5, request=Request(procs=5))
    r = reserve(run + [big], nodes, policy="easy")
    assert r is not None and r.start == NOW + 200
    assert sorted(r.nodes) == ["wn01", "wn02", "wn03"]
