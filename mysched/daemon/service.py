"""The long-running service: APScheduler loop, signals, systemd notification, events.

Cycles run one at a time on a fixed interval (coalesced: a late cycle is run once, not
caught up). With an event listener, a job submission or end reported by pbs_server brings
the next cycle forward, no sooner than `min_interval` after the last one. So does the time
at which the last plan said it would change by itself (`Plan.wake_at`: a reservation's
start, a drain's keep running out, a downtime's end), no sooner than `min_interval` after
that plan's cycle. A failed cycle
(server down) is retried with exponential back-off up to one interval (a crash: four). A
standby tries the leadership lock every quarter of the leader timeout instead. SIGHUP
reloads the configuration (a bad file is rejected and the old one kept); SIGTERM/SIGINT let
the current cycle finish, give up leadership and exit 0.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
import signal
import threading
import time
from typing import Any, Callable

from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.date import DateTrigger

from mysched.daemon import sdnotify
from mysched.daemon.cycle import CycleOutcome, Daemon
from mysched.errors import StoreError
from mysched.history.retention import Pruner
from mysched.history.store import Store

log = logging.getLogger("mysched")


class Service:
    """Drive a `Daemon` until stopped."""

    def __init__(self, daemon: Daemon, *, listener_factory: Callable[[Callable[[str], None]], Any] | None = None,
                 once: bool = False, clock: Callable[[], dt.datetime] = dt.datetime.now) -> None:
        self.daemon = daemon
        self.clock = clock
        """Local time, as APScheduler's date triggers take it (injectable for tests)."""
        self.listener_factory = listener_factory
        self.listener = None
        self.once = once
        self._stop = threading.Event()
        self._reload = threading.Event()
        self._lock = threading.Lock()
        self._event_pending = False
        self._last_cycle_start = 0.0
        self._events_seen = False
        self.cycles = 0
        self.last: CycleOutcome | None = None
        self._sched: BackgroundScheduler | None = None
        self._next_at: dt.datetime | None = None
        """When the scheduled cycle runs (wall clock)."""
        self._ready_sent = False
        self.pruner = Pruner()

    # -- scheduling ------------------------------------------------------------------------
    @property
    def _scale(self) -> float:
        """Wall seconds per configured second: a simulated server's clock may run faster."""
        return 1.0 / float(getattr(self.daemon.server, "speed", 1.0) or 1.0)

    def _delay_after(self, out: CycleOutcome) -> float:
        cfg = self.daemon.config
        if out.result == "standby":  # wall seconds: the leader timeout is not scaled
            return self.daemon.role.poll
        if out.result in ("error", "crash"):
            # Back off, but never past one interval: when pbs_server returns, jobs start
            # again within a cycle (a crash backs off up to four, a bug need not spin).
            k = self.daemon.consecutive_failures
            cap = cfg.interval if out.result == "error" else 4 * cfg.interval
            return min(cap, max(cfg.min_interval, 1.0) * 2 ** (k - 1)) * self._scale
        regular = (cfg.min_interval if self._event_pending else cfg.interval) * self._scale
        wake = self._wake_delay(out)
        if wake is not None and wake < regular:
            log.debug("the plan changes by itself in %.1f s: next cycle then", wake)
            return wake
        return regular

    def _wake_delay(self, out: CycleOutcome) -> float | None:
        """Wall seconds until the cycle's plan would change by itself (`Plan.wake_at`), no
        sooner than `min_interval`; None if it would not."""
        p = out.plan
        if p is None or p.wake_at is None:
            return None
        return max(p.wake_at - p.now, self.daemon.config.min_interval) * self._scale

    def _schedule(self, delay: float, sooner_only: bool = False) -> None:
        """The next cycle in `delay` wall seconds; with `sooner_only` only if that brings it
        forward (a reload or a job event never puts off a cycle a plan's wake time set)."""
        if self._sched is None or self._stop.is_set():
            return
        when = self.clock() + dt.timedelta(seconds=max(0.0, delay))
        if sooner_only and self._next_at is not None and self._next_at <= when:
            return
        self._next_at = when
        self._sched.add_job(self._run_cycle, DateTrigger(run_date=when), id="cycle", replace_existing=True,
                            max_instances=1, coalesce=True, misfire_grace_time=None)

    def _run_cycle(self) -> None:
        if self._stop.is_set():
            return
        with self._lock:
            self._event_pending = False
            self._last_cycle_start = time.monotonic()
            out = self._cycle()
            self._prune(out)
        # The next cycle is scheduled whatever happens after this one: an exception here
        # went to APScheduler, which logs it and schedules nothing -- a daemon alive, and
        # idle for good (until systemd's watchdog, where there is one).
        delay = self.daemon.config.interval * self._scale
        try:
            self._after_cycle(out)
            delay = self._delay_after(out)
        except Exception:  # noqa: BLE001 - the loop must outlive its own bugs
            log.exception("after the cycle (a mysched bug: please report it); the next cycle follows")
        if self.once:
            self._stop.set()
            return
        self._schedule(delay)

    def _cycle(self) -> CycleOutcome:
        """One cycle, whatever it raises: an exception from a bug is the daemon's own failure,
        logged and counted, and the next cycle is scheduled as after any failure."""
        try:
            out = self.daemon.cycle()
        except Exception as exc:  # noqa: BLE001 - the loop must outlive its own bugs
            out = self.daemon.crashed(exc)
        self.cycles += 1
        self.last = dataclasses.replace(out, plan=None)  # not the plan: it holds every job
        return out

    def _prune(self, out: CycleOutcome) -> None:
        """The leader keeps the history store within `history.keep_cycles` / `keep_jobs`
        (`mysched.history.retention`), between cycles; a failure is logged, never fatal."""
        store, cfg = self.daemon.store, self.daemon.config
        if not isinstance(store, Store) or out.result not in ("ok", "partial") or out.plan is None:
            return
        try:
            self.pruner.maybe(store, out.plan.now, cfg.keep_cycles, cfg.keep_jobs)
        except StoreError as exc:  # logged once with the store's other failures (a lock once per outage)
            self.daemon.backlog.failed(str(exc), " (pruning tried again in an hour)", exc)
        except Exception:  # noqa: BLE001 - a bug here must not stop the cycles that follow
            log.exception("history: pruning failed (tried again in an hour)")
            self.daemon.metrics.history_write_error()

    def _after_cycle(self, out: CycleOutcome) -> None:
        if out.result == "standby":
            text = "standby: " + (out.error or "another daemon leads")
        elif out.result in ("error", "crash"):
            text = f"cycle failed: {out.error}"
        else:
            text = (f"cycle {out.result}: {out.started} started, {out.failed} failed, "
                    f"{out.duration:.2f} s" + _phase_text(out)
                    + (f" ({out.planned} planned, dry run)" if self.daemon.dry_run else ""))
            # A cycle that changed nothing is routine: event-driven cycles can come several a
            # second; the log keeps what happened.
            did = out.started or out.failed or out.planned or out.result not in ("ok", "dry-run")
            if out.failed and out.failed == out.repeated and not out.started:
                did = False  # only refusals said before: counted, and the log not filled with them
            log.log(logging.INFO if did else logging.DEBUG, "%s (plan %.3f s)", text, out.plan_s)
        if not self._ready_sent:
            # Ready once config, store and a first contact with the server were tried.
            sdnotify.ready(text)
            self._ready_sent = True
        else:
            sdnotify.status(text)
        # The watchdog watches the daemon, not pbs_server: a cycle that completed (even one
        # that found the server down) proves the loop is alive; one that crashed does not, so
        # a daemon whose every cycle crashes is restarted by systemd.
        if out.result != "crash":
            sdnotify.watchdog()

    def on_event(self, reason: str) -> None:
        """pbs_server reported a job event: bring the next cycle forward (rate-limited). Only
        the listener's accepted contacts come here, so only they count as events seen."""
        cfg = self.daemon.config
        self._event_pending = True
        self.daemon.events_seen = True
        if not self._events_seen:  # says so once: scheduling may have been off when the daemon started
            self._events_seen = True
            log.info("pbs_server job events arrive (%s): a cycle follows each, at most every %g s", reason,
                     cfg.min_interval)
        if self._lock.locked():
            return  # the running cycle will schedule the next one at min_interval
        since = time.monotonic() - self._last_cycle_start
        delay = max(0.0, cfg.min_interval * self._scale - since)
        self._schedule(delay, sooner_only=True)
        log.debug("event %s: next cycle in %.1f s", reason, delay)

    # -- lifecycle -------------------------------------------------------------------------
    def _signals(self) -> None:
        def stop(signum, frame):
            log.info("signal %s: finishing the current cycle, then exiting", signal.Signals(signum).name)
            self._stop.set()

        def hup(signum, frame):
            self._reload.set()

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGHUP, hup)

    def run(self) -> int:
        """Run until SIGTERM/SIGINT (or one cycle with `once`); return the exit status."""
        if self.once:
            self._run_cycle_once()
            self.daemon.backlog.close()
            self.daemon.role.release()
            last = self.last
            if last is None or last.result in ("error", "crash", "standby"):
                return 1
            # every start refused for lack of privilege (said once in the log): nothing can start
            return 1 if last.failures.get("unauthorized") and not last.started else 0
        if threading.current_thread() is threading.main_thread():
            self._signals()
        if self.listener_factory is not None:
            try:
                self.listener = self.listener_factory(self.on_event)
                self.daemon.events_expected = True
            except Exception as exc:  # noqa: BLE001 - events are an optimisation; the interval remains
                log.error("event listener not started (%s); cycles run on the fixed interval only", exc)
        self._sched = BackgroundScheduler(job_defaults={"coalesce": True, "max_instances": 1})
        self._sched.start()
        self._schedule(0)
        try:
            while not self._stop.wait(0.5):
                if self._reload.is_set():
                    self._reload.clear()
                    self._reload_now()
        finally:
            sdnotify.stopping()
            self._sched.shutdown(wait=True)  # a running cycle finishes first
            if self.listener is not None:
                try:
                    self.listener.close()
                except Exception:  # noqa: BLE001
                    pass
            try:
                self.daemon.server.close()
            except Exception:  # noqa: BLE001
                pass
            self.daemon.backlog.close()  # what the store has not taken yet
            self.daemon.role.release()  # a standby takes over at its next try
        log.info("stopped after %d cycle(s)", self.cycles)
        return 0

    def _reload_now(self) -> None:
        """SIGHUP: re-read the file between cycles (`Daemon.reload` keeps the old one if it
        is bad); whatever raises here is logged, and the daemon runs on."""
        sdnotify.reloading()
        try:
            before = self.daemon.config.interval
            with self._lock:
                self.daemon.reload()
                if self.daemon.config.interval < before:  # not after the wait the old one set
                    since = time.monotonic() - self._last_cycle_start
                    self._schedule(self.daemon.config.interval * self._scale - since, sooner_only=True)
        except Exception:  # noqa: BLE001 - the loop must outlive its own bugs
            log.exception("configuration reload failed (a mysched bug: please report it)")
        sdnotify.ready("configuration reloaded")

    def _run_cycle_once(self) -> None:
        with self._lock:
            out = self._cycle()
            self._prune(out)
        if out.result == "standby":
            err = self.daemon.role.error  # the lock could not be tried at all, or another holds it
            log.error("%s: --once ran no cycle", err or "another daemon leads (lock held)")
        elif out.result in ("error", "crash"):
            log.error("cycle failed: %s", out.error)
        else:
            log.info("cycle %s: %d started, %d failed, %.2f s%s", out.result, out.started, out.failed, out.duration,
                     _phase_text(out))

    def stop(self) -> None:
        self._stop.set()

    def request_reload(self) -> None:
        self._reload.set()


def _phase_text(out: CycleOutcome) -> str:
    """`` [read 0.31, plan 0.05, ...]``: where a cycle's time went."""
    if not out.phases:
        return ""
    return " [" + ", ".join(f"{k} {v:.3f}" for k, v in out.phases.items()) + "]"
