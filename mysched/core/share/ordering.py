"""Ordering: the sequence in which queued jobs are tried.

Hot lists first, in submit order; then the share tree: VOs below their guarantee, most
under-served first, then by dynamic fair-share priority; inside a VO the group with the least
``(eps + u_hist + u_run) / share`` (a group's share weighs among its VO's groups, 1 unless
set: LSF's share tree), then the user with the least ``u_hist + u_run``; a user's jobs by their
TORQUE priority (qsub -p), then in submit order. Priorities are kept in heaps and re-keyed
after every start, since a start changes its VO's running slots.
"""

from __future__ import annotations

import heapq
from collections import deque
from typing import Iterable

from typing import Mapping, Protocol

from mysched.core.model.reasons import Reason
from mysched.core.model.batch import Job
from mysched.core.settings import Config
from mysched.core.share.standing import VOFacts
from mysched.core.share.usage import Usage

_BELOW_GUARANTEE, _BY_SHARE = 0, 1
"""The first field of a VO's sort key: VOs below their guarantee come before all others."""


class Trier(Protocol):
    """What the order asks of the planner: try a job, make jobs wait, and the cycle's figures."""

    def try_job(self, job: Job, vo: str, reason: str) -> str | None: ...

    def wait(self, job: Job, reason: str, vo: str) -> None: ...

    def wait_all(self, jobs: Iterable[tuple[Job, str]], reason: str) -> None: ...

    def started(self) -> int: ...

    def free_total(self) -> int: ...

    def reserved(self) -> Mapping[str, object]: ...

    def cores_left(self, reason: str, job: Job, vo: str) -> int: ...


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


