"""Durations, however an admin or TORQUE writes them: one parser for the whole project.

The configuration, the command line, TORQUE's replies and its accounting logs all name
lengths of time; reading them in one place means ``"01:30:00"`` in a config file and
``walltime=01:30:00`` from pbs_server can never mean different things.
"""

from __future__ import annotations

import math
import re
from typing import Any

_UNIT = re.compile(r"^(\d+(?:\.\d+)?)\s*([smhdw]?)$", re.I | re.A)
_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_NEVER = ("inf", "infinity", "never")


def parse_duration(value: Any) -> float:
    """Seconds from any of:

    - a non-negative number of seconds (``3600``, ``"90"``, ``2.5``);
    - a number with a unit: ``"30s"``, ``"90m"``, ``"12h"``, ``"2d"``, ``"1w"``;
    - TORQUE's clock form ``"[[DD:]HH:]MM:SS"`` (``"01:30:00"``, ``"96:00:00"``, ``"01:30"``);
    - ``"inf"`` / ``"infinity"`` / ``"never"`` for no limit.

    Raises `ValueError` naming what it got otherwise."""
    if isinstance(value, bool):
        raise ValueError("expected a duration, got a boolean")
    if isinstance(value, (int, float)):
        if math.isnan(value) or value < 0:
            raise ValueError(f"a duration must be a non-negative number of seconds, got {value!r}")
        return float(value)
    if isinstance(value, str):
        text = value.strip()
        if text.lower() in _NEVER:
            return math.inf
        if ":" in text:
            parts = text.split(":")
            if len(parts) <= 4 and all(p.isascii() and p.isdigit() for p in parts):
                total = 0
                for i, p in enumerate(parts):
                    # days count 24 hours, the rest 60 of the next unit
                    total = total * (24 if (len(parts) == 4 and i == 1) else 60) + int(p)
                return float(total)
        else:
            m = _UNIT.match(text)
            if m:
                return float(m.group(1)) * _UNITS[m.group(2).lower()]
    raise ValueError(f"expected a duration such as 3600, \"90m\", \"2d\" or \"01:30:00\", got {value!r}")


def duration_or_none(text: str | None) -> float | None:
    """An optional duration attribute (TORQUE's walltime, cput): None when absent, empty or unreadable."""
    if not text:
        return None
    try:
        return parse_duration(text)
    except ValueError:
        return None
