"""The status file: what the daemon publishes after each cycle for the status commands.

It is one JSON document written atomically (`mysched.files.write_atomic`) with mode 0644 in the
state directory, so unprivileged users can read queue, node and share views without access
to the database or the batch server. Jobs and nodes are stored as rows under a `columns`
header to keep the file small and quick to load at tens of thousands of jobs.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from mysched.core.rules.access import node_type
from mysched.core.settings import Config
from mysched.errors import StatusError
from mysched.files import os_reason, read_capped, temp_prefix, write_atomic
from mysched.gcpause import gc_paused
from mysched.core.model.batch import NodeState, Snapshot
from mysched.core.model.plan import Plan
from mysched.core.model.reasons import BLOCKING
from mysched.daemon.downtimeclash import WARNINGS

FORMAT = 4
"""2: a job's state is TORQUE's (``S`` is suspended); the ``cycle`` column says "started" or
"planned" (dry run) for what this cycle did; ``dry_run`` at the top.
3: ``rank`` counts only the waiting jobs the cycle could start (a blocked job and a job it
started have none: an older reader would call a blocked one "waiting, position -"); nodes
carry the admin's ``note``.
4: what is absent is null, never an empty string (a job's ``reason``, ``detail``, ``nodes``,
``cycle`` and ``request``; a node's ``type``, ``class`` and ``note``; an open throttle's
``detail``), so the commands' JSON passes it on as null (docs/json.md)."""
FILENAME = "status.json"

JOB_COLUMNS = ["id", "vo", "group", "user", "queue", "cores", "state", "submit", "start", "walltime",
               "nodes", "rank", "priority", "reason", "detail", "rejected", "cycle", "request", "torque_priority"]
NODE_COLUMNS = ["name", "state", "type", "slots", "used", "jobs", "vos", "users", "diversity", "class",
                "properties", "note"]


