"""A dynamic multi-core partition: drain nodes while multi-core jobs wait (NIKHEF's
TORQUE/MAUI practice, HTCondor's condor_defrag).

Pilots that all request the queue's maximum walltime gain nothing from backfill: a
reservation computed from requested walltimes lies days ahead. So while jobs of at least
`drain.min_cores` cores wait for room, nodes are drained: a draining node takes no job
smaller than that, so it empties as its jobs end -- except one that ends, by its requested
walltime, before the jobs already there are expected to (EASY backfill inside the drain, so
draining nodes do not sit idle). Those jobs are expected to run as long again as they have
run -- twice that on a node draining for at most half its cores (HORIZON_SPAN) -- at most to
their requested walltime (`drain.backfill = "expected"`, the default): taken to run to their
request, pilots asking the queue's maximum let backfill refill a draining node for days while
multi-core jobs starve.

How much drains follows the demand unless a site bounds it (`drain.rate`, `drain.max_draining`):
a multi-core job that the fair-share order put ahead of a single-core job started in the same
cycle was passed over only for want of a whole node, so it gets room in the partition -- RACE
times its cores, at least a node, since which node empties first is not known and the first
with room serves it;
one ranked behind every start waits as single-core jobs of its priority do, and drains
nothing. The whole partition, nodes running multi-core jobs included, stays within half the
nodes; each drain is drawn for one job's cores and keeps just those from smaller jobs, also on
a node with room for several such jobs: its first cores free soon, its last only when the
longest of its jobs ends, so the partition takes the first cores of several nodes rather than
all of one. With the bounds set, at most `drain.rate` nodes start draining per hour and at
most `drain.max_draining` are in the partition, up to that many even for one waiting job;
nodes running multi-core jobs count among them.
The nodes chosen are first those of a type closed to other VOs or groups (what such a node holds
back no other job could have used), then those that waste least: fewest busy cores times the
time each job is expected to run on, then fewest busy cores. A job is expected to run as long
again as it has run, but not past its requested walltime: batch job lifetimes are heavy-tailed,
so one that has run long will likely run long yet (Downey, 1997), and pilots all request the
queue's maximum, so the requested time alone would pick the nodes whose jobs have run longest
-- the slowest to drain. A node drained far enough for a waiting multi-core job is kept for
such jobs `drain.keep` seconds; it leaves the partition when the keep runs out with no
multi-core job started there (a node running multi-core jobs stays: when they end it is free
for the next), or at once when no multi-core job waits any more.

The drain state is carried from plan to plan (`Plan.drains` in, the next plan's `drains`
argument), as reservations are; the planner holds no state of its own.

Measured alternatives: docs/design/drain.md.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from mysched.core.model.reasons import Reason
from mysched.core.cycle import Cycle
from mysched.core.hold.downtimes import Downtimes
from mysched.core.hold.ends import Ends
from mysched.core.hold.reservations import Reservations
from mysched.core.model.batch import Job
from mysched.core.model.plan import Start, Wait
from mysched.core.place.board import Board
from mysched.core.settings import DrainConfig

HOUR = 3600.0
RACE = 4
"""Room drawn into the partition per multi-core job overtaken, in multiples of its cores (at
least one node): which node empties first is not known, so several race. Counted in cores,
not nodes, so that a 32-core node, room for four 8-core jobs, races for four jobs as four
8-core nodes do (docs/design/drain.md)."""
HORIZON_SPAN = 2.0
"""On a node that drains for at most half its cores, the backfill horizon takes each of its jobs
to run on this many times as long as it has run (at most to its walltime): by then a job has
ended with probability 2/3 where P(run > t | run > age) = age / t (Harchol-Balter and Downey,
1997), against 1/2 at "as long again". Such a horizon is the time the first few of many jobs
end, which no single long job decides, so backfill up to it seldom delays the room; on a node
that drains for more, the horizon rests on its longest jobs, and a later one let backfill hold
the room back (docs/design/drain.md)."""
ROOM_REASONS = frozenset({Reason.NO_FREE_SLOT, Reason.RESERVED, Reason.DRAINING, Reason.PACKING, Reason.NODE_LOAD, Reason.DOWNTIME})
"""Waits that room on a node would end (not limits, holds or throttles)."""


def partition_on(drain: DrainConfig, policy: str) -> bool:
    """Does the policy run a multi-core partition under these settings? Explicit settings drain
    for every policy but fifo, as they always have; the partition that follows the demand is
    mysched's own (easy and least-loaded stay textbook baselines)."""
    return drain.on and (policy == "mysched" if drain.auto else policy != "fifo")


