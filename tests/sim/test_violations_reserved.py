"""The share-violation check judges reserved nodes by the planner's rule: a job that would run
past a reservation's start may still use the cores the reservation does not need there."""

from __future__ import annotations

from types import SimpleNamespace

from mysched.config import config_from_text
from mysched.core.place.nodeindex import NodeIndex
from mysched.core.model.batch import Job, JobState, Node, Snapshot
from mysched.core.model.plan import Plan, Start, Wait
from mysched.core.hold.reservations import Reservation
from mysched.sim.violations import share_violations

NOW = 1000.0


def _count(cfg_text: str, big_group: str = "over") -> int:
    # wn01 (8 cores) runs x (7) until +1000, reserved for big (6) from then: 2 cores to spare.
    # A long 1-core job of "over" (at its guarantee) started there while one of "below" (under
    # its guarantee) waited that would as well have fit beside the reservation: a violation.
    cfg = config_from_text(cfg_text)
    nodes = (Node("wn01", 8),)
    x = Job("x", "q", "u", "over", 7, JobState.RUNNING, 0.0, NOW, 1000.0, placement=(("wn01", 7),))
    big = Job("big", "q", "v", big_group, 6, JobState.QUEUED, 1.0, None, 3600.0)
    b1 = Job("b1", "q", "w", "below", 1, JobState.QUEUED, 2.0, None, 100000.0)
    o1 = Job("o1", "q", "z", "over", 1, JobState.QUEUED, 3.0, None, 100000.0)
    snap = Snapshot(NOW, (x, big, b1, o1), nodes, ())
    p = Plan(now=NOW, policy="mysched")
    p.starts.append(Start("o1", (("wn01", 1),), "fairshare", "over", "over", "z", "q", 1, 3))
    p.waits.update({"big": Wait("big", "no_free_slot", 1), "b1": Wait("b1", "reserved", 2)})
    p.reservations["big"] = Reservation("big", NOW + 1000, ("wn01",))
    p.holds["wn01"] = (NOW + 1000, "big", 6, big_group, big_group)  # what the plan's starts met there
    farm = SimpleNamespace(vo_running={"over": 7}, vo_queued={"over": 2, "below": 1}, free={"wn01": 1})
    return share_violations(p, snap, cfg, farm, {"below": 4, "over": 0}, NodeIndex().get(cfg, nodes))


def test_a_start_beside_a_reservation_counts_when_a_vo_below_its_guarantee_could_have_had_it():
    base = 'vos = { below = { groups = ["below"]; share = 50; }; over = { groups = ["over"]; share = 50; }; };'
    assert _count(base) == 1
    # not when the waiting job could not have used them either: it counts against a per-node
    # limit of the reserved job's VO, which the planner keeps those cores from
    limited = base.replace('below = { groups = ["below"]; share = 50; }',
                           'below = { groups = ["below"]; share = 50; max_per_node = 4; }')
    assert _count(limited, big_group="below") == 0 and _count(limited) == 1
