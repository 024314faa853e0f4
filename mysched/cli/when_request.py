"""`mysched when` for a job that waits for capacity: its request as the status file gives it
(``nodes=2:ppn=4:ib+wn05:ppn=1``, ``procs=N``, memory) handed to the core's estimate.

The farm's node names tell a host from a property, as TORQUE does. Memory is not counted,
and the answer says so; a request of nodes alone (``naccesspolicy=singlejob``) gets no
estimate, said so.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Iterator

from mysched.backends.torque.values import parse_node_parts
from mysched.cli import statusdoc
from mysched.cli.statusdoc import RUNNING
from mysched.core.estimate import Estimate, estimate_request
from mysched.core.model.batch import Job
from mysched.core.model.reasons import BLOCKING
from mysched.core.model.request import NodePart, Request
from mysched.daemon.statusfile import rows

_MEMORY = ("mem", "pmem", "vmem", "pvmem")


def estimate(doc: dict[str, Any], j: dict[str, Any]) -> Estimate:
    """When queued job row `j` starts, by the requested walltimes of what runs and of the
    jobs ahead of it in the last cycle's order."""
    request = j.get("request")
    node_names = {r["name"] for r in rows(doc, "nodes")}  # a host from a property, as TORQUE tells them
    got = read_request(j, node_names) if request else None
    if isinstance(got, str):
        return Estimate(None, False, f"no estimate for this request ({request}): {got}; its wait reason says "
                        f"what it waits for (mysched why {j['id']})", 0)
    all_rows = rows(doc, "jobs")
    running = [statusdoc.job(r) for r in all_rows if r["state"] in RUNNING and r["nodes"]]
    reserved = _reserved(doc, all_rows, j["id"], node_names)
    before = list(_ahead(all_rows, j["rank"] or 0))
    ahead = [(statusdoc.job(r), r["vo"]) for r in sorted((r for r in before if r["id"] not in reserved),
                                                          key=lambda r: r["rank"])]
    nodes, config, now = statusdoc.nodes(doc), statusdoc.rules(doc), doc["snapshot_time"]
    target = statusdoc.job(j)
    if got is None:
        parts, procs, memory = (NodePart(1, target.cores),), 0, ""
    else:
        parts, procs, memory = got
    est = estimate_request(target._replace(request=None) if got is not None else target, j["vo"], parts, procs,
                           running, ahead, nodes, config, now, tuple(reserved.values()))
    # the jobs ahead that hold reservations are counted by their reservations, not among `ahead`:
    # they are ahead all the same (why's position)
    held_ahead = len(before) - len(ahead)
    if memory and est.start is not None:
        est = Estimate(est.start, False, est.why + f"; its memory ({memory}) is not counted: it may start later",
                       est.ahead, est.nodes)
    return replace(est, ahead=est.ahead + held_ahead) if held_ahead else est


def ahead_of(doc: dict[str, Any], j: dict[str, Any]) -> int:
    """The jobs ahead of waiting job row `j` in the last cycle's order that could start (not
    blocked): `why`'s position less one."""
    return sum(1 for _ in _ahead(rows(doc, "jobs"), j["rank"])) if j["rank"] is not None else 0


def _ahead(all_rows: list[dict[str, Any]], rank: int) -> Iterator[dict[str, Any]]:
    """The rows of jobs ranked ahead of `rank` in the last cycle's order that could start."""
    return (r for r in all_rows if r["state"] not in RUNNING and r["rank"] is not None and r["rank"] < rank
            and r["reason"] not in BLOCKING)


def _reserved(doc: dict[str, Any], all_rows: list[dict[str, Any]], target: str, node_names: set[str]
              ) -> dict[str, tuple[Job, float, tuple[str, ...]]]:
    """The status's reservations of jobs still waiting other than `target`: (job with the
    request its reservation holds cores for, start, nodes) by job id."""
    resv = doc.get("reservations") or {}
    out: dict[str, tuple[Job, float, tuple[str, ...]]] = {}
    if not resv:
        return out
    for r in all_rows:
        got = resv.get(r["id"])
        if got is None or r["id"] == target or r["state"] in RUNNING:
            continue
        rj = statusdoc.job(r)
        if r.get("request"):
            req = read_request(r, node_names)
            # what the planner keeps whole nodes for: memory, nodes alone, a request not read here
            if isinstance(req, str):
                rj = rj._replace(request=Request(exclusive=True))
            else:
                parts, procs, memory = req
                rj = rj._replace(request=Request(exclusive=True) if memory else
                                 Request(parts=parts, procs=procs or None))
        out[r["id"]] = (rj, got["start"], tuple(got["nodes"]))
    return out


def read_request(j: dict[str, Any], node_names: set[str]) -> tuple[tuple[NodePart, ...], int, str] | str:
    """(node parts, procs, memory asked for) of job row `j`'s request (`node_names`: the
    farm's), or why the estimate does not cover it. A request of memory alone is `j`'s cores
    on one node."""
    parts: tuple[NodePart, ...] = ()
    procs, memory = 0, []
    for item in j["request"].split(","):
        key, _, value = item.partition("=")
        if key == "nodes":
            try:
                parts = parse_node_parts(value, node_names)
            except ValueError:
                return f"its nodes= part cannot be read ({value})"
        elif key == "procs":
            if not value.isdigit() or int(value) < 1:
                return f"its procs= part cannot be read ({value})"
            procs = int(value)
        elif key in _MEMORY:
            memory.append(item)
        elif key == "naccesspolicy":
            return "estimates do not cover nodes asked for alone"
        else:
            return f"estimates do not cover {key or item}"
    if not parts and not procs:
        parts = (NodePart(1, j["cores"]),)
    return parts, procs, ",".join(memory)
