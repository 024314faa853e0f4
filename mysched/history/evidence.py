"""What an accounting log may charge: only what happened.

TORQUE writes a job's account string (``qsub -A``) unescaped, so a user can put a newline and
a well-formed `E` record into it (`mysched.history.logread` finds most such lines). Whatever
the reader makes of a log, an `E` record is charged only if it matches a job the farm ran --
an `S` record, or a start the daemon recorded (it starts every job), with the same job id,
owner and start; the others are kept apart in `suspect_records` with their file and line,
charged to no one. `Store` takes these methods from `AccountingWrites`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ContextManager, Iterable

from sqlalchemy import Table, func, insert, inspect, select
from sqlalchemy.engine import Connection

from mysched.core.model.batch import FinishedJob
from mysched.history.schema import (accounting_starts, cycles, dialect_insert, ingest_positions, start_attempts,
                                    suspect_records)

START_SKEW = 300.0
"""Seconds between a start mysched recorded (its cycle's time and duration) and the ``start=``
pbs_server wrote for it: clocks of two hosts, a slow pbs_runjob."""
RECOVERED_SPAN = 86400.0
"""How long before a "recovered" cycle (a restarted daemon settling the starts its predecessor
left open) those starts may have been made."""

@dataclass(frozen=True)
class Located:
    """An accounting `E` record and where it was read (file, line)."""

    job: FinishedJob
    path: str
    line: int


@dataclass
class AccountingBatch:
    """What one stretch of an accounting file holds for the store: `jobs` (E records to
    charge once matched), `starts` (S records: job id, owner, start) and `inside` (E lines
    found inside another record's account= value: never charged). With `trust_all` every
    job is charged unmatched (logs from before mysched)."""

    jobs: list[Located] = field(default_factory=list)
    starts: list[tuple[str, str, float]] = field(default_factory=list)
    inside: list[Located] = field(default_factory=list)
    trust_all: bool = False

    def clear(self) -> None:
        self.jobs.clear()
        self.starts.clear()
        self.inside.clear()


@dataclass
class BatchResult:
    """What `Store.store_accounting` did: records charged, already known, promoted (an earlier
    unmatched record whose start came now) and the suspect records new in the store."""

    added: int = 0
    duplicates: int = 0
    promoted: int = 0
    suspects: list[dict[str, Any]] = field(default_factory=list)


class AccountingWrites:
    """The accounting side of `mysched.history.store.Store` (which provides `write`, `_db`,
    `_insert_finished`, `_upsert` and `engine`)."""

    if TYPE_CHECKING:
        engine: Any

        def write(self, what: str) -> ContextManager[Connection]: ...
        def _db(self, what: str) -> ContextManager[None]: ...
        def _insert_finished(self, c: Connection, records: Iterable[FinishedJob], source: str
                             ) -> tuple[int, int]: ...
        def _upsert(self, c: Connection, table: Table, key: str, values: dict[str, Any]) -> None: ...

    def store_accounting(self, batch: AccountingBatch, position: dict[str, Any]) -> BatchResult:
        """`store_batch` for what an accounting file says, believing only what happened: an `E`
        record is charged only if it matches an `S` record (this batch's or one stored) or a
        start mysched recorded, with the same job id, owner and start; the others are kept
        apart in `suspect_records` with their file and line, charged to no one (an unmatched
        one is charged when its `S` record comes later: a job that ran over midnight read in
        the wrong order). All in one transaction with the file's position."""
        out = BatchResult()
        seen = position.get("updated", 0.0)
        with self.write(f"cannot store the records of {position['path']}") as c:
            if batch.starts:
                self._insert_ignore(c, accounting_starts, ["job_id", "start"],
                                    [{"job_id": j, "user": u, "start": t} for j, u, t in batch.starts])
            charged, unmatched = batch.jobs, []
            if not batch.trust_all and batch.jobs:
                ok: dict[str, list[tuple[str | None, float, float]]] = {}
                for j, u, t in batch.starts:  # most E records have their S a few lines before
                    ok.setdefault(j, []).append((u, t - 1.0, t + 1.0))
                for j, found in self._evidence(c, {loc.job.id for loc in batch.jobs
                                                   if not _matches(loc.job, ok.get(loc.job.id, ()))}).items():
                    ok.setdefault(j, []).extend(found)
                charged = [loc for loc in batch.jobs if _matches(loc.job, ok.get(loc.job.id, ()))]
                unmatched = [loc for loc in batch.jobs if not _matches(loc.job, ok.get(loc.job.id, ()))]
            out.added, out.duplicates = self._insert_finished(c, [loc.job for loc in charged], "accounting")
            for reason, found in (("unmatched", unmatched), ("inside", batch.inside)):
                out.suspects += self._insert_suspects(c, found, reason, seen)
            if batch.starts:
                out.promoted = self._promote(c, batch.starts)
            self._upsert(c, ingest_positions, "path", position)
        return out

    def _insert_ignore(self, c: Connection, table: Table, key: list[str], rows: list[dict[str, Any]]) -> None:
        """Insert `rows`, those whose `key` is already there left out."""
        if not rows:
            return
        if c.dialect.name in ("sqlite", "postgresql"):  # the unique key leaves out what is there
            c.execute(_insert_new(c, table, key), rows)
            return
        cols = [table.c[k] for k in key]
        have: set[tuple] = set()
        ids = list({r[key[0]] for r in rows})
        for i in range(0, len(ids), 500):
            have.update(tuple(r) for r in c.execute(select(*cols).where(cols[0].in_(ids[i:i + 500]))))
        new = []
        for r in rows:
            k = tuple(r[n] for n in key)
            if k not in have:
                have.add(k)
                new.append(r)
        if new:
            c.execute(_insert_new(c, table, key), new)

    def _evidence(self, c: Connection, ids: set[str]) -> dict[str, list[tuple[str | None, float, float]]]:
        """Per job id: the starts that happened, as (owner or None, earliest, latest start):
        its `S` records, and the starts mysched made (within their cycle's time)."""
        out: dict[str, list[tuple[str | None, float, float]]] = {}
        st, cy, ac = start_attempts.c, cycles.c, accounting_starts.c
        chunks = sorted(ids)
        for i in range(0, len(chunks), 500):
            part = chunks[i:i + 500]
            for j, u, t in c.execute(select(ac.job_id, ac.user, ac.start).where(ac.job_id.in_(part))):
                out.setdefault(j, []).append((u, t - 1.0, t + 1.0))
            q = (select(st.job_id, st.user, cy.time, cy.duration, cy.result).join(cycles, st.cycle_id == cy.id)
                 .where(st.job_id.in_(part), st.result == "ok"))
            for j, u, t, d, result in c.execute(q):
                before = RECOVERED_SPAN if result == "recovered" else START_SKEW
                out.setdefault(j, []).append((u, t - before, t + (d or 0.0) + START_SKEW))
        return out

    def _insert_suspects(self, c: Connection, found: list[Located], reason: str, seen: float) -> list[dict[str, Any]]:
        rows = [{"job_id": loc.job.id, "start": loc.job.start, "end": loc.job.end, "user": loc.job.user,
                 "grp": loc.job.group, "queue": loc.job.queue, "cores": loc.job.cores, "cput": loc.job.cput,
                 "exit_status": loc.job.exit_status, "nodes": ",".join(loc.job.nodes), "path": loc.path,
                 "line": loc.line, "reason": reason, "seen": seen} for loc in found]
        have: set[tuple[str, float]] = set()
        ids = sorted({r["job_id"] for r in rows})
        sr = suspect_records.c
        for i in range(0, len(ids), 500):
            have.update((j, t) for j, t in c.execute(select(sr.job_id, sr.start).where(
                sr.reason == reason, sr.job_id.in_(ids[i:i + 500]))))
        new = []
        for r in rows:
            if (r["job_id"], r["start"]) not in have:
                have.add((r["job_id"], r["start"]))
                new.append(r)
        if new:
            c.execute(_insert_new(c, suspect_records, ["job_id", "start", "reason"]), new)
        return new

    def _promote(self, c: Connection, starts: list[tuple[str, str, float]]) -> int:
        """Charge the unmatched records whose `S` record this batch brought."""
        sr = suspect_records.c
        ids = sorted({j for j, _, _ in starts})
        by = {(j, u): t for j, u, t in starts}
        moved: list[Any] = []
        for i in range(0, len(ids), 500):
            for r in c.execute(select(suspect_records).where(sr.reason == "unmatched", sr.job_id.in_(ids[i:i + 500]))):
                t = by.get((r.job_id, r.user))
                if t is not None and abs(t - r.start) <= 1.0:
                    moved.append(r)
        if not moved:
            return 0
        added, _ = self._insert_finished(c, [FinishedJob(r.job_id, r.user, r.grp, r.queue, r.start, r.end, r.cores,
                                                         None, r.cput, r.exit_status,
                                                         tuple(n for n in (r.nodes or "").split(",") if n))
                                             for r in moved], "accounting")
        for i in range(0, len(moved), 500):
            c.execute(suspect_records.delete().where(sr.id.in_([r.id for r in moved[i:i + 500]])))
        return added

    def suspects(self, limit: int | None = None) -> tuple[int, list[dict[str, Any]]]:
        """(how many, the first `limit`) `E` records charged to no one, oldest read first."""
        sr = suspect_records.c
        with self._db("cannot read suspect records"), self.engine.connect() as c:
            if not inspect(c).has_table("suspect_records"):  # a store of schema 4, opened read-only
                return 0, []
            n = c.execute(select(func.count()).select_from(suspect_records)).scalar_one()
            q = select(suspect_records).order_by(sr.seen, sr.id)
            if limit is not None:
                q = q.limit(limit)
            return n, [dict(r._mapping) for r in c.execute(q)]


def _insert_new(c: Connection, table: Table, key: list[str]) -> Any:
    """An INSERT that leaves out rows a concurrent writer (the daemon beside an import) put
    there first, rather than failing the whole batch on the unique key."""
    if c.dialect.name not in ("sqlite", "postgresql"):
        return insert(table)
    return dialect_insert(c.dialect.name)(table).on_conflict_do_nothing(index_elements=key)


def _matches(job: FinishedJob, starts: Iterable[tuple[str | None, float, float]]) -> bool:
    """A start of the same owner (mysched's older records have none) at the record's start."""
    return any((u is None or u == job.user) and lo <= job.start <= hi for u, lo, hi in starts)
