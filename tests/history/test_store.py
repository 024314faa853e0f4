"""The history store on SQLite and (when MYSCHED_TEST_PG_URL answers) PostgreSQL: cycles,
usage summaries, schema migrations, and clear errors for databases that cannot be used."""

from __future__ import annotations

import pytest
from sqlalchemy import (Column, Float, ForeignKey, Integer, MetaData, String, Table, Text, UniqueConstraint,
                        create_engine, inspect, text)

import mysched.history.store as store_mod
from mysched.errors import StoreError
from mysched.core.model.batch import FinishedJob
from mysched.history.ingest import _head, ingest_accounting
from mysched.history.store import SCHEMA_VERSION, Store, ingest_positions

from .helpers import both, lines, positions


@both
def test_cycles_starts_and_state_round_trip(store):
    cid = store.record_cycle(time=5.0, duration=0.2, result="ok", n_started=1, n_failed=0, n_queued=3,
                             n_running=7, summary={"plan_s": 0.1},
                             starts=[{"job_id": "1.s", "placement": "wn01:ppn=1", "reason": "share", "result": "ok"}])
    store.record_start(cid, "1.s", "wn02:ppn=1", "share", "refused")
    last = store.recent_cycles(1)[0]
    assert last["id"] == cid and last["summary"] == {"plan_s": 0.1} and last["n_running"] == 7
    assert [(s["placement"], s["result"]) for s in store.starts_of("1.s")] == [("wn01:ppn=1", "ok"),
                                                                            ("wn02:ppn=1", "refused")]
    assert store.get_state("k") is None
    store.set_state("k", {"a": 1})
    store.set_state("k", {"a": 2})
    assert store.get_state("k") == {"a": 2}


@both
def test_finished_since_and_usage_summary(store):
    store.add_finished([FinishedJob("1", "alice", "atlas", "q1", 0.0, 7200.0, 2, cput=3600.0),
                        FinishedJob("2", "bob", "cms", "q2", 3600.0, 10800.0, 1),
                        FinishedJob("3", "carol", "atlas", "q1", 100.0, 1000.0, 4, vo="ops")])
    assert [j.id for j in store.finished_since(1000.0)] == ["3", "1", "2"]
    assert [j.id for j in store.finished_since(5000.0)] == ["1", "2"]
    rows = {r["key"]: r for r in store.usage_summary(since=3600.0, by="group")}
    assert rows["atlas"]["wall_hours"] == pytest.approx(2.0)  # 1 h x 2 cores inside the window
    assert rows["atlas"]["cpu_hours"] == pytest.approx(0.5) and rows["atlas"]["jobs"] == 1
    assert rows["cms"]["wall_hours"] == pytest.approx(2.0)
    rows = {r["key"]: r for r in store.usage_summary(until=3600.0, by="user")}
    assert rows["alice"]["wall_hours"] == pytest.approx(2.0) and "bob" not in rows  # bob starts at `until`
    by_vo = {r["key"]: r["jobs"] for r in store.usage_summary(by="vo", vo_of={"atlas": "ATLAS"}.get)}
    assert by_vo == {"ATLAS": 1, "cms": 1, "ops": 1}  # a group the mapping does not know stands for itself
    assert {r["key"] for r in store.usage_summary(by="queue")} == {"q1", "q2"}


# -- schema --------------------------------------------------------------------------------

def _v1_metadata() -> MetaData:
    """The tables as the first released schema (version 1) created them."""
    md = MetaData()
    Table("schema_version", md, Column("version", Integer, nullable=False))
    Table("finished_jobs", md, Column("id", Integer, primary_key=True), Column("job_id", String(255), nullable=False),
          Column("start", Float, nullable=False), Column("end", Float, nullable=False),
          Column("user", String(255), nullable=False), Column("grp", String(255), nullable=False),
          Column("queue", String(255), nullable=False), Column("vo", String(255)),
          Column("cores", Integer, nullable=False), Column("cput", Float), Column("exit_status", Integer),
          Column("nodes", Text, nullable=False), Column("source", String(32), nullable=False),
          UniqueConstraint("job_id", "start", name="uq_finished_job"))
    Table("cycles", md, Column("id", Integer, primary_key=True), Column("time", Float, nullable=False, index=True),
          Column("duration", Float, nullable=False), Column("result", String(32), nullable=False),
          *(Column(c, Integer, nullable=False) for c in ("n_started", "n_failed", "n_queued", "n_running")),
          Column("summary", Text, nullable=False))
    Table("starts", md, Column("id", Integer, primary_key=True),
          Column("cycle_id", Integer, ForeignKey("cycles.id"), nullable=False, index=True),
          Column("job_id", String(255), nullable=False, index=True), Column("placement", Text, nullable=False),
          Column("reason", String(32), nullable=False), Column("result", String(32), nullable=False))
    Table("ingest_positions", md, Column("path", String(1024), primary_key=True),
          Column("inode", Integer, nullable=False), Column("offset", Integer, nullable=False),
          Column("head", String(64), nullable=False), Column("updated", Float, nullable=False))
    Table("state", md, Column("key", String(255), primary_key=True), Column("value", Text, nullable=False))
    return md


