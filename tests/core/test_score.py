"""A node's placement score under each policy: which of the nodes a job may use it goes to
(lowest score first), and the same score for a node that runs nothing."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import pytest

from mysched.config import config_from_text
from mysched.core.settings import DrainConfig
from mysched.core.model.batch import Node
from mysched.core.place.score import empty_key, key_fn, keeps_whole


def load(name: str, slots: int = 8, used: int = 0, users: dict | None = None, njobs: int = 0):
    """What a score reads of a node's counts (the planner's per-node load)."""
    return SimpleNamespace(name=name, slots=slots, free=slots - used, used=used, users=users or {}, njobs=njobs)


# wn01: 1 user, 3 jobs, 3 cores; wn02: 2 users, 4 jobs, 6 cores; wn03: idle; wn04: 1 user, 1 job, 1 core
FARM = [load("wn04", used=1, users={"a": 1}, njobs=1), load("wn02", used=6, users={"a": 2, "b": 2}, njobs=4),
        load("wn03"), load("wn01", used=3, users={"c": 3}, njobs=3)]


def order(policy: str, whole: bool = False, farm=FARM) -> list[str]:
    key = key_fn(policy, whole)
    return [ld.name for ld in sorted(farm, key=key)]


@pytest.mark.parametrize("policy", ["fifo", "easy"])
def test_first_fit_policies_take_nodes_by_name_whatever_runs_there(policy):
    assert order(policy) == ["wn01", "wn02", "wn03", "wn04"]


def test_least_loaded_takes_the_node_with_most_free_cores_then_by_name():
    assert order("least-loaded") == ["wn03", "wn04", "wn01", "wn02"]


def test_mysched_takes_the_highest_diversity_after_placement_then_fewest_used_cores():
    # users/jobs after placement: wn03 1/1, wn04 2/2, wn02 3/5, wn01 2/4; wn03 before wn04: fewer
    # cores used; wn02 before wn01 though it uses more
    assert order("mysched") == ["wn03", "wn04", "wn02", "wn01"]


def test_keeping_nodes_whole_puts_idle_nodes_last():
    assert order("mysched", whole=True) == ["wn04", "wn02", "wn01", "wn03"]


def test_the_name_settles_a_tie_and_is_the_last_item():
    twins = [load("wn09", used=2, users={"a": 1}, njobs=1), load("wn08", used=2, users={"b": 1}, njobs=1)]
    for policy in ("mysched", "fifo", "easy", "least-loaded"):
        for whole in (False, True):
            assert order(policy, whole, twins) == ["wn08", "wn09"]
            assert key_fn(policy, whole)(twins[0])[-1] == "wn09"


@pytest.mark.parametrize("policy", ["mysched", "fifo", "easy", "least-loaded"])
@pytest.mark.parametrize("whole", [False, True])
def test_an_idle_node_scores_alike_whether_or_not_counts_were_kept_for_it(policy, whole):
    node = Node("wn07", 16)
    assert empty_key(policy, node, whole) == key_fn(policy, whole)(load("wn07", slots=16))


def test_nodes_are_kept_whole_while_the_multicore_partition_is_on_and_multicore_work_is_there():
    base = config_from_text('vos = { a = { groups = ["a"]; share = 100; }; };')
    # automatic partition: depth-first only while multi-core jobs run or wait
    assert keeps_whole(base) and not keeps_whole(base, multicore=False)
    on = config_from_text('vos = { a = { groups = ["a"]; share = 100; }; };\n'
                          'drain = { rate = 12; max_draining = 10; };')
    assert keeps_whole(on) and keeps_whole(on, multicore=False)  # set by hand: always
    assert not keeps_whole(dataclasses.replace(on, drain=DrainConfig(rate=12, max_draining=0)))
    assert not keeps_whole(dataclasses.replace(on, drain=DrainConfig(rate=0)), multicore=True)
