"""`mysched nodes NODE...`: the jobs running on named nodes (MAUI's checknode, pbsnodes' jobs),
each with its share of the node and when it ends by its requested walltime."""

from __future__ import annotations

from typing import Any

from mysched.cli import statusdoc
from mysched.cli.statusdoc import RUNNING
from mysched.errors import StatusError
from mysched.cli.textout import duration, table
from mysched.daemon.downtimeclash import started_at
from mysched.daemon.statusfile import placement, rows


def pick(every: list[dict[str, Any]], names: list[str]) -> list[dict[str, Any]]:
    """The node rows named, in the order named; an unknown name is an error naming a few the
    status has (a host name with its domain finds the short one, as pbsnodes lists it)."""
    by_name = {n["name"]: n for n in every}
    out = []
    for name in names:
        n = by_name.get(name) or by_name.get(name.split(".", 1)[0])
        if n is None:
            some = ", ".join(sorted(by_name)[:5]) + (", ..." if len(by_name) > 5 else "")
            raise StatusError(f"node {name} is not in the status ({len(by_name)} node(s): {some})")
        if n not in out:
            out.append(n)
    return out


def jobs_on(doc: dict[str, Any], names: set[str]) -> dict[str, list[dict[str, Any]]]:
    """Per node of `names`, the jobs running there: id, user, VO, cores there (of all it has),
    start and the end its requested walltime gives (None without one)."""
    out: dict[str, list[dict[str, Any]]] = {n: [] for n in names}
    now = doc["snapshot_time"]
    for r in rows(doc, "jobs"):
        if r["state"] not in RUNNING or not r["nodes"]:
            continue
        for name, c in placement(r["nodes"]):
            if name in out:
                start = started_at(r["start"], r.get("cycle"), now)
                end = start + r["walltime"] if start is not None and r["walltime"] else None
                out[name].append({"id": r["id"], "user": r["user"], "vo": r["vo"], "cores": c,
                                  "job_cores": r["cores"], "start": start, "end": end})
    for lst in out.values():
        lst.sort(key=lambda j: (j["end"] is None, j["end"] or 0.0, j["id"]))
    return out


def print_jobs(doc: dict[str, Any], nodes: list[dict[str, Any]], on: dict[str, list[dict[str, Any]]],
               noheader: bool) -> None:
    """Per named node, its running jobs, soonest end first."""
    now = doc["snapshot_time"]
    for n in nodes:
        jobs = on[n["name"]]
        if not noheader:
            props = ",".join(n.get("properties") or []) or "none"
            print(f"\n{n['name']}: {n['state']}, {n['used']} of {n['slots']} slot(s) used, properties {props}; "
                  f"{len(jobs)} job(s) running" + (" (soonest end first)" if len(jobs) > 1 else ""))
        if jobs:
            table(["JOBID", "USER", "VO", "CORES", "STARTED", "ENDS BY"],
                  [[j["id"], j["user"], j["vo"], j["cores"] if j["cores"] == j["job_cores"]
                    else f"{j['cores']} of {j['job_cores']}",
                    statusdoc.clock(doc, j["start"]),
                    "no walltime" if j["end"] is None else
                    f"{statusdoc.clock(doc, j['end'])} (in {duration(max(0.0, j['end'] - now))})"
                    if j["end"] >= now else f"{statusdoc.clock(doc, j['end'])} (past its walltime)"]
                   for j in jobs], noheader=noheader, right=(3,))
