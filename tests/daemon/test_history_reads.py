"""A history store that cannot be read when the daemon reads its whole window (at start, after
a reload, after a takeover): scheduling goes on, and the window's usage comes back with the
store instead of being lost for the daemon's lifetime."""

from __future__ import annotations

from mysched.core.model import FinishedJob
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
