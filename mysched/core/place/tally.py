"""The running jobs, reduced to what a plan reads, kept from one cycle to the next.

A farm changes little between two cycles: a few jobs end, a few start. Re-deriving
per-node counts and node rankings from every running job in every cycle would make a
cycle cost what runs, not what changed. So a `NodeIndex` (`mysched.core.place.nodeindex`) keeps node
facts and a `Tally` of the running jobs; each plan brings the tally up to
date with its snapshot -- adding the jobs it has not counted, removing those that are
gone -- and works on copies of the parts it changes. Results are the same as from a
fresh index (tests check it on random sequences of snapshots).
"""

from __future__ import annotations

import bisect
import math
from typing import TYPE_CHECKING, Iterable

from mysched.core.model.batch import Changes, Job, JobState, Node, NodeState, Snapshot
from mysched.core.place.score import key_fn, keeps_whole

if TYPE_CHECKING:
    from mysched.core.place.nodeindex import NodeIndex

DEFAULT_CLASS = "default"
RUNNING = (JobState.RUNNING, JobState.EXITING, JobState.SUSPENDED)
"""States whose jobs the tally counts: they hold their cores (`JobState.holds_slots`)."""
WAITING = (JobState.QUEUED, JobState.HELD, JobState.WAITING, JobState.TRANSIT)


class Load:
    """Counts of the jobs on one node. A None user, VO, group or class is one nothing
    reads in this plan (no diversity score, no per-node limit, no packing): not counted."""

    __slots__ = ("name", "slots", "cap", "free", "used", "njobs", "users", "vos", "groups", "classes",
                 "class_times", "key", "pool", "reserved", "usable", "mem", "mem_used", "excl", "vmem", "vmem_used")

    def __init__(self, node: Node, key: tuple, usable: bool) -> None:
        self.name = node.name
        self.slots = node.slots
        self.cap = node.slots if node.state is NodeState.FREE else 0
        """Slots the scheduler may fill when the node runs nothing."""
        self.free = self.cap
        self.used = 0
        self.njobs = 0
        self.users: dict[str, int] = {}
        self.vos: dict[str, int] = {}
        self.groups: dict[str, int] = {}
        self.classes: dict[str, int] = {}
        self.class_times: dict[str, list[float]] = {}
        """Start times of the class jobs (exclusive packing reservations follow the latest)."""
        self.key = key
        self.pool = None
        self.reserved: str | None = None
        self.usable = usable
        self.mem = node.mem
        """Physical memory in bytes (None: unknown, not checked)."""
        self.mem_used = 0
        """Memory the jobs here asked for."""
        self.excl = 0
        """Jobs here that asked for their nodes alone: while one runs, nothing else fits."""
        self.vmem = node.vmem
        """Memory plus swap in bytes (None: unknown, not checked)."""
        self.vmem_used = 0

    def copy(self) -> "Load":
        c = Load.__new__(Load)
        c.name, c.slots, c.cap, c.free, c.used, c.njobs = self.name, self.slots, self.cap, self.free, self.used, self.njobs
        c.users, c.vos, c.groups, c.classes = dict(self.users), dict(self.vos), dict(self.groups), dict(self.classes)
        c.class_times = {k: list(v) for k, v in self.class_times.items()} if self.class_times else {}
        c.key, c.pool, c.reserved, c.usable = self.key, None, None, self.usable
        c.mem, c.mem_used, c.excl = self.mem, self.mem_used, self.excl
        c.vmem, c.vmem_used = self.vmem, self.vmem_used
        return c

    def mem_free(self) -> float:
        """Memory not yet asked for (infinite where the node's memory is unknown)."""
        return float("inf") if self.mem is None else self.mem - self.mem_used

    def vmem_free(self) -> float:
        """Virtual memory not yet asked for (infinite where unknown)."""
        return float("inf") if self.vmem is None else self.vmem - self.vmem_used

    def add(self, user: str | None, vo: str | None, group: str | None, cls: str | None, cores: int,
            start: float | None, mem: int = 0, excl: bool = False, vmem: int = 0) -> None:
        self.used += cores
        self.njobs += 1
        if mem:
            self.mem_used += mem
        if vmem:
            self.vmem_used += vmem
        if excl:
            self.excl += 1
        self.free = 0 if self.excl else max(0, self.cap - self.used)
        if user is not None:
            self.users[user] = self.users.get(user, 0) + 1
        if vo is not None:
            self.vos[vo] = self.vos.get(vo, 0) + 1
        if group is not None:
            self.groups[group] = self.groups.get(group, 0) + 1
        if cls is not None:
            self.classes[cls] = self.classes.get(cls, 0) + 1
            if start is not None:
                self.class_times.setdefault(cls, []).append(start)

    def remove(self, user: str | None, vo: str | None, group: str | None, cls: str | None, cores: int,
               start: float | None, mem: int = 0, excl: bool = False, vmem: int = 0) -> None:
        """Undo an `add` with the same arguments."""
        self.used -= cores
        self.njobs -= 1
        if mem:
            self.mem_used -= mem
        if vmem:
            self.vmem_used -= vmem
        if excl:
            self.excl -= 1
        self.free = 0 if self.excl else max(0, self.cap - self.used)
        for d, k in ((self.users, user), (self.vos, vo), (self.groups, group), (self.classes, cls)):
            if k is not None:
                _take(d, k, 1)
        if cls is not None and start is not None:
            times = self.class_times[cls]
            times.remove(start)
            if not times:
                del self.class_times[cls]

    def free_after(self, ended: int) -> int:
        """Cores free once jobs holding `ended` of its used cores have ended. The node's
        slots count, whatever TORQUE's state says now: a node it reports ``job-exclusive``
        (every core assigned, `cap` 0) frees its cores as its jobs end like any other; one
        running a job that asked for its node alone frees them only when all have ended."""
        left = self.used - ended
        if self.excl and left > 0:
            return 0
        return max(0, self.slots - left) if self.usable else 0

    def room_at(self, cores: int, ends: Iterable[tuple[float, int]], now: float) -> float:
        """The earliest time it has `cores` free, by `ends` -- (end, cores) of what runs here,
        soonest first (inf: never, by what is known)."""
        if not self.usable or self.slots < cores:
            return math.inf
        if self.free >= cores:
            return now
        ended = 0
        for end, c in ends:
            ended += c
            if self.free_after(ended) >= cores:
                return end
        return math.inf

    def class_start(self, cls: str) -> float | None:
        times = self.class_times.get(cls)
        return max(times) if times else None