def build_status(snapshot: Snapshot, plan: Plan, config: Config, *, cycle: dict[str, Any] | None = None,
                 published: float | None = None, usage: Any = None, started: set[str] | None = None,
                 dry_run: bool = False) -> dict[str, Any]:
    """The status document for one cycle (pure: no I/O).

    `started`: the planned starts that took effect (None: all of them). They are shown as
    the next snapshot will show them: running, on their nodes, in their VO's figures. In a
    dry run nothing started: planned starts stay queued, marked "planned" with their nodes."""
    starts = {s.job_id: s for s in plan.starts}
    if dry_run:
        started = set()
    elif started is None:
        started = set(starts)
    # Positions count the jobs still waiting that the cycle could start, as showq's eligible
    # list: a blocked job (a hold, a limit, its queue) has none and moves no one else down, and
    # the jobs the cycle started run now (counted, the first waiting job was "position 168" and
    # `when` said 19,999 jobs were ahead of one `why` put at position 20,143).
    ordered = sorted([s.rank for s in plan.starts if s.job_id not in started]
                     + [w.rank for w in plan.waits.values() if w.reason not in BLOCKING])
    position = {r: i for i, r in enumerate(ordered, 1)}
    rejected_sets: list[dict[str, int]] = []
    rejected_index: dict[int, int] = {}
    jobs = []
    node_jobs: dict[str, list] = {}
    alone: set[str] = set()
    """Nodes running a job that asked for its nodes alone."""
    vo_of: dict[str, str] = {}  # per group: the same few dozen groups, tens of thousands of jobs
    said: dict[int, tuple[Any, str | None]] = {}
    """Request text by the request object's id (the mappings share one object per request text)."""
    for job in snapshot.jobs:
        vo = job.vo
        if not vo:
            vo = vo_of.get(job.group)
            if vo is None:
                vo = vo_of[job.group] = config.vo_of(job.group)
        state = job.state._value_
        rank = prio = None
        reason = detail = None
        rej = None
        placement = job.placement
        s = starts.get(job.id)
        w = plan.waits.get(job.id)
        mark = None
        if s is not None:
            rank, prio, reason = position.get(s.rank), s.priority, s.reason
            placement = s.placement
            if job.id in started:
                state, mark = "R", "started"
            else:
                mark = "planned" if dry_run else "failed"
        elif w is not None:
            rank, prio, reason, detail = position.get(w.rank), w.priority, w.reason, w.detail
            if w.nodes_rejected is not None:
                key = id(w.nodes_rejected)
                if key not in rejected_index:
                    rejected_index[key] = len(rejected_sets)
                    rejected_sets.append(dict(w.nodes_rejected))
                rej = rejected_index[key]
        nodes_txt = "+".join(f"{n}:{c}" for n, c in placement) if placement else None
        jobs.append([job.id, vo, job.group, job.user, job.queue, job.cores, state, job.submit_time,
                     job.start_time, job.walltime, nodes_txt, rank, round(prio, 6) if prio is not None else None,
                     reason, detail or None, rej, mark, _request_text(job.request, said), job.priority])
        if job.state.holds_slots or mark == "started":
            for n, c in placement:
                node_jobs.setdefault(n, []).append((job.user, vo, c))
            if job.request is not None and job.request.exclusive:
                alone.update(n for n, _ in placement)
    types = {node.name: node_type(config, node.name, node.properties) for node in snapshot.nodes}
    nodes = []
    for node in snapshot.nodes:
        js = node_jobs.get(node.name, [])
        vos: dict[str, int] = {}
        for _, vo, _c in js:
            vos[vo] = vos.get(vo, 0) + 1
        users = len({u for u, _, _ in js})
        used = sum(c for _, _, c in js)
        div = users / len(js) if js else None
        state = node.state.value
        if node.state in (NodeState.FREE, NodeState.FULL):  # full: the planner starts nothing more there
            full = used >= node.slots or node.state == NodeState.FULL or node.name in alone
            state = "full" if full else ("free" if not js else "partial")
        nodes.append([node.name, state, types[node.name], node.slots, used, len(js), vos, users,
                      round(div, 4) if div is not None else None, plan.node_classes.get(node.name) or None,
                      sorted(node.properties), node.note or None])
    # VO figures after this cycle's starts, like the jobs and nodes above (the plan's are
    # those of the cycle's beginning).
    slots_now: dict[str, int] = {}
    jobs_now: dict[str, int] = {}
    for jid in started:
        st = starts[jid]
        slots_now[st.vo] = slots_now.get(st.vo, 0) + st.cores
        jobs_now[st.vo] = jobs_now.get(st.vo, 0) + 1
    vos_doc = {}
    for name, v in plan.vos.items():
        cfg_vo = config.vo(name)
        running = v.running_slots + slots_now.get(name, 0)
        vos_doc[name] = {
            "share": round(v.share, 6), "guarantee": v.guarantee, "running_slots": running,
            "running_jobs": v.running_jobs + jobs_now.get(name, 0), "queued_jobs": v.queued_jobs - jobs_now.get(name, 0),
            "usage_s": round(v.usage, 1),
            "usage_fraction": round(v.usage_fraction, 6), "priority": round(v.priority, 6),
            "below_guarantee": running < v.guarantee, "started": jobs_now.get(name, 0),
            "groups": list(cfg_vo.groups), "max_running": cfg_vo.max_running, "max_per_node": cfg_vo.max_per_node,
            "max_cores": cfg_vo.max_cores,
            "throttled": [t.rule for t in plan.throttles if t.factor < 1 and name in t.vos],
        }
    return {
        "format": FORMAT,
        "published": published if published is not None else snapshot.time,
        "snapshot_time": snapshot.time,
        "server": snapshot.server,
        "config": config.source,
        "interval": config.interval,
        "policy": plan.policy,
        "cycle": cycle or {},
        "dry_run": dry_run,
        "farm": {"total_slots": plan.total_slots, "used_slots": plan.used_slots + sum(starts[j].cores for j in started),
                 "free_slots": plan.free_slots, "nodes": len(snapshot.nodes)},
        "reasons": plan.reasons(),
        "vos": vos_doc,
        "job_columns": JOB_COLUMNS,
        "jobs": jobs,
        "node_columns": NODE_COLUMNS,
        "nodes": nodes,
        "rejected": rejected_sets,
        "queues": {q.name: {"enabled": q.enabled, "started": q.started, "max_running": q.max_running,
                            "max_user_run": q.max_user_run, "max_group_run": q.max_group_run}
                   for q in snapshot.queues},
        "usage": {"window_s": config.history_window, "half_life_s": config.half_life,
                  "group": {k: round(v, 1) for k, v in (usage.group.items() if usage is not None else ())},
                  "user": {k: round(v, 1) for k, v in (usage.user.items() if usage is not None else ())}},
        "limits": {"groups": {g.name: {"max_running": g.max_running, "max_per_node": g.max_per_node, "share": g.share,
                                       "max_cores": g.max_cores} for g in config.groups.values()},
                   # users.NAME, and "default" for every user without a block of their own
                   "users": {u: {"max_running": lim.max_running, "max_cores": lim.max_cores}
                             for u, lim in config.users.items()},
                   "server": {k: getattr(snapshot.limits, k) for k in ("max_running", "max_user_run", "max_group_run")}
                   if snapshot.limits is not None else None},
        "node_types": {nt.name: {"nodes": list(nt.nodes), "properties": list(nt.properties), "groups": list(nt.groups),
                                 "vos": list(nt.vos)} for nt in config.node_types},
        "throttles": [{"rule": t.rule, "source": t.source, "level": t.level, "factor": round(t.factor, 4),
                       "value": t.value, "low": t.low, "high": t.high, "vos": sorted(t.vos),
                       "groups": sorted(t.groups), "queues": sorted(t.queues),
                       "detail": t.detail() if t.level != "open" else None} for t in plan.throttles],
        "node_load": dict(plan.node_load),
        # a reserved job started this cycle holds its nodes as a running job now, not by promise
        "reservations": {j: {"start": r.start, "nodes": list(r.nodes)} for j, r in plan.reservations.items()
                         if j not in started},
        "drains": {n: {"since": d.since, "ready": d.ready, "want": d.want} for n, d in plan.drains.items()},
        "downtimes": {n: {"name": w.name, "start": w.start, "end": w.end, "begin": w.begin}
                      for n, w in plan.downtimes.items()},
        # every window not over, for start estimates (`mysched when`)
        "downtime_windows": [{"name": d.name, "start": d.start, "end": d.end, "hosts": list(d.hosts),
                              "node_types": list(d.node_types), "margin": d.margin}
                             for d in config.downtimes if d.end > plan.now],
        "pools": plan.pools,
        "pool_gates": {h: list(g) for h, g in plan.pool_gates.items()},
        "queue_config": {q.name: {"max_running": q.max_running, "max_cores": q.max_cores, "nodes": list(q.nodes),
                                  "node_types": list(q.node_types), "exclusive": q.exclusive}
                         for q in config.queues.values()},
    }


