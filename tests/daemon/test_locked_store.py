"""The daemon beside a process that holds the SQLite history store's write lock (`mysched
history import` or `prune`, a backup, a sqlite3 shell with a transaction open): its cycles do
not wait for it, say so once per outage, count it, and lose nothing -- what they could not
write is written when the lock goes."""

from __future__ import annotations

import pytest

from mysched.daemon import backlog
from mysched.daemon.cycle import Daemon
from mysched.daemon.metrics import Metrics
from mysched.daemon.statusfile import read_status
from mysched.history.store import Store

from ..history.test_store_lock import held
from .test_daemon import Killed, _finished, make


def _sample(m: Metrics, name: str, **labels) -> float:
    return m.registry.get_sample_value(name, labels)


def test_cycles_under_a_locked_store_do_not_wait_and_lose_nothing(tmp_path, caplog):
    store = Store(f"sqlite:///{tmp_path}/h.db")
    metrics = Metrics()
    d, server, farm = make(n_jobs=12, slots=2, tmp_path=tmp_path / "state", store=store, metrics=metrics)
    feed = iter([[_finished(i)] for i in range(1, 6)])
    server.pop_finished = lambda: next(feed, [])
    assert store.lock_wait <= backlog.LOCK_WAIT  # not the 30 s a command waits
    caplog.set_level("INFO", logger="mysched")
    assert d.cycle().started == 4
    with held(tmp_path / "h.db"):
        outs = []
        for k in range(3):
            farm.advance(farm.now + 2e6)  # the running jobs end: the cycle starts others
            outs.append(d.cycle())
            # after the first write found it locked, each cycle tries once, briefly
            assert store.lock_wait == 0.0
        assert [o.result for o in outs] == ["ok"] * 3 and [o.started for o in outs] == [4, 4, 0]
        cyc = read_status(str(tmp_path / "state"))["cycle"]
        assert not cyc["history_ok"] and "database is locked" in cyc["history_error"]
        assert (cyc["history_pending"], cyc["history_pending_cycles"]) == (3, 3)
        assert _sample(metrics, "mysched_history_pending_records", kind="cycles") == 3
    errors = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert len(errors) == 1 and "another process holds its lock" in errors[0]  # once per outage
    assert _sample(metrics, "mysched_history_lock_outages_total") == 1
    assert _sample(metrics, "mysched_history_write_errors_total") >= 3  # each failed write counted
    farm.advance(farm.now + 2e6)
    d.cycle()
    # the lock went: everything that waited is written, in order, and no intent is left open
    assert store.count_finished() == 5
    cycles = store.recent_cycles(10)
    assert len(cycles) == 5 and [c["time"] for c in cycles] == sorted((c["time"] for c in cycles), reverse=True)
    assert all(len(store.starts_of(j)) == 1 for j in server.run_calls) and store.open_intents() == []
    assert len(server.run_calls) == len(set(server.run_calls))  # none started twice
    assert sum("lock free after" in r.getMessage() and "writing again" in r.getMessage()
               for r in caplog.records) == 1
    assert _sample(metrics, "mysched_history_pending_records", kind="cycles") == 0
    assert store.lock_wait == backlog.LOCK_WAIT
    assert "Traceback" not in caplog.text


def test_what_still_waits_at_exit_is_written_when_the_lock_went(tmp_path, caplog, monkeypatch):
    store = Store(f"sqlite:///{tmp_path}/h.db")
    d, server, farm = make(n_jobs=4, store=store)
    with held(tmp_path / "h.db"):
        assert d.cycle().started == 4
        assert store.recent_cycles() == []
    d.backlog.close()  # the service does this when it stops (and after --once)
    assert [c["n_started"] for c in store.recent_cycles()] == [4]
    caplog.set_level("ERROR", logger="mysched")
    with held(tmp_path / "h.db"):
        d.cycle()
        monkeypatch.setattr(backlog, "EXIT_WAIT", 0.0)
        d.backlog.close()
    assert "1 cycle record(s) not written at exit" in caplog.records[-1].getMessage()


def test_a_restart_under_a_lock_settles_the_open_intents_once(tmp_path, caplog):
    """A daemon killed between runjob and its record; the next one starts while the store is
    locked: it settles the intents against pbs_server once, not at every cycle, and writes
    the outcome when the lock goes."""
    url = f"sqlite:///{tmp_path}/h.db"
    d, server, farm = make(n_jobs=6, slots=2, store=Store(url))
    real_run = server.run_job

    def run_then_die(job_id, placement):
        real_run(job_id, placement)
        if len(server.run_calls) == 2:
            raise Killed
    server.run_job = run_then_die
    with pytest.raises(Killed):
        d.cycle()
    server.run_job = real_run
    store = Store(url)
    caplog.set_level("WARNING", logger="mysched")
    with held(tmp_path / "h.db"):
        d2 = Daemon(d.config, server, store=store, state_dir="", wall=lambda: 1000.0)
        assert [d2.cycle().result for _ in range(3)] == ["ok"] * 3
    assert sum("planned before the daemon stopped" in r.getMessage() for r in caplog.records) == 4
    d2.cycle()
    assert store.open_intents() == []
    assert [c["result"] for c in store.recent_cycles(10)].count("recovered") == 1
    assert len(server.run_calls) == len(set(server.run_calls)) == 4  # the two that ran, not again
