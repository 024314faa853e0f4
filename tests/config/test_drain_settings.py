"""The drain settings a site writes, read as it means them: rate 0 switches the partition off
(what a sweep of drain.rate=0,12 asks), half a setting is refused by key."""

from __future__ import annotations

import pytest

from mysched.config import config_from_text
from mysched.errors import ConfigError


def test_rate_zero_switches_the_partition_off_whatever_max_draining_says():
    cfg = config_from_text("drain = { rate = 0; max_draining = 10; };")
    assert not cfg.drain.on and cfg.drain.max_draining == 10
    assert config_from_text("drain = { rate = 12; max_draining = 10; };").drain.on


@pytest.mark.parametrize("text", ["drain = { max_draining = 10; };", "drain = { rate = 5; };",
                                  "drain = { rate = 5; max_draining = 0; };"])
def test_half_a_drain_setting_is_refused_by_key(text):
    with pytest.raises(ConfigError, match=r"^<config>:1: drain: set both rate .* and max_draining, or neither"):
        config_from_text(text)
