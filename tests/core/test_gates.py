"""The admission of a plan rebuilt after the fact (`as_planned`, what the share-violation
check asks) refuses what the plan's reservation holds, drains, downtimes, overloaded nodes
and class holds refused, and nothing more; `cycle_of` gives a plan its read-only context."""

from __future__ import annotations

import calendar

from mysched.config import config_from_text
from mysched.core.hold.gates import as_planned, cycle_of
from mysched.core.hold.reservations import Hold
from mysched.core.model.batch import Job, JobState, Node, NodeState, Snapshot
from mysched.core.model.plan import Plan, PoolGate, PoolNeed
from mysched.core.model.reasons import Reason
from mysched.core.place.admission import Ask
from mysched.core.place.nodeindex import NodeIndex
from mysched.core.share.usage import Usage

VOS = 'vos = { atlas = { groups = ["atlas", "mc"]; share = 50; }; cms = { groups = ["cms"]; share = 50; }; };\n'
CFG = config_from_text(VOS + '''
drain = { rate = 2; max_draining = 2; keep = "30m"; min_cores = 4; };
packing = { mc = { policy = "relaxed"; groups = ["mc"]; }; };
downtimes = { gocdb_1 = { start = "2026-12-01T08:00"; end = "2026-12-01T12:00"; hosts = ["wn03"];
                          margin = "10m"; }; };
''')
NOW = float(calendar.timegm((2026, 12, 1, 6, 0, 0)))  # wn03 takes jobs ending by 07:50 (10 min before its downtime)
NODES = tuple(Node(f"wn0{i}", 8) for i in range(1, 6))
RUNNING = (Job("r1", "q", "u9", "atlas", 6, JobState.RUNNING, 0.0, NOW - 100, 1000.0, placement=(("wn01", 6),)),)
HOLD = {"wn01": Hold(NOW + 900, "big", 8, "atlas", "atlas")}  # a reservation of wn01 when r1 ends


def _plan(**kw) -> Plan:
    return Plan(NOW, **kw)


def _admission(out: Plan, cfg=CFG):
    snap = Snapshot(NOW, RUNNING, NODES)
    index = NodeIndex().get(cfg, NODES)
    index.tally(out.policy).sync(snap)
    return as_planned(out, snap, cfg, index)


def _first(adm_board, node: str, cores: int = 1, walltime: float | None = 3600.0, group: str = "cms",
           cls: str | None = None):
    adm, board = adm_board
    job = Job(f"j{cores}-{walltime}", "q", "u1", group, cores, walltime=walltime)
    vo = "cms" if group == "cms" else "atlas"
    return adm.first(board.usages.peek(node), Ask(job, vo, cls, cores, set(board.groups.values())))


def test_a_reserved_node_refuses_a_job_running_past_the_holds_start_and_takes_one_ending_before():
    got = _admission(_plan(holds=HOLD))
    assert [_first(got, "wn01", walltime=w) for w in (901.0, 900.0)] == [Reason.RESERVED, None]


def test_without_the_plans_hold_the_node_takes_the_job():
    assert _first(_admission(_plan()), "wn01", walltime=901.0) is None


def test_starts_booked_on_the_board_fill_the_node_between_them():
    adm, board = got = _admission(_plan(holds=HOLD))
    short = Job("s", "q", "u1", "cms", 1, walltime=60.0)
    board.take(short, "cms", None, board.usages["wn01"], 1)
    assert _first(got, "wn01", walltime=60.0) is None
    board.take(short._replace(id="s2"), "cms", None, board.usages["wn01"], 1)
    assert _first(got, "wn01", walltime=60.0) is Reason.NO_FREE_SLOT


def test_a_draining_node_takes_multi_core_jobs_and_smaller_ones_ending_by_its_horizon():
    # wn01 (2 of 8 cores free) drains for 2-core jobs
    got = _admission(_plan(draining_now=frozenset({"wn01"}), drain_horizons={"wn01": NOW + 600}, drain_wants={"wn01": 2}))
    assert [_first(got, "wn01", c, w) for c, w in ((1, 601.0), (1, 600.0), (2, 7200.0))] == \
        [Reason.DRAINING, None, None]
    assert _first(got, "wn04", 1, 601.0) is None


