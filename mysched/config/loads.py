"""Validation of external load feedback: `load_sources`, `load_rules` and `node_load`.

    load_sources = {
      se_atlas = { type = "prometheus"; url = "http://127.0.0.1:9090";
                   query = "max(dcache_pool_load{vo=\"atlas\"})"; interval = 60; max_age = 300;
                   on_stale = "ignore"; };
      probe = { type = "file"; path = "/var/lib/site/load.json"; key = "se.atlas"; };
      cmd = { type = "command"; command = ["/usr/local/bin/se-load", "atlas"]; timeout = 5; };
    };
    load_rules = { atlas_se = { source = "se_atlas"; vos = ["atlas"]; low = 0.7; high = 0.9;
                                hysteresis = 0.05; }; };
    node_load = { max_load_per_core = 1.5; min_free_mem = "2gb"; };
"""

from __future__ import annotations

import math
import os
from typing import Any
from urllib.parse import urlparse

from mysched.core.settings import LOAD_KINDS, LoadRule, LoadSource, NodeLoadLimits, QueueConfig, VOConfig
from mysched.config import schema
from mysched.config.values import DAY

_SOURCE_KEYS = list(schema.section(("load_sources", "NAME")).settings)
_NEEDS = {"prometheus": ("url", "query"), "file": ("path",), "command": ("command",)}


def build_loads(c: Any, top: dict[str, Any], vos: dict[str, VOConfig], queues: dict[str, QueueConfig]
                ) -> tuple[dict[str, LoadSource], tuple[LoadRule, ...], NodeLoadLimits]:
    """Check the three sections with the validator `c` (problems are collected there)."""
    sources: dict[str, LoadSource] = {}
    raw = top.get("load_sources")
    raw = c.group(raw, ("load_sources",), {k: None for k in raw} if isinstance(raw, dict) else {})
    for name, r in raw.items():
        p = ("load_sources", name)
        g = c.group(r, p)
        typ = c.get(g, p, "type")
        if typ not in LOAD_KINDS:
            c.problem(p + ("type",), f"must be one of {', '.join(LOAD_KINDS)}" + (f", got '{typ}'" if typ else ""))
            continue
        for key in _NEEDS[typ]:
            if key not in g:
                c.problem(p, f"a {typ} source needs {key}")
        for key in set(_SOURCE_KEYS) - {"type", "interval", "timeout", "max_age", "on_stale"} - set(_NEEDS[typ]):
            if key in g and not (typ == "file" and key == "key"):
                c.problem(p + (key,), f"does not apply to a {typ} source")
        src = LoadSource(
            name=name, kind=typ, url=c.get(g, p, "url"), query=c.get(g, p, "query"),
            path=c.get(g, p, "path"), key=c.get(g, p, "key"),
            command=tuple(c.get(g, p, "command")),
            interval=c.get(g, p, "interval"),
            timeout=c.get(g, p, "timeout"),
            max_age=c.get(g, p, "max_age"),
            on_stale=c.get(g, p, "on_stale"))
        if typ == "prometheus" and src.url:
            try:
                u = urlparse(src.url)
                u.port  # raises on a port out of range or not a number
            except ValueError:  # also a bracketed host left open ('http://[::1')
                u = urlparse("")
            if u.scheme not in ("http", "https") or not u.netloc:
                c.problem(p + ("url",), f"expected the Prometheus server's http(s)://HOST:PORT, got {src.url!r}")
        for key in ("query", "path"):
            if key in g and key in _NEEDS[typ] and not getattr(src, key).strip():
                c.problem(p + (key,), "must not be empty")
        if typ == "command" and "command" in g:
            prog = src.command[0] if src.command else ""
            if not prog.strip():
                c.problem(p + ("command",), "needs the program to run (a list: [\"/path/to/probe\", \"arg\"])")
            elif len(src.command) == 1 and " " in prog.strip() and not os.path.exists(prog):
                c.problem(p + ("command",), f"no program {prog!r}: give the program and its arguments as a list, "
                          f"{list(prog.split())!r} (no shell runs it)")
        for key, value, hi in (("interval", src.interval, DAY), ("timeout", src.timeout, 3600.0),
                               ("max_age", src.max_age, 7 * DAY)):
            if not 0 < value <= hi:
                c.problem(p + (key,), f"must be a positive duration of at most {hi / 3600:g} h")
        if src.timeout > src.interval and "timeout" in g:
            c.problem(p + ("timeout",), "cannot be longer than the source's interval")
        if src.max_age < src.interval:
            c.problem(p + ("max_age",), f"is shorter than the interval ({src.interval:g} s): every value would "
                      "go stale before the next one")
        sources[name] = src

    rules: list[LoadRule] = []
    raw = top.get("load_rules")
    raw = c.group(raw, ("load_rules",), {k: None for k in raw} if isinstance(raw, dict) else {})
    for name, r in raw.items():
        p = ("load_rules", name)
        g = c.group(r, p)
        source = c.get(g, p, "source")
        if source not in sources:
            c.problem(p + ("source",), f"unknown load source '{source}' (declare it under load_sources)"
                      if source else "a rule needs its source")
        rv = c.get(g, p, "vos")
        rq = c.get(g, p, "queues")
        for vn in rv:
            if vn not in vos:
                c.problem(p + ("vos",), f"unknown VO '{vn}' (not declared under vos)")
        for qn in rq:
            if queues and qn not in queues:
                c.problem(p + ("queues",), f"unknown queue '{qn}' (not declared under queues)")
        rule = LoadRule(name, source, frozenset(rv), frozenset(c.get(g, p, "groups")), frozenset(rq),
                        c.get(g, p, "low"), c.get(g, p, "high"),
                        c.get(g, p, "hysteresis"))
        if not (rule.vos or rule.groups or rule.queues):
            c.problem(p, "a rule needs at least one of vos, groups, queues to throttle")
        if "high" not in g:
            c.problem(p, "a rule needs high (the value at which nothing new starts)")
        if rule.low > rule.high:
            c.problem(p + ("low",), f"must not be above high ({rule.high:g})")
        if rule.hysteresis > 0 and rule.hysteresis >= (rule.high - rule.low if rule.high > rule.low else math.inf):
            c.problem(p + ("hysteresis",), "must be smaller than high - low")
        rules.append(rule)

    g = c.group(top.get("node_load"), ("node_load",))
    limits = NodeLoadLimits(c.get(g, ("node_load",), "max_load_per_core"),
                            c.get(g, ("node_load",), "min_free_mem"))
    if limits.max_load_per_core == 0:
        c.problem(("node_load", "max_load_per_core"), "must be positive (0 would skip every busy node)")
    return sources, tuple(rules), limits
