"""A plan's shared context: `wake` asks for the next plan only at a time after now and
sooner than one asked for already; `keys_of` names the node groups a job kind may use."""

from __future__ import annotations

import math

from mysched.config import config_from_text
from mysched.core.hold.gates import cycle_of
from mysched.core.model.batch import Node, Snapshot
from mysched.core.place.nodeindex import NodeIndex
from mysched.core.rules.access import node_key
from mysched.core.share.usage import Usage

CFG = config_from_text('''
vos = { atlas = { groups = ["atlas"]; share = 50; }; cms = { groups = ["cms"]; share = 50; }; };
queues = { grid = {}; sw = { node_types = ["big"]; }; };
node_types = { big = { nodes = ["big01"]; groups = ["cms"]; }; };
''')
NODES = (Node("wn01", 4), Node("big01", 8))


def _cycle(now: float = 1000.0):
    snap = Snapshot(now, (), NODES)
    return cycle_of(snap, CFG, Usage(), now, "mysched", NodeIndex().get(CFG, NODES))


def test_a_cycle_asks_for_no_wake_until_told():
    assert _cycle().wake_at is None


def test_now_or_earlier_is_no_wake_time():
    cy = _cycle(1000.0)
    cy.wake(1000.0)
    cy.wake(999.0)
    assert cy.wake_at is None


def test_a_never_is_no_wake_time():
    cy = _cycle()
    cy.wake(math.inf)
    cy.wake(math.nan)
    assert cy.wake_at is None


def test_the_soonest_time_asked_for_wins():
    cy = _cycle(1000.0)
    cy.wake(5000.0)
    cy.wake(2000.0)
    cy.wake(3000.0)
    assert cy.wake_at == 2000.0


def test_a_job_kind_may_use_the_groups_its_queue_and_node_type_admit():
    cy = _cycle()
    plain, big = node_key(CFG, "wn01", None), node_key(CFG, "big01", "big")
    assert set(cy.keys_of("grid", "cms", "cms")) == {plain, big}
    assert cy.keys_of("grid", "atlas", "atlas") == (plain,)
    assert cy.keys_of("sw", "cms", "cms") == (big,)
