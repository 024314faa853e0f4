"""What the planner derives from the configuration and the node list and keeps between
cycles: the farm's slots, each job kind's limits and nodes, packing classes, pool hosts --
and that it follows a changed configuration or node list."""

from __future__ import annotations

from mysched.config import config_from_text
from mysched.core.rules.access import node_key
from mysched.core.place.nodeindex import NodeIndex
from mysched.core.model.batch import Node, NodeState

BASE = 'vos = { atlas = { groups = ["atlas", "sgm"]; share = 50; }; cms = { groups = ["cms"]; share = 50; }; };\n'
CFG = config_from_text('''
vos = { atlas = { groups = ["atlas", "sgm"]; share = 50; max_running = 40; max_per_node = 3; };
        cms = { groups = ["cms"]; share = 50; }; };
groups = { sgm = { max_running = 2; }; };
queues = { q = { max_running = 100; }; mpi = { nodes = ["mpi*"]; exclusive = true; }; };
node_types = { sw = { nodes = ["wn01"]; groups = ["sgm"]; }; };
packing = { mc = { policy = "relaxed"; groups = ["sgm"]; }; pil = { policy = "none"; users = ["pilot"]; }; };
''')
FARM = (Node("wn01", 8), Node("wn02", 8, NodeState.FULL), Node("wn03", 16, NodeState.BUSY),
        Node("wn04", 32, NodeState.OFFLINE), Node("wn05", 64, NodeState.DOWN), Node("mpi01", 4))


def test_the_farm_counts_online_nodes_and_its_widest_usable_node():
    idx = NodeIndex().get(CFG, FARM)
    assert idx.total_slots == 8 + 8 + 16 + 4  # busy nodes count, offline and down ones do not
    assert idx.max_slots == 8                  # the widest node that takes jobs
    assert idx.idle_free == 8 + 4              # free nodes if nothing ran: not full or busy ones


def test_a_job_kinds_limits_come_from_its_queue_vo_and_group():
    idx = NodeIndex().get(CFG, FARM)
    assert idx.rules("q", "atlas", "sgm")[:5] == (100, 40, 2, 3, None)
    assert idx.rules("other", "cms", "cms")[:5] == (None, None, None, None, None)


def test_a_job_kind_may_use_the_pools_its_queue_and_node_type_admit():
    idx = NodeIndex().get(CFG, FARM)
    sw, plain, mpi = node_key(CFG, "wn01", "sw"), node_key(CFG, "wn02", None), node_key(CFG, "mpi01", None)
    assert set(idx.rules("q", "atlas", "sgm")[5]) == {sw, plain}
    assert set(idx.rules("q", "atlas", "atlas")[5]) == {plain}
    assert set(idx.rules("mpi", "cms", "cms")[5]) == {mpi}


def test_a_job_belongs_to_the_first_packing_class_it_matches():
    idx = NodeIndex().get(CFG, FARM)
    assert idx.job_class("q", "atlas", "sgm", "pilot").name == "mc"
    assert idx.job_class("q", "cms", "cms", "pilot").name == "pil"
    assert idx.job_class("q", "cms", "cms", "alice") is None
    assert (idx.vo_of("sgm"), idx.vo_of("nobody")) == ("atlas", "others")


def test_an_idle_pool_is_ranked_by_the_policys_score_of_empty_nodes():
    nodes = (Node("wn04", 8), Node("wn02", 4), Node("wn03", 16), Node("wn06", 32, NodeState.DOWN),
             Node("wn05", 64, NodeState.FULL), Node("mpi01", 64), Node("wn01", 64))
    idx = NodeIndex().get(CFG, nodes)
    key = node_key(CFG, "wn02", None)  # the free untyped nodes no queue owns
    assert [k[-1] for k in idx.empty_ranking("mysched", key, False).keys] == ["wn02", "wn03", "wn04"]
    assert [k[-1] for k in idx.empty_ranking("fifo", key, False).keys] == ["wn02", "wn03", "wn04"]
    assert [k[-1] for k in idx.empty_ranking("least-loaded", key, False).keys] == ["wn03", "wn04", "wn02"]


def test_a_host_joins_the_first_pool_selecting_it_and_is_guarded_only_for_a_consumer_that_can_use_it():
    cfg = config_from_text(BASE + '''
node_types = { sw = { nodes = ["wn01"]; groups = ["sgm"]; }; };
pools = { cmspool = { hosts = ["wn0[12]"]; package = { slots = 1; }; vos = { cms = 2; }; };
          rest = { package = { slots = 1; }; vos = { atlas = 1; }; }; };''')
    idx = NodeIndex().get(cfg, (Node("wn01", 8), Node("wn02", 8), Node("wn03", 8)))
    assert {h: p.name for h, p in idx.pool_of.items()} == {"wn01": "cmspool", "wn02": "cmspool", "wn03": "rest"}
    assert idx.pool_guardable == {"wn02", "wn03"}  # cms may not use the sw node wn01


def test_limits_anywhere_are_noticed():
    assert not NodeIndex().get(config_from_text(BASE), FARM).total_limits
    idx = NodeIndex().get(CFG, FARM)
    assert idx.total_limits and not idx.core_limits
    cores = NodeIndex().get(config_from_text(BASE + 'groups = { cms = { max_cores = 8; }; };'), FARM)
    assert cores.total_limits and cores.core_limits
    users = NodeIndex().get(config_from_text(BASE + 'users = { default = { max_running = 8; }; };'), FARM)
    assert users.total_limits and not users.core_limits


def test_a_changed_node_list_or_configuration_is_followed():
    idx = NodeIndex()
    cfg = config_from_text(BASE)
    assert idx.get(cfg, FARM).total_slots == 36
    again = tuple(Node(n.name, n.slots, n.state) for n in FARM)  # a server's re-read: same facts
    assert idx.get(cfg, again).total_slots == 36
    wider = (Node("wn01", 12),) + FARM[1:]
    assert idx.get(cfg, wider).total_slots == 40 and idx.max_slots == 12
    down = (Node("wn01", 12, NodeState.DOWN),) + FARM[1:]
    assert idx.get(cfg, down).total_slots == 28
    assert idx.get(cfg, down).rules("q", "atlas", "sgm")[:5] == (None, None, None, None, None)
    assert idx.get(CFG, down).rules("q", "atlas", "sgm")[:5] == (100, 40, 2, 3, None)  # another configuration
