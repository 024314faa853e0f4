"""Placement of whole requests: several nodes, named hosts, node properties, memory, nodes
of one's own, and cores spread over nodes (``procs``).

Jobs whose request is just "N cores on one node" take the planner's fast path
(`mysched.core.place.placement`); the others come here. Their nodes are taken best first in the
same ranking (for mysched nodes of a type closed to other groups first, then diversity, then
fewest used slots), so they share the farm on the same terms.
A request that no set of nodes of the farm could ever serve -- whatever ran there -- waits
with `never_fits` and the numbers, instead of waiting for ever in silence; one that only
nodes down or offline now could serve waits with `nodes_down` and their names.
"""

from __future__ import annotations

import heapq

from typing import Callable

from mysched.core.model.reasons import Reason
from mysched.core.model.batch import Job
from mysched.core.model.request import NodePart, Request
from mysched.core.place.admission import Admission, Ask
from mysched.core.place.board import Board
from mysched.core.place.matching import augment, match_parts
from mysched.core.place.nodeindex import NodeIndex
from mysched.core.place.nodeusage import NodeUsage
from mysched.core.rules.limits import JobRules


class RequestPlacer:
    """Places whole requests on one plan's nodes, asking the checks of `admission` node by node."""

    def __init__(self, index: NodeIndex, board: Board, admission: Admission,
                 keys_of: Callable[[str, str, str], tuple], closed_first: bool = False) -> None:
        self.index = index
        self.closed_first = closed_first
        """Nodes of a closed type first (`mysched.core.place.placement.place`, the mysched policy)."""
        self.board = board
        self.admission = admission
        self.keys_of = keys_of
        self._never_memo: dict[tuple, tuple[str, str] | None] = {}
        self.refused: dict[str, int] = {}
        """Reason -> nodes with room that refused the last request placed (downtime, pools)."""
        self.refused_nodes: dict[str, set[str]] = {}

    def too_large(self, job: Job, vo: str) -> tuple[str, str, str]:
        """(reason, vo, detail) for a job on one node wider than every usable node: it waits
        `nodes_down` for a node it may use that is down or offline now, else `too_large`."""
        why = self.never_fits(job, vo, Request((NodePart(1, job.cores),)))
        if why is not None:
            reason, detail = why
            if reason == Reason.NODES_DOWN:
                return reason, vo, detail
        return Reason.TOO_LARGE, vo, f"asks for {job.cores} cores; largest usable node has {self.index.max_slots}"

    def never_fits(self, job: Job, vo: str, req: Request) -> tuple[str, str] | None:
        """Why no set of the farm's nodes could serve `req` now whatever ran there, as (reason,
        detail): `never_fits`, or `nodes_down` when nodes that are down or offline could (a
        request naming an offline host waits for it, it is not impossible). None if some could."""
        key = (job.queue, vo, job.group, req)
        memo = self._never_memo
        if key in memo:
            return memo[key]
        allowed = set(self.keys_of(job.queue, vo, job.group))
        mine = [e for e in self.index.entries if e.key in allowed]
        up = [e.node for e in mine if e.counted]
        why = unfit(req, up)
        if why is not None:
            away = [e.node for e in mine if not e.counted]
            if away and unfit(req, [e.node for e in mine]) is None:
                serving = {n.name for pn in _needs(req) for n in _fitting(away, *pn)}
                names = [n.name for n in away if req.procs or n.name in serving]
                shown = ", ".join(names[:10]) + (f" and {len(names) - 10} more" if len(names) > 10 else "")
                why = (Reason.NODES_DOWN, f"{unfit(req, up, 'up')}; down or offline now: {shown}")
            else:
                why = (Reason.NEVER_FITS, why)
        memo[key] = why
        return why

    def serving(self, req: Request, names: set[str]) -> set[str]:
        """The nodes of `names` that could serve a part of `req`, were they free."""
        if not names or req.procs:
            return names
        nodes = [self.index.by_name[n].node for n in names]
        return {n.name for part, need, vneed in _needs(req) for n in _fitting(nodes, part, need, vneed)}

    def _candidates(self, rules: JobRules, only: set[str] | None) -> list[tuple]:
        """Nodes with room the job may use, best first (node groups merged by their ranking)."""
        groups = rules.groups
        if len(groups) == 1:
            keys = groups[0].ranking.keys
        elif self.closed_first and rules.tiers is not None:
            keys = [k for tier in rules.tiers for k in heapq.merge(*(g.ranking.keys for g in tier))]
        else:
            keys = list(heapq.merge(*(g.ranking.keys for g in groups)))
        if only is not None:
            return [k for k in keys if k[-1] in only]
        return keys

    def place(self, job: Job, vo: str, cls: str | None, rules: JobRules, req: Request,
              only: set[str] | None = None) -> list[tuple[NodeUsage, int]] | str:
        """Usages and cores per node for `req`, or why it does not fit now. The nodes that
        refused it for a reason a component gives (downtime, pools) are in `refused`."""
        usages = self.board.usages
        by_name = self.index.by_name
        first = self.admission.first
        total = req.cores
        chosen: dict[str, int] = {}
        cands = None
        short_mem: set[str] = set()
        """Nodes that had all else the job asks for there, but not the memory."""
        refused, refused_nodes = self.refused, self.refused_nodes
        base = Ask(job, vo, cls, 0, rules.groups, rules.vo_node_max, rules.group_node_max, 0, 0, req.exclusive)

        def ok(ld: NodeUsage, cores: int, part: NodePart | None) -> bool:
            if ld.name in chosen:
                return False
            a = base._replace(cores=cores, mem=req.mem_for(cores, total), vmem=req.vmem_for(cores, total),
                              props=part.properties if part is not None else frozenset(),
                              host=part.host if part is not None else None)
            r = first(ld, a)
            if r is None:
                return True
            if r == Reason.NODE_MEMORY:
                short_mem.add(ld.name)
            elif r in (Reason.DOWNTIME, Reason.POOL_HELD, Reason.LOAN_REFUSED):
                refused[r] = refused.get(r, 0) + 1
                refused_nodes.setdefault(r, set()).add(ld.name)
            return False

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
                if e is None or self.board.groups[e.key] not in rules.groups or not ok(usages[part.host], part.ppn, part):
                    return f"{part}: host {part.host} has no room for it now{lacking()}"
                fit.append([part.host])
                continue
            if cands is None:
                cands = self._candidates(rules, only)
            names = []
            for key in cands:
                ld = usages[key[-1]]
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
                cands = self._candidates(rules, only)
            left = req.procs
            for key in cands:
                ld = usages[key[-1]]
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
        return [(usages[name], cores) for name, cores in chosen.items()]


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
