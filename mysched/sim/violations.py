"""Share violations: starts a VO at or above its guarantee got while a VO below it had a
waiting job that could have run on that node.

The check asks the planner's own `NodeIndex` which nodes a job may use, so it judges the
planner by the planner's rules, not by a copy of them.
"""

from __future__ import annotations

import math

from mysched.backends.sim.farm import SimulatedFarm
from mysched.core.settings import Config
from mysched.core.place.nodeindex import NodeIndex
from mysched.core.model.batch import Job
from mysched.core.model.plan import Plan
from mysched.core.model.reasons import BLOCKING
from mysched.core.hold.reservations import reserved_cores


def _pool_refuses(p: Plan, config: Config, gate: tuple[str, str], j: Job, vo: str, host: str,
                  free_now: int) -> bool:
    """Does a guarantee pool keep this host from job `j` (the planner's rules, read from the
    plan's pool figures)?"""
    pool = next(x for x in config.pools if x.name == gate[0])
    st = p.pools[gate[0]]
    c = pool.consumer_of(j.queue, vo, j.group)
    if c is not None:
        row = next(r for r in st["consumers"] if r["consumer"] == c.name and r["kind"] == c.kind)
        mem = j.request.mem_for(j.cores, j.cores) if j.request is not None else 0
        if row["guaranteed"] - row["allocated"] >= pool.packages(j.cores, mem):
            return False
    if pool.loan.restricted and any(r["owed"] for r in st["consumers"]):
        return True
    if pool.loan.refuses(j.queue, j.walltime) is not None:
        return True
    end = p.pool_horizons.get(host)
    need, slots = p.pool_need.get(host, (0, 0))
    return gate[1] == "held" and (end is None or p.now + j.walltime > end) and free_now - need * slots < j.cores


