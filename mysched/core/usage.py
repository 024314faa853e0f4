"""Decayed wall-clock consumption per VO, group and user over the history window.

Usage at time `now` is the integral of slots in use, weighted by ``2**(-(now - t) / half_life)``
and cut off at ``now - window``. Finished jobs are kept in a `UsageLedger`, which updates
incrementally (each contribution is added once and expired once), so the simulator can ask
for usage every cycle and the daemon can rebuild it from the store at start. Running jobs
are added per cycle from the snapshot, from their start to `now`.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Iterable

from mysched.core.model import FinishedJob, Job

Key = tuple[int, str]
VO, GROUP, USER = 0, 1, 2
_LN2 = math.log(2.0)


@dataclass
class Usage:
    """Decayed slot-seconds by VO, group and user at one instant (plain values, no I/O)."""

    vo: dict[str, float] = field(default_factory=dict)
    group: dict[str, float] = field(default_factory=dict)
    user: dict[str, float] = field(default_factory=dict)

    @property
    def total(self) -> float:
        return sum(self.vo.values())

    @classmethod
    def empty(cls) -> "Usage":
        return cls()


class UsageLedger:
    """Finished-job history reduced to decayed sums, updated incrementally.

    Internally sums are kept *anchored* at time `_t0` (contributions multiplied by
    ``2**((t - t0)/h)``) so decay is a single factor at read time. Contributions are split
    into buckets of `bucket` seconds so that the part older than the window can be
    subtracted exactly when it expires.
    """

    def __init__(self, window: float, half_life: float, bucket: float | None = None,
                 vo_of: Callable[[str], str] | None = None) -> None:
        self.window = float(window)
        self.half_life = float(half_life)
        self.bucket = float(bucket or max(60.0, window / 48.0))
        self.vo_of = vo_of or (lambda group: group)
        self._t0: float | None = None
        self._sums: dict[Key, float] = {}
        self._buckets: deque[tuple[int, dict[Key, float]]] = deque()
        self._by_index: dict[int, dict[Key, float]] = {}
        self.latest = -math.inf

    # -- anchored arithmetic ---------------------------------------------------------------
    def _w(self, t: float) -> float:
        """Anchored weight density at time t."""
        if math.isinf(self.half_life):
            return 1.0
        return 2.0 ** ((t - self._t0) / self.half_life)

    def _integral(self, a: float, b: float) -> float:
        """Anchored integral of the weight over [a, b]."""
        if math.isinf(self.half_life):
            return b - a
        h = self.half_life
        return h / _LN2 * (2.0 ** ((b - self._t0) / h) - 2.0 ** ((a - self._t0) / h))

    def _reanchor(self, t: float) -> None:
        if self._t0 is None:
            self._t0 = t
            return
        if math.isinf(self.half_life) or t - self._t0 < 20 * self.half_life:
            return
        f = 2.0 ** (-(t - self._t0) / self.half_life)
        self._t0 = t
        for k in self._sums:
            self._sums[k] *= f
        for _, d in self._buckets:
            for k in d:
                d[k] *= f

    # -- updates --------------------------------------------------------------------------
    def add(self, vo: str, group: str, user: str, start: float, end: float, cores: int = 1) -> None:
        """Record `cores` slots used from `start` to `end` (only the part inside the window counts)."""
        if end <= start or cores <= 0:
            return
        if end > self.latest:
            self.latest = end
        lo = max(start, self.latest - self.window)
        if end <= lo:
            return
        self._reanchor(end)
        keys = ((VO, vo), (GROUP, group), (USER, user))
        b = self.bucket
        i = int(lo // b)
        t = lo
        while t < end:
            nxt = min(end, (i + 1) * b)
            amount = cores * self._integral(t, nxt)
            d = self._by_index.get(i)
            if d is None:
                d = {}
                self._by_index[i] = d
                self._insert_bucket(i, d)
            for k in keys:
                d[k] = d.get(k, 0.0) + amount
                self._sums[k] = self._sums.get(k, 0.0) + amount
            t = nxt
            i += 1

    def add_job(self, rec: FinishedJob) -> None:
        if rec.end is None:
            return
        vo = rec.vo or self.vo_of(rec.group)
        self.add(vo, rec.group, rec.user, rec.start, rec.end, rec.cores)

    def _insert_bucket(self, i: int, d: dict[Key, float]) -> None:
        if not self._buckets or self._buckets[-1][0] < i:
            self._buckets.append((i, d))
            return
        items = list(self._buckets)
        items.append((i, d))
        items.sort(key=lambda x: x[0])
        self._buckets = deque(items)

    def expire(self, now: float) -> None:
        """Drop buckets that lie wholly before ``now - window``."""
        limit = int((now - self.window) // self.bucket)
        while self._buckets and self._buckets[0][0] < limit:
            i, d = self._buckets.popleft()
            del self._by_index[i]
            for k, v in d.items():
                left = self._sums[k] - v
                if left <= 1e-9 * max(1.0, v):
                    del self._sums[k]
                else:
                    self._sums[k] = left

    # -- reads ----------------------------------------------------------------------------
    def usage(self, now: float, running: Iterable[Job] = (),
              vo_of: Callable[[str], str] | None = None) -> Usage:
        """Decayed usage at `now`, including running jobs' time so far."""
        self.expire(now)
        vo_of = vo_of or self.vo_of
        out = Usage()
        if self._t0 is not None:
            f = 1.0 if math.isinf(self.half_life) else 2.0 ** (-(now - self._t0) / self.half_life)
            dicts = (out.vo, out.group, out.user)
            for (kind, name), v in self._sums.items():
                dicts[kind][name] = v * f
        h = self.half_life
        lo_limit = now - self.window
        for job in running:
            if job.start_time is None:
                continue
            lo = max(job.start_time, lo_limit)
            if now <= lo:
                continue
            if math.isinf(h):
                amount = now - lo
            else:
                amount = h / _LN2 * (1.0 - 2.0 ** (-(now - lo) / h))
            amount *= job.cores
            vo = job.vo or vo_of(job.group)
            out.vo[vo] = out.vo.get(vo, 0.0) + amount
            out.group[job.group] = out.group.get(job.group, 0.0) + amount
            out.user[job.user] = out.user.get(job.user, 0.0) + amount
        return out


def usage_from_records(records: Iterable[FinishedJob], now: float, window: float, half_life: float,
                       vo_of: Callable[[str], str], running: Iterable[Job] = ()) -> Usage:
    """One-shot usage from history records (what the daemon does from the store)."""
    ledger = UsageLedger(window, half_life, vo_of=vo_of)
    recs = sorted((r for r in records if r.end is not None and r.end <= now), key=lambda r: r.end)
    ledger.latest = now
    for r in recs:
        ledger.add_job(r)
    return ledger.usage(now, running)
