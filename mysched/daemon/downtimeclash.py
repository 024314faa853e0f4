"""Scheduled downtimes that running jobs run into: what MAUI's setres reports as a conflict.

TORQUE cannot preempt, so a window declared while jobs run on its nodes finds them still
running when it begins, unless they end first. By its requested walltime a job ends at
start + walltime; a job without a walltime (or whose start is not known) may run on. For a
window ahead, the jobs on its nodes expected to run past its start clash with it; for a
window in force, every job still running on its nodes does.

Read from the status document (`mysched.daemon.statusfile`), so `mysched nodes` and the
daemon's warning (`DowntimeWarnings`, once per window, from the status-file writer) say the
same.
"""

from __future__ import annotations

import logging
from typing import Any, Iterable

from mysched.core.model.windows import Downtime, utc, when, windows_by_node

log = logging.getLogger("mysched")

RUNNING = frozenset({"R", "E", "S"})
"""TORQUE states of jobs that hold their cores."""

SHOWN = 3
"""Jobs a line names; the rest are counted."""


def windows(doc: dict[str, Any]) -> list[tuple[Downtime, list[str]]]:
    """Each window not over at the status's time, with the nodes of the status it covers
    (soonest first). From `downtime_windows` (every window not over), else from `downtimes`
    (the window in force or next on each node)."""
    now = doc.get("snapshot_time", 0.0)
    cols = doc.get("node_columns") or []
    ni, ti = cols.index("name") if "name" in cols else None, cols.index("type") if "type" in cols else None
    if ni is None:
        return []
    pairs = [(r[ni], r[ti] if ti is not None else None) for r in doc.get("nodes") or ()]
    listed = doc.get("downtime_windows")
    by: dict[Downtime, list[str]] = {}
    if listed is not None:
        dts = [Downtime(w["name"], w["start"], w["end"], tuple(w.get("hosts") or ()), tuple(w.get("node_types") or ()),
                        w.get("margin") or 0.0) for w in listed if w["end"] > now]
        for name, ws in windows_by_node(dts, pairs).items():
            for w in ws:
                by.setdefault(w, []).append(name)
    else:
        for name, w in (doc.get("downtimes") or {}).items():
            d = Downtime(w["name"], w["start"], w["end"], margin=w["start"] - w.get("begin", w["start"]))
            by.setdefault(d, []).append(name)
    return sorted(((d, sorted(ns)) for d, ns in by.items()), key=lambda x: (x[0].begin, x[0].end, x[0].name))


def clashes(doc: dict[str, Any], only: Iterable[str] | None = None,
            skip: frozenset[tuple] | set[tuple] = frozenset()) -> list[dict[str, Any]]:
    """Per window ahead or in force whose nodes run jobs that clash with it: {name, start, end,
    begin, state ("ahead" or "in_force"), nodes (of the window, among `only` if given), jobs
    [{id, nodes, end}] (end: expected by the requested walltime, null when not known; latest
    first)}. Windows whose (name, start, end) is in `skip` are left out."""
    now = doc.get("snapshot_time", 0.0)
    keep = set(only) if only is not None else None
    todo = []
    for d, names in windows(doc):
        if (d.name, d.start, d.end) in skip:
            continue
        if keep is not None:
            names = [n for n in names if n in keep]
        if names:
            todo.append((d, names))
    if not todo:
        return []
    on_node = _running_by_node(doc, {n for _, names in todo for n in names})
    out = []
    for d, names in todo:
        in_force = d.begin <= now
        seen: dict[str, dict[str, Any]] = {}
        for n in names:
            for j in on_node.get(n, ()):
                if j["id"] not in seen and (in_force or j["end"] is None or j["end"] > d.start):
                    seen[j["id"]] = j
        if seen:
            jobs = sorted(seen.values(), key=lambda j: (-(j["end"] if j["end"] is not None else float("inf")), j["id"]))
            out.append({"name": d.name, "start": d.start, "end": d.end, "begin": d.begin,
                        "state": "in_force" if in_force else "ahead", "nodes": names, "jobs": jobs})
    return out


def started_at(start: float | None, cycle: str | None, now: float) -> float | None:
    """A running job's start as a status document gives it: its own, or the status's time `now`
    for a job this very cycle started (TORQUE reports its start_time only at the next read)."""
    return now if start is None and cycle == "started" else start


def _running_by_node(doc: dict[str, Any], nodes: set[str]) -> dict[str, list[dict[str, Any]]]:
    """The running jobs on `nodes`, by node: {id, nodes (its placement), end}."""
    cols = doc["job_columns"]
    i = {c: cols.index(c) for c in ("id", "state", "start", "walltime", "nodes")}
    ci = cols.index("cycle") if "cycle" in cols else None
    now = doc.get("snapshot_time", 0.0)
    out: dict[str, list[dict[str, Any]]] = {}
    for r in doc["jobs"]:
        if r[i["state"]] not in RUNNING or not r[i["nodes"]]:
            continue
        where = [p.rpartition(":")[0] for p in r[i["nodes"]].split("+")]
        if nodes.isdisjoint(where):
            continue
        start = started_at(r[i["start"]], r[ci] if ci is not None else None, now)
        wall = r[i["walltime"]]
        job = {"id": r[i["id"]], "nodes": r[i["nodes"]], "end": start + wall if start is not None and wall is not None
               else None}
        for n in dict.fromkeys(where):
            if n in nodes:
                out.setdefault(n, []).append(job)
    return out


def text(c: dict[str, Any], now: float, clock=None, head: str | None = None) -> str:  # noqa: ANN001
    """One clash at `now` as a sentence naming a few of its jobs (`clock(t)` formats a time, UTC
    unless given; `head` names the window, "downtime NAME" unless given)."""
    show = clock or (lambda t: utc(t) + " UTC")
    head = head or f"downtime {c['name']}"

    def end(j: dict[str, Any]) -> str:
        if j["end"] is None:
            return "(no walltime: may run on)"
        return f"past its walltime since {show(j['end'])}" if j["end"] <= now else f"until {show(j['end'])}"
    named = ", ".join(f"{j['id']} on {j['nodes']} {end(j)}" for j in c["jobs"][:SHOWN])
    more = f" and {len(c['jobs']) - SHOWN} more" if len(c["jobs"]) > SHOWN else ""
    n = len(c["jobs"])
    if c["state"] == "in_force":
        return f"{head} is in force, but {n} job(s) still run on its nodes: {named}{more}"
    return (f"{head}: {n} running job(s) on its nodes are expected, by their requested walltime, to run past its "
            f"start ({show(c['start'])}): {named}{more} (TORQUE cannot preempt them: qdel them or move the window)")


class DowntimeWarnings:
    """Logs each window's clash once, when first seen (a daemon's lifetime)."""

    def __init__(self) -> None:
        self.warned: set[tuple] = set()

    def check(self, doc: dict[str, Any]) -> list[dict[str, Any]]:
        """Warn of the clashes of windows not warned of yet; returns them."""
        if not doc.get("downtime_windows") and not doc.get("downtimes"):
            return []
        found = clashes(doc, skip=self.warned)
        for c in found:
            self.warned.add((c["name"], c["start"], c["end"]))
            d = Downtime(c["name"], c["start"], c["end"], margin=c["start"] - c["begin"])
            log.warning("%s", text(c, doc.get("snapshot_time", 0.0), head=f"downtime {when(d)}"))
        return found


WARNINGS = DowntimeWarnings()
"""The daemon's: `mysched.daemon.statusfile.publish_status` checks every status it writes."""
