"""Run limits the batch server holds but leaves to its scheduler: a queue's ``max_user_run``
and ``max_group_run``, the server's ``max_running``, ``max_user_run`` and ``max_group_run``
(qmgr), and the server's other `RunCap`s -- OpenPBS's ``max_run`` and ``max_run_res.ncpus`` /
``.mem`` on the server and each queue, for everyone, each user, group or project, or one
named user, group or project. pbs_server checks none of them when asked to run a job;
TORQUE's pbs_sched and OpenPBS's pbs_sched honour them and MAUI a queue's ``max_user_run``,
so a site expects its scheduler to. (A queue's ``max_running`` joins the site's own queue
limits in the planner's rules.)

A named limit replaces the generic one for its name, as in OpenPBS (``[u:alice=8]`` lets
alice run 8 where ``[u:PBS_GENERIC=4]`` holds everyone else to 4); a limit of memory holds
only jobs that ask memory, as OpenPBS's holds only jobs that ask the resource.

A job array's slot limit (``qsub -t 0-400%1``) is one more: pbs_server holds back only the
sub-jobs it has created (``idle_slot_limit``, 300 by default); the others are queued without a
hold, and pbs_runjob refuses each of them (15004) while the array runs its limit. Tried every
cycle, those refusals took the free slots other users' jobs were planned for.

Counts are of jobs holding their cores (running, exiting, suspended), as the planner's
other job limits count, plus the jobs the plan starts; cores and memory are what the jobs
asked.
"""

from __future__ import annotations

from mysched.core.model.batch import Job, RunCap, Snapshot
from mysched.core.model.reasons import Reason

__all__ = ["RunLimits"]

_BY = ("all", "user", "group", "project")
_MEASURES = ("jobs", "cores", "mem")
_REASONS = {
    (False, "jobs", "all"): Reason.SERVER_MAX_RUNNING, (False, "jobs", "user"): Reason.SERVER_USER_LIMIT,
    (False, "jobs", "group"): Reason.SERVER_GROUP_LIMIT, (False, "jobs", "project"): Reason.SERVER_PROJECT_LIMIT,
    (True, "jobs", "all"): Reason.QUEUE_MAX_RUNNING, (True, "jobs", "user"): Reason.QUEUE_USER_LIMIT,
    (True, "jobs", "group"): Reason.QUEUE_GROUP_LIMIT, (True, "jobs", "project"): Reason.QUEUE_PROJECT_LIMIT,
}
"""(of a queue, measure, by) -> the wait reason; cores and memory: the scope's resource limit."""


def _key(job: Job, by: str) -> str | None:
    """The consumer a limit by `by` counts the job against (None: a project limit, the job has none)."""
    if by == "user":
        return job.user
    if by == "group":
        return job.group
    return (job.project or None) if by == "project" else ""


def _amount(job: Job, measure: str) -> int | None:
    """What the job adds to a limit of `measure` (None: it asks none of it, the limit holds it not)."""
    return 1 if measure == "jobs" else job.cores if measure == "cores" else job.mem


