"""Accounting records and history rows no sound farm produces: each is skipped with a located
warning (or refused with a one-line error naming the database), the good ones around it are
kept, and nothing in the database can crash a scheduling cycle."""

from __future__ import annotations

import logging
import math
import sqlite3
import time

import pytest

from mysched.core.model.batch import FinishedJob
from mysched.core.share.usage import UsageLedger, decayed, usage_from_records
from mysched.errors import StoreError
from mysched.history import ingest as ingest_mod
from mysched.history.ingest import ingest_accounting
from mysched.history.store import Store

from tests.history.helpers import lines

E = "11/22/2026 10:00:00;E;{id}.s;user=u group=atlas queue=atlas start={start} end={end}{more}\n"
STAMP = 1795341600  # 11/22/2026 10:00:00 UTC; the stamp is read in local time, a day is allowed
GOOD = dict(start=1795337000, end=1795337600, more="")


def e(jid: int, **kw) -> str:
    return E.format(id=jid, **{**GOOD, **kw})


def test_records_years_after_their_time_stamp_are_skipped_with_their_line(tmp_path):
    f = tmp_path / "20261122"
    f.write_text(e(1) + e(2, start=2000000000, end=2000000600) + e(3, start=1795600000, end=1795600600) + e(4))
    said: list[str] = []
    s = Store(f"sqlite:///{tmp_path}/h.db")
    rep = ingest_accounting(s, [str(f)], on_problem=said.append, trust_all=True)
    assert (rep.records_added, rep.malformed) == (2, 2)
    assert [m.split(": ")[0] for m in said] == [f"{f}:2", f"{f}:3"]
    assert all("days after the line's time stamp" in m for m in said)


@pytest.mark.parametrize("more, what", [
    (" total_execution_slots=99999999999", "total_execution_slots"),
    (" total_execution_slots=999999999999999999999999", "total_execution_slots"),
    (" exec_host=wn1/0-99999999", "exec_host"),
    (" Resource_List.nodes=99999999999:ppn=99999", "Resource_List.nodes"),
    (" queue=" + "q" * 300, "queue"),
])
def test_absurd_core_counts_and_names_are_skipped_and_the_good_lines_kept(tmp_path, more, what):
    f = tmp_path / "20261122"
    f.write_text(e(1) + e(2, more=more) + e(3))
    said: list[str] = []
    s = Store(f"sqlite:///{tmp_path}/h.db")
    rep = ingest_accounting(s, [str(f)], on_problem=said.append, trust_all=True)
    assert (rep.records_added, rep.malformed) == (2, 1) and s.count_finished() == 2
    assert len(said) == 1 and said[0].startswith(f"{f}:2: {what}")
    assert s.usage_summary()[0]["wall_hours"] == pytest.approx(2 * 600 / 3600)


def test_an_exit_status_beyond_any_int_is_dropped_and_the_record_kept(tmp_path):
    f = tmp_path / "20261122"
    f.write_text(e(1, more=" Exit_status=99999999999999999999") + e(2))
    said: list[str] = []
    s = Store(f"sqlite:///{tmp_path}/h.db")
    rep = ingest_accounting(s, [str(f)], on_problem=said.append, trust_all=True)
    assert (rep.records_added, rep.repaired, rep.malformed) == (2, 1, 0)
    assert said == [f"{f}:1: garbled Exit_status='99999999999999999999' ignored; the wall-clock record is kept"]
    assert [j.exit_status for j in s.finished_since(0)] == [None, None]


def test_a_line_that_breaks_the_reader_is_skipped_located_and_said_to_be_a_bug(tmp_path, monkeypatch):
    f = tmp_path / "20261122"
    f.write_text(lines(3))
    real = ingest_mod.to_finished_job

    def breaks_on_job_1(rec, dropped=None):
        if rec.job_id == "1.srv":
            raise OverflowError("int too large")
        return real(rec, dropped)

    monkeypatch.setattr(ingest_mod, "to_finished_job", breaks_on_job_1)
    said: list[str] = []
    s = Store(f"sqlite:///{tmp_path}/h.db")
    rep = ingest_accounting(s, [str(f)], on_problem=said.append, trust_all=True)
    assert (rep.records_added, rep.malformed) == (2, 1)
    assert said == [f"{f}:2: skipped: unexpected OverflowError: int too large (a mysched bug: please report this line)"]


# -- what is in the database already -----------------------------------------------------------

