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

import time
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Iterable



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
