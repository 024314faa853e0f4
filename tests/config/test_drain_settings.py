"""The drain settings a site writes, read as it means them: rate 0 switches the partition off
(what a sweep of drain.rate=0,12 asks), as does max_draining 0; neither set: automatic."""

from __future__ import annotations

import pytest

from mysched.config import config_from_text


def test_rate_zero_switches_the_partition_off_whatever_max_draining_says():
    cfg = config_from_text("drain = { rate = 0; max_draining = 10; };")
    assert not cfg.drain.on and cfg.drain.max_draining == 10
    assert config_from_text("drain = { rate = 12; max_draining = 10; };").drain.on


def test_no_drain_setting_means_the_partition_follows_the_demand():
    d = config_from_text('vos = { a = { groups = ["a"]; share = 100; }; };').drain
    assert d.on and d.auto and d.rate is None and d.max_draining is None


@pytest.mark.parametrize("text, rate, most", [("drain = { max_draining = 10; };", None, 10),
                                              ("drain = { rate = 5; };", 5, None)])
def test_either_override_alone_bounds_the_partition_and_keeps_it_on(text, rate, most):
    d = config_from_text(text).drain
    assert d.on and not d.auto and d.rate == rate and d.max_draining == most


def test_max_draining_zero_switches_the_partition_off():
    assert not config_from_text("drain = { rate = 5; max_draining = 0; };").drain.on
