"""Share violations: starts a VO at or above its guarantee got while a VO below it had a
waiting job that could have run on that node.

The check asks the plan's own admission (`mysched.core.hold.gates.as_planned`: the one list of
node checks, bound to the reservations, drains, pools and downtimes the plan reports), so it
judges the planner by the planner's rules, not by a copy of them.
"""

from __future__ import annotations

from mysched.backends.sim.farm import SimulatedFarm
from mysched.core.hold.gates import as_planned
from mysched.core.model.batch import Job, Snapshot
from mysched.core.model.plan import Plan
from mysched.core.model.reasons import BLOCKING, Reason
from mysched.core.place.admission import Ask
from mysched.core.place.nodeindex import NodeIndex
from mysched.core.rules.runtimes import RecentRuns
from mysched.core.settings import Config


def share_violations(p: Plan, snap: Snapshot, config: Config, farm: SimulatedFarm, guarantees: dict[str, int],
                     index: NodeIndex, runs: RecentRuns | None = None) -> int:
    """Starts given to a VO at/above its guarantee while a below-guarantee VO had a job
    waiting that the node would have admitted at that moment (every check of the planner's
    admission: node type, queue assignment, free cores, per-node limits, packing,
    reservations, drains, pools, downtimes). Hot-list starts bypass shares by design and are
    not counted.

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
        if s.reason != Reason.HOT and run.get(s.vo, 0) >= guarantees.get(s.vo, 0):
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
    admission, board = as_planned(p, snap, config, index, runs)
    usages, admits = board.usages, admission.admits
    asks: dict[tuple, Ask | None] = {}

    def ask(j: Job, vo: str) -> Ask | None:
        """What `j` asks of one node; None for a request of several nodes or cores anywhere,
        which no single node's room decides."""
        req = j.request
        k = (j.queue, vo, j.group, j.user, j.cores, req)
        a = asks.get(k, False)
        if a is False:
            r = index.rules(j.queue, vo, j.group)
            pc = index.job_class(j.queue, vo, j.group, j.user) if index.packing else None
            a = Ask(j, vo, pc.name if pc else None, j.cores, [board.groups[key] for key in r.keys],
                    r.vo_node_max, r.group_node_max)
            if req is not None and not req.simple:
                if len(req.parts) != 1 or req.parts[0].count != 1 or req.procs:
                    a = None
                else:
                    part = req.parts[0]
                    a = a._replace(cores=part.ppn, mem=req.mem_for(part.ppn, req.cores), props=part.properties,
                                   vmem=req.vmem_for(part.ppn, req.cores), excl=req.exclusive, host=part.host)
            asks[k] = a
        return a._replace(job=j) if a is not None else None

    running = dict(vo_running)
    count = 0
    # with reservations, draining nodes, pools or downtimes a node's taking a job depends on
    # its walltime too: a short job behind a long one of the same kind may fit where it did not
    by_wall = bool(p.reservations or p.draining_now or p.pool_gates or p.downtimes)
    for s in sorted(p.starts, key=lambda s: s.rank):
        name = s.placement[0][0]
        if s.reason != Reason.HOT and running.get(s.vo, 0) >= guarantees.get(s.vo, 0) and name in index.by_name:
            ld = usages[name]
            for vo, waiting in below_waiting.items():
                if vo == s.vo or running.get(vo, 0) >= guarantees.get(vo, 0):
                    continue
                seen = set()
                for j in waiting:
                    k = (j.queue, j.group, j.cores, j.user, j.walltime if by_wall else None)
                    if k in seen:
                        continue
                    seen.add(k)
                    a = ask(j, vo)
                    if a is not None and admits(ld, a):
                        count += 1
                        break
                else:
                    continue
                break
        running[s.vo] = running.get(s.vo, 0) + s.cores
        started = jobs.get(s.job_id)
        if started is not None:
            req = started.request
            for n, cores in s.placement:
                if n in index.by_name:
                    board.take(started, s.vo, index.job_class(started.queue, s.vo, started.group, started.user)
                               if index.packing else None, usages[n], cores,
                               req.mem_for(cores, started.cores) if req is not None else 0,
                               bool(req is not None and req.exclusive),
                               req.vmem_for(cores, started.cores) if req is not None else 0)
    return count
