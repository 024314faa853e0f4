"""Leadership: one daemon per history store starts jobs; any other waits as standby.

Two kinds of lock, by store:
- PostgreSQL: a session advisory lock held on a connection of its own. The server releases
  it when that session ends: at once when the daemon dies (kill -9 closes the socket), and
  after `timeout` when the daemon is cut off (the session's `idle_session_timeout`, kept
  from firing by a heartbeat every timeout/4 while all is well).
- SQLite or no store: an exclusive `flock` on a file beside the database (one host only;
  the kernel releases it when the process dies).

Fencing: a leader believes in its leadership for at most `lease` (timeout/2) after the last
round trip that proved it, and records each cycle's start intents in a statement that
writes nothing unless the lock is still held by that very session -- so a leader that lost
its lock records nothing and starts nothing, and the server cannot hand the lock to a
standby before the old leader's lease has run out. Every database call here runs on a
worker thread with a deadline: a black-holed network cannot hang the daemon past its lease.
"""

from __future__ import annotations

import concurrent.futures as cf
import fcntl
import json
import logging
import os
import socket
import threading
import time
import zlib
from typing import Any, Callable, Protocol

from sqlalchemy import create_engine, text
from sqlalchemy.engine import Connection, make_url
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.pool import NullPool

from mysched.errors import StoreError

log = logging.getLogger("mysched")

PG_LEADER_LOCK = 0x6D797364
"""The high half of the advisory lock key of leadership; the low half is a CRC of the
history's schema, so farms whose histories share a database in separate schemas each have
a leader of their own."""


class LeadershipLost(StoreError):
    """This daemon is not (or no longer provably) the leader: it must start nothing."""


def identity() -> dict[str, Any]:
    return {"host": socket.gethostname(), "pid": os.getpid()}


class Leadership(Protocol):
    """What the daemon needs from a leadership lock."""

    kind: str
    """What holds the lock, as the status file names it: "file" or "database"."""
    timeout: float
    leader: bool
    since: float | None

    def acquire(self) -> bool: ...
    def confirm(self) -> bool: ...
    def record_intents(self, store: Any, intents: list[dict[str, Any]], planned: float) -> None: ...
    def holder(self) -> dict[str, Any] | None: ...
    def release(self) -> None: ...


