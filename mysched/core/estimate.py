"""When will a waiting job start? An estimate from requested walltimes (ANL's spwhen, MAUI's showstart).

Pure: running jobs free their cores at start + requested walltime; the jobs ranked ahead of
the target in the last cycle take the earliest cores first (each for its own walltime); the
target starts at the earliest time its whole request has room at once on nodes it may use
(`mysched.core.rules.access`): each part's cores on as many distinct nodes with its properties
(or on the host it names), and ``procs`` cores anywhere, on nodes whose scheduled downtimes
its walltime would not run into. Memory is not part of it (the nodes' cores are). Without
walltimes there is no estimate, and the answer says so.
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from typing import Iterable, Sequence

from mysched.core.place.admission import Ask, IdleAdmission
from mysched.core.place.nodeindex import NodeEntry
from mysched.core.rules.access import NodeKey, admits, node_key, node_type, refusal
from mysched.core.settings import Config
from mysched.core.model.windows import clear_start, windows_by_node
from mysched.core.model.batch import Job, Node
from mysched.core.place.matching import earliest, match_parts
from mysched.core.model.request import NodePart
from mysched.core.hold.reservations import reserved_cores


@dataclass(frozen=True)
class Estimate:
    """`start` is a Unix time, or None with `why` saying why it cannot be given."""

    start: float | None
    exact: bool
    why: str
    ahead: int
    nodes: tuple[str, ...] = ()
    """The nodes it would start on then, by this estimate."""


def estimate_start(job: Job, vo: str, running: Iterable[Job], ahead: Sequence[tuple[Job, str]],
                   nodes: Iterable[Node], config: Config, now: float) -> Estimate:
    """The expected start of queued `job` (of `vo`), `job.cores` on any one node; `ahead` are
    the (job, VO) pairs that go before it, in order, and could start (not blocked)."""
    return estimate_request(job, vo, (NodePart(1, job.cores),), 0, running, ahead, nodes, config, now)


def estimate_request(job: Job, vo: str, parts: Sequence[NodePart], procs: int, running: Iterable[Job],
                     ahead: Sequence[tuple[Job, str]], nodes: Iterable[Node], config: Config,
                     now: float, reserved: Sequence[tuple[Job, float, tuple[str, ...]]] = ()) -> Estimate:
    """The expected start of queued `job` (of `vo`) asking for node `parts` and `procs` cores
    anywhere (on other nodes than the parts', as the planner places them): the earliest time
    all of it has room at once. `reserved`: other jobs' reservations (job, start, nodes) --
    not among `ahead` -- which run on their nodes from their start, and before it leave them
    only to jobs that end by then or to the cores they do not need there, as the planner does."""
    nodes = list(nodes)
    entries = {n.name: NodeEntry(n, t, node_key(config, n.name, t), n.state.usable, n.state.usable)
               for n in nodes for t in (node_type(config, n.name, n.properties),)}
    keys = {name: e.key for name, e in entries.items() if e.usable}
    allowed = {k for k in set(keys.values()) if admits(config, k, job.queue, vo, job.group)}
    idle = IdleAdmission(entries, lambda key, queue: refusal(config, key, queue))
    # the one list of node checks, asked of each node as if idle: up, open to the job, wide enough
    ask = Ask(job, vo, None, 0, allowed)
    mine = [n for n in nodes if idle.first(n.name, ask) is None]
    serve = [[n.name for n in mine if idle.first(n.name, ask._replace(cores=p.ppn, props=p.properties, host=p.host))
              is None] for p in parts]
    for part, names in zip(parts, serve):
        if len(names) < part.count:
            return Estimate(None, False, _unserved(part, len(names), nodes, keys, len(parts) + bool(procs) > 1), 0)
    if len(parts) > 1 and match_parts(parts, serve, {n.name: n.slots for n in mine}) is None:
        return Estimate(None, False, "its parts cannot each have a node of its own among the nodes it may use", 0)
    served = set().union(*serve)
    usable = {n.name: n.slots for n in mine if procs and n.slots > 0 or n.name in served}
    if procs and sum(usable.values()) < procs + sum(p.count * p.ppn for p in parts):
        return Estimate(None, False, f"too few usable cores may run it (procs={procs}: the nodes it may use have "
                        f"{sum(usable.values())} core(s) in all)", 0)
    # the jobs ahead may run on any node the target may use, not only on those that serve it
    per_node, unknown, competing, overdue = _core_times({n.name: n.slots for n in mine} | usable, keys, running, ahead,
                                               config, now)
    per_node = {name: per_node[name] for name in usable}
    held = _hold(per_node, usable, reserved)
    windows = windows_by_node(config.downtimes, ((name, keys[name].ntype) for name in usable)) \
        if config.downtimes else {}
    wall = job.walltime

    def room(t: float) -> list[str] | None:
        """The nodes that serve all of it from `t`, or None."""
        free = {}
        for name, ts in per_node.items():
            w = windows.get(name)
            if not (w and clear_start(w, t, wall) != t):
                h = held.get(name)
                if h is not None and wall is not None:
                    start, before = h
                    if t + wall <= start:
                        ts = before  # ends before the reservation starts: its cores too
                free[name] = bisect_right(ts, t)
        chosen = match_parts(parts, serve, free)
        if chosen is None or not procs:
            return chosen
        left, taken = procs, set(chosen)
        for name, f in sorted(free.items(), key=lambda kv: (-kv[1], kv[0])):
            if left <= 0 or f <= 0:
                break
            if name not in taken:
                chosen.append(name)
                left -= f
        return chosen if left <= 0 else None

    # the core times a job that ends before a reservation starts may use are candidates too
    got = _earliest(room, per_node, windows, wall, now, [start for start, _ in held.values()],
                    [t for _, before in held.values() for t in before])
    if got is None:
        return Estimate(None, False, f"cannot estimate: {unknown} running or earlier job(s) on the nodes it may "
                        "use have no requested walltime", competing)
    start, chosen = got
    exact = unknown == 0
    why = "from requested walltimes of running jobs and of the jobs ahead of it"
    if not exact:
        why += f" (uncertain: {unknown} job(s) without walltime never free their cores in this estimate)"
    if overdue:
        exact = False
        why += (f"; {overdue} job(s) on the nodes it may use run past their requested walltime: their cores free "
                "when they end, at any moment")
    if held:
        why += f"; {len(held)} node(s) reserved for other jobs are kept for them"
    if sum(p.count for p in parts) > 1 or procs:
        exact = False
        why += (f"; {'+'.join(chosen)} have room for all of it at once then (cores that free earlier on some "
                "of them may go to later jobs meanwhile: no reservation holds them)")
    return Estimate(max(start, now), exact, why, competing, tuple(chosen))


def _unserved(part: NodePart, have: int, nodes: list[Node], keys: dict[str, NodeKey], several: bool) -> str:
    """Why too few nodes the job may use could ever serve `part` (`have` could)."""
    if part.host is not None:
        node = next((n for n in nodes if n.name == part.host), None)
        what = ("is not in the status" if node is None else f"is {node.state.value}" if node.name not in keys
                else f"has {node.slots} core(s)" if node.slots < part.ppn else "is not open to its queue, VO or group")
        return f"no usable node may run it (host {part.host} {what})"
    head = "no usable node may run it" if have == 0 else "too few usable nodes may run it"
    if not several and part.count == 1 and not part.properties:
        return head
    props = f" and properties {','.join(sorted(part.properties))}" if part.properties else ""
    return (f"{head} ({part}: {have} node(s) it may use, up, have {part.ppn} core(s){props}; "
            f"it needs {part.count})")


def _core_times(usable: dict[str, int], keys: dict[str, NodeKey], running: Iterable[Job],
                ahead: Sequence[tuple[Job, str]], config: Config, now: float
                ) -> tuple[dict[str, list[float]], int, int, int]:
    """Per node of `usable` (name -> slots), the sorted times its cores become free; how many
    jobs never free theirs (no walltime); how many jobs ahead compete for these nodes; how many
    run past their requested walltime (their cores free when they end: any moment after now,
    not now -- they hold them yet, and the planner starts nothing on them)."""
    free_at: dict[str, list[float]] = {name: [] for name in usable}
    unknown = overdue = 0
    soon = math.nextafter(now, math.inf)
    for r in running:
        start = r.start_time if r.start_time is not None else now
        end = start + r.walltime if r.walltime else math.inf
        alone = r.request is not None and r.request.exclusive  # its nodes run nothing else
        mine = any(name in free_at for name, _ in r.placement)
        if math.isinf(end) and mine:
            unknown += 1  # once a job, not a node
        if end <= now:
            overdue += mine
            end = soon
        for name, c in r.placement:
            if name in free_at:
                free_at[name].extend([end] * (usable[name] if alone else c))
    for name, slots in usable.items():
        ts = free_at[name]
        ts.extend([now] * max(0, slots - len(ts)))
    # Jobs ahead take the earliest cores among the target's nodes (ignoring the shape of their
    # requests: an approximation that keeps this fast at tens of thousands of jobs).
    heap = [(t, name) for name, ts in free_at.items() for t in ts]
    heapq.heapify(heap)
    competing = 0
    memo: dict[tuple[str, str, str], bool] = {}
    for a, avo in ahead:
        k = (a.queue, avo, a.group)
        ok = memo.get(k)
        if ok is None:
            ok = memo[k] = any(admits(config, keys[name], *k) for name in usable)
        if not ok:
            continue
        competing += 1
        if not a.walltime:
            unknown += 1
        for _ in range(a.cores):
            if not heap:
                break
            t, name = heapq.heappop(heap)
            heapq.heappush(heap, (t + a.walltime if a.walltime else math.inf, name))
    per_node: dict[str, list[float]] = {name: [] for name in usable}
    for t, name in heap:
        per_node[name].append(t)
    for ts in per_node.values():
        ts.sort()
    return per_node, unknown, competing, overdue


def _hold(per_node: dict[str, list[float]], usable: dict[str, int],
          reserved: Sequence[tuple[Job, float, tuple[str, ...]]]) -> dict[str, tuple[float, list[float]]]:
    """Run each reserved job on its nodes from its reservation's start: the cores it needs
    there (`reservation.reserved_cores`; all for None) free at its end instead. Returns, per
    reserved node, (start, the core times without it) for jobs that end before it starts."""
    held: dict[str, tuple[float, list[float]]] = {}
    for rj, start, rnodes in reserved:
        wall = rj.walltime if rj.walltime else math.inf
        for name, need in zip(rnodes, reserved_cores(rj, rnodes)):
            ts = per_node.get(name)
            if ts is None or name in held:
                continue
            k = usable[name] if need is None else min(need, len(ts))
            # the cores that free last by its start are its own: those free earlier are left to
            # jobs that run on past it, as the planner leaves a node's spare cores (`_fits_before`)
            lo = max(0, bisect_right(ts, start) - k)
            held[name] = (start, ts)
            per_node[name] = sorted(ts[:lo] + ts[lo + k:] + [max(start, t) + wall for t in ts[lo:lo + k]])
    return held


def _earliest(room, per_node: dict[str, list[float]], windows: dict, wall: float | None,  # noqa: ANN001
              now: float, held: Sequence[float] = (), extra: Iterable[float] = ()) -> tuple[float, list[str]] | None:
    """The first time from `now` at which `room(t)` finds nodes, and those nodes. Room only
    grows as cores free, except where a node's downtime or a reservation (starting at each of
    `held`) comes in the job's way: between those boundaries the first such time is searched
    by bisection (a farm frees thousands of cores)."""
    times = sorted({now, *(t for ts in per_node.values() for t in ts if now < t < math.inf),
                    *(t for t in extra if now < t < math.inf),
                    *(w.end for ws in windows.values() for w in ws if w.end > now)})
    # a node is closed to a job starting at t within (begin - walltime, end) of a window; a
    # reserved node's cores it needs, within (start - walltime, start)
    lo = sorted([-math.inf if wall is None else w.begin - wall for ws in windows.values() for w in ws]
                + ([h - wall for h in held] if wall is not None else []))
    hi = sorted([w.end for ws in windows.values() for w in ws] + (list(held) if wall is not None else []))
    groups: list[list[float]] = []
    last = None
    for t in times:
        k = bisect_left(lo, t) + bisect_right(hi, t)
        if k != last:
            groups.append([])
            last = k
        groups[-1].append(t)
    for g in groups:
        got = earliest(g, room)
        if got is not None:
            return got
    return None