def test_usage_ignores_a_record_ending_years_ahead_and_never_overflows():
    now, day = 1795300000.0, 86400.0
    sound = FinishedJob("1.s", "u", "atlas", "q", now - 3600, now - 600, 8)
    ahead = FinishedJob("2.s", "v", "lhcb", "q", 2e9, 2e9 + 600, 1)
    led = UsageLedger(2 * day, day)
    for r in (sound, ahead):
        led.add_job(r)
    got = led.usage(now)
    want = usage_from_records([sound], now, 2 * day, day, vo_of=str)
    assert got.vo == pytest.approx(want.vo) and "lhcb" not in got.vo
    assert led.usage(now + 60).vo["atlas"] < got.vo["atlas"]  # and it decays on as before
    assert math.isfinite(decayed(now, 2e9, now, 60.0))


def _daemon_store(tmp_path, records):
    from mysched.backends.sim.server import sim_server_from_url
    from mysched.cli.common import config_or_default
    from mysched.daemon.cycle import Daemon

    store = Store(f"sqlite:///{tmp_path}/h.db")
    store.add_finished(records, source="accounting")
    cfg = config_or_default(None)
    return Daemon(cfg, sim_server_from_url("sim://?nodes=2", cfg), store=store, dry_run=True,
                  state_dir=str(tmp_path / "s")), store


def test_a_cycle_survives_a_stored_record_ending_years_ahead(tmp_path):
    now = time.time()
    sound = FinishedJob("1.s", "u", "atlas", "q", now - 3600, now - 600, 8)
    d, _ = _daemon_store(tmp_path, [sound, FinishedJob("2.s", "v", "lhcb", "q", 2e9, 2e9 + 600, 1)])
    assert d.cycle().result != "crash"
    assert d.cycle().result != "crash"
    usage = d.ledger.usage(time.time())
    assert "lhcb" not in usage.vo and usage.vo["atlas"] > 0


def test_a_cycle_survives_an_ingestion_bug_and_logs_it(tmp_path, caplog):
    d, _ = _daemon_store(tmp_path, [])

    def buggy() -> int:
        raise OverflowError("Python int too large to convert to SQLite INTEGER")

    d.ingest = buggy
    caplog.set_level(logging.ERROR, logger="mysched")
    d.cycle()
    assert "accounting ingestion: unexpected OverflowError" in d.history_error
    assert any(r.exc_info for r in caplog.records)  # the bug's traceback is in the log, once
    d.cycle()
    assert sum(1 for r in caplog.records if r.exc_info) == 1


def _damage(path, sql):
    c = sqlite3.connect(path)
    c.execute(sql)
    c.commit()
    c.close()


def test_a_schema_version_that_is_no_number_is_a_one_line_error(tmp_path):
    db = tmp_path / "h.db"
    Store(f"sqlite:///{db}").close()
    _damage(db, "UPDATE schema_version SET version = 'abc'")
    for create in (True, False):
        with pytest.raises(StoreError, match=r"h\.db: schema_version holds 'abc', not a version number"):
            Store(f"sqlite:///{db}", create=create)


def test_a_damaged_finished_job_row_is_named_by_usage_and_left_out_by_the_daemon(tmp_path, caplog):
    now = time.time()
    d, store = _daemon_store(tmp_path, [FinishedJob("1.s", "u", "atlas", "q", now - 3600, now - 600, 8),
                                        FinishedJob("2.s", "u", "cms", "q", now - 3600, now - 600, 8)])
    _damage(tmp_path / "h.db", "UPDATE finished_jobs SET start = 'xyz' WHERE job_id = '2.s'")
    with pytest.raises(StoreError, match=r"h\.db: finished_jobs row 2 \(job 2\.s\): start='xyz' is not a number"):
        store.usage_summary()
    caplog.set_level(logging.WARNING, logger="mysched")
    assert d.cycle().result != "crash"
    assert "cms" not in d.ledger.usage(time.time()).vo
    assert [r.getMessage() for r in caplog.records if "xyz" in r.getMessage()] == [
        f"history database sqlite:///{tmp_path}/h.db: finished_jobs row 2 (job 2.s): start='xyz' is not a number: "
        "left out of the usage"]


def test_a_driver_warning_at_connect_is_logged_not_fatal(tmp_path, monkeypatch, caplog):
    import warnings

    from sqlalchemy.exc import SAWarning

    import mysched.history.store as store_mod

    real = store_mod.create_engine

    def warning_engine(*a, **kw):
        warnings.warn("the driver's option X is deprecated", SAWarning)
        return real(*a, **kw)

    monkeypatch.setattr(store_mod, "create_engine", warning_engine)
    s = store_mod.Store(f"sqlite:///{tmp_path}/h.db")  # starts: a deprecation is no reason to stop a farm
    assert s.dialect == "sqlite" and "option X is deprecated" in caplog.text
