"""What one cycle did (`CycleOutcome`) and where its time went (`Phases`: read, history,
plan, start, record, publish)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from mysched.core.model.plan import Plan


@dataclass
class CycleOutcome:
    """What one cycle did (also what the service logs and counts)."""

    result: str
    started: int = 0
    failed: int = 0
    planned: int = 0
    duration: float = 0.0
    plan_s: float = 0.0
    error: str = ""
    failures: dict[str, int] = field(default_factory=dict)
    repeated: int = 0
    """Failed starts that repeat a refusal logged before (counted, not logged again)."""
    plan: Plan | None = None
    phases: dict[str, float] = field(default_factory=dict)
    """Seconds per phase (read, history, plan, start, record, publish) of a completed cycle;
    they add up to `duration`."""


class Phases:
    """Consecutive phases of one cycle: each `mark` closes the phase that ran since the
    previous mark (or since the cycle began), so the phases add up to the cycle's time."""

    def __init__(self, t0: float) -> None:
        self.last = t0
        self.seconds: dict[str, float] = {}

    def mark(self, phase: str) -> None:
        now = time.perf_counter()
        self.seconds[phase] = self.seconds.get(phase, 0.0) + now - self.last
        self.last = now
