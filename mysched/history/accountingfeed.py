"""The daemon's accounting feed: each cycle the days fair share reads at once, older days a
slice at a time, newest first.

A daemon started for the first time on a server with years of accounting files would read
them all in its first cycle -- a year of a 10,000-slot farm takes about six minutes, which no
scheduling and no systemd watchdog waits for. Fair share needs only the files of
`history.window` (and a day or two on either side: a file is named for the local day its
records were written); the older ones matter only to `mysched usage` reports. So they are
read a time slice per cycle, newest first, until none is left; nothing is skipped.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Callable

from mysched.history.ingest import FINISHED_AFTER, accounting_files, ingest_accounting
from mysched.errors import InputError
from mysched.history.store import Store

log = logging.getLogger("mysched.history")

DAY = 86400.0


class AccountingFeed:
    """A callable for `mysched.daemon.cycle.Daemon(ingest=...)`: records added this cycle."""

    def __init__(self, store: Store, directory: str, window: float, *, budget: float = 5.0,
                 on_problem: Callable[[str], None] | None = None, clock: Callable[[], float] = time.monotonic,
                 wall: Callable[[], float] = time.time) -> None:
        self.store, self.directory, self.window, self.budget = store, directory, window, budget
        self.on_problem = on_problem
        self.on_suspicious: Callable[[int], None] | None = None
        """Hears how many suspicious `E` records each cycle's reading found (the daemon's metric)."""
        self.suspicious = 0
        """Suspicious `E` records this feed found: charged to no one, each reported with its FILE:LINE."""
        self.clock, self.wall = clock, wall
        self._done: dict[str, tuple[int, int, float]] = {}
        """Older files read to their end -> (inode, size, mtime) then: read again only if changed."""
        self._backlog: int | None = None

    def __call__(self) -> int:
        files, _ = accounting_files([self.directory], False)
        cutoff = time.strftime("%Y%m%d", time.localtime(self.wall() - self.window - 2 * DAY))
        recent = [f for f in files if os.path.basename(f) >= cutoff]
        older = [f for f in files if os.path.basename(f) < cutoff and self._done.get(f) != _stat(f)]
        found = 0
        added = 0
        if recent:
            rep = ingest_accounting(self.store, recent, on_problem=self.on_problem)
            added, found = rep.records_added, rep.suspicious
        t0 = self.clock()
        left = len(older)
        for path in reversed(older):  # newest first: the days a report most likely asks for
            if left < len(older) and self.clock() - t0 >= self.budget:
                break
            key = _stat(path)
            left -= 1
            try:
                # days old: a last line without its newline is a record as it stands (or one cut short)
                rep = ingest_accounting(self.store, [path], on_problem=self.on_problem, finished_after=FINISHED_AFTER)
            except InputError as exc:  # unreadable (a restored file of root's, mode 0600): the others go on
                if self.on_problem is not None:
                    self.on_problem(f"{exc} (tried again when the file changes)")
                self._done[path] = key
                continue
            added += rep.records_added
            found += rep.suspicious
            if not rep.waiting:  # a last line still being written is looked at again next cycle
                self._done[path] = key
        self._report(left, len(older))
        self.suspicious += found
        if found and self.on_suspicious is not None:
            self.on_suspicious(found)
        return added

    def _report(self, left: int, had: int) -> None:
        if left and self._backlog is None:
            log.info("accounting backlog: %d day file(s) older than the history window are read %.0f s a cycle, "
                     "newest first (fair share needs only the recent ones, read every cycle)", had, self.budget)
        elif not left and self._backlog:
            log.info("accounting backlog read")
        self._backlog = left


def _stat(path: str) -> tuple[int, int, float]:
    try:
        st = os.stat(path)
    except OSError:
        return (0, 0, 0.0)
    return (st.st_ino, st.st_size, st.st_mtime)
