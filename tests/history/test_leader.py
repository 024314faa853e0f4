"""Leadership locks: one holder at a time, a lost lock records nothing, takeover is bounded."""

from __future__ import annotations

import os
import time

import pytest
from sqlalchemy import create_engine, text

from mysched.history.leader import FileLeadership, LeadershipLost, PgLeadership, leadership_for, read_lock_file
from mysched.history.store import Store

from ..netcut import BlackHole
from .conftest import PG_URL, _with_schema


def _intent(job: str) -> dict:
    return {"job_id": job, "placement": "wn01:ppn=1", "reason": "share"}


def test_file_lock_has_one_holder_and_passes_on_release(tmp_path):
    path = str(tmp_path / "history.db.leader")
    a, b = FileLeadership(path, 4.0), FileLeadership(path, 4.0)
    assert a.acquire() and not b.acquire()
    assert read_lock_file(path)["pid"] == os.getpid()
    a.release()
    assert read_lock_file(path) is None  # nobody holds it: the file alone says nothing
    assert b.acquire() and not a.acquire()


def test_a_replaced_lock_file_ends_leadership_and_fences_intents(tmp_path):
    path = str(tmp_path / "x.leader")
    store = Store(f"sqlite:///{tmp_path}/h.db")
    a = FileLeadership(path, 4.0)
    assert a.acquire()
    a.record_intents(store, [_intent("1.s")], 10.0)
    os.unlink(path)  # someone deleted it: a second daemon could lock a new file
    b = FileLeadership(path, 4.0)
    assert b.acquire()
    with pytest.raises(LeadershipLost):
        a.record_intents(store, [_intent("2.s")], 11.0)
    assert [i["job_id"] for i in store.open_intents()] == ["1.s"]


def test_leadership_for_picks_the_lock_of_the_store(tmp_path):
    s = Store(f"sqlite:///{tmp_path}/h.db")
    lead = leadership_for(s, str(tmp_path / "state"), 4.0)
    assert isinstance(lead, FileLeadership) and lead.path == f"{tmp_path}/h.db.leader"
    lead = leadership_for(None, str(tmp_path / "state"), 4.0)
    assert lead.path == f"{tmp_path}/state/leader.lock"
    assert leadership_for(None, "", 4.0) is None


# -- PostgreSQL ----------------------------------------------------------------------------------
@pytest.fixture
def pg():
    if not PG_URL:
        pytest.skip("MYSCHED_TEST_PG_URL not set (bash .ci/postgres.sh prints one)")
    try:
        store = Store(PG_URL)
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"PostgreSQL not reachable: {exc}")
    with store.engine.begin() as c:
        c.execute(text("DELETE FROM start_intents"))
    yield store
    with store.engine.begin() as c:
        c.execute(text("DELETE FROM start_intents"))
    store.close()


KEY = 0x6D797300 + 77  # not the production key: a daemon of another test run is never disturbed


def test_pg_lock_one_holder_fenced_intents_and_takeover_after_termination(pg):
    a = PgLeadership(PG_URL, 4.0, key=KEY)
    b = PgLeadership(PG_URL, 4.0, key=KEY)
    try:
        assert a.acquire() and not b.acquire()
        assert b.holder()["pid"] == os.getpid()
        a.record_intents(pg, [_intent("1.s"), _intent("2.s")], 10.0)
        assert {i["job_id"] for i in pg.open_intents()} == {"1.s", "2.s"}
        # the server ends a's session (an admin, a crash of its backend): the lock is gone
        eng = create_engine(PG_URL)
        with eng.begin() as c:
            n = c.execute(text("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                               "WHERE application_name LIKE 'mysched %' AND pid IN (SELECT pid FROM pg_locks "
                               "WHERE locktype = 'advisory' AND objid = :k)"), {"k": KEY}).rowcount
        eng.dispose()
        assert n == 1
        # pg_terminate_backend only signals: the lock goes when that backend has exited
        deadline = time.monotonic() + 10
        while not b.acquire() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert b.leader
        with pytest.raises(LeadershipLost):
            a.record_intents(pg, [_intent("3.s")], 11.0)
        assert not a.leader
        assert {i["job_id"] for i in pg.open_intents()} == {"1.s", "2.s"}  # nothing written without the lock
        b.record_intents(pg, [_intent("3.s")], 12.0)
    finally:
        a.release()
        b.release()


def test_pg_histories_in_separate_schemas_have_a_leader_each(pg):
    eng = create_engine(PG_URL)
    with eng.begin() as c:
        for schema in ("lead_x", "lead_y"):
            c.execute(text(f"CREATE SCHEMA IF NOT EXISTS {schema}"))
    leads = [PgLeadership(_with_schema(PG_URL, s), 4.0) for s in ("lead_x", "lead_y", "lead_x")]
    try:
        assert [lead.acquire() for lead in leads] == [True, True, False]
        assert leads[0].key != leads[1].key
        assert leads[2].holder()["pid"] == os.getpid()
    finally:
        for lead in leads:
            lead.release()
        with eng.begin() as c:
            c.execute(text("DROP SCHEMA lead_x, lead_y CASCADE"))
        eng.dispose()


def test_pg_network_cut_takeover_within_bound_and_never_two_leaders(pg):
    from sqlalchemy.engine import make_url

    u = make_url(PG_URL)
    proxy = BlackHole(u.host or "127.0.0.1", u.port or 5432)
    via = u.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False)
    timeout = 2.0
    a = PgLeadership(via, timeout, key=KEY)
    b = PgLeadership(PG_URL, timeout, key=KEY)
    try:
        assert a.acquire()
        time.sleep(1.2)  # heartbeats keep a's idle session alive past its timeout
        assert a.confirm() and not b.acquire()
        proxy.cut.set()
        t_cut = time.monotonic()
        a_claims_until = 0.0
        b_at = None
        while time.monotonic() - t_cut < 10:
            if a.confirm():
                a_claims_until = time.monotonic()
            if b_at is None and b.acquire():
                b_at = time.monotonic()
            if b_at is not None and not a.leader:
                break
            time.sleep(0.05)
        assert b_at is not None, "the standby never took over"
        print(f"takeover after cut: {b_at - t_cut:.2f} s; a claimed until {a_claims_until - t_cut:.2f} s")
        # the bound: the server ends a's session `timeout` after its last query, b tries every
        # timeout/4; the invariant: a stopped claiming leadership before b got it
        assert b_at - t_cut <= timeout + timeout / 4 + 1.5
        assert a_claims_until < b_at
        assert not a.leader and not a.confirm()
        with pytest.raises(LeadershipLost):
            a.record_intents(pg, [_intent("9.s")], 1.0)
        proxy.cut.clear()  # the network returns: a stays out while b leads
        assert not a.acquire()
        assert b.confirm()
    finally:
        proxy.cut.clear()
        a.release()
        b.release()
        proxy.close()
