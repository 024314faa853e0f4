"""Total limits: the running jobs and cores a queue, VO, group or user may have, and what
external load leaves of them.

`max_running` counts jobs; `max_cores` counts the cores (slots) they hold, as MAUI's MAXPROC
does, so a cap written for single-core jobs keeps meaning cores when pilots take 8. A job waits
when its start would pass a limit: one more job than max_running, or its cores on top of the
running ones more than max_cores -- a smaller job of the same VO may still fit. Users have the
limits of their own `users.NAME` block, else those of `users.default`, each counted over all
of the user's running jobs. Counts are of jobs holding their cores (running, exiting,
suspended), plus the jobs the plan starts.

A load rule scales both: between its low and high, max_running and max_cores shrink by its
factor (max_running from the farm's slots where neither is set); closed, nothing starts.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

from mysched.core.model.reasons import Reason
from mysched.core.model.batch import Job, Snapshot
from mysched.core.rules.serverlimits import RunLimits
from mysched.core.rules.throttle import Throttle
from mysched.core.settings import Config, UserLimits

__all__ = ["JobRules", "Limits"]


class JobRules(NamedTuple):
    """Limits and candidate node groups shared by the jobs of one (queue, VO, group)."""

    queue_max: int | None
    vo_max: int | None
    group_max: int | None
    vo_node_max: int | None
    group_node_max: int | None
    groups: list
    """The `NodeGroup`s it may use."""
    tiers: tuple[list, list] | None = None
    """(closed, open): its node groups of a closed type and the rest, when it may use both (for
    mysched the closed ones come first, `mysched.core.place.placement`); None otherwise."""

_NONE = (None, None, None)


def _cores(kind: str, name: str, jobs: int, held: int, cap: int, asks: int, limit: str = "max_cores") -> str:
    return (f"{kind} {name} runs {jobs} job(s) on {held} core(s); {limit} {cap} leaves {max(0, cap - held)}, "
            f"the job asks {asks}")


class Limits:
    """One plan's total limits, server run limits and load throttles, with the running counts
    they read (copied from the tally where some limit reads them, counted up as jobs start)."""

    def __init__(self, cfg: Config, snap: Snapshot, t, core_limits: bool, total_limits: bool,  # noqa: ANN001
                 throttles: tuple[Throttle, ...], total_slots: int, queue_limited: bool,
                 rules_for: Callable[[str, str, str], JobRules]) -> None:
        self.cfg = cfg
        self.throttles = throttles
        self.total_slots = total_slots
        self.rules_for = rules_for
        self.core_limits = core_limits
        self.runlim = RunLimits.of(snap)  # the server's and its queues' max_user_run, max_run_res ...
        self.on = total_limits or queue_limited or bool(throttles) or self.runlim is not None
        """Whether any limit applies this plan (the counts are kept only then)."""
        self.caps = core_limits or bool(cfg.users)
        """Whether core or user limits apply (their counts are kept)."""
        self._drain_memo: dict[tuple, tuple[str, str]] = {}
        if self.on:
            self.vo_jobs = dict(t.vo_jobs)
            self.group_jobs = dict(t.group_jobs)
            self.queue_jobs = dict(t.queue_jobs)
        if self.caps:
            self.vo_cores = dict(t.vo_slots)
            self.group_cores = dict(t.group_slots)
            self.queue_cores = dict(t.queue_cores)
            self.user_cores = dict(t.user_slots)
            self.user_jobs = dict(t.user_jobs)
            self._caps_for: dict[tuple[str, str, str], tuple] = {}
            self._user_caps: dict[str, tuple[str, UserLimits] | None] = {}

    def _core_caps(self, queue: str, vo: str, group: str) -> tuple:
        """(queue, VO, group) max_cores of a job's kind."""
        k = (queue, vo, group)
        got = self._caps_for.get(k)
        if got is None:
            if self.core_limits:
                cfg = self.cfg
                q, v, g = cfg.queues.get(queue), cfg.vos.get(vo), cfg.groups.get(group)
                got = (q.max_cores if q else None, v.max_cores if v else None, g.max_cores if g else None)
            else:
                got = _NONE
            self._caps_for[k] = got
        return got

    def _user_limits(self, user: str) -> tuple[str, UserLimits] | None:
        """The key that sets a user's limits (users.NAME or users.default) and the limits."""
        try:
            return self._user_caps[user]
        except KeyError:
            got = self._user_caps[user] = self.cfg.user_limits(user)
            return got

    def refusal(self, job: Job, vo: str, rules: JobRules) -> tuple[str, str] | None:
        """(reason, detail) of a limit or throttle the job's start would pass, or None."""
        if not self.on:
            return None
        lim = self.why(job, vo, rules)
        if lim is not None:
            return lim
        if self.throttles:
            why = self._throttled(job, vo, rules)
            if why is not None:
                return Reason.EXTERNAL_LOAD, why
        return None

    def why(self, job: Job, vo: str, rules: JobRules | None = None) -> tuple[str, str] | None:
        """(reason, detail) of a total limit the job's start would pass, or None."""
        if self.runlim is not None and (why := self.runlim.refuse(job)) is not None:
            return why
        r = rules or self.rules_for(job.queue, vo, job.group)
        if r.queue_max is not None and self.queue_jobs.get(job.queue, 0) >= r.queue_max:
            return Reason.QUEUE_MAX_RUNNING, ""
        if r.vo_max is not None and self.vo_jobs.get(vo, 0) >= r.vo_max:
            return Reason.VO_LIMIT, ""
        if r.group_max is not None and self.group_jobs.get(job.group, 0) >= r.group_max:
            return Reason.GROUP_LIMIT, ""
        return self._cap_why(job, vo) if self.caps else None

    def _cap_why(self, job: Job, vo: str) -> tuple[str, str] | None:
        """(reason, detail) of a core or user limit the job's start would pass, or None."""
        cores, queue, group, user = job.cores, job.queue, job.group, job.user
        q, v, g = self._core_caps(queue, vo, group)
        if q is not None and (n := self.queue_cores.get(queue, 0)) + cores > q:
            return Reason.QUEUE_CORE_LIMIT, _cores("queue", queue, self.queue_jobs.get(queue, 0), n, q, cores)
        if v is not None and (n := self.vo_cores.get(vo, 0)) + cores > v:
            return Reason.VO_CORE_LIMIT, _cores("VO", vo, self.vo_jobs.get(vo, 0), n, v, cores)
        if g is not None and (n := self.group_cores.get(group, 0)) + cores > g:
            return Reason.GROUP_CORE_LIMIT, _cores("group", group, self.group_jobs.get(group, 0), n, g, cores)
        ul = self._user_limits(user) if self.cfg.users else None
        if ul is not None:
            key, lim = ul
            jobs = self.user_jobs.get(user, 0)
            if lim.max_running is not None and jobs >= lim.max_running:
                return Reason.USER_LIMIT, f"user {user} runs {jobs} job(s); {key} max_running {lim.max_running}"
            if lim.max_cores is not None and (n := self.user_cores.get(user, 0)) + cores > lim.max_cores:
                return Reason.USER_CORE_LIMIT, _cores("user", user, jobs, n, lim.max_cores, cores, f"{key} max_cores")
        return None

    def drain_reason(self, job: Job, vo: str, reason: str) -> tuple[str, str]:
        """A limit the job hits, with its detail, else `reason`; memoised, since nothing that
        would change the answer for the job's kind starts any more (its VO or group is left)."""
        if not self.on:
            return reason, ""
        run = self.runlim
        key = (job.queue, vo, job.group, job.user if (run is not None and run.by_user) or self.cfg.users else "",
               job.cores if self.caps or (run is not None and run.by_amount) else 0, job.array,
               job.project if run is not None and run.by_project else "",
               job.mem if run is not None and run.by_amount else None)
        memo = self._drain_memo
        got = memo.get(key)
        if got is None:
            got = memo[key] = self.why(job, vo) or ("", "")
        limit, _detail = got
        return got if limit else (reason, "")

    def cores_left(self, reason: str, job: Job, vo: str) -> int:
        """Cores the VO's or group's max_cores still leaves (after `reason` refused `job`)."""
        _, v, g = self._core_caps(job.queue, vo, job.group)
        if reason == Reason.VO_CORE_LIMIT:
            return v - self.vo_cores.get(vo, 0)
        return g - self.group_cores.get(job.group, 0)

    def _throttled(self, job: Job, vo: str, r) -> str | None:  # noqa: ANN001
        """Why external load stops this job now (its VO, group or queue runs what the load
        leaves of its max_running or max_cores), or None."""
        for t in self.throttles:
            for kind, name, count, configured, listed in (
                    ("VO", vo, self.vo_jobs, r.vo_max, t.vos), ("group", job.group, self.group_jobs, r.group_max,
                                                               t.groups),
                    ("queue", job.queue, self.queue_jobs, r.queue_max, t.queues)):
                if name in listed:
                    cap = t.cap(configured, self.total_slots)
                    n = count.get(name, 0)
                    if n >= cap:
                        return f"{t.detail()}; {kind} {name} runs {n} job(s), the load allows {cap}"
            if self.caps:
                q, v, g = self._core_caps(job.queue, vo, job.group)
                for kind, name, held, configured, listed in (
                        ("VO", vo, self.vo_cores, v, t.vos), ("group", job.group, self.group_cores, g, t.groups),
                        ("queue", job.queue, self.queue_cores, q, t.queues)):
                    if configured is not None and name in listed:
                        cap = t.cap(configured, 0)
                        n = held.get(name, 0)
                        if n + job.cores > cap:
                            return (f"{t.detail()}; {kind} {name} runs {n} core(s), the load allows {cap} of its "
                                    f"max_cores {configured}, the job asks {job.cores}")
        return None

    def count(self, job: Job, vo: str) -> None:
        """Count a job the plan starts where the limits read it."""
        if not self.on:
            return
        group, queue = job.group, job.queue
        d = self.vo_jobs
        d[vo] = d.get(vo, 0) + 1
        d = self.group_jobs
        d[group] = d.get(group, 0) + 1
        d = self.queue_jobs
        d[queue] = d.get(queue, 0) + 1
        if self.runlim is not None:
            self.runlim.add(job)
        if self.caps:
            cores, user = job.cores, job.user
            for d, k in ((self.vo_cores, vo), (self.group_cores, group), (self.queue_cores, queue),
                         (self.user_cores, user)):
                d[k] = d.get(k, 0) + cores
            d = self.user_jobs
            d[user] = d.get(user, 0) + 1
