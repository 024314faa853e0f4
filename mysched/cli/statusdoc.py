"""What every status command shares: finding and loading the status file the daemon
publishes after each cycle, and reading its rows.

The file is world-readable, so these commands work for unprivileged users without access
to the database or the batch server.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import os
import re
import time
from typing import Any, Sequence

from mysched.cli.common import positive_float
from mysched.config.values import DAY
from mysched.core.model.windows import Downtime
from mysched.core.settings import Config, NodeType, QueueConfig
from mysched.core.model.batch import Job, JobState, Node, NodeState
from mysched.core.model.reasons import BLOCKING
from mysched.core.model.request import Request
from mysched.daemon.statusfile import FILENAME, hosts, load_json, placement, read_status, rows
from mysched.errors import StatusError, clip

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
        out.append(f"STALE: the daemon's cycles fail since {since}: {clip(str(stale.get('error', '')))}; "
                   f"these figures are from {clock(doc, doc.get('snapshot_time'))}")
    cyc = doc.get("cycle") or {}
    if cyc.get("history_ok") is False:
        out.append(f"history store not written in the last cycle: {clip(str(cyc.get('history_error', '')))}")
    sb = doc.get("standby")
    if sb:
        out.append(f"standby: daemon pid {sb.get('pid')} on {clip(str(sb.get('host')))} waits to take over "
                   f"(since {_wall(sb.get('since'))})")
    return out


def _wall(t: float | None) -> str:
    return clock({}, t) if t else "?"  # a wall-clock time: no "simulated" mark


def standby(directory: str, max_age: float) -> dict[str, Any] | None:
    """The standby daemon's note in `directory` (`standby.json`), if it is fresh. A note that
    is there but wrong is refused like a wrong status file: it decides what the commands say."""
    path = os.path.join(directory, "standby.json")
    try:
        sb = load_json(path, "standby note")
    except (OSError, StatusError):  # none, or none to read (a pipe, a half-written file)
        return None
    if not isinstance(sb, dict):
        return None
    validate(sb, _STANDBY, path)
    return sb if time.time() - (sb.get("checked") or 0) <= max_age else None


def _leader_elsewhere(sb: dict[str, Any]) -> str:
    who = sb.get("leader") or {}
    lead = (f"the leader is pid {who.get('pid')} on {clip(str(who.get('host')))}" if who else
            "the leader is not known" + (f" ({clip(sb['error'])})" if sb.get("error") else ""))
    return (f"the daemon here (pid {sb.get('pid')} on {clip(str(sb.get('host')))}) is the standby; {lead}: its host "
            "publishes the current status")


def options(p: argparse.ArgumentParser, *, json_keys: str, table_: bool = True) -> None:
    p.add_argument("--state-dir", metavar="DIR", help="where the daemon writes status.json (default: "
                   "$MYSCHED_STATE_DIR, else daemon.state_dir of -c FILE, else /var/lib/mysched)")
    p.add_argument("-c", "--config", metavar="FILE", help="configuration file (for daemon.state_dir)")
    p.add_argument("--max-age", type=positive_float, metavar="SECONDS", help="refuse a status older than this, or "
                   "published more than this ahead of the clock (default: 3 cycle intervals, at least 300 s)")
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
    where = os.path.join(path, FILENAME) if os.path.isdir(path) else path
    validate_status(doc, where)
    max_age = args.max_age if args.max_age is not None else max(300.0, 3 * float(doc.get("interval", 60)))
    sb = standby(path, max_age) if os.path.isdir(path) else None
    # a daemon that republishes a stale status is alive: the age counts from its last check
    last = max(doc.get("published", 0), (doc.get("stale") or {}).get("checked") or 0)
    age = time.time() - last
    if -age > max_age:  # "fresh" for years: a clock set wrong, or a forged file
        raise StatusError(f"{where}: status is not current: published {_wall(last)}, {-age:.0f} s ahead of this "
                          "host's clock (a clock set wrong, here or on the daemon's host?); --max-age is the tolerance")
    if age > max_age:
        why = _leader_elsewhere(sb) if sb else (f"is the daemon running? it publishes every "
                                                f"{doc.get('interval', 60):g} s; --max-age overrides")
        raise StatusError(f"{where}: status is stale: last published {age:.0f} s ago ({why})")
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
    # 123 or 123.batch for 123.batch.grid.example.org, as qstat takes them (a prefix up to a dot)
    matches = [j for j in jobs if j["id"].startswith(job_id + ".")]
    if len(matches) == 1:
        return matches[0]
    if matches:  # the same number on two servers: guessing would explain the wrong job
        ids = ", ".join(j["id"] for j in matches[:10]) + (", ..." if len(matches) > 10 else "")
        raise StatusError(f"job {job_id}: ambiguous: {ids} (give the full id)")
    number, dot, server = job_id.partition(".")  # an array: TORQUE lists its sub-jobs (N[i].server)
    array = [j["id"] for j in jobs if number.removesuffix("[]").isdigit() and j["id"].startswith(
        number.removesuffix("[]") + "[") and (not dot or j["id"].partition(".")[2] == server)]
    if array:
        raise StatusError(f"job {job_id} is a job array: ask about one of its {len(array)} sub-job(s) in the "
                          f"status ({', '.join(array[:5])}{', ...' if len(array) > 5 else ''})")
    raise StatusError(f"job {job_id} is not in the status of the last cycle (finished, deleted, or a typo?)")


def rules(doc: dict[str, Any]) -> Config:
    """The node types and queue assignments the daemon ran with, as the core's `Config`, so
    estimates and `free` apply the planner's own admission rules (`mysched.core.rules.access`)."""
    types = tuple(NodeType(name, tuple(t.get("nodes", ())), tuple(t.get("properties", ())), tuple(t.get("groups", ())),
                           tuple(t.get("vos", ()))) for name, t in doc.get("node_types", {}).items())
    queues = {name: QueueConfig(name, q.get("max_running"), tuple(q.get("nodes", ())), tuple(q.get("node_types", ())),
                                bool(q.get("exclusive"))) for name, q in doc.get("queue_config", {}).items()}
    windows = tuple(Downtime(w["name"], w["start"], w["end"], tuple(w.get("hosts", ())), tuple(w.get("node_types", ())),
                             w.get("margin", 0.0)) for w in doc.get("downtime_windows") or ())
    return Config(node_types=types, queues=queues, downtimes=windows)


