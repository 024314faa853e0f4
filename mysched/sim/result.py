"""What a simulation run is asked to do and what it measured."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from itertools import compress
from operator import itemgetter
from typing import Callable, Iterable

from mysched.core.hold.drains import HOUR, ROOM_REASONS
from mysched.core.model.batch import Job
from mysched.core.model.plan import Plan
from mysched.sim.waitreasons import OWN_CAPS


@dataclass(frozen=True)
class SimOptions:
    """How to run a simulation."""

    policy: str = "mysched"
    interval: float = 60.0
    event_driven: bool = False
    min_interval: float = 5.0
    timeline_points: int = 2000
    frame_every: int = 0
    """Capture the farm picture every this many planner cycles (0: never)."""
    load_series: object = None
    """A `mysched.sim.loadseries.LoadSeries` to replay (None: no external load)."""
    usage_refresh: float = 300.0
    """Recompute decayed usage at most this often (simulated seconds). It moves slowly (a
    window of days, a half-life of hours) and the planner adds this cycle's running slots
    itself, so refreshing every few minutes changes no decision a site would notice."""


@dataclass
class SimResult:
    """Figures of one simulation run (see `to_json` for their definitions)."""

    policy: str
    jobs: int = 0
    started: int = 0
    finished: int = 0
    occupancy: float | None = 0.0
    """Used / the farm's slot-seconds while some job waited (None: no job ever waited). The
    slots of a downtime count as available and idle: a window that leaves jobs waiting on a
    smaller farm would otherwise raise the figure (a run measured only while the farm was short)."""
    occupancy_submitting: float | None = 0.0
    """The occupancy up to the workload's last submission: a farm that goes on receiving work,
    without the drain-out at the end of a finite workload (where, say, an idle guarantee keeps
    room that no job left in the queue may borrow)."""
    utilisation: float = 0.0
    """Used / the farm's slot-seconds over the whole replay, queue or no queue (downtimes
    counted as in `occupancy`)."""
    queued_s: float = 0.0
    """Simulated seconds during which some job waited (the base of `occupancy`)."""
    too_large: int = 0
    """The most cores of a job no set of the farm's nodes could ever run (0: every job fits)."""
    too_large_jobs: int = 0
    downtime_slot_s: float = 0.0
    """Slot-seconds scheduled downtimes closed (available but idle in every figure)."""
    downtimes: list[tuple[float, float, int]] = field(default_factory=list)
    """(from, to, slots) each closed, in seconds since `t0`: what the plots shade."""
    closed_nodes: dict[str, str] = field(default_factory=dict)
    """Nodes no job of the workload may use (node types, queues' nodes) -> why."""
    closed_slots: int = 0
    """The slots of `closed_nodes`."""
    vo_jobs: dict[str, int] = field(default_factory=dict)
    """VO -> jobs of the workload (a configured VO with none shows so instead of zeros)."""
    diversity: float | None = 0.0
    share_violations: int = 0
    vo: dict[str, dict] = field(default_factory=dict)
    wait: list[float] = field(default_factory=list)
    cycle_times: list[float] = field(default_factory=list)
    cycles: int = 0
    span_s: float = 0.0
    last_submit_s: float = 0.0
    """Seconds from the start of the replay to the workload's last submission."""
    t0: float = 0.0
    """Simulated time at which the replay began (Unix seconds for traces with real dates)."""
    wall_s: float = 0.0
    start_failures: int = 0
    unplaceable: dict[str, int] = field(default_factory=dict)
    """Jobs never started by the end of the replay, by the reason the planner gave last."""
    timeline: dict[str, list] = field(default_factory=dict)
    nodes: int = 0
    slots: int = 0
    packing: dict[str, dict] = field(default_factory=dict)
    frames: list = field(default_factory=list)
    drain_waste: float = 0.0
    """Idle slot-seconds on draining or reserved nodes / all slot-seconds."""
    pools: dict[str, dict] = field(default_factory=dict)
    """Package guarantees (`mysched.sim.poolstats.PoolWatch.figures`)."""
    by_size: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    """Size class (1, 2-8, >8 cores) -> (wait, run time) of each job started."""
    vo_wait: dict[str, dict[str, tuple[float, int]]] = field(default_factory=dict)
    """VO -> size class -> (summed wait, jobs started): a VO's multi-core wait beside its own
    single-core wait, apart from where fair share puts the VO."""
    throttled_s: dict[str, float] | None = None
    """With a load series: VO -> slot-seconds its jobs waited for external load."""
    throttle_log: list = field(default_factory=list)
    """(time, VO -> cores held back by external load), at each cycle where it changed."""
    level_log: list = field(default_factory=list)
    """(time, load rule -> level), whenever a level changed."""
    wait_reasons: dict[str, float] = field(default_factory=dict)
    """Wait reason -> job-seconds jobs waited for it, most first (`mysched.sim.waitreasons`)."""
    wait_caps: dict[str, str] = field(default_factory=dict)
    """Wait reason -> the configured caps behind it ("vos.NAME.max_running: atlas 12")."""
    unguaranteed: list[str] = field(default_factory=list)
    """A sentence for each VO that ran a good part of the work with no guarantee
    (`mysched.config.guarantees.unguaranteed`)."""
    as_submitted: dict[str, list[float]] = field(default_factory=dict)
    """In a `--split-multicore` run: size class as submitted -> waits (`mysched.sim.replay.SplitWaits`)."""
    multicore_why: dict[str, str | None] | None = None
    """Why multi-core jobs waited much longer than single-core ones (`mysched.sim.mcorewhy`:
    cause, setting, text); None when they did not."""

    def size_figures(self) -> dict[str, dict[str, float]]:
        """Size class -> jobs, wait mean, p95 and max, bounded slowdown (`size_stats`)."""
        return {k: size_stats(v) for k, v in sorted(self.by_size.items())}

    def to_json(self) -> dict:
        """The `--json` document: stable keys."""
        return {
            "policy": self.policy,
            "jobs": self.jobs,
            "started": self.started,
            "finished": self.finished,
            "occupancy": None if self.occupancy is None else round(self.occupancy, 6),
            "occupancy_submitting": None if self.occupancy_submitting is None else round(self.occupancy_submitting, 6),
            "utilisation": round(self.utilisation, 6),
            "queued_s": round(self.queued_s, 1),
            "vo": self.vo,
            "share_violations": self.share_violations,
            "diversity": None if self.diversity is None else round(self.diversity, 6),
            "wait_s": stats(self.wait, ("mean", "p50", "p95", "max")),
            "by_size": self.size_figures(),
            "bounded_slowdown": size_stats([x for v in self.by_size.values() for x in v])["bounded_slowdown"],
            "drain_waste": round(self.drain_waste, 6),
            "cycle_s": stats(self.cycle_times, ("p50", "p99", "max")),
            "cycles": self.cycles,
            "simulated_s": self.span_s,
            "wall_s": round(self.wall_s, 3),
            "start_failures": self.start_failures,
            "unplaceable": dict(sorted(self.unplaceable.items())),
            "wait_reasons": wait_reason_figures(self.wait_reasons),
            "multicore_why": self.multicore_why,
            "farm": {"nodes": self.nodes, "slots": self.slots},
            "packing_index": {c: v["packing_index"] for c, v in self.packing.items()},
            "fill_factor": {c: v["fill_factor"] for c, v in self.packing.items()},
            **({"pools": self.pools} if self.pools else {}),
            **({"as_submitted": {k: {"jobs": len(v), **{f"wait_{s}": x for s, x in stats(v, ("mean", "p95", "max")).items()}}
                                 for k, v in sorted(self.as_submitted.items())}}
               if self.as_submitted else {}),
            **({"closed_nodes": dict(sorted(self.closed_nodes.items()))} if self.closed_nodes else {}),
            **({"larger_than_farm": {"jobs": self.too_large_jobs, "max_cores": self.too_large}}
               if self.too_large_jobs else {}),
            **({"downtime_slot_h": round(self.downtime_slot_s / 3600.0, 3)} if self.downtime_slot_s else {}),
            **({"throttled_slot_h": {vo: round(s / 3600.0, 3) for vo, s in sorted(self.throttled_s.items())}}
               if self.throttled_s is not None else {}),
        }


