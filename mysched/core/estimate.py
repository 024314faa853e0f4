"""When will a waiting job start? An estimate from requested walltimes (ANL's spwhen, MAUI's showstart).

Pure: works on the status document. Running jobs free their slots at start + requested
walltime; the jobs ranked ahead of the target in the last cycle take the earliest slots
first (each for its own walltime); the target starts when a node it may use has enough
slots free. Without walltimes there is no estimate, and the answer says so.
"""

from __future__ import annotations

import fnmatch
import heapq
import math
from dataclasses import dataclass
from typing import Any

from mysched.core.reasons import BLOCKING



@dataclass(frozen=True)
class Estimate:
    """`start` is a Unix time, or None with `why` saying why it cannot be given."""

    start: float | None
    exact: bool
    why: str
    ahead: int


def node_admits(doc: dict[str, Any], node: dict[str, Any], queue: str, vo: str, group: str) -> bool:
    """The static node rules (queue assignment, node type), from what the status file records
    (the planner gets them from `tally.NodeIndex.rules`)."""
    ntype = node.get("type") or ""
    if ntype:
        t = doc.get("node_types", {}).get(ntype, {})
        if (t.get("groups") or t.get("vos")) and group not in t.get("groups", []) and vo not in t.get("vos", []):
            return False
    qc = doc.get("queue_config", {})

    def has(q: dict[str, Any]) -> bool:
        return any(fnmatch.fnmatchcase(node["name"], p) for p in q.get("nodes", [])) or (
            bool(ntype) and ntype in q.get("node_types", []))

    mine = qc.get(queue)
    if mine and (mine.get("nodes") or mine.get("node_types")):
        return has(mine)
    return not any(q.get("exclusive") and name != queue and has(q) for name, q in qc.items())


def estimate_start(doc: dict[str, Any], job_id: str) -> Estimate:
    from mysched.daemon.statusfile import rows

    jobs = rows(doc, "jobs")
    nodes = rows(doc, "nodes")
    now = doc["snapshot_time"]
    by_id = {j["id"]: j for j in jobs}
    target = by_id[job_id]
    if target["state"] in ("R", "E", "S"):
        return Estimate(target["start"] or now, True, "already running", 0)
    if target["reason"] in BLOCKING:
        return Estimate(None, False, f"blocked ({target['reason']}): it cannot start until that changes", 0)
    vo, queue, group, cores = target["vo"], target["queue"], target["group"], target["cores"]
    usable = [n for n in nodes if n["state"] in ("free", "partial", "full") and n["slots"] >= cores
              and node_admits(doc, n, queue, vo, group)]
    if not usable:
        return Estimate(None, False, "no usable node may run it", 0)
    names = {n["name"] for n in usable}
    # Per node: the times its slots become free.
    free_at: dict[str, list[float]] = {n["name"]: [] for n in usable}
    unknown = 0
    for j in jobs:
        if j["state"] not in ("R", "E", "S") or not j["nodes"]:
            continue
        start = j["start"] if j["start"] is not None else now
        end = start + j["walltime"] if j["walltime"] else math.inf
        for part in j["nodes"].split("+"):
            name, _, c = part.rpartition(":")
            if name in free_at:
                if math.isinf(end):
                    unknown += 1
                free_at[name].extend([max(end, now)] * int(c or 1))
    for n in usable:
        slots = free_at[n["name"]]
        slots.extend([now] * max(0, n["slots"] - len(slots)))
        slots.sort()
    ahead = sorted((j for j in jobs if j["state"] not in ("R", "E", "S") and j["rank"] is not None
                    and j["rank"] < (target["rank"] or 0) and j["reason"] not in BLOCKING), key=lambda j: j["rank"])
    # Jobs ahead take the earliest slots among the target's nodes (ignoring the one-node rule
    # for them: an approximation that keeps this fast at tens of thousands of jobs).
    heap = [(t, name) for name, ts in free_at.items() for t in ts]
    heapq.heapify(heap)
    competing = 0
    memo: dict[tuple, bool] = {}
    for j in ahead:
        key = (j["queue"], j["vo"], j["group"])
        ok = memo.get(key)
        if ok is None:
            ok = memo[key] = any(node_admits(doc, n, *key) for n in usable)
        if not ok:
            continue
        competing += 1
        for _ in range(j["cores"]):
            if not heap:
                break
            t, name = heapq.heappop(heap)
            end = t + j["walltime"] if j["walltime"] else math.inf
            if math.isinf(end):
                unknown += 1
            heapq.heappush(heap, (end, name))
    per_node: dict[str, list[float]] = {name: [] for name in names}
    for t, name in heap:
        per_node[name].append(t)
    best = math.inf
    for name, ts in per_node.items():
        if len(ts) >= cores:
            ts.sort()
            best = min(best, ts[cores - 1])
    if math.isinf(best):
        return Estimate(None, False, f"cannot estimate: {unknown} running or earlier job(s) on the nodes it may "
                        "use have no requested walltime", competing)
    exact = unknown == 0
    why = "from requested walltimes of running jobs and of the jobs ahead of it"
    if not exact:
        why += f" (uncertain: {unknown} job(s) without walltime never free their slots in this estimate)"
    return Estimate(max(best, now), exact, why, competing)
