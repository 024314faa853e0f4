"""Run limits the batch server holds but leaves to its scheduler: a queue's ``max_user_run``
and ``max_group_run``, the server's ``max_running``, ``max_user_run`` and ``max_group_run``
(qmgr). pbs_server checks none of them when asked to run a job; TORQUE's own pbs_sched
honours all five and MAUI a queue's ``max_user_run``, so a site expects its scheduler to.
(A queue's ``max_running`` joins the site's own queue limits in the planner's rules.)

A job array's slot limit (``qsub -t 0-400%1``) is one more: pbs_server holds back only the
sub-jobs it has created (``idle_slot_limit``, 300 by default); the others are queued without a
hold, and pbs_runjob refuses each of them (15004) while the array runs its limit. Tried every
cycle, those refusals took the free slots other users' jobs were planned for.

Counts are of jobs holding their cores (running, exiting, suspended), as the planner's
other job limits count, plus the jobs the plan starts.
"""

from __future__ import annotations

from mysched.core.model.batch import Job, Snapshot
from mysched.core.model.reasons import Reason

__all__ = ["RunLimits"]


class RunLimits:
    """The server's and queues' run limits for one plan, with the running counts they need."""

    __slots__ = ("total_max", "user_max", "group_max", "q_user", "q_group", "total", "users", "groups",
                 "q_users", "q_groups", "by_user", "arr_max", "arr")

    def __init__(self, snap: Snapshot) -> None:
        lim = snap.limits
        self.total_max = lim.max_running if lim else None
        self.user_max = lim.max_user_run if lim else None
        self.group_max = lim.max_group_run if lim else None
        self.q_user = {q.name: q.max_user_run for q in snap.queues if q.max_user_run is not None}
        self.q_group = {q.name: q.max_group_run for q in snap.queues if q.max_group_run is not None}
        self.by_user = self.user_max is not None or bool(self.q_user)
        """Whether a user's jobs can meet a limit their group's others do not."""
        self.total = 0
        self.users: dict[str, int] = {}
        self.groups: dict[str, int] = {}
        self.q_users: dict[tuple[str, str], int] = {}
        self.q_groups: dict[tuple[str, str], int] = {}
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
        if not snap.arrays and (lim is None or (lim.max_running is None and lim.max_user_run is None and lim.max_group_run is None)) \
                and not any(q.max_user_run is not None or q.max_group_run is not None for q in snap.queues):
            return None
        return cls(snap)

    def add(self, job: Job) -> None:
        """Count a running job (or one the plan starts)."""
        self.total += 1
        if self.user_max is not None:
            self.users[job.user] = self.users.get(job.user, 0) + 1
        if self.group_max is not None:
            self.groups[job.group] = self.groups.get(job.group, 0) + 1
        if job.queue in self.q_user:
            k = (job.queue, job.user)
            self.q_users[k] = self.q_users.get(k, 0) + 1
        if job.queue in self.q_group:
            k = (job.queue, job.group)
            self.q_groups[k] = self.q_groups.get(k, 0) + 1
        a = job.array
        if a is not None and a in self.arr_max:
            self.arr[a] = self.arr.get(a, 0) + 1

    def refuse(self, job: Job) -> Reason | None:
        """The wait reason of a limit one more job of `job`'s would pass, or None."""
        a = job.array
        if a is not None and (cap := self.arr_max.get(a)) is not None and self.arr.get(a, 0) >= cap:
            return Reason.ARRAY_SLOT_LIMIT
        if self.total_max is not None and self.total >= self.total_max:
            return Reason.SERVER_MAX_RUNNING
        if self.user_max is not None and self.users.get(job.user, 0) >= self.user_max:
            return Reason.SERVER_USER_LIMIT
        if self.group_max is not None and self.groups.get(job.group, 0) >= self.group_max:
            return Reason.SERVER_GROUP_LIMIT
        cap = self.q_user.get(job.queue)
        if cap is not None and self.q_users.get((job.queue, job.user), 0) >= cap:
            return Reason.QUEUE_USER_LIMIT
        cap = self.q_group.get(job.queue)
        if cap is not None and self.q_groups.get((job.queue, job.group), 0) >= cap:
            return Reason.QUEUE_GROUP_LIMIT
        return None

    def detail(self, job: Job, reason: Reason) -> str:
        """What `refuse` found, in numbers where a user could not see them otherwise."""
        if reason == Reason.ARRAY_SLOT_LIMIT:
            return f"array {job.array} runs {self.arr.get(job.array, 0)} sub-job(s); its slot limit is " \
                   f"{self.arr_max[job.array]}"
        return ""
