"""Decayed wall-clock consumption per VO, group and user over the history window.

Usage at time `now` is the integral of slots in use, weighted by ``2**(-(now - t) / half_life)``
and cut off at ``now - window``: a job that ran from `start` to `end` (`now` while it runs)
on `cores` slots counts ``cores * integral of the weight over [max(start, now - window), end]``.
`usage_from_records` computes exactly that, job by job. Finished jobs are also kept in a
`UsageLedger`, which gives the same figures incrementally (each job is added once and
expired once, the part straddling the window edge included), so the simulator can ask for
usage every cycle and the daemon need not re-read its window from the store. Running jobs
are added per read, from their start to `now`.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field
from typing import Callable, Iterable

from mysched.core.model.batch import FinishedJob, Job

Key = tuple[int, str]
VO, GROUP, USER = 0, 1, 2
_LN2 = math.log(2.0)
_MAX_EXP = 64.0
"""Largest power of two a weight may take. A sound history never needs more than 2**20 (the
ledger re-anchors every 20 half-lives, records end before the read); a record or clock
years ahead would ask 2**1000 and more, which overflows. 2**64 even times a million cores
over years stays a finite float."""


def _pow2(x: float) -> float:
    """``2**x`` with the exponent clamped to `_MAX_EXP`: never OverflowError, whatever the data."""
    return 2.0 ** (x if x < _MAX_EXP else _MAX_EXP)


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

    def _add(self, vo: str, group: str, user: str, amount: float) -> None:
        self.vo[vo] = self.vo.get(vo, 0.0) + amount
        self.group[group] = self.group.get(group, 0.0) + amount
        self.user[user] = self.user.get(user, 0.0) + amount


def decayed(a: float, b: float, now: float, half_life: float) -> float:
    """Integral over [a, b] of the weight ``2**(-(now - t) / half_life)`` (no decay if infinite)."""
    if math.isinf(half_life):
        return b - a
    return half_life / _LN2 * (_pow2((b - now) / half_life) - _pow2((a - now) / half_life))


def _add_running(out: Usage, running: Iterable[Job], now: float, window: float, half_life: float,
                 vo_of: Callable[[str], str]) -> None:
    """Running jobs' time so far (from their start, or the window edge, to `now`)."""
    edge = now - window
    for job in running:
        if job.start_time is None:
            continue
        lo = max(job.start_time, edge)
        if now <= lo:
            continue
        out._add(job.vo or vo_of(job.group), job.group, job.user, job.cores * decayed(lo, now, now, half_life))


