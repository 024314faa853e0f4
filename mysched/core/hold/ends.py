"""When the cores of each node free, by the requested walltimes of what runs there (or, for a
job without one, its run-time estimate: `mysched.core.rules.runtimes`): what reservations, the
multi-core partition and guarantee pools all reckon with."""

from __future__ import annotations

import math

from mysched.core.model.batch import Job, Snapshot
from mysched.core.rules.runtimes import RunTimes


class Ends:
    """Per node, (requested end, cores) of the jobs running there and of those this plan
    started (as far as it was told of them), soonest first. Built on first use."""

    def __init__(self, snap: Snapshot, now: float, runs: RunTimes | None = None) -> None:
        self.snap = snap
        self.now = now
        self.runs = runs or RunTimes()
        self._ends: dict[str, list[tuple[float, int]]] | None = None
        self._started: list[tuple[str, float, int]] = []

    def add(self, job: Job, placement: tuple[tuple[str, int], ...]) -> None:
        """A job this plan starts: its cores free at now + its requested walltime (or estimate)."""
        length = self.runs.length(job)
        end = self.now + length if length is not None else math.inf
        self._started.extend((name, end, c) for name, c in placement)

    def by_node(self) -> dict[str, list[tuple[float, int]]]:
        if self._ends is None:
            ends: dict[str, list[tuple[float, int]]] = {}
            now, end_of = self.now, self.runs.end
            for j in self.snap.jobs:
                if not j.state.holds_slots or not j.placement:
                    continue
                end = max(end_of(j, now), now)  # overran its walltime: it may end any moment
                for name, cores in j.placement:
                    ends.setdefault(name, []).append((end, cores))
            self._ends = ends
            for lst in ends.values():
                lst.sort()
        if self._started:
            touched = set()
            for name, end, cores in self._started:
                self._ends.setdefault(name, []).append((end, cores))
                touched.add(name)
            self._started = []
            for name in touched:
                self._ends[name].sort()
        return self._ends
