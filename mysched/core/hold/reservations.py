"""Reservations and EASY backfill: a multi-core job that does not fit is promised nodes.

The first `scheduler.reservation_depth` waiting jobs (in the cycle's order) that ask for
more than one core and find no node with room get a reservation: the earliest time at which
nodes they may use will have room, worked out from the requested walltimes of the jobs
running there (and of the jobs this cycle starts), and those nodes. Until then, a node so
reserved takes only jobs that will end -- by their requested walltime -- before the
reservation starts (EASY backfill, as MAUI's RESERVATIONDEPTH or Slurm's backfill), so the
reserved job is never pushed back by a later one. A reservation of nodes keeps them from
cycle to cycle, even when another set looks a minute earlier by requested walltimes (moving
then measured worse), unless a scheduled downtime comes in its way there. A ``procs`` request
(cores anywhere) is promised a number of cores, as EASY's processors: its nodes are those that
free up rather than those free now, which stay open to backfill of any length (EASY's extra
nodes), and each cycle it moves to the set that starts it earliest and holds the fewest cores
free now.

A single-core job takes the next free slot at its turn anyway: it gets no reservation.
Memory and per-node limits are not part of the estimate (the nodes' cores are).

Under the fair-share order (policy ``mysched``) the depth goes by waiting time, not by the
order: a multi-core job refused in the order takes a reservation only if no older multi-core
job (hot-list jobs count as older) without one may still need it, and after the cycle's starts
the depth left goes to the longest-waiting multi-core jobs that wait for capacity. Given in
the share order, the depth went to the lightest users' wide jobs again and again, and a VO
above its share had its wide jobs wait until nobody else's did. A job holding a reservation
is then tried before the fair-share order -- after the hot list and the VOs below their guarantee -- so it starts
as soon as room opens (requested walltimes are long, jobs end early), not only when its
reservation comes due (EASY tries its head first).

Measured alternatives: docs/design/reservations.md.
"""

from __future__ import annotations

import math
from typing import Callable, NamedTuple

from mysched.core.model.reasons import Reason
from mysched.core.cycle import Cycle
from mysched.core.hold.downtimes import Downtimes
from mysched.core.hold.ends import Ends
from mysched.core.hold.picking import Picker, job_parts
from mysched.core.model.batch import Job
from mysched.core.model.plan import Wait
from mysched.core.place.board import Board
from mysched.core.place.nodeusage import NodeUsage
from mysched.core.rules.walltimes import horizon


_CAPACITY = (Reason.NO_FREE_SLOT, Reason.RESERVED, Reason.PACKING, Reason.NODE_LOAD, Reason.DOWNTIME)
"""Waits that capacity freeing up ends: the ones a reservation serves."""


def wants_reservation(job: Job) -> bool:
    """A job that needs more than the next free slot: several cores, or a whole request
    (nodes, hosts, properties, memory)."""
    return job.cores > 1 or (job.request is not None and not job.request.simple)


def reserved_cores(job: Job, nodes: list[str] | tuple[str, ...]) -> list[int | None]:
    """The cores a reservation of `job` on `nodes` (as `Reserving._pick` orders them: each part's
    nodes, then those for procs) needs on each: a part's ppn. None -- the whole node -- for
    nodes of cores anywhere (procs), a request of nodes alone, and one asking memory, which
    reservations do not count."""
    req = job.request
    if req is None:
        return [job.cores] * len(nodes)
    if req.exclusive or req.mem or req.pmem or req.vmem or req.pvmem:
        return [None] * len(nodes)
    per: list[int | None] = [p.ppn for p in req.parts for _ in range(p.count)] if not req.simple else [job.cores]
    if req.procs and not req.parts:
        per = []
    return (per + [None] * len(nodes))[:len(nodes)]


class Hold(NamedTuple):
    """What holds one node for a reservation."""

    start: float
    """When the reservation starts (-inf: its job started this cycle, the node stays closed)."""
    job_id: str
    need: int | None
    """Cores the reserved job needs there (None: the whole node)."""
    vo: str | None
    group: str | None


