"""The history store: finished-job wall-clock records and what each cycle did (SQLAlchemy Core).

SQLite is the embedded default (WAL, busy timeout, so status commands can read while the
daemon writes); any SQLAlchemy URL works, PostgreSQL is tested. The schema is versioned
and migrated at open. Every write is one transaction: accounting records go in together
with the file offset they were read up to (`store_batch`; the files themselves are read by
`mysched.history.ingest`), so a kill at any instant loses nothing committed and a job is
never counted twice (also guarded by a unique key on job id and start). Methods raise only
`StoreError`.
"""

from __future__ import annotations

import json
import logging
import math
import os
import warnings
from contextlib import contextmanager
from typing import Any, Callable, Iterable, Iterator
from urllib.parse import unquote

from sqlalchemy import Table, create_engine, func, insert, inspect, select, text
from sqlalchemy.engine import Connection, Engine, make_url
from sqlalchemy.exc import SAWarning, SQLAlchemyError

from mysched.config.servers import missing_driver
from mysched.errors import StoreError
from mysched.history.evidence import AccountingWrites
from mysched.history.schema import dialect_insert as _dialect_insert
from mysched.history.schema import (MIGRATIONS, SCHEMA_VERSION, cycles, finished_jobs, ingest_positions, metadata,
                                    schema_version, start_attempts, start_intents, state)
from mysched.core.model.batch import FinishedJob
from mysched.history.sqlite import WRITE, sqlite_locked, sqlite_setup
from mysched.history.urls import CREDENTIALS as _CREDENTIALS, in_memory, mask_url, sqlite_file  # noqa: F401 - re-exported
from mysched.history.urls import read_only_url

log = logging.getLogger("mysched")

_PG_MIGRATION_LOCK = 0x6D797363  # pg_advisory_xact_lock key: one migrator at a time
_PG_LOCK_NOT_AVAILABLE = "55P03"  # lock_timeout ran out


class StoreLocked(StoreError):
    """Another process holds the lock a write needed, for longer than the store's `lock_wait`."""


