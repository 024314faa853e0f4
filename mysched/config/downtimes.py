"""Validation of scheduled downtimes: `downtimes`.

    downtimes = {
      gocdb_34567 = { start = "2026-12-01T08:00"; end = "2026-12-01T12:00"; };   # every node
      disks = { start = "2026-12-03T09:00Z"; end = "2026-12-03T10:30Z"; hosts = ["wn01*"]; };
    };

Times are ISO 8601 (``YYYY-MM-DDTHH:MM[:SS]``), in UTC unless they carry an offset
(``+01:00``): GOCDB declares downtimes in UTC, and a daemon's local zone may change under it.
Jobs must end `margin` (default 5 minutes) before `start`.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from mysched.core.model.windows import Downtime
from mysched.config.values import kind

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
MARGIN = 300.0
"""Default `margin`: pbs_mom kills a job past its walltime only at its next poll (45 s by
default) and after its kill_delay, and a cycle's starts take seconds."""


def instant(v: Any) -> float:
    """Unix seconds from an ISO 8601 date and time (UTC unless it names an offset)."""
    if not isinstance(v, str):
        raise ValueError(f"expected a date and time such as \"2026-12-01T08:00\" (UTC), got {kind(v)}")
    text = v.strip()
    if _DATE.match(text):  # a date alone: midnight at its start, or the end of that day?
        raise ValueError(f"give a time too, e.g. \"{text}T00:00\" (the day's start) or the next day's T00:00 "
                         f"(its end), got {v!r}")
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        t = dt.datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"expected a date and time such as \"2026-12-01T08:00\" (UTC) or "
                         f"\"2026-12-01T09:00+01:00\", got {v!r}") from None
    if t.tzinfo is None:
        t = t.replace(tzinfo=dt.timezone.utc)
    return t.timestamp()


def build_downtimes(c: Any, top: dict, type_names: set[str]) -> tuple[Downtime, ...]:
    """The `downtimes` section; problems go to the checker `c` with their key paths."""
    raw = top.get("downtimes")
    if raw is None:
        return ()
    if not isinstance(raw, dict):
        c.problem(("downtimes",), f"expected a group of downtimes {{ name = {{ start = ...; end = ...; }}; }}, "
                  f"got {kind(raw)}")
        return ()
    out = []
    for name, draw in raw.items():
        p = ("downtimes", name)
        g = c.group(draw, p)
        if not g and draw is not None and isinstance(draw, dict):
            c.problem(p, "a downtime needs start and end")
            continue
        for key in ("start", "end"):
            if g and key not in g:
                c.problem(p, f"a downtime needs {key} (e.g. {key} = \"2026-12-01T08:00\";)")
        start = c.get(g, p, "start")
        end = c.get(g, p, "end")
        hosts = c.get(g, p, "hosts")
        margin = c.get(g, p, "margin")
        if not 0 <= margin <= 86400:
            c.problem(p + ("margin",), "must be a duration of at most a day")
            margin = MARGIN
        node_types = c.get(g, p, "node_types")
        for t in node_types:
            if t not in type_names:
                c.problem(p + ("node_types",), f"unknown node type '{t}'")
        if start is None or end is None:
            continue
        if end <= start:
            c.problem(p + ("end",), "must be after start")
            continue
        out.append(Downtime(name, start, end, hosts, node_types, margin))
    return tuple(out)
