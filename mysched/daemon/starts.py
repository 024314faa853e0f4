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

A start the server refuses costs no slot: the cycle plans again without that job (and, for a
node the server called full or unknown, without that node) and starts what the new plan adds
(`after_starts`), at most `REPLANS` times. A refusal is logged once per job -- per array for
sub-jobs, whose refusals differ only in the job id -- and counted every time
(`mysched_job_start_failures_total{reason}`): an array of 400 sub-jobs refused every cycle
wrote 467 warnings in 20 minutes. A refusal for lack of privilege (not a manager or operator
of pbs_server) ends the starts of the cycle: every other start would be refused alike.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Callable, ContextManager

from mysched.backends.protocol import BatchServer
from mysched.backends.torque.values import array_parent
from mysched.core.model.batch import JobState, NodeState, Snapshot
from mysched.core.model.plan import Plan, Start
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
REPLANS = 3
"""Plans made again in one cycle after refused starts (each one's refusals exclude more)."""
REPLAN_ON = frozenset({"refused", "gone", "state", "error"})
"""Failures that free the slot planned for the job: the server said no, nothing started."""
NODE_REFUSALS = frozenset({"refused"})
"""Failures that name the node rather than the job (full, unknown, its pbs_mom down)."""


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


def after_starts(snapshot: Snapshot, done: list[tuple[Start, str]], now: float) -> Snapshot:
    """The farm as a plan made again should see it: the jobs started run where they were
    started; the jobs the server refused are left out, and so are the nodes it refused a
    start on, for the rest of this cycle (the next cycle reads them afresh)."""
    ok = {s.job_id: s for s, r in done if r == "ok"}
    out = {s.job_id for s, r in done if r != "ok"}
    closed = {n for s, r in done if r in NODE_REFUSALS for n, _ in s.placement}
    jobs = tuple(j._replace(state=JobState.RUNNING, start_time=now, placement=ok[j.id].placement) if j.id in ok else j
                 for j in snapshot.jobs if j.id not in out)
    nodes = tuple(replace(n, state=NodeState.OFFLINE) if n.name in closed else n
                  for n in snapshot.nodes) if closed else snapshot.nodes
    return replace(snapshot, jobs=jobs, nodes=nodes, token=None, changes=None)


def start_all(starter: "Starter", p: Plan, out: CycleOutcome, done: list[tuple[Start, str]],
              replan: Callable[[Snapshot], list[Start]], snapshot: Snapshot,
              intend: Callable[[list[Start]], bool], max_starts: int) -> None:
    """Run the plan's starts; after starts the server refused, plan again (`replan`, on the
    farm `after_starts` makes of `snapshot`), so that their slots go to the next jobs in this
    cycle. The new starts join `p` (the plan published), each with its intent (`intend`)
    recorded first; no more than `max_starts` start in all."""
    starts = p.starts
    for _ in range(REPLANS + 1):
        before = len(done)
        starter.run(starts, out, done)
        refused = sum(1 for _, r in done[before:] if r in REPLAN_ON)
        if not refused or out.result != "ok":
            return
        tried = {s.job_id for s, _ in done}
        starts = [s for s in replan(snapshot) if s.job_id not in tried][:max_starts - out.started]
        if not starts or not intend(starts):
            return
        log.info("%d start(s) refused by pbs_server: their slots go to %d other job(s) this cycle", refused,
                 len(starts))
        p.starts.extend(starts)
        for s in starts:
            p.waits.pop(s.job_id, None)
        out.planned += len(starts)


def _said(job_id: str, msg: str) -> tuple[str, str]:
    """A refusal as compared with the last one logged: by job, or by array for a sub-job,
    with the job id left out of the text."""
    return array_parent(job_id) or job_id, msg.replace(job_id, "")


class Starter:
    """Runs one plan's starts against `server`; `uncertain` (job ids whose pbs_runjob timed
    out) and `said` (the refusals logged, by job or array) are kept by the caller from cycle
    to cycle."""

    def __init__(self, server: BatchServer, metrics: CycleMetrics, may_start: Callable[[], bool],
                 timed: Callable[[str], ContextManager], uncertain: set[str],
                 said: dict[str, str] | None = None) -> None:
        self.server = server
        self.metrics = metrics
        self.may_start = may_start
        self.timed = timed
        self.uncertain = uncertain
        self.said = said if said is not None else {}
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
            except Unauthorized as exc:
                self.silent = 0
                self._unauthorized(starts[k:], out, done, str(exc))
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
        if self.said:
            self.said.pop(s.job_id, None)
            self.said.pop("", None)
        out.started += 1
        done.append((s, "ok"))
        log.info("started %s (%s/%s/%s) on %s: %s", s.job_id, s.vo, s.group, s.user, loc(s), s.reason)
        self.metrics.record_start(s.vo, s.reason)

    def _unauthorized(self, rest: list[Start], out: CycleOutcome, done: list, msg: str) -> None:
        """pbs_server refused a start for lack of privilege: so it would refuse every other.
        Said once (and again when it changes), the cycle's other starts not tried."""
        s = rest[0]
        out.failed += 1
        out.failures["unauthorized"] = out.failures.get("unauthorized", 0) + 1
        done.append((s, "unauthorized"))
        done.extend((r, "not_tried") for r in rest[1:])
        self.metrics.record_start_failure("unauthorized")
        text = msg.replace(f" {s.job_id}", "")
        out.result, out.error = "partial", text
        level = logging.DEBUG if self.said.get("") == text else logging.ERROR
        out.repeated += level == logging.DEBUG
        self.said[""] = text
        log.log(level, "no job can start: %s%s", text,
                f" ({len(rest) - 1} other planned start(s) not tried)" if len(rest) > 1 else "")

    def _fail(self, out: CycleOutcome, done: list, s: Start, reason: str, msg: str) -> None:
        out.failed += 1
        out.failures[reason] = out.failures.get(reason, 0) + 1
        done.append((s, reason))
        self.metrics.record_start_failure(reason)
        key, text = _said(s.job_id, f"{reason}: {msg}")
        if self.said.get(key) == text:
            out.repeated += 1
            log.debug("start of %s on %s failed again (%s): %s", s.job_id, loc(s), reason, msg)
            return
        if len(self.said) >= 10_000:
            self.said.clear()
        self.said[key] = text
        log.warning("start of %s on %s failed (%s): %s%s", s.job_id, loc(s), reason, msg,
                    " (the same refusal is not logged again for it, only counted)" if reason in REPLAN_ON else "")
