"""SQLite connection settings for the history store (WAL, busy timeout, write transactions
that take the lock up front)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine

WRITE = "mysched_write"
"""Execution option of the store's writer: its transactions begin with BEGIN IMMEDIATE."""


def sqlite_setup(engine: Engine) -> None:
    """WAL (readers never block the writer), a busy timeout, and BEGIN issued by SQLAlchemy
    rather than pysqlite, so DDL is transactional and writers can BEGIN IMMEDIATE."""

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA busy_timeout=30000")
        try:
            cur.execute("PRAGMA journal_mode=WAL")
        except Exception:  # noqa: BLE001 - a read-only user cannot switch modes; reading still works
            pass
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get(WRITE) else "BEGIN")
