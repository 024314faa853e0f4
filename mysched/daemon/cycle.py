"""One scheduling cycle against a live batch server: read, plan, start, record, publish.

The `Daemon` composes the adapters around the pure planner, in the style of a state
machine whose instructions I/O executes: the plan says what to start, this module does it
and absorbs every failure of the outside world into counted, logged outcomes. It holds no
timer; `mysched.daemon.service` calls `cycle()` on its schedule.
"""

from __future__ import annotations

import logging
import math
import time
from typing import Any, Callable, Protocol

from mysched.core.settings import Config

from mysched.errors import ConfigError, MyschedError, ServerError, StoreError
from mysched.gcpause import gc_paused
from mysched.core.model.batch import FinishedJob, Snapshot
from mysched.core.model.plan import Plan, Start
from mysched.core.planner import NodeIndex, plan
from mysched.backends.protocol import BatchServer
from mysched.daemon.backlog import Backlog
from mysched.daemon.restartstate import carried
from mysched.daemon.outcome import CycleOutcome, Phases
from mysched.daemon.statusfile import publish_status, with_key, write_status
from mysched.core.rules.runtimes import RecentRuns
from mysched.core.share.usage import UsageLedger
from mysched.core.rules.walltimes import believed
from mysched.daemon.metrics import CycleMetrics, Guarded, NullMetrics, publish_farm
from mysched.backends.loads import LoadSources
from mysched.daemon.loadwatch import LoadWatch
from mysched.config.guarantees import farm_slots
from mysched.daemon.reload import reread
from mysched.daemon.role import Role, settle
from mysched.daemon.starts import FAILURE_REASONS, Starter, after_starts, start_all, still_uncertain  # noqa: F401
from mysched.daemon.starts import loc as _loc
from mysched.history.leader import Leadership, LeadershipLost

log = logging.getLogger("mysched")

WINDOW_REREAD = 3600.0
"""Seconds between whole reads of the usage window (records imported meanwhile count)."""


class HistoryStore(Protocol):
    """What the daemon needs from the history store (see `mysched.history.store.Store`)."""

    def finished_since(self, t: float) -> list[FinishedJob]: ...
    def add_finished(self, records: list[FinishedJob]) -> int: ...
    def record_cycles(self, records: list[dict[str, Any]]) -> list[int]: ...