class FileLeadership:
    """An exclusive `flock` on `path` (same host only). The file names the holder."""

    kind = "file"

    def __init__(self, path: str, timeout: float) -> None:
        self.path = path
        self.timeout = timeout
        self.leader = False
        self.since: float | None = None
        self._fd: int | None = None

    def acquire(self) -> bool:
        if self.leader and self.confirm():
            return True
        self._close()
        existed = os.path.lexists(self.path)
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise StoreError(f"leadership lock {self.path}: cannot open: {exc.strerror or exc}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return False
        if _ino(self.path) != os.fstat(fd).st_ino:  # replaced between open and lock
            os.close(fd)
            return False
        since = time.time()
        try:
            os.ftruncate(fd, 0)
            text = (json.dumps(identity() | {"since": since}) + "\n").encode()
            if os.pwrite(fd, text, 0) != len(text):
                raise OSError(28, os.strerror(28))  # a short write: the disk is full
        except OSError as exc:
            # A lock file that names no one reads as "nobody leads" to a standby or a dry run:
            # give the lock up, and remove the file this call created (a full disk leaves no
            # empty leader.lock behind)
            if not existed:
                try:
                    os.unlink(self.path)
                except OSError:
                    pass
            os.close(fd)
            raise StoreError(f"leadership lock {self.path}: cannot write who holds it: {exc.strerror or exc}"
                             f"{' (the disk is full)' if exc.errno == 28 else ''}") from None
        self._fd, self.leader, self.since = fd, True, since
        return True

    def confirm(self) -> bool:
        """Held: our descriptor is open and still the file at `path` (one deleted or replaced
        would let a second daemon lock a new file)."""
        if not self.leader or self._fd is None:
            return False
        if _ino(self.path) != os.fstat(self._fd).st_ino:
            log.error("leadership lock %s was deleted or replaced: giving up leadership", self.path)
            self._close()
            return False
        return True

    def record_intents(self, store: Any, intents: list[dict[str, Any]], planned: float) -> None:
        if not self.confirm():
            raise LeadershipLost(f"leadership lock {self.path} is not held")
        store.record_intents(intents, planned)

    def holder(self) -> dict[str, Any] | None:
        return read_lock_file(self.path)

    def release(self) -> None:
        self._close()

    def _close(self) -> None:
        if self._fd is not None:
            try:
                os.close(self._fd)  # closing the descriptor drops the flock
            except OSError:
                pass
        self._fd, self.leader, self.since = None, False, None


def read_lock_file(path: str) -> dict[str, Any] | None:
    """Who holds a file lock: {host, pid, since} if some live process does, else None."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            pass  # held: read who holds it
        else:
            return None  # nobody holds it
        try:
            return json.loads(os.pread(fd, 4096, 0).decode() or "null")
        except ValueError:
            return {"host": "?", "pid": None, "since": None}
    finally:
        os.close(fd)


class PgLeadership:
    """A PostgreSQL session advisory lock, on a connection of its own (see the module doc)."""

    kind = "database"

    def __init__(self, url: str, timeout: float, *, masked: str = "", key: int | None = None) -> None:
        self.timeout = timeout
        self.lease = timeout / 2
        self.leader = False
        self.since: float | None = None
        self.masked = masked or url
        self.key = key
        """None until the first connection: then from the schema (see `PG_LEADER_LOCK`)."""
        u = make_url(url)
        args: dict[str, Any] = {}
        if u.get_driver_name() in ("psycopg2", "psycopg"):
            t = max(1, int(timeout))
            args = {"connect_timeout": max(2, t), "keepalives": 1, "keepalives_idle": max(1, t // 3),
                    "keepalives_interval": 1, "keepalives_count": 3, "tcp_user_timeout": t * 1000,
                    "application_name": "mysched {host}:{pid}".format(**identity())}
        self._engine = create_engine(u, poolclass=NullPool, connect_args=args)
        self._conn: Connection | None = None
        self._pool: cf.ThreadPoolExecutor | None = None
        self._confirmed = 0.0
        """monotonic time at which the last successful proof was *sent*"""
        self._beat: threading.Thread | None = None
        self._stop = threading.Event()
        self._mutex = threading.Lock()

    # -- calls with a deadline -------------------------------------------------------------
    def _call(self, fn: Callable[[Connection], Any], what: str) -> Any:
        """Run `fn` on the lock's connection on the worker thread; give up after the lease
        (the connection is then abandoned: a hung one may never answer)."""
        if self._pool is None:
            self._pool = cf.ThreadPoolExecutor(1, thread_name_prefix="mysched-leader")
        fut = self._pool.submit(self._on_conn, fn)
        try:
            return fut.result(timeout=max(self.lease, 1.0))
        except cf.TimeoutError:
            self._abandon()
            raise StoreError(f"history database {self.masked}: {what}: no answer within {max(self.lease, 1.0):g} s")
        except SQLAlchemyError as exc:
            self._abandon()
            orig = getattr(exc, "orig", None) or exc
            msg = (str(orig).strip().splitlines() or [type(orig).__name__])[0]
            raise StoreError(f"history database {self.masked}: {what}: {msg}") from None

    def _on_conn(self, fn: Callable[[Connection], Any]) -> Any:
        if self._conn is None:
            c = self._engine.connect().execution_options(isolation_level="AUTOCOMMIT")
            ms = int(self.timeout * 1000)
            for setting in (f"SET idle_session_timeout = {ms}", f"SET idle_in_transaction_session_timeout = {ms}",
                            f"SET tcp_keepalives_idle = {max(1, ms // 3000)}", "SET tcp_keepalives_interval = 1",
                            "SET tcp_keepalives_count = 3", f"SET tcp_user_timeout = {ms}"):
                try:
                    c.execute(text(setting))
                except SQLAlchemyError:  # idle_session_timeout needs PostgreSQL 14
                    log.warning("leadership lock: %s not supported by this PostgreSQL; a leader cut off from "
                                "it is noticed by TCP keepalives only", setting.split()[1])
            if self.key is None:
                schema = c.execute(text("SELECT current_schema()")).scalar() or ""
                self.key = (PG_LEADER_LOCK << 32) | zlib.crc32(schema.encode())
            self._conn = c
        return fn(self._conn)

    def _abandon(self) -> None:
        was = self.leader
        self.leader, self.since = False, None
        pool, conn = self._pool, self._conn
        self._pool, self._conn = None, None
        if pool is not None:
            pool.shutdown(wait=False)
            if conn is not None:  # closed on the hung worker once (if ever) it returns
                pool_close = threading.Thread(target=_quiet_close, args=(conn,), daemon=True)
                pool_close.start()
        if was:
            self._stop.set()

    # -- the lock ------------------------------------------------------------------------------
    def _mine(self, c: Connection) -> bool:
        return bool(c.execute(text(
            "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid() "
            "AND granted AND CAST(classid AS bigint) = :hi AND CAST(objid AS bigint) = :lo AND objsubid = 1)"),
            self._halves()).scalar())

    def _halves(self) -> dict[str, int]:
        """pg_locks shows a bigint key as classid (high half) and objid (low half)."""
        key = self.key or 0
        return {"hi": key >> 32, "lo": key & 0xFFFFFFFF}

    def acquire(self) -> bool:
        if self.leader and self.confirm():
            return True
        with self._mutex:
            sent = time.monotonic()
            got = self._call(lambda c: c.execute(text("SELECT pg_try_advisory_lock(:k)"),
                                                 {"k": self.key}).scalar(), "cannot try the leadership lock")
            if not got:
                return False
            self.leader, self.since, self._confirmed = True, time.time(), sent
        self._start_heartbeat()
        return True

    def confirm(self) -> bool:
        """Leadership proved within the lease; past it, one round trip proves it again."""
        if not self.leader:
            return False
        if time.monotonic() - self._confirmed < self.lease:
            return True
        return self._prove()

    def _prove(self) -> bool:
        with self._mutex:
            if not self.leader:
                return False
            sent = time.monotonic()
            try:
                ok = self._call(self._mine, "cannot check the leadership lock")
            except StoreError as exc:
                log.error("leadership: %s", exc)
                return False
            if not ok:
                log.error("leadership lock no longer held by this daemon's session")
                self._abandon()
                return False
            self._confirmed = max(self._confirmed, sent)
            return True

    def _start_heartbeat(self) -> None:
        self._stop = threading.Event()
        stop = self._stop

        def beat() -> None:
            while not stop.wait(self.timeout / 4):
                if not self._prove():
                    return
        self._beat = threading.Thread(target=beat, name="mysched-leader-heartbeat", daemon=True)
        self._beat.start()

    def record_intents(self, store: Any, intents: list[dict[str, Any]], planned: float) -> None:
        """Write the intents only if this session still holds the lock, in one statement."""
        if not intents:
            return
        if not self.leader:
            raise LeadershipLost("not the leader")
        ids = [i["job_id"] for i in intents]
        sql = text(
            "INSERT INTO start_intents (job_id, placement, reason, planned) "
            "SELECT j, p, r, :planned FROM unnest(CAST(:ids AS text[]), CAST(:pls AS text[]), "
            "CAST(:rs AS text[])) AS t(j, p, r) "
            "WHERE EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid() "
            "AND granted AND CAST(classid AS bigint) = :hi AND CAST(objid AS bigint) = :lo AND objsubid = 1) "
            "ON CONFLICT (job_id) DO UPDATE SET placement = EXCLUDED.placement, reason = EXCLUDED.reason, "
            "planned = EXCLUDED.planned")
        params = {"planned": planned, "ids": ids, "pls": [i["placement"] for i in intents],
                  "rs": [i.get("reason", "") for i in intents]}
        with self._mutex:
            sent = time.monotonic()
            try:
                n = self._call(lambda c: c.execute(sql, params | self._halves()).rowcount,
                               "cannot record start intents")
            except StoreError as exc:
                raise LeadershipLost(str(exc)) from None
            if n != len(ids):
                self._abandon()
                raise LeadershipLost("the leadership lock is no longer held by this daemon's session")
            self._confirmed = max(self._confirmed, sent)

    def holder(self) -> dict[str, Any] | None:
        """Who holds the lock, as the server sees it: {host, pid, since, client}; None if
        nobody does (or the database cannot say)."""
        q = text("SELECT a.application_name, host(a.client_addr), a.backend_start FROM pg_locks l "
                 "JOIN pg_stat_activity a ON a.pid = l.pid WHERE l.locktype = 'advisory' AND l.granted "
                 "AND CAST(l.classid AS bigint) = :hi AND CAST(l.objid AS bigint) = :lo AND l.objsubid = 1")
        try:
            with self._mutex:
                row = self._call(lambda c: c.execute(q, self._halves()).first(),
                                 "cannot look up the leader")
        except StoreError:
            return None
        if row is None:
            return None
        name, client, started = row
        host, _, pid = (name or "").removeprefix("mysched ").rpartition(":")
        return {"host": host or "?", "pid": int(pid) if pid.isdigit() else None,
                "since": started.timestamp() if started is not None else None, "client": client}

    def release(self) -> None:
        self._stop.set()
        with self._mutex:
            if self._conn is not None and self._pool is not None:
                try:
                    self._call(lambda c: c.execute(text("SELECT pg_advisory_unlock_all()")), "cannot release")
                except StoreError:
                    pass
            pool, conn = self._pool, self._conn
            self._pool, self._conn = None, None
            self.leader, self.since = False, None
        if pool is not None:
            pool.shutdown(wait=False)
        if conn is not None:
            _quiet_close(conn)
        self._engine.dispose()


def _quiet_close(conn: Connection) -> None:
    try:
        conn.close()
    except Exception:  # noqa: BLE001 - closing a broken connection
        pass


def _ino(path: str) -> int | None:
    try:
        return os.stat(path).st_ino
    except OSError:
        return None


def leadership_for(store: Any, state_dir: str, timeout: float) -> Leadership | None:
    """PostgreSQL store: its advisory lock; SQLite file: a lock file beside it; no store or
    an in-memory one: a lock file in the state directory; neither: no leadership."""
    if store is not None and store.dialect == "postgresql":
        return PgLeadership(store.url, timeout, masked=store.masked)
    db = store.engine.url.database if store is not None and store.dialect == "sqlite" else None
    if db and db != ":memory:" and not db.startswith("file:"):
        return FileLeadership(os.path.abspath(db) + ".leader", timeout)
    if store is not None and store.dialect not in ("sqlite",):
        raise StoreError(f"history database {store.masked}: active/standby needs PostgreSQL or SQLite "
                         f"({store.dialect} has no lock mysched can use)")
    if state_dir:
        return FileLeadership(os.path.join(state_dir, "leader.lock"), timeout)
    return None