def _request_text(req: Any, said: dict[int, tuple[Any, str | None]]) -> str | None:
    """A job's request as the status file gives it (None: cores on one node), written once
    per request object."""
    if req is None:
        return None
    got = said.get(id(req))
    if got is None or got[0] is not req:
        got = said[id(req)] = (req, str(req) or None)
    return got[1]


def publish_status(directory: str, snapshot: Snapshot, plan: Plan, config: Config, *,
                   extra: dict[str, Any] | None = None, **kw: Any) -> bytes:
    """Build (`build_status` with `kw`, plus the `extra` keys), encode and write the status
    file; its bytes are returned for republishing it marked stale. The collector is paused
    meanwhile: a list per job and no reference cycles, and its scans of a farm's worth of
    objects made the step superlinear (0.25 s instead of 0.16 s at 50,000 jobs)."""
    with gc_paused():
        doc = build_status(snapshot, plan, config, **kw)
        doc.update(extra or {})
        WARNINGS.check(doc)  # downtimes that running jobs run into: logged once per window
        data = encode(doc)
        del doc
    write_status(directory, data)
    return data


def write_status(directory: str, doc: dict[str, Any] | bytes) -> str:
    """Write the document (or its `encode`d bytes) atomically as `directory`/status.json,
    world-readable."""
    return write_json(directory, FILENAME, doc)


def encode(doc: dict[str, Any]) -> bytes:
    """The document as compact JSON. json.dumps, not json.dump: only the one-shot form runs
    the C encoder; json.dump encodes in Python chunk by chunk (0.12 s against 0.03 s for
    20,000 jobs)."""
    return json.dumps(doc, separators=(",", ":")).encode("utf-8")


def with_key(data: bytes, key: str, value: Any) -> bytes:
    """An `encode`d document with one more top-level key (the document must not have it):
    marks the last good status stale without keeping the document itself in memory."""
    return data[:-1] + b"," + json.dumps(key).encode() + b":" + encode(value) + b"}"


def ensure_state_dir(directory: str) -> None:
    """Create the state directory, or fail now naming it: a daemon that cannot write there
    would publish nothing and, when its leadership lock lives there too, stand by for ever
    as if another daemon led."""
    if os.path.exists(directory) and not os.path.isdir(directory):
        raise StatusError(f"state directory {directory}: not a directory")
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as exc:
        raise StatusError(f"state directory {directory}: cannot create it: {exc.strerror or exc}") from None
    if not os.access(directory, os.W_OK | os.X_OK):
        raise StatusError(f"state directory {directory}: not writable by this user (uid {os.getuid()})")


def write_json(directory: str, name: str, doc: dict[str, Any] | bytes) -> str:
    """Write a JSON document atomically (`mysched.files.write_atomic`), mode 0644, in place of
    whatever is there (a link or a pipe is replaced, not followed)."""
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, name)
    data = doc if isinstance(doc, bytes) else encode(doc)
    write_atomic(path, data, mode=0o644, follow=False)
    _sweep(directory, name)
    return path


STALE_TMP_S = 600.0