def _size(n: int) -> str:
    for unit, shift in (("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            return f"{n / (1 << shift):.3g} {unit}"
    return f"{n} B"


class _Limit:
    """The limits of one scope (the server or a queue), measure and kind of consumer: the
    generic cap, the named ones, and what runs against them, by consumer."""

    __slots__ = ("queue", "measure", "by", "generic", "named", "used", "reason")

    def __init__(self, queue: str | None, measure: str, by: str) -> None:
        self.queue = queue
        self.measure = measure
        self.by = by
        self.generic: tuple[int, str] | None = None
        self.named: dict[str, tuple[int, str]] = {}
        self.used: dict[str, int] = {}
        self.reason = _REASONS.get((queue is not None, measure, by)) or (
            Reason.QUEUE_RESOURCE_LIMIT if queue is not None else Reason.SERVER_RESOURCE_LIMIT)

    def put(self, cap: RunCap) -> None:
        """Take one more cap (the lower of two for the same consumer counts)."""
        if cap.name is None:
            if self.generic is None or cap.cap < self.generic[0]:
                self.generic = (cap.cap, cap.setting)
        else:
            got = self.named.get(cap.name)
            if got is None or cap.cap < got[0]:
                self.named[cap.name] = (cap.cap, cap.setting)

    def cap_of(self, key: str) -> tuple[int, str] | None:
        got = self.named.get(key)
        return got if got is not None else self.generic

    def detail(self, job: Job, key: str, cap: int, setting: str, asks: int) -> str:
        """The limit as the server spells it and what runs against it; empty for TORQUE's
        own (`why` says those with their qmgr command)."""
        if not setting:
            return ""
        where = f"queue {self.queue}" if self.queue is not None else "server"
        who = "all users" if self.by == "all" else f"{self.by} {key}"
        used = self.used.get(key, 0)
        if self.measure == "jobs":
            return f"{where} {setting}: {who} run(s) {used} job(s)"
        if self.measure == "cores":
            return f"{where} {setting}: {who} hold(s) {used} core(s), {cap} at most; the job asks {asks}"
        return f"{where} {setting}: {who} hold(s) {_size(used)} of memory, {_size(cap)} at most; the job asks " \
               f"{_size(asks)}"


def _caps(max_running: int | None, max_user_run: int | None, max_group_run: int | None,
          caps: tuple[RunCap, ...]) -> list[RunCap]:
    """A scope's limits as caps: TORQUE's three counts (spelled by `why` itself) and the rest."""
    out = [RunCap("jobs", by, n) for by, n in (("all", max_running), ("user", max_user_run),
                                                ("group", max_group_run)) if n is not None]
    return out + list(caps)


def _limits(queue: str | None, caps: list[RunCap]) -> list[_Limit]:
    got: dict[tuple[str, str], _Limit] = {}
    for c in caps:
        if c.measure not in _MEASURES or c.by not in _BY:
            continue
        lim = got.get((c.measure, c.by))
        if lim is None:
            lim = got[(c.measure, c.by)] = _Limit(queue, c.measure, c.by)
        lim.put(c)
    order = {(m, b): i for i, (b, m) in enumerate((b, m) for b in _BY for m in _MEASURES)}
    return [got[k] for k in sorted(got, key=order.__getitem__)]


class RunLimits:
    """The server's and queues' run limits for one plan, with the running counts they need."""

    __slots__ = ("server", "queues", "by_user", "by_project", "by_amount", "arr_max", "arr")

    def __init__(self, snap: Snapshot) -> None:
        lim = snap.limits
        self.server = _limits(None, _caps(lim.max_running, lim.max_user_run, lim.max_group_run, lim.caps)) \
            if lim is not None else []
        self.queues = {q.name: got for q in snap.queues
                       if (got := _limits(q.name, _caps(None, q.max_user_run, q.max_group_run, q.caps)))}
        every = self.server + [x for got in self.queues.values() for x in got]
        self.by_user = any(x.by == "user" for x in every)
        """Whether a user's jobs can meet a limit their group's others do not."""
        self.by_project = any(x.by == "project" for x in every)
        """Whether a job's project can hold it back."""
        self.by_amount = any(x.measure != "jobs" for x in every)
        """Whether a job's cores or memory can hold it back where a smaller one would start."""
        self.arr_max = snap.arrays
        self.arr: dict[str, int] = {}
        """Running sub-jobs per array with a slot limit."""
        for job in snap.jobs:
            if job.state.holds_slots:
                self.add(job)

    @classmethod
    def of(cls, snap: Snapshot) -> "RunLimits | None":
        """The limits of `snap`, or None when the server, its queues and its arrays set none."""
        lim = snap.limits
        if not snap.arrays and (lim is None or (lim.max_running is None and lim.max_user_run is None
                                                and lim.max_group_run is None and not lim.caps)) \
                and not any(q.max_user_run is not None or q.max_group_run is not None or q.caps for q in snap.queues):
            return None
        return cls(snap)

    def _of(self, job: Job) -> list[_Limit]:
        q = self.queues.get(job.queue)
        return self.server if q is None else self.server + q if self.server else q

    def add(self, job: Job) -> None:
        """Count a running job (or one the plan starts)."""
        for lim in self._of(job):
            key = _key(job, lim.by)
            if key is None or (lim.generic is None and key not in lim.named):
                continue  # no limit holds this consumer: not counted
            n = _amount(job, lim.measure)
            if n:
                lim.used[key] = lim.used.get(key, 0) + n
        a = job.array
        if a is not None and a in self.arr_max:
            self.arr[a] = self.arr.get(a, 0) + 1

    def refuse(self, job: Job) -> tuple[Reason, str] | None:
        """(wait reason, detail) of a limit one more job of `job`'s would pass, or None."""
        a = job.array
        if a is not None and (cap := self.arr_max.get(a)) is not None and self.arr.get(a, 0) >= cap:
            return Reason.ARRAY_SLOT_LIMIT, f"array {a} runs {self.arr.get(a, 0)} sub-job(s); its slot limit is {cap}"
        for lim in self._of(job):
            key = _key(job, lim.by)
            got = lim.cap_of(key) if key is not None else None
            if got is None:
                continue
            n = _amount(job, lim.measure)
            if n is not None and lim.used.get(key, 0) + n > got[0]:
                return lim.reason, lim.detail(job, key, got[0], got[1], n)
        return None
