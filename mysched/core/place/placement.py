"""Placement: which node a job goes to, and, when none will do, why each node was refused.

The planner's pools keep nodes ranked by score (`mysched.core.place.tally`), so a placement scans
from the best node and usually stops at the first: for mysched the first node without a
job of the user (highest diversity after placement, then fewest used slots); failing that,
the node with the fewest of the user's jobs.
"""

from __future__ import annotations

from typing import NamedTuple

from mysched.core.rules.access import refusal
from mysched.core.settings import PackingClass
from mysched.core.place.nodeindex import NodeIndex
from mysched.core.model.batch import Job, JobState
from mysched.core.model.plan import Wait
from mysched.core.model.reasons import NODE_REJECTIONS
from mysched.core.place.tally import Load, Pool, Tally


class _Loads(dict):
    """This plan's per-node loads, made on first use: a copy of the tally's load for a node
    that runs jobs, a fresh one for an idle node."""

    def __init__(self, index: NodeIndex, base: dict[str, Load], pools: dict) -> None:
        super().__init__()
        self.index = index
        self.base = base
        self.pools = pools

    def __missing__(self, name: str) -> Load:
        b = self.base.get(name)
        if b is not None:
            load = b.copy()
        else:
            node, _ntype, key, usable, _counted = self.index.by_name[name]
            load = Load(node, key, usable)
        load.pool = self.pools[load.key]
        self[name] = load
        return load


class _Rules(NamedTuple):
    """Limits and candidate pools shared by the jobs of one (queue, VO, group)."""

    queue_max: int | None
    vo_max: int | None
    group_max: int | None
    vo_node_max: int | None
    group_node_max: int | None
    pools: list[Pool]


