"""Package guarantees in the planner (LSF's guaranteed resource pools, seed 004).

A pool's hosts supply packages (slots and/or memory on one host); each consumer (a VO, group
or queue) is guaranteed some. Every plan works out, per pool:

- total packages (what fits into each up host's slots and memory) and free packages (what
  fits into its free slots and free memory); hosts that are down or offline leave the pool;
- each consumer's use: the packages of its jobs running in the pool, a whole multiple each;
- its idle guarantee (guaranteed minus use) and what it is owed: the part of the idle
  guarantee its waiting jobs would fill.

Hosts are *guarded* for the idle guarantees (in host-name order, so the set stays put from
cycle to cycle): owners within their guarantee start there freely, other jobs only as loans
under the pool's loan policy (its queues, a requested walltime of at most `max_walltime`, and
with `restricted` only while no owner is owed anything). Of the guarded hosts, those closest
to free packages are *held* for what the owners are owed: nothing but owner jobs starts there
until they have their packages; a held host stays held from plan to plan while they are owed
anything (`plan(pool_gates=)`). So a loan never keeps an owner waiting longer than the longest
walltime a borrower may have, and held packages never go to anyone else. Guarantees do not
reorder jobs: an owner past its guarantee competes as usual, and no job is preempted.
"""

from __future__ import annotations

from mysched.core.model.reasons import Reason
from mysched.core.cycle import Cycle
from mysched.core.hold.downtimes import Downtimes
from mysched.core.hold.ends import Ends
from mysched.core.model.batch import Job
from mysched.core.model.plan import Plan, PoolGate, PoolNeed
from mysched.core.place.board import Board
from mysched.core.place.tally import RUNNING
from mysched.core.settings import Consumer, PoolConfig

HELD = "held"
GUARDED = "guarded"


class PoolBook:
    """One pool in one plan: its hosts' packages and each consumer's standing."""

    __slots__ = ("cfg", "hosts", "total", "free", "hfree", "guaranteed", "used", "pending", "owed", "gates",
                 "loans", "horizon", "need", "now", "_of")

    def __init__(self, cfg: PoolConfig) -> None:
        self.cfg = cfg
        self.hosts: list[str] = []
        self.total = 0
        self.free = 0
        self.hfree: dict[str, int] = {}
        """Free packages per host (kept up to date as the plan starts jobs)."""
        self.guaranteed: dict[Consumer, int] = {}
        self.used: dict[Consumer, int] = dict.fromkeys(cfg.consumers, 0)
        self.pending: dict[Consumer, int] = dict.fromkeys(cfg.consumers, 0)
        self.owed: dict[Consumer, int] = {}
        self.gates: dict[str, str] = {}
        self.loans = 0
        self.horizon: dict[str, float] = {}
        """Held hosts without a free package: when their jobs end by requested walltime (a loan
        ending before then delays no package)."""
        self.need: dict[str, int] = {}
        """Held host -> the packages held there (what the owners are owed, host by host). Fixed
        for the plan: an owner's start there leaves less to lend, never more, so a refusal
        stays true for the rest of the plan (the planner caches refusals per job class)."""
        self.now = 0.0
        self._of: dict[tuple[str, str, str], Consumer | None] = {}

    def consumer(self, queue: str, vo: str, group: str) -> Consumer | None:
        k = (queue, vo, group)
        try:
            return self._of[k]
        except KeyError:
            c = self._of[k] = self.cfg.consumer_of(queue, vo, group)
            return c

    def room(self, c: Consumer | None) -> int:
        """Packages of its guarantee consumer `c` does not use (0 for None)."""
        return max(0, self.guaranteed[c] - self.used[c]) if c is not None else 0

    @property
    def owed_total(self) -> int:
        return sum(self.owed.values())

    def status(self) -> dict:
        """Figures for `mysched pools` (LSF's ``bresources -g -l``), JSON-ready."""
        promised = sum(self.guaranteed.values())
        loan_left = self.loans
        consumers = []
        for c in self.cfg.consumers:
            g, u = self.guaranteed[c], self.used[c]
            idle = max(0, g - u)
            lent = min(idle, loan_left)
            loan_left -= lent
            consumers.append({"consumer": c.name, "kind": c.kind, "guaranteed": g, "allocated": u,
                              "owner_use": min(g, u), "loaned": lent, "pending": self.pending[c],
                              "owed": self.owed.get(c, 0)})
        owner = sum(min(self.guaranteed[c], self.used[c]) for c in self.cfg.consumers)
        return {"pool": self.cfg.name, "package": {"slots": self.cfg.slots, "mem": self.cfg.mem},
                "hosts": len(self.hosts), "total": self.total, "free": self.free, "guaranteed": promised,
                "owner_use": owner, "loan_use": self.loans,
                "other_use": max(0, self.total - self.free - owner - self.loans),
                "held_hosts": sorted(h for h, g in self.gates.items() if g == HELD),
                "guarded_hosts": len(self.gates), "status": "overcommitted" if promised > self.total else "ok",
                "consumers": consumers}