class Reservation(NamedTuple):
    job_id: str
    start: float
    """When the nodes will have room, by the running jobs' requested walltimes."""
    nodes: tuple[str, ...]


class Reservations:
    """One plan's reservations: the nodes they hold, the depth left, and the jobs that got one."""

    def __init__(self, cy: Cycle, board: Board, dt: Downtimes, ends: Ends, shares: bool,
                 previous: dict[str, Reservation] | None) -> None:
        self.cy = cy
        self.board = board
        self.dt = dt
        self.ends = ends
        self.shares = shares
        self.picker = Picker(cy, board, dt)
        self.made: dict[str, Reservation] = {}
        self.first_holds: dict[str, tuple] = {}
        """Node -> the first hold put on it in this plan (`Plan.holds`): what the starts met there,
        even if the reservation is dropped or released later in the plan."""
        """Job id -> its reservation in this plan (`Plan.reservations`)."""
        self.depth = cy.cfg.reservation_depth if cy.policy != "fifo" else 0
        self.on = self.depth > 0
        self.nodes: dict[str, Hold] = {}
        """node -> what of the reservation holding it"""
        self._resv_prev = previous or {}
        self._released: set[str] = set()
        self._resv_never: set[tuple] = set()
        """(pools, parts, procs) no open node could serve by what is known, this cycle."""
        """Jobs that started this cycle on a reservation."""
        self._started_ids: set[str] = set()
        self._resv_order: list[tuple[Job, str]] = []
        """Share order only: the jobs in the order the depth goes by (hot list, then the rest,
        each in submit order); `_resv_line` the multi-core ones without a reservation."""
        self._resv_line: list[str] | None = None
        self.elsewhere: Callable[[Job], bool] = lambda job: False
        """Jobs another hold serves (the multi-core partition, `Drains.serves`): no reservation."""
        self._resv_factor = self.cy.cfg.reservation_wait_factor
        self._resv_horizon = self.cy.now + horizon(self.cy.cfg.max_walltime, self.cy.snap.queues)
        """No reservation starts later (`mysched.core.rules.walltimes`)."""

    def as_planned(self, holds: dict[str, tuple]) -> None:
        """The holds a plan's starts met (`Plan.holds`), to ask after the fact what they refused."""
        self.nodes.update(holds)

    def set_order(self, jobs: list[tuple[Job, str]]) -> None:
        """The jobs in the order the depth goes by under the share order (hot list, then the
        rest, each in submit order)."""
        self._resv_order = jobs

    def holds(self, job_id: str) -> bool:
        """Does `job_id` hold a reservation in this plan?"""
        return job_id in self.made

    def holder(self, name: str) -> str | None:
        """The job whose reservation holds node `name`, if any."""
        held = self.nodes.get(name)
        return held.job_id if held is not None else None

    def holding(self, name: str) -> bool:
        """Does a reservation hold node `name`?"""
        return name in self.nodes

    def refuses(self, job: Job, ld: NodeUsage, cores: int | None = None) -> bool:
        """Does a reservation on node `ld` keep `job` (`cores` of it) off it now?"""
        held = self.nodes.get(ld.name)
        return held is not None and not self._fits_before(job, held, ld, cores)

    def _resv_due(self, job: Job) -> bool:
        """Has `job` waited long enough for a reservation (`scheduler.reservation_wait_factor`
        times its requested walltime: selective reservation, so short wide jobs backfill first
        and only the ones that wait long hold nodes back)?"""
        f = self._resv_factor
        return f <= 0 or job.walltime is None or self.cy.now - job.submit_time >= f * job.walltime

    def _fits_before(self, job: Job, held: Hold, ld: NodeUsage, cores: int | None = None) -> bool:
        """May `job` start now (`cores` of it, all by default) on node `ld`, `held` by a
        reservation? Its owner may; another job if it
        ends before the reservation starts (by its walltime or, without one, its estimate), or if the node still has the cores the reservation
        needs there at its start with this job running on (MAUI reserves a job's tasks, not
        whole nodes: a 4-core reservation on a 32-core node left its 28 other cores to short jobs
        only) -- unless the job could bar the reserved one in another way: it asks for its nodes
        alone, the farm packs classes exclusively, or it counts against a per-node limit of the
        reserved job's VO or group. Once the reservation is due, the cores free now count (a job
        past its requested walltime may hold some yet): refusing every job there then kept its
        nodes' spare cores idle for the cycle, the reserved job started or not (seen live: a job of
        a VO below its guarantee waited a cycle on an empty farm beside a 5-core reservation)."""
        start, job_id, need, vo, group = held
        length = self.cy.runs.length(job)  # its walltime, or its run-time estimate
        if job_id == job.id or (length is not None and self.cy.now + length <= start):
            return True
        if need is None or self.cy.exclusive_packing or (job.request is not None and job.request.exclusive):
            return False
        if self._same_node_limit(job, vo, group):
            return False
        free = ld.free if start <= self.cy.now else self._free_at(ld, start)
        return free - (job.cores if cores is None else cores) >= need

    def _same_node_limit(self, job: Job, vo: str | None, group: str | None) -> bool:
        """Does `job` count against a per-node limit (max_per_node) of VO `vo` or group `group`?"""
        if job.group == group and (g := self.cy.cfg.groups.get(group)) is not None and g.max_per_node is not None:
            return True
        v = self.cy.cfg.vos.get(vo) if vo is not None and (job.vo or self.cy.index.vo_of(job.group)) == vo else None
        return v is not None and v.max_per_node is not None

    def _free_at(self, ld: NodeUsage, t: float) -> int:
        """Cores node `ld` has free at `t`, by the requested walltimes of what runs there now
        (the jobs this cycle started included)."""
        ended = 0
        for end, c in self.ends.by_node().get(ld.name, ()):
            if end > t:
                break
            ended += c
        return ld.free_after(ended)


    def restore(self, eligible: list[tuple[Job, str]]) -> None:
        """The last plan's reservations of jobs still waiting hold their nodes again (before
        any job of this cycle is placed, so none can take them)."""
        if not self._resv_prev or self.depth <= 0:
            return
        waiting = {j.id: (j, vo) for j, vo in eligible}
        kept = {n: r.job_id for r in self._resv_prev.values() if r.job_id in waiting for n in r.nodes}
        for prev in sorted(self._resv_prev.values(), key=lambda r: r.start):
            got = waiting.get(prev.job_id)
            if got is None or self.depth <= 0 or self.elsewhere(got[0]):
                continue
            job, vo = got
            keys = self._keys_of(job, vo)
            by_name = self.cy.index.by_name
            if not all(n in by_name and by_name[n].key in keys and n not in self.nodes for n in prev.nodes):
                continue
            req = job.request
            parts, ends, procs = job_parts(job), self.ends.by_node(), (req.procs or 0) if req is not None else 0
            pick = self.picker.pick(parts, list(prev.nodes), ends, procs, job.walltime)
            if pick is not None and self.cy.index.downtimes and \
                    any(self.dt.room(n, prev.start, job.walltime) > prev.start for n in prev.nodes):
                continue  # a downtime now lies in its way there: it is reserved afresh
            if procs and not parts:
                # Cores anywhere: the promise is a number of cores (EASY's shadow time and extra
                # nodes), so it moves to the set that serves it better now. A node request keeps
                # its nodes: one part-drained for it is not left for one that only looks earlier.
                # (not onto the nodes another kept reservation holds: restored after this one, it
                # lost them, and the job it was kept for waited a cycle unprotected)
                fresh = self.picker.pick(parts, [n for n in self._open_nodes(keys) if kept.get(n, job.id) == job.id],
                                   ends, procs, job.walltime)
                if fresh is not None and (pick is None or self.picker.better(fresh, pick)):
                    pick = fresh
            if pick is not None and pick.start <= self._resv_horizon:
                self._hold(job, max(self.cy.now, pick.start), pick.nodes)

    def on_refusal(self, job: Job, vo: str, waits: dict[str, Wait]) -> str:
        """A multi-core job found no room: what to add to its wait. In submit order (easy,
        least-loaded) it takes a reservation if the depth allows. Under the share order only
        if no older multi-core job that has neither started nor a reservation (nor waits for
        something else) could take that depth first."""
        if self.elsewhere(job):
            return ""
        if job.id in self.made:  # kept from the last cycle: it already took its depth
            return self._reserve(job, vo)
        if self.depth <= 0:
            return ""
        if self.shares and self._resv_due(job):
            if self._resv_line is None:
                self._resv_line = [j.id for j, _ in self._resv_order if j.id not in self.made
                                   and wants_reservation(j) and self._resv_due(j)
                                   and not self.elsewhere(j)]
                self._resv_line.reverse()  # oldest last: popped as they start or get a reservation
            line, started, resv = self._resv_line, self._started_ids, self.made
            while line and (line[-1] in started or line[-1] in resv):
                line.pop()
            ahead = 0
            for jid in reversed(line):
                if jid == job.id:
                    break
                if jid in started or jid in resv or (jid in waits and waits[jid].reason not in _CAPACITY):
                    continue
                ahead += 1
                if ahead >= self.depth:
                    return ""
        return self._reserve(job, vo)

    def longest_waiting(self, jobs: list[tuple[Job, str]], waits: dict[str, Wait]) -> None:
        """After the cycle's starts (share order): the depth left goes to the jobs of `jobs`
        (hot-list jobs, then the rest, each in submit order) that ask for more than one core
        and wait for capacity, longest-waiting first. Kept from cycle to cycle, such a
        reservation protects its job until it starts, whatever the share order says.

        Nothing starts any more here, so a request that got no reservation gets none for the
        next job of the same class either (queue, VO, group, request, walltime) until one is
        made: such jobs are not tried again (at 20,000 queued jobs of a few shapes, trying
        each one was a third of the plan). A job that held one last cycle is always tried:
        its old nodes may serve it where a new set would not."""
        fruitless: set[tuple] = set()
        for job, vo in jobs:
            if self.depth <= 0:
                return
            if job.id in self.made or not wants_reservation(job) or self.elsewhere(job):
                continue
            w = waits.get(job.id)
            if w is None or w.reason not in _CAPACITY:
                continue
            kind = None if job.id in self._resv_prev else (job.queue, vo, job.group, job.cores, job.request,
                                                             job.walltime)
            if kind is not None and kind in fruitless and self._resv_due(job):
                continue
            depth = self.depth
            more = self._reserve(job, vo)
            if self.depth != depth:
                fruitless.clear()  # the nodes it holds are closed to the next ones: try them again
            elif not more and kind is not None:
                fruitless.add(kind)
            if more:
                waits[job.id] = w._replace(detail=w.detail + more if w.detail else more[2:])

    def check(self, waits: dict[str, Wait]) -> None:
        """Drop reservations whose job waits for something capacity will not end (a limit):
        they would keep nodes idle for nothing. The others are named in their job's wait -- a
        job left waiting without a try (the farm full, the cycle's start limit) had none, so a
        kept reservation showed in `when` and `nodes` but not in `why`."""
        for jid, r in list(self.made.items()):
            w = waits.get(jid)
            if w is not None and w.reason not in _CAPACITY:
                del self.made[jid]
            elif w is not None and "reserved " not in w.detail:
                more = f"reserved {'+'.join(r.nodes)} in {r.start - self.cy.now:.0f} s"
                waits[jid] = w._replace(detail=f"{w.detail}; {more}" if w.detail else more)

    def _hold(self, job: Job, start: float, nodes: list[str]) -> None:
        self.made[job.id] = Reservation(job.id, start, tuple(nodes))
        held = self.nodes
        vo = job.vo or self.cy.index.vo_of(job.group)
        for n, need in zip(nodes, reserved_cores(job, nodes)):  # a released node stays closed this cycle
            was = held.get(n)
            held[n] = Hold(-math.inf, job.id, None, vo, job.group) if was is not None and was.start == -math.inf \
                else Hold(start, job.id, need, vo, job.group)
            self.first_holds.setdefault(n, held[n])
        self.depth -= 1
        self.cy.wake(start)

    def started(self, job: Job, placement: tuple[tuple[str, int], ...]) -> None:
        """A job the plan starts: a reserved one gives its depth back; while reservations are
        made, its cores free at its requested end (what later reservations wait for)."""
        if job.id in self.made:
            self.release(job.id)
        if self.on:
            self.ends.add(job, placement)
            self._started_ids.add(job.id)

    def release(self, job_id: str) -> None:
        """A reserved job that starts gives its place in the depth to the next job that does
        not fit (EASY: the new head of the queue, else unprotected for a cycle while later jobs
        backfill). Its nodes left free stay closed for the rest of the cycle -- room that opened
        mid-cycle would go to a later, lower-ranked job over one refused earlier (a share
        violation) -- but the next reservation may take them (from the next cycle on: this
        one they stay closed, to backfill too). The plan still shows the reservation."""
        self._released.add(job_id)
        self.depth += 1
        for n, held in list(self.nodes.items()):
            if held.job_id == job_id:
                self.nodes[n] = held._replace(start=-math.inf, need=None)

    def _reserve(self, job: Job, vo: str) -> str:
        """Reserve nodes for a job that does not fit now; return what to add to its wait."""
        req = job.request
        procs = req.procs or 0 if req is not None else 0
        have = self.made.get(job.id)
        if have is not None:  # kept from the last cycle
            return f"; reserved {'+'.join(have.nodes)} in {have.start - self.cy.now:.0f} s"
        if not self._resv_due(job):
            due = job.submit_time + self._resv_factor * (job.walltime or 0.0) - self.cy.now
            return f"; no reservation for {due:.0f} s yet (reservation_wait_factor)"
        parts = job_parts(job)
        # A request no open node could serve in time (all nodes down, say) is not tried again for
        # each such job this cycle: nodes only close during it, but for those a started reserved
        # job releases -- a reservation missed so waits a cycle. With downtimes the walltime counts.
        sig = (self.cy.index.rules(job.queue, vo, job.group).keys, tuple(parts), procs,
               job.walltime if self.cy.index.downtimes else None)
        if sig in self._resv_never:
            return ""
        ends = self.ends.by_node()
        names = self._open_nodes(self._keys_of(job, vo))
        prev = self._resv_prev.get(job.id)
        got = self.picker.pick(parts, names, ends, procs, job.walltime)
        if got is None or not math.isfinite(got.start):
            self._resv_never.add(sig)
            return ""
        start, nodes = got
        if prev is not None and set(prev.nodes) <= set(names):
            again = self.picker.pick(parts, list(prev.nodes), ends, procs, job.walltime)
            if again is not None and again.start <= start + 1.0:
                start, nodes = again  # the same nodes, unless another set starts it earlier
        if start <= self.cy.now or start > self._resv_horizon:  # (inf too) never further ahead than a walltime believed
            return ""
        self._hold(job, start, nodes)
        return f"; reserved {'+'.join(nodes)} in {start - self.cy.now:.0f} s"

    def _open_nodes(self, keys: set) -> list[str]:
        """The nodes of pools `keys` no other waiting job's reservation holds."""
        held, released = self.nodes, self._released
        return [e.node.name for e in self.cy.index.entries if e.key in keys
                and (e.node.name not in held or held[e.node.name].job_id in released)]

    def _keys_of(self, job: Job, vo: str) -> set:
        return set(self.cy.index.rules(job.queue, vo, job.group).keys)
