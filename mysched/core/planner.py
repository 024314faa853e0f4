"""The pure scheduling core: ``plan(snapshot, config, usage, now) -> Plan``.

No I/O, no clock, no globals: everything comes in as arguments, so the daemon, the
simulator, the benchmarks and the tests all run the same code.

Order (MYSCHED, Gellrich CHEP2013):
  1. jobs on a hot list, in submit order;
  2. VOs running fewer slots than their guarantee, most under-served (running/guarantee) first;
  3. the rest by dynamic fair-share priority ``share / (eps + u_hist + u_run)`` (LSF's form):
     `u_hist` is the VO's fraction of decayed wall-clock over the history window, `u_run` its
     fraction of the farm's slots in use, *including the starts of this cycle*, so one VO
     does not take every free slot at once. Inside a VO, groups and then users with the
     least ``u_hist + u_run`` go first; a user's jobs go in submit order.
Placement: drop nodes that are down, full, not assigned to the job's queue, of a type the
group may not use, at a per-node VO/group limit, or reserved for another packing class;
take the node with (packing preference, fewest jobs of the user, highest diversity after
placement, fewest used slots, name). Diversity = distinct users / jobs on the node.

A plan is composed of components that own their state for the cycle -- the limits
(`rules.limits`), the share order (`share.ordering`), the nodes (`place.board`), and what
keeps room back (`hold`: downtimes, reservations, drains, guarantee pools) -- around one
read-only `Cycle`. Whether a node takes a job is asked of one list of checks
(`place.admission`), by the scan, the explanation and whole-request placement alike.

Cost: candidate nodes are grouped (same node type and queue assignment) and kept sorted by
their score, so a placement looks at few nodes; a job class (queue, VO, group, cores,
packing class) that found no node is not tried again in the same cycle, because starts only
ever take capacity away. A caller that plans again and again on one farm passes a
`NodeIndex`: it keeps the running jobs' per-node counts and rankings from cycle to cycle.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping

from mysched.core.hold.downtimes import Downtimes
from mysched.core.hold.drains import Drain, Drains
from mysched.core.hold.ends import Ends
from mysched.core.hold.gates import admission_for, cycle_of
from mysched.core.hold.pools import Pools
from mysched.core.hold.reservations import Reservation, Reservations, wants_reservation
from mysched.core.model.batch import Job, JobState, Snapshot, id_order
from mysched.core.model.plan import Plan, PoolGate, Start, Wait
from mysched.core.model.reasons import Reason
from mysched.core.model.request import NodePart, Request
from mysched.core.place.admission import Ask
from mysched.core.place.board import Board
from mysched.core.place.nodeindex import NodeIndex
from mysched.core.place.nodeusage import NodeUsage
from mysched.core.place.placement import Explainer, place
from mysched.core.place.requests import RequestPlacer
from mysched.core.rules.limits import JobRules, Limits
from mysched.core.rules.throttle import Throttle
from mysched.core.rules.runtimes import RecentRuns
from mysched.core.settings import Config, PackingClass
from mysched.core.share.ordering import ShareOrder
from mysched.core.share.standing import VOFacts, VOTable
from mysched.core.share.usage import Usage

__all__ = ["POLICIES", "NodeIndex", "plan"]

_new_start = Start._make
_new_wait = Wait._make

POLICIES = ("mysched", "fifo", "least-loaded", "easy")


def plan(snapshot: Snapshot, config: Config, usage: Usage, now: float, *, policy: str = "mysched",
         index: NodeIndex | None = None, throttles: tuple[Throttle, ...] = (),
         reservations: dict[str, Reservation] | None = None, drains: dict[str, Drain] | None = None,
         pool_gates: dict[str, PoolGate] | None = None, runs: RecentRuns | None = None) -> Plan:
    """Decide which queued jobs to start where, and why every other job waits.

    `index` is an optional cache of node facts (see `NodeIndex`); results are the same with
    or without it. `throttles`: what external load allows this cycle
    (`mysched.core.rules.throttle.throttles`). `reservations`: the last plan's, kept stable
    (`mysched.core.hold.reservations`); `drains`: the last plan's multi-core partition
    (`mysched.core.hold.drains`); `pool_gates`: the last plan's guarded and held pool hosts
    (`mysched.core.hold.pools`: held hosts stay held while owners are owed); `runs`: the
    recent finished jobs' run times, for estimates of jobs without a walltime
    (`mysched.core.rules.runtimes`; None: such jobs are taken to run for ever).

    A cycle allocates ~10 objects per job and frees them together: callers that plan often
    pause the cyclic garbage collector around it (the core leaves the process's gc alone)."""
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r}; choose one of {', '.join(POLICIES)}")
    idx = index or NodeIndex()
    try:
        return Planner(snapshot, config, usage, now, policy, idx.get(config, snapshot.nodes), throttles,
                       reservations, drains, pool_gates, runs).run()
    finally:
        if index is None:
            idx.clear()  # a one-off index: free its tally now, not at some later collection


