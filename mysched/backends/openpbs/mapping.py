"""OpenPBS's attributes as the model: pbs_statjob, pbs_statvnode, pbs_statque and
pbs_statserver replies to `Job`, `Node`, `Queue` and `ServerLimits`, every malformed value
reported as a warning rather than guessed (as the TORQUE mapping does).

What differs from TORQUE: a job asks ``select`` chunks and a ``place`` (`request_of`), runs
where ``exec_vnode`` says, and ends in state ``F``; a node is a vnode with
``resources_available.*`` (its custom booleans and strings its properties); run limits come
in the old form (``max_running``, ``max_user_run``, ``max_group_run``) and the new
(``max_run = [o:PBS_ALL=N], [u:PBS_GENERIC=N], [g:PBS_GENERIC=N]``), the lower one counting.
"""

from __future__ import annotations

import dataclasses
import sys

from mysched.backends.openpbs.values import (Chunk, Place, bool_value, parse_exec_vnode, parse_limits, parse_place,
                                             parse_select, parse_vnode_jobs)
from mysched.backends.torque.mapping import attr_time, attr_value
from mysched.backends.torque.mapping import queue_from_attrs as torque_queue
from mysched.backends.torque.mapping import server_limits_from_attrs as torque_limits
from mysched.backends.torque.values import array_parent
from mysched.core.model.batch import Job, JobState, Node, NodeState, Queue, ServerLimits
from mysched.core.model.durations import parse_duration
from mysched.core.model.request import NodePart, Request
from mysched.core.model.sizes import MAX_NODE_SLOTS, digits, parse_mem

STATES = {"F": "C", "X": "C", "M": "C", "U": "S"}
"""OpenPBS job states TORQUE lacks, as the model's: finished, expired sub-job and moved are
complete; suspended for workstation activity is suspended."""
NODE_FLAGS = {"job-busy": "job-exclusive", "resv-exclusive": "job-exclusive", "stale": "down",
              "unresolvable": "down", "maintenance": "offline", "sleep": "offline", "provisioning": "offline",
              "wait-provisioning": "offline"}
"""vnode states TORQUE lacks, as TORQUE's flags (`NodeState.parse` reduces them)."""
NOT_PROPERTIES = frozenset({"ncpus", "mem", "vmem", "ngpus", "nmics", "naccelerators", "accelerator_memory",
                            "hbmem", "mpiprocs", "ompthreads", "vnode"})
"""vnode resources that are amounts, or the vnode itself: never properties."""


def state_of(code: str) -> JobState:
    code = code.strip().upper()[:1]
    return JobState.parse(STATES.get(code, code))


