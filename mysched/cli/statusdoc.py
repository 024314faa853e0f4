"""What every status command shares: finding and loading the status file the daemon
publishes after each cycle, and reading its rows.

The file is world-readable, so these commands work for unprivileged users without access
to the database or the batch server.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any

from mysched.core.config import Config, NodeType, QueueConfig
from mysched.core.model import Job, JobState, Node, NodeState
from mysched.core.reasons import BLOCKING
from mysched.daemon.statusfile import read_status, rows
from mysched.errors import StatusError

RUNNING = ("R", "E", "S")
"""TORQUE states of jobs that hold their cores (S: suspended)."""

DRY_RUN = ("dry run: the daemon started nothing; jobs it would have started are queued with their "
           "planned nodes ('mysched why JOBID')")


def notes(doc: dict[str, Any]) -> list[str]:
    """What the reader of a table must know about the cycle behind it (dry run, history)."""
    out = [DRY_RUN] if doc.get("dry_run") else []
    stale = doc.get("stale")
    if stale:
        since = clock(doc, stale.get("since")) if stale.get("since") else "?"
        out.append(f"STALE: the daemon's cycles fail since {since}: {stale.get('error', '')}; "
                   f"these figures are from {clock(doc, doc.get('snapshot_time'))}")
    cyc = doc.get("cycle") or {}
    if cyc.get("history_ok") is False:
        out.append(f"history store not written in the last cycle: {cyc.get('history_error', '')}")
    sb = doc.get("standby")
    if sb:
        out.append(f"standby: daemon pid {sb.get('pid')} on {sb.get('host')} waits to take over "
                   f"(since {_wall(sb.get('since'))})")
    return out


def _wall(t: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S %Z", time.localtime(t)) if t else "?"


def standby(directory: str, max_age: float) -> dict[str, Any] | None:
    """The standby daemon's note in `directory` (`standby.json`), if it is fresh."""
    try:
        with open(os.path.join(directory, "standby.json"), encoding="utf-8") as f:
            sb = json.load(f)
    except (OSError, ValueError):
        return None
    if not isinstance(sb, dict) or time.time() - float(sb.get("checked") or 0) > max_age:
        return None
    return sb


def _leader_elsewhere(sb: dict[str, Any]) -> str:
    who = sb.get("leader") or {}
    lead = (f"the leader is pid {who.get('pid')} on {who.get('host')}" if who else
            "the leader is not known" + (f" ({sb['error']})" if sb.get("error") else ""))
    return (f"the daemon here (pid {sb.get('pid')} on {sb.get('host')}) is the standby; {lead}: its host "
            "publishes the current status")


def options(p: argparse.ArgumentParser, *, json_keys: str, table_: bool = True) -> None:
    p.add_argument("--state-dir", metavar="DIR", help="where the daemon writes status.json (default: "
                   "$MYSCHED_STATE_DIR, else daemon.state_dir of -c FILE, else /var/lib/mysched)")
    p.add_argument("-c", "--config", metavar="FILE", help="configuration file (for daemon.state_dir)")
    p.add_argument("--max-age", type=float, metavar="SECONDS",
                   help="refuse a status older than this (default: 3 cycle intervals, at least 300 s)")
    p.add_argument("--json", action="store_true", help=f"JSON output; keys: {json_keys}")
    if table_:
        p.add_argument("--noheader", action="store_true", help="no header line (for scripts)")


def state_dir(args: argparse.Namespace) -> str:
    if args.state_dir:
        return args.state_dir
    if os.environ.get("MYSCHED_STATE_DIR"):
        return os.environ["MYSCHED_STATE_DIR"]
    if args.config:
        from mysched.config import load_config

        return load_config(args.config).state_dir
    return "/var/lib/mysched"