_NODE_STATES = {"free": NodeState.FREE, "partial": NodeState.FREE, "full": NodeState.FULL}
NODE_STATES = (*_NODE_STATES, *(s.value for s in NodeState if not s.usable))
"""The states `mysched nodes` shows: a usable node's by its jobs, else TORQUE's (down, ...)."""


def nodes(doc: dict[str, Any]) -> list[Node]:
    """The status file's nodes as the core's `Node` values."""
    return [Node(n["name"], n["slots"], _NODE_STATES.get(n["state"]) or NodeState.parse(n["state"]),
                 frozenset(n.get("properties") or ())) for n in rows(doc, "nodes")]


def job(row: dict[str, Any]) -> Job:
    """A status-file job row as the core's `Job` (running jobs with their placement)."""
    state = JobState.RUNNING if row["state"] in RUNNING else JobState.parse(row["state"])
    # Of the request, what start estimates read: a job holding its nodes alone.
    alone = "naccesspolicy=singlejob" in (row.get("request") or "")
    return Job(row["id"], row["queue"], row["user"], row["group"], row["cores"], state, row["submit"] or 0.0,
               row["start"], row["walltime"], None, tuple(placement(row["nodes"])), row["vo"],
               request=Request(exclusive=True) if alone else None)


def job_json(row: dict[str, Any]) -> dict[str, Any]:
    """A status-file job row as the commands' JSON shows it (docs/json.md): ``nodes`` is the
    list of its host names, as everywhere in that JSON, and the file's own index into its
    rejected sets is left out (`why` gives the set itself)."""
    out = {k: v for k, v in row.items() if k != "rejected"}
    out["nodes"] = hosts(row["nodes"])
    return out


def clock_kind(doc: dict[str, Any]) -> str:
    """"simulated" when the status comes from a simulated farm (its clock is not the wall
    clock: times may lie in the past or the future), else "wall"."""
    return "simulated" if str(doc.get("server", "")).startswith("sim:") else "wall"


