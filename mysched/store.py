"""The history store: finished-job wall-clock records and what each cycle did (SQLAlchemy).

SQLite is the embedded default (WAL, busy timeout, so status commands can read while the
daemon writes); any SQLAlchemy URL works, PostgreSQL is tested. The schema is versioned
and migrated at open. Every write is one transaction: accounting records go in together
with the file offset they were read up to, so a kill at any instant loses nothing
committed and a job is never counted twice (also guarded by a unique key).
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from sqlalchemy import (Column, Float, ForeignKey, Integer, MetaData, String, Table, Text, UniqueConstraint,
                        create_engine, event, func, insert, select, text)
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import IntegrityError, SQLAlchemyError

from .accounting import iter_lines, parse_line, to_finished_job
from .errors import StoreError
from .model import FinishedJob

SCHEMA_VERSION = 2
MAX_PROBLEMS = 20
HEAD_BYTES = 4096
_DAY_FILE = re.compile(r"^\d{8}$")
BATCH_LINES = 5000

metadata = MetaData()

schema_version = Table("schema_version", metadata, Column("version", Integer, nullable=False))

finished_jobs = Table(
    "finished_jobs", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("job_id", String(255), nullable=False),
    Column("start", Float, nullable=False),
    Column("end", Float, nullable=False),
    Column("user", String(255), nullable=False),
    Column("grp", String(255), nullable=False),
    Column("queue", String(255), nullable=False),
    Column("vo", String(255)),
    Column("cores", Integer, nullable=False),
    Column("cput", Float),
    Column("exit_status", Integer),
    Column("nodes", Text, nullable=False, default=""),
    Column("source", String(32), nullable=False, default="accounting"),
    UniqueConstraint("job_id", "start", name="uq_finished_job"),
)

cycles = Table(
    "cycles", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("time", Float, nullable=False, index=True),
    Column("duration", Float, nullable=False),
    Column("result", String(32), nullable=False),
    Column("n_started", Integer, nullable=False),
    Column("n_failed", Integer, nullable=False),
    Column("n_queued", Integer, nullable=False),
    Column("n_running", Integer, nullable=False),
    Column("summary", Text, nullable=False, default="{}"),
)

start_attempts = Table(
    "starts", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("cycle_id", Integer, ForeignKey("cycles.id"), nullable=False, index=True),
    Column("job_id", String(255), nullable=False, index=True),
    Column("placement", Text, nullable=False),
    Column("reason", String(32), nullable=False),
    Column("result", String(32), nullable=False),
)

ingest_positions = Table(
    "ingest_positions", metadata,
    Column("path", String(1024), primary_key=True),
    Column("inode", Integer, nullable=False),
    Column("offset", Integer, nullable=False),
    Column("head", String(64), nullable=False, default=""),
    Column("updated", Float, nullable=False),
)

state = Table(
    "state", metadata,
    Column("key", String(255), primary_key=True),
    Column("value", Text, nullable=False),
)

# Ordered migrations: version N -> N+1. Version 1 created the tables; 2 added the end index.
MIGRATIONS: list[Callable[[Connection], None]] = [
    lambda c: metadata.create_all(c),
    lambda c: c.execute(text('CREATE INDEX IF NOT EXISTS ix_finished_jobs_end ON finished_jobs ("end")')),
]


def mask_url(url: str) -> str:
    """The URL with its password replaced by ***."""
    return re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", url)


@dataclass
class IngestReport:
    """What one accounting ingestion did."""

    files: int = 0
    lines: int = 0
    records_added: int = 0
    duplicates: int = 0
    malformed: int = 0
    ignored: int = 0
    problems: list[str] = field(default_factory=list)


class Store:
    """History database. Methods raise only `StoreError`."""

    def __init__(self, url: str, *, create: bool = True) -> None:
        self.url = url
        self.masked = mask_url(url)
        try:
            kw: dict[str, Any] = {"future": True}
            if url.startswith("sqlite"):
                kw["connect_args"] = {"timeout": 30}
            else:
                kw["pool_pre_ping"] = True
                if url.startswith("postgresql"):
                    kw["connect_args"] = {"connect_timeout": 10}
            self.engine: Engine = create_engine(url, **kw)
        except (SQLAlchemyError, ValueError, ImportError) as exc:
            raise StoreError(f"history database {self.masked}: {exc}") from None
        if url.startswith("sqlite"):
            @event.listens_for(self.engine, "connect")
            def _sqlite_pragmas(dbapi_conn, _record):  # noqa: ANN001
                cur = dbapi_conn.cursor()
                cur.execute("PRAGMA journal_mode=WAL")
                cur.execute("PRAGMA busy_timeout=30000")
                cur.execute("PRAGMA synchronous=NORMAL")
                cur.close()
        if create:
            self.migrate()

    # -- plumbing ----------------------------------------------------------------------------
    def _fail(self, what: str, exc: Exception) -> StoreError:
        msg = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return StoreError(f"history database {self.masked}: {what}: {msg}")

    def migrate(self) -> int:
        """Bring the schema to `SCHEMA_VERSION`; a newer database is refused."""
        try:
            with self.engine.begin() as c:
                schema_version.create(c, checkfirst=True)
                row = c.execute(select(schema_version.c.version)).first()
                current = row[0] if row else 0
                if current > SCHEMA_VERSION:
                    raise StoreError(f"history database {self.masked} has schema version {current}, newer than "
                                     f"this mysched understands ({SCHEMA_VERSION}): upgrade mysched")
                for v in range(current, SCHEMA_VERSION):
                    MIGRATIONS[v](c)
                if row is None:
                    c.execute(insert(schema_version).values(version=SCHEMA_VERSION))
                elif current != SCHEMA_VERSION:
                    c.execute(schema_version.update().values(version=SCHEMA_VERSION))
                return current
        except SQLAlchemyError as exc:
            raise self._fail("cannot open or migrate", exc) from None

    def version(self) -> int:
        try:
            with self.engine.connect() as c:
                row = c.execute(select(schema_version.c.version)).first()
                return row[0] if row else 0
        except SQLAlchemyError as exc:
            raise self._fail("cannot read schema version", exc) from None

    def close(self) -> None:
        self.engine.dispose()

    # -- finished jobs -----------------------------------------------------------------------
    def _insert_finished(self, c: Connection, records: Iterable[FinishedJob], source: str) -> tuple[int, int]:
        added = dups = 0
        rows = [{"job_id": r.id, "start": r.start, "end": r.end, "user": r.user, "grp": r.group,
                 "queue": r.queue, "vo": r.vo, "cores": r.cores, "cput": r.cput, "exit_status": r.exit_status,
                 "nodes": ",".join(r.nodes), "source": source} for r in records if r.end is not None]
        if not rows:
            return 0, 0
        # Look the batch's jobs up once, insert only the new ones in one executemany; the
        # unique key still guards against a concurrent writer (conflicts are ignored).
        existing: set[tuple[str, float]] = set()
        ids = list({r["job_id"] for r in rows})
        for i in range(0, len(ids), 500):
            chunk = ids[i:i + 500]
            existing.update((j, st) for j, st in c.execute(
                select(finished_jobs.c.job_id, finished_jobs.c.start).where(finished_jobs.c.job_id.in_(chunk))))
        new = []
        for r in rows:
            k = (r["job_id"], r["start"])
            if k in existing:
                dups += 1
            else:
                existing.add(k)
                new.append(r)
        if new:
            c.execute(self._insert_ignore(), new)
            added = len(new)
        return added, dups

    def _insert_ignore(self):
        dialect = self.engine.dialect.name
        if dialect == "sqlite":
            from sqlalchemy.dialects.sqlite import insert as dinsert
        elif dialect == "postgresql":
            from sqlalchemy.dialects.postgresql import insert as dinsert
        else:
            return insert(finished_jobs)
        return dinsert(finished_jobs).on_conflict_do_nothing(index_elements=["job_id", "start"])

    def add_finished(self, records: list[FinishedJob], source: str = "sim") -> int:
        """Store wall-clock records (one transaction); duplicates are ignored. Returns how many were new."""
        try:
            with self.engine.begin() as c:
                return self._insert_finished(c, records, source)[0]
        except SQLAlchemyError as exc:
            raise self._fail("cannot store finished jobs", exc) from None

    def finished_since(self, t: float) -> list[FinishedJob]:
        """Jobs that ended at or after `t`, oldest end first."""
        try:
            with self.engine.connect() as c:
                res = c.execute(select(finished_jobs).where(finished_jobs.c.end >= t).order_by(finished_jobs.c.end))
                return [_row_to_job(r) for r in res]
        except SQLAlchemyError as exc:
            raise self._fail("cannot read finished jobs", exc) from None

    def count_finished(self) -> int:
        try:
            with self.engine.connect() as c:
                return c.execute(select(func.count()).select_from(finished_jobs)).scalar_one()
        except SQLAlchemyError as exc:
            raise self._fail("cannot count finished jobs", exc) from None

    def usage_summary(self, since: float | None = None, until: float | None = None, by: str = "vo",
                      vo_of: Callable[[str], str] | None = None) -> list[dict[str, Any]]:
        """Jobs, wall-clock core-hours (clipped to the interval) and CPU hours per VO/group/user/queue."""
        if by not in ("vo", "group", "user", "queue"):
            raise StoreError(f"cannot summarise by {by!r}: use vo, group, user or queue")
        q = select(finished_jobs.c.start, finished_jobs.c.end, finished_jobs.c.cores, finished_jobs.c.cput,
                   finished_jobs.c.user, finished_jobs.c.grp, finished_jobs.c.queue, finished_jobs.c.vo)
        if since is not None:
            q = q.where(finished_jobs.c.end >= since)
        if until is not None:
            q = q.where(finished_jobs.c.start <= until)
        out: dict[str, dict[str, Any]] = {}
        try:
            with self.engine.connect() as c:
                for start, end, cores, cput, user, grp, queue, vo in c.execute(q):
                    key = {"user": user, "group": grp, "queue": queue}.get(by)
                    if by == "vo":
                        key = vo or (vo_of(grp) if vo_of else grp)
                    lo = max(start, since) if since is not None else start
                    hi = min(end, until) if until is not None else end
                    span = max(0.0, hi - lo)
                    full = end - start
                    d = out.setdefault(key, {"key": key, "jobs": 0, "wall_hours": 0.0, "cpu_hours": 0.0})
                    d["jobs"] += 1
                    d["wall_hours"] += span * cores / 3600.0
                    if cput is not None:
                        d["cpu_hours"] += cput / 3600.0 * (span / full if full > 0 else 1.0)
        except SQLAlchemyError as exc:
            raise self._fail("cannot summarise usage", exc) from None
        return sorted(out.values(), key=lambda d: -d["wall_hours"])

    # -- cycles --------------------------------------------------------------------------------
    def record_cycle(self, *, time: float, duration: float, result: str, n_started: int, n_failed: int,
                     n_queued: int, n_running: int, summary: dict[str, Any] | None = None,
                     starts: list[dict[str, Any]] | None = None) -> int:
        """Store a cycle and its start attempts in one transaction; return the cycle id."""
        try:
            with self.engine.begin() as c:
                cid = c.execute(insert(cycles).values(
                    time=time, duration=duration, result=result, n_started=n_started, n_failed=n_failed,
                    n_queued=n_queued, n_running=n_running, summary=json.dumps(summary or {}))).inserted_primary_key[0]
                if starts:
                    c.execute(insert(start_attempts), [{"cycle_id": cid, **s} for s in starts])
                return int(cid)
        except SQLAlchemyError as exc:
            raise self._fail("cannot record the cycle", exc) from None

    def recent_cycles(self, n: int = 10) -> list[dict[str, Any]]:
        try:
            with self.engine.connect() as c:
                res = c.execute(select(cycles).order_by(cycles.c.id.desc()).limit(n))
                return [dict(r._mapping) | {"summary": json.loads(r.summary or "{}")} for r in res]
        except SQLAlchemyError as exc:
            raise self._fail("cannot read cycles", exc) from None

    def starts_of(self, job_id: str) -> list[dict[str, Any]]:
        try:
            with self.engine.connect() as c:
                res = c.execute(select(start_attempts).where(start_attempts.c.job_id == job_id)
                                .order_by(start_attempts.c.id))
                return [dict(r._mapping) for r in res]
        except SQLAlchemyError as exc:
            raise self._fail("cannot read starts", exc) from None

    # -- small durable state ----------------------------------------------------------------
    def get_state(self, key: str) -> Any:
        try:
            with self.engine.connect() as c:
                row = c.execute(select(state.c.value).where(state.c.key == key)).first()
                return json.loads(row[0]) if row else None
        except SQLAlchemyError as exc:
            raise self._fail("cannot read state", exc) from None

    def set_state(self, key: str, value: Any) -> None:
        try:
            with self.engine.begin() as c:
                if c.execute(select(state.c.key).where(state.c.key == key)).first():
                    c.execute(state.update().where(state.c.key == key).values(value=json.dumps(value)))
                else:
                    c.execute(insert(state).values(key=key, value=json.dumps(value)))
        except SQLAlchemyError as exc:
            raise self._fail("cannot write state", exc) from None

    # -- accounting ingestion ----------------------------------------------------------------
    def ingest_accounting(self, paths: Iterable[str], *, on_problem: Callable[[str], None] | None = None
                          ) -> IngestReport:
        """Read new `E` records from accounting files (directories: every file in name order).

        Incremental and idempotent: each file's inode and byte offset are remembered; a file
        that shrank or was replaced is read again from the start (the unique key drops what
        is already stored); a partial last line waits for its newline.
        """
        rep = IngestReport()
        files: list[str] = []
        for p in paths:
            if os.path.isdir(p):
                try:
                    names = sorted(os.listdir(p))
                except OSError as exc:
                    raise StoreError(f"{p}: cannot list accounting directory: {exc.strerror}") from None
                # TORQUE names its accounting files YYYYMMDD; anything else there is not ours.
                files += [os.path.join(p, n) for n in names if _DAY_FILE.match(n)
                          and os.path.isfile(os.path.join(p, n))]
            elif os.path.isfile(p):
                files.append(p)
            else:
                raise StoreError(f"{p}: no such accounting file or directory")
        for path in files:
            self._ingest_file(os.path.abspath(path), rep, on_problem)
        return rep

    def _ingest_file(self, path: str, rep: IngestReport, on_problem: Callable[[str], None] | None) -> None:
        try:
            st = os.stat(path)
        except OSError as exc:
            raise StoreError(f"{path}: cannot read: {exc.strerror}") from None
        try:
            with self.engine.connect() as c:
                row = c.execute(select(ingest_positions.c.inode, ingest_positions.c.offset,
                                       ingest_positions.c.head).where(ingest_positions.c.path == path)).first()
        except SQLAlchemyError as exc:
            raise self._fail("cannot read ingest positions", exc) from None
        offset = 0
        # Same inode, not shorter, same first bytes: the same file grown. Anything else
        # (rotated, truncated, replaced — inodes get reused) is read from the start.
        if row is not None and row.inode == st.st_ino and row.offset <= st.st_size and (
                row.head == _head(path, row.offset) or not row.head):
            offset = row.offset
        if row is not None and offset == st.st_size:
            return
        rep.files += 1
        batch: list[FinishedJob] = []
        pos = offset
        lines = 0

        def flush(upto: int) -> None:
            try:
                with self.engine.begin() as c:
                    added, dups = self._insert_finished(c, batch, "accounting")
                    values = {"inode": st.st_ino, "offset": upto, "head": _head(path, upto), "updated": time.time()}
                    if c.execute(ingest_positions.update().where(ingest_positions.c.path == path)
                                 .values(**values)).rowcount == 0:
                        c.execute(insert(ingest_positions).values(path=path, **values))
            except (SQLAlchemyError, IntegrityError) as exc:
                raise self._fail(f"cannot store records of {path}", exc) from None
            rep.records_added += added
            rep.duplicates += dups
            batch.clear()

        try:
            for lineno, end_offset, line in iter_lines(path, offset):
                lines += 1
                rep.lines += 1
                pos = end_offset
                where = f"{path}:{lineno}" if lineno else f"{path}@{end_offset}"
                try:
                    rec = parse_line(line)
                    if rec is None or rec.type != "E":
                        rep.ignored += 1
                    else:
                        batch.append(to_finished_job(rec))
                except ValueError as exc:
                    rep.malformed += 1
                    if len(rep.problems) < MAX_PROBLEMS:
                        msg = f"{where}: {exc}"
                        rep.problems.append(msg)
                        if on_problem is not None:
                            on_problem(msg)
                if lines % BATCH_LINES == 0:
                    flush(pos)
        except OSError as exc:
            raise StoreError(f"{path}: cannot read: {exc.strerror}") from None
        flush(pos)


def _head(path: str, limit: int | None = None) -> str:
    """Fingerprint of a file's first bytes (up to `limit`), to tell a grown file from a new one."""
    import hashlib

    n = HEAD_BYTES if limit is None else min(HEAD_BYTES, limit)
    try:
        with open(path, "rb") as f:
            data = f.read(n)
    except OSError:
        return ""
    return hashlib.sha1(data).hexdigest()


def _row_to_job(r: Any) -> FinishedJob:
    return FinishedJob(r.job_id, r.user, r.grp, r.queue, r.start, r.end, r.cores, r.vo, r.cput, r.exit_status,
                       tuple(n for n in (r.nodes or "").split(",") if n))
