"""A VO's standing in one plan: share, guarantee, decayed usage and priority, worked out
on first use, and the per-VO table a `Plan` reports."""

from __future__ import annotations

from typing import NamedTuple

from mysched.core.settings import Config
from mysched.core.model.plan import VOStatus
from mysched.core.share.usage import Usage


class VOFact(NamedTuple):
    share: float
    guarantee: int
    usage: float
    usage_fraction: float
    base: float
    """``eps + u_hist``: the priority's denominator without the running slots."""
    priority: float
    """At the start of the cycle."""


class VOFacts(dict):
    """A VO's share, guarantee and priority, worked out the first time the plan needs them
    (a cycle that starts jobs of two VOs out of twenty looks at two).

    Holds no reference to the index: a `Plan` keeps this until its `vos` is read, and must
    not keep the whole tally alive with it."""

    def __init__(self, config: Config, total_slots: int, fixed: dict[str, tuple[float, int]], usage: Usage,
                 eps: float, running: dict[str, int]) -> None:
        super().__init__()
        self.config = config
        self.total_slots = total_slots
        self.fixed = fixed
        self.usage = usage.vo
        self.total = usage.total
        self.eps = eps
        self.running = running

    def __missing__(self, vo: str) -> VOFact:
        ts = self.total_slots
        got = self.fixed.get(vo)
        if got is None:  # share and guarantee depend on the configuration and farm size only
            v = self.config.vo(vo)
            got = self.fixed[vo] = (v.share_fraction(ts), v.guarantee(ts))
        share, guarantee = got
        u = self.usage.get(vo, 0.0)
        uf = u / self.total if self.total > 0 else 0.0
        base = self.eps + uf
        f = self[vo] = VOFact(share, guarantee, u, uf, base,
                               share / (base + (self.running.get(vo, 0) / ts if ts else 0.0)))
        return f


class VOTable:
    """Makes `Plan.vos` when it is first read (the simulator seldom reads it)."""

    __slots__ = ("names", "facts", "jobs", "queued", "started")

    def __init__(self, names: set[str], facts: VOFacts, jobs: dict[str, int], queued: dict[str, int],
                 started: dict[str, int]) -> None:
        self.names, self.facts, self.jobs, self.queued, self.started = names, facts, jobs, queued, started

    def __call__(self) -> dict[str, VOStatus]:
        out = {}
        running = self.facts.running
        for name in sorted(self.names):
            f = self.facts[name]
            out[name] = VOStatus(name, f.share, f.guarantee, running.get(name, 0), self.jobs.get(name, 0),
                                 self.queued.get(name, 0), f.usage, f.usage_fraction, f.priority,
                                 self.started.get(name, 0))
        return out
