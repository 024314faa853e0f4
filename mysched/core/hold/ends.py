"""When the cores of each node free, by the requested walltimes of what runs there: what
reservations, the multi-core partition and guarantee pools all reckon with."""

from __future__ import annotations

import math

from mysched.core.model.batch import Job, Snapshot


class Ends:
    """Per node, (requested end, cores) of the jobs running there and of those this plan
    started (as far as it was told of them), soonest first. Built on first use."""

    def __init__(self, snap: Snapshot, now: float) -> None:
        self.snap = snap
        self.now = now
        self._ends: dict[str, list[tuple[float, int]]] | None = None
        self._started: list[tuple[str, float, int]] = []

    def add(self, job: Job, placement: tuple[tuple[str, int], ...]) -> None:
        """A job this plan starts: its cores free at now + its requested walltime."""
        end = self.now + job.walltime if job.walltime is not None else math.inf
        self._started.extend((name, end, c) for name, c in placement)

    def by_node(self) -> dict[str, list[tuple[float, int]]]:
        if self._ends is None:
            ends: dict[str, list[tuple[float, int]]] = {}
            now = self.now
            for j in self.snap.jobs:
                if not j.state.holds_slots or not j.placement:
                    continue
                end = (j.start_time + j.walltime) if j.start_time is not None and j.walltime is not None else math.inf
                end = max(end, now)  # overran its walltime: it may end any moment
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