class Store(AccountingWrites):
    """History database. Methods raise only `StoreError`. `create=False` opens an existing
    store without migrating it (for read-only status commands)."""

    def __init__(self, url: str, *, create: bool = True) -> None:
        self.url = url
        self.lock_wait = 30.0
        """Seconds a transaction waits for another process's lock (SQLite's busy timeout;
        PostgreSQL's lock_timeout of a write when shorter than this default): commands such
        as `mysched history import` wait, the daemon sets it short (`mysched.daemon.backlog`)."""
        self.masked = mask_url(url)
        self._file: str | None = None
        self._ident: tuple[int, int] | None = None
        self._damaged: set[int] = set()
        """Rows of finished_jobs already reported damaged."""
        m = _CREDENTIALS.match(url.partition("?")[0])
        self._secrets = {s for s in ((m.group(2), unquote(m.group(2))) if m else ()) if len(s) >= 3}
        if m and "@" in m.group(2):  # the driver would take part of the password for the host
            raise StoreError(f"history database {self.masked}: the password contains '@': write it as %40")
        try:
            u = make_url(url if create else read_only_url(url))  # a reader may not write the file
            kw: dict[str, Any] = {}
            if u.get_backend_name() == "sqlite":
                kw["connect_args"] = {"timeout": 30}
            else:
                kw["pool_pre_ping"] = True
                if u.get_backend_name() == "postgresql" and u.get_driver_name() in ("psycopg2", "psycopg"):
                    kw["connect_args"] = {"connect_timeout": 10}
                if u.get_driver_name() == "psycopg2":  # batched executemany (plain one is a round trip a row)
                    kw["executemany_mode"] = "values_plus_batch"
            with warnings.catch_warnings(record=True) as caught:  # '?mode=ro' without uri=true is ignored
                warnings.simplefilter("always", SAWarning)
                self.engine: Engine = create_engine(u, **kw)
            for w in caught:  # that one is an error, said plainly; any other (a deprecation) only a warning
                msg = str(w.message).split(" (Background on")[0] if issubclass(w.category, SAWarning) else ""
                if "uri=true" in msg:
                    raise StoreError(f"history database {self.masked}: SQLite takes query arguments "
                                     f"({', '.join(sorted(u.query))}) only in a URI URL, such as "
                                     "sqlite:///file:/path/history.db?mode=ro&uri=true")
                if msg:
                    log.warning("history database %s: %s", self.masked, self._clean(msg))
        except ImportError as exc:  # the driver: its extra named (pip install 'mysched[postgresql]')
            why = missing_driver(u.get_backend_name(), u.get_driver_name(), exc)
            raise StoreError(f"history database {self.masked}: {why}") from None
        except (SQLAlchemyError, ValueError) as exc:
            raise StoreError(f"history database {self.masked}: {self._clean(str(exc))}") from None
        self.dialect = self.engine.dialect.name
        if self.dialect == "sqlite":
            sqlite_setup(self.engine, lambda: self.lock_wait)
        # Writes declare themselves so SQLite takes the write lock up front (BEGIN IMMEDIATE):
        # a deferred transaction that reads then writes fails at once, without waiting.
        self._writer = self.engine.execution_options(**{WRITE: True})
        try:
            self.migrate() if create else self.check()
        except StoreError:
            self.engine.dispose()
            raise
        self._file = self.engine.url.database if self.dialect == "sqlite" else None
        if self._file in ("", ":memory:") or (self._file or "").startswith("file:"):
            self._file = None
        self._ident = _identity(self._file) if self._file else None
        """The SQLite file's (device, inode) when opened: a file deleted or replaced under a
        running daemon would otherwise be written on through the open descriptor, unseen."""

    # -- plumbing ----------------------------------------------------------------------------
    def _clean(self, msg: str) -> str:
        for s in self._secrets:
            msg = msg.replace(s, "***")
        return msg

    def _fail(self, what: str, exc: Exception) -> StoreError:
        orig = getattr(exc, "orig", None) or exc
        lines = str(orig).strip().splitlines()
        msg = lines[0].strip() if lines else type(orig).__name__
        if self.dialect == "sqlite" and "unable to open database file" in msg:
            db = self.engine.url.database or ""
            parent = os.path.dirname(os.path.abspath(db)) if db else ""
            if parent and not os.path.isdir(parent):
                msg += f" (directory {parent} does not exist)"
            elif parent and not os.access(parent, os.W_OK):
                msg += f" (directory {parent} is not writable)"
        locked = (sqlite_locked(orig) if self.dialect == "sqlite"
                  else getattr(orig, "pgcode", None) == _PG_LOCK_NOT_AVAILABLE)
        return (StoreLocked if locked else StoreError)(f"history database {self.masked}: {what}: {self._clean(msg)}")

    @contextmanager
    def _db(self, what: str) -> Iterator[None]:
        """Turn any database error inside into a one-line `StoreError` saying `what` failed."""
        if self._ident is not None:
            self._check_file(what)
        try:
            yield
        except (SQLAlchemyError, OverflowError) as exc:  # Overflow: a number too large for the driver
            raise self._fail(what, exc) from None

    @contextmanager
    def write(self, what: str) -> Iterator[Connection]:
        """One write transaction; a database error in it is a `StoreError` saying `what` failed."""
        with self._db(what), self._writer.begin() as c:
            if self.dialect == "postgresql" and self.lock_wait < 30.0:
                c.execute(text(f"SET LOCAL lock_timeout = {max(1, int(self.lock_wait * 1000))}"))
            yield c

    def _check_file(self, what: str) -> None:
        now = _identity(self._file)
        if now is None:
            raise StoreError(f"history database {self._file}: {what}: the file was deleted while mysched had it "
                             "open (restore it, or restart mysched to begin a new one)")
        if now != self._ident:
            raise StoreError(f"history database {self._file}: {what}: the file was replaced by another one while "
                             "mysched had it open (restart mysched to use the new file)")

    def _upsert(self, c: Connection, table: Table, key: str, values: dict[str, Any]) -> None:
        if self.dialect in ("sqlite", "postgresql"):
            ins = _dialect_insert(self.dialect)(table).values(**values)
            c.execute(ins.on_conflict_do_update(index_elements=[key],
                                                set_={k: v for k, v in values.items() if k != key}))
        elif c.execute(table.update().where(table.c[key] == values[key]).values(**values)).rowcount == 0:
            c.execute(insert(table).values(**values))

    def _read_version(self, c: Connection) -> int:
        if not inspect(c).has_table("schema_version"):
            return 0
        v = c.execute(select(func.max(schema_version.c.version))).scalar()
        if v is not None and (isinstance(v, bool) or not isinstance(v, int)):
            raise StoreError(f"history database {self.masked}: schema_version holds {v!r}, not a version number: "
                             "the database is damaged or not mysched's")
        return v or 0

    def _refuse_foreign(self, c: Connection) -> None:
        """A database without mysched's schema_version that holds tables is another
        application's: mysched's tables are not added to it (a wrong --db), and a table of the
        same name as one of mysched's would be written as if it were."""
        found = set(inspect(c).get_table_names())
        clash = sorted(found & set(metadata.tables))
        if clash or (found and self.dialect == "sqlite"):
            raise StoreError(f"history database {self.masked} holds tables of another application "
                             f"({', '.join(sorted(clash or found)[:5])[:200]}) and no mysched schema version: "
                             "name a database of mysched's own")

    def _newer(self, v: int) -> StoreError:
        return StoreError(f"history database {self.masked} has schema version {v}, newer than this mysched "
                          f"understands ({SCHEMA_VERSION}): upgrade mysched (or use another database)")

    def migrate(self) -> int:
        """Bring the schema to `SCHEMA_VERSION` in one transaction; return the version found.
        Idempotent; a database newer than this code is refused. A current schema is only
        read, so a daemon starts while another process holds the store's write lock."""
        with self._db("cannot open the schema"), self.engine.connect() as c:
            found = self._read_version(c)
        if found == SCHEMA_VERSION:
            return found
        with self.write("cannot open or migrate the schema") as c:
            if self.dialect == "postgresql":
                c.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _PG_MIGRATION_LOCK})
            current = self._read_version(c)
            if current > SCHEMA_VERSION:
                raise self._newer(current)
            if current == 0:
                self._refuse_foreign(c)
                metadata.create_all(c)
                c.execute(insert(schema_version).values(version=SCHEMA_VERSION))
            elif current < SCHEMA_VERSION:
                for version, _what, step in MIGRATIONS:
                    if current < version <= SCHEMA_VERSION:
                        step(c)
                c.execute(schema_version.delete())
                c.execute(insert(schema_version).values(version=SCHEMA_VERSION))
            return current

    def check(self) -> int:
        """The schema version of an existing store; StoreError if it has none or is too new."""
        with self._db("cannot open"), self.engine.connect() as c:
            v = self._read_version(c)
        if v == 0:
            raise StoreError(f"history database {self.masked} holds no mysched history yet (the daemon or "
                             "'mysched history import' creates it)")
        if v > SCHEMA_VERSION:
            raise self._newer(v)
        return v

    def version(self) -> int:
        with self._db("cannot read the schema version"), self.engine.connect() as c:
            return self._read_version(c)

    def close(self) -> None:
        self.engine.dispose()

    # -- finished jobs -----------------------------------------------------------------------
    def _insert_finished(self, c: Connection, records: Iterable[FinishedJob], source: str) -> tuple[int, int]:
        """Insert what is new; return (added, duplicates)."""
        rows = [{"job_id": r.id, "start": r.start, "end": r.end, "user": r.user, "grp": r.group,
                 "queue": r.queue, "vo": r.vo, "cores": r.cores, "cput": r.cput, "exit_status": r.exit_status,
                 "nodes": ",".join(r.nodes), "source": source} for r in records if r.end is not None]
        if not rows:
            return 0, 0
        # Look the batch's jobs up once and insert only the new ones in one executemany; the
        # unique key still guards against a concurrent writer (its conflicts are ignored).
        existing: set[tuple[str, float]] = set()
        ids = list({r["job_id"] for r in rows})
        fj = finished_jobs.c
        for i in range(0, len(ids), 500):
            chunk = ids[i:i + 500]
            existing.update((j, s) for j, s in c.execute(select(fj.job_id, fj.start).where(fj.job_id.in_(chunk))))
        new = []
        for r in rows:
            k = (r["job_id"], r["start"])
            if k not in existing:
                existing.add(k)
                new.append(r)
        if new:
            if self.dialect in ("sqlite", "postgresql"):
                stmt = _dialect_insert(self.dialect)(finished_jobs).on_conflict_do_nothing(
                    index_elements=["job_id", "start"])
            else:
                stmt = insert(finished_jobs)
            c.execute(stmt, new)
        return len(new), len(rows) - len(new)

    def add_finished(self, records: list[FinishedJob], source: str = "sim") -> int:
        """Store wall-clock records (one transaction); known ones are ignored. Returns how many were new."""
        with self.write("cannot store finished jobs") as c:
            return self._insert_finished(c, records, source)[0]

    def finished_since(self, t: float) -> list[FinishedJob]:
        """Jobs that ended at or after `t`, oldest end first (decayed usage over the window)."""
        with self._db("cannot read finished jobs"), self.engine.connect() as c:
            res = c.execute(select(finished_jobs).where(finished_jobs.c.end >= t)
                            .order_by(finished_jobs.c.end, finished_jobs.c.id))
            out = []
            for r in res:
                bad = _damage(r)
                if bad is None:
                    out.append(_row_to_job(r))
                elif r.id not in self._damaged:  # once: the daemon reads its window every cycle
                    self._damaged.add(r.id)
                    log.warning("history database %s: %s: left out of the usage", self.masked, bad)
            return out

    def count_finished(self) -> int:
        with self._db("cannot count finished jobs"), self.engine.connect() as c:
            return c.execute(select(func.count()).select_from(finished_jobs)).scalar_one()

    def usage_summary(self, since: float | None = None, until: float | None = None, by: str = "vo",
                      vo_of: Callable[[str], str | None] | None = None) -> list[dict[str, Any]]:
        """Per VO/group/user/queue: ``{key, jobs, wall_hours, cpu_hours}``, most wall-clock first.

        Wall-clock is (end - start) x cores clipped to [since, until); CPU time is clipped in the same
        proportion; jobs are those that ended in [since, until), so that consecutive intervals add
        up (as APEL counts). The VO is the record's own, else ``vo_of(group)``, else the group."""
        if by not in ("vo", "group", "user", "queue"):
            raise StoreError(f"cannot summarise by {by!r}: use vo, group, user or queue")
        fj = finished_jobs.c
        q = select(fj.id, fj.job_id, fj.start, fj.end, fj.cores, fj.cput, fj.user, fj.grp, fj.queue, fj.vo)
        if since is not None:
            q = q.where(fj.end >= since)
        if until is not None:
            q = q.where(fj.start < until)
        out: dict[Any, dict[str, Any]] = {}
        with self._db("cannot summarise usage"), self.engine.connect() as c:
            for row in c.execute(q):
                bad = _damage(row)
                if bad is not None:
                    raise StoreError(f"history database {self.masked}: {bad} (mend or delete that row)")
                _, _, start, end, cores, cput, user, grp, queue, vo = row
                if by == "vo":
                    key = vo or (vo_of(grp) if vo_of else None) or grp
                else:
                    key = {"user": user, "group": grp, "queue": queue}[by]
                lo = max(start, since) if since is not None else start
                hi = min(end, until) if until is not None else end
                span = max(0.0, hi - lo)
                full = end - start
                d = out.setdefault(key, {"key": key, "jobs": 0, "wall_hours": 0.0, "cpu_hours": 0.0})
                d["jobs"] += until is None or end < until
                d["wall_hours"] += span * cores / 3600.0
                if cput is not None:
                    d["cpu_hours"] += cput / 3600.0 * (span / full if full > 0 else 1.0)
        return sorted(out.values(), key=lambda d: -d["wall_hours"])

    # -- cycles --------------------------------------------------------------------------------
    def record_cycle(self, *, time: float, duration: float, result: str, n_started: int, n_failed: int,
                     n_queued: int, n_running: int, summary: dict[str, Any] | None = None,
                     starts: list[dict[str, Any]] | None = None) -> int:
        """Store a cycle and its start attempts (dicts as `record_start` takes) in one
        transaction; return the cycle id."""
        return self.record_cycles([dict(time=time, duration=duration, result=result, n_started=n_started,
                                        n_failed=n_failed, n_queued=n_queued, n_running=n_running,
                                        summary=summary, starts=starts)])[0]

    def record_cycles(self, records: list[dict[str, Any]]) -> list[int]:
        """Store cycles (each as `record_cycle` takes it), oldest first, in one transaction;
        return their ids. A cycle's record closes the intents of its starts planned no later
        than it (not a later cycle's, when it is written late)."""
        out = []
        with self.write("cannot record the cycle") as c:
            for r in records:
                r = dict(r)
                starts, summary = r.pop("starts", None), r.pop("summary", None)
                cid = c.execute(insert(cycles).values(**r, summary=json.dumps(summary or {}))).inserted_primary_key[0]
                if starts:
                    c.execute(insert(start_attempts), [{"cycle_id": cid, **s} for s in starts])
                    # their outcome is known now: the intents are done, in the same transaction
                    ids = [s["job_id"] for s in starts]
                    for i in range(0, len(ids), 500):
                        c.execute(start_intents.delete().where(start_intents.c.job_id.in_(ids[i:i + 500]),
                                                               start_intents.c.planned <= r["time"]))
                out.append(int(cid))
        return out

    def record_intents(self, intents: list[dict[str, Any]], planned: float) -> None:
        """Write the starts about to be made ({job_id, placement, reason}) in one transaction."""
        if not intents:
            return
        with self.write("cannot record start intents") as c:
            ids = [i["job_id"] for i in intents]
            for k in range(0, len(ids), 500):
                c.execute(start_intents.delete().where(start_intents.c.job_id.in_(ids[k:k + 500])))
            c.execute(insert(start_intents), [{**i, "planned": planned} for i in intents])

    def open_intents(self) -> list[dict[str, Any]]:
        """Intents whose outcome was never recorded (the daemon stopped in between)."""
        with self._db("cannot read start intents"), self.engine.connect() as c:
            return [dict(r._mapping) for r in c.execute(select(start_intents).order_by(start_intents.c.planned))]

    def record_start(self, cycle_id: int, job_id: str, placement: str, reason: str, result: str) -> int:
        """Store one start attempt of cycle `cycle_id` (placement as given to pbs_runjob)."""
        with self.write("cannot record the start") as c:
            return int(c.execute(insert(start_attempts).values(
                cycle_id=cycle_id, job_id=job_id, placement=placement, reason=reason, result=result)
            ).inserted_primary_key[0])

    def recent_cycles(self, n: int = 10) -> list[dict[str, Any]]:
        """The last `n` cycles, newest first, with their summary decoded."""
        with self._db("cannot read cycles"), self.engine.connect() as c:
            res = c.execute(select(cycles).order_by(cycles.c.id.desc()).limit(n))
            return [dict(r._mapping) | {"summary": json.loads(r.summary or "{}")} for r in res]

    def starts_of(self, job_id: str) -> list[dict[str, Any]]:
        """Every start attempt of a job, oldest first."""
        with self._db("cannot read starts"), self.engine.connect() as c:
            res = c.execute(select(start_attempts).where(start_attempts.c.job_id == job_id)
                            .order_by(start_attempts.c.id))
            return [dict(r._mapping) for r in res]

    # -- small durable state ----------------------------------------------------------------
    def get_state(self, key: str) -> Any:
        """The JSON value stored under `key`, or None."""
        with self._db("cannot read state"), self.engine.connect() as c:
            row = c.execute(select(state.c.value).where(state.c.key == key)).first()
            return json.loads(row[0]) if row else None

    def set_state(self, key: str, value: Any) -> None:
        """Store a JSON-serialisable value under `key` (replacing any)."""
        with self.write("cannot write state") as c:
            self._upsert(c, state, "key", {"key": key, "value": json.dumps(value)})

    # -- accounting ingestion positions (mysched.history.ingest reads the files) --------------
    def read_positions(self) -> dict[str, Any]:
        """Per accounting file (real path): the `ingest_positions` row saying how far it was read."""
        with self._db("cannot read ingest positions"), self.engine.connect() as c:
            return {r.path: r for r in c.execute(select(ingest_positions))}

    def store_batch(self, records: Iterable[FinishedJob], position: dict[str, Any]) -> tuple[int, int]:
        """Insert accounting records and set their file's position in one transaction, so a
        kill never leaves records without the position that covers them (or the reverse).
        Returns (added, duplicates)."""
        with self.write(f"cannot store the records of {position['path']}") as c:
            counts = self._insert_finished(c, records, "accounting")
            self._upsert(c, ingest_positions, "path", position)
        return counts


def _damage(r: Any) -> str | None:
    """What makes a finished_jobs row unusable (written by hand or another tool: mysched
    writes numbers), naming the row; None if it is sound."""
    for name in ("start", "end", "cores", "cput"):
        v = getattr(r, name)
        if v is None and name == "cput":
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            return f"finished_jobs row {r.id} (job {r.job_id}): {name}={v!r} is not a number"
    return None


def _row_to_job(r: Any) -> FinishedJob:
    return FinishedJob(r.job_id, r.user, r.grp, r.queue, r.start, r.end, r.cores, r.vo, r.cput, r.exit_status,
                       tuple(n for n in (r.nodes or "").split(",") if n))


def _identity(path: str | None) -> tuple[int, int] | None:
    """(device, inode) of a file, None if it is gone."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino
