"""TORQUE's attributes as the model: pbs_statjob, pbs_statnode and pbs_statque replies
(attribute dictionaries, or packed rows for jobs) to `Job`, `Node` and `Queue`, with every
malformed value reported as a warning rather than guessed."""

from __future__ import annotations

import math
import re
import sys
from typing import Callable

from mysched.backends.torque.ifl import PackedRows, StatResult, unpack
from mysched.backends.torque.values import (array_parent, parse_exec_host, parse_mem, parse_node_jobs, parse_node_parts,
                                            parse_nodes, parse_slot_limit, status_field)
from mysched.core.model.durations import parse_duration
from mysched.core.model.batch import Job, JobState, Node, NodeState, Placement, Queue, ServerLimits
from mysched.core.model.request import NodePart, Request
from mysched.core.model.sizes import MAX_NODE_SLOTS, digits

ACCOUNTING_FIELD_MAX = 4000
"""The longest job name or account string pbs_server can start a job with: TORQUE 6.1 writes
each into a 4,096-byte stack buffer (``sprintf(local_buf, "jobname=%s ", ...)`` in acct_job,
src/server/accounting.c) for the job's S record, and a longer one crashed it on the test farm.
qsub caps a name at 256 characters, but pbs_submit takes any length, and so does -A."""


def _hazard(a: dict[str, str]) -> str:
    """Why starting the job would crash pbs_server, or ""."""
    for key, what in (("Job_Name", "job name"), ("Account_Name", "account string")):
        n = len(a.get(key, "").encode("utf-8", "replace"))
        if n > ACCOUNTING_FIELD_MAX:
            return (f"its {what} has {n} bytes: TORQUE writes at most about {ACCOUNTING_FIELD_MAX} into the job's "
                    f"accounting record, and pbs_server crashes on a longer one when the job starts")
    return ""


_ARRAY_PARENT = re.compile(r"^\d+\[\]")


def _bool(text: str | None, default: bool = True) -> bool:
    if text is None:
        return default
    return text.strip().lower() in ("true", "t", "1", "yes", "y")


def _cores(name: str, a: dict[str, str], warnings: list[str]) -> int:
    """Cores a job asks for: nodes spec, else procs, else ncpus, else 1."""
    nodes = a.get("Resource_List.nodes")
    if nodes:
        try:
            return parse_nodes(nodes)
        except ValueError as exc:
            warnings.append(f"job {name}: {exc}; assuming 1 core")
            return 1
    for key in ("Resource_List.procs", "Resource_List.ncpus"):
        v = a.get(key)
        if v:
            if digits(v.strip()) and int(v) > 0:
                return int(v)
            warnings.append(f"job {name}: bad {key} {v!r}; ignored")
    return 1


def attr_time(name: str, a: dict[str, str], key: str, warnings: list[str]) -> float | None:
    """Attribute `key` as epoch seconds, or None (with a warning) when absent or not a finite number."""
    v = a.get(key)
    if not v:
        return None
    try:
        t = float(v)
        if not math.isfinite(t):  # nan would sort anywhere, inf never come
            raise ValueError
        return t
    except ValueError:
        warnings.append(f"job {name}: bad {key} {v[:200]!r}")
        return None


def attr_value(name: str, a: dict[str, str], key: str, parse, warnings: list[str]):  # noqa: ANN001, ANN202
    """`parse` of attribute `key`, or None (with a warning) when absent or malformed."""
    v = a.get(key)
    if not v:
        return None
    try:
        return parse(v)
    except ValueError as exc:
        warnings.append(f"job {name}: {exc}")
        return None


_REQUESTS: dict[tuple, Request | None] = {}
"""Requests read so far, by the attribute texts they come from: a backlog of tens of thousands
of jobs repeats a few dozen requests."""


def request_from_attrs(name: str, a: dict[str, str], warnings: list[str],
                       node_names: frozenset[str] = frozenset(), mem: int | None = None) -> Request | None:
    """The whole request where it is more than N cores on one node (None otherwise); `mem` is
    the job's already read ``mem`` (a malformed nodes spec was reported by `_cores`)."""
    key = (a.get("Resource_List.nodes"), a.get("Resource_List.procs"), a.get("Resource_List.ncpus"), mem, a.get("Resource_List.pmem"),
           a.get("Resource_List.naccesspolicy"), a.get("node_exclusive"), a.get("Resource_List.vmem"),
           a.get("Resource_List.pvmem"), node_names)
    try:
        return _REQUESTS[key]
    except KeyError:
        pass
    before = len(warnings)
    req = _read_request(name, a, warnings, node_names, mem)
    if len(warnings) == before:  # a malformed value is reported for every job that has it
        if len(_REQUESTS) > 10_000:
            _REQUESTS.clear()
        _REQUESTS[key] = req
    return req