def share_violations(p: Plan, snap, config: Config, farm: SimulatedFarm, guarantees: dict[str, int],
                index: NodeIndex) -> int:
    """Starts given to a VO at/above its guarantee while a below-guarantee VO had a job
    waiting that could have run on that node (node type, queue assignment, free cores,
    per-node limits, packing). Hot-list starts bypass shares by design and are not counted.

    Called before the starts are made, so the farm's counts are the plan's starting point."""
    if not p.waits:
        return 0  # nobody was left waiting
    vo_running, vo_queued = farm.vo_running, farm.vo_queued
    below_waiting: dict[str, list[Job]] = {vo: [] for vo, g in guarantees.items()
                                           if vo_queued.get(vo, 0) and vo_running.get(vo, 0) < g}
    if not below_waiting:
        return 0
    # Cheap test first: did any start go to a VO already at its guarantee?
    run = dict(vo_running)
    over = False
    for s in sorted(p.starts, key=lambda s: s.rank):
        if s.reason != "hot" and run.get(s.vo, 0) >= guarantees.get(s.vo, 0):
            over = True
            break
        run[s.vo] = run.get(s.vo, 0) + s.cores
    if not over:
        return 0
    jobs = {j.id: j for j in snap.jobs}
    for w in p.waits.values():
        if w.reason in BLOCKING:
            continue
        j = jobs.get(w.job_id)
        if j is None:
            continue
        vo = j.vo or config.vo_of(j.group)
        lst = below_waiting.get(vo)
        if lst is not None:
            lst.append(j)
    running = dict(vo_running)
    guarantee = guarantees
    free = dict(farm.free)
    # Per-node VO and group job counts, for the per-node limits (built only when needed).
    per_node: dict[str, dict[str, int]] = {}
    for j in snap.jobs:
        if j.start_time is not None:
            jvo = j.vo or config.vo_of(j.group)
            for name, _ in j.placement:
                d = per_node.setdefault(name, {})
                d[("v", jvo)] = d.get(("v", jvo), 0) + 1
                d[("g", j.group)] = d.get(("g", j.group), 0) + 1

    # A node's first reservation in the plan is the one its starts met: a reservation made
    # later (after the cycle's starts, on the nodes of a reserved job that started) refused nothing.
    held: dict[str, tuple[float, str, int | None, str | None, str | None]] = {}
    for r in p.reservations.values():
        rj = jobs.get(r.job_id)
        rvo, rgroup = (rj.vo or config.vo_of(rj.group), rj.group) if rj is not None else (None, None)
        for n, need in zip(r.nodes, reserved_cores(rj, r.nodes) if rj is not None else [None] * len(r.nodes)):
            held.setdefault(n, (r.start, r.job_id, need, rvo, rgroup))
    exclusive = any(pc.policy == "exclusive" and pc.ttl > 0 for pc in config.packing)
    ends: dict[str, list[tuple[float, int]]] = {}  # by requested walltime, as the planner's reservations
    if held:
        for j in snap.jobs:
            if j.start_time is not None and any(n in held for n, _ in j.placement):
                end = max(p.now, j.start_time + j.walltime) if j.walltime is not None else math.inf
                for name, c in j.placement:
                    ends.setdefault(name, []).append((end, c))

    def room_beside(j: Job, vo: str, vmax: int | None, gmax: int | None, name: str, h: tuple) -> bool:
        # a reserved node's cores beyond what its reservation needs there, at its start, for a
        # job that cannot bar the reserved one otherwise (the planner's `Reserving._fits_before`)
        if h[2] is None or exclusive or (j.request is not None and j.request.exclusive) \
                or (vo == h[3] and vmax is not None) or (j.group == h[4] and gmax is not None):
            return False
        at = free[name] if h[0] <= p.now else free[name] + sum(c for end, c in ends.get(name, ()) if end <= h[0])
        return min(at, index.by_name[name][0].slots) - j.cores >= h[2]

    mc_min = config.drain.min_cores

    def fits(j: Job, vo: str, name: str) -> bool:
        # The planner's own rules: the pools (queue assignment, node type), per-node limits,
        # reservations (EASY backfill), the multi-core partition and scheduled downtimes.
        *_, vmax, gmax, pool_keys = index.rules(j.queue, vo, j.group)
        if j.cores > free[name] or index.by_name[name][2] not in pool_keys:
            return False
        h = held.get(name)
        if h is not None and h[1] != j.id and not (j.walltime is not None and p.now + j.walltime <= h[0]) \
                and not room_beside(j, vo, vmax, gmax, name, h):
            return False
        if (name in p.draining_now and j.cores < mc_min
                and not (j.walltime is not None and p.now + j.walltime <= p.drain_horizons.get(name, p.now))):
            return False
        dt = p.downtimes.get(name)  # a scheduled downtime there, in force or ahead
        if dt is not None and (p.now >= dt[0] or j.walltime is None or p.now + j.walltime > dt[0]):
            return False
        gate = p.pool_gates.get(name)
        if gate is not None and _pool_refuses(p, config, gate, j, vo, name, free[name]):
            return False
        reserved = p.node_classes.get(name)
        if reserved is not None:
            pc = index.job_class(j.queue, vo, j.group, j.user)
            if pc is None or pc.name != reserved:
                return False
        d = per_node.get(name, {})
        if vmax is not None and d.get(("v", vo), 0) >= vmax:
            return False
        if gmax is not None and d.get(("g", j.group), 0) >= gmax:
            return False
        return True

    count = 0
    # with reservations, draining nodes, pools or downtimes a node's taking a job depends on
    # its walltime too: a short job behind a long one of the same kind may fit where it did not
    by_wall = bool(held or p.draining_now or p.pool_gates or p.downtimes)
    for s in sorted(p.starts, key=lambda s: s.rank):
        name = s.placement[0][0]
        if s.reason != "hot" and running.get(s.vo, 0) >= guarantee.get(s.vo, 0):
            for vo, waiting in below_waiting.items():
                if vo == s.vo or running.get(vo, 0) >= guarantee.get(vo, 0):
                    continue
                seen = set()
                for j in waiting:
                    k = (j.queue, j.group, j.cores, j.user, j.walltime if by_wall else None)
                    if k in seen:
                        continue
                    seen.add(k)
                    if fits(j, vo, name):
                        count += 1
                        break
                else:
                    continue
                break
        running[s.vo] = running.get(s.vo, 0) + s.cores
        free[name] -= s.cores
        d = per_node.setdefault(name, {})
        d[("v", s.vo)] = d.get(("v", s.vo), 0) + 1
        d[("g", s.group)] = d.get(("g", s.group), 0) + 1
    return count