def clock(doc: dict[str, Any], t: float | None) -> str:
    """A time of the status as local date and time with its zone, marked when simulated."""
    if t is None:
        return "-"
    try:
        text = time.strftime("%Y-%m-%d %H:%M:%S %Z", time.localtime(t))
    except (OverflowError, ValueError, OSError):  # beyond the dates the C library shows
        text = f"{t:.0f} s after 1970" if abs(t) < 1e15 else f"{t:.3g} s after 1970"
    return text + (" simulated" if clock_kind(doc) == "simulated" else "")


# -- validation -------------------------------------------------------------------------------
# Every user's commands read these files: one check where they are loaded turns a truncated,
# hand-edited or foreign file into one line naming the file and key, instead of a traceback in
# whichever command first trips over it. Keys the daemon added over time stay optional.

class _Bad(Exception):
    def __init__(self, key: str, what: str) -> None:
        super().__init__(f"{clip(key)}: {what}")


def _show(v: Any) -> str:
    text = json.dumps(v)
    return text if len(text) <= 40 else text[:37] + "..."


class Spec:
    """What one value of the file must be; `null` allows null."""

    what = "a value"
    null = False

    def check(self, v: Any, key: str) -> None:
        if v is None:
            if not self.null:
                raise _Bad(key, f"expected {self.what}, got null")
        elif not self.fits(v, key):
            raise _Bad(key, f"expected {self.what}, got {_show(v)}")

    def fits(self, v: Any, key: str) -> bool:
        return True

    @property
    def n(self) -> "Spec":
        """The same, or null."""
        other = copy.copy(self)
        other.null = True
        return other


class Kind(Spec):
    """A scalar: its JSON types and its range, values or pattern."""

    def __init__(self, what: str, types: tuple[type, ...], lo: float | None = None, hi: float | None = None,
                 values: tuple[str, ...] | None = None, pattern: str | None = None) -> None:
        self.what, self.types, self.lo, self.hi = what, types, lo, hi
        self.values = frozenset(values) if values is not None else None
        self.pattern = re.compile(pattern) if pattern is not None else None

    def fits(self, v: Any, key: str) -> bool:
        return self.column_fits([v])

    def column_fits(self, col: Sequence[Any]) -> bool:
        """All of a column right, fast (a farm's status holds tens of thousands of jobs)."""
        vals = [v for v in col if v is not None] if self.null else col
        if not vals:
            return True
        if not set(map(type, vals)) <= set(self.types):  # bool is not int here: type(), not isinstance
            return False
        if self.lo is not None:
            if not (self.lo <= min(vals) and max(vals) <= self.hi):
                return False
            total = sum(vals)  # NaN in, NaN out (min and max may step over it)
            if total != total:
                return False
        if self.values is not None and not self.values.issuperset(vals):
            return False
        return self.pattern is None or all(map(self.pattern.fullmatch, filter(None, vals)))


class Rec(Spec):
    """An object with these keys (`need`) and maybe these (`may`); other keys are not read."""

    what = "an object"

    def __init__(self, need: dict[str, Spec], may: dict[str, Spec] | None = None) -> None:
        self.need, self.may = need, may or {}

    def fits(self, v: Any, key: str) -> bool:
        if type(v) is not dict:
            return False
        for k, spec in self.need.items():
            if k not in v:
                raise _Bad(_at(key, k), "missing")
            spec.check(v[k], _at(key, k))
        for k, spec in self.may.items():
            if k in v:
                spec.check(v[k], _at(key, k))
        return True


class Map(Spec):
    """An object of names (VOs, nodes, pools, ...) to values alike."""

    what = "an object"

    def __init__(self, of: Spec) -> None:
        self.of = of

    def fits(self, v: Any, key: str) -> bool:
        if type(v) is not dict:
            return False
        for k, x in v.items():
            self.of.check(x, _at(key, k))
        return True


class Seq(Spec):
    what = "a list"

    def __init__(self, of: Spec) -> None:
        self.of = of

    def fits(self, v: Any, key: str) -> bool:
        if type(v) is not list:
            return False
        for i, x in enumerate(v):
            self.of.check(x, f"{key}[{i}]")
        return True


def _at(key: str, k: str) -> str:
    return f"{key}.{k}" if key else k


