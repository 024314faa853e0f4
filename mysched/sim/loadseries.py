"""A recorded time series of load-source values, replayed by the simulator (`--load-series`).

CSV, one sample per line: ``time,source,value``. `time` is seconds since the replay's start
(``3600``) or an absolute UTC date (``2004-11-01T12:00[:SS]``); `source` names a load source
of the configuration. A header line, blank lines and ``#`` comments are skipped; any other
malformed line is refused with its file and line -- a silent gap would change what the
rules did. At a replay time the planner sees, per source, the latest sample at or before it,
as old as that sample (so `max_age` and `on_stale` act as in production).
"""

from __future__ import annotations

import bisect
import calendar
import math
import time
from dataclasses import dataclass
from typing import Any, Mapping

from mysched.core.settings import Config
from mysched.core.model.reasons import Reason
from mysched.core.rules.throttle import Reading, levels, throttles
from mysched.errors import InputError, clip
from mysched.files import open_regular, os_reason, text_lines

MAX_SAMPLES = 5_000_000


def _time(text: str) -> tuple[float, bool]:
    """(seconds, absolute?)"""
    try:
        v = float(text)
        if not math.isfinite(v):
            raise ValueError
        return v, False
    except ValueError:
        pass
    for fmt in ("%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%d"):
        try:
            return float(calendar.timegm(time.strptime(text, fmt))), True
        except ValueError:
            continue
    raise ValueError(f"bad time {clip(text)!r} (seconds since the replay's start, or YYYY-MM-DDTHH:MM UTC)")


@dataclass
class LoadSeries:
    path: str
    samples: dict[str, tuple[list[float], list[float]]]
    """source -> (times, values), times ascending; relative times until `anchor`."""
    relative: bool = True

    def anchor(self, t0: float) -> None:
        """Make relative times absolute, counting from the replay's start `t0`."""
        if self.relative:
            for times, _ in self.samples.values():
                for i, t in enumerate(times):
                    times[i] = t + t0
            self.relative = False

    def readings(self, now: float) -> dict[str, Reading]:
        out = {}
        for name, (times, values) in self.samples.items():
            i = bisect.bisect_right(times, now) - 1
            out[name] = Reading(name, values[i], times[i]) if i >= 0 else Reading(name, error="no sample yet")
        return out

    def next_change(self, now: float, config: Config) -> float | None:
        """The first time after `now` at which a reading changes: a new sample, or the
        current one going stale."""
        best = None
        for name, (times, _) in self.samples.items():
            i = bisect.bisect_right(times, now)
            cands = [times[i]] if i < len(times) else []
            src = config.load_sources.get(name)
            if i > 0 and src is not None and times[i - 1] + src.max_age > now:
                cands.append(times[i - 1] + src.max_age + 1e-6)
            for c in cands:
                best = c if best is None else min(best, c)
        return best


def read_load_series(path: str, config: Config) -> LoadSeries:
    """Read and check a series against the configuration's load sources."""
    try:
        f = text_lines(open_regular(path), path, "a load series")
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {os_reason(exc)}") from None
    raw: dict[str, list[tuple[float, float]]] = {}
    kinds: set[bool] = set()
    problems: list[str] = []
    n = 0
    with f:
        for lineno, line in enumerate(f, 1):
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            parts = [p.strip() for p in text.split(",")]
            if lineno == 1 and parts[:1] == ["time"]:
                continue
            try:
                if len(parts) != 3:
                    raise ValueError(f"expected time,source,value; found {len(parts)} field(s)")
                t, absolute = _time(parts[0])
                if parts[1] not in config.load_sources:
                    raise ValueError(f"unknown load source {clip(parts[1])!r} (the configuration has "
                                     f"{', '.join(sorted(config.load_sources)) or 'none'})")
                v = float(parts[2])
                if not math.isfinite(v):
                    raise ValueError(f"value {clip(parts[2])!r} is not a finite number")
            except ValueError as exc:
                msg = str(exc)
                if msg.startswith("could not convert"):
                    msg = f"value {clip(parts[2])!r} is not a number"
                problems.append(f"{path}:{lineno}: {msg}")
                if len(problems) >= 20:
                    break
                continue
            kinds.add(absolute)
            raw.setdefault(parts[1], []).append((t, v))
            n += 1
            if n > MAX_SAMPLES:
                raise InputError(f"{path}: more than {MAX_SAMPLES:,} samples")
    if problems:
        raise InputError("\n".join(problems))
    if not raw:
        raise InputError(f"{path}: no samples (lines of time,source,value)")
    if len(kinds) > 1:
        raise InputError(f"{path}: mixes relative seconds and absolute dates; use one kind of time")
    samples = {}
    for name, pts in raw.items():
        pts.sort()
        samples[name] = ([t for t, _ in pts], [v for _, v in pts])
    return LoadSeries(path, samples, relative=not kinds.pop())


class SeriesThrottles:
    """The replay's side of external load: throttles at each cycle from the series (with the
    rules' hysteresis carried along), and the slot-seconds each VO was held back."""

    def __init__(self, series: LoadSeries, config: Config) -> None:
        self.series = series
        self.config = config
        self._levels: dict[str, str] = {}
        self._held: dict[str, int] = {}
        self._since: float | None = None
        self.held_s: dict[str, float] = {}
        """VO -> slot-seconds of its jobs waiting for external load."""
        self.log: list[tuple[float, dict[str, int]]] = []
        """(time, VO -> cores held back) at every cycle where that changed."""
        self.level_log: list[tuple[float, dict[str, str]]] = []
        """(time, rule -> level) whenever a level changed (looked at on every load change)."""

    def at(self, now: float) -> tuple:
        ts = throttles(self.config, self.series.readings(now), now, self._levels)
        self._levels = levels(ts)
        now_levels = {t.rule: t.level for t in ts}
        if not self.level_log or self.level_log[-1][1] != now_levels:
            self.level_log.append((now, now_levels))
        return ts

    def account(self, now: float, plan: Any, jobs: Mapping[str, Any]) -> None:
        self.close(now)
        held: dict[str, int] = {}
        for w in plan.waits.values():
            if w.reason == Reason.EXTERNAL_LOAD:
                j = jobs[w.job_id]
                vo = j.vo or self.config.vo_of(j.group)
                held[vo] = held.get(vo, 0) + j.cores
        if held != self._held:
            self.log.append((now, held))
        self._held = held

    def close(self, now: float) -> None:
        """Count the slots held back up to `now`."""
        if self._since is not None:
            for vo, cores in self._held.items():
                self.held_s[vo] = self.held_s.get(vo, 0.0) + cores * (now - self._since)
        self._since = now
