"""How long a job that requested no walltime is taken to run (issue #29): the one home of
run-time estimates.

Reservations, EASY backfill and the multi-core partition all ask when the cores of a node
free and whether a job ends before a given time. A requested walltime answers both (pbs_mom
ends the job by it). Many sites' queues set none, and many traces carry none; without an
answer a job without one never backfilled before a reservation or onto a draining node, and
the nodes it ran on promised nothing, so small work was squeezed onto the rest of the farm.

So a job without a walltime is taken to run as long as most of its owner's recent jobs in
the same queue ran (the `QUANTILE` of the last `KEEP` run times: user history, after
Tsafrir, Etsion and Feitelson 2007), else as most recent jobs of its queue ran, else the
queue's ``resources_max.walltime`` (TORQUE gives a job its queue's
``resources_default.walltime`` at submission, so such a job has a walltime already). An
estimate is never a promise (nothing kills the job then), so it is never kept open for ever:
a running job past its estimate is re-estimated to run as long again as it has run (Downey,
1997), so the reservation or drain that waits for it moves out with it and smaller work may
backfill meanwhile. Downtimes and guarantee-pool loans, which need an end the batch system
enforces, still take such a job to run for ever.

Pure: the run times come in as data (`RecentRuns`), fed by the daemon from its history store
and by the simulator from the jobs that ended so far (never from the future).
"""

from __future__ import annotations

import math
from collections import deque
from typing import Iterable

from mysched.core.model.batch import FinishedJob, Job, Queue
from mysched.core.rules.walltimes import YEAR

__all__ = ["KEEP", "QUANTILE", "RecentRuns", "RunTimes"]

KEEP = 20
"""Run times kept per user and queue, and per queue: recent enough to follow a user whose work
changes, enough for a high quantile."""
QUANTILE = 0.9
"""Most of the jobs end by then: an estimate too short holds nodes back for a job that does not
come (the reservation is due, the job still runs), one too long only lets less backfill."""


class RecentRuns:
    """The run times (seconds) of the latest finished jobs, per (user, queue) and per queue,
    oldest first. Fed in order of the jobs' ends; plain data, no I/O."""

    def __init__(self, keep: int = KEEP) -> None:
        self.keep = keep
        self.by_user: dict[tuple[str, str], deque[float]] = {}
        self.by_queue: dict[str, deque[float]] = {}

    def add(self, user: str, queue: str, seconds: float) -> None:
        """A job of `user` in `queue` ended after running `seconds`."""
        if not seconds >= 0.0 or not math.isfinite(seconds):
            return
        for d, k in ((self.by_user, (user, queue)), (self.by_queue, queue)):
            runs = d.get(k)
            if runs is None:
                runs = d[k] = deque(maxlen=self.keep)
            runs.append(seconds)

    def add_records(self, records: Iterable[FinishedJob]) -> None:
        """History store records (ended ones), in the order they ended."""
        for r in sorted((r for r in records if r.end is not None), key=lambda r: r.end):
            self.add(r.user, r.queue, r.end - r.start)


def _quantile(runs: Iterable[float]) -> float:
    xs = sorted(runs)
    return xs[min(len(xs) - 1, math.ceil(QUANTILE * len(xs)) - 1)]


class RunTimes:
    """One plan's view of how long jobs run: a job's requested walltime, or for a job without
    one an estimate (`estimate`), worked out once per (user, queue)."""

    def __init__(self, recent: RecentRuns | None = None, queues: Iterable[Queue] = (),
                 max_walltime: float | None = None) -> None:
        self.recent = recent
        self.queue_max = {q.name: q.max_walltime for q in queues if q.max_walltime and q.max_walltime > 0}
        self.max_walltime = max_walltime
        self._memo: dict[tuple[str, str], tuple[float, str] | None] = {}

    def estimate(self, job: Job) -> tuple[float, str] | None:
        """(seconds, where from) for a job without a walltime: its user's recent run times in
        its queue, else its queue's, else the queue's maximum walltime; None: nothing known."""
        key = (job.user, job.queue)
        if key in self._memo:
            return self._memo[key]
        got: tuple[float, str] | None = None
        cap = self.max_walltime or self.queue_max.get(job.queue) or YEAR
        r = self.recent
        if r is not None and (runs := r.by_user.get(key)):
            got = (_quantile(runs), f"user {job.user}'s last {len(runs)} run time(s)")
        elif r is not None and (runs := r.by_queue.get(job.queue)):
            got = (_quantile(runs), f"queue {job.queue}'s last {len(runs)} run time(s)")
        elif job.queue in self.queue_max:
            got = (self.queue_max[job.queue], f"queue {job.queue}'s resources_max.walltime")
        if got is not None:
            got = (min(max(got[0], 1.0), cap), got[1])
        self._memo[key] = got
        return got

    def length(self, job: Job) -> float | None:
        """How long `job` is taken to run from its start: its requested walltime, else the
        estimate; None: unknown (it may run for ever)."""
        if job.walltime is not None:
            return job.walltime
        e = self.estimate(job)
        return e[0] if e is not None else None

    def end(self, job: Job, now: float) -> float:
        """When running `job` is taken to end: by its requested walltime (at the latest), else
        by its estimate while that lies ahead, else -- past it -- as long again as it has run
        (re-estimated each plan, so nothing waits for it for ever); inf: unknown."""
        start = job.start_time
        if start is None:
            return math.inf
        if job.walltime is not None:
            return start + job.walltime
        e = self.estimate(job)
        if e is None:
            return math.inf
        end = start + e[0]
        return end if end > now else now + max(now - start, 1.0)
