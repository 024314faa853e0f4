"""A cycle's starts: one pbs_runjob per planned start, each job started at most once.

A pbs_runjob that timed out may have taken effect, so the job is re-read before it is
counted or tried again (then, or at its next planned start, when it stays `uncertain`).
A pbs_server that answers nothing costs every call `server.timeout`: once two calls in a
row have had no answer (a runjob and the re-read of its job, say) the rest of the plan is
dropped, as when the connection is refused. Before, a server that took new connections but
answered none cost each remaining start a runjob and a re-read timeout: a plan of 1,000
starts at 30 s held the cycle 17 hours, far past systemd's watchdog (a SIGSTOPped TORQUE
6.1 refuses the new connection's authentication, which ended the loop at the second
start). One job the server hangs on (a deadlock on its mutex) costs its re-read at each
later cycle; the starts after it go ahead.
"""

from __future__ import annotations

import logging
from typing import Callable, ContextManager

from mysched.backends.protocol import BatchServer
from mysched.core.model import JobState, Snapshot
from mysched.core.plan import Start
from mysched.daemon.metrics import CycleMetrics
from mysched.daemon.outcome import CycleOutcome
from mysched.errors import (JobGone, JobStateError, RunRefused, ServerError, ServerTimeout, ServerUnavailable,
                            Unauthorized)

log = logging.getLogger("mysched")

FAILURE_REASONS = {JobGone: "gone", JobStateError: "state", RunRefused: "refused", ServerTimeout: "timeout",
                   Unauthorized: "unauthorized"}
SILENT_LIMIT = 2
"""Calls in a row that got no answer (timed out or could not connect) before the rest of
the plan is dropped."""


def loc(s: Start) -> str:
    """The location handed to pbs_runjob, as logged and recorded."""
    return "+".join(f"{n}:ppn={c}" for n, c in s.placement)


def still_uncertain(uncertain: set[str], snapshot: Snapshot) -> set[str]:
    """The timed-out starts whose job is still queued: one that runs (the start took effect
    after all) or has gone is never planned again, and is forgotten."""
    if not uncertain:
        return uncertain
    queued = {j.id for j in snapshot.jobs if j.state == JobState.QUEUED}
    for jid in sorted(uncertain - queued):
        log.info("%s: no longer queued after its timed-out start", jid)
    return uncertain & queued


class Starter:
    """Runs one plan's starts against `server`; `uncertain` (job ids whose pbs_runjob timed
    out) is kept by the caller from cycle to cycle."""

    def __init__(self, server: BatchServer, metrics: CycleMetrics, may_start: Callable[[], bool],
                 timed: Callable[[str], ContextManager], uncertain: set[str]) -> None:
        self.server = server
        self.metrics = metrics
        self.may_start = may_start
        self.timed = timed
        self.uncertain = uncertain
        self.silent = 0
        """Calls in a row without an answer from pbs_server."""

    def run(self, starts: list[Start], out: CycleOutcome, done: list[tuple[Start, str]]) -> None:
        for k, s in enumerate(starts):
            if not self.may_start():  # its lease ran out and could not be renewed
                self._drop(starts[k:], out, done, "not_leader", "leadership lost during starts")
                return
            if self.silent >= SILENT_LIMIT:
                self._drop(starts[k:], out, done, "not_tried", "pbs_server did not answer "
                           f"{self.silent} calls in a row during starts")
                return
            if s.job_id in self.uncertain and not self._still_queued(s, out, done):
                continue
            try:
                with self.timed("runjob"):
                    self.server.run_job(s.job_id, s.placement)
            except ServerTimeout as exc:
                self.silent += 1
                self.uncertain.add(s.job_id)
                self._timed_out(s, out, done, str(exc))
                continue
            except ServerUnavailable as exc:
                # The server went away mid-cycle: the rest of the plan is void.
                self._fail(out, done, s, "unavailable", str(exc))
                self._drop(starts[k + 1:], out, done, "not_tried", f"batch server lost during starts: {exc}")
                return
            except ServerError as exc:
                self.silent = 0
                reason = next((r for t, r in FAILURE_REASONS.items() if isinstance(exc, t)), "error")
                self._fail(out, done, s, reason, str(exc))
                continue
            self.silent = 0
            self._ok(out, done, s)

    def _still_queued(self, s: Start, out: CycleOutcome, done: list) -> bool:
        """A start of this job timed out before: look before touching it again. True if it
        is still queued (then it may be started)."""
        try:
            job = self.server.get_job(s.job_id)
        except ServerError as exc:
            if isinstance(exc, ServerUnavailable):
                self.silent += 1
            self._fail(out, done, s, "timeout", f"cannot re-read {s.job_id}: {exc}")
            return False
        self.silent = 0
        self.uncertain.discard(s.job_id)
        if job is None or job.state != JobState.QUEUED:
            log.info("%s: earlier timed-out start took effect (state %s); not starting again",
                     s.job_id, job.state.value if job else "gone")
            return False
        return True

    def _timed_out(self, s: Start, out: CycleOutcome, done: list, msg: str) -> None:
        """pbs_runjob gave no answer: the job is re-read now, unless the server has just
        failed to answer before (then it stays uncertain and is re-read next time)."""
        job = None
        if self.silent < SILENT_LIMIT:
            try:
                job = self.server.get_job(s.job_id)
                self.silent = 0
            except ServerUnavailable:
                self.silent += 1
            except ServerError:
                self.silent = 0
        if job is not None and job.state in (JobState.RUNNING, JobState.EXITING):
            self.uncertain.discard(s.job_id)
            self._ok(out, done, s)
        else:
            self._fail(out, done, s, "timeout", msg)

    def _drop(self, rest: list[Start], out: CycleOutcome, done: list, reason: str, error: str) -> None:
        """The rest of the plan is not tried this cycle: each is recorded with `reason`, which
        closes its intent (left open, a later restart would settle it as a start of its own)."""
        done.extend((s, reason) for s in rest)
        out.result, out.error = "partial", error
        log.error("%s; %d planned start(s) dropped", error, len(rest))

    def _ok(self, out: CycleOutcome, done: list, s: Start) -> None:
        out.started += 1
        done.append((s, "ok"))
        log.info("started %s (%s/%s/%s) on %s: %s", s.job_id, s.vo, s.group, s.user, loc(s), s.reason)
        self.metrics.record_start(s.vo, s.reason)

    def _fail(self, out: CycleOutcome, done: list, s: Start, reason: str, msg: str) -> None:
        out.failed += 1
        out.failures[reason] = out.failures.get(reason, 0) + 1
        done.append((s, reason))
        log.warning("start of %s on %s failed (%s): %s", s.job_id, loc(s), reason, msg)
        self.metrics.record_start_failure(reason)
