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

from typing import Iterable, Protocol

from mysched.core.model.batch import Changes, Job, JobState, Node, Snapshot
from mysched.core.place.nodeusage import NodeUsage, _take
from mysched.core.place.ranking import NodeGroup, Ranking
from mysched.core.rules.access import type_closed
from mysched.core.place.score import key_fn, keeps_whole
from mysched.core.settings import Config, PackingClass

DEFAULT_CLASS = "default"
RUNNING = (JobState.RUNNING, JobState.EXITING, JobState.SUSPENDED)
"""States whose jobs the tally counts: they hold their cores (`JobState.holds_slots`)."""
WAITING = (JobState.QUEUED, JobState.HELD, JobState.WAITING, JobState.TRANSIT)


class NodeFacts(Protocol):
    """What a tally reads of its node index (`mysched.core.place.nodeindex.NodeIndex`)."""

    config: Config
    by_name: dict[str, tuple[Node, str | None, tuple, bool, bool]]
    """Node name -> its `NodeEntry` (node, type, key, usable, counted)."""
    usable_free: dict[str, int]
    idle_free: int
    group_keys: list[tuple]
    packing: dict[str, PackingClass]
    group_vo: dict[str, str]

    def job_class(self, queue: str, vo: str, group: str, user: str) -> PackingClass | None: ...

    def vo_of(self, group: str) -> str: ...

    def empty_ranking(self, policy: str, group_key: tuple) -> Ranking: ...


class Counted:
    """A running job the tally counts. Mutable (`gen` moves on each sync that sees it) and
    slotted: a sync looks at every running job's record."""

    __slots__ = ("job", "vo", "cls", "gen")

    def __init__(self, job: Job, vo: str, cls: str | None, gen: int) -> None:
        self.job = job
        self.vo = vo
        self.cls = cls
        """Its packing class (None: the farm has none)."""
        self.gen = gen
        """The sync that saw it last (`Tally.gen`)."""


class Tally:
    """The running jobs of the last snapshot, reduced to what a plan reads: per-node loads
    (only nodes that run something), running slots and jobs per VO, group, user and queue,
    and each pool's nodes ranked by placement score (overall and per packing class).

    `sync` brings it up to date with a snapshot. Plans never change it: they copy the
    loads they touch and rank on copy-on-write views."""

    def __init__(self, index: NodeFacts, policy: str) -> None:
        cfg = index.config
        self.index = index
        self.policy = policy
        self.whole = keeps_whole(cfg, False)
        """Empty nodes ranked last (`keep_whole`)."""
        self.keyf = key_fn(policy, self.whole)
        self.mc_min = cfg.drain.min_cores
        self.mc_running = 0
        """Running jobs of at least `drain.min_cores` cores."""
        self.track = (policy == "mysched",
                      any(v.max_per_node is not None for v in cfg.vos.values()),
                      any(g.max_per_node is not None for g in cfg.groups.values()))
        """Which per-node counts plans read: users for the diversity score, VOs and groups
        only where a per-node limit exists."""
        self.packing = index.packing
        self.jobs: dict[str, Counted] = {}
        """Counted running jobs by id."""
        self.gen = 0
        self.token: object = None
        """`Snapshot.token` of the snapshot synced last."""
        self.loads: dict[str, NodeUsage] = {}
        self.vo_slots: dict[str, int] = {}
        self.vo_jobs: dict[str, int] = {}
        self.group_jobs: dict[str, int] = {}
        self.group_slots: dict[str, int] = {}
        self.user_slots: dict[str, int] = {}
        self.queue_jobs: dict[str, int] = {}
        self.queue_cores: dict[str, int] = {}
        self.user_jobs: dict[str, int] = {}
        self.rankings = {k: index.empty_ranking(policy, k, self.whole) for k in index.group_keys}
        self.by_class: dict[tuple, dict[str, Ranking]] = {k: {} for k in index.group_keys}
        self.groups = {k: NodeGroup(k, type_closed(index.config, k.ntype)) for k in index.group_keys}
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
                if rec is not None and (rec.job is job or rec.job == job):
                    if rec.gen != gen:
                        rec.gen = gen
                        seen += 1
                else:
                    fresh.append(job)
            elif st in WAITING:
                vo = job.vo or group_vo.get(job.group) or vo_of(job.group)
                vo_queued[vo] = vo_queued.get(vo, 0) + 1
                queued.append((job, vo))
        if seen < len(counted):  # jobs ended, or changed (a new object under a known id)
            gone = [jid for jid, rec in counted.items() if rec.gen != gen]
            self._apply([counted.pop(jid) for jid in gone], -1)
        self._add(fresh)
        return queued, vo_queued

    def keep_whole(self, queued: list[tuple[Job, str]]) -> None:
        """Rank empty nodes last while multi-core jobs run or wait (`keeps_whole`); the
        rankings are made again when that changes (rarely: when the first multi-core job
        comes or the last one goes)."""
        d = self.index.config.drain
        if not (d.on and d.auto):
            return  # fixed by the configuration (`keeps_whole` without multi-core work)
        mc = self.mc_min
        want = self.mc_running > 0 or any(j.cores >= mc for j, _ in queued)
        if want == self.whole:
            return
        self.whole = want
        self.keyf = key_fn(self.policy, want)
        self.rankings = {k: self.index.empty_ranking(self.policy, k, want) for k in self.index.group_keys}
        self.by_class = {k: {} for k in self.index.group_keys}
        for ld in self.loads.values():
            self._rank(ld)

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
            rec = counted[job.id] = Counted(job, vo, cls, gen)
            add.append(rec)
        self._apply(add, +1)

    def _apply(self, recs: list[Counted], sign: int) -> None:
        """Add (sign +1) or remove (-1) running jobs."""
        if not recs:
            return
        by_name = self.index.by_name
        idle = self.index.usable_free
        t_users, t_vos, t_groups = self.track
        touched: dict[str, NodeUsage] = {}
        loads = self.loads
        vo_slots, vo_jobs, group_jobs = self.vo_slots, self.vo_jobs, self.group_jobs
        group_slots, user_slots, queue_jobs = self.group_slots, self.user_slots, self.queue_jobs
        queue_cores, user_jobs = self.queue_cores, self.user_jobs
        used, free, off = self.used, self.free, self.off_used
        for rec in recs:
            job, vo, cls = rec.job, rec.vo, rec.cls
            cores, group, user = job.cores, job.group, job.user
            u = user if t_users else None
            v = vo if t_vos else None
            g = group if t_groups else None
            if cores >= self.mc_min:
                self.mc_running += sign
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
                        node, _ntype, key, usable, counted = e
                        ld = loads[name] = NodeUsage(node, key, usable)
                        ld.group = self.groups[key]  # its node group: read by the checks of a plan
                    else:
                        _node, _ntype, _key, _usable, counted = by_name[name]
                    touched[name] = ld
                    # take the node's part out of the totals; put it back once changed
                    if counted:
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
            _node, _ntype, _key, _usable, counted = by_name[name]
            if counted:
                used += min(ld.used, ld.slots)
            else:
                off += min(ld.used, ld.slots)
            free += (ld.free if ld.usable else 0) - idle.get(name, 0)
            self._rank(ld)
            if not ld.njobs:
                del loads[name]
        self.used, self.free, self.off_used = used, free, off

    def _rank(self, ld: NodeUsage) -> None:
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
