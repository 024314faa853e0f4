"""What kept jobs waiting in a replay: the job-hours waited, split by the reasons the planner
gave the waiting jobs (`mysched.core.model.reasons`), so a run with a low occupancy or long waits
names its cause ("vo_limit": the VOs' max_running) instead of leaving the site to guess.

Counting every waiting job's reason at every cycle costs a noticeable part of a run, so the
plans are sampled: about `SAMPLES` over the submissions, at cycles. The
job-seconds waited between two samples -- exact, integrated as the farm's queue changes -- are
split by the reasons of the earlier sample (the later one when the earlier had none waiting).
Measured costs and alternatives: docs/design/simulator.md.
"""

from __future__ import annotations

from collections import Counter
from operator import itemgetter

from mysched.core.settings import Config
from mysched.core.model.plan import Plan
from mysched.core.model.reasons import Reason

SAMPLES = 200
"""Plans sampled over the submission span (more in the drain-out after it)."""

_REASON = itemgetter(1)  # Wait.reason


class WaitReasons:
    """Accumulates, per wait reason, the job-seconds jobs waited for it."""

    def __init__(self, step: float) -> None:
        self.step = step
        """Simulated seconds between samples, at least."""
        self.waited = 0.0
        """Job-seconds waited so far (the replay adds the queue's length times each stretch of time)."""
        self.by_reason: dict[str, float] = {}
        self._at = -float("inf")
        self._mark = 0.0
        self._last: Counter | None = None

    def observe(self, p: Plan, now: float) -> None:
        """A cycle's plan at `now`: sampled when `step` has passed since the last sample, or at
        once when the last sample saw nobody wait and jobs have waited since: on a farm that is
        seldom full, sparse samples see no wait and leave most job-hours without a reason."""
        if now - self._at < self.step and not (not self._last and p.waits and self.waited > self._mark):
            return
        counts = Counter(map(_REASON, p.waits.values()))
        self._split(counts)
        self._at, self._last = now, counts

    def close(self) -> dict[str, float]:
        """The job-seconds waited per reason, the stretch since the last sample included."""
        self._split(None)
        return dict(sorted(self.by_reason.items(), key=lambda kv: -kv[1]))

    def _split(self, now_counts: Counter | None) -> None:
        w = self.waited - self._mark
        self._mark = self.waited
        if w <= 0:
            return
        counts = self._last if self._last else now_counts
        total = sum(counts.values()) if counts else 0
        if not total:  # no plan saw them wait: they waited for the next cycle, which started them
            self.by_reason[Reason.NEXT_CYCLE] = self.by_reason.get(Reason.NEXT_CYCLE, 0.0) + w
            return
        for r, n in counts.items():
            self.by_reason[r] = self.by_reason.get(r, 0.0) + w * n / total


_CAPS = {Reason.VO_LIMIT: ("vos", "max_running"), Reason.VO_CORE_LIMIT: ("vos", "max_cores"),
         Reason.GROUP_LIMIT: ("groups", "max_running"), Reason.GROUP_CORE_LIMIT: ("groups", "max_cores"),
         Reason.QUEUE_MAX_RUNNING: ("queues", "max_running"), Reason.QUEUE_CORE_LIMIT: ("queues", "max_cores"),
         Reason.USER_LIMIT: ("users", "max_running"), Reason.USER_CORE_LIMIT: ("users", "max_cores")}
"""Wait reasons of a configured cap -> where the configuration sets it."""

OWN_CAPS = frozenset(r for r, (where, _) in _CAPS.items() if where != "queues")
"""Wait reasons that are a VO's own configuration: its, its groups' and its users' max_running
and max_cores (a queue's caps are shared with other VOs)."""


def caps(config: Config) -> dict[str, str]:
    """Wait reason -> the caps behind it, as 'vos.NAME.max_running: atlas 12, cms 10'."""
    out = {}
    for reason, (where, key) in _CAPS.items():
        set_ = [f"{name} {getattr(c, key, None)}" for name, c in sorted(getattr(config, where, {}).items())
                if getattr(c, key, None) is not None]
        if set_:
            out[reason] = f"{where}.NAME.{key}: {', '.join(set_)}"
    return out
