"""Scheduled downtimes in a plan: nodes within a window take nothing, nodes with one ahead
take only jobs that end before it begins (the windows themselves: `mysched.core.model.windows`)."""

from __future__ import annotations

import math
from typing import Iterable

from mysched.core.cycle import Cycle
from mysched.core.model.batch import Job
from mysched.core.model.plan import DowntimeAt
from mysched.core.model.windows import Downtime, clear_start, current, when
from mysched.core.place.board import Board


class Downtimes:
    """The windows in force or ahead for one plan, node by node."""

    def __init__(self, cy: Cycle, board: Board) -> None:
        """Nodes within a window take nothing this cycle (dropped from the rankings, as
        overloaded nodes are); nodes with one ahead take only jobs that end before it."""
        self.cy = cy
        self.board = board
        now = cy.now
        self.closed: dict[str, Downtime] = {}
        """Nodes within a window now."""
        self.ahead: dict[str, Downtime] = {}
        """Nodes with a window ahead."""
        self.windows: dict[str, DowntimeAt] = {}
        """Node -> its window in force or next (`Plan.downtimes`)."""
        for name, windows in cy.index.downtimes.items():
            w = current(windows, now)
            if w is None:
                continue
            cy.wake(w.end)  # the node reopens (or its next window comes into force)
            self.windows[name] = DowntimeAt(w.begin, w.end, w.name, w.start)
            if w.begin > now:
                self.ahead[name] = w
                continue
            self.closed[name] = w
            board.close(name)

    def shuts(self, name: str, walltime: float | None) -> bool:
        """Would a job of `walltime` started now on node `name` run into a window (or is the
        node within one)?"""
        w = self.ahead.get(name)
        if w is None:
            return name in self.closed
        return walltime is None or self.cy.now + walltime > w.begin

    def closed_with_room(self, job: Job, vo: str, cores: int) -> set[str]:
        """The nodes `job` may use that are within a window now with `cores` free."""
        if not self.closed:
            return set()
        keys = set(self.cy.keys_of(job.queue, vo, job.group))
        by_name, usages = self.cy.index.by_name, self.board.usages
        return {n for n in self.closed if by_name[n].key in keys and usages[n].free >= cores}

    def room(self, name: str, t: float, walltime: float | None) -> float:
        """When a job of `walltime` could start on node `name` that has room at `t`."""
        windows = self.cy.index.downtimes.get(name)
        return clear_start(windows, t, walltime) if windows and math.isfinite(t) else t

    def detail(self, job: Job, names: Iterable[str]) -> str:
        """The windows that kept `job` off nodes `names`, for its wait's detail."""
        seen = {}
        for n in names:
            w = self.closed.get(n) or self.ahead.get(n)
            if w is not None:
                seen.setdefault(w.name, w)
        wall = "no walltime" if job.walltime is None else f"walltime {job.walltime / 3600:.1f} h"
        return "downtime " + ", ".join(when(w) for w in seen.values()) + f"; the job asks for {wall}"