class Planner:
    """One plan: composes the components, screens the queue, tries jobs in the order's
    sequence and keeps the start/wait bookkeeping (`Trier` for the order)."""

    def __init__(self, snapshot: Snapshot, config: Config, usage: Usage, now: float, policy: str,
                 index: NodeIndex, throttles: tuple[Throttle, ...] = (),
                 reservations: dict[str, Reservation] | None = None, drains: dict[str, Drain] | None = None,
                 pool_gates: dict[str, PoolGate] | None = None, runs: RecentRuns | None = None) -> None:
        t = index.tally(policy)
        self.queued, self.vo_queued = t.sync(snapshot)  # before the cycle: its farm counts what runs
        t.keep_whole(self.queued)
        cy = self.cy = cycle_of(snapshot, config, usage, now, policy, index, runs)
        self.out = Plan(now=now, policy=policy, throttles=throttles)
        self.rank = 0
        board = self.board = Board(index, t, now)
        # Rules of a (queue, VO, group) stay the same while the server's queue limits do.
        qsig = tuple((q.name, q.max_running) for q in snapshot.queues if q.max_running is not None)
        self._rules_for, self._groups_for = t.scratch(qsig)
        self.qstate = {q.name: q for q in snapshot.queues}
        self.limits = Limits(config, snapshot, t, index.core_limits, index.total_limits,
                             tuple(x for x in throttles if x.factor < 1.0), cy.total_slots, bool(qsig), self.rules)
        self.used_before = t.used + t.off_used
        self.vo_facts = VOFacts(config, cy.total_slots, index.vo_fixed if not t.off_used else {}, usage,
                                config.fairshare_eps, dict(t.vo_slots))
        self.order = ShareOrder(config, usage, cy.total_slots, self.vo_facts, t, self, policy == "mysched")
        self.started_by_vo: dict[str, int] = {}
        if cy.exclusive_packing:
            for end in board.hold_classes(self.queued):
                cy.wake(end)
        if config.node_load:
            board.skip_loaded(snapshot.nodes, config.node_load)
            self.out.node_load = dict(board.overloaded)
        self.dt = Downtimes(cy, board)
        self.ends = Ends(snapshot, now, cy.runs)
        self.resv = Reservations(cy, board, self.dt, self.ends, policy == "mysched", reservations)
        self.drains = Drains(cy, board, self.ends, self.resv, self.dt, drains)
        self.resv.elsewhere = self.drains.serves
        self.pools = Pools(cy, board, self.ends, self.dt, pool_gates)
        self.admission = admission_for(config, board, self.dt, self.resv, self.drains, self.pools)
        self.explainer = Explainer(board, self.admission, {
            Reason.DOWNTIME: lambda job, vo, names: self.dt.detail(job, names),
            Reason.POOL_HELD: lambda job, vo, names: self.pools.detail(job, vo, Reason.POOL_HELD),
            Reason.LOAN_REFUSED: lambda job, vo, names: self.pools.detail(job, vo, Reason.LOAN_REFUSED)},
            self.resv.holder)
        self.requests = RequestPlacer(index, board, self.admission, cy.keys_of, closed_first=cy.policy == "mysched")
        self._class_cache: dict[tuple, Wait] = {}
        self._kind_max_of: dict[tuple[str, str, str], int] = {}
        self._explained: dict[tuple, tuple[Wait, Callable[[], Wait], bool]] = {}
        """Class key (or a job's own) -> the explanation its jobs got when tried, and how to
        explain it again."""
        self._class_of: dict[str, tuple] = {}
        """Job id -> class key, for the jobs whose wait an explanation gives."""

    # -- Trier: what the order asks ---------------------------------------------------------
    def started(self) -> int:
        return len(self.out.starts)

    def free_total(self) -> int:
        return self.board.free_total

    def reserved(self) -> Mapping[str, Reservation]:
        return self.resv.made

    def cores_left(self, reason: str, job: Job, vo: str) -> int:
        return self.limits.cores_left(reason, job, vo)

    def wait_all(self, jobs: Iterable[tuple[Job, str]], reason: str) -> None:
        """Everything left waits: for a limit it hits, else for `reason` (nothing starts any more)."""
        waits = self.out.waits
        facts = self.vo_facts
        rank = self.rank
        why = self.limits.drain_reason
        for job, vo in jobs:
            rank += 1
            r, detail = why(job, vo, reason)
            waits[job.id] = _new_wait((job.id, r, rank, facts[vo].priority, detail, None))
        self.rank = rank

    def wait(self, job: Job, reason: str, vo: str, detail: str = "", nodes_rejected=None) -> None:  # noqa: ANN001
        self.rank += 1
        if (reason == Reason.NO_FREE_SLOT or reason == Reason.DOWNTIME) and wants_reservation(job):
            more = self.resv.on_refusal(job, vo, self.out.waits)
            if more:
                detail = detail + more if detail else more[2:]
        self.out.waits[job.id] = Wait(job.id, reason, self.rank, self.vo_facts[vo].priority, detail, nodes_rejected)

    # -- main -------------------------------------------------------------------------------
    def run(self) -> Plan:
        cfg, out = self.cy.cfg, self.out
        eligible = self._screen()
        self.resv.restore(eligible)
        self.drains.restore(eligible)
        self.pools.setup(eligible)
        if self.cy.policy == "mysched":
            hot = cfg.hot
            hot_jobs = [(j, vo) for j, vo in eligible if j.queue in hot.queues or vo in hot.vos
                        or j.group in hot.groups or j.user in hot.users] if hot else []
            if hot_jobs:
                hot_ids = {j.id for j, _ in hot_jobs}
                eligible = [(j, vo) for j, vo in eligible if j.id not in hot_ids]
            self.resv.set_order(hot_jobs + eligible)
            stopped = self.order.run_list(hot_jobs, Reason.HOT)
            if stopped:
                self.wait_all(eligible, stopped)
            else:
                self.order.run_shares(eligible)
            self.resv.longest_waiting(hot_jobs + eligible, out.waits)
        else:
            self.order.run_list(eligible, Reason.EASY if self.cy.policy == "easy" else Reason.FIFO)
        if self.resv.made:
            self.resv.check(out.waits)
        self.drains.update(out.waits, out.starts)
        self._reexplain()
        self._finish()
        return out

    def _screen(self) -> list[tuple[Job, str]]:
        """Jobs that could start at all, in submit order; the rest get their reason now."""
        qstate = self.qstate
        closed = {q.name for q in self.cy.snap.queues if not q.started}  # enabled: submissions only
        max_slots = self.cy.max_slots
        kind_max = self._kind_max_of
        queued_state = JobState.QUEUED
        held = JobState.HELD
        out = []
        for job, vo in self.queued:
            st = job.state
            if st is not queued_state:
                self.wait(job, Reason.HELD if st is held else Reason.NOT_QUEUED, vo)
            elif closed and job.queue in closed:
                self.wait(job, Reason.QUEUE_DISABLED, vo)
            elif qstate and job.queue not in qstate:
                self.wait(job, Reason.NOT_EXECUTION_QUEUE, vo, detail=f"queue {job.queue} is not an execution queue "
                          "of the server")
            elif job.hazard:
                self.wait(job, Reason.UNSAFE_REQUEST, vo, detail=job.hazard)
            elif job.request is not None and not job.request.simple:
                why = self.requests.never_fits(job, vo, job.request)
                if why is not None:
                    reason, detail = why
                    self.wait(job, reason, vo, detail=detail)  # never_fits, or nodes_down
                else:
                    out.append((job.submit_time, job.id, job, vo))
            elif job.cores > max_slots:  # too_large, or nodes_down when a node down or offline is wide enough
                self.wait(job, *self.requests.too_large(job, vo))
            elif job.cores > (kind_max.get((job.queue, vo, job.group)) or self._kind_max(job.queue, vo, job.group)):
                # no node up that it may use is as wide: as a request's, never_fits or nodes_down
                why = self.requests.never_fits(job, vo, Request((NodePart(1, job.cores),)))
                if why is not None:
                    self.wait(job, why[0], vo, detail=why[1])
                else:
                    out.append((job.submit_time, job.id, job, vo))
            else:
                out.append((job.submit_time, job.id, job, vo))
        out.sort()
        # jobs of one second go in TORQUE's numbering (strings put 10.srv before 9.srv); such
        # runs are short, so only they pay for the parsing
        i, n = 0, len(out)
        if len({x[0] for x in out}) == n:
            n = 0  # no two in one second
        while i < n:
            k = i + 1
            while k < n and out[k][0] == out[i][0]:
                k += 1
            if k - i > 1:
                out[i:k] = sorted(out[i:k], key=lambda x: id_order(x[1]))
            i = k
        return [(j, vo) for _, _, j, vo in out]

    def _kind_max(self, queue: str, vo: str, group: str) -> int:
        """The most slots of a node up that a job of (queue, VO, group) may use."""
        k = (queue, vo, group)
        got = self._kind_max_of.get(k)
        if got is None:
            key_max = self.cy.index.key_max
            got = self._kind_max_of[k] = max((key_max.get(key, 0) for key in self.cy.keys_of(queue, vo, group)),
                                             default=0)
        return got

    def rules(self, queue: str, vo: str, group: str) -> JobRules:
        """The limits and candidate node groups of a (queue, VO, group), worked out once (kept
        by the tally while the configuration and the server's queue limits stay the same)."""
        k = (queue, vo, group)
        got = self._rules_for.get(k)
        if got is not None:
            return got
        r = self.cy.index.rules(queue, vo, group)
        qmax = r.queue_max
        q = self.qstate.get(queue)
        if q is not None and q.max_running is not None:
            qmax = q.max_running if qmax is None else min(qmax, q.max_running)
        groups = self._groups_for.get(k)
        if groups is None:
            groups = self._groups_for[k] = [self.board.groups[key] for key in r.keys]
        closed = [g for g in groups if g.closed]
        tiers = (closed, [g for g in groups if not g.closed]) if closed and len(closed) < len(groups) else None
        got = self._rules_for[k] = JobRules(qmax, r.vo_max, r.group_max, r.vo_node_max, r.group_node_max, groups, tiers)
        return got

    def try_job(self, job: Job, vo: str, reason: str) -> str | None:
        """Place and record one job; return None if it starts, else its wait reason."""
        queue, group = job.queue, job.group
        rules = self._rules_for.get((queue, vo, group)) or self.rules(queue, vo, group)
        if self.limits.on:
            lim = self.limits.refusal(job, vo, rules)
            if lim is not None:
                reason, detail = lim
                self.wait(job, reason, vo, detail)
                return reason
        pc = self.cy.index.job_class(queue, vo, group, job.user) if self.cy.packing else None
        cls = pc.name if pc else None
        if job.request is not None and not job.request.simple:
            return self._try_request(job, vo, reason, rules, pc)
        ckey = (queue, vo, group, job.cores, cls, self._by_walltime(job))
        # a job's own reservation opens nodes to it alone: no wait of its class stands for it
        mine = self.resv.holds(job.id)
        if self._class_cache and not mine and (why := self._class_wait(job, vo, ckey)) is not None:
            return why
        ask = Ask(job, vo, cls, job.cores, rules.groups, rules.vo_node_max, rules.group_node_max)
        usages, diverse = self.board.usages, self.cy.policy == "mysched"
        ld = self._preferring(job, vo, lambda only: place(self.admission, usages, ask, pc, rules, diverse, only))
        if ld is None:
            w = self.explainer.explain(job, vo, ask)
            self._explaining(job, ckey, mine, w, lambda: self.explainer.explain(job, vo, ask))
            self.wait(job, w.reason, vo, w.detail, w.nodes_rejected)
            return w.reason
        self._take(job, vo, pc, ld, job.cores)
        self._count_start(job, vo, ((ld.name, job.cores),), reason)
        return None

    def _try_request(self, job: Job, vo: str, reason: str, rules: JobRules, pc: PackingClass | None) -> str | None:
        """`try_job` for a whole request: place it on its nodes, or wait with why."""
        req = job.request
        cls = pc.name if pc else None
        key = (job.queue, vo, job.group, req, cls, self._by_walltime(job))
        mine = self.resv.holds(job.id)  # its own reserved nodes: the class's wait is not its
        if not mine and (why := self._class_wait(job, vo, key)) is not None:
            return why
        placer = self.requests
        placer.refused.clear()
        placer.refused_nodes.clear()
        got = self._preferring(job, vo, lambda only: placer.place(job, vo, cls, rules, req, only))
        if isinstance(got, str):
            # its words decide this cycle's reservation (as ever); the end of the cycle explains
            # it node by node where it asks for one node, as a plain job's wait is
            w = self._request_wait(job, vo, rules, cls, req, got, by_node=False)
            self._explaining(job, key, mine, w, lambda: self._request_wait(job, vo, rules, cls, req), True)
            self.wait(job, w.reason, vo, w.detail, w.nodes_rejected)
            return w.reason
        total = job.cores
        for ld, cores in got:
            self._take(job, vo, pc, ld, cores, req.mem_for(cores, total), req.exclusive, req.vmem_for(cores, total))
        self._count_start(job, vo, tuple((ld.name, cores) for ld, cores in got), reason)
        return None

    def _by_walltime(self, job: Job) -> float | tuple | None:
        """The walltime in a job's class key: with reservations, draining nodes, pools or
        downtimes whether a node takes a job depends on it too (None: it does not) -- and for
        a job without one, on its run-time estimate."""
        if not (self.resv.nodes or self.drains.draining or self.pools.on or self.dt.ahead):
            return None
        return job.walltime if job.walltime is not None else (None, self.cy.runs.length(job))

    def _class_wait(self, job: Job, vo: str, key: tuple) -> str | None:
        """The wait a job of the same class got this cycle, given to `job` too (no node took
        that one, and starts only take room away); None if its class has none yet."""
        cached = self._class_cache.get(key)
        if cached is None:
            return None
        self._class_of[job.id] = key
        self.wait(job, cached.reason, vo, cached.detail, cached.nodes_rejected)
        return cached.reason

    def _preferring(self, job: Job, vo: str, place_on: Callable[[set[str] | None], Any]) -> Any:
        """`place_on(nodes)` first on the guarded hosts of the pools where `job` is an owner
        within its guarantee, so it does not take room others could use; then anywhere. A
        result that is None or a string (why not) counts as no place."""
        got = None
        if self.pools.on:
            only = self.pools.prefer(job, vo)
            if only:
                got = place_on(only)
        if got is None or isinstance(got, str):
            got = place_on(None)
        return got

    def _request_wait(self, job: Job, vo: str, rules: JobRules, cls: str | None, req: Request,
                      why: str | None = None, by_node: bool = True) -> Wait:
        """Why a whole request does not fit now. On one node, as a plain job's wait: each node's
        first refusal, counted (`Explainer`), the request's own words beside. On several nodes,
        its words, and a downtime or guarantee pool that refused nodes with room named."""
        placer = self.requests
        if why is None:
            placer.refused.clear()
            placer.refused_nodes.clear()
            got = placer.place(job, vo, cls, rules, req)
            why = got if isinstance(got, str) else f"{req}: room for it now"  # (at the end of the cycle: rare)
        if by_node and len(req.parts) == 1 and req.parts[0].count == 1 and not req.procs:
            part = req.parts[0]
            w = self.explainer.explain(job, vo, Ask(
                job, vo, cls, part.ppn, rules.groups, rules.vo_node_max, rules.group_node_max,
                req.mem_for(part.ppn, req.cores), req.vmem_for(part.ppn, req.cores), req.exclusive, part.properties,
                part.host))
            return w._replace(detail=f"{w.detail}; {why}")
        reason = Reason.NO_FREE_SLOT
        refused = placer.refused
        shut = placer.refused_nodes.get(Reason.DOWNTIME, set()) | placer.serving(
            req, self.dt.closed_with_room(job, vo, min((p.ppn for p in req.parts), default=1)))
        if shut:  # room there was, or will be, but a scheduled downtime comes first
            reason = Reason.DOWNTIME
            why += f"; {len(shut)} node(s) refused it: {self.dt.detail(job, shut)}"
        else:
            pooled = {r: n for r, n in refused.items() if r in (Reason.POOL_HELD, Reason.LOAN_REFUSED)}
            if pooled:  # room there was, but a guarantee pool kept it
                reason = max(sorted(pooled), key=pooled.get)
                why += f"; {pooled[reason]} node(s) with room refused it ({self.pools.detail(job, vo, reason)})"
        return Wait(job.id, reason, 0, 0.0, why, None)

    def _explaining(self, job: Job, key: tuple, mine: bool, w: Wait, again: Callable[[], Wait],
                    always: bool = False) -> None:
        """Keep a job's explanation -- for its class, unless its own reservation made it its
        own -- and how to explain it again at the end of the cycle (`always`: even if no node
        had room for it when tried)."""
        if not mine:
            self._class_cache[key] = w
        else:
            key = ("job", job.id)
        self._explained.setdefault(key, (w, again, always))
        self._class_of[job.id] = key

    def _take(self, job: Job, vo: str, pc: PackingClass | None, ld: NodeUsage, cores: int, mem: int = 0,
              excl: bool = False, vmem: int = 0) -> None:
        """Book `cores` of node `ld` for the job, on the board and in its guarantee pool."""
        ttl_end = self.board.take(job, vo, pc, ld, cores, mem, excl, vmem)
        if ttl_end is not None:
            self.cy.wake(ttl_end)
        if self.pools.on:
            self.pools.take(job, vo, ld.name, cores, mem)

    def _count_start(self, job: Job, vo: str, placement: tuple, reason: str) -> None:
        """The running counts the order and the limits read, and the `Start` itself."""
        self.order.count(job, vo)
        self.limits.count(job, vo)
        d = self.started_by_vo
        d[vo] = d.get(vo, 0) + 1
        self.resv.started(job, placement)
        self.rank = rank = self.rank + 1
        self.out.starts.append(_new_start((job.id, placement, reason, vo, job.group, job.user, job.queue, job.cores,
                                           rank, self.vo_facts[vo].priority)))

    def _reexplain(self) -> None:
        """Explain again, against the nodes as the cycle left them, the waits of jobs that no
        node took when they were tried: later starts may have taken the room they were told of
        (a node type blamed while every slot is taken was such a stale explanation). The reason
        in force at the end of the cycle is the one reported; what was added to the wait since
        (a reservation's note) stays."""
        if not self._explained:
            return
        # no node had room when tried: none has at the end (starts take room, none gives it back)
        fresh = {key: again() for key, (w, again, always) in self._explained.items()
                 if always or w.reason != Reason.NO_FREE_SLOT}
        # an explanation that came out as it was changes no wait of its class (thousands of
        # jobs in a backlog of a few shapes)
        fresh = {key: new for key, new in fresh.items() if (new.reason, new.detail, new.nodes_rejected) != (
                 (old := self._explained[key][0]).reason, old.detail, old.nodes_rejected)}
        if not fresh:
            return
        waits = self.out.waits
        for jid, key in self._class_of.items():
            new = fresh.get(key)
            cur = waits.get(jid)
            if new is None or cur is None:
                continue
            old = self._explained[key][0]
            if cur.reason != old.reason or not cur.detail.startswith(old.detail):
                continue  # its wait was set by something else since
            waits[jid] = cur._replace(reason=new.reason, detail=new.detail + cur.detail[len(old.detail):],
                                      nodes_rejected=new.nodes_rejected)

    def _finish(self) -> None:
        out, board, cy = self.out, self.board, self.cy
        out.reservations = self.resv.made
        out.holds = self.resv.first_holds
        out.drains = self.drains.made
        out.node_classes = board.node_classes
        out.downtimes = self.dt.windows
        self.pools.fill(out)
        held = set(out.drains) | {n for r in out.reservations.values() for n in r.nodes}
        out.held_free = sum(board.usages[n].free for n in held)
        out.draining_now = frozenset(self.drains.draining)
        out.drain_horizons = dict(self.drains.horizons()) if self.drains.draining else {}
        out.drain_wants = dict(self.drains.wants)
        out.total_slots = cy.total_slots
        out.free_slots = max(0, board.free_total)
        out.used_slots = self.used_before
        out.wake_at = cy.wake_at
        names = set(cy.cfg.vos) | set(cy.tally.vo_slots) | set(self.vo_queued)
        out.vo_table = VOTable(names, self.vo_facts, dict(cy.tally.vo_jobs), self.vo_queued, self.started_by_vo)