class Daemon:
    """Runs cycles; keeps the last good configuration; never starts a job twice."""

    def __init__(self, config: Config, server: BatchServer, *, store: HistoryStore | None = None,
                 metrics: CycleMetrics | None = None, config_path: str | None = None, dry_run: bool = False,
                 state_dir: str | None = None, ingest: Callable[[], int] | None = None,
                 wall: Callable[[], float] = time.time, lead: Leadership | None = None,
                 loads: LoadSources | None = None) -> None:
        self.config = config
        self._started_with = config  # the settings `mysched run` read once, at start
        self.config_path = config_path
        self.server = server
        self.store = store
        self.metrics: CycleMetrics = Guarded(metrics) if metrics is not None else NullMetrics()
        self.dry_run = dry_run
        self.state_dir = state_dir if state_dir is not None else config.state_dir
        self.ingest = ingest
        self.wall = wall
        self.role = Role(lead, self.metrics, self.state_dir, wall, dry_run)
        self.loads = LoadWatch(loads, self.metrics)
        """Leader or standby (`mysched.daemon.role`); without a lock, always leader."""
        self.ledger: UsageLedger | None = None
        self.runs = RecentRuns()
        """The window's finished jobs' run times: estimates for jobs without a walltime."""
        self._partial = False
        """The ledger lacks the window's history: the store could not be read."""
        self._window_read = -math.inf
        """When the whole usage window was last read from the store."""
        self.index = NodeIndex()
        self._uncertain: set[str] = set()
        """Jobs whose pbs_runjob timed out: re-read before any new attempt."""
        self._said: dict[str, str] = {}
        """The last start refusal logged per job or array (a repeat is counted, not logged)."""
        self.last_ok: float | None = None
        self.consecutive_failures = 0
        self.events_expected = False
        """Set by the service when it listens for pbs_server's scheduler contacts."""
        self.events_seen = False  # set by the service at the first job event
        self._quiet: tuple[float, set[str], int] | None = None
        self._warned_scheduling = False
        self._last_crash: tuple[str, str] | None = None
        self.backlog = Backlog(store, self.metrics, wall)
        """What the store has not taken yet (finished jobs, cycles), and its failures."""
        self._check_intents = True
        """Look for starts a stopped daemon left without an outcome (at start-up, and after a
        cycle whose record failed)."""
        self._outage_since: float | None = None
        self._outage_msg = ""
        self._last_doc: bytes | None = None
        """The last good status file's bytes (not the document: tens of MB at 50,000 jobs)."""
        self._publish_s: float | None = None
        self._status_error = ""
        """Why the status file could not be written ("" when it could)."""
        # the last plan's reservations, drains and pool gates, carried into the next (over a restart too)
        self._resv, self._drains, self._gates = carried(self.state_dir, wall(), 10 * config.interval)
        self.farm_slots: int | None = None
        """Every node's slots at the last snapshot: a reload's guarantees must fit them."""

    @property
    def history_error(self) -> str:
        """What went wrong with the history this cycle ("" if nothing)."""
        return self.backlog.error

    # -- configuration ---------------------------------------------------------------------
    def reload(self) -> bool:
        """Re-read the configuration file; a bad file is logged and counted, the old one stays."""
        if not self.config_path:
            log.warning("reload requested but the configuration came from no file")
            return False
        try:
            new = reread(self.config_path, self._started_with, self.farm_slots)
            if self.loads.sources is not None:
                self.loads.sources.update(new.load_sources)
        except ConfigError as exc:
            # one record, each problem in it: journald keeps a line of its own apart from the error
            log.error("configuration reload rejected, keeping the previous one: %s", "; ".join(str(exc).splitlines()))
            self.metrics.reload("error")
            return False
        except Exception:  # noqa: BLE001 - a bug in reading the file must not end the daemon
            log.exception("configuration reload failed (a mysched bug: please report it); keeping the previous one")
            self.metrics.reload("error")
            return False
        self.config = new
        self.ledger = None  # window or decay may have changed: rebuild from the store
        log.info("configuration reloaded from %s", self.config_path)
        self.metrics.reload("ok")
        return True

    # -- history ---------------------------------------------------------------------------
    def _events_silent(self, now: float, ids: set[str]) -> None:
        """pbs_server sends events, but none came in 10 minutes while jobs came and went: it
        contacts the address its host name resolves to, not the one listened on. Said once."""
        if self._quiet is None:
            self._quiet = (now, ids, 0)
            return
        since, before, changed = self._quiet
        changed += len(ids ^ before)
        self._quiet = (since, ids, changed)
        if changed >= 5 and now - since >= 600:
            log.warning("pbs_server has scheduling = True and %d jobs came or went in %.0f min, but no job event "
                        "arrived: listen on the address the server's host name resolves to (daemon.event_address); "
                        "cycles run on the fixed interval", changed, (now - since) / 60)
            self._warned_scheduling = True

    def _history(self, now: float, snapshot: Snapshot) -> UsageLedger:
        """Decayed usage for this cycle. Store failures do not stop scheduling: finished jobs
        taken from the server stay pending (and count in usage) until a write succeeds; each
        failure is logged, counted and flagged in the status file."""
        cfg = self.config
        new: list[FinishedJob] = []
        pop = getattr(self.server, "pop_finished", None)
        if pop is not None:
            new = pop()
        if self.store is not None:
            if self.ingest is not None:
                try:
                    self.ingest()
                except MyschedError as exc:
                    self.backlog.failed(f"accounting ingestion: {exc}", exc=exc)
                except Exception as exc:  # noqa: BLE001 - a bug must not stop scheduling: logged whole, once
                    msg = f"accounting ingestion: unexpected {type(exc).__name__}: {exc} (a mysched bug: report it)"
                    if msg not in self.backlog.said:
                        log.error("accounting ingestion hit a mysched bug (please report it):", exc_info=exc)
                    self.backlog.failed(msg)
            self.backlog.add_finished(new)
        if self.ledger is None or self._partial or now - self._window_read >= WINDOW_REREAD:
            # The window is read whole (at start, after a reload or a takeover, and hourly:
            # records imported meanwhile with `mysched history import` may end anywhere in
            # it, not only after the last read, which the cycles between look at). A store that
            # cannot be read leaves a ledger of what finished since, marked partial and read
            # again every cycle: the failed read used to leave an empty ledger behind it,
            # and the window's usage was lost for the daemon's lifetime.
            recs: list[FinishedJob] | None = []
            if self.store is not None:
                try:
                    recs = self.store.finished_since(now - cfg.history_window)
                except StoreError as exc:
                    recs = None
                    self.backlog.failed(str(exc), " (usage counts only what finished since, until it reads again)", exc)
            if recs is not None or self.ledger is None:
                self.ledger = UsageLedger(cfg.history_window, cfg.half_life, vo_of=cfg.vo_of)
                self.runs = RecentRuns()
                self._seen_ids = set()
            self._partial = recs is None
            if recs is not None:
                self._window_read = now
            self._count((recs or []) + self.backlog.finished + (new if self.store is None or self._partial else []))
        else:
            # Records may arrive a little after their end time (log lag): look back a margin;
            # the seen-set keeps each job counted once.
            margin = max(600.0, 2 * cfg.interval)
            recs: list[FinishedJob] = []
            if self.store is not None:
                try:
                    recs = self.store.finished_since(self._last_history - margin)
                except StoreError as exc:
                    self.backlog.failed(str(exc), " (usage goes on from memory)", exc)
            self._count(recs + self.backlog.finished + ([] if self.store is not None else new))
            if len(self._seen_ids) > 500_000:
                self._seen_ids = {(jid, start) for jid, start in self._seen_ids if start >= now - 2 * cfg.history_window}
        self._last_history = now
        return self.ledger

    def _count(self, recs: list[FinishedJob]) -> None:
        fresh: list[FinishedJob] = []
        for r in sorted(recs, key=lambda r: r.end or 0):
            k = (r.id, r.start)
            if k not in self._seen_ids:
                self._seen_ids.add(k)
                self.ledger.add_job(r)
                fresh.append(r)
        self.runs.add_records(fresh)

    # -- exactly-once starts ------------------------------------------------------------------
    def _intend(self, now: float, starts: list[Start]) -> bool:
        """Record the starts about to be made before the first pbs_runjob: a kill from here on
        leaves them to `_reconcile`. The same write proves leadership: False if it is lost.
        A SQLite store that cannot take them (read-only, or locked by another process: not
        waited for, see `mysched.daemon.backlog`) is flagged; the starts go ahead (its
        leadership lock is a file of its own, and pbs_server refuses to run a running job)."""
        if not starts:
            return True
        try:
            self.role.fence(self.store, [{"job_id": s.job_id, "placement": _loc(s), "reason": s.reason}
                                         for s in starts], now)
        except LeadershipLost as exc:
            log.error("leadership not proved before starting (%s): %d planned start(s) dropped", exc,
                      len(starts))
            return False
        except StoreError as exc:
            self.backlog.failed(str(exc), " (starting without recorded intents)", exc)
        return True

    def _reconcile(self, now: float, snapshot: Snapshot) -> None:
        """Settle the intents a stopped daemon left: the server says whether each job started
        (it runs, or ran and is gone) or not (still queued: the planner decides anew). The
        outcome is recorded as a cycle of its own, which closes the intents (or waits to be
        written, with this daemon's own cycles: their intents are not settled here)."""
        try:
            intents = self.store.open_intents()
        except StoreError as exc:
            self.backlog.failed(str(exc), exc=exc)
            return
        self._check_intents = False
        ours = self.backlog.pending_jobs()
        intents = [i for i in intents if i["job_id"] not in ours]
        if not intents:
            return
        starts = settle(intents, snapshot)
        self.backlog.record_cycle(dict(time=now, duration=0.0, result="recovered",
                                       n_started=sum(s["result"] == "ok" for s in starts),
                                       n_failed=sum(s["result"] != "ok" for s in starts), n_queued=0, n_running=0,
                                       summary={"recovered": len(starts)}, starts=starts),
                                  "could not record the recovered starts")

    # -- the cycle -------------------------------------------------------------------------
    def cycle(self) -> CycleOutcome:
        """Run one cycle; never raises for outside failures (server, store, status file)."""
        t0 = time.perf_counter()
        self.backlog.begin_cycle()
        cfg = self.config
        if not self.dry_run:  # a dry run starts nothing: it needs no leadership
            leading, new = self.role.leading()
            if not leading:
                self.metrics.observe_cycle(0.0, "standby")
                return CycleOutcome("standby")
            if new:  # what the previous leader did is in the store and on the server
                self._check_intents, self.ledger = True, None
                self._uncertain.clear()
        try:
            with self._timed("snapshot"):
                snapshot = self.server.snapshot()
        except ServerError as exc:
            return self._failed(t0, f"batch server: {exc}")
        snapshot = believed(snapshot, cfg.max_walltime)  # walltime=0 or of 11 million years: unknown
        phases = Phases(t0)
        phases.mark("read")
        self.farm_slots = farm_slots(n.slots for n in snapshot.nodes)
        self._uncertain = still_uncertain(self._uncertain, snapshot)
        now = snapshot.time or self.wall()
        scheduling = (snapshot.extra.get("server") or {}).get("scheduling", "")
        if getattr(self.server, "EVENTS", "scheduling") != "scheduling":
            scheduling = ""  # events come from elsewhere (an OpenPBS server hook): the flag says nothing of them
        if self.events_expected and scheduling.lower() == "false" and not self._warned_scheduling:
            log.warning("listening for job events, but pbs_server has scheduling = False and will send none; "
                        "cycles run on the fixed interval (qmgr -c 'set server scheduling = True')")
            self._warned_scheduling = True
        if self.events_expected and not (self.events_seen or self._warned_scheduling) and scheduling.lower() == "true":
            self._events_silent(now, {j.id for j in snapshot.jobs})
        if self._check_intents and self.store is not None and not self.dry_run:
            self._reconcile(now, snapshot)
        try:
            ledger = self._history(now, snapshot)
            running = [j for j in snapshot.jobs if j.state.holds_slots]
            usage = ledger.usage(now, running, cfg.vo_of)
        except StoreError as exc:
            return self._failed(t0, f"history store: {exc}")
        phases.mark("history")
        p0 = time.perf_counter()
        throttles = self.loads.throttles(cfg, self.wall())
        with gc_paused():  # a farm's worth of objects and no cycles: spare the collector's scans
            p = plan(snapshot, cfg, usage, now, index=self.index, throttles=throttles,
                     reservations=self._resv, drains=self._drains, pool_gates=self._gates, runs=self.runs)
        self._resv, self._drains, self._gates = p.reservations, p.drains, p.pool_gates
        plan_s = time.perf_counter() - p0
        phases.mark("plan")
        out = CycleOutcome("dry-run" if self.dry_run else "ok", planned=len(p.starts), plan_s=plan_s, plan=p,
                           phases=phases.seconds)
        done: list[tuple[Start, str]] = []
        if self.dry_run:
            for s in p.starts:
                log.info("dry run: would start %s (%s/%s/%s, %d core%s) on %s: %s", s.job_id, s.vo, s.group,
                         s.user, s.cores, "s" if s.cores > 1 else "", _loc(s), s.reason)
        elif self._intend(now, p.starts):
            def replan(snap: Snapshot) -> Plan:
                with gc_paused():
                    return plan(snap, cfg, usage, now, index=self.index, throttles=throttles,
                                reservations=p.reservations, drains=p.drains, pool_gates=p.pool_gates,
                                runs=self.runs)
            self._start_all(p, out, done, replan, snapshot, now)
        else:
            self.metrics.observe_cycle(0.0, "standby")
            return CycleOutcome("standby", planned=len(p.starts), error="leadership lost")
        phases.mark("start")
        out.duration = time.perf_counter() - t0  # so far: the history row and status file say so
        self._record(now, snapshot, p, out, done)
        self.backlog.end_cycle()
        phases.mark("record")
        out.duration = time.perf_counter() - t0
        self._publish(snapshot, p, out, done, usage)
        phases.mark("publish")
        self._publish_s = phases.seconds["publish"]
        out.duration = time.perf_counter() - t0
        self.metrics.observe_phases(out.phases)
        self.last_ok = self.wall()
        if self._outage_since is not None:
            log.info("cycle ok again after %.0f s of failures (%s)", self.wall() - self._outage_since,
                     self._outage_msg)
            self._outage_since, self._outage_msg = None, ""
        self.consecutive_failures = 0
        self._last_crash = None
        self.metrics.observe_cycle(out.duration, out.result)
        return out

    def _start_all(self, p: Plan, out: CycleOutcome, done: list[tuple[Start, str]],
                   replan: Callable[[Snapshot], Plan], snapshot: Snapshot, now: float) -> None:
        starter = Starter(self.server, self.metrics, self.role.may_start, self._timed, self._uncertain, self._said)
        start_all(starter, p, out, done, lambda snap: replan(after_starts(snap, done, now)).starts, snapshot,
                  lambda starts: self._intend(now, starts), self.config.max_starts_per_cycle)

    def crashed(self, exc: BaseException) -> CycleOutcome:
        """A cycle that raised (a bug, not the outside world): log its traceback -- once for a
        repeated failure, then one line -- count it, and let the service carry on."""
        self.consecutive_failures += 1
        kind, text = key = (type(exc).__name__, str(exc))
        if key != self._last_crash:
            log.error("cycle crashed (%d in a row; a bug -- the next cycle follows):", self.consecutive_failures,
                      exc_info=exc)
            self._last_crash = key
        else:
            log.error("cycle crashed again (%d in a row): %s: %s", self.consecutive_failures, *key)
        self.metrics.observe_cycle(0.0, "crash")
        self.metrics.cycle_error("internal")
        return CycleOutcome("crash", error=f"internal error: {kind}: {text}")

    def _failed(self, t0: float, msg: str) -> CycleOutcome:
        """A cycle the outside world stopped (server or store down): logged when the failure
        begins or changes -- an outage is one error line, not one per retry -- counted, and
        the last status republished marked stale, so users see why nothing moves."""
        self.consecutive_failures += 1
        out = CycleOutcome("error", duration=time.perf_counter() - t0, error=msg)
        if self.consecutive_failures == 1 or msg != self._outage_msg:
            log.error("cycle failed: %s (retrying every cycle; logged again when it changes or ends)", msg)
            self._outage_msg = msg
            if self._outage_since is None:
                self._outage_since = self.wall()
        else:
            log.debug("cycle failed (%d in a row): %s", self.consecutive_failures, msg)
        self.metrics.observe_cycle(out.duration, "error")
        self.metrics.cycle_error("server" if msg.startswith("batch server") else "store")
        self._publish_stale(msg)
        return out

    def _publish_stale(self, msg: str) -> None:
        """The last good status again, with what is wrong and since when."""
        if not self.state_dir or self._last_doc is None:
            return
        doc = with_key(self._last_doc, "stale", {"since": self._outage_since, "error": msg, "checked": self.wall()})
        try:
            write_status(self.state_dir, doc)
        except OSError as exc:
            self._status_failed(exc)

    def _status_failed(self, exc: OSError) -> None:
        """Logged when it begins or changes, not every cycle (event-driven cycles come
        several a second: an unwritable state directory filled the log with one error each)."""
        what = exc.strerror or str(exc)  # not the file name: a new temporary file every time
        if what != self._status_error:
            log.error("could not write the status file in %s: %s (logged again when it changes or ends)",
                      self.state_dir, exc)
            self._status_error = what
        else:
            log.debug("could not write the status file in %s: %s", self.state_dir, exc)

    def _timed(self, call: str):
        return self.metrics.time_call(call)

    def _record(self, now: float, snapshot: Snapshot, p: Plan, out: CycleOutcome, done: list) -> None:
        if self.store is None:
            return
        dropped = self.backlog.dropped
        self.backlog.record_cycle(dict(
            time=now, duration=out.duration, result=out.result, n_started=out.started, n_failed=out.failed,
            n_queued=sum(v.queued_jobs for v in p.vos.values()), n_running=sum(v.running_jobs for v in p.vos.values()),
            summary={"plan_s": out.plan_s, "phases": {k: round(v, 4) for k, v in out.phases.items()},
                     "reasons": p.reasons(), "failures": out.failures,
                     "used_slots": p.used_slots, "total_slots": p.total_slots},
            starts=[{"job_id": s.job_id, "placement": _loc(s), "reason": s.reason, "result": r, "user": s.user}
                    for s, r in done]))
        if self.backlog.dropped > dropped:
            self._check_intents = True  # the intents of the dropped cycles' starts are left open

    def _publish(self, snapshot: Snapshot, p: Plan, out: CycleOutcome, done: list, usage) -> None:
        cfg = self.config
        # duration_s and phases run up to this publish; the file cannot time its own writing, so
        # it carries the previous cycle's publish time (in the metrics with every cycle's).
        cycle = {"result": out.result, "duration_s": round(out.duration, 4), "plan_s": round(out.plan_s, 4),
                 "phases": {k: round(v, 4) for k, v in out.phases.items()},
                 "previous_publish_s": round(self._publish_s, 4) if self._publish_s is not None else None,
                 "started": out.started, "failed": out.failed, "failures": out.failures,
                 "dry_run": self.dry_run, "history_ok": not self.history_error,
                 "history_error": self.history_error or None, "history_pending": len(self.backlog.finished),
                 "history_pending_cycles": len(self.backlog.cycles)}
        if self.state_dir:
            try:
                self._last_doc = publish_status(
                    self.state_dir, snapshot, p, cfg, cycle=cycle, published=self.wall(), usage=usage,
                    dry_run=self.dry_run, started={st.job_id for st, r in done if r == "ok"},
                    extra={"role": self.role.doc(), "load_sources": self.loads.doc})
                if self._status_error:
                    log.info("status file in %s written again", self.state_dir)
                    self._status_error = ""
            except OSError as exc:
                self._status_failed(exc)
        if not isinstance(self.metrics, NullMetrics):
            publish_farm(self.metrics, p, [s for s, r in done if r == "ok"])

