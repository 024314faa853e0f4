"""OpenPBS's attributes as the model: pbs_statjob, pbs_statvnode, pbs_statque and
pbs_statserver replies to `Job`, `Node`, `Queue` and `ServerLimits`, every malformed value
reported as a warning rather than guessed (as the TORQUE mapping does).

What differs from TORQUE: a job asks ``select`` chunks and a ``place`` (`request_of`), runs
where ``exec_vnode`` says, and ends in state ``F``; a node is a vnode with
``resources_available.*`` (its custom booleans and strings its properties); run limits come
in the old form (``max_running``, ``max_user_run``, ``max_group_run``, ``max_user_res.ncpus``
...) and the new (``max_run = [o:PBS_ALL=N], [u:PBS_GENERIC=N], [u:alice=N], [g:...], [p:...]``,
``max_run_res.ncpus`` and ``.mem`` the same), each a `RunCap` with its spelling (the lower of
two for the same consumer counting); limits of other resources are reported, and soft limits
noted (they only make jobs preemptable in OpenPBS, and mysched does not preempt).
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
from mysched.core.model.batch import Job, JobState, Node, NodeState, Queue, RunCap, ServerLimits
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
LIMITED = {"ncpus": "cores", "mem": "mem"}
"""Resources whose run limits (``max_run_res.R``, ``max_user_res.R`` ...) mysched honours, as
what the model counts of them."""
CONSUMERS = {"o": "all", "u": "user", "g": "group", "p": "project"}
"""OpenPBS's limit entity kinds as the model's consumers."""
SOFT = ("max_run_soft", "max_run_res_soft.", "max_user_run_soft", "max_group_run_soft", "max_user_res_soft.",
        "max_group_res_soft.")
"""Soft limits: OpenPBS's pbs_sched only marks jobs over them preemptable."""


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
               priority, array_parent(name), project=intern(a.get("project", "")))


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


def _limit_value(what: str, key: str, value: str, measure: str, warnings: list[str]) -> int | None:
    """A limit's value as a count of jobs or cores, or bytes (None: reported, not enforced)."""
    v = value.strip()
    if measure == "mem":
        try:
            return parse_mem(v)
        except ValueError:
            pass
    elif digits(v):
        return int(v)
    warnings.append(f"{what}: {key} {v[:40]!r} is no {'size' if measure == 'mem' else 'count'}; not enforced")
    return None


def _entries(what: str, key: str, measure: str, text: str, warnings: list[str]) -> list[RunCap]:
    """The caps of one new-form limit (``max_run``, ``max_run_res.ncpus``): one per entry."""
    try:
        entries = parse_limits(text)
    except ValueError as exc:
        warnings.append(f"{what}: {key}: {exc}; not enforced")
        return []
    out = []
    for (kind, name), value in entries.items():
        spelled = f"{key} [{kind}:{name}={value}]"
        generic = name == ("PBS_ALL" if kind == "o" else "PBS_GENERIC")
        if kind == "o" and not generic or kind != "o" and name == "PBS_ALL":
            warnings.append(f"{what}: {spelled}: no such entity (o:PBS_ALL, u|g|p:PBS_GENERIC or u|g|p:NAME); "
                            "not enforced")
            continue
        n = _limit_value(what, spelled, value, measure, warnings)
        if n is not None:
            out.append(RunCap(measure, CONSUMERS[kind], n, None if generic else name, spelled))
    return out


def _limits(what: str, a: dict[str, str], warnings: list[str]) -> list[RunCap]:
    """A queue's or the server's run limits beside TORQUE's three counts: ``max_run`` and
    ``max_run_res.ncpus``/``.mem`` (every entry: everyone, each or a named user, group or
    project), and the old ``max_user_res.R``/``max_group_res.R``. Other resources' limits
    are reported as not enforced; soft limits are noted as not enforced (OpenPBS only marks
    jobs over them preemptable, and mysched does not preempt)."""
    caps: list[RunCap] = []
    other: list[str] = []
    soft: list[str] = []
    for key in sorted(a):
        text = a[key]
        if not text or not text.strip():
            continue
        if key.startswith(SOFT):
            soft.append(key)
        elif key == "max_run":
            caps += _entries(what, key, "jobs", text, warnings)
        elif key.startswith(("max_run_res.", "max_user_res.", "max_group_res.")):
            base, _, res = key.partition(".")
            measure = LIMITED.get(res)
            if measure is None:
                other.append(key)
            elif base == "max_run_res":
                caps += _entries(what, key, measure, text, warnings)
            elif (n := _limit_value(what, key, text, measure, warnings)) is not None:
                caps.append(RunCap(measure, "user" if base == "max_user_res" else "group", n, None, f"{key} = {text}"))
    if other:
        warnings.append(f"{what}: {', '.join(other)[:200]} not enforced by mysched (it honours limits of ncpus and mem "
                        "only)")
    if soft:
        warnings.append(f"{what}: {', '.join(soft)[:200]}: soft limits, not enforced (OpenPBS only makes jobs over "
                        "them preemptable; mysched does not preempt)")
    return caps


def _lower(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else min(a, b)


def queue_from_attrs(name: str, a: dict[str, str], warnings: list[str]) -> Queue | None:
    """A model `Queue` for an execution queue (None: a routing queue): ``max_run``'s
    ``[o:PBS_ALL=N]`` joins its ``max_running`` (the lower counts), every other limit is one
    of its caps."""
    q = torque_queue(name, a, warnings)
    if q is None:
        return None
    caps = _limits(f"queue {name}", a, warnings)
    total = [c.cap for c in caps if c.measure == "jobs" and c.by == "all"]
    return dataclasses.replace(q, max_running=_lower(q.max_running, min(total, default=None)),
                               caps=tuple(c for c in caps if c.measure != "jobs" or c.by != "all"))


def server_limits_from_attrs(a: dict[str, str], warnings: list[str]) -> ServerLimits | None:
    """The server's run limits (None: none set): the old form's counts and every other limit
    as a cap."""
    old = torque_limits(a, warnings) or ServerLimits()
    lim = dataclasses.replace(old, caps=tuple(_limits("server", a, warnings)))
    return None if lim == ServerLimits() else lim
