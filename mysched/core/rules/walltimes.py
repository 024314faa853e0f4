"""Which requested walltimes the scheduler believes: one above zero and within a ceiling.

Backfill, reservations, drains and downtimes all take a job's requested walltime as the
latest it ends. ``walltime=0`` read as 0 s let such a job backfill onto nodes reserved for
another (pbs_mom then killed it), and ``walltime=99999999999:00:00`` put the reservation of
the job queued behind it in the year 140719 and held its nodes' free slots for it. Such a
request is taken as no request at all: the job may run for ever, as one without a walltime
is taken to (it never ends before a reservation, a drain or a downtime). The ceiling is
``scheduler.max_walltime``, else the queue's ``resources_max.walltime``, else a year; no
reservation lies further ahead than the largest ceiling (`horizon`).
"""

from __future__ import annotations

from dataclasses import replace

from mysched.core.model.batch import Queue, Snapshot

__all__ = ["YEAR", "believed", "horizon"]

YEAR = 365 * 86400.0
"""The ceiling where neither the configuration nor the queue sets one."""


def _ceiling(max_walltime: float | None, queue: Queue | None) -> float:
    if max_walltime is not None:
        return max_walltime
    if queue is not None and queue.max_walltime is not None and queue.max_walltime > 0:
        return queue.max_walltime
    return YEAR


def horizon(max_walltime: float | None, queues: tuple[Queue, ...]) -> float:
    """Seconds ahead beyond which no reservation is made: the largest walltime believed."""
    return max([_ceiling(max_walltime, None)] + [_ceiling(max_walltime, q) for q in queues])


def believed(snapshot: Snapshot, max_walltime: float | None) -> Snapshot:
    """`snapshot` with every walltime of 0 s or beyond its queue's ceiling taken as unknown
    (the same snapshot when there is none: the common case costs one look at each job)."""
    queues = {q.name: _ceiling(max_walltime, q) for q in snapshot.queues}
    default = _ceiling(max_walltime, None)
    jobs = snapshot.jobs
    bad = [i for i, j in enumerate(jobs)
           if j.walltime is not None and not 0 < j.walltime <= queues.get(j.queue, default)]
    if not bad:
        return snapshot
    fixed = list(jobs)
    for i in bad:
        fixed[i] = fixed[i]._replace(walltime=None)
    # the changes list the old objects: the planner then counts the running jobs afresh
    return replace(snapshot, jobs=tuple(fixed), token=None, changes=None)
