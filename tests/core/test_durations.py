"""One duration syntax for config files, the command line and TORQUE's values."""

from __future__ import annotations

import math

import pytest

from mysched.core.settings import Config
from mysched.config import config_from_text
from mysched.core.model.durations import duration_or_none, parse_duration


@pytest.mark.parametrize("text, seconds", [
    (30, 30), (2.5, 2.5), ("90", 90), ("30s", 30), ("90m", 5400), ("12h", 43200), ("2d", 172800),
    ("1w", 604800), ("01:30", 90), ("01:30:00", 5400), ("96:00:00", 345600), ("1:02:00:00", 93600),
])
def test_every_form_reads_the_same_everywhere(text, seconds):
    assert parse_duration(text) == seconds


def test_no_limit_and_bad_values():
    assert math.isinf(parse_duration("inf")) and math.isinf(parse_duration("never"))
    for bad in ("soon", "", "-5", "1:2:3:4:5", "19:2x", "1.5:00", True, -1, float("nan")):
        with pytest.raises(ValueError):
            parse_duration(bad)
    assert duration_or_none(None) is None and duration_or_none("garbage") is None
    assert duration_or_none("00:10:00") == 600


def test_config_takes_torque_clock_form():
    cfg = config_from_text('history: { window = "48:00:00"; half_life = "1d"; };')
    assert cfg.history_window == 2 * 86400 == Config().history_window
