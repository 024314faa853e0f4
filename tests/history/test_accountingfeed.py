"""The daemon's accounting feed: the recent days fair share reads are ingested every cycle
at once, older days a time slice per cycle, newest first, until none is left -- a first start
on years of logs no longer holds up the first cycle for minutes, and no file is skipped."""

from __future__ import annotations

import os
import time

from sqlalchemy import func, select

from mysched.history.accountingfeed import DAY, AccountingFeed
from mysched.history.store import finished_jobs

from .helpers import both, lines, with_starts

NOW = time.mktime((2026, 11, 25, 12, 0, 0, 0, 0, -1))


def _day(t: float) -> str:
    return time.strftime("%Y%m%d", time.localtime(t))


def _logs(tmp_path, days: int) -> list[str]:
    """One file a day for `days` days up to today, 3 jobs each (ids by day)."""
    names = []
    for k in range(days):
        t = NOW - k * DAY
        name = _day(t)
        (tmp_path / name).write_text(with_starts(lines(3, first=100 * k, day=time.strftime("%m/%d/%Y", time.localtime(t)))))
        names.append(name)
    return names


def _count(store) -> int:
    with store.engine.connect() as c:
        return c.execute(select(func.count()).select_from(finished_jobs)).scalar_one()


class Clock:
    """Each reading moves on `step` seconds: the feed's slice holds `budget / step` files."""

    def __init__(self, step: float) -> None:
        self.t, self.step = 0.0, step

    def __call__(self) -> float:
        self.t += self.step
        return self.t


@both
def test_recent_days_at_once_older_ones_a_slice_a_cycle_newest_first(store, tmp_path):
    _logs(tmp_path, 40)  # a 2-day window: today and the 4 days before are recent (with the margin)
    feed = AccountingFeed(store, str(tmp_path), 2 * DAY, budget=3.0, clock=Clock(1.0), wall=lambda: NOW)
    assert feed() == 5 * 3 + 3 * 3  # the recent files, then 3 older ones within the slice
    with store.engine.connect() as c:
        ids = {r[0] for r in c.execute(select(finished_jobs.c.job_id))}
    assert {"500.srv", "600.srv", "700.srv"} <= ids and "800.srv" not in ids  # the newest older days first
    cycles = 1
    while _count(store) < 40 * 3:
        feed()
        cycles += 1
        assert cycles < 20
    assert cycles == 1 + -(-(35 - 3) // 3)  # then 3 older files a cycle until none is left
    assert feed() == 0  # nothing left: every file is read once


@both
def test_an_older_file_that_changes_is_read_again(store, tmp_path):
    names = _logs(tmp_path, 8)
    feed = AccountingFeed(store, str(tmp_path), 2 * DAY, budget=100.0, wall=lambda: NOW)
    assert feed() == 8 * 3
    old = tmp_path / names[-1]
    old.write_text(old.read_text() + with_starts(lines(2, first=9000)))
    assert feed() == 2


@both
def test_a_cut_last_line_of_an_old_day_is_read_as_it_stands(store, tmp_path):
    names = _logs(tmp_path, 8)
    old = tmp_path / names[-1]
    old.write_text(old.read_text() + with_starts(lines(1, first=9000)).rstrip("\n"))  # the server died before its newline
    os.utime(old, (time.time() - 7 * DAY, time.time() - 7 * DAY))
    feed = AccountingFeed(store, str(tmp_path), 2 * DAY, budget=100.0, wall=lambda: NOW)
    assert feed() == 8 * 3 + 1


@both
def test_an_unreadable_older_file_is_said_and_the_rest_of_the_backlog_goes_on(store, tmp_path, monkeypatch):
    # A restored day file of root's, mode 0600, with the daemon running as an operator: it
    # raised out of the feed every cycle, and no day older than it was ever read.
    import errno

    import mysched.history.ingest as ingest_mod

    names = _logs(tmp_path, 12)
    bad = os.path.realpath(tmp_path / names[7])
    real = ingest_mod.compression

    def compression(path):
        if path == bad:
            raise PermissionError(errno.EACCES, "Permission denied")
        return real(path)
    monkeypatch.setattr(ingest_mod, "compression", compression)
    said: list[str] = []
    feed = AccountingFeed(store, str(tmp_path), 2 * DAY, budget=100.0, wall=lambda: NOW, on_problem=said.append)
    assert feed() == 11 * 3 and _count(store) == 33
    assert sum(names[7] in s and "tried again when the file changes" in s for s in said) == 1
    assert feed() == 0 and len(said) == 1  # said once, not every cycle


@both
def test_a_last_line_still_waiting_is_read_once_it_has_waited(store, tmp_path, monkeypatch):
    # An old day copied in a minute ago whose last record lacks its newline: left for later,
    # and then never looked at again by that daemon (its stat was taken as read).
    import mysched.history.ingest as ingest_mod

    names = _logs(tmp_path, 8)
    old = tmp_path / names[-1]
    old.write_text(old.read_text() + with_starts(lines(1, first=9000)).rstrip("\n"))
    os.utime(old, (time.time() - 60, time.time() - 60))
    feed = AccountingFeed(store, str(tmp_path), 2 * DAY, budget=100.0, wall=lambda: NOW)
    assert feed() == 8 * 3

    class Later:  # the clock 11 minutes on: the file has not changed for 10 minutes
        def __getattr__(self, k):
            return getattr(time, k)

        def time(self):
            return time.time() + 660
    monkeypatch.setattr(ingest_mod, "time", Later())
    assert feed() == 1
