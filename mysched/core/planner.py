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

Cost: candidate nodes are grouped in pools (same node type and queue assignment) and kept
sorted by their score, so a placement looks at few nodes; a job class (queue, VO, group,
cores, packing class) that found no node is not tried again in the same cycle, because
starts only ever take capacity away. A caller that plans again and again on one farm passes
a `NodeIndex`: it keeps the running jobs' per-node counts and rankings (`tally.Tally`) from
cycle to cycle, so a cycle pays for the jobs that started and ended since the last one.

Modules: `ordering` (the share tree), `placement` (node choice and refusals), `vofacts`
(VO standing), `tally` and `index` (what is kept between cycles), `admission` (static rules).
"""

from __future__ import annotations

import gc
import math

from mysched.core.settings import Config, PackingClass
from mysched.core.model.batch import Job, JobState, Snapshot
from mysched.core.place.nodeindex import NodeIndex
from mysched.core.rules.limits import Limiting
from mysched.core.share.ordering import Ordering
from mysched.core.place.placement import Placing, _Loads, _Rules
from mysched.core.hold.reservations import Reservation, Reserving, wants_reservation
from mysched.core.rules.serverlimits import RunLimits
from mysched.core.model.windows import Downtimes
from mysched.core.hold.drains import Drain, Draining
from mysched.core.hold.pools import Guaranteeing
from mysched.core.model.plan import Plan, Start, Wait
from mysched.core.place.tally import DEFAULT_CLASS, Load, Ranking
from mysched.core.rules.throttle import Throttle, overloaded
from mysched.core.share.standing import VOFacts, VOTable
from mysched.core.place.requests import RequestPlacing
from mysched.core.share.usage import Usage

__all__ = ["POLICIES", "NodeIndex", "plan"]

_new_start = Start._make
_new_wait = Wait._make

POLICIES = ("mysched", "fifo", "least-loaded", "easy")


def plan(snapshot: Snapshot, config: Config, usage: Usage, now: float, *, policy: str = "mysched",
         index: NodeIndex | None = None, throttles: tuple[Throttle, ...] = (),
         reservations: dict[str, Reservation] | None = None, drains: dict[str, Drain] | None = None,
         pool_gates: dict[str, tuple[str, str]] | None = None) -> Plan:
    """Decide which queued jobs to start where, and why every other job waits.

    `index` is an optional cache of node facts (see `NodeIndex`); results are the same with
    or without it. `throttles`: what external load allows this cycle
    (`mysched.core.rules.throttle.throttles`). `reservations`: the last plan's, kept stable
    (`mysched.core.hold.reservations`); `drains`: the last plan's multi-core partition
    (`mysched.core.hold.drains`); `pool_gates`: the last plan's guarded and held pool hosts
    (`mysched.core.hold.pools`: held hosts stay held while owners are owed)."""
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r}; choose one of {', '.join(POLICIES)}")
    # A cycle allocates ~10 objects per job and frees them together; the cyclic collector
    # would scan them over and over (a third of the time at 50k jobs). Nothing here makes cycles.
    enabled = gc.isenabled()
    gc.disable()
    idx = index or NodeIndex()
    try:
        return _Planner(snapshot, config, usage, now, policy, idx.get(config, snapshot.nodes), throttles,
                        reservations, drains, pool_gates).run()
    finally:
        if index is None:
            idx.clear()  # a one-off index: free its tally now, not at some later collection
        if enabled:
            gc.enable()


class _Planner(Ordering, Placing, RequestPlacing, Reserving, Draining, Guaranteeing, Downtimes, Limiting):
    """One plan: set-up from the tally, screening, the start/wait bookkeeping; ordering and
    placement come from the mixins."""

    def __init__(self, snapshot: Snapshot, config: Config, usage: Usage, now: float, policy: str,
                 index: NodeIndex, throttles: tuple[Throttle, ...] = (),
                 reservations: dict[str, Reservation] | None = None, drains: dict[str, Drain] | None = None,
                 pool_gates: dict[str, tuple[str, str]] | None = None) -> None:
        self.index = index
        self.snap = snapshot
        self.cfg = config
        self.usage = usage
        self.now = now
        self.policy = policy
        self.out = Plan(now=now, policy=policy, throttles=throttles)
        self.throttles = tuple(t for t in throttles if t.factor < 1.0)
        self._resv_setup(reservations)
        self.resv_on = self.resv_depth > 0
        self._drain_setup(drains)
        self.rank = 0
        self._class_cache: dict[tuple, Wait] = {}
        self._drain_memo: dict[tuple, str] = {}
        self._never_memo: dict[tuple, tuple[str, str] | None] = {}
        self.packing = index.packing
        self.pool_on = False
        self.pool_gate: dict = {}
        self._gates_prev = pool_gates or {}
        self._only: set[str] | None = None
        self._pool_refused: dict[str, int] = {}
        self.exclusive_packing = any(pc.policy == "exclusive" and pc.ttl > 0 for pc in config.packing)

    # -- set-up ---------------------------------------------------------------------------
    def _setup(self) -> None:
        """Bring the index's tally of running jobs up to date and take this plan's copies:
        counters to change, pools ranking on copy-on-write views, loads copied on first use."""
        idx = self.index
        t = self.tally = idx.tally(self.policy)
        self.queued, self.vo_queued = t.sync(self.snap)
        self.track = t.track
        self.keyf = t.keyf
        self.total_slots = idx.total_slots + t.off_used
        self.max_slots = idx.max_slots
        pools = t.pools
        for k, pool in pools.items():  # this plan's scratch rankings
            pool.ranking = t.rankings[k].view()
            classes = t.by_class[k]
            pool.by_class = {c: r.view() for c, r in classes.items()} if classes else {}
        self.pools = list(pools.values())
        self.pool_by_key = pools
        # Rules of a (queue, VO, group) stay the same while the server's queue limits do.
        qsig = tuple((q.name, q.max_running) for q in self.snap.queues if q.max_running is not None)
        self._rules_for, self._pools_for = t.scratch(qsig)
        self.loads = _Loads(idx, t.loads, pools)
        # Running counts this plan changes as it starts jobs, copied only where read:
        # slots per VO, group and user order the shares; jobs and cores per queue, VO,
        # group and user meet the total limits (`limits`).
        self.shares = self.policy == "mysched"
        self.runlim = RunLimits.of(self.snap)  # the server's and its queues' max_user_run ...
        self.limits = idx.total_limits or bool(qsig) or bool(self.throttles) or self.runlim is not None
        if self.shares:
            self.vo_slots = dict(t.vo_slots)
            self.group_slots = dict(t.group_slots)
            self.user_slots = dict(t.user_slots)
        self._limits_setup(t)
        self.used_before = t.used + t.off_used
        self.free_total = t.free
        self._reservations(t)
        self.overloaded: dict[str, str] = {}
        if self.cfg.node_load:
            self._skip_loaded()
        self._downtime_setup()

    def _skip_loaded(self) -> None:
        """Nodes whose pbs_mom reports too much load or too little free memory take no new
        job this cycle (LSF's loadSched)."""
        limits, by_name = self.cfg.node_load, self.index.by_name
        for node in self.snap.nodes:
            why = overloaded(node, limits)
            if why is None or node.name not in by_name:
                continue
            self.overloaded[node.name] = why
            self._close_node(node.name)
        self.out.node_load = dict(self.overloaded)

    def _wake(self, t: float) -> None:
        """Ask for a plan at `t`, when time alone could change this one. Not for now or
        earlier: this plan saw now (a reservation held by jobs running past their walltime
        starts "now" until they end, and asked for a cycle every min_interval meanwhile)."""
        if math.isfinite(t) and t > self.now and (self.out.wake_at is None or t < self.out.wake_at):
            self.out.wake_at = t

    # -- main -----------------------------------------------------------------------------
    def run(self) -> Plan:
        self._setup()
        self._setup_vos()
        eligible = self._screen()
        self._resv_restore(eligible)
        self._drain_restore(eligible)
        self._pool_setup(eligible)
        hot_jobs: list[tuple[Job, str]] = []
        if self.policy == "mysched":
            hot = self.cfg.hot
            hot_jobs = [(j, vo) for j, vo in eligible if j.queue in hot.queues or vo in hot.vos
                        or j.group in hot.groups or j.user in hot.users] if hot else []
            if hot_jobs:
                hot_ids = {j.id for j, _ in hot_jobs}
                eligible = [(j, vo) for j, vo in eligible if j.id not in hot_ids]
            self._resv_order = hot_jobs + eligible
            stopped = self._run_list(hot_jobs, "hot")
            if stopped:
                self._drain_list(eligible, stopped)
            else:
                self._run_shares(eligible)
        else:
            self._run_list(eligible, "easy" if self.policy == "easy" else "fifo")
        if self.shares:
            self._resv_longest_waiting(self._resv_order)
        if self.out.reservations:
            self._resv_check()
        self._drain_update()
        self._pool_finish()
        self._finish()
        return self.out

    def _setup_vos(self) -> None:
        self.total_usage = self.usage.total
        self.vo_slots0 = dict(self.tally.vo_slots)
        self.vo_facts = VOFacts(self.cfg, self.total_slots,
                                 self.index.vo_fixed if not self.tally.off_used else {}, self.usage,
                                 self.cfg.fairshare_eps, self.vo_slots0)
        self.started_by_vo: dict[str, int] = {}

    def _vo_priority(self, vo: str) -> float:
        """``share / (eps + u_hist + u_run)`` with the slots running now (this cycle's starts too)."""
        f = self.vo_facts[vo]
        ts = self.total_slots
        return f.share / (f.base + (self.vo_slots.get(vo, 0) / ts if ts else 0.0))  # (shares only)

    def _screen(self) -> list[tuple[Job, str]]:
        """Jobs that could start at all, in submit order; the rest get their reason now."""
        qstate = {q.name: q for q in self.snap.queues}
        self.qstate = qstate
        closed = {q.name for q in self.snap.queues if not q.started}  # enabled: submissions only
        max_slots = self.max_slots
        queued_state = JobState.QUEUED
        held = JobState.HELD
        out = []
        for job, vo in self.queued:
            st = job.state
            if st is not queued_state:
                self._wait(job, "held" if st is held else "not_queued", vo)
            elif closed and job.queue in closed:
                self._wait(job, "queue_disabled", vo)
            elif qstate and job.queue not in qstate:
                self._wait(job, "not_execution_queue", vo, detail=f"queue {job.queue} is not an execution queue "
                           "of the server")
            elif job.hazard:
                self._wait(job, "unsafe_request", vo, detail=job.hazard)
            elif job.request is not None and not job.request.simple:
                why = self._never_fits(job, vo, job.request)
                if why is not None:
                    self._wait(job, why[0], vo, detail=why[1])  # never_fits, or nodes_down
                else:
                    out.append((job.submit_time, job.id, job, vo))
            elif job.cores > max_slots:  # too_large, or nodes_down when a node down or offline is wide enough
                self._wait(job, *self._too_large(job, vo))
            else:
                out.append((job.submit_time, job.id, job, vo))
        out.sort()
        return [(j, vo) for _, _, j, vo in out]

    # -- bookkeeping ------------------------------------------------------------------------
    def _wait(self, job: Job, reason: str, vo: str, detail: str = "", nodes_rejected=None) -> None:
        self.rank += 1
        if (reason == "no_free_slot" or reason == "downtime") and wants_reservation(job):
            more = self._resv_on_refusal(job, vo)
            if more:
                detail = detail + more if detail else more[2:]
        self.out.waits[job.id] = Wait(job.id, reason, self.rank, self.vo_facts[vo].priority, detail, nodes_rejected)

    def _rules(self, queue: str, vo: str, group: str) -> _Rules:
        """The limits and candidate pools of a (queue, VO, group), worked out once (kept by
        the tally while the configuration and the server's queue limits stay the same)."""
        k = (queue, vo, group)
        got = self._rules_for.get(k)
        if got is not None:
            return got
        qmax, vmax, gmax, vnode, gnode, keys = self.index.rules(queue, vo, group)
        q = self.qstate.get(queue)
        if q is not None and q.max_running is not None:
            qmax = q.max_running if qmax is None else min(qmax, q.max_running)
        got = self._rules_for[k] = _Rules(qmax, vmax, gmax, vnode, gnode, self._pools(queue, vo, group))
        return got

    def _try(self, job: Job, vo: str, reason: str) -> str | None:
        """Place and record one job; return None if it starts, else its wait reason."""
        queue, group = job.queue, job.group
        rules = self._rules_for.get((queue, vo, group)) or self._rules(queue, vo, group)
        if self.limits:
            lim = self._limit_why(job, vo, rules)
            if lim is not None:
                self._wait(job, lim[0], vo, lim[1])
                return lim[0]
            if self.throttles:
                why = self._throttled(job, vo, rules)
                if why is not None:
                    self._wait(job, "external_load", vo, why)
                    return "external_load"
        pc = self.index.job_class(queue, vo, group, job.user) if self.packing else None
        if job.request is not None and not job.request.simple:
            return self._try_request(job, vo, reason, rules, pc)
        # with reservations, draining nodes or downtimes, whether a node takes it depends on its walltime too
        ckey = (queue, vo, group, job.cores, pc.name if pc else None,
                job.walltime if self.resv_nodes or self.draining or self.pool_on or self.dt_ahead else None)
        # a job's own reservation opens nodes to it alone: no wait of its class stands for it
        mine = job.id in self.out.reservations
        if self._class_cache and not mine:
            cached = self._class_cache.get(ckey)
            if cached is not None:
                self._wait(job, cached.reason, vo, cached.detail, cached.nodes_rejected)
                return cached.reason
        ld = None
        if self.pool_on:  # an owner within its guarantee goes to its pool's guarded hosts first
            self._only = self._pool_prefer(job, vo)
            if self._only:
                ld = self._place(job, vo, pc, rules)
            self._only = None
        if ld is None:
            ld = self._place(job, vo, pc, rules)
        if ld is None:
            w = self._explain(job, vo, pc)
            if not mine:
                self._class_cache[ckey] = w
            self._wait(job, w.reason, vo, w.detail, w.nodes_rejected)
            return w.reason
        self._commit(job, vo, pc, ld, reason)
        return None

    def _commit(self, job: Job, vo: str, pc: PackingClass | None, ld: Load, reason: str) -> None:
        self._take_node(job, vo, pc, ld, job.cores, 0, False)
        self._count_start(job, vo, ((ld.name, job.cores),), reason)

    def _commit_places(self, job: Job, vo: str, pc: PackingClass | None, places: list[tuple[Load, int]],
                       reason: str) -> None:
        """Start a whole request on its nodes."""
        req = job.request
        total = job.cores
        for ld, cores in places:
            self._take_node(job, vo, pc, ld, cores, req.mem_for(cores, total), req.exclusive,
                            req.vmem_for(cores, total))
        self._count_start(job, vo, tuple((ld.name, cores) for ld, cores in places), reason)

    def _take_node(self, job: Job, vo: str, pc: PackingClass | None, ld: Load, cores: int, mem: int,
                   excl: bool, vmem: int = 0) -> None:
        """Book `cores` of node `ld` for the job: its counts, packing reservation and rank."""
        packing = self.packing
        cls = (pc.name if pc else DEFAULT_CLASS) if packing else None
        t_users, t_vos, t_groups = self.track
        before = ld.free
        ld.add(job.user if t_users else None, vo if t_vos else None, job.group if t_groups else None, cls, cores,
               self.now, mem, excl, vmem)
        self.free_total -= before - ld.free
        name = ld.name
        if self.pool_on:
            self._pool_take(job, vo, name, cores, mem)
        if pc is not None and pc.policy == "exclusive" and pc.ttl > 0:
            ld.reserved = cls
            self.out.node_classes[name] = cls
            self._wake(self.now + pc.ttl)
        pool = ld.pool
        if ld.free > 0:
            k = self.keyf(ld)
            pool.ranking.put(name, k)
            if packing:
                for c, n in ld.classes.items():
                    if n and c in packing:
                        pool.by_class.setdefault(c, Ranking()).put(name, k)
        else:
            pool.ranking.drop(name)
            if packing:
                for c in ld.classes:
                    r = pool.by_class.get(c)
                    if r is not None:
                        r.drop(name)

    def _count_start(self, job: Job, vo: str, placement: tuple, reason: str) -> None:
        """The running counts the order reads, and the `Start` itself."""
        cores, group, user, queue = job.cores, job.group, job.user, job.queue
        if self.shares:
            d = self.vo_slots
            d[vo] = d.get(vo, 0) + cores
            d = self.group_slots
            d[group] = d.get(group, 0) + cores
            d = self.user_slots
            d[user] = d.get(user, 0) + cores
        if self.limits:
            self._count_limits(job, vo)
        d = self.started_by_vo
        d[vo] = d.get(vo, 0) + 1
        if job.id in self.out.reservations:
            self._release(job.id)
        if self.resv_on:  # what a reservation must wait for
            end = self.now + job.walltime if job.walltime is not None else math.inf
            self._started_ends.extend((name, end, c) for name, c in placement)
            self._started_ids.add(job.id)
        self.rank = rank = self.rank + 1
        self.out.starts.append(_new_start((job.id, placement, reason, vo, group, user, queue, cores, rank,
                                           self.vo_facts[vo].priority)))

    def _finish(self) -> None:
        out = self.out
        held = set(out.drains) | {n for r in out.reservations.values() for n in r.nodes}
        out.held_free = sum(self.loads[n].free for n in held)
        out.draining_now = frozenset(self.draining)
        out.drain_horizons = dict(self._drain_horizons()) if self.draining else {}
        out.total_slots = self.total_slots
        out.free_slots = max(0, self.free_total)
        out.used_slots = self.used_before
        names = set(self.cfg.vos) | set(self.vo_slots0) | set(self.vo_queued)
        out.vo_table = VOTable(names, self.vo_facts, dict(self.tally.vo_jobs), self.vo_queued, self.started_by_vo)
