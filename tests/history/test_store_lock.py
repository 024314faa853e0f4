"""A SQLite store another process holds locked: the store says so (`StoreLocked`) after its
own `lock_wait` -- a command waits long, the daemon sets it short -- and a store whose schema
is current opens without the write lock."""

from __future__ import annotations

import sqlite3
from contextlib import contextmanager

import pytest
from sqlalchemy import create_engine, text

from mysched.core.model.batch import FinishedJob
from mysched.history.store import Store, StoreLocked

from .helpers import BACKENDS


@contextmanager
def held(path):
    """The write lock of a SQLite file, held by another connection (as `mysched history
    prune` or a sqlite3 shell with an open transaction holds it)."""
    c = sqlite3.connect(str(path), isolation_level=None)
    c.execute("BEGIN IMMEDIATE")
    try:
        yield
    finally:
        c.execute("ROLLBACK")
        c.close()


def job(i: int) -> FinishedJob:
    return FinishedJob(f"{i}.s", "u", "atlas", "q", 10.0 * i, 10.0 * i + 5, 1)


def busy_timeout(store: Store) -> int:
    with store.write("read the busy timeout") as c:
        return c.exec_driver_sql("PRAGMA busy_timeout").scalar()


def test_a_write_waits_as_long_as_the_store_says_and_then_says_it_was_locked(tmp_path):
    store = Store(f"sqlite:///{tmp_path}/h.db")
    assert busy_timeout(store) == 30000  # a command (history import) waits for the daemon
    store.lock_wait = 0.05
    assert busy_timeout(store) == 50  # the daemon's, set on every transaction of the pool
    with held(tmp_path / "h.db"):
        with pytest.raises(StoreLocked, match="cannot store finished jobs: database is locked"):
            store.add_finished([job(1)])
        assert store.finished_since(0.0) == []  # reading goes on (WAL)
    assert store.add_finished([job(1)]) == 1


def test_a_current_store_opens_while_another_process_holds_the_write_lock(tmp_path):
    Store(f"sqlite:///{tmp_path}/h.db").close()
    with held(tmp_path / "h.db"):
        store = Store(f"sqlite:///{tmp_path}/h.db")  # only reads the schema version
        assert store.count_finished() == 0


def test_a_cycle_written_late_closes_only_the_intents_it_made(tmp_path):
    """A cycle's record kept in memory while the store was locked is written after a later
    cycle planned the same job again: the later intent stays open until its own record."""
    store = Store(f"sqlite:///{tmp_path}/h.db")
    store.record_intents([{"job_id": "1.s", "placement": "wn01:ppn=1", "reason": "share"}], 10.0)
    store.record_intents([{"job_id": "1.s", "placement": "wn02:ppn=1", "reason": "share"}], 20.0)
    first = dict(time=10.0, duration=0.1, result="ok", n_started=0, n_failed=1, n_queued=1, n_running=0,
                 starts=[{"job_id": "1.s", "placement": "wn01:ppn=1", "reason": "share", "result": "refused"}])
    store.record_cycles([first])
    assert [i["placement"] for i in store.open_intents()] == ["wn02:ppn=1"]
    store.record_cycles([first | {"time": 20.0, "starts": [first["starts"][0] | {"result": "ok"}]}])
    assert store.open_intents() == []
    assert [s["result"] for s in store.starts_of("1.s")] == ["refused", "ok"]


@pytest.mark.parametrize("db_url", BACKENDS[1:], indirect=True)
def test_postgresql_writes_wait_the_short_lock_wait_too(db_url):
    """PostgreSQL: a daemon's write waits `lock_wait` for a lock (lock_timeout) instead of
    for ever; a command's write keeps the server's default (no lock_timeout)."""
    store = Store(db_url)
    eng = create_engine(db_url)
    try:
        with eng.connect() as other:
            other.execute(text("BEGIN"))
            other.execute(text("LOCK TABLE finished_jobs IN ACCESS EXCLUSIVE MODE"))  # a table being rewritten
            store.lock_wait = 0.2
            with pytest.raises(StoreLocked, match="cannot store finished jobs"):
                store.add_finished([job(1)])
            other.execute(text("ROLLBACK"))
        assert store.add_finished([job(1)]) == 1
        store.lock_wait = 30.0
        with store.write("read lock_timeout") as c:
            assert c.execute(text("SHOW lock_timeout")).scalar() == "0"
    finally:
        store.close()
        eng.dispose()
