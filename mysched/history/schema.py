"""The history store's schema: tables, version and the migrations between versions."""

from __future__ import annotations

from typing import Any, Callable

from sqlalchemy import (BigInteger, Column, Float, ForeignKey, Index, Integer, MetaData, String, Table, Text,
                        UniqueConstraint, inspect, text)
from sqlalchemy.engine import Connection

SCHEMA_VERSION = 5

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
    Index("ix_finished_jobs_end", "end"),
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
    Column("user", String(255)),
)
"""A start the daemon made (or tried): `user` is the job's owner (None in rows written before
schema 5), so an accounting `E` record is charged only to the owner of a job mysched started."""

ingest_positions = Table(
    "ingest_positions", metadata,
    Column("path", String(1024), primary_key=True),
    Column("inode", BigInteger, nullable=False),
    Column("offset", BigInteger, nullable=False),
    Column("size", BigInteger),
    Column("line", BigInteger),
    Column("head", String(64), nullable=False, default=""),
    Column("updated", Float, nullable=False),
)
"""Per accounting file: read up to `offset` (= `line` lines) of the file with this inode and
first bytes (`head`, a SHA-1); `size` as last seen, so an unchanged file costs one stat."""

state = Table(
    "state", metadata,
    Column("key", String(255), primary_key=True),
    Column("value", Text, nullable=False),
)


start_intents = Table(
    "start_intents", metadata,
    Column("job_id", String(255), primary_key=True),
    Column("placement", Text, nullable=False),
    Column("reason", String(32), nullable=False, default=""),
    Column("planned", Float, nullable=False),
)
"""Starts the daemon is about to make, written before the first pbs_runjob of a cycle and
removed in the transaction that records their outcome: one left over was interrupted (kill,
crash) and is looked up on the server before anything new starts."""


accounting_starts = Table(
    "accounting_starts", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("job_id", String(255), nullable=False),
    Column("user", String(255), nullable=False),
    Column("start", Float, nullable=False),
    UniqueConstraint("job_id", "start", name="uq_accounting_start"),
)
"""The `S` records read from the accounting logs: an `E` record is charged only when it
matches one (same job, owner and start) or a start mysched recorded (`start_attempts`)."""

suspect_records = Table(
    "suspect_records", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("job_id", String(255), nullable=False),
    Column("start", Float, nullable=False),
    Column("end", Float, nullable=False),
    Column("user", String(255), nullable=False),
    Column("grp", String(255), nullable=False),
    Column("queue", String(255), nullable=False),
    Column("cores", Integer, nullable=False),
    Column("cput", Float),
    Column("exit_status", Integer),
    Column("nodes", Text, nullable=False, default=""),
    Column("path", String(1024), nullable=False),
    Column("line", BigInteger, nullable=False),
    Column("reason", String(32), nullable=False),
    Column("seen", Float, nullable=False),
    UniqueConstraint("job_id", "start", "reason", name="uq_suspect_record"),
)
"""`E` records charged to no one, where they were read (`path`:`line`) and why: "unmatched"
(no `S` record nor start of mysched's with the same job, owner and start: taken into
`finished_jobs` if its `S` record is read later) or "inside" (a line of another record's
``account=`` value: never)."""


def dialect_insert(dialect: str) -> Callable[[Table], Any]:
    """SQLite's or PostgreSQL's INSERT (with ON CONFLICT), by dialect name."""
    if dialect == "sqlite":
        from sqlalchemy.dialects.sqlite import insert as dinsert
    else:
        from sqlalchemy.dialects.postgresql import insert as dinsert
    return dinsert


def _v2_end_index(c: Connection) -> None:
    c.execute(text('CREATE INDEX IF NOT EXISTS ix_finished_jobs_end ON finished_jobs ("end")'))


def _v3_positions(c: Connection) -> None:
    have = {col["name"] for col in inspect(c).get_columns("ingest_positions")}
    for name in ("size", "line"):
        if name not in have:
            c.execute(text(f"ALTER TABLE ingest_positions ADD COLUMN {name} BIGINT"))
    if c.dialect.name == "postgresql":  # 64-bit inodes (XFS) and files over 2 GB
        c.execute(text('ALTER TABLE ingest_positions ALTER COLUMN inode TYPE BIGINT, '
                       'ALTER COLUMN "offset" TYPE BIGINT'))


def _v4_intents(c: Connection) -> None:
    start_intents.create(c, checkfirst=True)


def _v5_evidence(c: Connection) -> None:
    accounting_starts.create(c, checkfirst=True)
    suspect_records.create(c, checkfirst=True)
    if "user" not in {col["name"] for col in inspect(c).get_columns("starts")}:
        c.execute(text("ALTER TABLE starts ADD COLUMN \"user\" VARCHAR(255)"))


MIGRATIONS: list[tuple[int, str, Callable[[Connection], None]]] = [
    (2, "index finished jobs by end time", _v2_end_index),
    (3, "ingest positions: size and line number; 64-bit inode and offset", _v3_positions),
    (4, "start intents (exactly-once starts across crashes)", _v4_intents),
    (5, "accounting S records and suspect E records; the owner of each start", _v5_evidence),
]
"""Ordered steps from version N-1 to N. Version 1 is the first released schema; a new
database is created at `SCHEMA_VERSION` directly from `metadata`. Each step must leave a
database equal to a fresh one. All steps run in one transaction (SQLite and PostgreSQL
have transactional DDL); they are written to be safe to run again all the same."""