def job_packages(pool: PoolConfig, job: Job) -> int:
    """Packages a waiting job will occupy (per node of a multi-node request, summed)."""
    req = job.request
    if req is None or not req.parts:
        cores = job.cores if req is None or not req.procs else req.procs
        return pool.packages(cores, req.mem_for(cores, cores) if req is not None else 0)
    total = req.cores
    return sum(p.count * pool.packages(p.ppn, req.mem_for(p.ppn, total)) for p in req.parts)


def gate_refusal(book: PoolBook, gate: str, job: Job, vo: str, cores: int, mem: int,
                 job_host: str | None = None, spare: int = 0) -> str | None:
    """Why a guarded or held host (`job_host`) refuses `cores` (and `mem` bytes) of `job`
    (None: it may start); `spare`: the host's free slots beyond the packages held there."""
    pool = book.cfg
    if book.room(book.consumer(job.queue, vo, job.group)) >= pool.packages(cores, mem):
        return None  # an owner within its guarantee
    if pool.loan.restricted and book.owed_total > 0:
        return Reason.POOL_HELD
    if gate == HELD:
        # a loan that ends, by its requested walltime, before what runs there does: it
        # delays the owners' packages by nothing (EASY backfill on a held host)
        # -- or one in free slots beyond the held packages
        end = book.horizon.get(job_host) if job_host is not None else None
        if pool.loan.refuses(job.queue, job.walltime) is not None or not (
                spare >= cores or (end is not None and job.walltime is not None and book.now + job.walltime <= end)):
            return Reason.POOL_HELD
        return None
    if pool.loan.refuses(job.queue, job.walltime) is not None:
        return Reason.LOAN_REFUSED
    return None


