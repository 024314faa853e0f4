"""Sizes as TORQUE writes them (``2000mb``, ``4gb``, ``512kb``, ``100``): one parser, for
server replies, accounting logs and the configuration."""

from __future__ import annotations

import re

MAX_NODE_SLOTS = 4096
"""The most slots one node may have: a configuration, a simulated farm or a pbs_server reply
with more is refused (a node of 10^20 slots would swallow every job)."""

_MEM = re.compile(r"^(\d+)\s*([kmgtp]?)(b|w)?$", re.I | re.A)


def digits(text: str) -> bool:
    """Only ASCII digits, as TORQUE writes counts: str.isdigit() also takes '²' and the like,
    which int() refuses with Python's own words."""
    return text.isascii() and text.isdigit()


def parse_mem(text: str) -> int:
    """TORQUE sizes (``2000mb``, ``4gb``, ``512kb``, ``100``) -> bytes."""
    m = _MEM.match(text.strip())
    if not m:
        raise ValueError(f"bad size {text!r}")
    mult = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40, "p": 1 << 50}[m.group(2).lower()]
    word = 8 if (m.group(3) or "").lower() == "w" else 1
    return int(m.group(1)) * mult * word
