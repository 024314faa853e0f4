"""The daemon's view of external load: throttles for the planner from the latest readings,
every change of a source's state or a rule's level logged once, metrics, and the status
file's section."""

from __future__ import annotations

import logging
from typing import Any

from mysched.backends.loads import LoadSources
from mysched.core.settings import Config
from mysched.core.rules.throttle import Reading, Throttle, levels, throttles
from mysched.daemon.metrics import CycleMetrics

log = logging.getLogger("mysched")


class LoadWatch:
    def __init__(self, sources: LoadSources | None, metrics: CycleMetrics) -> None:
        self.sources = sources
        self.metrics = metrics
        self._levels: dict[str, str] = {}
        self._state: dict[str, str] = {}
        self._said: dict[str, str] = {}
        self.doc: list[dict[str, Any]] = []
        """The sources as the status file shows them."""

    def throttles(self, config: Config, now: float) -> tuple[Throttle, ...]:
        if not config.load_sources:
            self.doc = []
            return ()
        readings = self.sources.readings() if self.sources is not None else {}
        ts = throttles(config, readings, now, self._levels)
        self._levels = levels(ts)
        doc = []
        figures: dict[str, tuple[float | None, float | None, bool, bool]] = {}
        for name, src in config.load_sources.items():
            r = readings.get(name) or Reading(name)
            state = r.state(src, now)
            age = now - r.at if r.at is not None else None
            if state != self._state.get(name, "ok"):
                if state == "stale":
                    log.warning("load source %s is stale (%s): %s", name,
                                "no value yet" if r.value is None else f"last value {r.value:g}, {age:.0f} s old",
                                "its rules start nothing new" if src.on_stale == "stop" else "it throttles nothing")
                else:
                    log.info("load source %s is current again (%g)", name, r.value)
            self._state[name] = state
            figures[name] = (r.value, age, state == "stale", bool(r.error))
            doc.append({"name": name, "type": src.kind, "value": r.value, "at": r.at,
                        "age_s": round(age, 1) if age is not None else None, "state": state, "error": r.error or None,
                        "on_stale": src.on_stale, "interval": src.interval, "max_age": src.max_age})
        for t in ts:
            said = t.level if t.level == "open" else t.detail()
            if said != self._said.get(t.rule, "open"):
                log.log(logging.INFO if t.level == "open" else logging.WARNING, "load rule %s: %s", t.rule,
                        "open again" if t.level == "open" else said)
            self._said[t.rule] = said
        self.doc = doc
        self.metrics.set_loads(figures, {t.rule: t.factor for t in ts})
        return ts