class Ranking:
    """Node names kept sorted by a score tuple whose last item is the node name.

    A plan ranks on a `view` of the tally's ranking and copies it only when it changes it."""

    __slots__ = ("keys", "of", "owned")

    def __init__(self, keys: list[tuple] | None = None, of: dict[str, tuple] | None = None,
                 owned: bool = True) -> None:
        self.keys: list[tuple] = keys if keys is not None else []
        self.of: dict[str, tuple] = of if of is not None else {}
        self.owned = owned

    def view(self) -> "Ranking":
        return Ranking(self.keys, self.of, owned=False)

    def _own(self) -> None:
        self.keys = list(self.keys)
        self.of = dict(self.of)
        self.owned = True

    def put(self, name: str, key: tuple) -> None:
        old = self.of.get(name)
        if old == key:
            return
        if not self.owned:
            self._own()
        if old is not None:
            del self.keys[bisect.bisect_left(self.keys, old)]
        self.of[name] = key
        bisect.insort(self.keys, key)

    def drop(self, name: str) -> None:
        if name not in self.of:
            return
        if not self.owned:
            self._own()
        old = self.of.pop(name)
        del self.keys[bisect.bisect_left(self.keys, old)]


class Pool:
    """Nodes alike for eligibility: same type, same queue assignment. A plan ranks its
    nodes on views of the tally's rankings (`ranking`, `by_class` are its scratch)."""

    __slots__ = ("ntype", "queues", "owners", "ranking", "by_class")

    def __init__(self, key: tuple) -> None:
        self.ntype, self.queues, self.owners = key
        self.ranking = Ranking()
        self.by_class: dict[str, Ranking] = {}


