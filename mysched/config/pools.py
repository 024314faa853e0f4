"""Validation of package guarantees: `pools`.

    pools = {
      mcore = {
        hosts = ["wn*"];                         # and/or node_types = [...], properties = [...]
        min_mem = "32gb";                        # selection on node facts (also min_slots)
        package = { slots = 8; mem = "16gb"; };
        vos = { atlas = "25%"; };                # also groups = {...}, queues = {...}:
                                                 # "N%" of the pool's packages, or N packages
        loan = { queues = ["all"]; max_walltime = "12:00:00"; restricted = false; };
      };
    };

A host belongs to the first pool, in this order, whose criteria it meets.
"""

from __future__ import annotations

from typing import Any

from mysched.core.settings import Consumer, LoanPolicy, PoolConfig, QueueConfig, VOConfig
from mysched.config.values import kind


def _amount(v: Any) -> tuple[int | None, float | None]:
    """A guarantee: whole packages (an int) or a percentage ("25%")."""
    if isinstance(v, bool):
        raise ValueError(f"expected packages (a number) or a percentage such as \"25%\", got {kind(v)}")
    if isinstance(v, int):
        if v < 0:
            raise ValueError(f"must not be negative, got {v}")
        return v, None
    if isinstance(v, str) and v.strip().endswith("%"):
        try:
            pct = float(v.strip()[:-1])
        except ValueError:
            raise ValueError(f"not a percentage: {v!r}") from None
        if not 0 <= pct <= 100:
            raise ValueError(f"a percentage must be within 0..100, got {v!r}")
        return None, pct
    raise ValueError(f"expected packages (a number) or a percentage such as \"25%\", got {v!r}")


def build_pools(c: Any, top: dict, vos: dict[str, VOConfig], groups: set[str], queues: dict[str, QueueConfig],
                type_names: set[str]) -> tuple[PoolConfig, ...]:
    """The `pools` section; problems go to the checker `c` with their key paths."""
    raw = top.get("pools")
    if raw is None:
        return ()
    if not isinstance(raw, dict):
        c.problem(("pools",), f"expected a group of pools {{ name = {{ ... }}; }}, got {kind(raw)}")
        return ()
    out = []
    for name, praw in raw.items():
        p = ("pools", name)
        g = c.group(praw, p)
        pk = c.group(g.get("package"), p + ("package",))
        slots = c.get(pk, p + ("package",), "slots")
        mem = c.get(pk, p + ("package",), "mem")
        if not slots and not mem:
            c.problem(p + ("package",), "a package needs slots and/or mem (e.g. { slots = 8; mem = \"16gb\"; })")
        node_types = c.get(g, p, "node_types")
        for t in node_types:
            if t not in type_names:
                c.problem(p + ("node_types",), f"unknown node type '{t}'")
        consumers: list[Consumer] = []
        for key, ckind, known in (("vos", "vo", vos), ("groups", "group", groups), ("queues", "queue", queues)):
            dist = g.get(key)
            if dist is None:
                continue
            if not isinstance(dist, dict):
                c.problem(p + (key,), f"expected a group {{ name = \"25%\"; }}, got {kind(dist)}")
                continue
            for cname, v in dist.items():
                try:
                    packages, pct = _amount(v)
                except ValueError as exc:
                    c.problem(p + (key, cname), str(exc))
                    continue
                if known is not None and (known or ckind != "queue") and cname not in known:
                    c.problem(p + (key, cname), f"no such {ckind}: '{cname}' is not declared in the configuration")
                consumers.append(Consumer(ckind, cname, packages, pct))
        if not consumers:
            c.problem(p, "a pool needs consumers: vos, groups or queues with their guarantees")
        pct = sum(x.percent or 0.0 for x in consumers)
        if pct > 100 + 1e-9:
            c.problem(p, f"overcommitted: the consumers are guaranteed {pct:g} % of the pool's packages")
        lg = c.group(g.get("loan"), p + ("loan",))
        lq = c.get(lg, p + ("loan",), "queues")
        if queues:
            for q in lq:
                if q != "all" and q not in queues:
                    c.problem(p + ("loan", "queues"), f"unknown queue '{q}' (not declared under queues)")
        loan = LoanPolicy(frozenset(lq), c.get(lg, p + ("loan",), "max_walltime"),
                          c.get(lg, p + ("loan",), "restricted"))
        out.append(PoolConfig(
            name=name, hosts=c.get(g, p, "hosts"), node_types=node_types,
            properties=c.get(g, p, "properties"), min_mem=c.get(g, p, "min_mem"),
            min_slots=c.get(g, p, "min_slots"), slots=slots, mem=mem,
            consumers=tuple(consumers), loan=loan))
    return tuple(out)