def request_of(chunks: tuple[Chunk, ...], place: Place) -> Request | None:
    """The model's request for chunks and a place (None: cores on any one node).

    Each chunk kind is a node part (its chunks on distinct vnodes); ``pack`` puts them all on
    one vnode; ``free`` chunks of one core with nothing asked of their vnode are cores
    anywhere (``procs``). Memory is per chunk in OpenPBS: the model takes the largest
    per-core figure of any chunk as its ``pmem``, so no vnode is overcommitted. ``excl`` and
    ``exclhost`` ask vnodes that run nothing else."""
    total = sum(c.count for c in chunks)
    cores = sum(c.count * c.ncpus for c in chunks)
    props = frozenset().union(*(c.properties for c in chunks)) if chunks else frozenset()
    vnodes = {c.vnode for c in chunks}
    procs = None
    if place.arrangement == "pack" and total > 1:
        host = vnodes.pop() if len(vnodes) == 1 else None
        parts: tuple[NodePart, ...] = (NodePart(1, max(1, cores), host, props),)
    elif (place.arrangement == "free" and total > 1 and all(c.ncpus == 1 and c.vnode is None and not c.properties
                                                              for c in chunks)):
        parts, procs = (), cores
    else:
        merged: dict[tuple, NodePart] = {}
        for c in chunks:
            key = (c.ncpus, c.vnode, c.properties) if c.vnode is None else (c.vnode,)
            p = merged.get(key)
            if p is None:
                merged[key] = NodePart(c.count, max(1, c.ncpus), c.vnode, c.properties)
            elif c.vnode is None:
                merged[key] = p._replace(count=p.count + c.count)
            else:  # one vnode asked twice: one part with all its cores there
                merged[key] = p._replace(ppn=p.ppn + max(1, c.ncpus), properties=p.properties | c.properties)
        parts = tuple(merged.values())
    pmem = None
    for c in chunks:
        if c.mem is not None:
            per = -(-c.mem // max(1, c.ncpus))
            pmem = per if pmem is None else max(pmem, per)
    req = Request(parts, procs, None, pmem, place.sharing in ("excl", "exclhost"))
    return None if req.simple else req


    try:
        return parse(v)
    except ValueError as exc:
        warnings.append(f"job {name}: {exc}")
        return None


def chunks_of(name: str, a: dict[str, str], warnings: list[str]) -> tuple[tuple[Chunk, ...], Place]:
    """A job's chunks (the server's ``schedselect``, defaults applied, else its select) and
    place; a malformed one is reported and read as one chunk of ``Resource_List.ncpus``."""
    try:
        place = parse_place(a.get("Resource_List.place"))
    except ValueError as exc:
        warnings.append(f"job {name}: {exc}; taken as free")
        place = Place()
    text = a.get("schedselect") or a.get("Resource_List.select")
    if text:
        try:
            return parse_select(text), place
        except ValueError as exc:
            warnings.append(f"job {name}: {exc}; taken as its ncpus on one vnode")
    n = a.get("Resource_List.ncpus", "1").strip()
    return (Chunk(1, int(n) if digits(n) else 1),), place


_REQUESTS: dict[tuple, tuple] = {}
"""Requests read so far by their texts: a backlog repeats a few dozen."""


def _request(name: str, a: dict[str, str], warnings: list[str]) -> tuple[tuple[Chunk, ...], Request | None]:
    key = (a.get("schedselect") or a.get("Resource_List.select"), a.get("Resource_List.place"),
           a.get("Resource_List.ncpus"))
    hit = _REQUESTS.get(key)
    if hit is not None:
        return hit
    before = len(warnings)
    chunks, place = chunks_of(name, a, warnings)
    out = (chunks, request_of(chunks, place))
    if len(warnings) == before:
        if len(_REQUESTS) > 10_000:
            _REQUESTS.clear()
        _REQUESTS[key] = out
    return out


def job_from_attrs(name: str, a: dict[str, str], warnings: list[str],
                   node_names: frozenset[str] = frozenset()) -> Job | None:
    """A model `Job` from pbs_statjob attributes; None for an array's parent (its sub-jobs
    run) or a job whose state cannot be read."""
    if "[]" in name:
        return None
    try:
        state = state_of(a.get("job_state", ""))
    except ValueError:
        warnings.append(f"job {name}: unknown state {a.get('job_state', '')[:40]!r}; skipped")
        return None
    intern = sys.intern
    user = intern(a.get("euser") or a.get("Job_Owner", "").partition("@")[0] or "unknown")
    group = intern(a.get("egroup") or user)
    chunks, req = _request(name, a, warnings)
    cores = sum(c.count * c.ncpus for c in chunks)
    placement = attr_value(name, a, "exec_vnode", parse_exec_vnode, warnings) or ()
    if placement and state.holds_slots:
        cores = sum(c for _, c in placement)
        placement = tuple((intern(n), c) for n, c in placement)

    def stamp(key: str) -> float | None:
        return attr_time(name, a, key, warnings)

    priority = 0
    if a.get("Priority"):
        try:
            priority = max(-1024, min(1023, int(a["Priority"])))
        except ValueError:
            warnings.append(f"job {name}: bad Priority {a['Priority'][:40]!r}; taken as 0")
    return Job(name, intern(a.get("queue", "")), user, group, max(1, cores), state,
               stamp("qtime") or stamp("ctime") or 0.0, stamp("stime"),
               attr_value(name, a, "Resource_List.walltime", parse_duration, warnings),
               attr_value(name, a, "Resource_List.mem", parse_mem, warnings), placement, None, a.get("Job_Name", ""), req,
               priority, array_parent(name))


def node_state(flags: str) -> NodeState:
    """A vnode's state flags (``job-busy``, ``state-unknown,down`` ...) as the model's."""
    parts = [NODE_FLAGS.get(f.strip().lower(), f.strip().lower()) for f in flags.split(",")]
    return NodeState.parse(",".join(parts))


def vnode_properties(a: dict[str, str]) -> frozenset[str]:
    """A vnode's booleans that are True (``bigmem``) and strings (``arch=linux``,
    ``host=wn01``) as properties; amounts are not."""
    props = set()
    for key, value in a.items():
        if not key.startswith("resources_available."):
            continue
        res = key[len("resources_available."):]
        if res in NOT_PROPERTIES or not value.strip():
            continue
        b = bool_value(value)
        if b is not None and not digits(value.strip()):
            if b:
                props.add(res)
        elif not _amount(value):
            props.add(f"{res}={value.strip()}")
    return frozenset(props)


def _amount(text: str) -> bool:
    try:
        parse_mem(text)
        return True
    except ValueError:
        try:
            float(text)
            return True
        except ValueError:
            return False


def node_from_attrs(name: str, a: dict[str, str], warnings: list[str]) -> Node:
    """A model `Node` of a vnode: its cores are ``resources_available.ncpus`` (an unreadable
    count makes it offline), its memory ``resources_available.mem``."""
    note = " ".join(a.get("comment", "").split())
    text = a.get("resources_available.ncpus", "0").strip()
    slots = int(text) if digits(text) else -1
    if not 0 <= slots <= MAX_NODE_SLOTS:
        warnings.append(f"vnode {name}: bad resources_available.ncpus {text[:200]!r} (a count of 0 to "
                        f"{MAX_NODE_SLOTS}); taken as offline")
        return Node(name, 0, NodeState.OFFLINE, note=note)
    mem = None
    if a.get("resources_available.mem"):
        try:
            mem = parse_mem(a["resources_available.mem"])
        except ValueError:
            warnings.append(f"vnode {name}: bad resources_available.mem {a['resources_available.mem'][:200]!r}; "
                            "memory not checked there")
    return Node(name, slots, node_state(a.get("state", "")), vnode_properties(a), parse_vnode_jobs(a.get("jobs", "")),
                mem, note=note)


def _limits(what: str, a: dict[str, str], warnings: list[str]) -> tuple[int | None, int | None, int | None]:
    """(total, per user, per group) running jobs from ``max_run`` (generic entries only; a
    named user's, group's or project's is reported, not enforced)."""
    res = sorted(k for k in a if k.startswith(("max_run_res.", "max_run_res_soft.", "max_run_soft")) and a[k])
    if res:
        warnings.append(f"{what}: {', '.join(res)[:200]} not enforced by mysched (its max_cores limits are: "
                        "queues.NAME.max_cores, vos.NAME.max_cores)")
    text = a.get("max_run")
    if not text:
        return None, None, None
    try:
        entries = parse_limits(text)
    except ValueError as exc:
        warnings.append(f"{what}: max_run: {exc}; not enforced")
        return None, None, None
    out: list[int | None] = []
    for key in (("o", "PBS_ALL"), ("u", "PBS_GENERIC"), ("g", "PBS_GENERIC")):
        v = entries.get(key)
        out.append(int(v) if v is not None and digits(v) else None)
        if v is not None and not digits(v):
            warnings.append(f"{what}: max_run [{key[0]}:{key[1]}={v[:40]}] is no count; not enforced")
    other = sorted(f"[{k}:{n}={v}]" for (k, n), v in entries.items() if n not in ("PBS_ALL", "PBS_GENERIC"))
    if other:
        warnings.append(f"{what}: max_run {', '.join(other)[:200]}: limits of named users, groups and projects "
                        "are not enforced by mysched")
    return out[0], out[1], out[2]


def _lower(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else min(a, b)


def queue_from_attrs(name: str, a: dict[str, str], warnings: list[str]) -> Queue | None:
    """A model `Queue` for an execution queue (None: a routing queue), its run limits the
    lower of the old form and ``max_run``."""
    q = torque_queue(name, a, warnings)
    if q is None:
        return None
    total, user, group = _limits(f"queue {name}", a, warnings)
    return dataclasses.replace(q, max_running=_lower(q.max_running, total), max_user_run=_lower(q.max_user_run, user),
                               max_group_run=_lower(q.max_group_run, group))


def server_limits_from_attrs(a: dict[str, str], warnings: list[str]) -> ServerLimits | None:
    """The server's run limits (None: none set), old and new form as for a queue."""
    old = torque_limits(a, warnings) or ServerLimits()
    total, user, group = _limits("server", a, warnings)
    lim = ServerLimits(_lower(old.max_running, total), _lower(old.max_user_run, user),
                       _lower(old.max_group_run, group))
    return None if lim == ServerLimits() else lim
