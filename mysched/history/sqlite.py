"""SQLite connection settings for the history store (WAL, busy timeout, write transactions
that take the lock up front)."""

from __future__ import annotations

from typing import Any, Callable

from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine

WRITE = "mysched_write"
"""Execution option of the store's writer: its transactions begin with BEGIN IMMEDIATE."""
SQLITE_BUSY = 5


def sqlite_setup(engine: Engine, lock_wait: Callable[[], float] = lambda: 30.0) -> None:
    """WAL (readers never block the writer), a busy timeout, and BEGIN issued by SQLAlchemy
    rather than pysqlite, so DDL is transactional and writers can BEGIN IMMEDIATE.

    Each transaction waits at most `lock_wait()` seconds for another process's lock (the
    store's `lock_wait`, read at every BEGIN: a command waits long, the daemon briefly)."""

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute(f"PRAGMA busy_timeout={_ms(lock_wait())}")
        try:
            cur.execute("PRAGMA journal_mode=WAL")
        except Exception:  # noqa: BLE001 - a read-only user cannot switch modes; reading still works
            pass
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        conn.exec_driver_sql(f"PRAGMA busy_timeout={_ms(lock_wait())}")
        conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get(WRITE) else "BEGIN")


def sqlite_locked(exc: BaseException) -> bool:
    """An SQLite error saying another connection holds the lock (SQLITE_BUSY)."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF == SQLITE_BUSY
    return "database is locked" in str(exc)


def _ms(seconds: float) -> int:
    return max(0, int(seconds * 1000))