def wait_reason_figures(by: dict[str, float]) -> dict[str, dict[str, float]]:
    """Per wait reason: job_h waited for it and its fraction of all job-hours waited."""
    total = sum(by.values())
    return {r: {"job_h": round(s / 3600.0, 3), "fraction": round(s / total, 6)} for r, s in by.items()} if total else {}


SIZES = ("1", "2-8", ">8")
"""The simulator's size classes (`mysched.sim.replay.size_class`)."""


def multicore_wait(doc: dict, key: str = "by_size") -> float | None:
    """Mean wait of the jobs of more than one core in a `--json` document (None: there were
    none); `key="as_submitted"`: of the jobs a `--split-multicore` run split."""
    by = doc.get(key, {})
    n = sum(by.get(c, {}).get("jobs", 0) for c in SIZES[1:])
    if not n:
        return None
    return sum(by[c]["wait_mean"] * by[c]["jobs"] for c in SIZES[1:] if by.get(c, {}).get("jobs")) / n


TAU = 10.0
"""Bounded slowdown threshold (seconds): jobs shorter than this count as this long."""


def size_stats(jobs: list[tuple[float, float]]) -> dict[str, float]:
    """Jobs, mean and p95 wait, mean bounded slowdown max(1, (wait + run) / max(run, TAU))."""
    waits = [w for w, _ in jobs]
    bsld = [max(1.0, (w + r) / max(r, TAU)) for w, r in jobs]
    return {"jobs": len(jobs), **{f"wait_{k}": v for k, v in stats(waits, ("mean", "p95", "max")).items()},
            "bounded_slowdown": round(sum(bsld) / len(bsld), 4) if bsld else 0.0}


