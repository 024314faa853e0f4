"""External load feedback, pure: readings of load sources become throttles on VOs, groups
and queues, and node load reports become nodes to skip.

A rule's level moves with its source's value: "open" at or below `low`, "closed" at or
above `high`, "scaled" in between (max_running and max_cores times (high - value) / (high - low);
max_running from the farm's slots where neither is set). With
`hysteresis` h a closed rule opens again only below high - h, and an open one scales only
above low + h, so a value hovering at a threshold does not flap. The previous levels come
in and the new ones go out: the function holds no state, the daemon (or the simulator)
carries it from cycle to cycle.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

from mysched.core.settings import Config, LoadRule, LoadSource, NodeLoadLimits
from mysched.core.model.batch import Node


@dataclass(frozen=True)
class Reading:
    """The latest good value of a source, when it was taken, and the last error if any."""

    source: str
    value: float | None = None
    at: float | None = None
    error: str = ""

    def state(self, src: LoadSource, now: float) -> str:
        """"ok", or "stale" (no value, or older than the source's max_age)."""
        if self.value is None or self.at is None or now - self.at > src.max_age:
            return "stale"
        return "ok"


@dataclass(frozen=True)
class Throttle:
    """What one rule allows this cycle."""

    rule: str
    source: str
    level: str
    """open, scaled, closed; "stale" when a stale source with on_stale = stop closes it"""
    factor: float
    """1 open, 0 closed: the fraction of max_running and of max_cores left"""
    value: float | None
    low: float
    high: float
    vos: frozenset[str]
    groups: frozenset[str]
    queues: frozenset[str]

    def applies(self, queue: str, vo: str, group: str) -> bool:
        return vo in self.vos or group in self.groups or queue in self.queues

    def cap(self, configured: int | None, farm_slots: int) -> int:
        """The limit this throttle leaves of `configured` max_running or max_cores (the farm's
        slots when nothing is configured)."""
        base = configured if configured is not None else farm_slots
        return int(math.floor(base * self.factor + 1e-9))

    def detail(self) -> str:
        v = "no value" if self.value is None else f"{self.value:g}"
        if self.level == "stale":
            return f"load source {self.source} is stale (on_stale = stop): rule {self.rule} starts nothing new"
        if self.level == "closed":
            return f"load source {self.source} = {v}, at or above high {self.high:g} (rule {self.rule})"
        return (f"load source {self.source} = {v}, between low {self.low:g} and high {self.high:g}: "
                f"max_running and max_cores scaled to {self.factor:.0%} (rule {self.rule})")


def _level(rule: LoadRule, v: float, previous: str | None) -> str:
    h = rule.hysteresis
    if previous == "closed" and v > rule.high - h:
        return "closed"
    if previous in ("open", None) and v < rule.low + h and v < rule.high:
        return "open"
    if v >= rule.high:
        return "closed"
    if v <= rule.low:
        return "open"
    return "scaled"


def throttles(config: Config, readings: Mapping[str, Reading], now: float,
              previous: Mapping[str, str] | None = None) -> tuple[Throttle, ...]:
    """Every rule's throttle this cycle (open ones included, so status can show them)."""
    prev = previous or {}
    out = []
    for rule in config.load_rules:
        src = config.load_sources[rule.source]
        r = readings.get(rule.source) or Reading(rule.source)
        if r.state(src, now) == "stale":
            level = "stale" if src.on_stale == "stop" else "open"
            value = r.value
        else:
            value = float(r.value)  # type: ignore[arg-type]
            level = _level(rule, value, prev.get(rule.name))
        if level == "scaled":
            span = rule.high - rule.low
            factor = min(1.0, max(0.0, (rule.high - value) / span)) if span > 0 else 0.0  # type: ignore[operator]
        else:
            factor = 1.0 if level == "open" else 0.0
        out.append(Throttle(rule.name, rule.source, level, factor, value, rule.low, rule.high, rule.vos,
                            rule.groups, rule.queues))
    return tuple(out)


def levels(ts: tuple[Throttle, ...]) -> dict[str, str]:
    """The levels to pass as `previous` next cycle (a stale rule remembers nothing)."""
    return {t.rule: t.level for t in ts if t.level != "stale"}


def overloaded(node: Node, limits: NodeLoadLimits) -> str | None:
    """Why a node must get no new job by its pbs_mom's load report, or None."""
    if limits.max_load_per_core is not None and node.load is not None and node.slots > 0:
        per_core = node.load / node.slots
        if per_core > limits.max_load_per_core:
            return f"load {node.load:g} on {node.slots} cores ({per_core:.2f} per core > {limits.max_load_per_core:g})"
    if limits.min_free_mem is not None and node.avail_mem is not None and node.avail_mem < limits.min_free_mem:
        return f"free memory {node.avail_mem / 2**30:.1f} GiB < {limits.min_free_mem / 2**30:.1f} GiB"
    return None
