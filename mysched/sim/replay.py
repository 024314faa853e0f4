"""Replay a workload through the planner on a simulated farm and measure the outcome.

The loop is the daemon's loop on a virtual clock: read a snapshot, plan, start jobs. To be
fast on months-long traces it runs a cycle only when one could change something (a job
arrived, ended or was started since the last cycle, and some job waits with a slot free),
and jumps the clock from event to event otherwise. Cycles stay on the same fixed grid as
in production (or, event-driven, follow events rate-limited by `min_interval`), so the
figures are those the real daemon would produce.
"""

from __future__ import annotations

import math
import time
from bisect import bisect_left, bisect_right
from typing import Callable

from mysched.config.guarantees import unguaranteed, unguaranteed_text
from mysched.core.settings import Config
from mysched.core.model.batch import Job, Node, Request, TraceJob
from mysched.core.planner import NodeIndex, plan
from mysched.core.hold.drains import partition_cap
from mysched.core.rules.walltimes import horizon
from mysched.errors import ServerError
from mysched.gcpause import gc_paused
from mysched.core.model.reasons import Reason
from mysched.backends.sim.farm import SimulatedFarm
from mysched.core.rules.runtimes import RecentRuns
from mysched.core.share.usage import UsageLedger
from mysched.sim.mcorewhy import diagnose
from mysched.sim.result import BelowGuarantee, McoreWatch, SimOptions, SimResult
from mysched.sim.violations import share_violations
from mysched.sim.poolstats import PoolWatch
from mysched.sim.emptypools import pool_causes
from mysched.sim.waitreasons import SAMPLES, WaitReasons, caps
from mysched.sim.workloadfit import closed_nodes, closed_spans, larger_than_farm


