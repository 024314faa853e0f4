"""When will a waiting job start? An estimate from requested walltimes (ANL's spwhen, MAUI's showstart).

Pure: running jobs free their cores at start + requested walltime; the jobs ranked ahead of
the target in the last cycle take the earliest cores first (each for its own walltime); the
target starts when a node it may use (`mysched.core.admission`) has enough cores free.
Without walltimes there is no estimate, and the answer says so.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass
from typing import Iterable, Sequence

from mysched.core.admission import admits, node_key, node_type
from mysched.core.config import Config
from mysched.core.downtime import clear_start, windows_by_node
from mysched.core.model import Job, Node


@dataclass(frozen=True)
class Estimate:
    """`start` is a Unix time, or None with `why` saying why it cannot be given."""

    start: float | None
    exact: bool
    why: str
    ahead: int


def estimate_start(job: Job, vo: str, running: Iterable[Job], ahead: Sequence[tuple[Job, str]],
                   nodes: Iterable[Node], config: Config, now: float) -> Estimate:
    """The expected start of queued `job` (of `vo`); `ahead` are the (job, VO) pairs that go
    before it, in order, and could start (not blocked)."""
    cores = job.cores
    keys = {n.name: node_key(config, n.name, node_type(config, n.name, n.properties)) for n in nodes
            if n.state.usable and n.slots >= cores}
    usable = {n.name: n.slots for n in nodes
              if n.name in keys and admits(config, keys[n.name], job.queue, vo, job.group)}
    if not usable:
        return Estimate(None, False, "no usable node may run it", 0)
    # Per node: the times its cores become free.
    free_at: dict[str, list[float]] = {name: [] for name in usable}
    unknown = 0
    for r in running:
        start = r.start_time if r.start_time is not None else now
        end = start + r.walltime if r.walltime else math.inf
        alone = r.request is not None and r.request.exclusive  # its nodes run nothing else
        for name, c in r.placement:
            if name in free_at:
                if math.isinf(end):
                    unknown += 1
                free_at[name].extend([max(end, now)] * (usable[name] if alone else c))
    for name, slots in usable.items():
        ts = free_at[name]
        ts.extend([now] * max(0, slots - len(ts)))
    # Jobs ahead take the earliest cores among the target's nodes (ignoring the one-node rule
    # for them: an approximation that keeps this fast at tens of thousands of jobs).
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
        for _ in range(a.cores):
            if not heap:
                break
            t, name = heapq.heappop(heap)
            end = t + a.walltime if a.walltime else math.inf
            if math.isinf(end):
                unknown += 1
            heapq.heappush(heap, (end, name))
    per_node: dict[str, list[float]] = {name: [] for name in usable}
    for t, name in heap:
        per_node[name].append(t)
    best = math.inf
    windows = windows_by_node(config.downtimes, ((n.name, node_type(config, n.name, n.properties)) for n in nodes
                                                 if n.name in usable)) if config.downtimes else {}
    for name, ts in per_node.items():
        if len(ts) >= cores:
            ts.sort()
            t = ts[cores - 1]
            w = windows.get(name)
            best = min(best, clear_start(w, t, job.walltime) if w and math.isfinite(t) else t)
    if math.isinf(best):
        return Estimate(None, False, f"cannot estimate: {unknown} running or earlier job(s) on the nodes it may "
                        "use have no requested walltime", competing)
    exact = unknown == 0
    why = "from requested walltimes of running jobs and of the jobs ahead of it"
    if not exact:
        why += f" (uncertain: {unknown} job(s) without walltime never free their cores in this estimate)"
    return Estimate(max(best, now), exact, why, competing)
