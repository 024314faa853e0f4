"""Placement of whole requests: several nodes, named hosts, node properties, memory, nodes
of one's own, and cores spread over nodes (``procs``).

Jobs whose request is just "N cores on one node" take the planner's fast path
(`mysched.core.place.placement`); the others come here. Their nodes are taken best first in the
same ranking (diversity, then fewest used slots), so they share the farm on the same terms.
A request that no set of nodes of the farm could ever serve -- whatever ran there -- waits
with `never_fits` and the numbers, instead of waiting for ever in silence; one that only
nodes down or offline now could serve waits with `nodes_down` and their names.
"""

from __future__ import annotations

import heapq

from mysched.core.settings import PackingClass
from mysched.core.place.matching import augment, match_parts
from mysched.core.model.batch import Job
from mysched.core.model.plan import Wait
from mysched.core.model.request import NodePart, Request
from mysched.core.place.tally import Load


class RequestPlacing:
    """The planner's steps for whole requests (a mixin of `mysched.core.planner._Planner`)."""

    def _too_large(self, job: Job, vo: str) -> tuple[str, str, str]:
        """(reason, vo, detail) for a job on one node wider than every usable node: it waits
        `nodes_down` for a node it may use that is down or offline now, else `too_large`."""
        why = self._never_fits(job, vo, Request((NodePart(1, job.cores),)))
        if why is not None and why[0] == "nodes_down":
            return why[0], vo, why[1]
        return "too_large", vo, f"asks for {job.cores} cores; largest usable node has {self.max_slots}"

    def _never_fits(self, job: Job, vo: str, req: Request) -> tuple[str, str] | None:
        """Why no set of the farm's nodes could serve `req` now whatever ran there, as (reason,
        detail): `never_fits`, or `nodes_down` when nodes that are down or offline could (a
        request naming an offline host waits for it, it is not impossible). None if some could."""
        key = (job.queue, vo, job.group, req)
        memo = self._never_memo
        if key in memo:
            return memo[key]
        allowed = set(self.index.rules(job.queue, vo, job.group)[5])
        mine = [e for e in self.index.entries if e[2] in allowed]
        up = [e[0] for e in mine if e[4]]
        why = unfit(req, up)
        if why is not None:
            away = [e[0] for e in mine if not e[4]]
            if away and unfit(req, [e[0] for e in mine]) is None:
                serving = {n.name for pn in _needs(req) for n in _fitting(away, *pn)}
                names = [n.name for n in away if req.procs or n.name in serving]
                shown = ", ".join(names[:10]) + (f" and {len(names) - 10} more" if len(names) > 10 else "")
                why = ("nodes_down", f"{unfit(req, up, 'up')}; down or offline now: {shown}")
            else:
                why = ("never_fits", why)
        memo[key] = why
        return why

    def _closed_for(self, job: Job, vo: str, req: Request) -> set[str]:
        """The nodes within a downtime now, with room, that could serve a part of `req`."""
        closed = self._downtime_closed(job, vo, min((p.ppn for p in req.parts), default=1))
        if not closed or req.procs:
            return closed
        nodes = [self.index.by_name[n][0] for n in closed]
        return {n.name for part, need, vneed in _needs(req) for n in _fitting(nodes, part, need, vneed)}

    def _candidates(self, rules) -> list[tuple]:  # noqa: ANN001 - the planner's _Rules
        """Nodes with room the job may use, best first (pools merged by their ranking)."""
        pools = rules.pools
        keys = pools[0].ranking.keys if len(pools) == 1 else list(heapq.merge(*(p.ranking.keys for p in pools)))
        only = self._only
        if only is not None:
            return [k for k in keys if k[-1] in only]
        return keys

    def _place_request(self, job: Job, vo: str, pc: PackingClass | None, rules,  # noqa: ANN001
                       req: Request) -> list[tuple[Load, int]] | str:
        """Loads and cores per node for `req`, or why it does not fit now."""
        loads = self.loads
        by_name = self.index.by_name
        cls = pc.name if pc else None
        vmax, gmax = rules.vo_node_max, rules.group_node_max
        total = req.cores
        chosen: dict[str, int] = {}
        cands = None
        short_mem = set()
        """Nodes that had all else the job asks for there, but not the memory."""

        def ok(ld: Load, cores: int, part: NodePart | None) -> bool:
            if ld.name in chosen or not ld.usable or ld.free < cores:
                return False
            if req.exclusive and ld.njobs:
                return False
            if ld.reserved is not None and ld.reserved != cls:
                return False
            if ld.name in self.resv_nodes and not self._fits_before(job, self.resv_nodes[ld.name], ld, cores):
                return False
            if self._drain_blocks(job, ld.name):
                return False
            if ld.name in self.dt_ahead and self._downtime_shuts(ld.name, job.walltime):
                self._dt_refused.add(ld.name)
                return False
            if ld.name in self.pool_gate:
                why = self._pool_refuses(job, vo, ld.name, cores, req.mem_for(cores, total))
                if why is not None:
                    self._pool_refused[why] = self._pool_refused.get(why, 0) + 1
                    return False
            if vmax is not None and ld.vos.get(vo, 0) >= vmax:
                return False
            if gmax is not None and ld.groups.get(job.group, 0) >= gmax:
                return False
            if part is not None and part.properties and not part.properties <= by_name[ld.name][0].properties:
                return False
            if ld.mem_free() < req.mem_for(cores, total) or ld.vmem_free() < req.vmem_for(cores, total):
                short_mem.add(ld.name)
                return False
            return True

        def lacking() -> str:
            n = len(short_mem - chosen.keys())
            return f" ({n} node(s) with the cores lack the memory)" if n else ""

        # Each part's nodes with room, in rank order (as many as all parts take), then distinct
        # nodes for all parts at once by a matching, the most constrained parts (named hosts,
        # properties, more cores) first: taken part by part in rank order, a plain part took the
        # one node a later host or property part needed, and nodes=1:ppn=2+1:ppn=2:gpu waited for
        # ever on an idle farm. The nodes go to pbs_runjob in the request's order.
        parts = req.parts
        wanted = sum(p.count for p in parts)
        fit: list[list[str]] = []
        for part in parts:
            if part.host is not None:
                e = by_name.get(part.host)
                if e is None or self.pool_by_key[e[2]] not in rules.pools or not ok(loads[part.host], part.ppn, part):
                    return f"{part}: host {part.host} has no room for it now{lacking()}"
                fit.append([part.host])
                continue
            if cands is None:
                cands = self._candidates(rules)
            names = []
            for key in cands:
                ld = loads[key[-1]]
                if ok(ld, part.ppn, part):
                    names.append(ld.name)
                    if len(names) == wanted:
                        break
            if len(names) < part.count:
                return f"{part}: {len(names)} of {part.count} node(s) with room now{lacking()}"
            fit.append(names)
        order = sorted(range(len(parts)), key=lambda i: (parts[i].host is None, -len(parts[i].properties),
                                                         -parts[i].ppn, i))
        owner: dict[str, int] = {}
        for i in order:
            for _ in range(parts[i].count):
                if not augment(i, fit, owner):
                    return f"{req}: no node of its own now for each of its parts"
        for name, i in sorted(owner.items(), key=lambda kv: kv[1]):
            chosen[name] = parts[i].ppn
        if req.procs:
            if cands is None:
                cands = self._candidates(rules)
            left = req.procs
            for key in cands:
                ld = loads[key[-1]]
                take = min(ld.free, left)
                while take and not ok(ld, take, None):
                    take -= 1
                if take:
                    chosen[ld.name] = take
                    left -= take
                    if not left:
                        break
            if left:
                return f"procs={req.procs}: {req.procs - left} core(s) free now on the nodes it may use{lacking()}"
        return [(loads[name], cores) for name, cores in chosen.items()]

    def _try_request(self, job: Job, vo: str, reason: str, rules, pc: PackingClass | None) -> str | None:  # noqa: ANN001
        """`_try` for a whole request: place it on its nodes, or wait with why."""
        req = job.request
        key = (job.queue, vo, job.group, req, pc.name if pc else None,
               job.walltime if self.resv_nodes or self.draining or self.pool_on or self.dt_ahead else None)
        mine = job.id in self.out.reservations  # its own reserved nodes: the class's wait is not its
        cached = None if mine else self._class_cache.get(key)
        if cached is not None:
            self._wait(job, cached.reason, vo, cached.detail, cached.nodes_rejected)
            return cached.reason
        got = None
        self._pool_refused.clear()
        self._dt_refused = set()
        if self.pool_on:  # an owner within its guarantee: its pool's guarded hosts first
            self._only = self._pool_prefer(job, vo)
            if self._only:
                got = self._place_request(job, vo, pc, rules, req)
            self._only = None
        if got is None or isinstance(got, str):
            got = self._place_request(job, vo, pc, rules, req)
        if isinstance(got, str):
            reason = "no_free_slot"
            shut = self._dt_refused | self._closed_for(job, vo, req)
            if shut:  # room there was, or will be, but a scheduled downtime comes first
                reason = "downtime"
                got += f"; {len(shut)} node(s) refused it: {self._downtime_detail(job, shut)}"
            elif self._pool_refused:  # room there was, but a guarantee pool kept it
                reason = max(sorted(self._pool_refused), key=self._pool_refused.get)
                got += f"; {self._pool_refused[reason]} node(s) with room refused it ({self._pool_detail(job, vo, reason)})"
            w = Wait(job.id, reason, 0, 0.0, got, None)
            if not mine:
                self._class_cache[key] = w
            self._wait(job, w.reason, vo, w.detail)
            return w.reason
        self._commit_places(job, vo, pc, got, reason)
        return None


