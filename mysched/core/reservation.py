"""Reservations and EASY backfill: a multi-core job that does not fit is promised nodes.

The first `scheduler.reservation_depth` waiting jobs (in the cycle's order) that ask for
more than one core and find no node with room get a reservation: the earliest time at which
nodes they may use will have room, worked out from the requested walltimes of the jobs
running there (and of the jobs this cycle starts), and those nodes. Until then, a node so
reserved takes only jobs that will end -- by their requested walltime -- before the
reservation starts (EASY backfill, as MAUI's RESERVATIONDEPTH or Slurm's backfill), so the
reserved job is never pushed back by a later one. A reservation keeps its nodes from cycle
to cycle unless another set would start it earlier.

A single-core job takes the next free slot at its turn anyway: it gets no reservation.
Memory and per-node limits are not part of the estimate (the nodes' cores are).
"""

from __future__ import annotations

import math
from typing import NamedTuple

from mysched.core.model import Job


class Reservation(NamedTuple):
    job_id: str
    start: float
    """When the nodes will have room, by the running jobs' requested walltimes."""
    nodes: tuple[str, ...]


class Reserving:
    """The planner's reservation steps (a mixin of `mysched.core.planner._Planner`)."""

    def _resv_setup(self, previous: dict[str, Reservation] | None) -> None:
        self.resv_depth = self.cfg.reservation_depth if self.policy != "fifo" else 0
        self.resv_nodes: dict[str, tuple[float, str]] = {}
        """node -> (start, job id) of the reservation holding it"""
        self._resv_prev = previous or {}
        self._ends: dict[str, list[tuple[float, int]]] | None = None
        self._started_ends: list[tuple[str, float, int]] = []

    def _fits_before(self, job: Job, held: tuple[float, str]) -> bool:
        """May `job` start now on a node `held` (start, job id)? Its owner may; another job
        only if it ends before the reservation starts."""
        return held[1] == job.id or (job.walltime is not None and self.now + job.walltime <= held[0])

    def _resv_restore(self, eligible: list[tuple[Job, str]]) -> None:
        """The last plan's reservations of jobs still waiting hold their nodes again (before
        any job of this cycle is placed, so none can take them)."""
        if not self._resv_prev or self.resv_depth <= 0:
            return
        waiting = {j.id: (j, vo) for j, vo in eligible}
        for prev in sorted(self._resv_prev.values(), key=lambda r: r.start):
            got = waiting.get(prev.job_id)
            if got is None or self.resv_depth <= 0:
                continue
            job, vo = got
            keys = self._keys_of(job, vo)
            by_name = self.index.by_name
            if not all(n in by_name and by_name[n][2] in keys and n not in self.resv_nodes for n in prev.nodes):
                continue
            req = job.request
            pick = self._pick(self._parts(job), list(prev.nodes), self._node_ends(),
                              (req.procs or 0) if req is not None else 0)
            if pick is not None and math.isfinite(pick[0]):
                self._hold(job.id, max(self.now, pick[0]), pick[1])

    def _resv_check(self) -> None:
        """Drop reservations whose job waits for something capacity will not end (a limit):
        they would keep nodes idle for nothing."""
        for jid in list(self.out.reservations):
            w = self.out.waits.get(jid)
            if w is not None and w.reason not in ("no_free_slot", "reserved", "packing", "node_load"):
                del self.out.reservations[jid]

    def _hold(self, job_id: str, start: float, nodes: list[str]) -> None:
        self.out.reservations[job_id] = Reservation(job_id, start, tuple(nodes))
        for n in nodes:
            self.resv_nodes[n] = (start, job_id)
        self.resv_depth -= 1
        self._wake(start)

    @staticmethod
    def _parts(job: Job) -> list[tuple[int, int, str | None, frozenset]]:
        req = job.request
        if req is not None and not req.simple:
            return [(p.count, p.ppn, p.host, p.properties) for p in req.parts]
        return [(1, job.cores, None, frozenset())]

    def _node_ends(self) -> dict[str, list[tuple[float, int]]]:
        """Per node, (requested end, cores) of what runs there, soonest first (built once)."""
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
        for name, end, cores in self._started_ends:
            self._ends.setdefault(name, []).append((end, cores))
        self._started_ends = []
        for lst in self._ends.values():
            lst.sort()
        return self._ends

    def _room_at(self, name: str, cores: int, ends: dict[str, list[tuple[float, int]]]) -> float:
        """The earliest time node `name` has `cores` free (inf: never, by what is known)."""
        ld = self.loads[name]
        if not ld.usable or ld.cap < cores:
            return math.inf
        free = ld.free
        if free >= cores:
            return self.now
        for end, c in ends.get(name, ()):
            free += c
            if free >= cores:
                return end
        return math.inf

    def _reserve(self, job: Job, vo: str) -> str:
        """Reserve nodes for a job that does not fit now; return what to add to its wait."""
        req = job.request
        procs = req.procs or 0 if req is not None else 0
        have = self.out.reservations.get(job.id)
        if have is not None:  # kept from the last cycle
            return f"; reserved {'+'.join(have.nodes)} in {have.start - self.now:.0f} s"
        ends = self._node_ends()
        keys = self._keys_of(job, vo)
        names = [e[0].name for e in self.index.entries if e[2] in keys and e[0].name not in self.resv_nodes]
        parts = self._parts(job)
        prev = self._resv_prev.get(job.id)
        got = self._pick(parts, names, ends, procs)
        if got is None:
            return ""
        start, nodes = got
        if prev is not None and set(prev.nodes) <= set(names):
            again = self._pick(parts, list(prev.nodes), ends, procs)
            if again is not None and again[0] <= start + 1.0:
                start, nodes = again  # the same nodes, unless another set starts it earlier
        if not math.isfinite(start) or start <= self.now:
            return ""
        self._hold(job.id, start, nodes)
        return f"; reserved {'+'.join(nodes)} in {start - self.now:.0f} s"

    def _keys_of(self, job: Job, vo: str) -> set:
        return set(self.index.rules(job.queue, vo, job.group)[5])

    def _pick(self, parts: list[tuple[int, int, str | None, frozenset]], names: list[str],
              ends: dict[str, list[tuple[float, int]]], procs: int = 0) -> tuple[float, list[str]] | None:
        """The nodes that serve every part (and `procs` cores anywhere) earliest, and when
        (the latest of them)."""
        by_name = self.index.by_name
        chosen: list[str] = []
        start = self.now
        for count, ppn, host, props in parts:
            if host is not None:
                cand = [(self._room_at(host, ppn, ends), host)] if host in names and host not in chosen else []
            else:
                cand = sorted((self._room_at(n, ppn, ends), n) for n in names
                              if n not in chosen and (not props or props <= by_name[n][0].properties))
            if len(cand) < count:
                return None
            for t, n in cand[:count]:
                chosen.append(n)
                start = max(start, t)
        if procs:
            got = self._pick_procs(procs, [n for n in names if n not in chosen], ends)
            if got is None:
                return None
            start = max(start, got[0])
            chosen += got[1]
        return start, chosen

    def _pick_procs(self, procs: int, names: list[str], ends: dict[str, list[tuple[float, int]]]
                    ) -> tuple[float, list[str]] | None:
        """The earliest time `procs` cores are free over `names`, and the nodes that give them."""
        free: dict[str, int] = {}
        events: list[tuple[float, int, str]] = []
        have = 0
        for n in names:
            ld = self.loads[n]
            if not ld.usable or ld.cap <= 0:
                continue
            free[n] = ld.free
            have += ld.free
            events.extend((end, c, n) for end, c in ends.get(n, ()) if math.isfinite(end))
        t = self.now
        if have < procs:
            events.sort()
            for end, c, n in events:
                free[n] += c
                have += c
                if have >= procs:
                    t = end
                    break
            else:
                return None
        left, out = procs, []
        for n, f in sorted(free.items(), key=lambda kv: -kv[1]):
            if f > 0 and left > 0:
                out.append(n)
                left -= f
        return t, out