def test_a_node_with_a_downtime_ahead_takes_only_jobs_ending_before_it():
    got = _admission(_plan())
    assert [_first(got, "wn03", walltime=w) for w in (6601.0, 6600.0, None)] == [Reason.DOWNTIME, None, Reason.DOWNTIME]


def test_an_overloaded_node_and_a_class_held_node_refuse_as_in_the_plan():
    got = _admission(_plan(node_load={"wn05": "load 40 > 16"}, node_classes={"wn04": "mc"}))
    assert (_first(got, "wn05"), got[1].usages["wn05"].usable) == (Reason.NODE_LOAD, False)
    assert [_first(got, "wn04"), _first(got, "wn04", group="mc", cls="mc")] == [Reason.PACKING, None]


def test_a_held_pool_host_keeps_its_packages_for_the_owners_as_the_plan_reports_them():
    cfg = config_from_text(VOS + 'pools = { cmspool = { hosts = ["wn02"]; package = { slots = 4; }; '
                                 'vos = { cms = 2; }; loan = { queues = ["all"]; }; }; };')
    held = _plan(pools={"cmspool": {"consumers": [
                     {"kind": "vo", "consumer": "cms", "guaranteed": 2, "allocated": 0, "owed": 0}]}},
                 pool_gates={"wn02": PoolGate("cmspool", "held")}, pool_need={"wn02": PoolNeed(2, 4)},
                 pool_horizons={"wn02": NOW + 600})
    got = _admission(held, cfg)
    asks = (("cms", 3600.0), ("atlas", 3600.0), ("atlas", 600.0))  # an owner; loans past and within the horizon
    assert [_first(got, "wn02", group=g, walltime=w) for g, w in asks] == [None, Reason.POOL_HELD, None]
    assert _first(_admission(_plan(), cfg), "wn02", group="atlas") is None


def test_a_cycle_counts_slots_still_used_on_down_nodes_in_the_farms_total():
    nodes = (Node("wn01", 8), Node("wn02", 4, NodeState.DOWN))
    cfg = config_from_text(VOS + 'packing = { mc = { policy = "exclusive"; groups = ["mc"]; ttl = "1h"; }; };')
    snap = Snapshot(NOW, (RUNNING[0]._replace(cores=3, placement=(("wn02", 3),)),), nodes)
    index = NodeIndex().get(cfg, nodes)
    index.tally("mysched").sync(snap)
    cy = cycle_of(snap, cfg, Usage(), NOW, "mysched", index)
    assert (cy.total_slots, cy.max_slots, cy.exclusive_packing, cy.tally is index.tally("mysched")) == \
        (8 + 3, 8, True, True)
    assert cycle_of(snap, CFG, Usage(), NOW, "mysched", NodeIndex().get(CFG, nodes)).exclusive_packing is False


def test_a_draining_node_keeps_the_cores_it_drains_for_from_smaller_jobs_and_lets_the_rest_go():
    # wn02 (8 cores, empty) drains for 4-core jobs: it keeps 4 cores, so a 1- or 2-core job may
    # take some of the other 4; wn02 drawn for an 8-core job keeps all 8, and a 2-core job
    # (multi-core, but smaller than what the node drains for) is held off them too.
    four = _admission(_plan(draining_now=frozenset({"wn02"}), drain_horizons={"wn02": NOW}, drain_wants={"wn02": 4}))
    assert [_first(four, "wn02", c, 7200.0) for c in (1, 2, 4, 5)] == [None, None, None, None]
    eight = _admission(_plan(draining_now=frozenset({"wn02"}), drain_horizons={"wn02": NOW}, drain_wants={"wn02": 8}))
    assert [_first(eight, "wn02", c, 7200.0) for c in (1, 2, 4, 8)] == [Reason.DRAINING] * 3 + [None]