class Tally:
    """The running jobs of the last snapshot, reduced to what a plan reads: per-node loads
    (only nodes that run something), running slots and jobs per VO, group, user and queue,
    and each pool's nodes ranked by placement score (overall and per packing class).

    `sync` brings it up to date with a snapshot. Plans never change it: they copy the
    loads they touch and rank on copy-on-write views."""

    def __init__(self, index: NodeIndex, policy: str) -> None:
        cfg = index.config
        self.index = index
        self.policy = policy
        self.keyf = key_fn(policy, keeps_whole(cfg))
        self.track = (policy == "mysched",
                      any(v.max_per_node is not None for v in cfg.vos.values()),
                      any(g.max_per_node is not None for g in cfg.groups.values()))
        """Which per-node counts plans read: users for the diversity score, VOs and groups
        only where a per-node limit exists."""
        self.packing = index.packing
        self.jobs: dict[str, list] = {}
        """Counted running jobs: id -> [job, VO, packing class, generation last seen]."""
        self.gen = 0
        self.token: object = None
        """`Snapshot.token` of the snapshot synced last."""
        self.loads: dict[str, Load] = {}
        self.vo_slots: dict[str, int] = {}
        self.vo_jobs: dict[str, int] = {}
        self.group_jobs: dict[str, int] = {}
        self.group_slots: dict[str, int] = {}
        self.user_slots: dict[str, int] = {}
        self.queue_jobs: dict[str, int] = {}
        self.queue_cores: dict[str, int] = {}
        self.user_jobs: dict[str, int] = {}
        self.rankings = {k: index.empty_ranking(policy, k) for k in index.pool_keys}
        self.by_class: dict[tuple, dict[str, Ranking]] = {k: {} for k in index.pool_keys}
        self.pools = {k: Pool(k) for k in index.pool_keys}
        self._scratch: dict[tuple, tuple[dict, dict]] = {}
        self.used = 0
        """Slots in use on counted nodes."""
        self.off_used = 0
        """Slots still in use on nodes the farm does not count (down, offline): they are in use
        until their jobs end, so they count in the farm's total as in the VOs' running slots."""
        self.free = index.idle_free
        """Free slots on usable nodes."""

    def scratch(self, qsig: tuple) -> tuple[dict, dict]:
        """Caches a plan fills with per-(queue, VO, group) rules and pools; they hold while
        the server's queue limits (`qsig`) are the same."""
        got = self._scratch.get(qsig)
        if got is None:
            if len(self._scratch) > 16:
                self._scratch.clear()
            got = self._scratch[qsig] = ({}, {})
        return got

    # -- bringing it up to date -------------------------------------------------------------
    def sync(self, snapshot: Snapshot) -> tuple[list[tuple[Job, str]], dict[str, int]]:
        """Count the snapshot's running jobs; return its waiting jobs (with their VO) and
        the number waiting per VO.

        When the snapshot lists its changes since the one synced last, only those are
        applied. Otherwise every running job is looked at: one counted before as the same
        object or an equal one (a TORQUE snapshot makes new objects every cycle) costs a
        look-up, anything else is added, and whatever was counted but not seen again is
        removed."""
        ch = snapshot.changes
        last, self.token = self.token, snapshot.token
        if ch is not None and last is not None and ch.since is last:
            return self._sync_changes(ch)
        jobs = snapshot.jobs
        counted = self.jobs
        known = counted.get
        vo_of = self.index.vo_of
        group_vo = self.index.group_vo
        self.gen = gen = self.gen + 1
        queued: list[tuple[Job, str]] = []
        vo_queued: dict[str, int] = {}
        fresh: list[Job] = []
        seen = 0
        r, e, s = RUNNING
        for job in jobs:
            st = job.state
            if st is r or st is e or st is s:
                rec = known(job.id)
                if rec is not None and (rec[0] is job or rec[0] == job):
                    if rec[3] != gen:
                        rec[3] = gen
                        seen += 1
                else:
                    fresh.append(job)
            elif st in WAITING:
                vo = job.vo or group_vo.get(job.group) or vo_of(job.group)
                vo_queued[vo] = vo_queued.get(vo, 0) + 1
                queued.append((job, vo))
        if seen < len(counted):  # jobs ended, or changed (a new object under a known id)
            gone = [jid for jid, rec in counted.items() if rec[3] != gen]
            self._apply([counted.pop(jid) for jid in gone], -1)
        self._add(fresh)
        return queued, vo_queued

    def _sync_changes(self, ch: Changes) -> tuple[list[tuple[Job, str]], dict[str, int]]:
        counted = self.jobs
        gone = [counted.pop(jid) for jid in ch.stopped if jid in counted]
        gone += [counted.pop(j.id) for j in ch.started if j.id in counted]
        self._apply(gone, -1)
        self._add(ch.started)
        vo_of = self.index.vo_of
        group_vo = self.index.group_vo
        queued: list[tuple[Job, str]] = []
        vo_queued: dict[str, int] = {}
        for job in ch.waiting:
            vo = job.vo or group_vo.get(job.group) or vo_of(job.group)
            vo_queued[vo] = vo_queued.get(vo, 0) + 1
            queued.append((job, vo))
        return queued, vo_queued

    def _add(self, fresh: Iterable[Job]) -> None:
        counted = self.jobs
        packing = self.packing
        job_class = self.index.job_class
        vo_of = self.index.vo_of
        gen = self.gen
        add = []
        for job in fresh:
            if job.id in counted:
                continue  # the same id twice in one snapshot: counted once
            vo = job.vo or vo_of(job.group)
            if packing:
                pc = job_class(job.queue, vo, job.group, job.user)
                cls = pc.name if pc else DEFAULT_CLASS
            else:
                cls = None
            rec = counted[job.id] = [job, vo, cls, gen]
            add.append(rec)
        self._apply(add, +1)

    def _apply(self, recs: list[list], sign: int) -> None:
        """Add (sign +1) or remove (-1) running jobs."""
        if not recs:
            return
        by_name = self.index.by_name
        idle = self.index.usable_free
        t_users, t_vos, t_groups = self.track
        touched: dict[str, Load] = {}
        loads = self.loads
        vo_slots, vo_jobs, group_jobs = self.vo_slots, self.vo_jobs, self.group_jobs
        group_slots, user_slots, queue_jobs = self.group_slots, self.user_slots, self.queue_jobs
        queue_cores, user_jobs = self.queue_cores, self.user_jobs
        used, free, off = self.used, self.free, self.off_used
        for job, vo, cls, _ in recs:
            cores, group, user = job.cores, job.group, job.user
            u = user if t_users else None
            v = vo if t_vos else None
            g = group if t_groups else None
            if sign > 0:
                vo_slots[vo] = vo_slots.get(vo, 0) + cores
                vo_jobs[vo] = vo_jobs.get(vo, 0) + 1
                group_jobs[group] = group_jobs.get(group, 0) + 1
                group_slots[group] = group_slots.get(group, 0) + cores
                user_slots[user] = user_slots.get(user, 0) + cores
                queue_jobs[job.queue] = queue_jobs.get(job.queue, 0) + 1
                queue_cores[job.queue] = queue_cores.get(job.queue, 0) + cores
                user_jobs[user] = user_jobs.get(user, 0) + 1
            else:
                _take(vo_slots, vo, cores)
                _take(vo_jobs, vo, 1)
                _take(group_jobs, group, 1)
                _take(group_slots, group, cores)
                _take(user_slots, user, cores)
                _take(queue_jobs, job.queue, 1)
                _take(queue_cores, job.queue, cores)
                _take(user_jobs, user, 1)
            for name, cores in job.placement:
                ld = touched.get(name)
                if ld is None:
                    ld = loads.get(name)
                    if ld is None:
                        e = by_name.get(name)
                        if e is None:
                            continue  # a node the server does not list
                        ld = loads[name] = Load(e[0], e[2], e[3])
                    touched[name] = ld
                    # take the node's part out of the totals; put it back once changed
                    if by_name[name][4]:
                        used -= min(ld.used, ld.slots)
                    else:
                        off -= min(ld.used, ld.slots)
                    free -= (ld.free if ld.usable else 0) - idle.get(name, 0)
                req = job.request
                if req is None:
                    if sign > 0:
                        ld.add(u, v, g, cls, cores, job.start_time)
                    else:
                        ld.remove(u, v, g, cls, cores, job.start_time)
                else:
                    mem, vmem = req.mem_for(cores, job.cores), req.vmem_for(cores, job.cores)
                    if sign > 0:
                        ld.add(u, v, g, cls, cores, job.start_time, mem, req.exclusive, vmem)
                    else:
                        ld.remove(u, v, g, cls, cores, job.start_time, mem, req.exclusive, vmem)
        for name, ld in touched.items():
            if by_name[name][4]:
                used += min(ld.used, ld.slots)
            else:
                off += min(ld.used, ld.slots)
            free += (ld.free if ld.usable else 0) - idle.get(name, 0)
            self._rank(ld)
            if not ld.njobs:
                del loads[name]
        self.used, self.free, self.off_used = used, free, off

    def _rank(self, ld: Load) -> None:
        """Put a node where its new counts rank it (or take it out when it has no room)."""
        ranking = self.rankings[ld.key]
        classes = self.by_class[ld.key]
        if ld.usable and ld.free > 0:
            k = self.keyf(ld)  # for a node left empty, equal to `empty_key`
            ranking.put(ld.name, k)
            for cls in self.packing:
                if ld.classes.get(cls):
                    r = classes.get(cls)
                    if r is None:
                        r = classes[cls] = Ranking()
                    r.put(ld.name, k)
                elif cls in classes:
                    classes[cls].drop(ld.name)
        else:
            ranking.drop(ld.name)
            for r in classes.values():
                r.drop(ld.name)


def _take(d: dict[str, int], k: str, n: int) -> None:
    """Subtract, dropping keys that reach zero (a fresh count would not have them)."""
    v = d[k] - n
    if v:
        d[k] = v
    else:
        del d[k]