class ShareOrder:
    """The order jobs are tried in, and the running slots per VO, group and user it reads
    (this plan's starts counted in as they happen)."""

    def __init__(self, cfg: Config, usage: Usage, total_slots: int, vo_facts: VOFacts, tally, host: Trier,  # noqa: ANN001
                 shares: bool) -> None:
        self.cfg = cfg
        self.usage = usage
        self.total_usage = usage.total
        self.total_slots = total_slots
        self.vo_facts = vo_facts
        self.host = host
        self.shares = shares
        """Policy mysched: the share tree orders jobs (its counts are kept)."""
        if shares:
            self.vo_slots = dict(tally.vo_slots)
            self.group_slots = dict(tally.group_slots)
            self.user_slots = dict(tally.user_slots)

    def count(self, job: Job, vo: str) -> None:
        """A job the plan starts: its slots count for its VO, group and user from now on."""
        if self.shares:
            cores = job.cores
            d = self.vo_slots
            d[vo] = d.get(vo, 0) + cores
            d = self.group_slots
            d[job.group] = d.get(job.group, 0) + cores
            d = self.user_slots
            d[job.user] = d.get(job.user, 0) + cores

    def priority(self, vo: str) -> float:
        """``share / (eps + u_hist + u_run)`` with the slots running now (this cycle's starts too)."""
        f = self.vo_facts[vo]
        ts = self.total_slots
        return f.share / (f.base + (self.vo_slots.get(vo, 0) / ts if ts else 0.0))

    def run_list(self, jobs: list[tuple[Job, str]], reason: str) -> str | None:
        """Try jobs in the given order; return why the cycle stopped early, if it did."""
        limit = self.cfg.max_starts_per_cycle
        host = self.host
        for i, (job, vo) in enumerate(jobs):
            if host.started() >= limit:
                host.wait_all(jobs[i:], Reason.START_LIMIT)
                return Reason.START_LIMIT
            if host.free_total() <= 0:
                host.wait_all(jobs[i:], Reason.NO_FREE_SLOT)
                return Reason.NO_FREE_SLOT
            host.try_job(job, vo, reason)
        return None

    def _vo_key(self, vo: str) -> tuple:
        f = self.vo_facts[vo]
        running = self.vo_slots.get(vo, 0)
        if running < f.guarantee:
            return (_BELOW_GUARANTEE, running / f.guarantee, vo)
        return (_BY_SHARE, -self.priority(vo), f.usage_fraction, vo)

    def _sub_key(self, usage: float, running: int, name: str, share: float = 1.0) -> tuple:
        """Smallest first: LSF's dynamic priority share / (eps + u_hist + u_run), inverted;
        `share` a group's weight among its VO's groups (users weigh alike)."""
        u = usage / self.total_usage if self.total_usage > 0 else 0.0
        r = running / self.total_slots if self.total_slots else 0.0
        return ((self.cfg.fairshare_eps + u + r) / share, name)

    def _group_key(self, g: str) -> tuple:
        gc = self.cfg.groups.get(g)
        return self._sub_key(self.usage.group.get(g, 0.0), self.group_slots.get(g, 0), g,
                             gc.share if gc is not None else 1.0)

    def run_shares(self, eligible: list[tuple[Job, str]]) -> None:
        """`eligible` comes in submit order (from `_screen`)."""
        vos: dict[str, _VOQ] = {}
        ranked: dict[int, _UserQ] = {}  # users who set a priority on a job (qsub -p)
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
            if job.priority:
                ranked[id(uq)] = uq
        for uq in ranked.values():  # higher priority first, then submit order (the sort is stable)
            uq.jobs = deque(sorted(uq.jobs, key=lambda j: -j.priority))
        uu = self.usage.user
        heap = _Heap()
        for vo, vq in vos.items():
            for g, gq in vq.groups.items():
                for u in gq.users:
                    gq.heap.push(u, self._sub_key(uu.get(u, 0.0), self.user_slots.get(u, 0), u))
                vq.heap.push(g, self._group_key(g))
            heap.push(vo, self._vo_key(vo))
        limit = self.cfg.max_starts_per_cycle
        # Jobs holding a reservation (kept from the last cycle) go first once no VO below its
        # guarantee is left to try: they start as soon as they fit (see `reservation`).
        held = self.host.reserved()
        first = {j.id for j, _ in eligible if j.id in held}
        while True:
            vo = heap.peek()
            if vo is None:
                return
            if self.host.started() >= limit:
                self._drain_tree(vos, heap, Reason.START_LIMIT)
                return
            if self.host.free_total() <= 0:
                self._drain_tree(vos, heap, Reason.NO_FREE_SLOT)
                return
            if first and heap.current[vo][0] == _BY_SHARE:  # no VO below its guarantee is left
                self._run_reserved(eligible, first, vos, heap)
                first = set()
                continue
            vq = vos[vo]
            g = vq.heap.peek()
            gq = vq.groups[g]
            u = gq.heap.peek()
            uq = gq.users[u]
            job = uq.jobs.popleft()
            first.discard(job.id)
            was_below = self.vo_slots.get(vo, 0) < self.vo_facts[vo].guarantee
            why = self.host.try_job(job, vo, Reason.SHARE if was_below else Reason.FAIRSHARE)
            if (why == Reason.VO_CORE_LIMIT or why == Reason.GROUP_CORE_LIMIT) and self.host.cores_left(why, job, vo) > 0:
                # a smaller job of the VO (group) may still fit: only those asking more wait now
                self._drain_wider(heap, vq, gq if why == Reason.GROUP_CORE_LIMIT else None, vo,
                                  self.host.cores_left(why, job, vo))
            elif why == Reason.VO_LIMIT or why == Reason.VO_CORE_LIMIT:
                self._drain_vo(vq, vo, why)
                heap.remove(vo)
                continue
            elif why == Reason.GROUP_LIMIT or why == Reason.GROUP_CORE_LIMIT:
                self._drain_group(gq, vo, why)
                vq.heap.remove(g)
                del vq.groups[g]
                if not vq.groups:
                    heap.remove(vo)
            else:
                self._settle(heap, vo, vq, g, gq, u, uq, why is None)

    def _settle(self, heap: _Heap, vo: str, vq: _VOQ, g: str, gq: _GroupQ, u: str, uq: _UserQ,
                started: bool) -> None:
        """After a job of user `u` (group `g`, VO `vo`) was taken from the share tree: drop the
        queues it left empty, and re-rank what it started for (its slots now count)."""
        self._prune(vq, g, gq, u, uq)
        if started:
            if u in gq.users:
                gq.heap.push(u, self._sub_key(self.usage.user.get(u, 0.0), self.user_slots.get(u, 0), u))
            if g in vq.groups:
                vq.heap.push(g, self._group_key(g))
        if not vq.groups:
            heap.remove(vo)
        elif started:
            heap.push(vo, self._vo_key(vo))

    @staticmethod
    def _prune(vq: _VOQ, g: str, gq: _GroupQ, u: str, uq: _UserQ) -> None:
        """Drop user `u`'s queue `uq` if it is empty, and then group `g`'s if that left it none."""
        if not uq.jobs:
            gq.heap.remove(u)
            del gq.users[u]
            if not gq.users:
                vq.heap.remove(g)
                del vq.groups[g]

    def _run_reserved(self, eligible: list[tuple[Job, str]], first: set[str], vos: dict[str, _VOQ],
                      heap: _Heap) -> None:
        """Try the reserved jobs `first` (in submit order) ahead of the share tree, and take
        them out of it."""
        limit = self.cfg.max_starts_per_cycle
        for job, vo in eligible:
            if job.id not in first:
                continue
            vq = vos.get(vo)
            gq = vq.groups.get(job.group) if vq is not None else None
            uq = gq.users.get(job.user) if gq is not None else None
            if uq is None or job not in uq.jobs:
                continue  # its VO or group was drained for a limit: it has its wait
            uq.jobs.remove(job)
            if self.host.started() >= limit or self.host.free_total() <= 0:
                self.host.wait(job, Reason.START_LIMIT if self.host.free_total() > 0 else Reason.NO_FREE_SLOT, vo)
                started = False
            else:
                started = self.host.try_job(job, vo, Reason.FAIRSHARE) is None
            self._settle(heap, vo, vq, job.group, gq, job.user, uq, started)

    def _drain_group(self, gq: _GroupQ, vo: str, reason: str) -> None:
        for u in gq.heap.ordered():
            jobs = gq.users[u].jobs
            self.host.wait_all([(job, vo) for job in jobs], reason)
            jobs.clear()

    def _drain_wider(self, heap: _Heap, vq: _VOQ, gq: _GroupQ | None, vo: str, left: int) -> None:
        """The jobs of a VO (or of its group `gq`) that ask more than the `left` cores its
        max_cores leaves wait now (starts only lower it); smaller ones stay in the order."""
        reason = Reason.VO_CORE_LIMIT if gq is None else Reason.GROUP_CORE_LIMIT
        for g in list(vq.groups):
            q = vq.groups[g]
            if gq is not None and q is not gq:
                continue
            for u in list(q.users):
                uq = q.users[u]
                wide = [j for j in uq.jobs if j.cores > left]
                if wide:
                    self.host.wait_all([(j, vo) for j in wide], reason)
                    uq.jobs = deque(j for j in uq.jobs if j.cores <= left)
                self._prune(vq, g, q, u, uq)
        if not vq.groups:
            heap.remove(vo)

    def _drain_vo(self, vq: _VOQ, vo: str, reason: str) -> None:
        for g in vq.heap.ordered():
            self._drain_group(vq.groups[g], vo, reason)
        vq.groups.clear()

    def _drain_tree(self, vos: dict[str, _VOQ], heap: _Heap, reason: str) -> None:
        for vo in heap.ordered():
            self._drain_vo(vos[vo], vo, reason)
            heap.remove(vo)