def partition_cap(max_draining: int | None, nodes: int) -> int:
    """The most nodes the partition holds at once, those running multi-core jobs included:
    `drain.max_draining`, else half the farm's `nodes` (at least one) -- single-core work keeps
    the other half whatever waits."""
    return max_draining if max_draining is not None else max(1, nodes // 2)


class Drain(NamedTuple):
    node: str
    since: float
    """When the node began draining."""
    ready: float | None = None
    """Since when it has room for a waiting multi-core job (its keep counts from here);
    None while it has none (draining, or running multi-core jobs)."""
    want: int = 0
    """The cores it drains for: those of the job it was drawn for (0: the smallest waiting
    multi-core job's). Smaller jobs may use only what is free beyond them."""


class Drains:
    """One plan's multi-core partition: the nodes draining, and the drains it hands on."""

    def __init__(self, cy: Cycle, board: Board, ends: Ends, resv: Reservations, dt: Downtimes,
                 previous: dict[str, Drain] | None) -> None:
        self.cy = cy
        self.board = board
        self.ends = ends
        self.resv = resv
        self.dt = dt
        d = cy.cfg.drain
        self.on = partition_on(d, cy.policy)
        self.mc_min = d.min_cores
        self.auto = self.on and d.auto
        self.draining: dict[str, Drain] = {}
        self.wants: dict[str, int] = {}
        """Per draining node, the cores of the multi-core job it drains for this plan: the free
        cores it keeps from smaller jobs."""
        self.made: dict[str, Drain] = {}
        """The partition after this plan (`Plan.drains`)."""
        self.mc_waiting: list[tuple[Job, str]] = []
        self._drain_prev = previous or {}
        self._horizons: dict[str, float] | None = None
        self._expect: list[tuple[tuple[tuple[str, int], ...], float, float, int]] | None = None

    def serves(self, job: Job) -> bool:
        """Is the job the partition's to serve (so no reservation of requested walltimes
        holds nodes for it as well)? A job of one node and at least `drain.min_cores` cores,
        when the partition follows the demand: reservations from walltimes that every pilot
        sets to the queue's maximum lie days ahead, and held nodes beside draining ones
        wasted both. Measured: docs/design/drain.md."""
        return self.auto and job.cores >= self.mc_min and (job.request is None or job.request.simple)

    def as_planned(self, draining: frozenset[str], horizons: dict[str, float],
                   wants: dict[str, int]) -> None:
        """The partition a plan began with, its backfill horizons and the cores each node held
        back (`Plan.draining_now`, `Plan.drain_horizons`, `Plan.drain_wants`), to ask after the
        fact what the drains refused."""
        self.draining = {n: Drain(n, self.cy.now) for n in draining}
        for n in draining:
            self.wants[n] = wants.get(n, self.board.usages.peek(n).cap)  # not said: the whole node
        self._horizons = dict(horizons)

    def restore(self, eligible: list[tuple[Job, str]]) -> None:
        """Keep the last plan's drains while multi-core jobs wait (all go when none does)."""
        if not self.on:
            return
        self.mc_waiting = [(j, vo) for j, vo in eligible if j.cores >= self.mc_min]
        if not self.mc_waiting:
            return
        keep = self.cy.cfg.drain.keep
        by_name = self.cy.index.by_name
        for name, d in self._drain_prev.items():
            e = by_name.get(name)
            if e is None or not e.usable:
                continue  # gone, down or offline
            if d.ready is not None and self.cy.now >= d.ready + keep:
                continue  # kept long enough without a multi-core job
            self.draining[name] = d
        self._set_wants()
        self.horizons()  # before any placement: every job of this plan sees the same

    def _set_wants(self) -> None:
        """The cores each draining node holds back: what it was drawn for, but no more than
        the widest waiting multi-core job it could take (that job started or left, the node
        serves the next ones)."""
        waiting = self.mc_waiting
        least = min((j.cores for j, _ in waiting), default=self.mc_min)
        widest = max((j.cores for j, _ in waiting), default=self.mc_min)
        usages = self.board.usages
        for name, d in self.draining.items():
            cap = usages.peek(name).cap
            fit = max((j.cores for j, _ in waiting if j.cores <= cap), default=least) if widest > cap else widest
            self.wants[name] = max(least, min(d.want or least, fit))

    def blocks(self, job: Job, name: str) -> bool:
        """Does a draining node refuse this job? It takes jobs of the cores it drains for or
        more, a smaller job that leaves free the cores it holds for them, and one that ends -- by
        its requested walltime or estimate (`mysched.core.rules.runtimes`) -- before the node is
        expected to have them (`horizons`): such a job delays the drain by nothing (EASY
        backfill inside the drain). A node with room for a waiting multi-core job already, or
        running a job without a walltime or estimate, takes no smaller job into those cores."""
        if name not in self.draining:
            return False
        want = self.wants[name]
        if job.cores >= want or self.board.usages[name].free - job.cores >= want:
            return False
        length = self.cy.runs.length(job)
        if length is None:
            return True
        horizon = self.horizons().get(name, self.cy.now)
        return self.cy.now + length > horizon

    def horizons(self) -> dict[str, float]:
        """Per draining node, when enough of its current jobs are expected to end
        (`drain.backfill = "expected"`, the default: as long again as each has run, or
        HORIZON_SPAN times that where it drains for at most half its cores) or end by their
        requested walltimes ("requested") to free the cores it drains for; now for a node that
        has them. Worked out once per plan, before any backfill there (a backfilled job ends
        before it anyway)."""
        h = self._horizons
        if h is None:
            h = self._horizons = {}
            usages = self.board.usages
            ends = (self._expected_ends({n for n in self.draining if 2 * self.wants[n] <= usages.peek(n).cap})
                    if self.cy.cfg.drain.backfill == "expected" else self.ends.by_node())
            for name in self.draining:
                got = self.board.usages[name].room_at(self.wants[name], sorted(ends.get(name, ())), self.cy.now)
                h[name] = got if math.isfinite(got) else self.cy.now
        return h

    def update(self, waits: dict[str, Wait], starts: list[Start]) -> None:
        """After the cycle's starts: drop served nodes, mark ready ones, start new drains."""
        if not self.on:
            return
        out = self.made
        waiting = [(j, vo) for j, vo in self.mc_waiting
                   if j.id in waits and waits[j.id].reason in ROOM_REASONS]
        if not waiting:
            return  # nobody needs the partition: every drain ends
        need = min(j.cores for j, _ in waiting)
        keep = self.cy.cfg.drain.keep
        with_room = 0
        for name, d in self.draining.items():
            d = d._replace(want=self.wants[name])
            if self.board.usages[name].free >= d.want:  # room for a waiting multi-core job now
                d = d._replace(ready=d.ready if d.ready is not None else self.cy.now)
                with_room += 1
                self.cy.wake(d.ready + keep)
            else:  # still draining, or running multi-core jobs: it stays in the partition
                d = d._replace(ready=None)
            out[name] = d
        cfg = self.cy.cfg.drain
        # an override left out bounds nothing: at most half the nodes, any number an hour
        most = partition_cap(cfg.max_draining, len(self.cy.index.entries))
        if cfg.auto:
            self._auto_draw(waiting, waits, starts, most, out)
        else:
            recent = sum(1 for d in out.values() if self.cy.now - d.since < HOUR)
            per_hour = math.floor(cfg.rate) - recent if cfg.rate is not None else most
            room = min(most - len(out), per_hour, len(waiting) - with_room)
            if room > 0:
                for name in self._drain_candidates(waiting, need)[:room]:
                    out[name] = Drain(name, self.cy.now, None, need)
        self._promise(waiting, waits, starts)

    def _promise(self, waiting: list[tuple[Job, str]], waits: dict[str, Wait], starts: list[Start]) -> None:
        """Tell each waiting multi-core job when the partition has room for it at the latest:
        the soonest, over the partition's nodes it may use, that enough cores free by the
        requested walltimes of what runs there (pbs_mom ends a job at its walltime; a job
        backfilled onto a draining node ends before those already there). `mysched why`
        shows it; a node running a job without a walltime promises by its run-time estimate
        (`mysched.core.rules.runtimes`, said so), and one of neither promises nothing."""
        out = self.made
        if not out:
            return
        now = self.cy.now
        ends = self.ends.by_node()
        started_on: dict[str, list[tuple[str, int]]] = {}
        for st in starts:
            for name, cores in st.placement:
                if name in out:
                    started_on.setdefault(name, []).append((st.job_id, cores))
        walltime: dict[str, float | None] = {}
        unwalled: set[str] = set()
        if started_on:
            ids = {jid for lst in started_on.values() for jid, _ in lst}
            walltime = {j.id: self.cy.runs.length(j) for j in self.cy.snap.jobs if j.id in ids}
            unwalled = {j.id for j in self.cy.snap.jobs if j.id in ids and j.walltime is None}
        usages = self.board.usages
        by_name = self.cy.index.by_name
        room_at: dict[tuple[str, int], float] = {}
        """(node, cores) -> when that many cores are free there at the latest."""

        def latest(name: str, want: int) -> float:
            got = room_at.get((name, want))
            if got is None:
                mine = list(ends.get(name, ()))
                for jid, cores in started_on.get(name, ()):
                    w = walltime.get(jid)
                    mine.append((now + w if w is not None else math.inf, cores))
                mine.sort()
                ld = usages.peek(name)
                free, got = ld.cap - sum(c for _, c in mine), now
                for end, cores in mine:
                    if free >= want:
                        break
                    free += cores
                    got = end
                if free < want:
                    got = math.inf
                room_at[(name, want)] = got
            return got

        told: dict[tuple, str] = {}
        """The note per kind of job, worked out once (a backlog has thousands of each kind)."""
        guessed: set[str] | None = None
        """Partition nodes running a job without a walltime: their promise is an estimate's."""
        for job, vo in waiting:
            kind = (job.queue, vo, job.group, job.cores)
            note = told.get(kind)
            if note is None:
                keys = set(self.cy.index.rules(job.queue, vo, job.group).keys)
                best = min(((latest(n, job.cores), n) for n in out
                            if n in by_name and by_name[n].key in keys and usages.peek(n).cap >= job.cores),
                           default=None)
                if guessed is None and best is not None:
                    guessed = {n for j in self.cy.snap.jobs if j.walltime is None and j.state.holds_slots
                               for n, _ in j.placement if n in out}
                    guessed |= {n for n, lst in started_on.items() if any(jid in unwalled for jid, _ in lst)}
                note = told[kind] = (
                    f"drain: the partition has room on {best[1]} within {max(0, round(best[0] - now))} s "
                    + ("at the latest (by requested walltimes)" if best[1] not in (guessed or ()) else
                       "by estimate (run times of recent jobs where no walltime was requested)")
                    if best is not None and math.isfinite(best[0]) else
                    "drain: nodes emptying for it (no walltime known of what runs there: no time promised)")
            w = waits.get(job.id)
            if w is None:
                continue
            waits[job.id] = w._replace(detail=f"{w.detail}; {note}" if w.detail else note)

    def _auto_draw(self, waiting: list[tuple[Job, str]], waits: dict[str, Wait], starts: list[Start],
                   most: int, out: dict[str, Drain]) -> None:
        """Start drains when the partition follows the demand: a multi-core job the fair-share
        order put ahead of a single-core job that started this cycle was overtaken only for
        want of room on one node -- each such job gets RACE times its cores of room in the
        partition, at least one node (the first to have it serves it), drawn for its cores. A
        job behind every start waits as the single-core jobs of its priority do, and drains
        nothing. The whole partition, nodes serving multi-core jobs included, stays within half
        the nodes (`most`)."""
        last = max((s.rank for s in starts if s.cores < self.mc_min), default=-1)
        ahead = sorted((waits[j.id].rank, j.cores) for j, _ in waiting if waits[j.id].rank < last)
        if not ahead:
            return
        small = self._shedding(starts, out)
        usages = self.board.usages
        capacity = 0
        for name, d in out.items():
            # room now for as many jobs as fit; a node still emptying races for one job only
            # (it has room for the first long before its smaller jobs have all ended)
            capacity += max(1 if small.get(name) else 0, usages.peek(name).free // d.want)
        per_node = max(1.0, self.cy.index.total_slots / max(1, len(self.cy.index.entries)))
        ranked: dict[int, list[str]] = {}
        for _, want in ahead:
            racers = max(1, math.ceil(RACE * want / per_node - 1e-9))
            if capacity >= racers:  # the partition races for it already
                capacity -= racers
                continue
            racers, capacity = racers - capacity, 0
            for _ in range(racers):
                if len(out) >= most:
                    return
                if want not in ranked:
                    ranked[want] = self._drain_candidates(waiting, want)
                while ranked[want] and ranked[want][0] in out:
                    ranked[want].pop(0)
                if not ranked[want]:
                    break
                name = ranked[want].pop(0)
                out[name] = Drain(name, self.cy.now, None, want)

    def _drain_candidates(self, waiting: list[tuple[Job, str]], want: int) -> list[str]:
        """Nodes the waiting multi-core jobs may use: of a closed type first (`type_closed`),
        then least expected waste first -- the fewest core-seconds of running jobs that must end
        before `want` cores are free there, then the fewest busy cores."""
        keys: set = set()
        for j, vo in waiting:
            keys |= set(self.cy.index.rules(j.queue, vo, j.group).keys)
        runs = self._expected_runs()
        # a node even the shortest waiting job would run into a downtime on drains for nothing
        shortest = min((j.walltime if j.walltime is not None else math.inf for j, _ in waiting), default=math.inf)
        scored = []
        closed = {g: self.board.groups[g].closed for g in keys}
        for e in self.cy.index.entries:
            node, _ntype, key, usable, _counted = e
            name = node.name
            if not usable or key not in keys or name in self.made or node.slots < want:
                continue
            ld = self.board.usages.get(name) or self.board.usages.base.get(name)
            if ld is None or ld.free >= want or self.resv.holding(name) or self.dt.shuts(name, shortest):
                continue  # idle enough already, held by a reservation, or in (or before) a downtime
            free, shed = ld.free, 0.0
            for est, cores in sorted(runs.get(name, ())):
                if free >= want:
                    break
                free += cores
                shed += cores * est
            scored.append((not closed[key], shed, ld.used, name))
        scored.sort()
        return [name for *_, name in scored]

    def _shedding(self, starts: list[Start], out: dict[str, Drain]) -> dict[str, int]:
        """Per partition node, the cores of jobs smaller than those it drains for that run
        there after this cycle's starts (what it still has to shed)."""
        res: dict[str, int] = {}

        def add(placement: tuple[tuple[str, int], ...], job_cores: int) -> None:
            for name, cores in placement:
                d = out.get(name)
                if d is not None and job_cores < d.want:
                    res[name] = res.get(name, 0) + cores
        for placement, _est, _by, job_cores in self._expected():  # what ran before the cycle
            add(placement, job_cores)
        for st in starts:
            add(st.placement, st.cores)
        return res

    def _expected(self) -> list[tuple[tuple[tuple[str, int], ...], float, float, int]]:
        """(placement, seconds it is expected to run on, seconds by which it has likely ended,
        cores) of each job running before this cycle: as long again as it has run, and
        HORIZON_SPAN times that, capped by its requested walltime or its estimate
        (`mysched.core.rules.runtimes`; inf for a job with neither). Worked out once per plan."""
        out = self._expect
        if out is None:
            now, end_of = self.cy.now, self.cy.runs.end
            out = self._expect = []
            for j in self.cy.snap.jobs:
                if not j.state.holds_slots or not j.placement:
                    continue
                start = j.start_time
                age = now - start if start is not None else math.inf
                rest = end_of(j, now) - now
                out.append((j.placement, max(0.0, min(age, rest)), max(0.0, min(HORIZON_SPAN * age, rest)), j.cores))
        return out

    def _expected_runs(self) -> dict[str, list[tuple[float, int]]]:
        """Per node, (seconds expected to run on, cores) of its running jobs (1e9 s for a job
        with no start or walltime known)."""
        runs: dict[str, list[tuple[float, int]]] = {}
        for placement, est, _by, _cores in self._expected():
            est = est if math.isfinite(est) else 1e9
            for name, cores in placement:
                runs.setdefault(name, []).append((est, cores))
        return runs

    def _expected_ends(self, later: set[str]) -> dict[str, list[tuple[float, int]]]:
        """Per node, (likely end, cores) of what runs there (`drain.backfill = "expected"`;
        the horizons are worked out before this cycle starts anything): as long again as each
        job has run, on the nodes of `later` HORIZON_SPAN times that."""
        ends: dict[str, list[tuple[float, int]]] = {}
        now = self.cy.now
        for placement, est, by, _cores in self._expected():
            for name, cores in placement:
                ends.setdefault(name, []).append((now + (by if name in later else est), cores))
        return ends

