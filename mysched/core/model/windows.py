"""Scheduled downtimes: maintenance windows declared ahead (a GOCDB downtime, a kernel or
firmware campaign), as MAUI's ``setres`` and Slurm's maintenance reservations give them.

TORQUE cannot preempt, so the only way to have a node empty at a given hour is to start
nothing there that would still run then. A node under a downtime takes, before it, only jobs
that end -- by their requested walltime -- before it starts (a job without a walltime none),
and nothing while it lasts; it reopens by itself when the window ends. Other nodes go on as
usual, so short jobs keep the farm busy up to the last hour instead of the whole farm being
stopped a queue's maximum walltime ahead. A job such windows keep waiting waits with reason
`downtime`; reservations for multi-core jobs are moved past the window they would run into.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Iterable

from mysched.core.model.batch import Job


@dataclass(frozen=True)
class Downtime:
    """One maintenance window of some nodes (all nodes when `hosts` and `node_types` are empty)."""

    name: str
    start: float
    end: float
    hosts: tuple[str, ...] = ()
    """Host name patterns (globs)."""
    node_types: tuple[str, ...] = ()
    margin: float = 0.0
    """Seconds before `start` by which jobs must have ended (pbs_mom kills a job past its
    walltime only at its next poll, and a cycle's starts take a while)."""

    @property
    def begin(self) -> float:
        """From when the window keeps its nodes empty: `start` less the margin."""
        return self.start - self.margin

    def covers(self, name: str, ntype: str | None) -> bool:
        if not (self.hosts or self.node_types):
            return True
        return ntype in self.node_types or any(fnmatchcase(name, p) for p in self.hosts)


def windows_by_node(downtimes: Iterable[Downtime], nodes: Iterable[tuple[str, str | None]]
                    ) -> dict[str, tuple[Downtime, ...]]:
    """Node name -> its windows, soonest first, for the (name, node type) pairs any covers.
    Host names without glob characters are looked up, not matched (a rolling reboot names
    every node in a window of its own)."""
    dts = sorted(downtimes, key=lambda d: (d.begin, d.end, d.name))
    out: dict[str, tuple[Downtime, ...]] = {}
    if not dts:
        return out
    exact: dict[str, list[int]] = {}
    loose: list[int] = []
    for i, d in enumerate(dts):
        if not (d.hosts or d.node_types) or d.node_types or any(_GLOB & set(h) for h in d.hosts):
            loose.append(i)
        else:
            for h in d.hosts:
                exact.setdefault(h, []).append(i)
    for name, ntype in nodes:
        mine = sorted(set(exact.get(name, ())) | {i for i in loose if dts[i].covers(name, ntype)})
        if mine:
            out[name] = tuple(dts[i] for i in mine)
    return out


_GLOB = frozenset("*?[")


def current(windows: tuple[Downtime, ...], now: float) -> Downtime | None:
    """The window in force at `now` (of overlapping ones, the one that ends last), else the
    next one (None: all are over)."""
    on = [w for w in windows if w.begin <= now < w.end]
    if on:
        return max(on, key=lambda w: w.end)
    return next((w for w in windows if w.end > now), None)


def clear_start(windows: tuple[Downtime, ...], t: float, walltime: float | None) -> float:
    """The earliest time from `t` a job of `walltime` (None: unknown, runs on) can start on a
    node with these windows and end before the next one begins."""
    for w in windows:
        if w.end <= t:
            continue
        if walltime is None or t + walltime > w.begin:
            t = w.end
    return t


def utc(t: float) -> str:
    """A time as a window's are written: 'YYYY-MM-DD HH:MM' in UTC."""
    return time.strftime("%Y-%m-%d %H:%M", time.gmtime(t))


def when(w: Downtime) -> str:
    """A window as admins write it: 'NAME (YYYY-MM-DD HH:MM to ... UTC)'."""
    margin = f"; jobs end {w.margin / 60:g} min before" if w.margin else ""
    return f"{w.name} ({utc(w.start)} to {utc(w.end)} UTC{margin})"


class Downtimes:
    """The planner's downtime steps (a mixin of `mysched.core.planner._Planner`)."""

    def _downtime_setup(self) -> None:
        """Nodes within a window take nothing this cycle (dropped from the rankings, as
        overloaded nodes are); nodes with one ahead take only jobs that end before it."""
        now = self.now
        self.dt_closed: dict[str, Downtime] = {}
        self.dt_ahead: dict[str, Downtime] = {}
        for name, windows in self.index.downtimes.items():
            w = current(windows, now)
            if w is None:
                continue
            self._wake(w.end)  # the node reopens (or its next window comes into force)
            self.out.downtimes[name] = (w.begin, w.end, w.name, w.start)
            if w.begin > now:
                self.dt_ahead[name] = w
                continue
            self.dt_closed[name] = w
            self._close_node(name)

    def _downtime_shuts(self, name: str, walltime: float | None) -> bool:
        """Would a job of `walltime` started now on node `name` run into a window (or is the
        node within one)?"""
        w = self.dt_ahead.get(name)
        if w is None:
            return name in self.dt_closed
        return walltime is None or self.now + walltime > w.begin

    def _downtime_closed(self, job: Job, vo: str, cores: int) -> set[str]:
        """The nodes `job` may use that are within a window now with `cores` free."""
        if not self.dt_closed:
            return set()
        keys = set(self.index.rules(job.queue, vo, job.group)[5])
        by_name, loads = self.index.by_name, self.loads
        return {n for n in self.dt_closed if by_name[n][2] in keys and loads[n].free >= cores}

    def _downtime_room(self, name: str, t: float, walltime: float | None) -> float:
        """When a job of `walltime` could start on node `name` that has room at `t`."""
        windows = self.index.downtimes.get(name)
        return clear_start(windows, t, walltime) if windows and math.isfinite(t) else t

    def _downtime_detail(self, job: Job, names: Iterable[str]) -> str:
        """The windows that kept `job` off nodes `names`, for its wait's detail."""
        seen = {}
        for n in names:
            w = self.dt_closed.get(n) or self.dt_ahead.get(n)
            if w is not None:
                seen.setdefault(w.name, w)
        wall = "no walltime" if job.walltime is None else f"walltime {job.walltime / 3600:.1f} h"
        return "downtime " + ", ".join(when(w) for w in seen.values()) + f"; the job asks for {wall}"
