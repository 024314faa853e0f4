"""The daemon's writes to the history store: what waits to be written, and failures told once.

A store that another process holds locked -- `mysched history import` or `history prune` on
the same SQLite file, a backup, a sqlite3 shell with a transaction open -- is waited for at
most `LOCK_WAIT` by a write, `PROBE_WAIT` by a cycle's first write while it is known to be
locked, and not at all by a cycle's writes after one found it locked: a cycle under a lock
takes a fraction of a second more, where each write used to wait the 30 s a command waits
(one cycle took 74 s under a 75-s lock: past the interval). What could
not be written -- finished jobs, the cycles with their start attempts -- waits here, counts
in usage, and is written oldest first, in one transaction, when the store takes writes
again (`MAX_CYCLES` cycle records at most: a store unwritable for days drops the oldest).

A failure is logged when it begins, once per distinct failure, and when the store works
again -- a lock once per outage -- not at every write of every cycle; every failed write is
counted (`mysched_history_write_errors_total`), every lock outage
(`mysched_history_lock_outages_total`), and what waits is exported
(`mysched_history_pending_records`).
"""

from __future__ import annotations

import logging
import time
from typing import Any, Callable

from mysched.core.model.batch import FinishedJob
from mysched.daemon.metrics import CycleMetrics
from mysched.errors import StoreError
from mysched.history.store import StoreLocked

log = logging.getLogger("mysched")

LOCK_WAIT = 2.0
"""Seconds a write waits for another process's lock (a batch of `mysched history import`
holds it for a fraction of a second), until one write of the cycle found it locked."""
PROBE_WAIT = 0.25
"""Seconds a cycle's first write waits while the store is known to be locked."""
EXIT_WAIT = 10.0
"""Seconds the writes at exit wait for the lock: what still waits then is lost."""
MAX_CYCLES = 10_000
"""Cycle records kept while the store takes none: about a week of 60-s cycles, 14 hours of
cycles every 5 s (on job events); their start records go with them, their finished jobs do not."""


class Backlog:
    """What the daemon has yet to write to `store`, and what went wrong writing it."""

    def __init__(self, store: Any, metrics: CycleMetrics, wall: Callable[[], float] = time.time) -> None:
        self.store = store
        self.metrics = metrics
        self.wall = wall
        self.finished: list[FinishedJob] = []
        """Finished jobs taken from the server that the store has not taken yet."""
        self.cycles: list[dict[str, Any]] = []
        """Cycle records (as `Store.record_cycle` takes them) not written yet, oldest first."""
        self.error = ""
        """What went wrong with the history this cycle ("" if nothing)."""
        self.said: set[str] = set()
        """The failures logged since the store last worked (each is logged once)."""
        self.dropped = 0
        """Cycle records dropped since the store last worked (over `MAX_CYCLES`)."""
        self._locked_since: float | None = None
        self._written_jobs = 0
        """Finished jobs written after they waited (since the store last worked)."""
        self._written_cycles = 0
        """Cycle records written after they waited."""
        self._sqlite = getattr(store, "dialect", "") == "sqlite"
        self._wait(LOCK_WAIT)

    def _wait(self, seconds: float) -> None:
        if hasattr(self.store, "lock_wait"):
            self.store.lock_wait = seconds

    def begin_cycle(self) -> None:
        self.error = ""
        self._wait(LOCK_WAIT if self._locked_since is None else PROBE_WAIT)

    def failed(self, msg: str, detail: str = "", exc: BaseException | None = None) -> None:
        """Loud, counted, flagged: the history is not being written (or read)."""
        self.metrics.history_write_error()
        self.error = msg + detail
        if isinstance(exc, StoreLocked):
            self._wait(0.0)  # the rest of this cycle does not wait for it
            if self._locked_since is None:
                self._locked_since = self.wall()
                self.metrics.history_locked()
                starts = ", jobs still start (without recorded intents)" if self._sqlite else ""
                log.error("history store: %s: another process holds its lock (mysched history import or prune, a "
                          "backup, a sqlite3 shell?); cycles go on without waiting for it%s, and what they cannot "
                          "write waits in memory until it is free (logged then)", msg, starts)
            self.said.add("locked")
        elif msg not in self.said:
            log.error("history store: %s%s", msg, detail)
            self.said.add(msg)

    def add_finished(self, new: list[FinishedJob]) -> None:
        """Write the finished jobs that wait, with `new`; they wait on if the store fails."""
        waited = len(self.finished)
        self.finished += new
        if not self.finished:
            return
        try:
            self.store.add_finished(self.finished)
        except StoreError as exc:
            self.failed(str(exc), f" ({len(self.finished)} finished job(s) kept to retry)", exc)
            return
        self._written_jobs += waited
        self.finished = []

    def record_cycle(self, record: dict[str, Any], what: str = "could not record the cycle") -> None:
        """Write the cycles that wait and this one (`Store.record_cycle`'s keywords), in order."""
        waited = len(self.cycles)
        self.cycles.append(record)
        try:
            self.store.record_cycles(self.cycles)
        except StoreError as exc:
            if len(self.cycles) > MAX_CYCLES:
                self.dropped += len(self.cycles) - MAX_CYCLES
                del self.cycles[:-MAX_CYCLES]
            self.failed(f"{what}: {exc}", f" ({len(self.cycles)} cycle record(s) kept to retry"
                        + (f", {self.dropped} oldest dropped)" if self.dropped else ")"), exc)
            return
        self._written_cycles += waited
        self.cycles = []

    def pending_jobs(self) -> set[str]:
        """Jobs whose start attempts wait to be written (their intents are this daemon's)."""
        return {s["job_id"] for c in self.cycles for s in c.get("starts") or ()}

    def end_cycle(self) -> None:
        """Say so when the store works again; export what waits."""
        if self.said and not self.error:
            what = (f"wrote {self._written_jobs} finished job(s) and {self._written_cycles} cycle record(s) that waited"
                    + (f"; {self.dropped} older cycle record(s) were dropped" if self.dropped else ""))
            if self._locked_since is not None:
                log.info("history store: lock free after %.0f s, writing again (%s)",
                         self.wall() - self._locked_since, what)
            else:
                log.info("history store: writing again (%s)", what)
            self.said, self.dropped, self._locked_since = set(), 0, None
            self._wait(LOCK_WAIT)
        if not self.said:
            self._written_jobs = self._written_cycles = 0
        self.metrics.history_pending(len(self.finished), len(self.cycles))

    def close(self) -> None:
        """At exit: write what waits, waiting `EXIT_WAIT` for a lock; say what is lost."""
        if self.store is None or not (self.finished or self.cycles):
            return
        self._wait(EXIT_WAIT)
        try:
            if self.finished:
                self.store.add_finished(self.finished)
                self.finished = []
            if self.cycles:
                self.store.record_cycles(self.cycles)
                self.cycles = []
        except StoreError as exc:
            log.error("history store: %s: %d finished job(s) and %d cycle record(s) not written at exit (TORQUE's "
                      "accounting logs keep the jobs; the next start settles open intents against pbs_server)",
                      exc, len(self.finished), len(self.cycles))