@both
def test_schema_migrates_from_version_1_keeping_history(db_url, tmp_path):
    f = tmp_path / "20261122"
    f.write_text(lines(3))
    md = _v1_metadata()
    eng = create_engine(db_url)
    with eng.begin() as c:
        md.create_all(c)
        c.execute(md.tables["schema_version"].insert().values(version=1))
        c.execute(md.tables["finished_jobs"].insert().values(
            job_id="old.srv", start=1.0, end=2.0, user="u", grp="g", queue="q", cores=1, nodes="", source="x"))
        # version 1 had read the file's three lines (no line number stored then)
        c.execute(md.tables["ingest_positions"].insert().values(
            path=str(f), inode=f.stat().st_ino, offset=f.stat().st_size, head=_head(str(f), 10**6),
            updated=0.0))
    eng.dispose()
    s = Store(db_url)
    assert s.version() == SCHEMA_VERSION
    insp = inspect(s.engine)  # the migrated schema is the one a fresh store gets
    for table in store_mod.metadata.sorted_tables:
        assert {c["name"] for c in insp.get_columns(table.name)} == set(table.c.keys()), table.name
    assert "ix_finished_jobs_end" in {i["name"] for i in insp.get_indexes("finished_jobs")}
    assert [j.id for j in s.finished_since(0)] == ["old.srv"]
    with open(f, "a") as fh:
        fh.write(lines(1, first=9) + "bad\n")
    rep = ingest_accounting(s, str(f), trust_all=True)
    assert rep.records_added == 1 and rep.problems == [f"{f}:5: expected 'MM/DD/YYYY HH:MM:SS;TYPE;JOBID;attributes'"]
    big = 2**40 + 5  # offsets and inodes beyond 32 bits now fit
    with s.engine.begin() as c:
        c.execute(ingest_positions.update().values(offset=big, inode=big))
    assert positions(s)[str(f)]["offset"] == big
    assert Store(db_url).version() == SCHEMA_VERSION  # opening again changes nothing
    s.close()


@both
def test_database_newer_than_code_is_refused(store, db_url):
    with store.engine.begin() as c:
        c.execute(text("UPDATE schema_version SET version = 99"))
    for create in (True, False):
        with pytest.raises(StoreError, match="schema version 99, newer than this mysched understands"):
            Store(db_url, create=create)


def test_reading_a_database_that_holds_no_history_says_so(tmp_path):
    (tmp_path / "empty.db").write_bytes(b"")
    with pytest.raises(StoreError, match="holds no mysched history yet"):
        Store(f"sqlite:///{tmp_path}/empty.db", create=False)


@pytest.mark.parametrize("password", ["secret-pw", "s3cr%40t"])
def test_unreachable_postgresql_is_a_clear_error_with_masked_password(password):
    with pytest.raises(StoreError) as exc:
        Store(f"postgresql+psycopg2://mysched:{password}@127.0.0.1:1/mysched")
    msg = str(exc.value)
    assert "\n" not in msg and "127.0.0.1" in msg and "port 1 " in msg and "***" in msg
    assert "secret" not in msg and "cr%40t" not in msg and "s3cr@t" not in msg


def test_password_with_a_raw_at_sign_is_refused_unleaked():
    with pytest.raises(StoreError, match="write it as %40") as exc:
        Store("postgresql+psycopg2://mysched:se@cret@127.0.0.1:1/mysched")
    assert "cret" not in str(exc.value)


def test_sqlite_in_a_missing_directory_names_it(tmp_path):
    with pytest.raises(StoreError, match=f"directory {tmp_path}/nowhere does not exist"):
        Store(f"sqlite:///{tmp_path}/nowhere/history.db")
