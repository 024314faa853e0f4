"""The history store stays bounded: the cycle log and (if asked) finished jobs older than
their keep are deleted -- by the leading daemon between cycles, or by `history prune`."""

from __future__ import annotations

import math

import pytest
from sqlalchemy import text

from mysched.cli.main import main
from mysched.config import config_from_text
from mysched.core.model.batch import FinishedJob
from mysched.errors import ConfigError
from mysched.history.retention import EVERY, Pruner, prune
from mysched.history.store import Store

from .helpers import both

DAY = 86400.0
NOW = 1_000 * DAY


def count(store: Store, table: str) -> int:
    with store.engine.connect() as c:
        return c.execute(text(f"SELECT count(*) FROM {table}")).scalar_one()


def fill(store: Store, ages_days: list[float]) -> None:
    """A cycle with one start, and a finished job ending then, at each age."""
    for i, age in enumerate(ages_days):
        t = NOW - age * DAY
        store.record_cycle(time=t, duration=0.1, result="ok", n_started=1, n_failed=0, n_queued=0, n_running=1,
                           starts=[{"job_id": f"{i}.s", "placement": "wn01:ppn=1", "reason": "share", "result": "ok"}])
        store.add_finished([FinishedJob(f"{i}.s", "u", "atlas", "q", t - 3600, t, 1)])


@both
def test_old_cycles_their_starts_and_old_jobs_go_recent_ones_stay(store):
    fill(store, [400, 100, 31, 29, 1])
    got = prune(store, NOW, 30 * DAY, 365 * DAY)
    assert (got.cycles, got.starts, got.jobs, got.more) == (3, 3, 1, False)
    assert sorted(c["time"] for c in store.recent_cycles(10)) == [NOW - 29 * DAY, NOW - DAY]
    assert store.starts_of("0.s") == [] and len(store.starts_of("3.s")) == 1
    assert count(store, "finished_jobs") == 4  # only the job that ended 400 days ago is gone
    assert not prune(store, NOW, 30 * DAY, 365 * DAY)  # nothing left to do


@both
def test_inf_keeps_everything(store):
    fill(store, [4000, 400])
    assert not prune(store, NOW, math.inf, math.inf)
    assert count(store, "cycles") == 2 and count(store, "finished_jobs") == 2


def test_a_large_backlog_is_pruned_in_batches_across_cycles(tmp_path):
    """A store years old must not stall scheduling: each call deletes at most a batch and
    the pruner comes back at the next cycle until it is done, then waits an hour."""
    store = Store(f"sqlite:///{tmp_path}/h.db")
    fill(store, [100 + i for i in range(5)] + [1])
    got = prune(store, NOW, 30 * DAY, math.inf, batch=2)
    assert (got.cycles, got.more) == (2, True)
    p = Pruner(batch=2)
    assert p.maybe(store, NOW, 30 * DAY, math.inf).more  # 2 more gone, still 1 to do
    assert p.maybe(store, NOW + 60, 30 * DAY, math.inf).cycles == 1  # due again at once
    assert p.maybe(store, NOW + 120, 30 * DAY, math.inf) is None  # done: next in an hour
    assert p.maybe(store, NOW + 60 + EVERY, 30 * DAY, math.inf) is not None
    assert count(store, "cycles") == 1 and count(store, "starts") == 1


def test_keeps_are_checked_at_load():
    cfg = config_from_text('history = { keep_cycles = "7d"; keep_jobs = "400d"; };')
    assert (cfg.keep_cycles, cfg.keep_jobs) == (7 * DAY, 400 * DAY)
    defaults = config_from_text('history = { window = "2d"; };')
    assert (defaults.keep_cycles, defaults.keep_jobs) == (30 * DAY, math.inf)
    with pytest.raises(ConfigError, match="keep_jobs: must be at least history.window"):
        config_from_text('history = { window = "2d"; keep_jobs = "1d"; };')
    with pytest.raises(ConfigError, match="keep_cycles: must be at least an hour"):
        config_from_text("history = { keep_cycles = 0; };")


def test_history_prune_command(tmp_path, capsys):
    url = f"sqlite:///{tmp_path}/h.db"
    store = Store(url)
    fill(store, [3, 1])
    site = tmp_path / "site.cfg"
    site.write_text('history = { window = "14d"; keep_cycles = "inf"; };\n')
    # without the site's configuration, the built-in keeps and window would decide what goes
    for argv in ([], ["--keep-jobs", "30d"], ["--keep-cycles", "1d", "--keep-jobs", "30d"]):
        assert main(["history", "prune", "--db", url, *argv]) == 2
        assert "give -c FILE" in capsys.readouterr().err
    assert main(["history", "prune", "--db", url, "-c", str(site), "--keep-jobs", "3d"]) == 2
    assert "--keep-jobs must be at least history.window (14 d)" in capsys.readouterr().err
    assert main(["history", "prune", "--db", url, "-c", str(site)]) == 0  # the site keeps its cycle log
    assert "deleted 0 cycle(s)" in capsys.readouterr().out
    store.record_cycle(time=0.0, duration=0.1, result="ok", n_started=0, n_failed=0, n_queued=0, n_running=0)
    assert main(["history", "prune", "--db", url, "--keep-cycles", "1d"]) == 0
    out = capsys.readouterr().out
    assert "deleted 3 cycle(s) with 2 start record(s) (kept 1 d) and 0 finished job(s) (kept for ever)" in out
    assert count(store, "finished_jobs") == 2


def test_history_prune_creates_no_database_where_there_is_none(tmp_path, capsys):
    missing = tmp_path / "typo.db"
    assert main(["history", "prune", "--db", f"sqlite:///{missing}", "--keep-cycles", "30d"]) == 2
    assert "no history database" in capsys.readouterr().err and not missing.exists()


def test_a_bug_in_pruning_does_not_stop_the_cycles(tmp_path, monkeypatch, caplog):
    """The daemon outlives its own bugs: a prune that raises is logged, and cycles go on."""
    import threading

    import mysched.history.retention as retention
    from mysched.daemon.service import Service

    from ..daemon.test_daemon import CFG, make

    def broken(*a, **kw):
        raise RuntimeError("bug in pruning")

    monkeypatch.setattr(retention, "prune", broken)
    store = Store(f"sqlite:///{tmp_path}/h.db")
    d, server, _farm = make(cfg_text=CFG + '\nhistory = { keep_cycles = "30d"; };\n', store=store,
                            tmp_path=tmp_path / "s")
    server.speed = 1000.0  # intervals in milliseconds
    svc = Service(d)
    caplog.set_level("ERROR", logger="mysched")
    t = threading.Thread(target=svc.run, daemon=True)
    t.start()
    try:
        for _ in range(200):
            if svc.cycles >= 3:
                break
            threading.Event().wait(0.05)
    finally:
        svc.stop()
        t.join(10)
    assert svc.cycles >= 3
    assert any("pruning failed" in r.getMessage() for r in caplog.records)