def _read_request(name: str, a: dict[str, str], warnings: list[str], node_names: frozenset[str],
                  mem: int | None) -> Request | None:
    nodes = a.get("Resource_List.nodes")
    parts = ()
    if nodes:
        try:
            parts = parse_node_parts(nodes, node_names)
        except ValueError:
            parts = ()
    procs_text = a.get("Resource_List.procs")
    procs = int(procs_text) if procs_text and digits(procs_text.strip()) and int(procs_text) > 0 else None
    if procs is not None and (not parts or parts == ((parts[0]._replace(count=1, ppn=1)),)
                              and not parts[0].host and not parts[0].properties):
        parts = ()  # procs=N beside the queue's default nodes=1: N cores anywhere
    else:
        procs = None
    if not parts and procs is None:  # memory or a node alone, without nodes=: its cores on one node, as
        parts = (NodePart(1, _cores(name, a, [])),)  # pbs_server gives it (a malformed value was reported)
    pmem = attr_value(name, a, "Resource_List.pmem", parse_mem, warnings)
    exclusive = (a.get("Resource_List.naccesspolicy", "").strip().lower() in ("singlejob", "singletask")
                 or _bool(a.get("node_exclusive"), False))
    vmem = attr_value(name, a, "Resource_List.vmem", parse_mem, warnings)
    pvmem = attr_value(name, a, "Resource_List.pvmem", parse_mem, warnings)
    req = Request(parts, procs, mem, pmem, exclusive, vmem, pvmem)
    return None if req.simple else req


def job_from_attrs(name: str, a: dict[str, str], warnings: list[str],
                   node_names: frozenset[str] = frozenset()) -> Job | None:
    """A model `Job` from pbs_statjob attributes; None for an array parent (not runnable) or
    a job whose state cannot be read. Malformed values become None plus a warning."""
    if _ARRAY_PARENT.match(name):
        return None
    try:
        state = JobState.parse(a.get("job_state", ""))
    except ValueError:
        warnings.append(f"job {name}: unknown state {a.get('job_state')!r}; skipped")
        return None
    intern = sys.intern  # a backlog repeats a few users, groups and queues thousands of times
    user = intern(a.get("euser") or a.get("Job_Owner", "").partition("@")[0] or "unknown")
    group = intern(a.get("egroup") or user)
    cores = _cores(name, a, warnings)
    walltime = attr_value(name, a, "Resource_List.walltime", parse_duration, warnings)
    mem = attr_value(name, a, "Resource_List.mem", parse_mem, warnings)
    placement: Placement = attr_value(name, a, "exec_host", parse_exec_host, warnings) or ()
    if placement and state in (JobState.RUNNING, JobState.EXITING, JobState.SUSPENDED):
        cores = sum(c for _, c in placement)  # what it holds, whatever it asked for

    def stamp(key: str) -> float | None:
        return attr_time(name, a, key, warnings)

    submit = stamp("qtime") or stamp("ctime") or 0.0
    priority = 0
    if a.get("Priority"):
        try:
            priority = max(-1024, min(1023, int(a["Priority"])))
        except ValueError:
            warnings.append(f"job {name}: bad Priority {a['Priority']!r}; taken as 0")
    req = request_from_attrs(name, a, warnings, node_names, mem)
    if req is not None and not placement:
        cores = req.cores
    if placement:
        placement = tuple((intern(n), c) for n, c in placement)
    return Job(name, intern(a.get("queue", "")), user, group, cores, state, submit, stamp("start_time"), walltime,
               mem, placement, None, a.get("Job_Name", ""), req, priority, array_parent(name), _hazard(a))


class JobReader:
    """Jobs from packed pbs_statjob rows, keeping the `Job` of every job whose attributes are
    byte for byte what they were at the last read: in a backlog of tens of thousands most jobs
    do not change from one cycle to the next, and mapping them again was a third of the read.
    A job whose values drew a warning is read afresh each time (its warning stays visible)."""

    def __init__(self,
                 mapper: Callable[[str, dict[str, str], list[str], frozenset[str]], Job | None] | None = None) -> None:
        self._known: dict[bytes, tuple[bytes, Job | None]] = {}
        self._node_names: frozenset[str] | None = None
        self._map = mapper or job_from_attrs
        """One job's attributes as a `Job` (another product's adapter brings its own)."""

    def read(self, rows: PackedRows, warnings: list[str], node_names: frozenset[str]) -> list[Job]:
        if node_names is not self._node_names:  # requests name nodes: read them all again
            self._known, self._node_names = {}, node_names
        known = self._known
        fresh: dict[bytes, tuple[bytes, Job | None]] = {}
        jobs: list[Job] = []
        for name, packed in rows:
            hit = known.get(name)
            if hit is not None and hit[0] == packed:
                fresh[name] = hit
                job = hit[1]
            else:
                before = len(warnings)
                job = self._map(name.decode(errors="replace"), unpack(packed), warnings, node_names)
                if len(warnings) == before:
                    fresh[name] = (packed, job)
            if job is not None:
                jobs.append(job)
        self._known = fresh
        return jobs