# Types and signs only, NaN refused: the daemon writes what its inputs hold -- a storage
# metric of 4e15 bytes, a walltime of 1e11 s, an infinite history window -- and the commands
# show any such value (`clock`, `duration`); a bound here would refuse a healthy farm's status.
INF = math.inf
STR = Kind("a string", (str,))
BOOL = Kind("true or false", (bool,))
INT = Kind("a whole number", (int,), -INF, INF)
COUNT = Kind("a whole number of at least 0", (int,), 0, INF)
NUM = Kind("a number", (int, float), -INF, INF)
TIME = Kind("a Unix time", (int, float), -INF, INF)
CLOCK = Kind("a Unix time", (int, float), -1e11, 1e11)
"""The daemon's own clock readings (when it published, the snapshot's time): 1e300 is damage."""
SECONDS = Kind("seconds (at least 0)", (int, float), 0, INF)
LIST = Kind("a list", (list,))
NAMES = Seq(STR)
JOB_STATE = Kind(f"a job state ({', '.join(s.value for s in JobState)})", (str,), values=tuple(s.value for s in JobState))
NODE_STATE = Kind(f"a node state ({', '.join(NODE_STATES)})", (str,), values=NODE_STATES)
PLACEMENT = Kind("NODE:CORES[+NODE:CORES...]", (str,), pattern=r"(?:[^+]+:[0-9]+(?:\+[^+]+:[0-9]+)*)?")

_JOB = {"id": STR, "vo": STR, "group": STR, "user": STR, "queue": STR, "cores": COUNT, "state": JOB_STATE,
        "submit": TIME, "start": TIME.n, "walltime": SECONDS.n, "nodes": PLACEMENT.n, "rank": COUNT.n,
        "priority": NUM.n, "reason": STR.n, "detail": STR.n, "rejected": COUNT.n, "cycle": STR.n, "request": STR.n}
_NODE = {"name": STR, "state": NODE_STATE, "type": STR.n, "slots": COUNT, "used": COUNT, "jobs": COUNT,
         "vos": Map(COUNT), "users": COUNT, "diversity": NUM.n, "class": STR.n, "properties": NAMES.n,
         "note": STR.n}
_LIMITS = {"max_running": COUNT.n, "max_per_node": COUNT.n, "max_cores": COUNT.n}
_POOL = Rec({"package": Rec({"slots": COUNT.n, "mem": NUM.n}), "hosts": INT, "status": STR, "total": INT,
             "free": INT, "guaranteed": INT, "owner_use": INT, "loan_use": INT, "other_use": INT,
             "held_hosts": NAMES,
             "consumers": Seq(Rec({"consumer": STR, "kind": STR, **dict.fromkeys(
                 ("guaranteed", "allocated", "owner_use", "loaned", "pending", "owed"), INT)}))})