def stats(values: list[float], which: Iterable[str]) -> dict[str, float]:
    out: dict[str, float] = {}
    if not values:
        return {k: 0.0 for k in which}
    s = sorted(values)
    n = len(s)
    for k in which:
        if k == "mean":
            out[k] = round(sum(s) / n, 6)
        elif k == "max":
            out[k] = round(s[-1], 6)
        else:
            q = float(k[1:]) / 100.0
            out[k] = round(s[min(n - 1, int(math.ceil(q * n)) - 1)], 6)
    return out


_JOB_ID, _REASON, _VO = itemgetter(0), itemgetter(1), itemgetter(1)  # Wait.job_id, Wait.reason; (runtime, VO)



class BelowGuarantee:
    """The time each VO spent below its guarantee with jobs waiting: `below_s` while some
    waiting job was free of the VO's own caps (`OWN_CAPS`, by the reasons the planner gave),
    `capped_s` while they all waited for them. A stretch runs from a cycle (or an arrival or
    end, which a cycle at the same time usually settles) that left the VO so to one that did
    not; jobs submitted since the last cycle count as free of its caps."""

    def __init__(self, guarantees: dict[str, int], running: dict[str, int],
                 waiting: Callable[[str, float], int], caps: bool) -> None:
        self.guarantees, self.running, self.waiting = guarantees, running, waiting
        self.caps = caps
        """Whether the configuration has any of them (else no plan is read)."""
        self.capped: dict[str, int] = {}
        """VO -> its waiting jobs the plan last read held by its own caps."""
        self._stale = set(guarantees)
        """VOs whose jobs came, started or ended since then: only their own jobs move their caps."""
        self._since: dict[str, tuple[float, bool]] = {}  # VO -> (since when, capped)
        self.below_s = dict.fromkeys(guarantees, 0.0)
        self.capped_s = dict.fromkeys(guarantees, 0.0)

    def update(self, vos: Iterable[str], t: float) -> None:
        """Settle the VOs whose jobs came, started or ended at `t`."""
        self._stale.update(vos)
        self._settle(vos, t)

    def cycle(self, p: Plan, vo_of: dict[str, tuple], t: float, started: Iterable[str]) -> None:
        """After a cycle's starts (to the VOs `started`): which waiting jobs the plan `p` held by
        their VO's own caps (`vo_of`: job id -> (..., VO)), when a VO below its guarantee has
        had jobs come, start or end since the plan was last read: a VO at its cap leaves thousands
        of waits a cycle, too many to read every cycle (docs/design/simulator.md)."""
        stale = self._stale
        stale.update(started)  # its starts may have taken a VO to its cap
        if self.caps and any(vo in stale and self.running.get(vo, 0) < g and self.waiting(vo, t) > 0
                             for vo, g in self.guarantees.items()):
            waits = p.waits.values()  # map, compress and Counter run in C
            held = compress(waits, map(OWN_CAPS.__contains__, map(_REASON, waits)))
            capped = Counter(map(_VO, map(vo_of.__getitem__, map(_JOB_ID, held))))
            changed = set(capped) | set(self.capped) | set(started)
            self.capped = capped
            stale.clear()
            self._settle(changed, t)
        else:
            self._settle(started, t)

    def _settle(self, vos: Iterable[str], t: float) -> None:
        g, since = self.guarantees, self._since
        for vo in vos:
            if vo not in g:
                continue
            n = self.waiting(vo, t)
            state = None if n <= 0 or self.running.get(vo, 0) >= g[vo] else n <= self.capped.get(vo, 0)
            cur = since.get(vo)
            if cur is not None:
                t0, capped = cur
                if capped is state:
                    continue
                (self.capped_s if capped else self.below_s)[vo] += t - t0
                del since[vo]
            if state is not None:
                since[vo] = (t, state)

    def close(self, t: float) -> None:
        """Count the stretches still open at the end of the replay."""
        for vo, (t0, capped) in self._since.items():
            (self.capped_s if capped else self.below_s)[vo] += t - t0
        self._since.clear()


