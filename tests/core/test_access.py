"""The static access rules: a node's type, the queues it is assigned to, and who may use it
at all -- jobs of a queue, VO and group, and the consumers a pool guards hosts for."""

from __future__ import annotations

import pytest

from mysched.config import config_from_text
from mysched.core.rules.access import (NodeKey, admits, consumer_admits, node_key, node_type, queue_admits, refusal,
                                    type_admits)

CFG = config_from_text('''
vos = { atlas = { groups = ["atlas", "atlassgm"]; share = 50; }; cms = { groups = ["cms"]; share = 50; }; };
node_types = {
  sw = { nodes = ["wn0[12]"]; groups = ["atlassgm"]; };
  gpu = { properties = ["gpu"]; vos = ["cms"]; };
  fat = { properties = ["gpu", "bigmem"]; };
  big = { nodes = ["big*"]; };
};
queues = { q = {}; mpi = { nodes = ["mpi*"]; exclusive = true; }; gpuq = { node_types = ["gpu"]; }; };
''')
NONE: frozenset[str] = frozenset()
GPU = frozenset({"gpu"})


def key(name: str, props: frozenset[str] = NONE) -> NodeKey:
    return node_key(CFG, name, node_type(CFG, name, props))


def test_a_node_has_the_first_type_in_configuration_order_it_matches():
    assert node_type(CFG, "wn01", GPU) == "sw"             # by name, before its gpu property
    assert node_type(CFG, "gpu01", frozenset({"gpu", "bigmem"})) == "gpu"  # fat comes later
    assert node_type(CFG, "wn03", frozenset({"bigmem"})) is None  # fat needs every property
    assert node_type(CFG, "big07", NONE) == "big"
    assert node_type(CFG, "wn03", NONE) is None


def test_a_nodes_key_names_the_queues_listing_it_and_those_owning_it():
    assert key("mpi01") == NodeKey(None, frozenset({"mpi"}), frozenset({"mpi"}))
    assert key("gpu01", GPU) == NodeKey("gpu", frozenset({"gpuq"}), NONE)  # by its type, not exclusive
    assert key("wn01") == NodeKey("sw", NONE, NONE)
    assert key("wn09") == NodeKey(None, NONE, NONE)


@pytest.mark.parametrize("node, props, queue, ok", [
    ("mpi01", NONE, "mpi", True), ("wn09", NONE, "mpi", False),    # a restricted queue: its nodes only
    ("gpu01", GPU, "gpuq", True), ("wn09", NONE, "gpuq", False),
    ("wn09", NONE, "q", True), ("mpi01", NONE, "q", False),        # an exclusive queue's node: no other queue
    ("gpu01", GPU, "q", True),                                     # a non-exclusive one's: every queue
    ("mpi01", NONE, "nosuch", False), ("wn09", NONE, "nosuch", True),  # a queue not configured is unrestricted
])
def test_a_restricted_queue_uses_its_nodes_and_an_exclusive_one_keeps_them(node, props, queue, ok):
    assert queue_admits(CFG, key(node, props), queue) is ok


@pytest.mark.parametrize("ntype, vo, group, ok", [
    (None, "atlas", "atlas", True),                                # untyped: open to all
    ("sw", "atlas", "atlassgm", True), ("sw", "atlas", "atlas", False),  # by group, not the group's VO
    ("gpu", "cms", "cms", True), ("gpu", "atlas", "atlassgm", False),    # by VO, any of its groups
    ("big", "atlas", "atlas", True),                               # a type naming no one: open to all
    ("gone", "atlas", "atlas", True),                              # a type no longer configured
])
def test_a_node_type_admits_the_groups_and_vos_it_names(ntype, vo, group, ok):
    assert type_admits(CFG, ntype, vo, group) is ok


def test_a_job_needs_both_its_queue_and_its_type_to_admit_a_node_and_hears_which_refused():
    wn01 = key("wn01")
    assert admits(CFG, wn01, "q", "atlas", "atlassgm")
    assert not admits(CFG, wn01, "q", "atlas", "atlas")
    assert refusal(CFG, wn01, "q") == "node_type"
    mpi01 = key("mpi01")
    assert not admits(CFG, mpi01, "q", "atlas", "atlassgm")
    assert refusal(CFG, mpi01, "q") == "queue_nodes"
    assert refusal(CFG, key("wn01"), "gpuq") == "queue_nodes"  # the queue first, though the type refuses too


@pytest.mark.parametrize("node, props, kind, name, ok", [
    ("wn01", NONE, "vo", "atlas", True),       # one of its groups may use the sw node
    ("wn01", NONE, "vo", "cms", False),
    ("wn01", NONE, "group", "atlassgm", True), ("wn01", NONE, "group", "atlas", False),
    ("gpu01", GPU, "group", "cms", True),      # its VO may use the gpu node
    ("gpu01", GPU, "group", "atlas", False),
    ("mpi01", NONE, "vo", "atlas", False),     # an exclusive queue's node: a VO may submit anywhere
    ("mpi01", NONE, "queue", "mpi", True), ("mpi01", NONE, "queue", "q", False),
    ("wn09", NONE, "group", "anyone", True), ("big01", NONE, "vo", "cms", True),
])
def test_a_pool_guards_a_host_only_for_a_consumer_that_could_use_it(node, props, kind, name, ok):
    assert consumer_admits(CFG, key(node, props), kind, name) is ok
