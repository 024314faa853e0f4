"""History store and accounting ingestion, on SQLite and (when MYSCHED_TEST_PG_URL answers)
PostgreSQL: every behaviour an admin relies on — nothing counted twice, nothing lost."""

from __future__ import annotations

import gzip
import os
import signal
import subprocess
import sys
import time
import uuid

import pytest
from sqlalchemy import (Column, Float, ForeignKey, Integer, MetaData, String, Table, Text, UniqueConstraint,
                        create_engine, inspect, select, text)

import mysched.history.store as store_mod
from mysched.errors import InputError, StoreError
from mysched.core.model import FinishedJob
from mysched.history.store import SCHEMA_VERSION, Store, ingest_positions

PG_URL = os.environ.get("MYSCHED_TEST_PG_URL")
APEL = "apel-test_pbs-torque-accounting-E-records.log"


def _with_schema(url: str, schema: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}options=-csearch_path%3D{schema}"


@pytest.fixture
def db_url(request, tmp_path):
    """A fresh, empty database URL: a SQLite file, or a private PostgreSQL schema."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path}/history.db"
        return
    if not PG_URL:
        pytest.skip("MYSCHED_TEST_PG_URL not set (bash .ci/postgres.sh prints one)")
    try:
        eng = create_engine(PG_URL, connect_args={"connect_timeout": 5})
        schema = "t_" + uuid.uuid4().hex[:10]
        with eng.begin() as c:
            c.execute(text(f"CREATE SCHEMA {schema}"))
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"PostgreSQL at MYSCHED_TEST_PG_URL not reachable: {str(exc).splitlines()[0]}")
    yield _with_schema(PG_URL, schema)
    with eng.begin() as c:
        c.execute(text(f"DROP SCHEMA {schema} CASCADE"))
    eng.dispose()


BACKENDS = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]
both = pytest.mark.parametrize("db_url", BACKENDS, indirect=True)


@pytest.fixture
def store(db_url):
    s = Store(db_url)
    yield s
    s.close()


LINE = ("{d} 10:00:{s:02d};E;{jid}.srv;user=u{u} group=atlas jobname=j queue=atlas ctime=1 qtime=1 etime=1 "
        "start={start} owner=u@ce exec_host=wn01/0-1 Resource_List.nodes=1:ppn=2 end={end} Exit_status=0 "
        "resources_used.cput=01:00:00 resources_used.walltime=00:10:00\n")


def lines(n: int, first: int = 0, day: str = "11/22/2026") -> str:
    """`n` E records of distinct jobs `first`..`first+n-1`."""
    return "".join(LINE.format(d=day, s=i % 60, jid=first + i, u=i % 3, start=1000 + first + i,
                               end=1600 + first + i) for i in range(n))


def positions(s: Store) -> dict[str, dict]:
    with s.engine.connect() as c:
        return {r.path: dict(r._mapping) for r in c.execute(select(ingest_positions))}


@both
def test_apel_sample_ingested_once_with_cores_and_cput(store, traces):
    rep = store.ingest_accounting(str(traces / APEL))
    assert (rep.files, rep.lines, rep.malformed) == (1, 7, 0)
    assert rep.records_added == 6 and rep.duplicates == 1  # one job id ends twice with the same start
    jobs = {j.id: j for j in store.finished_since(0)}
    assert jobs["21010040.lcgbatch01.gridpp.rl.ac.uk"].cores == 8
    assert jobs["21430205.b0"].cores == 4 and jobs["21414868.b0"].cores == 4
    assert jobs["21430205.b0"].cput == 18 * 3600 + 31 * 60 + 56 and jobs["37803854.b0"].cput == 9.0
    assert jobs["21010040.lcgbatch01.gridpp.rl.ac.uk"].nodes == ("lcg0766.gridpp.rl.ac.uk",)


@both
def test_malformed_line_reported_with_file_and_line_and_the_rest_ingested(store, tmp_path):
    f = tmp_path / "20261122"
    f.write_text(lines(2) + "garbage without fields\n" + lines(2, first=10))
    seen: list[str] = []
    rep = store.ingest_accounting([str(tmp_path)], on_problem=seen.append)
    assert rep.records_added == 4 and rep.malformed == 1 and rep.lines == 5
    assert rep.problems == seen and rep.problems[0].startswith(f"{f}:3: expected")
    # line numbers stay right when a later ingestion resumes in the middle of the file
    with open(f, "a") as fh:
        fh.write(lines(1, first=20) + "11/22/2026 10:00:00;E;9.srv;user=u start=900 end=800\n")
    rep = store.ingest_accounting([str(tmp_path)])
    assert rep.records_added == 1 and rep.problems == [f"{f}:7: end (800) before start (900)"]


@both
def test_importing_the_same_file_twice_adds_nothing(store, tmp_path):
    f = tmp_path / "20261122"
    f.write_text(lines(5))
    assert store.ingest_accounting([str(f)]).records_added == 5
    again = store.ingest_accounting([str(f)])
    assert again.records_added == 0 and again.lines == 0  # the position says all is read
    # positions lost (or a copy under another name): the unique key still protects
    with store.engine.begin() as c:
        c.execute(ingest_positions.delete())
    copy = tmp_path / "backup.log"
    copy.write_bytes(f.read_bytes())
    rep = store.ingest_accounting([str(f), str(copy)])
    assert rep.records_added == 0 and rep.duplicates == 10
    assert store.count_finished() == 5


@both
def test_appended_lines_are_picked_up_alone(store, tmp_path):
    f = tmp_path / "20261122"
    f.write_text(lines(5))
    store.ingest_accounting([str(tmp_path)])
    with open(f, "a") as fh:
        fh.write(lines(3, first=100))
    rep = store.ingest_accounting([str(tmp_path)])
    assert (rep.lines, rep.records_added, rep.duplicates) == (3, 3, 0)
    assert store.count_finished() == 8


@both
def test_partial_trailing_line_waits_for_its_newline(store, tmp_path):
    f = tmp_path / "20261122"
    whole = lines(2)
    f.write_text(whole[:-40])  # pbs_server's stdio buffer flushed in the middle of line 2
    rep = store.ingest_accounting([str(f)])
    assert rep.records_added == 1 and rep.malformed == 0
    assert positions(store)[str(f)]["offset"] == len(lines(1))
    assert store.ingest_accounting([str(f)]).lines == 0  # unchanged: nothing read again
    with open(f, "a") as fh:
        fh.write(whole[-40:])
    rep = store.ingest_accounting([str(f)])
    assert rep.records_added == 1 and rep.malformed == 0 and rep.lines == 1
    assert store.count_finished() == 2


@both
def test_midnight_rotation_counts_every_job_once(store, tmp_path):
    day1, day2 = tmp_path / "20261122", tmp_path / "20261123"
    tail = lines(1, first=50)
    day1.write_text(lines(3) + tail[:30])  # 23:59: last record half written
    (tmp_path / "notes.txt").write_text("not an accounting file\n")
    assert store.ingest_accounting(str(tmp_path)).records_added == 3
    with open(day1, "a") as fh:  # at midnight pbs_server closes (flushes) the old file ...
        fh.write(tail[30:])
    day2.write_text(lines(4, first=200, day="11/23/2026"))  # ... and opens the new one
    rep = store.ingest_accounting(str(tmp_path))
    assert rep.records_added == 5 and rep.files == 2 and rep.duplicates == 0
    with open(day2, "a") as fh:
        fh.write(lines(2, first=300, day="11/23/2026"))
    rep = store.ingest_accounting(str(tmp_path))
    assert rep.records_added == 2 and rep.files == 1  # yesterday's file is not read again
    assert store.count_finished() == 3 + 1 + 4 + 2
    assert store.ingest_accounting(str(tmp_path)).records_added == 0


@both
def test_truncated_or_replaced_file_is_reread_without_double_counting(store, tmp_path):
    f = tmp_path / "20261122"
    f.write_text(lines(4))
    store.ingest_accounting([str(f)])
    with open(f, "r+") as fh:  # truncated in place (same inode, now shorter than the offset)
        fh.truncate(0)
        fh.write(lines(2, first=40))
    rep = store.ingest_accounting([str(f)])
    assert rep.records_added == 2 and rep.lines == 2
    f.unlink()  # replaced by a new file that starts like nothing seen (the inode may be reused)
    f.write_text(lines(1, first=70) + lines(4) + lines(2, first=40))
    rep = store.ingest_accounting([str(f)])
    assert rep.records_added == 1 and rep.duplicates == 6
    assert store.count_finished() == 7


@both
def test_exception_mid_ingest_then_reingest_exact(store, tmp_path, monkeypatch):
    f = tmp_path / "20261122"
    f.write_text(lines(1000))
    monkeypatch.setattr(store_mod, "BATCH_LINES", 100)
    real, calls = store_mod.to_finished_job, [0]

    def dies_at_line_250(rec):
        calls[0] += 1
        if calls[0] == 250:
            raise RuntimeError("killed")
        return real(rec)

    monkeypatch.setattr(store_mod, "to_finished_job", dies_at_line_250)
    with pytest.raises(RuntimeError):
        store.ingest_accounting([str(f)])
    assert store.count_finished() == 200  # two whole batches committed, the third not at all
    assert positions(store)[str(f)]["line"] == 200
    monkeypatch.setattr(store_mod, "to_finished_job", real)
    rep = store.ingest_accounting([str(f)])
    assert (rep.lines, rep.records_added, rep.duplicates) == (800, 800, 0)
    assert store.count_finished() == 1000


@both
def test_records_and_their_position_commit_together(store, tmp_path, monkeypatch):
    f = tmp_path / "20261122"
    f.write_text(lines(300))
    monkeypatch.setattr(store_mod, "BATCH_LINES", 100)
    real, calls = store_mod._head, [0]

    def dies_writing_the_second_position(path, limit):
        calls[0] += 1
        if calls[0] == 2:  # batch 2's records are inserted, its position not yet written
            raise RuntimeError("killed")
        return real(path, limit)

    monkeypatch.setattr(store_mod, "_head", dies_writing_the_second_position)
    with pytest.raises(RuntimeError):
        store.ingest_accounting(str(f))
    assert store.count_finished() == 100 and positions(store)[str(f)]["line"] == 100
    monkeypatch.setattr(store_mod, "_head", real)
    rep = store.ingest_accounting(str(f))
    assert (rep.records_added, rep.duplicates) == (200, 0)


@both
def test_sigkill_mid_ingest_then_reingest_exact(db_url, tmp_path):
    """SIGKILL in the middle of a large ingestion: what was committed is whole (records and
    their position together), and re-running reads on from there, adding the rest exactly."""
    f = tmp_path / "20261122"
    n = 20_000
    f.write_text(lines(n))
    s = Store(db_url)
    code = ("import mysched.history.store as m, sys; m.BATCH_LINES = 200; "
            f"m.Store({db_url!r}).ingest_accounting({str(f)!r})")
    p = subprocess.Popen([sys.executable, "-c", code])
    try:
        deadline = time.time() + 60
        while time.time() < deadline and s.count_finished() < 400 and p.poll() is None:
            time.sleep(0.01)
        assert p.poll() is None, "ingestion finished before it could be killed"
    finally:
        p.send_signal(signal.SIGKILL)
        p.wait()
    partial = s.count_finished()
    assert 0 < partial < n
    assert positions(s)[str(f)]["line"] == partial  # the position covers exactly what is stored
    rep = s.ingest_accounting(str(f))
    assert (rep.records_added, rep.duplicates, rep.malformed) == (n - partial, 0, 0)
    assert s.count_finished() == n
    s.close()


@both
def test_concurrent_ingesters_and_a_reader(db_url, tmp_path):
    """The daemon and a `history import` backfill ingest the same logs at once while a
    status command reads: no lock errors, every job once."""
    for day, first in (("20261121", 0), ("20261122", 10_000)):
        (tmp_path / day).write_text(lines(10_000, first=first))
    Store(db_url).close()
    code = ("import mysched.history.store as m; m.BATCH_LINES = 500; "
            f"m.Store({db_url!r}).ingest_accounting({str(tmp_path)!r})")
    procs = [subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.PIPE) for _ in range(2)]
    reader = Store(db_url, create=False)
    reads = 0
    while any(p.poll() is None for p in procs):
        reader.usage_summary(by="user")
        reads += 1
    errors = [p.stderr.read().decode() for p in procs]
    assert [p.returncode for p in procs] == [0, 0], errors
    assert reads > 0 and reader.count_finished() == 20_000
    assert sum(r["jobs"] for r in reader.usage_summary(by="user")) == 20_000
    reader.close()


@both
def test_job_that_never_ran_is_not_malformed(store, tmp_path):
    f = tmp_path / "20261122"
    f.write_text("11/22/2026 10:00:00;E;3.srv;user=u group=g queue=q start=0 end=1795337406 Exit_status=-3\n"
                 "11/22/2026 10:00:00;D;4.srv;requestor=root@localhost\n" + lines(1))
    rep = store.ingest_accounting(str(f))
    assert (rep.records_added, rep.ignored, rep.malformed) == (1, 2, 0)


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
    assert rows["alice"]["wall_hours"] == pytest.approx(2.0) and rows["bob"]["wall_hours"] == 0.0
    by_vo = {r["key"]: r["jobs"] for r in store.usage_summary(by="vo", vo_of={"atlas": "ATLAS"}.get)}
    assert by_vo == {"ATLAS": 1, None: 1, "ops": 1}
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
            path=str(f), inode=f.stat().st_ino, offset=f.stat().st_size, head=store_mod._head(str(f), 10**6),
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
    rep = s.ingest_accounting(str(f))
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


def test_bad_accounting_paths(tmp_path):
    s = Store(f"sqlite:///{tmp_path}/h.db")
    with pytest.raises(InputError, match="no such accounting file or directory"):
        s.ingest_accounting(str(tmp_path / "missing"))
    gz = tmp_path / "20261121.gz"
    gz.write_bytes(gzip.compress(lines(2).encode()))
    rep = s.ingest_accounting(str(gz))
    assert rep.records_added == 0 and "gzip-compressed" in rep.problems[0]