def _status_size(name: str, status: str, key: str, consequence: str, warnings: list[str]) -> int | None:
    """A size pbs_mom reports in a node's `status` (None, with a warning if malformed)."""
    text = status_field(status, key)
    if not text:
        return None
    try:
        return parse_mem(text)
    except ValueError:
        warnings.append(f"node {name}: bad {key} {text!r}; {consequence}")
        return None


def node_from_attrs(name: str, a: dict[str, str], warnings: list[str]) -> Node:
    """A model `Node`; an unreadable np makes it offline (0 slots) rather than guessed. The
    admin's note is kept on one line: the status commands print it in a table row."""
    note = " ".join(a.get("note", "").split())
    np_text = a.get("np", "1")
    try:
        slots = int(np_text) if digits(np_text.strip()) else -1
        if not 0 <= slots <= MAX_NODE_SLOTS:
            raise ValueError
    except ValueError:
        warnings.append(f"node {name}: bad np {np_text[:200]!r} (a count of 0 to {MAX_NODE_SLOTS}); taken as offline")
        return Node(name, 0, NodeState.OFFLINE, note=note)
    props = frozenset(p.strip() for p in a.get("properties", "").split(",") if p.strip())
    status = a.get("status", "")
    mem = _status_size(name, status, "physmem", "memory not checked there", warnings)
    avail = _status_size(name, status, "availmem", "its free memory not checked", warnings)
    vmem = _status_size(name, status, "totmem", "virtual memory not checked there", warnings)
    load = None
    loadave = status_field(status, "loadave")
    if loadave:
        try:
            load = float(loadave)
            if not (load >= 0 and math.isfinite(load)):
                raise ValueError
        except ValueError:
            load = None
            warnings.append(f"node {name}: bad loadave {loadave!r}; its load not checked")
    return Node(name, slots, NodeState.parse(a.get("state", "")), props, parse_node_jobs(a.get("jobs", "")), mem,
                load, avail, vmem, note)


def _count(what: str, a: dict[str, str], key: str, warnings: list[str]) -> int | None:
    """A job-count limit (None where unset, or malformed -- with a warning)."""
    v = a.get(key)
    if not v:
        return None
    try:
        n = int(v)
        if n < 0:
            raise ValueError
        return n
    except ValueError:
        warnings.append(f"{what}: bad {key} {v!r}; not enforced")
        return None


def queue_from_attrs(name: str, a: dict[str, str], warnings: list[str]) -> Queue | None:
    """A model `Queue` for an execution queue; None for a routing queue (nothing runs there)."""
    if a.get("queue_type", "Execution").strip().lower()[:1] == "r":
        return None
    what = f"queue {name}"
    wall = a.get("resources_max.walltime")
    try:
        max_walltime = parse_duration(wall) if wall else None
    except ValueError:
        warnings.append(f"{what}: bad resources_max.walltime {wall[:200]!r}; not taken as its walltime ceiling")
        max_walltime = None
    return Queue(name, _bool(a.get("enabled")), _bool(a.get("started")), _count(what, a, "max_running", warnings),
                 _count(what, a, "max_user_run", warnings), _count(what, a, "max_group_run", warnings), max_walltime)


def server_limits_from_attrs(a: dict[str, str], warnings: list[str]) -> ServerLimits | None:
    """The server's own run limits (None: it sets none)."""
    lim = ServerLimits(*(_count("server", a, k, warnings) for k in ("max_running", "max_user_run", "max_group_run")))
    return None if lim == ServerLimits() else lim


def array_limits(rows: StatResult, default: int | None, warnings: list[str]) -> dict[str, int | None]:
    """Slot limit per job array, from its parent's ``job_array_request`` (``0-400%1``) in a
    ``summarize_arrays`` listing; an array asked without ``%N`` has the server's
    ``max_slot_limit`` (`default`; None: no limit), as pbs_server gives it one."""
    out: dict[str, int | None] = {}
    for name, a in rows:
        if not _ARRAY_PARENT.match(name):
            continue
        try:
            limit = parse_slot_limit(a.get("job_array_request", ""))
        except ValueError as exc:
            warnings.append(f"job {name}: {exc}; its slot limit not enforced")
            limit = None
        out[name] = default if limit is None else limit
    return out


def server_slot_limit(a: dict[str, str], warnings: list[str]) -> int | None:
    """The server's ``max_slot_limit`` (None: unset), the slot limit of arrays asked without one."""
    return _count("server", a, "max_slot_limit", warnings)