class Pools:
    """One plan's guarantee pools: each pool's book, and the hosts guarded or held."""

    def __init__(self, cy: Cycle, board: Board, ends: Ends, dt: Downtimes,
                 previous: dict[str, PoolGate] | None) -> None:
        self.cy = cy
        self.board = board
        self.ends = ends
        self.dt = dt
        self._gates_prev = previous or {}
        self.books: dict[str, PoolBook] = {}
        self.gate: dict[str, PoolBook] = {}
        """Guarded or held host -> its pool's book."""
        self.loans: dict[str, str] = {}
        """Job id -> the pool that lent it packages (`Plan.pool_loans`)."""
        self.on = bool(cy.cfg.pools) and bool(cy.index.pool_of)

    def as_planned(self, out: Plan) -> None:
        """The books and gates `out` reports (its figures at the end of the plan), to ask after
        the fact what the pools refused."""
        if not self.on or not out.pools:
            return
        for pc in self.cy.cfg.pools:
            st = out.pools.get(pc.name)
            if st is None:
                continue
            b = self.books[pc.name] = PoolBook(pc)
            rows = {(r["kind"], r["consumer"]): r for r in st["consumers"]}
            for c in pc.consumers:
                r = rows.get((c.kind, c.name))
                if r is not None:
                    b.guaranteed[c], b.used[c], b.owed[c] = r["guaranteed"], r["allocated"], r["owed"]
            b.now = out.now
        for host, (pool, g) in out.pool_gates.items():
            b = self.books.get(pool)
            if b is not None:
                b.gates[host] = g
                self.gate[host] = b
        for host, (n, _slots) in out.pool_need.items():
            if host in self.gate:
                self.gate[host].need[host] = n
        for host, t in out.pool_horizons.items():
            if host in self.gate:
                self.gate[host].horizon[host] = t

    def setup(self, eligible: list[tuple[Job, str]]) -> None:
        """Book what runs, what waits, and which hosts are guarded and held this plan."""
        if not self.on:
            return
        idx = self.cy.index
        pool_of, by_name, vo_of = idx.pool_of, idx.by_name, idx.vo_of
        books = self.books = {p.name: PoolBook(p) for p in self.cy.cfg.pools}
        owners: dict[str, tuple[int, int]] = {}
        """Host -> (cores, memory) its pool's consumers' jobs use there."""
        stuck: set[str] = set()
        """Hosts running others' jobs no loan could be: they may run longer than a loan may,
        so such a host is guarded only when the hosts without them do not suffice."""
        for job in self.cy.snap.jobs:
            if job.state not in RUNNING or not job.placement:
                continue
            vo = job.vo or vo_of(job.group)
            for host, cores in job.placement:
                pool = pool_of.get(host)
                e = by_name.get(host)
                if pool is None or e is None or not e.usable:
                    continue  # jobs on hosts that are down count towards no guarantee
                b = books[pool.name]
                c = b.consumer(job.queue, vo, job.group)
                mem = job.request.mem_for(cores, job.cores) if job.request is not None else 0
                if c is None:
                    if pool.loan.refuses(job.queue, job.walltime) is not None:
                        stuck.add(host)
                    continue
                b.used[c] += pool.packages(cores, mem)
                oc, om = owners.get(host, (0, 0))
                owners[host] = (oc + cores, om + mem)
        for job, vo in eligible:
            for b in books.values():
                c = b.consumer(job.queue, vo, job.group)
                if c is not None:
                    b.pending[c] += job_packages(b.cfg, job)
        potential: dict[str, int] = {}
        """Packages a host gives once the others' jobs there end (owners' jobs stay), counting
        only slots that free within the pool's longest loan."""
        ends = self.ends.by_node() if any(p.loan.max_walltime is not None for p in self.cy.cfg.pools) else {}
        for host in sorted(pool_of):
            if not by_name[host].usable or host in self.dt.closed:
                continue  # down, offline or in a downtime: not part of the pool now
            pool = pool_of[host]
            b = books[pool.name]
            ld = self.board.usages[host]
            b.hosts.append(host)
            b.total += pool.fit(ld.slots, ld.mem)
            f = b.hfree[host] = pool.fit(ld.free, ld.mem_free())
            b.free += f
            oc, om = owners.get(host, (0, 0))
            pot = pool.fit(ld.slots - oc, None if ld.mem is None else ld.mem - om)
            limit = pool.loan.max_walltime
            if pot and limit is not None and pool.slots:
                # only what frees within the longest loan counts: an owner is not promised a
                # package under a job that may run for days
                soon = ld.free + sum(c for end, c in ends.get(host, ()) if end <= self.cy.now + limit)
                pot = min(pot, pool.fit(soon, None))
            potential[host] = pot
        for b in books.values():
            idle = 0
            for c in b.cfg.consumers:
                g = b.guaranteed[c] = c.guarantee(b.total)
                room = max(0, g - b.used[c])
                idle += room
                b.owed[c] = min(room, b.pending[c])
            got = 0
            guardable = self.cy.index.pool_guardable
            # guarded: what the idle guarantees need -- the last plan's first, then hosts that
            # run no job longer than a loan, in name order (so the set keeps still)
            last = {h: g for h, (pn, g) in self._gates_prev.items() if pn == b.cfg.name}
            for host in sorted(b.hosts, key=lambda h: (h not in last, h in stuck, h)):
                if got >= idle:
                    break
                if potential[host] > 0 and host in guardable:
                    b.gates[host] = GUARDED
                    got += potential[host]
            owed = b.owed_total
            if owed:  # held: the guarded hosts nearest to a free package, for what is owed now
                got = 0
                slots = b.cfg.slots
                soon = {h: self._package_at(h, slots) if slots else self.cy.now for h in b.gates}
                # hosts held in the last plan stay held while anything is owed: a host let go
                # would take loans again, and needed again (an owner's job ends early) it could
                # keep the owners waiting longer than a loan may run
                prev = {h for h, g in last.items() if g == HELD}
                for host in sorted(b.gates, key=lambda h: (h not in prev, -b.hfree[h], soon[h], h)):
                    if got >= owed and host not in prev:
                        break
                    b.gates[host] = HELD
                    b.need[host] = max(1, min(potential[host], owed - got))
                    got += potential[host]
            b.now = self.cy.now
            for host, g in b.gates.items():
                self.gate[host] = b
                if g == HELD and b.hfree[host] < b.need[host] and b.cfg.slots:
                    t = self._package_at(host, b.cfg.slots * b.need[host])
                    if self.cy.now < t < float("inf"):
                        b.horizon[host] = t

    def _package_at(self, host: str, cores: int) -> float:
        """When held host `host` has `cores` free, by the requested walltimes of what runs
        there (inf: never, by what is known): a loan ending by then delays no package."""
        return self.board.usages[host].room_at(cores, self.ends.by_node().get(host, ()), self.cy.now)

    def refuses(self, job: Job, vo: str, name: str, cores: int, mem: int = 0) -> str | None:
        b = self.gate.get(name)
        if b is None:
            return None
        spare = self.board.usages[name].free - b.cfg.slots * b.need.get(name, 0)
        return gate_refusal(b, b.gates[name], job, vo, cores, mem, name, spare)

    def prefer(self, job: Job, vo: str) -> set[str] | None:
        """The guarded hosts of the pools where `job` is an owner within its guarantee: it
        goes there first, so it does not take room others could use; loans are not sent there
        first. Measured alternatives: docs/design/pools.md."""
        out: set[str] | None = None
        for b in self.books.values():
            if b.gates and b.room(b.consumer(job.queue, vo, job.group)) > 0:
                out = (out or set()) | set(b.gates)
        return out

    def take(self, job: Job, vo: str, name: str, cores: int, mem: int) -> None:
        """Book a start on pool host `name`: owner use, loans, free packages."""
        pool = self.cy.index.pool_of.get(name)
        if pool is None:
            return
        b = self.books[pool.name]
        if name not in b.hfree:
            return
        ld = self.board.usages[name]
        f = pool.fit(ld.free, ld.mem_free())
        b.free += f - b.hfree[name]
        b.hfree[name] = f
        c = b.consumer(job.queue, vo, job.group)
        k = pool.packages(cores, mem)
        if b.room(c) >= k:
            b.used[c] += k
            b.owed[c] = max(0, b.owed[c] - k)
            b.pending[c] = max(0, b.pending[c] - k)
        elif name in b.gates:
            b.loans += k
            self.loans[job.id] = pool.name

    def detail(self, job: Job, vo: str, reason: str) -> str:
        """The pool figures behind a `pool_held` or `loan_refused` wait."""
        parts = []
        for b in self.books.values():
            if not b.gates:
                continue
            owed = ", ".join(f"{c} owed {n}" for c, n in b.owed.items() if n)
            if reason == Reason.LOAN_REFUSED:
                why = b.cfg.loan.refuses(job.queue, job.walltime)
                if why is None:
                    continue
                parts.append(f"pool {b.cfg.name}: {len(b.gates)} host(s) guarded for idle guarantees; {why}")
            else:
                parts.append(f"pool {b.cfg.name}: {sum(1 for g in b.gates.values() if g == HELD)} host(s) held "
                             f"({b.free} of {b.total} package(s) free" + (f"; {owed}" if owed else "") + ")"
                             + ("; restricted loans: none while owners wait" if b.cfg.loan.restricted else ""))
        return "; ".join(parts)

    def fill(self, out: Plan) -> None:
        """The plan's pool figures, gates, horizons and held packages."""
        out.pool_loans = self.loans
        if self.on:
            out.pools = {name: b.status() for name, b in self.books.items()}
            out.pool_gates = {h: PoolGate(b.cfg.name, g) for b in self.books.values() for h, g in b.gates.items()}
            out.pool_horizons = {h: t for b in self.books.values() for h, t in b.horizon.items()}
            out.pool_need = {h: PoolNeed(n, b.cfg.slots) for b in self.books.values() for h, n in b.need.items()}