def load(args: argparse.Namespace) -> dict[str, Any]:
    path = state_dir(args)
    try:
        doc = read_status(path)
    except StatusError as exc:
        sb = standby(path, args.max_age if args.max_age is not None else 300.0) if os.path.isdir(path) else None
        if sb is None:
            raise
        raise StatusError(f"{exc}\n{_leader_elsewhere(sb)}") from None
    max_age = args.max_age if args.max_age is not None else max(300.0, 3 * float(doc.get("interval", 60)))
    sb = standby(path, max_age) if os.path.isdir(path) else None
    # a daemon that republishes a stale status is alive: the age counts from its last check
    age = time.time() - max(doc.get("published", 0), (doc.get("stale") or {}).get("checked") or 0)
    if age > max_age:
        why = _leader_elsewhere(sb) if sb else (f"is the daemon running? it publishes every "
                                                f"{doc.get('interval', 60):g} s; --max-age overrides")
        raise StatusError(f"{path}: status is stale: last published {age:.0f} s ago ({why})")
    if sb is not None and sb.get("pid") != (doc.get("role") or {}).get("pid"):
        doc["standby"] = sb
    return doc


def classify(j: dict[str, Any]) -> str:
    if j["state"] in RUNNING:
        return "running"
    if j["reason"] in BLOCKING:
        return "blocked"
    return "queued"


def find_job(doc: dict[str, Any], job_id: str) -> dict[str, Any]:
    jobs = rows(doc, "jobs")
    for j in jobs:
        if j["id"] == job_id:
            return j
    matches = [j for j in jobs if j["id"].split(".")[0] == job_id]
    if len(matches) == 1:
        return matches[0]
    if matches:  # the same number on two servers: guessing would explain the wrong job
        ids = ", ".join(j["id"] for j in matches[:10]) + (", ..." if len(matches) > 10 else "")
        raise StatusError(f"job {job_id}: ambiguous: {ids} (give the full id)")
    raise StatusError(f"job {job_id} is not in the status of the last cycle (finished, deleted, or a typo?)")


def rules(doc: dict[str, Any]) -> Config:
    """The node types and queue assignments the daemon ran with, as the core's `Config`, so
    estimates and `free` apply the planner's own admission rules (`mysched.core.admission`)."""
    types = tuple(NodeType(name, tuple(t.get("nodes", ())), tuple(t.get("properties", ())), tuple(t.get("groups", ())),
                           tuple(t.get("vos", ()))) for name, t in doc.get("node_types", {}).items())
    queues = {name: QueueConfig(name, q.get("max_running"), tuple(q.get("nodes", ())), tuple(q.get("node_types", ())),
                                bool(q.get("exclusive"))) for name, q in doc.get("queue_config", {}).items()}
    return Config(node_types=types, queues=queues)


_NODE_STATES = {"free": NodeState.FREE, "partial": NodeState.FREE, "full": NodeState.FULL}
NODE_STATES = (*_NODE_STATES, *(s.value for s in NodeState if not s.usable))
"""The states `mysched nodes` shows: a usable node's by its jobs, else TORQUE's (down, ...)."""


def nodes(doc: dict[str, Any]) -> list[Node]:
    """The status file's nodes as the core's `Node` values."""
    return [Node(n["name"], n["slots"], _NODE_STATES.get(n["state"]) or NodeState.parse(n["state"]),
                 frozenset(n.get("properties") or ())) for n in rows(doc, "nodes")]


def job(row: dict[str, Any]) -> Job:
    """A status-file job row as the core's `Job` (running jobs with their placement)."""
    placement = []
    for part in (row["nodes"] or "").split("+"):
        name, _, c = part.rpartition(":")
        if name:
            placement.append((name, int(c or 1)))
    state = JobState.RUNNING if row["state"] in RUNNING else JobState.parse(row["state"])
    return Job(row["id"], row["queue"], row["user"], row["group"], row["cores"], state, row["submit"] or 0.0,
               row["start"], row["walltime"], None, tuple(placement), row["vo"])


def clock_kind(doc: dict[str, Any]) -> str:
    """"simulated" when the status comes from a simulated farm (its clock is not the wall
    clock: times may lie in the past or the future), else "wall"."""
    return "simulated" if str(doc.get("server", "")).startswith("sim:") else "wall"


def clock(doc: dict[str, Any], t: float | None) -> str:
    """A time of the status as local date and time with its zone, marked when simulated."""
    if t is None:
        return "-"
    text = time.strftime("%Y-%m-%d %H:%M:%S %Z", time.localtime(t))
    return text + (" simulated" if clock_kind(doc) == "simulated" else "")
