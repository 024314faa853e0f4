"""Choosing a reservation's nodes: the set that has room for a waiting request earliest, by the
requested walltimes of what runs there (for `mysched.core.hold.reservations`).

Several parts (``nodes=1:ppn=2+1:ppn=2:gpu``) get distinct nodes by a matching at the earliest
time one exists: taken part by part, the plain part took the gpu node that freed first, the gpu
part found none, and the job got no reservation while later jobs took its nodes.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from mysched.core.cycle import Cycle
from mysched.core.hold.downtimes import Downtimes
from mysched.core.model.batch import Job
from mysched.core.model.request import NodePart
from mysched.core.place.board import Board
from mysched.core.place.matching import earliest, match_parts


def job_parts(job: Job) -> list[tuple[int, int, str | None, frozenset]]:
    """A job's node parts as (count, ppn, host, properties): one part of its cores for a plain job."""
    req = job.request
    if req is not None and not req.simple:
        return [(p.count, p.ppn, p.host, p.properties) for p in req.parts]
    return [(1, job.cores, None, frozenset())]


class Pick(NamedTuple):
    """A reservation's nodes, and when they have room for it."""

    start: float
    nodes: list[str]


class Picker:
    """Node choice for reservations, on one plan's nodes and downtimes."""

    def __init__(self, cy: Cycle, board: Board, dt: Downtimes) -> None:
        self.cy = cy
        self.board = board
        self.dt = dt

    def room_at(self, name: str, cores: int, ends: dict[str, list[tuple[float, int]]],
                 wall: float | None) -> float:
        """The earliest time node `name` has `cores` free for a job of walltime `wall` (inf:
        never, by what is known), past any scheduled downtime the job would run into."""
        ld = self.board.usages[name]
        if name in self.dt.closed:  # closed for a downtime now: as if open, then past the window
            ld.usable = True
            try:
                t = ld.room_at(cores, ends.get(name, ()), self.cy.now)
            finally:
                ld.usable = False
            return self.dt.room(name, t, wall)
        t = ld.room_at(cores, ends.get(name, ()), self.cy.now)
        return self.dt.room(name, t, wall) if self.dt.ahead else t


    def better(self, a: Pick, b: Pick) -> bool:
        """Is reservation `a` (start, nodes) better than `b`: it starts the job earlier, or as
        early and holds fewer cores free now (EASY: those left out take backfill of any length)?
        Even a second counts: jobs of one size often end within seconds, and the set that frees
        a second later may leave all the cores free now to long backfill jobs."""
        if a.start != b.start:
            return a.start < b.start
        loads = self.board.usages
        return sum(loads[n].free for n in a.nodes) < sum(loads[n].free for n in b.nodes)

    def pick(self, parts: list[tuple[int, int, str | None, frozenset]], names: list[str],
              ends: dict[str, list[tuple[float, int]]], procs: int = 0,
              wall: float | None = None) -> Pick | None:
        """The nodes that serve every part (and `procs` cores anywhere) earliest for a job of
        walltime `wall`, and when (the latest of them)."""
        by_name = self.cy.index.by_name
        chosen: list[str] = []
        start = self.cy.now
        if len(parts) > 1:
            got = self._pick_matched(parts, names, ends, wall)
            if got is None:
                return None
            start, chosen = max(start, got.start), got.nodes
            parts = []
        for count, ppn, host, props in parts:
            if host is not None:
                cand = [(self.room_at(host, ppn, ends, wall), host)] if host in names and host not in chosen else []
            else:
                cand = sorted((self.room_at(n, ppn, ends, wall), n) for n in names
                              if n not in chosen and (not props or props <= by_name[n].node.properties))
            if len(cand) < count:
                return None
            for t, n in cand[:count]:
                chosen.append(n)
                start = max(start, t)
        if procs:
            got = self._pick_procs_clear(procs, [n for n in names if n not in chosen], ends, wall)
            if got is None:
                return None
            start = max(start, got.start)
            chosen += got.nodes
        return Pick(start, chosen)

    def _pick_procs_clear(self, procs: int, names: list[str], ends: dict[str, list[tuple[float, int]]],
                          wall: float | None) -> Pick | None:
        """`_pick_procs` on nodes where the job, started when the cores are free, runs into no
        scheduled downtime. When the earliest pick would, the earliest time is searched at
        which nodes clear of every window for the job's walltime give the cores -- past a
        window, as a node request's reservation moves past it (`room_at`): leaving such nodes
        out altogether found no room on a farm under one window, and the job had none."""
        got = self._pick_procs(procs, [n for n in names if n not in self.dt.closed], ends)
        if not self.cy.index.downtimes or (got is not None and all(self.dt.room(n, got.start, wall) <= got.start
                                                                    for n in got.nodes)):
            return got
        by_name, usages, now = self.cy.index.by_name, self.board.usages, self.cy.now
        mine = [n for n in names if by_name[n].usable and by_name[n].node.slots > 0]
        times = sorted({now, *(e for n in mine for e, _ in ends.get(n, ()) if now < e < math.inf),
                        *(w.end for n in mine for w in self.cy.index.downtimes.get(n, ()) if w.end > now)})
        for t in times:
            free: dict[str, int] = {}
            for n in mine:
                if self.dt.room(n, t, wall) != t:
                    continue  # a window in force at t, or one it would run into
                ld = usages[n]
                was, ld.usable = ld.usable, True  # closed for a window now: open again at t
                try:
                    f = ld.free if t == now else ld.free_after(sum(c for e, c in ends.get(n, ()) if e <= t))
                finally:
                    ld.usable = was
                if f > 0:
                    free[n] = f
            if sum(free.values()) >= procs:
                left, out = procs, []
                for n, f in sorted(free.items(), key=lambda kv: (usages[kv[0]].free, -kv[1])):
                    if left > 0:
                        out.append(n)
                        left -= f
                return Pick(t, out)
        return None

    def _pick_procs(self, procs: int, names: list[str], ends: dict[str, list[tuple[float, int]]]
                    ) -> Pick | None:
        """The earliest time `procs` cores are free over `names`, and the nodes that give them."""
        free: dict[str, int] = {}
        ended: dict[str, int] = {}
        events: list[tuple[float, int, str]] = []
        have = 0
        loads = self.board.usages
        for n in names:
            ld = loads[n]
            if not ld.usable or ld.slots <= 0:
                continue
            free[n], ended[n] = ld.free, 0
            have += ld.free
            events.extend((end, c, n) for end, c in ends.get(n, ()) if math.isfinite(end))
        t = self.cy.now
        if have < procs:
            events.sort()
            t = math.inf
            for end, c, n in events:
                if end > t:
                    break
                # all that ends at t: the nodes left over are backfill room
                ended[n] += c
                now_free = max(free[n], loads[n].free_after(ended[n]))
                have += now_free - free[n]
                free[n] = now_free
                if have >= procs:
                    t = end
            if have < procs:
                return None
        # Nodes busy now first: the cores free now that the reservation leaves out are EASY's
        # "extra" nodes, where any job may backfill (however long it runs) without delaying it.
        left, out = procs, []
        for n, f in sorted(free.items(), key=lambda kv: (loads[kv[0]].free, -kv[1])):
            if f > 0 and left > 0:
                out.append(n)
                left -= f
        return Pick(t, out)

    def _pick_matched(self, parts: list[tuple[int, int, str | None, frozenset]], names: list[str],
                      ends: dict[str, list[tuple[float, int]]], wall: float | None
                      ) -> Pick | None:
        """Distinct nodes for all `parts` at the earliest time a matching of them exists (the
        nodes in the parts' order), or None."""
        by_name = self.cy.index.by_name
        lists = []
        for count, ppn, host, props in parts:
            if host is not None:
                cand = [(self.room_at(host, ppn, ends, wall), host)] if host in names else []
            else:
                cand = sorted((self.room_at(n, ppn, ends, wall), n) for n in names
                              if not props or props <= by_name[n].node.properties)
            if len(cand) < count:
                return None
            lists.append(cand)
        want = [NodePart(count, 1) for count, *_ in parts]
        big = {n: 1 for c in lists for _, n in c}

        def match(t: float) -> list[str] | None:
            return match_parts(want, [[n for tn, n in c if tn <= t] for c in lists], big)

        got = earliest(sorted({t for c in lists for t, _ in c}), match)
        return Pick(*got) if got is not None else None