def _fitting(nodes: list, part: NodePart, need: int, vneed: int) -> list:
    """The nodes of `nodes` (model Nodes) that could serve one node of `part` (`need`, `vneed`
    bytes of memory), were they free. Runs per node for every distinct request of a cycle."""
    ppn, props, host = part.ppn, part.properties, part.host
    return [n for n in nodes if (host is None or n.name == host) and n.slots >= ppn and props <= n.properties
            and (n.mem is None or n.mem >= need) and (n.vmem is None or n.vmem >= vneed)]


def _needs(req: Request) -> list[tuple[NodePart, int, int]]:
    """Each part of `req` with the memory and virtual memory one of its nodes needs."""
    total = req.cores
    return [(part, req.mem_for(part.ppn, total), req.vmem_for(part.ppn, total)) for part in req.parts]


def unfit(req: Request, nodes: list, scope: str = "") -> str | None:
    """Why `nodes` (model Nodes), all free, could not serve `req` (None: they could);
    `scope`: what the nodes are ("up"), else the farm's nodes the job may use."""
    for part, need, vneed in _needs(req):
        fit = len(_fitting(nodes, part, need, vneed))
        if fit < part.count:
            what = f"host {part.host}" if part.host else f"{part.count} node(s)"
            whose = f"node(s) {scope} it may use could serve it" if scope else \
                "node(s) of the farm it may use could ever serve it"
            return (f"{part}: {fit} {whose} ({what} with "
                    f"{part.ppn} core(s)" + (f", properties {','.join(sorted(part.properties))}"
                                             if part.properties else "") + (f", {need >> 20} MB" if need else "")
                    + (f", {vneed >> 20} MB virtual" if vneed else "") + " needed)")
    if len(req.parts) > 1:  # each part fits somewhere: but all at once, each on a node of its own?
        serve = [[n.name for n in _fitting(nodes, part, need, vneed)] for part, need, vneed in _needs(req)]
        if match_parts(req.parts, serve, {n.name: n.slots for n in nodes}) is None:
            return (f"{req}: its parts cannot each have a node of its own among the node(s) "
                    f"{scope + ' ' if scope else ''}it may use")
    if req.procs:
        slots = sum(n.slots for n in nodes)
        if slots < req.procs:
            return f"procs={req.procs}: the nodes {scope + ' ' if scope else ''}it may use have {slots} core(s) in all"
    return None