_STATUS = Rec({
    "published": CLOCK, "snapshot_time": CLOCK, "farm": Rec({"total_slots": COUNT, "used_slots": COUNT}),
    "vos": Map(Rec({"share": NUM, "guarantee": INT, "running_slots": INT, "running_jobs": INT,
                    "queued_jobs": INT, "usage_s": NUM, "priority": NUM, "below_guarantee": BOOL},
                   {**_LIMITS, "throttled": NAMES.n})),
    "job_columns": NAMES, "jobs": LIST, "node_columns": NAMES, "nodes": LIST,
}, {
    "interval": Kind("seconds of at most a day", (int, float), 0, DAY),  # 3 intervals: how old it may be
    "server": STR.n, "dry_run": BOOL.n,
    "stale": Rec({}, {"since": TIME.n, "error": STR.n, "checked": TIME.n}).n,
    "cycle": Rec({}, {"history_ok": BOOL.n, "history_error": STR.n}).n,
    "role": Rec({}, {"pid": INT.n, "host": STR.n, "since": TIME.n}).n,
    "rejected": Seq(Map(COUNT)),
    "limits": Rec({}, {"groups": Map(Rec({}, _LIMITS)), "users": Map(Rec({}, _LIMITS)),
                       "server": Rec({}, dict.fromkeys(("max_running", "max_user_run", "max_group_run"), COUNT.n)).n}),
    "usage": Rec({}, {"window_s": SECONDS.n, "group": Map(NUM), "user": Map(NUM)}),
    "queues": Map(Spec().n),
    "queue_config": Map(Rec({}, {"max_running": COUNT.n, "max_cores": COUNT.n, "nodes": NAMES, "node_types": NAMES,
                                 "exclusive": BOOL.n})),
    "node_types": Map(Rec({}, dict.fromkeys(("nodes", "properties", "groups", "vos"), NAMES))),
    "throttles": Seq(Rec({"rule": STR, "source": STR, "level": STR, "factor": NUM, "low": NUM, "high": NUM,
                          "vos": NAMES, "groups": NAMES, "queues": NAMES, "detail": STR.n}, {"value": NUM.n})).n,
    "load_sources": Seq(Rec({"name": STR, "type": STR, "value": NUM.n, "age_s": NUM.n, "state": STR,
                             "on_stale": STR, "error": STR.n})).n,
    "node_load": Map(STR).n,
    "reservations": Map(Rec({"start": TIME, "nodes": NAMES})).n,
    "drains": Map(Rec({"since": TIME.n, "ready": TIME.n}, {"want": COUNT})).n,
    "downtimes": Map(Rec({"name": STR, "start": TIME, "end": TIME}, {"begin": TIME})).n,
    "downtime_windows": Seq(Rec({"name": STR, "start": TIME, "end": TIME},
                                {"hosts": NAMES, "node_types": NAMES, "margin": SECONDS})).n,
    "pools": Map(_POOL).n,
})
_STANDBY = Rec({}, {"host": STR.n, "pid": INT.n, "since": TIME.n, "checked": TIME.n, "error": STR.n,
                    "leader": Rec({}, {"host": STR.n, "pid": INT.n, "since": TIME.n}).n})


def validate(doc: dict[str, Any], spec: Spec, path: str) -> None:
    """Raise `StatusError` "PATH: KEY: what is wrong" unless `doc` fits `spec`."""
    try:
        spec.check(doc, "")
    except _Bad as exc:
        raise StatusError(f"{path}: {exc}") from None


def validate_status(doc: dict[str, Any], path: str) -> None:
    """Check a status document once, where it is loaded: the keys the commands read and
    every job and node row, column by column."""
    validate(doc, _STATUS, path)
    try:
        refs = _table(doc, "jobs", _JOB)["rejected"]  # which of the rejected sets: an index
        _table(doc, "nodes", _NODE)
        sets = len(doc.get("rejected") or ())
        if max((v for v in refs if v is not None), default=-1) >= sets:
            bad = next(i for i, v in enumerate(refs) if v is not None and v >= sets)
            raise _Bad(f"jobs[{bad}].rejected", f"no rejected[{refs[bad]}] ({sets} in the file)")
    except _Bad as exc:
        raise StatusError(f"{path}: {exc}") from None


def _table(doc: dict[str, Any], kind: str, specs: dict[str, Spec]) -> dict[str, Sequence[Any]]:
    """Check the rows of `kind` ("jobs", "nodes") and return their columns by name."""
    ckey = f"{kind[:-1]}_columns"
    cols, rows_ = doc[ckey], doc[kind]
    lacking = [c for c in specs if c not in cols]
    if lacking:
        raise _Bad(ckey, f"lacks {', '.join(lacking)}")
    if len(set(cols)) < len(cols):
        raise _Bad(ckey, "names a column twice")
    if rows_ and (set(map(type, rows_)) != {list} or set(map(len, rows_)) != {len(cols)}):
        bad = next(i for i, r in enumerate(rows_) if type(r) is not list or len(r) != len(cols))
        r = rows_[bad]
        got = f"{len(r)}" if type(r) is list else _show(r)
        raise _Bad(f"{kind}[{bad}]", f"expected a row of {len(cols)} values (one per {ckey}), got {got}")
    columns = dict(zip(cols, zip(*rows_))) if rows_ else dict.fromkeys(cols, ())
    for name, spec in specs.items():
        col = columns[name]
        if isinstance(spec, Kind) and spec.column_fits(col):
            continue
        for i, v in enumerate(col):
            spec.check(v, f"{kind}[{i}].{name}")
    return columns
