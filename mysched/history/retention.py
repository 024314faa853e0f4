"""How long the history store keeps what it records (`history.keep_cycles`, `keep_jobs`).

A daemon records every cycle and every start it makes, and every finished job it learns of:
on a 10,000-slot farm that is tens of megabytes a day, for ever. The cycle log (cycles and
their start attempts) is the daemon's own record of what it did, read by admins when
something went wrong; it is kept `keep_cycles` (30 days by default). Finished jobs feed fair
share (only `history.window` of them) and `mysched usage` reports; they are kept for ever by
default, as TORQUE's accounting files are, and never less than the fair-share window.

The leader prunes at most `BATCH` rows of each table per call, so that a first prune of a
years-old store does not stall scheduling: a call that found more comes again at the next
cycle, otherwise after `EVERY` seconds. SQLite reuses the freed pages (the file stops
growing but does not shrink: ``sqlite3 FILE VACUUM`` with the daemon stopped gives them back).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

from sqlalchemy import delete, select

from mysched.history.accounting import MAX_WALL
from mysched.history.schema import accounting_starts, cycles, finished_jobs, start_attempts, suspect_records
from mysched.history.store import Store

log = logging.getLogger(__name__)

BATCH = 20000
"""Rows of each table one call deletes at most."""
EVERY = 3600.0
"""Seconds between prunes once the store is within its limits."""


@dataclass
class Pruned:
    cycles: int = 0
    starts: int = 0
    jobs: int = 0
    evidence: int = 0
    """S records read from the accounting logs, and suspect E records, that went with the jobs."""
    more: bool = False
    """A table had more rows past its limit than one call deletes."""

    def __bool__(self) -> bool:
        return bool(self.cycles or self.starts or self.jobs or self.evidence)


def prune(store: Store, now: float, keep_cycles: float, keep_jobs: float, batch: int = BATCH) -> Pruned:
    """Delete cycles (with their start attempts) older than `keep_cycles` and finished jobs
    that ended more than `keep_jobs` before `now` (seconds; inf keeps all), at most `batch`
    of each, in one transaction."""
    out = Pruned()
    with store.write("cannot prune old records") as c:
        if math.isfinite(keep_cycles):
            old = select(cycles.c.id).where(cycles.c.time < now - keep_cycles).order_by(cycles.c.id).limit(batch)
            ids = [r[0] for r in c.execute(old)]
            for i in range(0, len(ids), 500):  # bound the IN list (SQLite's variable limit)
                part = ids[i:i + 500]
                out.starts += c.execute(delete(start_attempts).where(start_attempts.c.cycle_id.in_(part))).rowcount
                out.cycles += c.execute(delete(cycles).where(cycles.c.id.in_(part))).rowcount
            out.more = len(ids) == batch
        if math.isfinite(keep_jobs):
            # an S record waits for its E record as long as a job may run (MAX_WALL)
            for table, column, cutoff in ((finished_jobs, "end", now - keep_jobs),
                                          (suspect_records, "end", now - keep_jobs),
                                          (accounting_starts, "start", now - keep_jobs - MAX_WALL)):
                old = select(table.c.id).where(table.c[column] < cutoff).order_by(table.c.id).limit(batch)
                ids = [r[0] for r in c.execute(old)]
                for i in range(0, len(ids), 500):
                    n = c.execute(delete(table).where(table.c.id.in_(ids[i:i + 500]))).rowcount
                    if table is finished_jobs:
                        out.jobs += n
                    else:
                        out.evidence += n
                out.more = out.more or len(ids) == batch
    return out


class Pruner:
    """When the daemon's leader prunes next (`maybe`, called after each cycle that scheduled)."""

    def __init__(self, batch: int = BATCH) -> None:
        self.due = -math.inf
        self.batch = batch

    def maybe(self, store: Store, now: float, keep_cycles: float, keep_jobs: float) -> Pruned | None:
        """Prune if due; None if not. A `StoreError` propagates (the caller logs it) and the
        next try comes after `EVERY`, not at every cycle."""
        if now < self.due or not (math.isfinite(keep_cycles) or math.isfinite(keep_jobs)):
            return None
        self.due = now + EVERY
        got = prune(store, now, keep_cycles, keep_jobs, self.batch)
        if got.more:
            self.due = now  # more to do: again after the next cycle
        if got:
            log.info("history: pruned %d cycle(s) with %d start record(s) (kept %s) and %d finished job(s) "
                     "(kept %s)%s", got.cycles, got.starts, kept(keep_cycles), got.jobs, kept(keep_jobs),
                     " (more to prune)" if got.more else "")
        return got


def kept(seconds: float) -> str:
    """A keep as people say it: "for ever", or days."""
    return "for ever" if not math.isfinite(seconds) else f"{seconds / 86400:g} d"