class UsageLedger:
    """Finished jobs reduced to decayed sums per VO, group and user, updated incrementally.

    `usage(now)` equals `usage_from_records` of the jobs added so far (to rounding), as long
    as reads do not go back in time (a job arriving late still counts exactly its part inside
    the window). A job that has not ended by the next read is held back until a read it has
    ended by, as the definition does not count it: a record ending years ahead (a wrong time
    stamp) then counts nothing, rather than anchoring every weight in the future.

    How: sums are kept *anchored* at time `_t0`, as ``c * (W(b) - W(a))`` with
    ``W(t) = 2**((t - t0)/h)``, so decay is one factor at read time. Each job's interval is
    also a start and an end event in a heap. `expire` moves the window edge E forward over
    the events: a job whose start E passed straddles the edge, and its time before E,
    ``cores * c * (W(E) - W(start))``, is taken off at read time from per-key totals
    (cores, and cores x W(start)); once E passes its end the whole job is subtracted. Each
    job costs O(log n) once; a read costs one step per key. A key goes when its
    last job has wholly left the window.
    """

    def __init__(self, window: float, half_life: float, vo_of: Callable[[str], str] | None = None) -> None:
        self.window = float(window)
        self.half_life = float(half_life)
        self.vo_of = vo_of or (lambda group: group)
        self._decays = not math.isinf(self.half_life)
        self._c = self.half_life / _LN2 if self._decays else 1.0
        self._t0: float | None = None
        self._edge = -math.inf
        """Everything before this time is subtracted (and is not added again)."""
        self._sums: dict[Key, float] = {}
        self._events: list[tuple[float, int, int, float, tuple[Key, ...]]] = []
        """Heap of (time, sequence, cores: + at a job's start, - at its end, its start, keys)."""
        self._seq = 0
        self._straddle: dict[Key, tuple[int, float]] = {}
        """Per key with jobs that straddle the edge: (their cores, sum of cores x W(start))."""
        self._jobs: dict[Key, int] = {}
        """Jobs of the key still (partly) inside the window."""
        self._now = -math.inf
        """The latest read: a job ending after it waits in `_later` for a read past its end."""
        self._later: list[tuple[float, int, str, str, str, float, int]] = []
        """Heap of (end, sequence, vo, group, user, start, cores) of jobs held back."""

    # -- anchored arithmetic ---------------------------------------------------------------
    def _w(self, t: float) -> float:
        """W(t): the anchored primitive of the weight (up to the factor `_c`)."""
        return _pow2((t - self._t0) / self.half_life) if self._decays else t - self._t0

    def _reanchor(self, t: float) -> None:
        """Move the anchor to `t` once it is 20 half-lives behind, so weights stay finite."""
        if self._t0 is None:
            self._t0 = t
            return
        if not self._decays or t - self._t0 < 20 * self.half_life:
            return
        f = _pow2(-(t - self._t0) / self.half_life)
        self._t0 = t
        for k in self._sums:
            self._sums[k] *= f
        straddle = self._straddle
        for k, (n, weighted) in straddle.items():
            straddle[k] = (n, weighted * f)

    # -- updates --------------------------------------------------------------------------
    def add(self, vo: str, group: str, user: str, start: float, end: float, cores: int = 1) -> None:
        """Record `cores` slots used from `start` to `end` (the part before the window edge
        of the last read never counts)."""
        lo = max(start, self._edge)
        if end <= lo or cores <= 0:
            return
        if end > self._now:  # not ended by the last read: counts from the first read it has ended by
            self._seq += 1
            heapq.heappush(self._later, (end, self._seq, vo, group, user, start, cores))
            return
        self._reanchor(end)
        keys = ((VO, vo), (GROUP, group), (USER, user))
        amount = cores * self._c * (self._w(end) - self._w(lo))
        for k in keys:
            self._sums[k] = self._sums.get(k, 0.0) + amount
            self._jobs[k] = self._jobs.get(k, 0) + 1
        self._seq += 1
        heapq.heappush(self._events, (lo, self._seq, cores, lo, keys))
        heapq.heappush(self._events, (end, self._seq, -cores, lo, keys))

    def add_job(self, rec: FinishedJob) -> None:
        if rec.end is None:
            return
        vo = rec.vo or self.vo_of(rec.group)
        self.add(vo, rec.group, rec.user, rec.start, rec.end, rec.cores)

    def expire(self, now: float) -> None:
        """Take off exactly what lies before ``now - window``: whole jobs that ended before
        it, and the early part of jobs that straddle it. The edge never moves back."""
        edge = now - self.window
        if now > self._now:
            self._now = now
        if edge <= self._edge:
            self._take_ended()
            return
        if self._t0 is not None:
            self._reanchor(edge)
        events, sums, straddle = self._events, self._sums, self._straddle
        while events and events[0][0] <= edge:
            t, _, cores, lo, keys = heapq.heappop(events)
            w_lo = self._w(lo)
            if cores > 0:  # the edge passed its start: it straddles the edge from now on
                for k in keys:
                    cb = straddle.get(k)
                    if cb is None:
                        straddle[k] = (cores, cores * w_lo)
                    else:
                        n, weighted = cb
                        straddle[k] = (n + cores, weighted + cores * w_lo)
                continue
            whole = -cores * self._c * (self._w(t) - w_lo)  # the edge passed its end: all of it goes
            for k in keys:
                left = self._jobs[k] - 1
                if not left:  # the key's last job: what would remain is rounding
                    del sums[k], self._jobs[k], straddle[k]
                    continue
                self._jobs[k] = left
                v = sums[k] - whole
                sums[k] = v if v > 0.0 else 0.0
                n, weighted = straddle[k]
                if n + cores:
                    straddle[k] = (n + cores, weighted + cores * w_lo)
                else:  # none straddles the edge any more
                    del straddle[k]
        self._edge = edge
        self._take_ended()

    def _take_ended(self) -> None:
        """Count the held-back jobs that have ended by the latest read."""
        later = self._later
        while later and later[0][0] <= self._now:
            end, _, vo, group, user, start, cores = heapq.heappop(later)
            self.add(vo, group, user, start, end, cores)

    # -- reads ----------------------------------------------------------------------------
    def usage(self, now: float, running: Iterable[Job] = (),
              vo_of: Callable[[str], str] | None = None) -> Usage:
        """Decayed usage at `now`, including running jobs' time so far."""
        self.expire(now)
        out = Usage()
        if self._t0 is not None:
            f = _pow2(-(now - self._t0) / self.half_life) if self._decays else 1.0
            dicts = (out.vo, out.group, out.user)
            for (kind, name), v in self._sums.items():
                dicts[kind][name] = v * f
            if self._straddle:  # take off straddling jobs' time before the edge
                cf = self._c * f
                cfw = cf * self._w(self._edge)
                for (kind, name), (n, b) in self._straddle.items():
                    d = dicts[kind]
                    v = d[name] - (n * cfw - cf * b)
                    d[name] = v if v > 0.0 else 0.0
        _add_running(out, running, now, self.window, self.half_life, vo_of or self.vo_of)
        return out


def usage_from_records(records: Iterable[FinishedJob], now: float, window: float, half_life: float,
                       vo_of: Callable[[str], str], running: Iterable[Job] = ()) -> Usage:
    """Usage at `now` straight from the definition, job by job: what a `UsageLedger` fed the
    same records must give. Records that had not ended by `now` are not history yet (pass
    such jobs as `running`)."""
    out = Usage()
    edge = now - window
    for r in records:
        if r.end is None or r.end > now:
            continue
        lo = max(r.start, edge)
        if r.end > lo and r.cores > 0:
            out._add(r.vo or vo_of(r.group), r.group, r.user, r.cores * decayed(lo, r.end, now, half_life))
    _add_running(out, running, now, window, half_life, vo_of)
    return out