def simulate(workload: list[TraceJob], config: Config, nodes: tuple[Node, ...], opts: SimOptions = SimOptions(),
             progress: Callable[[float], None] | None = None) -> SimResult:
    """Run `workload` on `nodes` under `config` and return the measured figures."""
    wall0 = time.perf_counter()
    workload = spread_oversize(workload, max((n.slots for n in nodes), default=1))
    classes = {pc.name: pc for pc in config.packing}
    nodes = tuple(nodes)
    index = NodeIndex().get(config, nodes)  # the planner's, also for the farm's packing figures

    def classify(job: Job, vo: str) -> str | None:
        pc = index.job_class(job.queue, vo, job.group, job.user)
        return pc.name if pc else None

    farm = SimulatedFarm(nodes, workload, vo_of=config.vo_of, classify=classify if classes else None)
    slots_per_node = max((n.slots for n in nodes), default=1)
    res = SimResult(policy=opts.policy, jobs=len(workload), nodes=len(nodes), slots=farm.total_slots)
    res.closed_nodes = closed_nodes(config, nodes, workload)
    # Jobs larger than the whole farm wait for ever: they are counted apart (`res.too_large`)
    # and not as waiting work, which would make a farm idle for their sake look badly used.
    unfit: dict[str, list[float]] = {}
    work = 0.0
    too_large = larger_than_farm(tuple(e.node for e in index.entries))
    drain = config.drain
    sizes = sorted(n.slots for n in nodes if n.state.usable)
    cap = partition_cap(drain.max_draining, len(index.entries)) if drain.on else None
    mcore = McoreWatch(cap, drain.rate, drain.min_cores,  # what holds multi-core jobs back
                       sizes[len(sizes) // 2] if sizes else 0)
    ceiling = horizon(config.max_walltime, ())  # walltimes beyond it are taken as unknown (`believed`)
    for tj in workload:
        w = tj.job.walltime  # too big: on one node (no request spreads it), more cores than most nodes have
        too_big = tj.job.request is None and 2 * (len(sizes) - bisect_left(sizes, tj.job.cores)) < len(sizes)
        mcore.job(tj.job, too_big, w is not None and 0 < w <= ceiling)
        vo = tj.job.vo or config.vo_of(tj.job.group)
        res.vo_jobs[vo] = res.vo_jobs.get(vo, 0) + 1
        if too_large(tj.job):
            unfit.setdefault(vo, []).append(tj.job.submit_time)
            res.too_large = max(res.too_large, tj.job.cores)
            res.too_large_jobs += 1
        else:
            work += tj.job.cores * tj.runtime  # core-seconds the replay will run, for its progress
    all_unfit = sorted(t for ts in unfit.values() for t in ts)
    for ts in unfit.values():
        ts.sort()

    def waiting(vo: str, t: float) -> int:
        """Jobs of `vo` waiting at `t` that could ever start."""
        q = farm.vo_queued.get(vo, 0)
        u = unfit.get(vo)
        return q - bisect_right(u, t) if u else q

    if not workload:
        return res
    # Only the mysched policy reads decayed usage; the baselines plan without it.
    fairshare = opts.policy == "mysched"
    ledger = UsageLedger(config.history_window, config.half_life, vo_of=config.vo_of)
    usage_cache = _UsageCache(ledger, opts.usage_refresh if fairshare else math.inf)
    vo_area: dict[str, float] = {}
    # Run-time estimates for jobs without a walltime, from the jobs ended so far (the mysched
    # policy's; the baselines are the textbook ones, by requested walltimes alone).
    runs = RecentRuns() if fairshare else None

    def ended(job: Job, vo: str) -> None:
        start = job.start_time if job.start_time is not None else farm.now
        if fairshare:
            ledger.add(vo, job.group, job.user, start, farm.now, job.cores)
            runs.add(job.user, job.queue, farm.now - start)
        res.finished += 1
        vo_area[vo] = vo_area.get(vo, 0.0) + job.cores * (farm.now - start)

    farm.on_end = ended
    total = farm.total_slots
    guarantees = {name: v.guarantee(total) for name, v in config.vos.items()}
    own_caps = bool(config.users) or any(x.max_running is not None or x.max_cores is not None
                                         for x in (*config.vos.values(), *config.groups.values()))
    below = BelowGuarantee(guarantees, farm.vo_running, waiting, own_caps)
    t0 = farm.now
    interval = opts.interval
    loads = None
    if opts.load_series is not None:
        from mysched.sim.loadseries import SeriesThrottles

        opts.load_series.anchor(t0)
        loads = SeriesThrottles(opts.load_series, config)
        next_load = opts.load_series.next_change(t0 - 1e-9, config)
    acc = {"q_used": 0.0, "q_avail": 0.0, "s_used": 0.0, "s_avail": 0.0, "div": 0.0, "busy": 0.0, "work": 0.0}
    span_end = max(tj.job.submit_time for tj in workload)
    pi_acc = {c: (0.0, 0.0, 0.0) for c in classes}  # sum PI, sum class fill, samples

    def packing_now(c: str) -> tuple[float, float] | None:
        used_nodes = farm.class_nodes.get(c, 0)
        if not used_nodes:
            return None
        cs = farm.class_slots.get(c, 0)
        needed = math.ceil(cs / slots_per_node)
        return needed / used_nodes, cs / (used_nodes * slots_per_node)

    grid_t, grid_k = t0, 0  # the last time seen and its grid index (the next call starts there)
    shut = closed_spans(index, nodes)  # scheduled downtimes: their slots are not available

    def closed(ta: float, tb: float) -> float:
        return sum(n * (min(tb, e) - max(ta, s)) for s, e, n in shut if s < tb and e > ta) if shut else 0.0

    vo_waiting: dict[str, tuple[float, float]] = {}  # VO -> (its running slot-seconds, seconds) while it had jobs waiting
    why = WaitReasons(max(interval, (span_end - t0) / SAMPLES))  # job-hours waited, by the planner's reasons

    def on_change(ta: float, tb: float) -> None:
        nonlocal grid_t, grid_k
        dt = tb - ta
        acc["work"] += farm.used * dt
        why.waited += farm.queued * dt
        if farm.queued > (bisect_right(all_unfit, ta) if all_unfit else 0):
            acc["q_used"] += farm.used * dt
            # Every slot of the farm is the base, a downtime's too (idle, not left out): left
            # out, the slots of a window that made jobs wait on a smaller farm raised the figure.
            acc["q_avail"] += total * dt
            running = farm.vo_running
            for vo, q in farm.vo_queued.items():
                if q > 0 and (vo not in unfit or waiting(vo, ta) > 0):
                    slot_s, secs = vo_waiting.get(vo, (0.0, 0.0))
                    vo_waiting[vo] = (slot_s + running.get(vo, 0) * dt, secs + dt)
            if ta < span_end:  # the same while the workload still submits
                ds = min(tb, span_end) - ta
                acc["s_used"] += farm.used * ds
                acc["s_avail"] += total * ds
        ka = grid_k if ta == grid_t else math.ceil((ta - t0) / interval - 1e-9)
        kb = math.ceil((tb - t0) / interval - 1e-9)
        grid_t, grid_k = tb, kb
        k = kb - ka
        if k > 0 and farm.busy_nodes:
            acc["div"] += k * farm.div_sum
            acc["busy"] += k * farm.busy_nodes
        if k > 0 and classes:
            for c in classes:
                got = packing_now(c)
                if got is not None:
                    pi, fill = got
                    spi, sfill, n = pi_acc[c]
                    pi_acc[c] = (spi + k * pi, sfill + k * fill, n + k)

    farm.on_change = on_change

    def track_below(t: float) -> None:
        """Only VOs whose counts changed can have crossed their guarantee."""
        touched = farm.vo_touched
        if touched:
            below.update(touched, t)
            touched.clear()

    step = max(interval, (span_end - t0) / max(1, opts.timeline_points))
    tl: dict[str, list] = {"t": [], "used": [], "running": [], "queued": [], "packing_index": []}
    last_sample = -math.inf

    def sample(t: float) -> None:
        nonlocal last_sample
        if t - last_sample < step:
            return
        last_sample = t
        tl["t"].append(t - t0)
        tl["used"].append(farm.used)
        tl["running"].append({k: v for k, v in farm.vo_running.items() if v})
        tl["queued"].append({k: v for k, v in farm.vo_queued.items() if v})
        if classes:
            tl["packing_index"].append({c: got[0] for c in classes if (got := packing_now(c)) is not None})

    held: dict = {"why": why, "below": below, "mcore": mcore, "runs": runs}  # the last plan's reservations, kept stable by the next
    pieces = {tj.job.id: tj.split_of for tj in workload if tj.split_of is not None}
    split = held["split"] = SplitWaits(pieces) if pieces else None  # also reported as submitted
    watch = held["pools"] = PoolWatch(config) if config.pools else None
    t = t0
    last_cycle = -math.inf
    wake_at: float | None = None
    next_progress = t0
    while True:
        farm.advance(t)
        track_below(t)
        sample(t)
        if wake_at is not None and t >= wake_at:
            farm.dirty = True  # a reservation ran out: the same farm may now plan differently
            wake_at = None
        if loads is not None and next_load is not None and t >= next_load:
            farm.dirty = True  # a load value changed or went stale
            loads.at(t)
            next_load = opts.load_series.next_change(t, config)
        if farm.queued > 0 and farm.dirty and farm.free_slots > 0:
            wake_at = _cycle(farm, config, usage_cache, opts.policy, res, t, index, guarantees, loads, held)
            last_cycle = t
            if opts.frame_every and res.cycles % opts.frame_every == 1:
                res.frames.append((t - t0, farm.slot_classes()))
            track_below(t)
        elif farm.queued > 0:
            farm.dirty = False
        if farm.exhausted:
            break
        if progress is not None and t >= next_progress:
            # Half the submissions' time, half the work done: the drain-out after the last
            # submission (a good part of the run's wall time) is no longer shown as 100 %.
            half = min(1.0, (t - t0) / max(1.0, span_end - t0))
            progress(min(0.999, (half + (acc["work"] / work if work else half)) / 2))
            next_progress = t + (span_end - t0) / 1000.0
        # When is the next cycle worth running?
        if opts.event_driven:
            ev = farm.next_event()
            if wake_at is not None and farm.queued:
                ev = wake_at if ev is None else min(ev, wake_at)
            if loads is not None and next_load is not None and farm.queued:
                ev = next_load if ev is None else min(ev, next_load)
            if ev is None:
                break
            nxt = min(max(ev, last_cycle + opts.min_interval), _next_grid(t, t0, interval))
            if farm.queued == 0 or not farm.dirty:
                nxt = max(nxt, ev)
            t = max(nxt, t + 1e-6)
        else:
            nxt = t + interval
            if not farm.dirty or farm.queued == 0 or farm.free_slots <= 0:
                ev = farm.next_event(arrivals=True, ends=True)
                if wake_at is not None and farm.queued:
                    ev = wake_at if ev is None else min(ev, wake_at)
                if loads is not None and next_load is not None and farm.queued:
                    ev = next_load if ev is None else min(ev, next_load)
                if ev is None:
                    break
                if ev > nxt:
                    nxt = _next_grid(ev - 1e-9, t0, interval)
            t = nxt
    if farm.jobs:  # jobs left waiting for good: say why, from one last plan
        snap = farm.snapshot()
        with gc_paused():
            last = plan(snap, config, usage_cache.get(farm.now, snap), farm.now, policy=opts.policy, index=index,
                        runs=runs)
        for job in snap.jobs:
            w = last.waits.get(job.id)
            if job.start_time is None:
                reason = w.reason if w is not None else Reason.START_FAILED
                res.unplaceable[reason] = res.unplaceable.get(reason, 0) + 1
    below.close(farm.now)
    mcore.close(farm.now)
    res.wait_reasons, res.wait_caps = why.close(), caps(config)
    _count_idle(held, farm, set(), farm.now)
    if watch is not None:
        watch.close(farm.now)
        res.pools = watch.figures()
        for name, why in pool_causes(config, index).items():  # no host or no package, and why
            res.pools[name]["why"] = why
    res.drain_waste = held.get("waste", 0.0) / (total * (farm.now - t0)) if total and farm.now > t0 else 0.0
    if loads is not None:
        loads.close(farm.now)
        res.throttled_s, res.throttle_log, res.level_log = loads.held_s, loads.log, loads.level_log
    # Jobs still running at the end count up to the end of the replay.
    for job in farm.jobs.values():
        if job.start_time is not None:
            vo = job.vo or config.vo_of(job.group)
            vo_area[vo] = vo_area.get(vo, 0.0) + job.cores * (farm.now - job.start_time)
    used_total = sum(vo_area.values())
    res.downtime_slot_s = closed(t0, farm.now)
    res.downtimes = [(max(s, t0) - t0, min(e, farm.now) - t0, n) for s, e, n in shut if s < farm.now and e > t0]
    res.closed_slots = sum(n.slots for n in nodes if n.name in res.closed_nodes)
    span_avail = total * (farm.now - t0)
    res.utilisation = used_total / span_avail if span_avail > 0 else 0.0
    res.queued_s = acc["q_avail"] / total if total else 0.0
    names = sorted(set(config.vos) | set(vo_area) | set(res.vo_jobs))
    res.vo = {vo: _vo_figures(vo, config, total, guarantees, res, vo_area.get(vo, 0.0), used_total,
                              below, vo_waiting.get(vo)) for vo in names}
    res.unguaranteed = [unguaranteed_text(config, vo, part, "ran {part} of the work") for vo, part in
                        unguaranteed(config, {vo: v["used"] for vo, v in res.vo.items()}, total)]
    # No job ever waited (an idle farm, event-driven cycles at once): the figure has no base.
    res.occupancy = acc["q_used"] / acc["q_avail"] if acc["q_avail"] else None
    res.occupancy_submitting = acc["s_used"] / acc["s_avail"] if acc["s_avail"] else res.occupancy
    if classes:
        # Farm Fill Factor: used / available slots while jobs wait (the slots a packing
        # policy leaves idle show here) -- the same integral as the occupancy.
        res.packing = {"farm": {"packing_index": None, "fill_factor": _round(res.occupancy)}}
        for c, (spi, sff, n) in pi_acc.items():
            res.packing[c] = {"packing_index": round(spi / n, 6) if n else None,
                              "fill_factor": round(sff / n, 6) if n else None,
                              "policy": classes[c].policy}
    res.diversity = acc["div"] / acc["busy"] if acc["busy"] else None  # no node ever busy: no figure
    res.span_s = farm.now - t0
    res.last_submit_s = span_end - t0
    res.t0 = t0
    res.timeline = tl
    res.multicore_why = diagnose(res, config, mcore)
    if split is not None:
        res.as_submitted = split.by_size()
    res.wall_s = time.perf_counter() - wall0
    if progress is not None:
        progress(1.0)
    return res


def _vo_figures(vo: str, config: Config, total: int, guarantees: dict[str, int], res: SimResult, area: float,
                used_total: float, below: BelowGuarantee, waiting: tuple[float, float] | None) -> dict:
    """One VO's line of the report. `used` is its part of the core-seconds run: once every job
    has run that is the workload's mix, whatever the policy, so the figures that answer "what
    did this configuration give the VO" are its waits and `slots_while_waiting` (its running
    slots / the farm's slots, averaged over the time it had jobs waiting)."""
    by_size = res.vo_wait.get(vo, {})
    started = sum(n for _, n in by_size.values())
    slot_s, secs = waiting or (0.0, 0.0)
    return {
        "share": round(config.vo(vo).share_fraction(total), 6),
        "guarantee": guarantees.get(vo, 0),
        "jobs": res.vo_jobs.get(vo, 0),
        "started": started,
        "used": round(area / used_total, 6) if used_total else 0.0,
        "wait_mean_s": round(sum(w for w, _ in by_size.values()) / started, 1) if started else None,
        "waiting_s": round(secs, 1),
        "slots_while_waiting": round(slot_s / (total * secs), 6) if secs and total else None,
        "below_guarantee_s": round(below.below_s.get(vo, 0.0), 1),
        "below_guarantee_capped_s": round(below.capped_s.get(vo, 0.0), 1),
        "wait_by_size": {c: {"jobs": n, "mean": round(w / n, 1)} for c, (w, n) in sorted(by_size.items())},
    }


class SplitWaits:
    """A `--split-multicore` run's waits, kept to report them by the size class of the jobs as
    submitted: a split job waited the mean of its pieces' waits (the mean wait of its cores'
    work), counted once its last piece started. Set beside the unsplit run, the classes' ratio
    says what fair share alone gives those jobs, without their shape (docs/design/drain.md)."""

    def __init__(self, pieces: dict[str, tuple[str, int]]) -> None:
        self.pieces = pieces
        """Piece id -> (id, cores) of the job it was split from (`TraceJob.split_of`)."""
        self.whole: dict[str, list[float]] = {}
        """Size class -> waits of the jobs not split."""
        self.parts: dict[str, list[float]] = {}
        """Id of a split job -> the waits of its pieces started so far."""

    def started(self, job_id: str, cls: str, wait: float) -> None:
        of = self.pieces.get(job_id)
        if of is None:
            self.whole.setdefault(cls, []).append(wait)
        else:
            self.parts.setdefault(of[0], []).append(wait)

    def by_size(self) -> dict[str, list[float]]:
        """Size class as submitted -> waits."""
        cores = dict(self.pieces.values())
        out = {c: list(w) for c, w in self.whole.items()}
        for parent, waits in self.parts.items():
            if len(waits) == cores[parent]:
                out.setdefault(size_class(cores[parent]), []).append(sum(waits) / len(waits))
        return out


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 6)


def size_class(cores: int) -> str:
    """The size classes of the report: 1 core, 2-8 cores, more than 8."""
    return "1" if cores <= 1 else "2-8" if cores <= 8 else ">8"


def _next_grid(t: float, t0: float, interval: float) -> float:
    """The first cycle time on the grid strictly after t."""
    return t0 + (math.floor((t - t0) / interval) + 1) * interval


class _UsageCache:
    """Decayed usage, recomputed when older than `refresh` simulated seconds."""

    def __init__(self, ledger: UsageLedger, refresh: float) -> None:
        self.ledger = ledger
        self.refresh = refresh
        self.at = -math.inf
        self.value = None

    def get(self, now: float, snap) -> "object":
        if self.value is None or now - self.at >= self.refresh:
            running = [j for j in snap.jobs if j.start_time is not None]
            self.value = self.ledger.usage(now, running)
            self.at = now
        return self.value


def _cycle(farm: SimulatedFarm, config: Config, usage_cache: _UsageCache, policy: str, res: SimResult,
           now: float, index: NodeIndex, guarantees: dict[str, int], loads=None,  # noqa: ANN001
           held: dict | None = None) -> float | None:
    """One planner cycle on the farm; returns when the plan could change with time alone."""
    snap = farm.snapshot()
    split = held.get("split") if held is not None else None
    usage = usage_cache.get(now, snap)
    c0 = time.perf_counter()
    with gc_paused():  # a farm's worth of objects and no cycles: spare the collector's scans
        p = plan(snap, config, usage, now, policy=policy, index=index,
                 throttles=loads.at(now) if loads is not None else (),
                 reservations=held.get("last") if held is not None else None,
                 drains=held.get("drains") if held is not None else None,
                 pool_gates=held.get("gates") if held is not None else None,
                 runs=held.get("runs") if held is not None else None)
    if held is not None:
        held["last"], held["drains"], held["gates"] = p.reservations, p.drains, p.pool_gates
        if held.get("pools") is not None:
            held["pools"].observe(p, now, farm.jobs, farm._meta, farm.free)
        if held.get("why") is not None:
            held["why"].observe(p, now)
        if held.get("mcore") is not None:
            held["mcore"].observe(p, now, farm.jobs)
    res.cycle_times.append(time.perf_counter() - c0)
    if loads is not None:
        loads.account(now, p, farm.jobs)
    res.cycles += 1
    farm.dirty = False
    if p.starts:
        res.share_violations += share_violations(p, snap, config, farm, guarantees, index,
                                                 held.get("runs") if held is not None else None)
    jobs = farm.jobs
    for s in p.starts:
        job = jobs[s.job_id]
        try:
            farm.run_job(s.job_id, s.placement)
        except ServerError:  # the farm refused it (as pbs_server can): counted; a bug is raised
            res.start_failures += 1
            continue
        res.started += 1
        wait = now - job.submit_time
        res.wait.append(wait)
        cls = size_class(job.cores)
        res.by_size.setdefault(cls, []).append((wait, farm._meta[s.job_id].runtime))
        by_size = res.vo_wait.setdefault(s.vo, {})
        waited, n = by_size.get(cls, (0.0, 0))
        by_size[cls] = (waited + wait, n + 1)
        if split is not None:
            split.started(s.job_id, cls, wait)
    if held is not None:
        _count_idle(held, farm, set(p.drains) | {n for r in p.reservations.values() for n in r.nodes}, now)
        if held.get("below") is not None:  # the VOs this cycle's starts touched: settled here
            held["below"].cycle(p, farm._meta, now, farm.vo_touched)
            farm.vo_touched.clear()
    return p.wake_at


def _count_idle(held: dict, farm: SimulatedFarm, nodes: set[str], now: float) -> None:
    """Idle slot-seconds on draining or reserved nodes (`nodes`, as the cycle at `now`
    leaves them), counted up to the next cycle."""
    t, idle = held.get("idle", (now, 0))
    held["waste"] = held.get("waste", 0.0) + idle * (now - t)
    held["idle"] = (now, sum(farm.free.get(n, 0) for n in nodes))


def spread_oversize(workload: list[TraceJob], largest: int) -> list[TraceJob]:
    """A trace job asking for more cores than the largest node ran spread over nodes (the
    archive's parallel machines, MPI): replay it as TORQUE's ``procs=N``. Jobs that fit one
    node keep their one-node request."""
    if all(tj.job.cores <= largest for tj in workload):
        return workload
    return [tj if tj.job.cores <= largest or tj.job.request is not None
            else tj._replace(job=tj.job._replace(request=Request(procs=tj.job.cores))) for tj in workload]
