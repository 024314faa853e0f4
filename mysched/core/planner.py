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
"""

from __future__ import annotations

import gc
import heapq
import math
from collections import deque
from typing import Iterable, NamedTuple

from mysched.core.config import Config, PackingClass
from mysched.core.model import Job, JobState, Snapshot
from mysched.core.plan import Plan, Start, VOStatus, Wait
from mysched.core.reasons import NODE_REJECTIONS
from mysched.core.admission import refusal
from mysched.core.index import NodeIndex
from mysched.core.tally import DEFAULT_CLASS, Load, Pool, Ranking, Tally
from mysched.core.usage import Usage

__all__ = ["POLICIES", "NodeIndex", "plan"]

_new_start = Start._make
_new_wait = Wait._make

POLICIES = ("mysched", "fifo", "least-loaded")


def plan(snapshot: Snapshot, config: Config, usage: Usage, now: float, *, policy: str = "mysched",
         index: NodeIndex | None = None) -> Plan:
    """Decide which queued jobs to start where, and why every other job waits.

    `index` is an optional cache of node facts (see `NodeIndex`); results are the same with
    or without it."""
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r}; choose one of {', '.join(POLICIES)}")
    # A cycle allocates ~10 objects per job and frees them together; the cyclic collector
    # would scan them over and over (a third of the time at 50k jobs). Nothing here makes cycles.
    enabled = gc.isenabled()
    gc.disable()
    idx = index or NodeIndex()
    try:
        return _Planner(snapshot, config, usage, now, policy, idx.get(config, snapshot.nodes)).run()
    finally:
        if index is None:
            idx.clear()  # a one-off index: free its tally now, not at some later collection
        if enabled:
            gc.enable()


# ---------------------------------------------------------------------------------------
# Per-node and ranking state


class _Loads(dict):
    """This plan's per-node loads, made on first use: a copy of the tally's load for a node
    that runs jobs, a fresh one for an idle node."""

    def __init__(self, index: NodeIndex, base: dict[str, Load], pools: dict) -> None:
        super().__init__()
        self.index = index
        self.base = base
        self.pools = pools

    def __missing__(self, name: str) -> Load:
        b = self.base.get(name)
        if b is not None:
            load = b.copy()
        else:
            node, _ntype, key, usable, _counted = self.index.by_name[name]
            load = Load(node, key, usable)
        load.pool = self.pools[load.key]
        self[name] = load
        return load


class _Rules(NamedTuple):
    """Limits and candidate pools shared by the jobs of one (queue, VO, group)."""

    queue_max: int | None
    vo_max: int | None
    group_max: int | None
    vo_node_max: int | None
    group_node_max: int | None
    pools: list[Pool]


class _Heap:
    """A min-heap of names with lazily invalidated keys."""

    __slots__ = ("heap", "current")

    def __init__(self) -> None:
        self.heap: list[tuple] = []
        self.current: dict[str, tuple] = {}

    def push(self, name: str, key: tuple) -> None:
        self.current[name] = key
        heapq.heappush(self.heap, (key, name))

    def peek(self) -> str | None:
        h = self.heap
        while h:
            key, name = h[0]
            if self.current.get(name) == key:
                return name
            heapq.heappop(h)
        return None

    def remove(self, name: str) -> None:
        self.current.pop(name, None)

    def ordered(self) -> list[str]:
        return sorted(self.current, key=lambda n: (self.current[n], n))


class _UserQ:
    __slots__ = ("jobs",)

    def __init__(self) -> None:
        self.jobs: deque[Job] = deque()


class _GroupQ:
    __slots__ = ("users", "heap")

    def __init__(self) -> None:
        self.users: dict[str, _UserQ] = {}
        self.heap = _Heap()


class _VOQ:
    __slots__ = ("groups", "heap")

    def __init__(self) -> None:
        self.groups: dict[str, _GroupQ] = {}
        self.heap = _Heap()


# ---------------------------------------------------------------------------------------


class _Planner:
    def __init__(self, snapshot: Snapshot, config: Config, usage: Usage, now: float, policy: str,
                 index: NodeIndex) -> None:
        self.index = index
        self.snap = snapshot
        self.cfg = config
        self.usage = usage
        self.now = now
        self.policy = policy
        self.out = Plan(now=now, policy=policy)
        self.rank = 0
        self._class_cache: dict[tuple, Wait] = {}
        self._drain_memo: dict[tuple, str] = {}
        self.packing = index.packing
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
        self.total_slots = idx.total_slots
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
        # slots per VO, group and user order the shares; jobs per queue, VO and group
        # meet the total limits.
        self.shares = self.policy == "mysched"
        self.limits = idx.total_limits or bool(qsig)
        if self.shares:
            self.vo_slots = dict(t.vo_slots)
            self.group_slots = dict(t.group_slots)
            self.user_slots = dict(t.user_slots)
        if self.limits:
            self.vo_jobs = dict(t.vo_jobs)
            self.group_jobs = dict(t.group_jobs)
            self.queue_jobs = dict(t.queue_jobs)
        self.used_before = t.used
        self.free_total = t.free
        self._reservations(t)

    def _reservations(self, t: Tally) -> None:
        """Exclusive packing: a node stays reserved for the class of its latest class job
        until that job's start plus the class TTL."""
        if not self.exclusive_packing:
            return
        packing = self.packing
        for name, base in t.loads.items():
            best = None
            for cls in base.class_times:
                pc = packing.get(cls)
                if pc is None or pc.policy != "exclusive" or not base.classes.get(cls):
                    continue
                start = base.class_start(cls)
                if start + pc.ttl > self.now and (best is None or (start, cls) > (best[1], best[0])):
                    best = (cls, start)
            if best is not None:
                self.loads[name].reserved = best[0]
                self.out.node_classes[name] = best[0]
                self._wake(best[1] + packing[best[0]].ttl)

    def _wake(self, t: float) -> None:
        if math.isfinite(t) and (self.out.wake_at is None or t < self.out.wake_at):
            self.out.wake_at = t

    # -- main -----------------------------------------------------------------------------
    def run(self) -> Plan:
        self._setup()
        self._setup_vos()
        eligible = self._screen()
        if self.policy == "mysched":
            hot = self.cfg.hot
            hot_jobs = [(j, vo) for j, vo in eligible if j.queue in hot.queues or vo in hot.vos
                        or j.group in hot.groups or j.user in hot.users] if hot else []
            if hot_jobs:
                hot_ids = {j.id for j, _ in hot_jobs}
                eligible = [(j, vo) for j, vo in eligible if j.id not in hot_ids]
            stopped = self._run_list(hot_jobs, "hot")
            if stopped:
                self._drain_list(eligible, stopped)
            else:
                self._run_shares(eligible)
        else:
            self._run_list(eligible, "fifo")
        self._finish()
        return self.out

    def _setup_vos(self) -> None:
        self.total_usage = self.usage.total
        self.vo_slots0 = dict(self.tally.vo_slots)
        self.vo_facts = _VOFacts(self.cfg, self.total_slots, self.index.vo_fixed, self.usage,
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
        closed = {q.name for q in self.snap.queues if not (q.enabled and q.started)}
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
            elif job.cores > max_slots:
                self._wait(job, "too_large", vo, detail=f"asks for {job.cores} cores; largest usable node "
                           f"has {max_slots}")
            else:
                out.append((job.submit_time, job.id, job, vo))
        out.sort()
        return [(j, vo) for _, _, j, vo in out]

    # -- bookkeeping ------------------------------------------------------------------------
    def _wait(self, job: Job, reason: str, vo: str, detail: str = "", nodes_rejected=None) -> None:
        self.rank += 1
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

    def _limit(self, job: Job, vo: str, rules: _Rules | None = None) -> str | None:
        """A total limit the job would exceed, or None."""
        if not self.limits:
            return None
        r = rules or self._rules(job.queue, vo, job.group)
        if r.queue_max is not None and self.queue_jobs.get(job.queue, 0) >= r.queue_max:
            return "queue_max_running"
        if r.vo_max is not None and self.vo_jobs.get(vo, 0) >= r.vo_max:
            return "vo_limit"
        if r.group_max is not None and self.group_jobs.get(job.group, 0) >= r.group_max:
            return "group_limit"
        return None

    def _try(self, job: Job, vo: str, reason: str) -> str | None:
        """Place and record one job; return None if it starts, else its wait reason."""
        queue, group = job.queue, job.group
        rules = self._rules_for.get((queue, vo, group)) or self._rules(queue, vo, group)
        if self.limits:
            lim = self._limit(job, vo, rules)
            if lim is not None:
                self._wait(job, lim, vo)
                return lim
        pc = self.index.job_class(queue, vo, group, job.user) if self.packing else None
        if self._class_cache:
            cached = self._class_cache.get((queue, vo, group, job.cores, pc.name if pc else None))
            if cached is not None:
                self._wait(job, cached.reason, vo, cached.detail, cached.nodes_rejected)
                return cached.reason
        ld = self._place(job, vo, pc, rules)
        if ld is None:
            w = self._explain(job, vo, pc)
            self._class_cache[(queue, vo, group, job.cores, pc.name if pc else None)] = w
            self._wait(job, w.reason, vo, w.detail, w.nodes_rejected)
            return w.reason
        self._commit(job, vo, pc, ld, reason)
        return None

    def _commit(self, job: Job, vo: str, pc: PackingClass | None, ld: Load, reason: str) -> None:
        packing = self.packing
        cls = (pc.name if pc else DEFAULT_CLASS) if packing else None
        t_users, t_vos, t_groups = self.track
        cores, group, user, queue = job.cores, job.group, job.user, job.queue
        ld.add(user if t_users else None, vo if t_vos else None, group if t_groups else None, cls, cores, self.now)
        self.free_total -= cores
        name = ld.name
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
        if self.shares:
            d = self.vo_slots
            d[vo] = d.get(vo, 0) + cores
            d = self.group_slots
            d[group] = d.get(group, 0) + cores
            d = self.user_slots
            d[user] = d.get(user, 0) + cores
        if self.limits:
            d = self.vo_jobs
            d[vo] = d.get(vo, 0) + 1
            d = self.group_jobs
            d[group] = d.get(group, 0) + 1
            d = self.queue_jobs
            d[queue] = d.get(queue, 0) + 1
        d = self.started_by_vo
        d[vo] = d.get(vo, 0) + 1
        self.rank = rank = self.rank + 1
        self.out.starts.append(_new_start((job.id, ((name, cores),), reason, vo, group, user, queue, cores, rank,
                                           self.vo_facts[vo].priority)))

    # -- placement --------------------------------------------------------------------------
    def _pools(self, queue: str, vo: str, group: str) -> list[Pool]:
        """The pools a job of the (queue, VO, group) may use."""
        k = (queue, vo, group)
        got = self._pools_for.get(k)
        if got is None:
            by_key = self.pool_by_key
            got = self._pools_for[k] = [by_key[pk] for pk in self.index.rules(queue, vo, group)[5]]
        return got

    def _scan(self, keys: list[tuple], job: Job, vo: str, cls: str | None, rules: _Rules,
              avoid: str | None = None) -> tuple | None:
        """The best node along a sorted ranking for `job`, as (sort key, load), or None.

        For mysched the first node without a job of the user wins (the ranking is by
        diversity); failing that the one with the fewest of the user's jobs. `avoid`: skip
        nodes already running that class."""
        loads = self.loads
        cores = job.cores
        vmax, gmax = rules.vo_node_max, rules.group_node_max
        group = job.group
        fast = self.policy != "mysched"
        user = job.user
        fallback = None
        for key in keys:
            ld = loads[key[-1]]
            if (ld.free < cores or (ld.reserved is not None and ld.reserved != cls)
                    or (vmax is not None and ld.vos.get(vo, 0) >= vmax)
                    or (gmax is not None and ld.groups.get(group, 0) >= gmax)
                    or (avoid is not None and ld.classes.get(avoid, 0) > 0)):
                continue
            if fast:
                return (key, ld)
            uj = ld.users.get(user, 0)
            if uj == 0:
                return ((0,) + key, ld)
            fk = (uj, -len(ld.users) / (ld.njobs + 1), ld.used, ld.name)
            if fallback is None or fk < fallback[0]:
                fallback = (fk, ld)
        return fallback

    def _place(self, job: Job, vo: str, pc: PackingClass | None, rules: _Rules) -> Load | None:
        cls = pc.name if pc else None
        pools = rules.pools
        scan = self._scan
        if pc is None and len(pools) == 1:
            got = scan(pools[0].ranking.keys, job, vo, None, rules)
            return got[1] if got is not None else None
        best = None
        if pc is None or pc.policy == "none":
            # Default jobs: no preference. Spreading class: prefer nodes without the class.
            for avoid in ((cls, None) if pc is not None else (None,)):
                for pool in pools:
                    got = scan(pool.ranking.keys, job, vo, cls, rules, avoid)
                    if got is not None and (best is None or got[0] < best[0]):
                        best = got
                if best is not None:
                    return best[1]
            return None
        # relaxed / exclusive: prefer nodes already running the class.
        for pool in pools:
            r = pool.by_class.get(cls)
            got = scan(r.keys, job, vo, cls, rules) if r is not None else None
            if got is not None and (best is None or got[0] < best[0]):
                best = got
        if best is not None:
            return best[1]
        for pool in pools:
            got = scan(pool.ranking.keys, job, vo, cls, rules)
            if got is not None and (best is None or got[0] < best[0]):
                best = got
        return best[1] if best is not None else None

    def _explain(self, job: Job, vo: str, pc: PackingClass | None) -> Wait:
        """Count, over all nodes, why each one was rejected for this job."""
        cores = job.cores
        cls = pc.name if pc else None
        eligible = {id(p) for p in self._pools(job.queue, vo, job.group)}
        refusals: dict[tuple, str] = {}
        vmax = self.cfg.vos.get(vo)
        vmax = vmax.max_per_node if vmax is not None else None
        gmax = self.cfg.groups.get(job.group)
        gmax = gmax.max_per_node if gmax is not None else None
        counts: dict[str, int] = {}
        loads, base, pools = self.loads, self.tally.loads, self.pool_by_key
        for name in self.index.by_name:
            ld = loads.get(name) or base.get(name) or loads[name]  # read only: no copy
            pool = pools[ld.key]
            if not ld.usable:
                r = "node_down"
            elif ld.free < cores:
                r = "no_free_slot"
            elif id(pool) not in eligible:
                r = refusals.get(ld.key)
                if r is None:
                    r = refusals[ld.key] = refusal(self.cfg, ld.key, job.queue)
            elif ld.reserved is not None and ld.reserved != cls:
                r = "packing"
            elif vmax is not None and ld.vos.get(vo, 0) >= vmax:
                r = "vo_node_limit"
            elif gmax is not None and ld.groups.get(job.group, 0) >= gmax:
                r = "group_node_limit"
            else:
                r = "no_free_slot"
            counts[r] = counts.get(r, 0) + 1
        roomy = {k: v for k, v in counts.items() if k not in ("node_down", "no_free_slot")}
        if roomy:
            reason = max(sorted(roomy), key=lambda k: roomy[k])
            detail = f"{roomy[reason]} node(s) with room rejected: {NODE_REJECTIONS.get(reason, reason)}"
        else:
            reason = "no_free_slot"
            detail = f"no usable node has {cores} free core(s)"
        return Wait(job.id, reason, 0, 0.0, detail, counts)

    # -- ordering ---------------------------------------------------------------------------
    def _run_list(self, jobs: list[tuple[Job, str]], reason: str) -> str | None:
        """Try jobs in the given order; return why the cycle stopped early, if it did."""
        limit = self.cfg.max_starts_per_cycle
        for i, (job, vo) in enumerate(jobs):
            if len(self.out.starts) >= limit:
                self._drain_list(jobs[i:], "start_limit")
                return "start_limit"
            if self.free_total <= 0:
                self._drain_list(jobs[i:], "no_free_slot")
                return "no_free_slot"
            self._try(job, vo, reason)
        return None

    def _drain_list(self, jobs: Iterable[tuple[Job, str]], reason: str) -> None:
        """Everything left waits: for a limit it hits, else for `reason` (nothing starts any more)."""
        waits = self.out.waits
        facts = self.vo_facts
        rank = self.rank
        why = self._drain_reason if self.limits else None
        for job, vo in jobs:
            rank += 1
            waits[job.id] = _new_wait((job.id, why(job, vo, reason) if why else reason, rank, facts[vo].priority,
                                       "", None))
        self.rank = rank

    def _drain_reason(self, job: Job, vo: str, reason: str) -> str:
        """A limit the job hits, else `reason`; memoised, since nothing starts any more."""
        key = (job.queue, vo, job.group)
        memo = self._drain_memo
        got = memo.get(key)
        if got is None:
            got = memo[key] = self._limit(job, vo) or ""
        return got or reason

    def _vo_key(self, vo: str) -> tuple:
        f = self.vo_facts[vo]
        running = self.vo_slots.get(vo, 0)
        if running < f.guarantee:
            return (0, running / f.guarantee, vo)
        return (1, -self._vo_priority(vo), f.usage_fraction, vo)

    def _sub_key(self, usage: float, running: int, name: str) -> tuple:
        u = usage / self.total_usage if self.total_usage > 0 else 0.0
        r = running / self.total_slots if self.total_slots else 0.0
        return (u + r, name)

    def _run_shares(self, eligible: list[tuple[Job, str]]) -> None:
        """`eligible` comes in submit order (from `_screen`)."""
        vos: dict[str, _VOQ] = {}
        for job, vo in eligible:
            vq = vos.get(vo)
            if vq is None:
                vq = vos[vo] = _VOQ()
            gq = vq.groups.get(job.group)
            if gq is None:
                gq = vq.groups[job.group] = _GroupQ()
            uq = gq.users.get(job.user)
            if uq is None:
                uq = gq.users[job.user] = _UserQ()
            uq.jobs.append(job)
        ug, uu = self.usage.group, self.usage.user
        heap = _Heap()
        for vo, vq in vos.items():
            for g, gq in vq.groups.items():
                for u in gq.users:
                    gq.heap.push(u, self._sub_key(uu.get(u, 0.0), self.user_slots.get(u, 0), u))
                vq.heap.push(g, self._sub_key(ug.get(g, 0.0), self.group_slots.get(g, 0), g))
            heap.push(vo, self._vo_key(vo))
        limit = self.cfg.max_starts_per_cycle
        while True:
            vo = heap.peek()
            if vo is None:
                return
            if len(self.out.starts) >= limit:
                self._drain_tree(vos, heap, "start_limit")
                return
            if self.free_total <= 0:
                self._drain_tree(vos, heap, "no_free_slot")
                return
            vq = vos[vo]
            g = vq.heap.peek()
            gq = vq.groups[g]
            u = gq.heap.peek()
            uq = gq.users[u]
            job = uq.jobs.popleft()
            was_below = self.vo_slots.get(vo, 0) < self.vo_facts[vo].guarantee
            why = self._try(job, vo, "share" if was_below else "fairshare")
            if why == "vo_limit":
                self._drain_vo(vq, vo, "vo_limit")
                heap.remove(vo)
                continue
            if why == "group_limit":
                self._drain_group(gq, vo, "group_limit")
                vq.heap.remove(g)
                del vq.groups[g]
            elif not uq.jobs:
                gq.heap.remove(u)
                del gq.users[u]
                if not gq.users:
                    vq.heap.remove(g)
                    del vq.groups[g]
            if why is None:
                if u in gq.users:
                    gq.heap.push(u, self._sub_key(uu.get(u, 0.0), self.user_slots.get(u, 0), u))
                if g in vq.groups:
                    vq.heap.push(g, self._sub_key(ug.get(g, 0.0), self.group_slots.get(g, 0), g))
            if not vq.groups:
                heap.remove(vo)
            elif why is None:
                heap.push(vo, self._vo_key(vo))

    def _drain_group(self, gq: _GroupQ, vo: str, reason: str) -> None:
        for u in gq.heap.ordered():
            jobs = gq.users[u].jobs
            self._drain_list([(job, vo) for job in jobs], reason)
            jobs.clear()

    def _drain_vo(self, vq: _VOQ, vo: str, reason: str) -> None:
        for g in vq.heap.ordered():
            self._drain_group(vq.groups[g], vo, reason)
        vq.groups.clear()

    def _drain_tree(self, vos: dict[str, _VOQ], heap: _Heap, reason: str) -> None:
        for vo in heap.ordered():
            self._drain_vo(vos[vo], vo, reason)
            heap.remove(vo)

    def _finish(self) -> None:
        out = self.out
        out.total_slots = self.total_slots
        out.free_slots = max(0, self.free_total)
        out.used_slots = self.used_before
        names = set(self.cfg.vos) | set(self.vo_slots0) | set(self.vo_queued)
        out.vo_table = _VOTable(names, self.vo_facts, dict(self.tally.vo_jobs), self.vo_queued, self.started_by_vo)


class _VOFact(NamedTuple):
    share: float
    guarantee: int
    usage: float
    usage_fraction: float
    base: float
    """``eps + u_hist``: the priority's denominator without the running slots."""
    priority: float
    """At the start of the cycle."""


class _VOFacts(dict):
    """A VO's share, guarantee and priority, worked out the first time the plan needs them
    (a cycle that starts jobs of two VOs out of twenty looks at two).

    Holds no reference to the index: a `Plan` keeps this until its `vos` is read, and must
    not keep the whole tally alive with it."""

    def __init__(self, config: Config, total_slots: int, fixed: dict[str, tuple[float, int]], usage: Usage,
                 eps: float, running: dict[str, int]) -> None:
        super().__init__()
        self.config = config
        self.total_slots = total_slots
        self.fixed = fixed
        self.usage = usage.vo
        self.total = usage.total
        self.eps = eps
        self.running = running

    def __missing__(self, vo: str) -> _VOFact:
        ts = self.total_slots
        got = self.fixed.get(vo)
        if got is None:  # share and guarantee depend on the configuration and farm size only
            v = self.config.vo(vo)
            got = self.fixed[vo] = (v.share_fraction(ts), v.guarantee(ts))
        share, guarantee = got
        u = self.usage.get(vo, 0.0)
        uf = u / self.total if self.total > 0 else 0.0
        base = self.eps + uf
        f = self[vo] = _VOFact(share, guarantee, u, uf, base,
                               share / (base + (self.running.get(vo, 0) / ts if ts else 0.0)))
        return f


class _VOTable:
    """Makes `Plan.vos` when it is first read (the simulator seldom reads it)."""

    __slots__ = ("names", "facts", "jobs", "queued", "started")

    def __init__(self, names: set[str], facts: _VOFacts, jobs: dict[str, int], queued: dict[str, int],
                 started: dict[str, int]) -> None:
        self.names, self.facts, self.jobs, self.queued, self.started = names, facts, jobs, queued, started

    def __call__(self) -> dict[str, VOStatus]:
        out = {}
        running = self.facts.running
        for name in sorted(self.names):
            f = self.facts[name]
            out[name] = VOStatus(name, f.share, f.guarantee, running.get(name, 0), self.jobs.get(name, 0),
                                 self.queued.get(name, 0), f.usage, f.usage_fraction, f.priority,
                                 self.started.get(name, 0))
        return out
