"""A request only nodes that are down or offline could serve waits for them (`nodes_down`),
it is not impossible (`never_fits`). Seen live: 'qsub -l nodes=node02' with node02 offline
was 'never_fits: 0 node(s) of the farm it may use could ever serve it', blocked for good by
its wording, although it started as soon as 'pbsnodes -c node02' came."""

from __future__ import annotations

from dataclasses import replace

from mysched.config import config_from_text
from mysched.core.model.batch import Job, NodeState
from mysched.core.planner import plan
from mysched.core.model.reasons import BLOCKING
from mysched.core.model.request import NodePart, Request
from mysched.core.share.usage import Usage

from ..conftest import nodes, snap

CFG = config_from_text('vos = { atlas = { groups = ["atlas"]; share = 100; }; };')


def _job(jid: str, *parts: NodePart, procs: int | None = None) -> Job:
    req = Request(parts, procs)
    return Job(jid, "q", "bob", "atlas", cores=req.cores, request=req)


def _farm(*away: tuple[str, NodeState]):
    farm = nodes(4, 4)
    states = dict(away)
    return [replace(n, state=states.get(n.name, n.state)) for n in farm]


def test_a_named_host_that_is_offline_is_waited_for():
    job = _job("h", NodePart(1, 1, host="wn02"))
    p = plan(snap([job], _farm(("wn02", NodeState.OFFLINE))), CFG, Usage(), 1000)
    w = p.waits["h"]
    assert w.reason == "nodes_down" and "nodes_down" in BLOCKING
    assert "down or offline now: wn02" in w.detail and "0 node(s) up it may use could serve it" in w.detail
    p = plan(snap([job], _farm()), CFG, Usage(), 1000)  # back: it starts there
    assert [(s.job_id, s.placement) for s in p.starts] == [("h", (("wn02", 1),))]


def test_more_nodes_than_are_up_is_waited_for_and_more_than_exist_never_fits():
    jobs = [_job("four", NodePart(4, 2)), _job("five", NodePart(5, 2)), _job("p", procs=16)]
    p = plan(snap(jobs, _farm(("wn03", NodeState.DOWN))), CFG, Usage(), 1000)
    assert p.waits["four"].reason == "nodes_down" and p.waits["four"].detail.endswith("down or offline now: wn03")
    assert p.waits["p"].reason == "nodes_down" and "the nodes up it may use have 12 core(s)" in p.waits["p"].detail
    assert p.waits["five"].reason == "never_fits" and "could ever serve it" in p.waits["five"].detail


def test_a_host_that_does_not_exist_never_fits():
    p = plan(snap([_job("x", NodePart(1, 1, host="wn99"))], _farm(("wn02", NodeState.OFFLINE))), CFG, Usage(), 1000)
    assert p.waits["x"].reason == "never_fits"


def test_a_one_node_job_wider_than_every_node_up_waits_for_the_wide_node_that_is_offline():
    """Plain 'N cores' jobs too: the only 16-core node offline makes a 16-core job wait for
    it (nodes_down), not 'too_large' -- which says no node could ever run it."""
    from mysched.core.model.batch import Node

    farm = [*_farm(), Node("big", 16, NodeState.OFFLINE)]
    job = Job("w", "q", "bob", "atlas", cores=16)
    p = plan(snap([job], farm), CFG, Usage(), 1000)
    assert p.waits["w"].reason == "nodes_down" and p.waits["w"].detail.endswith("down or offline now: big")
    p = plan(snap([job], _farm()), CFG, Usage(), 1000)  # no such node at all
    assert p.waits["w"].reason == "too_large" and "largest usable node has 4" in p.waits["w"].detail
    p = plan(snap([job], [*_farm(), Node("big", 16)]), CFG, Usage(), 1000)  # back
    assert [s.job_id for s in p.starts] == ["w"]
