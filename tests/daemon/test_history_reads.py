"""A history store that cannot be read when the daemon reads its whole window (at start, after
a reload, after a takeover): scheduling goes on, and the window's usage comes back with the
store instead of being lost for the daemon's lifetime."""

from __future__ import annotations

from mysched.core.model.batch import FinishedJob
from mysched.errors import StoreError
from mysched.history.store import Store

from .test_daemon import CFG, make


def test_an_unreadable_store_at_a_reload_does_not_lose_the_windows_usage(tmp_path):
    store = Store(f"sqlite:///{tmp_path}/h.db")
    # atlas ran 10 cores for an hour, ending just before the farm's clock (200 s)
    store.add_finished([FinishedJob(f"h{i}.s", "old", "atlas", "q", -3400.0, 199.0, 1) for i in range(10)])
    (tmp_path / "m.cfg").write_text(CFG)
    d, server, farm = make(n_jobs=2, store=store, config_path=str(tmp_path / "m.cfg"))
    assert d.cycle().result == "ok"
    now = d._last_history
    atlas = d.ledger.usage(now).vo["atlas"]
    assert atlas > 0
    real = store.finished_since
    broken = {"on": True}

    def finished_since(t):
        if broken["on"]:
            raise StoreError("history database h.db: cannot read finished jobs: database is locked")
        return real(t)
    store.finished_since = finished_since
    assert d.reload()
    first = d.cycle()
    error = d.history_error
    second = d.cycle()
    broken["on"] = False
    third = d.cycle()
    assert d.ledger.usage(now).vo.get("atlas", 0.0) == atlas  # the window's usage is back, once
    assert [first.result, second.result, third.result] == ["ok"] * 3  # scheduling went on ...
    assert "database is locked" in error and d.history_error == ""  # ... flagged while it could not read
    d.cycle()
    assert d.ledger.usage(now).vo.get("atlas", 0.0) == atlas


def test_records_imported_into_the_middle_of_the_window_count_within_the_hour(tmp_path):
    # `mysched history import` of older logs while the daemon runs: their jobs end well before
    # the last read, which the cycles in between do not look behind. They counted only after a
    # restart; the window is now read whole every hour. (The farm's clock: advance(T) goes to T.)
    store = Store(f"sqlite:///{tmp_path}/h.db")
    d, server, farm = make(n_jobs=2, store=store)
    assert d.cycle().result == "ok"  # at 200 s: the window is read
    farm.advance(1000.0)
    d.cycle()
    store.add_finished([FinishedJob(f"b{i}.s", "old", "atlas", "q", -3400.0, 150.0, 1) for i in range(10)])
    farm.advance(2000.0)
    d.cycle()  # looks back to 1000 s less a 600-s margin: not to 150 s
    assert d.ledger.usage(farm.now).vo.get("atlas", 0.0) == 0.0
    farm.advance(3800.0)
    d.cycle()  # an hour after the last whole read
    once = d.ledger.usage(farm.now).vo.get("atlas", 0.0)
    assert once > 30000.0  # 10 core-hours, decayed a little
    farm.advance(7400.0)
    d.cycle()
    d.cycle()
    farm.advance(7401.0)
    d.cycle()
    assert abs(d.ledger.usage(farm.now).vo["atlas"] - once * 2 ** (-(7401.0 - 3800.0) / 86400.0)) < once * 1e-6
