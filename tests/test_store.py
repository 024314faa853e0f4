"""History store and accounting ingestion, on SQLite and (when available) PostgreSQL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid

import pytest

from mysched.errors import StoreError
from mysched.model import FinishedJob
from mysched.store import SCHEMA_VERSION, Store

from .conftest import TRACES

PG_URL = os.environ.get("MYSCHED_TEST_PG_URL")


def _pg_store() -> Store:
    if not PG_URL:
        pytest.skip("MYSCHED_TEST_PG_URL not set (bash .ci/postgres.sh prints one)")
    try:
        s = Store(PG_URL)
    except StoreError as exc:
        pytest.skip(f"PostgreSQL not reachable: {exc}")
    # a private schema per test keeps tests independent
    schema = "t_" + uuid.uuid4().hex[:10]
    s.close()
    from sqlalchemy import create_engine, text
    eng = create_engine(PG_URL)
    with eng.begin() as c:
        c.execute(text(f"CREATE SCHEMA {schema}"))
    eng.dispose()
    sep = "&" if "?" in PG_URL else "?"
    return Store(f"{PG_URL}{sep}options=-csearch_path%3D{schema}")


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def store(request, tmp_path):
    if request.param == "sqlite":
        s = Store(f"sqlite:///{tmp_path}/history.db")
    else:
        s = _pg_store()
    yield s
    s.close()


LINE = ("{d} 10:00:{s:02d};E;{jid}.srv;user=u{u} group=atlas jobname=j queue=atlas ctime=1 qtime=1 etime=1 "
        "start={start} owner=u@ce exec_host=wn01/0-1 Resource_List.nodes=1:ppn=2 end={end} Exit_status=0 "
        "resources_used.cput=01:00:00 resources_used.walltime=00:10:00\n")


def lines(n: int, first: int = 0, day: str = "11/22/2026") -> str:
    return "".join(LINE.format(d=day, s=i % 60, jid=first + i, u=i % 3, start=1000 + i, end=1600 + i)
                   for i in range(n))


def test_apel_sample_parses_with_cores_and_cput(store, traces):
    rep = store.ingest_accounting([str(traces / "apel-test_pbs-torque-accounting-E-records.log")])
    assert rep.malformed == 0 and rep.lines == 7
    # one job id appears twice with the same start: counted once
    assert rep.records_added == 6 and rep.duplicates == 1
    jobs = {j.id: j for j in store.finished_since(0)}
    assert jobs["21010040.lcgbatch01.gridpp.rl.ac.uk"].cores == 8
    assert jobs["21430205.b0"].cores == 4 and jobs["21414868.b0"].cores == 4
    assert jobs["37803854.b0"].cput == 9.0


def test_malformed_line_is_reported_and_the_rest_ingested(store, tmp_path):
    f = tmp_path / "20261122"
    f.write_text(lines(2) + "garbage without fields\n" + lines(2, first=10))
    rep = store.ingest_accounting([str(f)])
    assert rep.records_added == 4 and rep.malformed == 1
    assert rep.problems[0].startswith(f"{f}:3: ")


def test_reimport_adds_nothing_and_appends_are_picked_up(store, tmp_path):
    f = tmp_path / "20261122"
    f.write_text(lines(5))
    assert store.ingest_accounting([str(tmp_path)]).records_added == 5
    assert store.ingest_accounting([str(tmp_path)]).records_added == 0
    with open(f, "a") as fh:
        fh.write(lines(3, first=100))
    rep = store.ingest_accounting([str(tmp_path)])
    assert rep.records_added == 3 and rep.lines == 3
    assert store.count_finished() == 8


def test_partial_last_line_waits_for_its_newline(store, tmp_path):
    f = tmp_path / "20261122"
    whole = lines(2)
    f.write_text(whole[:-40])
    assert store.ingest_accounting([str(f)]).records_added == 1
    f.write_text(whole)
    assert store.ingest_accounting([str(f)]).records_added == 1
    assert store.count_finished() == 2


def test_midnight_rotation_counts_every_job_once(store, tmp_path):
    (tmp_path / "20261122").write_text(lines(3))
    store.ingest_accounting([str(tmp_path)])
    with open(tmp_path / "20261122", "a") as fh:
        fh.write(lines(2, first=50))
    (tmp_path / "20261123").write_text(lines(4, first=200, day="11/23/2026"))
    rep = store.ingest_accounting([str(tmp_path)])
    assert rep.records_added == 6 and rep.files == 2
    assert store.count_finished() == 9


def test_replaced_file_is_reread_without_double_counting(store, tmp_path):
    f = tmp_path / "20261122"
    f.write_text(lines(4))
    store.ingest_accounting([str(f)])
    f.unlink()
    f.write_text(lines(1, first=70) + lines(4))  # a new file (the inode may be reused)
    rep = store.ingest_accounting([str(f)])
    assert rep.records_added == 1 and rep.duplicates == 4


def test_killed_ingestion_then_restart_counts_exactly(tmp_path):
    """SIGKILL in the middle of a large ingestion: re-running gives exact counts."""
    f = tmp_path / "20261122"
    n = 60000
    f.write_text(lines(n))
    db = f"sqlite:///{tmp_path}/h.db"
    code = ("import sys; from mysched.store import Store; "
            f"Store({db!r}).ingest_accounting([{str(f)!r}])")
    p = subprocess.Popen([sys.executable, "-c", code])
    import time
    s = Store(db)
    deadline = time.time() + 60
    while time.time() < deadline and s.count_finished() == 0:
        time.sleep(0.05)
    p.send_signal(signal.SIGKILL)
    p.wait()
    partial = s.count_finished()
    assert 0 < partial <= n
    s.ingest_accounting([str(f)])
    assert s.count_finished() == n


def test_cycles_and_state_round_trip(store):
    cid = store.record_cycle(time=5.0, duration=0.2, result="ok", n_started=1, n_failed=0, n_queued=3,
                             n_running=7, summary={"plan_s": 0.1},
                             starts=[{"job_id": "1.s", "placement": "wn01:ppn=1", "reason": "share", "result": "ok"}])
    last = store.recent_cycles(1)[0]
    assert last["id"] == cid and last["summary"] == {"plan_s": 0.1}
    assert store.starts_of("1.s")[0]["reason"] == "share"
    store.set_state("k", {"a": 1})
    store.set_state("k", {"a": 2})
    assert store.get_state("k") == {"a": 2}


def test_usage_summary_clips_to_the_interval(store):
    store.add_finished([FinishedJob("1", "alice", "atlas", "q", 0.0, 7200.0, 2, cput=3600.0),
                        FinishedJob("2", "bob", "cms", "q", 3600.0, 10800.0, 1)])
    rows = {r["key"]: r for r in store.usage_summary(since=3600.0, by="group")}
    assert rows["atlas"]["wall_hours"] == pytest.approx(2.0)  # 1 h x 2 cores inside the window
    assert rows["atlas"]["cpu_hours"] == pytest.approx(0.5)
    assert rows["cms"]["wall_hours"] == pytest.approx(2.0)
    by_vo = store.usage_summary(by="vo", vo_of={"atlas": "ATLAS"}.get)
    assert {r["key"] for r in by_vo} == {"ATLAS", None}


def test_schema_migrates_from_version_1_and_refuses_newer(tmp_path):
    from sqlalchemy import create_engine, text
    url = f"sqlite:///{tmp_path}/old.db"
    from mysched.store import metadata
    eng = create_engine(url)
    with eng.begin() as c:
        metadata.create_all(c)
        c.execute(text("INSERT INTO schema_version (version) VALUES (1)"))
    eng.dispose()
    s = Store(url)
    assert s.version() == SCHEMA_VERSION
    with s.engine.begin() as c:
        c.execute(text("UPDATE schema_version SET version = 99"))
    with pytest.raises(StoreError, match="newer than this mysched understands"):
        Store(url)


def test_unreachable_database_is_a_clear_error_with_masked_password():
    with pytest.raises(StoreError) as exc:
        Store("postgresql+psycopg2://mysched:secret@127.0.0.1:1/mysched")
    msg = str(exc.value)
    assert "secret" not in msg and "***" in msg and "127.0.0.1" in msg