def _sweep(directory: str, name: str) -> None:
    """Remove the temporary files of `name` a killed daemon left behind (older than
    `STALE_TMP_S`; a younger one may be another writer's, in flight)."""
    now = time.time()
    prefix = temp_prefix(os.path.splitext(name)[0])  # also the ".status.*.tmp" of older versions
    try:
        names = [n for n in os.listdir(directory) if n.startswith(prefix) and n.endswith(".tmp")]
    except OSError:
        return
    for n in names:
        p = os.path.join(directory, n)
        try:
            if now - os.stat(p).st_mtime > STALE_TMP_S:
                os.unlink(p)
        except OSError:
            pass


MAX_BYTES = 128 << 20
"""The largest status (or standby) file the commands read: about 600,000 jobs at 200 bytes a
row, far beyond a farm's queue; a file linked to /dev/zero had exhausted the memory."""


def load_json(path: str, what: str = "status file") -> Any:
    """The JSON document in `path`, read whole with the cap `MAX_BYTES`. An `OSError` when it
    cannot be read -- `mysched.files.Unsuitable` for a named pipe, a device or a file too
    large, refused without blocking -- and a `StatusError` "PATH: not a mysched WHAT: why"
    when it is no JSON document: never the parser's own wording."""
    data = read_capped(path, MAX_BYTES, what)
    try:
        return json.loads(data)
    except RecursionError:
        why = "nested too deeply to be one"
    except UnicodeDecodeError:
        why = "not UTF-8 text"
    except json.JSONDecodeError as exc:
        why = ("empty (cut short while written?)" if not data.strip() else
               f"not JSON (from line {exc.lineno}, column {exc.colno}"
               f"{': cut short while written?' if exc.pos >= len(data.rstrip()) else ''})")
    raise StatusError(f"{path}: not a mysched {what}: {why}")


def read_status(path: str, *, max_age: float | None = None, now: float | None = None,
                formats: tuple[int, ...] = (FORMAT,)) -> dict[str, Any]:
    """Load a status file; missing, unreadable, corrupt or stale files raise `StatusError`,
    and so does a file of a format not in `formats`.

    `path` may be the file or the state directory. `max_age` is in seconds of wall time
    since the file was written (its mtime); a file written more than that in the future
    (a clock set wrong, here or where it was written) is not current either.
    """
    if os.path.isdir(path):
        path = os.path.join(path, FILENAME)
    try:
        st = os.stat(path)
        doc = load_json(path)
    except FileNotFoundError:
        raise StatusError(f"{path}: no status file — is the mysched daemon running? "
                          "(it writes this file after each cycle; see --state-dir)") from None
    except PermissionError:
        raise StatusError(f"{path}: permission denied (the daemon writes it world-readable; check the "
                          "state directory's permissions)") from None
    except OSError as exc:
        raise StatusError(f"{path}: unreadable status file: {os_reason(exc)}") from None
    fmt = doc.get("format") if isinstance(doc, dict) else None
    if fmt not in formats:
        raise StatusError(f"{path}: {_format_mismatch(fmt)}")
    if max_age is not None:
        age = (now if now is not None else time.time()) - st.st_mtime
        if age > max_age:
            raise StatusError(f"{path}: status is stale: last written {age:.0f} s ago (daemon stopped or "
                              f"stuck? expected a cycle every {doc.get('interval', 60):g} s)")
        if -age > max_age:
            raise StatusError(f"{path}: status is not current: last written {-age:.0f} s in the future (a clock "
                              "set wrong, here or where it was written)")
    return doc


def _format_mismatch(fmt: Any) -> str:
    """Why a file of another format is refused, and what to do: across an upgrade the daemon
    and the commands can differ for a cycle (or for good, on another host)."""
    if type(fmt) is not int:
        return f"not a mysched status file (no format number; this mysched reads format {FORMAT})"
    if fmt < FORMAT:
        return (f"status file of format {fmt}, written by an older mysched daemon; this mysched reads format "
                f"{FORMAT}: restart the daemon on the new version (it rewrites the file every cycle)")
    return (f"status file of format {fmt}, written by a newer mysched daemon; this mysched reads format "
            f"{FORMAT}: upgrade mysched where you run this command")


def rows(doc: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    """Jobs or nodes of a status document as dicts (`kind` is "jobs" or "nodes")."""
    cols = doc[f"{kind[:-1]}_columns"]
    return [dict(zip(cols, r)) for r in doc[kind]]


def placement(text: str | None) -> list[tuple[str, int]]:
    """A job's ``nodes`` column ("NODE:CORES+NODE:CORES", or null) as (node, cores) pairs."""
    out = []
    for part in (text or "").split("+"):
        name, _, c = part.rpartition(":")
        if name:
            out.append((name, int(c or 1)))
    return out


def hosts(text: str | None) -> list[str] | None:
    """The host names of a job's ``nodes`` column, each once, in order; None when it has none."""
    return list(dict.fromkeys(n for n, _ in placement(text))) or None
