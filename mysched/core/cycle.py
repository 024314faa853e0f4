"""The one read-only context every component of a plan shares: what came in, and what the
node index derived from it. Components own their state; this holds none of theirs."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from mysched.core.model.batch import Snapshot
from mysched.core.place.nodeindex import NodeIndex
from mysched.core.place.tally import Tally
from mysched.core.rules.runtimes import RunTimes
from mysched.core.settings import Config, PackingClass
from mysched.core.share.usage import Usage


@dataclass(slots=True)
class Cycle:
    """One plan's inputs. `wake_at` is its one mutable field: the earliest time at which time
    alone could change the plan, which any component may bring forward (`wake`)."""

    snap: Snapshot
    cfg: Config
    usage: Usage
    now: float
    policy: str
    index: NodeIndex
    tally: Tally
    packing: dict[str, PackingClass]
    exclusive_packing: bool
    """Some packing class holds its nodes exclusively (for a TTL)."""
    total_slots: int
    max_slots: int
    wake_at: float | None = None
    runs: RunTimes = field(default_factory=RunTimes)
    """How long jobs are taken to run (a walltime, or an estimate: `mysched.core.rules.runtimes`)."""

    def wake(self, t: float) -> None:
        """Ask for a plan at `t`, when time alone could change this one. Not for now or
        earlier: this plan saw now (a reservation held by jobs running past their walltime
        starts "now" until they end, and asked for a cycle every min_interval meanwhile)."""
        if math.isfinite(t) and t > self.now and (self.wake_at is None or t < self.wake_at):
            self.wake_at = t

    def keys_of(self, queue: str, vo: str, group: str) -> tuple:
        """Keys of the node groups a job of (queue, VO, group) may use (queue assignment, node type)."""
        return self.index.rules(queue, vo, group).keys
