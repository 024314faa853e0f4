"""The configuration's values and the rules they answer: a VO's guarantee on a farm, node
type patterns, who may borrow a pool's packages, the leader's timeout, the VOs a replayed
trace adds, and which optional features are off when left empty."""

from __future__ import annotations

import pytest

from mysched.config import config_from_text
from mysched.core.settings import (Config, DrainConfig, HotLists, LoanPolicy, NodeLoadLimits, NodeType, QueueConfig,
                                 VOConfig, auto_vos)

H = 3600.0
ALL = frozenset({"all"})


@pytest.mark.parametrize("share, total, slots", [
    (0.29, 100, 29),  # 28.999999999999996 in floating point: still 29 slots
    (0.7, 10, 7), (0.1, 30, 3),
    (0.33, 10, 3),    # the guarantee is whole slots, rounded down
    (0.5, 0, 0),
])
def test_a_share_guarantees_that_fraction_of_the_farm_in_whole_slots(share, total, slots):
    assert VOConfig("a", share=share).guarantee(total) == slots


def test_a_guarantee_in_slots_is_at_most_the_farm_and_its_share_the_fraction_it_is():
    v = VOConfig("a", share=0.9, slots=30)  # slots win over a share
    assert (v.guarantee(100), v.guarantee(20)) == (30, 20)
    assert (v.share_fraction(120), v.share_fraction(0)) == (0.25, 0.0)


def test_a_vo_nobody_declared_has_no_share_and_no_limits_and_unmapped_groups_go_to_the_default():
    cfg = config_from_text('vos = { atlas = { groups = ["atlas"]; share = 50; max_running = 9; }; };')
    assert cfg.vo("atlas").max_running == 9
    assert cfg.vo("others") == VOConfig("others")
    assert (cfg.vo_of("atlas"), cfg.vo_of("nobody")) == ("atlas", "others")


def test_node_type_names_are_case_sensitive_patterns_and_properties_must_all_be_there():
    nt = NodeType("gpu", nodes=("gpu[0-4]*",), properties=("gpu", "ib"))
    assert nt.matches("gpu17", frozenset())
    assert not nt.matches("gpu57", frozenset()) and not nt.matches("GPU17", frozenset())
    assert nt.matches("wn01", frozenset({"gpu", "ib", "ssd"}))
    assert not nt.matches("wn01", frozenset({"gpu"}))
    assert not NodeType("none").matches("wn01", frozenset({"gpu"}))  # no names, no properties: no node


@pytest.mark.parametrize("policy, queue, walltime, why", [
    (LoanPolicy(), "short", 600.0, "the pool loans nothing"),
    (LoanPolicy(frozenset({"short"})), "long", 600.0, "queue long may not borrow"),
    (LoanPolicy(frozenset({"short"})), "short", None, None),
    (LoanPolicy(ALL), "long", 1e9, None),
    (LoanPolicy(ALL, 6 * H), "long", 6 * H, None),
    (LoanPolicy(ALL, 6 * H), "long", 7.5 * H, "loans only to jobs of at most 6 h, the job asks walltime 7.5 h"),
    (LoanPolicy(ALL, 6 * H), "long", None, "loans only to jobs of at most 6 h, the job asks no walltime"),
])
def test_who_may_borrow_a_pools_idle_packages_and_why_not(policy, queue, walltime, why):
    assert policy.refuses(queue, walltime) == why


@pytest.mark.parametrize("leader_timeout, interval, scale, timeout", [
    (12.0, 60.0, 1.0, 12.0),  # as configured
    (0.0, 20.0, 1.0, 10.0),   # half the interval
    (0.0, 600.0, 1.0, 30.0),  # at most 30 s
    (0.0, 2.0, 1.0, 2.0),     # at least 2 s
    (0.0, 40.0, 0.5, 10.0),   # in wall seconds on a fast simulated clock
])
def test_a_leader_cut_off_from_the_history_keeps_leadership_so_long(leader_timeout, interval, scale, timeout):
    cfg = Config(leader_timeout=leader_timeout, interval=interval)
    assert cfg.leadership_timeout(scale) == timeout


def test_a_replayed_trace_adds_its_vos_sharing_what_the_configured_shares_leave():
    cfg = config_from_text('vos = { atlas = { groups = ["atlas"]; share = 60; }; '
                           'cms = { groups = ["cms"]; slots = 10; }; };')
    out = auto_vos(cfg, {"atlas": "atlas", "cms": "cms", "g1": "g1", "g2": "lab", "g3": "lab"})
    assert out.vos["atlas"] == cfg.vos["atlas"] and out.vos["cms"] == cfg.vos["cms"]
    assert out.vos["g1"] == VOConfig("g1", ("g1",), pytest.approx(0.2))      # slots count for nothing here
    assert out.vos["lab"] == VOConfig("lab", ("g2", "g3"), pytest.approx(0.2))
    assert [out.vo_of(g) for g in ("atlas", "g1", "g2", "g3")] == ["atlas", "g1", "lab", "lab"]
    assert auto_vos(cfg, {"atlas": "elsewhere"}) is cfg  # a mapped group keeps its VO


def test_a_trace_vo_gets_no_share_when_the_configured_ones_take_it_all():
    cfg = config_from_text('vos = { atlas = { groups = ["atlas"]; share = 100; }; };')
    assert auto_vos(cfg, {"g1": "g1"}).vos["g1"].share == 0.0


def test_optional_features_left_empty_are_off():
    assert not HotLists() and HotLists(users=frozenset({"ops"}))
    assert not NodeLoadLimits() and NodeLoadLimits(min_free_mem=0)
    # the multi-core partition is on unless switched off: automatic, or bounded by either override
    assert DrainConfig().on and DrainConfig().auto and DrainConfig(rate=12).on and not DrainConfig(rate=12).auto
    assert not DrainConfig(rate=0).on and not DrainConfig(max_draining=0).on
    assert not QueueConfig("q").restricted and QueueConfig("q", node_types=("gpu",)).restricted