class McoreWatch:
    """What held multi-core jobs back, counted as the replay runs, for `mysched.sim.mcorewhy`
    to name a cause from (a guess would send an admin to the wrong setting): the workload's
    multi-core jobs too large for most nodes or without a walltime the planner believes, and,
    per cycle, the multi-core partition the plan hands on (`Plan.drains`) -- how long it held
    nodes, how long of that at `drain.max_draining`, how long new drains were held back by
    `drain.rate` while jobs it could have drained for waited, and how long each drained node
    took to get room. A partition holds nodes only while multi-core jobs wait for room, so its
    time in use is the time they waited for it; a plan's partition holds until the next cycle.
    Reads the plan's drains and starts each cycle (a few nodes), its waits only where the rate
    decided."""

    def __init__(self, cap: int | None, rate: float | None, min_cores: int, node_slots: int = 0) -> None:
        self.cap = cap
        """The most nodes the partition holds (`partition_cap`: drain.max_draining, else half the
        nodes; None: no partition)."""
        self.rate = None if rate is None else math.floor(rate)
        """Drains begun per hour at most, as the planner counts them (None: no fixed rate)."""
        self.min_cores = min_cores
        self.node_slots = node_slots
        """The slots of the median usable node."""
        self.jobs = 0
        """Multi-core jobs of the workload (more than one core)."""
        self.too_big = 0
        """Of those, the jobs asking for more cores on one node than most usable nodes have."""
        self.unknown_walltime = 0
        """Of those, the jobs without a requested walltime the planner believes."""
        self.all_jobs = 0
        self.all_unknown_walltime = 0
        self.in_use_s = 0.0
        """Simulated seconds the partition held nodes."""
        self.at_cap_s = 0.0
        """Of those, seconds it held `cap` nodes or more."""
        self.rate_s = 0.0
        """Of those, seconds below the cap with the hour's drains spent and more jobs waiting."""
        self.to_room_s: list[float] = []
        """Seconds from a node's drain to room for a waiting multi-core job (or its start there), per drain."""
        self._seen: set[tuple[str, float]] = set()
        self._last: dict[str, float] = {}  # the last plan's partition: node -> draining since
        self._state: tuple[float, bool, bool, bool] | None = None  # since, in use, at cap, rate-held

    def job(self, job: Job, too_big: bool, walltime_known: bool) -> None:
        """One job of the workload."""
        self.all_jobs += 1
        self.all_unknown_walltime += not walltime_known
        if job.cores > 1:
            self.jobs += 1
            self.too_big += too_big
            self.unknown_walltime += not walltime_known

    def observe(self, p: Plan, now: float, jobs: dict[str, Job]) -> None:
        """A cycle's plan at `now` (its partition holds until the next)."""
        self._count(now)
        drains = p.drains
        n = len(drains)
        at_cap = self.cap is not None and n >= self.cap
        held = False
        if n and not at_cap and self.rate is not None:
            recent = sum(1 for d in drains.values() if now - d.since < HOUR)
            if recent >= self.rate:  # would it have drained more? only for jobs without room yet
                room = sum(1 for d in drains.values() if d.ready is not None)
                mc = self.min_cores
                waiting = sum(1 for w in p.waits.values()
                              if w.reason in ROOM_REASONS and (j := jobs.get(w.job_id)) is not None and j.cores >= mc)
                held = waiting > room
        self._state = (now, n > 0, at_cap, held)
        seen, got = self._seen, []
        for name, d in drains.items():
            if d.ready is not None:
                got.append((name, d.since, d.ready))
        last = self._last
        if last:  # a job started at once where a drain made room: the node is never seen ready
            mc = self.min_cores
            got += [(name, last[name], now) for s in p.starts if s.cores >= mc
                    for name, _ in s.placement if name in last]
        for name, since, at in got:
            if (name, since) not in seen:
                seen.add((name, since))
                self.to_room_s.append(at - since)
        self._last = {name: d.since for name, d in drains.items()}

    def close(self, now: float) -> None:
        """Count the last plan's partition up to the end of the replay."""
        self._count(now)
        self._state = None

    def _count(self, now: float) -> None:
        if self._state is None:
            return
        since, used, at_cap, held = self._state
        if used:
            dt = now - since
            self.in_use_s += dt
            self.at_cap_s += dt * at_cap
            self.rate_s += dt * held
