"""What a scheduling cycle decided: the `Plan` and its parts.

Every start carries why it was chosen (`hot`, `share`, `fairshare`, or the baseline's
`fifo`), every waiting job a machine-readable reason (`mysched.core.model.reasons`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping, NamedTuple

from mysched.core.model.batch import Placement
from mysched.core.model.reasons import Reason

class Start(NamedTuple):
    """Start `job_id` on `placement`; `rank` is its position in this cycle's order.

    (NamedTuples, not dataclasses: a cycle makes tens of thousands of these.)"""

    job_id: str
    placement: Placement
    reason: Reason
    vo: str
    group: str
    user: str
    queue: str
    cores: int
    rank: int
    priority: float = 0.0


class Wait(NamedTuple):
    """Why a queued job was not started this cycle."""

    job_id: str
    reason: Reason
    rank: int = 0
    priority: float = 0.0
    detail: str = ""
    nodes_rejected: Mapping[str, int] | None = None


class VOStatus(NamedTuple):
    """A VO's position when the cycle began and what the cycle gave it."""

    name: str
    share: float
    guarantee: int
    running_slots: int
    running_jobs: int
    queued_jobs: int
    usage: float
    usage_fraction: float
    priority: float
    started: int = 0

    @property
    def below_guarantee(self) -> bool:
        return self.running_slots < self.guarantee


class PoolGate(NamedTuple):
    """A pool host's gate in a plan."""

    pool: str
    gate: str
    """"guarded" or "held" (`mysched.core.hold.pools`)."""


class PoolNeed(NamedTuple):
    """What a plan holds on a held pool host."""

    packages: int
    slots: int
    """Slots per package."""


class DowntimeAt(NamedTuple):
    """The scheduled downtime in force or next on a node, as a plan reports it."""

    begin: float
    """Its start less its margin: from here on the node takes only jobs ending by then."""
    end: float
    name: str
    start: float


@dataclass
class Plan:
    """The planner's output: what to start, why the rest waits, and the farm's figures."""

    now: float
    starts: list[Start] = field(default_factory=list)
    waits: dict[str, Wait] = field(default_factory=dict)
    total_slots: int = 0
    used_slots: int = 0
    """Slots in use when the cycle began (before `starts`)."""
    free_slots: int = 0
    """Free usable slots left after `starts`."""
    holds: dict[str, tuple] = field(default_factory=dict)
    """Node -> the first reservation hold put on it in this plan (start, job id, cores it needs
    there, VO, group): what the plan's starts met there, a reservation it dropped or whose job
    started included (`reservations` lists those it hands on)."""
    node_classes: dict[str, str] = field(default_factory=dict)
    """Packing: node name -> job class holding it (exclusive reservations only)."""
    policy: str = "mysched"
    wake_at: float | None = None
    """Earliest time the same snapshot could plan differently (an exclusive reservation's
    TTL running out); lets an event-driven caller sleep until then."""
    throttles: tuple = ()
    """External load this cycle (`mysched.core.rules.throttle.Throttle`, open ones included)."""
    reservations: dict = field(default_factory=dict)
    """job id -> `mysched.core.hold.reservations.Reservation` (start, nodes) made this cycle."""
    drains: dict = field(default_factory=dict)
    """node -> `mysched.core.hold.drains.Drain`: the multi-core partition after this cycle."""
    draining_now: frozenset = frozenset()
    """The nodes that took only multi-core jobs (and smaller ones ending in time) in this plan (the partition it began with)."""
    drain_horizons: dict = field(default_factory=dict)
    """Per node of `draining_now`: smaller jobs that end by then (requested walltime) may
    start there (see `mysched.core.hold.drains`)."""
    drain_wants: dict = field(default_factory=dict)
    """Per node of `draining_now`: the cores of the multi-core job it drained for, which it kept
    free from smaller jobs -- a smaller job took only what was free beyond those, or ended by its
    horizon."""
    held_free: int = 0
    """Free slots left on draining or reserved nodes after `starts` (what holding them costs now)."""
    pools: dict[str, dict] = field(default_factory=dict)
    """Package guarantees after this cycle: pool -> figures (`mysched.core.hold.pools.PoolBook.status`)."""
    pool_gates: dict[str, PoolGate] = field(default_factory=dict)
    """Host -> its pool and gate in this plan."""
    pool_horizons: dict[str, float] = field(default_factory=dict)
    """Held hosts without a free package -> when their jobs end by requested walltime: a loan
    ending by then may start there."""
    pool_need: dict[str, PoolNeed] = field(default_factory=dict)
    """Held host -> the packages held there in this plan: a loan may also take the free
    slots beyond them."""
    pool_loans: dict[str, str] = field(default_factory=dict)
    """Job id -> pool, for the starts that borrow guaranteed packages."""
    node_load: dict[str, str] = field(default_factory=dict)
    """Nodes skipped for the load their pbs_mom reports: name -> why."""
    downtimes: dict[str, DowntimeAt] = field(default_factory=dict)
    """Node -> the scheduled downtime in force or next on it: before `begin` (its start less
    its margin) it takes only jobs ending by then, until `end` none
    (`mysched.core.model.windows`)."""
    vo_table: Callable[[], dict[str, VOStatus]] | None = field(default=None, repr=False, compare=False)
    """Makes `vos` on first read."""
    _vos: dict[str, VOStatus] | None = field(default=None, repr=False, compare=False)

    @property
    def vos(self) -> dict[str, VOStatus]:
        """Each VO's position at the start of the cycle and what it started, by name."""
        if self._vos is None:
            self._vos = self.vo_table() if self.vo_table is not None else {}
            self.vo_table = None
        return self._vos

    def reasons(self) -> dict[str, int]:
        """Waiting jobs counted by reason."""
        out: dict[str, int] = {}
        for w in self.waits.values():
            out[w.reason] = out.get(w.reason, 0) + 1
        return out