class Placing:
    """The planner's placement steps (a mixin of `mysched.core.planner._Planner`, whose
    per-plan state -- loads, pools, rules -- they read)."""

    def _reservations(self, t: Tally) -> None:
        """Exclusive packing: a node running jobs of an exclusive class, the latest started
        within the class TTL, is reserved for that class -- but only as many such nodes as
        the class needs: fullest of the class first, until their free slots cover the class's
        waiting jobs. The others are released at once (their class jobs run on; other jobs
        may fill their free slots), so the class never holds room it has no job for."""
        if not self.exclusive_packing:
            return
        packing = self.packing
        held: dict[str, list[tuple[int, float, str]]] = {}
        for name, base in t.loads.items():
            best = None
            for cls in base.class_times:
                pc = packing.get(cls)
                if pc is None or pc.policy != "exclusive" or not base.classes.get(cls):
                    continue
                start = base.class_start(cls)
                if start + pc.ttl > self.now and (best is None or (start, cls) > (best[1], best[0])):
                    best = (cls, start)
            if best is not None:
                held.setdefault(best[0], []).append((base.classes[best[0]], best[1], name))
        if not held:
            return
        waiting: dict[str, int] = {}
        job_class = self.index.job_class
        for job, vo in self.queued:
            if job.state is JobState.QUEUED:
                pc = job_class(job.queue, vo, job.group, job.user)
                if pc is not None and pc.name in held:
                    waiting[pc.name] = waiting.get(pc.name, 0) + job.cores
        for cls, nodes in held.items():
            want = waiting.get(cls, 0)
            room = 0
            for _n, start, name in sorted(nodes, key=lambda x: (-x[0], -x[1], x[2])):
                if room >= want:
                    break  # the class has room enough for what waits: release the rest
                ld = self.loads[name]
                ld.reserved = cls
                self.out.node_classes[name] = cls
                room += max(0, ld.free)
                self._wake(start + packing[cls].ttl)
    def _close_node(self, name: str) -> None:
        """Take node `name` out of this plan: unusable, and out of every ranking (overloaded
        nodes, nodes in a scheduled downtime)."""
        ld = self.loads[name]
        ld.usable = False
        ld.pool.ranking.drop(name)
        for r in ld.pool.by_class.values():
            r.drop(name)

    def _pools(self, queue: str, vo: str, group: str) -> list[Pool]:
        """The pools a job of the (queue, VO, group) may use."""
        k = (queue, vo, group)
        got = self._pools_for.get(k)
        if got is None:
            by_key = self.pool_by_key
            got = self._pools_for[k] = [by_key[pk] for pk in self.index.rules(queue, vo, group)[5]]
        return got

    def _scan(self, keys: list[tuple], job: Job, vo: str, cls: str | None, rules: _Rules,
              avoid: str | None = None, held_only: bool = False) -> tuple | None:
        """The best node along a sorted ranking for `job`, as (sort key, load), or None.

        For mysched the first node without a job of the user wins (the ranking is by
        diversity); failing that the one with the fewest of the user's jobs. `avoid`: skip
        nodes already running that class; `held_only`: only nodes reserved for `cls`."""
        loads = self.loads
        cores = job.cores
        vmax, gmax = rules.vo_node_max, rules.group_node_max
        group = job.group
        fast = self.policy != "mysched"
        user = job.user
        fallback = None
        resv = self.resv_nodes
        drain = self.draining if cores < self.mc_min else None
        dt = self.dt_ahead
        only = self._only
        gate = self.pool_gate
        for key in keys:
            ld = loads[key[-1]]
            if held_only and ld.reserved != cls:
                continue
            if only is not None and ld.name not in only:
                continue
            if (ld.free < cores or (ld.reserved is not None and ld.reserved != cls)
                    or (vmax is not None and ld.vos.get(vo, 0) >= vmax)
                    or (gmax is not None and ld.groups.get(group, 0) >= gmax)
                    or (avoid is not None and ld.classes.get(avoid, 0) > 0)
                    or (resv and ld.name in resv and not self._fits_before(job, resv[ld.name], ld))
                    or (drain and ld.name in drain and self._drain_blocks(job, ld.name))
                    or (dt and ld.name in dt and self._downtime_shuts(ld.name, job.walltime))
                    or (gate and ld.name in gate and self._pool_refuses(job, vo, ld.name, cores) is not None)):
                continue
            if fast:
                return (key, ld)
            uj = ld.users.get(user, 0)
            if uj == 0:
                return ((0,) + key, ld)
            fk = (uj, -len(ld.users) / (ld.njobs + 1), ld.used, ld.name)
            if fallback is None or fk < fallback[0]:
                fallback = (fk, ld)
        return fallback

    def _place(self, job: Job, vo: str, pc: PackingClass | None, rules: _Rules) -> Load | None:
        cls = pc.name if pc else None
        pools = rules.pools
        scan = self._scan
        if pc is None and len(pools) == 1:
            got = scan(pools[0].ranking.keys, job, vo, None, rules)
            return got[1] if got is not None else None
        best = None
        if pc is None or pc.policy == "none":
            # Default jobs: no preference. Spreading class: prefer nodes without the class.
            for avoid in ((cls, None) if pc is not None else (None,)):
                for pool in pools:
                    got = scan(pool.ranking.keys, job, vo, cls, rules, avoid)
                    if got is not None and (best is None or got[0] < best[0]):
                        best = got
                if best is not None:
                    return best[1]
            return None
        # relaxed / exclusive: prefer nodes already running the class -- for exclusive, first
        # those held for it (the class holds only the nodes it needs).
        for held_only in ((True, False) if pc.policy == "exclusive" else (False,)):
            for pool in pools:
                r = pool.by_class.get(cls)
                got = scan(r.keys, job, vo, cls, rules, held_only=held_only) if r is not None else None
                if got is not None and (best is None or got[0] < best[0]):
                    best = got
            if best is not None:
                return best[1]
        for pool in pools:
            got = scan(pool.ranking.keys, job, vo, cls, rules)
            if got is not None and (best is None or got[0] < best[0]):
                best = got
        return best[1] if best is not None else None

    def _explain(self, job: Job, vo: str, pc: PackingClass | None) -> Wait:
        """Count, over all nodes, why each one was rejected for this job."""
        cores = job.cores
        cls = pc.name if pc else None
        eligible = {id(p) for p in self._pools(job.queue, vo, job.group)}
        refusals: dict[tuple, str] = {}
        vmax = self.cfg.vos.get(vo)
        vmax = vmax.max_per_node if vmax is not None else None
        gmax = self.cfg.groups.get(job.group)
        gmax = gmax.max_per_node if gmax is not None else None
        counts: dict[str, int] = {}
        dt_hit: dict[str, str] = {}  # window -> a node it kept the job off
        held_for: set[str] = set()  # the jobs whose reservations kept it off
        loads, base, pools = self.loads, self.tally.loads, self.pool_by_key
        for name in self.index.by_name:
            ld = loads.get(name) or base.get(name) or loads[name]  # read only: no copy
            pool = pools[ld.key]
            if name in self.overloaded:
                r = "node_load" if ld.free >= cores else "no_free_slot"
            elif not ld.usable and (name not in self.dt_closed or not self.index.by_name[name][3]):
                r = "node_down"
            elif ld.free < cores:
                r = "no_free_slot"
            elif id(pool) not in eligible:
                r = refusals.get(ld.key)
                if r is None:
                    r = refusals[ld.key] = refusal(self.cfg, ld.key, job.queue)
            elif self._downtime_shuts(name, job.walltime):
                r = "downtime"
                dt_hit.setdefault((self.dt_closed.get(name) or self.dt_ahead[name]).name, name)
            elif ld.reserved is not None and ld.reserved != cls:
                r = "packing"
            elif name in self.resv_nodes and not self._fits_before(job, self.resv_nodes[name], ld):
                r = "reserved"
                held_for.add(self.resv_nodes[name][1])
            elif self._drain_blocks(job, name):
                r = "draining"
            elif name in self.pool_gate and (pr := self._pool_refuses(job, vo, name, cores)) is not None:
                r = pr
            elif vmax is not None and ld.vos.get(vo, 0) >= vmax:
                r = "vo_node_limit"
            elif gmax is not None and ld.groups.get(job.group, 0) >= gmax:
                r = "group_node_limit"
            else:
                r = "no_free_slot"
            counts[r] = counts.get(r, 0) + 1
        roomy = {k: v for k, v in counts.items() if k not in ("node_down", "no_free_slot")}
        if roomy:
            reason = max(sorted(roomy), key=lambda k: roomy[k])
            detail = f"{roomy[reason]} node(s) with room rejected: {NODE_REJECTIONS.get(reason, reason)}"
            if reason in ("pool_held", "loan_refused"):
                detail += f" ({self._pool_detail(job, vo, reason)})"
            elif reason == "downtime":
                detail += f" ({self._downtime_detail(job, dt_hit.values())})"
            elif reason == "reserved":
                detail += f" (for {', '.join(sorted(held_for)[:3])}{', ...' if len(held_for) > 3 else ''})"
        else:
            reason = "no_free_slot"
            detail = f"no usable node has {cores} free core(s)"
        return Wait(job.id, reason, 0, 0.0, detail, counts)
