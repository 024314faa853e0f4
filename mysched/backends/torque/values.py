"""Values as TORQUE writes them (server replies and accounting logs): sizes, nodes specs
and exec_host lists (durations: `mysched.core.durations`). One parser each, shared by the IFL adapter and the
accounting reader; malformed values raise `ValueError`."""

from __future__ import annotations

import re

from mysched.core.model import Placement


_MEM = re.compile(r"^(\d+)\s*([kmgtp]?)(b|w)?$", re.I)


def parse_mem(text: str) -> int:
    """TORQUE sizes (``2000mb``, ``4gb``, ``512kb``, ``100``) -> bytes."""
    m = _MEM.match(text.strip())
    if not m:
        raise ValueError(f"bad size {text!r}")
    mult = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40, "p": 1 << 50}[m.group(2).lower()]
    word = 8 if (m.group(3) or "").lower() == "w" else 1
    return int(m.group(1)) * mult * word


def parse_nodes(text: str) -> int:
    """Cores requested by a nodes spec: ``2:ppn=4`` -> 8, ``node03:ppn=2`` -> 2, ``1`` -> 1,
    ``a:ppn=2+b:ppn=2`` -> 4; ``1pn=4`` (a typo seen in real logs for ``1:ppn=4``) -> 4."""
    total = 0
    for part in text.split("+"):
        part = part.strip()
        typo = re.match(r"^(\d+)pn=(\d+)$", part)
        if typo:
            total += int(typo.group(1)) * int(typo.group(2))
            continue
        fields = part.split(":")
        if not fields[0]:
            raise ValueError(f"bad nodes spec {text!r}")
        count = int(fields[0]) if fields[0].isdigit() else 1
        ppn = 1
        for f in fields[1:]:
            if f.startswith("ppn="):
                if not f[4:].isdigit():
                    raise ValueError(f"bad nodes spec {text!r}")
                ppn = int(f[4:])
        total += count * ppn
    if total < 1:
        raise ValueError(f"bad nodes spec {text!r}")
    return total


def parse_exec_host(text: str) -> Placement:
    """``node03/0-1+node04/2`` -> ``(("node03", 2), ("node04", 1))``."""
    out: dict[str, int] = {}
    for part in text.split("+"):
        part = part.strip()
        if not part:
            continue
        node, _, slots = part.partition("/")
        if not node:
            raise ValueError(f"bad exec_host {text!r}")
        n = 0
        for rng in (slots.split(",") if slots else ["0"]):
            a, _, b = rng.partition("-")
            if not a.isdigit() or (b and not b.isdigit()):
                raise ValueError(f"bad exec_host {text!r}")
            n += int(b) - int(a) + 1 if b else 1
        out[node] = out.get(node, 0) + n
    return tuple(out.items())
