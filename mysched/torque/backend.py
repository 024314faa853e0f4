"""The TORQUE batch server behind the `BatchServer` interface.

Reads queues, jobs and nodes with pbs_stat*, maps TORQUE attributes to the model, starts
jobs with pbs_runjob at the location the planner chose (``node:ppn=N`` — a bare node name
would run an N-core job on one core), and translates IFL error codes into the project's
exception tree here, at the boundary.
"""

from __future__ import annotations

import gc
import re
import time
from typing import Callable

from ..errors import (JobGone, JobStateError, RunRefused, ServerError, ServerTimeout, ServerUnavailable,
                      Unauthorized)
from ..model import Job, JobState, Node, NodeState, Placement, Queue, Snapshot
from ..pbsvalues import parse_duration, parse_exec_host, parse_mem, parse_nodes
from .ifl import IFL, StatResult, load_ifl

JOB_ATTRS = ("job_state", "queue", "euser", "egroup", "Job_Owner", "Resource_List", "exec_host", "qtime",
             "ctime", "start_time", "Job_Name")
NODE_ATTRS = ("state", "np", "jobs", "properties")
QUEUE_ATTRS = ("queue_type", "enabled", "started", "max_running")
SERVER_ATTRS = ("server_state", "scheduling", "total_jobs")

PBSE_UNKJOBID, PBSE_PERM, PBSE_IFF_NOT_FOUND, PBSE_BADSTATE = 15001, 15007, 15008, 15018
PBSE_RESCUNAV, PBSE_UNKNODE, PBSE_TIMEOUT = 15046, 15064, 15085
UNAVAILABLE = {15010, 15033, 15035, 15036, 15096, 15097, 15098, 15099, 15072}
_ARRAY_PARENT = re.compile(r"^\d+\[\]")


def parse_node_jobs(text: str) -> tuple[str, ...]:
    """Node ``jobs`` attribute ``0-1/12.srv, 2/13.srv`` -> unique job ids in order."""
    seen: dict[str, None] = {}
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        _, _, jid = part.partition("/")
        seen[jid or part] = None
    return tuple(seen)


def location(placement: Placement) -> str:
    """The pbs_runjob location for a placement: ``node:ppn=N[+node:ppn=M]``."""
    return "+".join(f"{node}:ppn={cores}" for node, cores in placement)


def _bool(text: str | None, default: bool = True) -> bool:
    if text is None:
        return default
    return text.strip().lower() in ("true", "t", "1", "yes", "y")


def job_from_attrs(name: str, a: dict[str, str], warnings: list[str]) -> Job | None:
    """A model `Job` from pbs_statjob attributes; None for an array parent (not runnable)."""
    if _ARRAY_PARENT.match(name):
        return None
    try:
        state = JobState.parse(a.get("job_state", ""))
    except ValueError:
        warnings.append(f"job {name}: unknown state {a.get('job_state')!r}; skipped")
        return None
    owner = a.get("Job_Owner", "")
    user = a.get("euser") or owner.split("@")[0] or "unknown"
    group = a.get("egroup") or user
    cores = 1
    if a.get("Resource_List.nodes"):
        try:
            cores = parse_nodes(a["Resource_List.nodes"])
        except ValueError as exc:
            warnings.append(f"job {name}: {exc}; assuming 1 core")
    elif a.get("Resource_List.procs", "").isdigit():
        cores = max(1, int(a["Resource_List.procs"]))
    elif a.get("Resource_List.ncpus", "").isdigit():
        cores = max(1, int(a["Resource_List.ncpus"]))
    walltime = mem = None
    if a.get("Resource_List.walltime"):
        try:
            walltime = parse_duration(a["Resource_List.walltime"])
        except ValueError as exc:
            warnings.append(f"job {name}: {exc}")
    if a.get("Resource_List.mem"):
        try:
            mem = parse_mem(a["Resource_List.mem"])
        except ValueError as exc:
            warnings.append(f"job {name}: {exc}")
    placement: Placement = ()
    if a.get("exec_host"):
        try:
            placement = parse_exec_host(a["exec_host"])
        except ValueError as exc:
            warnings.append(f"job {name}: {exc}")
    if placement and state == JobState.RUNNING:
        cores = sum(c for _, c in placement)

    def num(key: str) -> float | None:
        v = a.get(key)
        if v is None:
            return None
        try:
            return float(v)
        except ValueError:
            warnings.append(f"job {name}: bad {key} {v!r}")
            return None

    submit = num("qtime") or num("ctime") or 0.0
    return Job(name, a.get("queue", ""), user, group, cores, state, submit, num("start_time"), walltime, mem,
               placement, None, a.get("Job_Name", ""))


def node_from_attrs(name: str, a: dict[str, str], warnings: list[str]) -> Node:
    np_text = a.get("np", "1")
    try:
        slots = int(np_text)
    except ValueError:
        warnings.append(f"node {name}: bad np {np_text!r}; taken as offline")
        return Node(name, 0, NodeState.OFFLINE)
    props = frozenset(p.strip() for p in a.get("properties", "").split(",") if p.strip())
    return Node(name, slots, NodeState.parse(a.get("state", "")), props, parse_node_jobs(a.get("jobs", "")))


def queue_from_attrs(name: str, a: dict[str, str], warnings: list[str]) -> Queue | None:
    if a.get("queue_type", "Execution").lower()[:1] == "r":
        return None  # a routing queue holds no job the scheduler can run
    mr = a.get("max_running")
    max_running = None
    if mr:
        try:
            max_running = int(mr)
        except ValueError:
            warnings.append(f"queue {name}: bad max_running {mr!r}")
    return Queue(name, _bool(a.get("enabled")), _bool(a.get("started")), max_running)


class TorqueServer:
    """A pbs_server reached through IFL; reconnects after failures."""

    def __init__(self, host: str | None = None, *, libtorque: str | None = None, ifl: IFL | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.host = host
        self.name = f"torque://{host or 'localhost'}"
        self.ifl = ifl if ifl is not None else load_ifl(libtorque)
        self.clock = clock
        self.conn: int | None = None

    # -- connection ------------------------------------------------------------------------
    def _connect(self) -> int:
        if self.conn is not None:
            return self.conn
        c = self.ifl.connect(self.host)
        if c is None or c < 0:
            code = self.ifl.errno()
            msg = self.ifl.errmsg(-1) if code else ""
            raise ServerUnavailable(f"cannot connect to pbs_server at {self.host or 'the default server'}"
                                    f"{f': {msg}' if msg else ''}{f' (error {code})' if code else ''}",
                                    code=code or None, call="connect")
        self.conn = c
        return c

    def close(self) -> None:
        if self.conn is not None:
            try:
                self.ifl.disconnect(self.conn)
            finally:
                self.conn = None

    def _error(self, call: str, subject: str = "") -> ServerError:
        code = self.ifl.errno()
        msg = self.ifl.errmsg(self.conn) if self.conn is not None else ""
        text = f"{call}{f' {subject}' if subject else ''}: {msg or 'failed'}" + (f" (error {code})" if code else "")
        if code in UNAVAILABLE or code == 0:
            self.close()  # the connection is no good: reconnect next time
        if code == PBSE_UNKJOBID:
            return JobGone(text, code=code, call=call)
        if code == PBSE_BADSTATE:
            return JobStateError(text, code=code, call=call)
        if code in (PBSE_PERM, PBSE_IFF_NOT_FOUND):
            return Unauthorized(text, code=code, call=call)
        if code in (PBSE_RESCUNAV, PBSE_UNKNODE):
            return RunRefused(text, code=code, call=call)
        if code == PBSE_TIMEOUT:
            return ServerTimeout(text, code=code, call=call)
        if code in UNAVAILABLE:
            return ServerUnavailable(text, code=code, call=call)
        return ServerError(text, code=code or None, call=call)

    def _stat(self, call: str, fn, attrs) -> StatResult:
        conn = self._connect()
        res = fn(conn, attrs)
        if not res and self.ifl.errno() not in (0, PBSE_UNKJOBID):
            raise self._error(call)
        return res

    # -- BatchServer -----------------------------------------------------------------------
    def snapshot(self) -> Snapshot:
        enabled = gc.isenabled()
        gc.disable()  # tens of thousands of new objects, no cycles: spare the collector's scans
        try:
            return self._snapshot()
        finally:
            if enabled:
                gc.enable()

    def _snapshot(self) -> Snapshot:
        warnings: list[str] = []
        t = self.clock()
        server = self._stat("statserver", self.ifl.statserver, SERVER_ATTRS)
        server_attrs = server[0][1] if server else {}
        queues = [q for name, a in self._stat("statque", self.ifl.statque, QUEUE_ATTRS)
                  if (q := queue_from_attrs(name, a, warnings)) is not None]
        nodes = [node_from_attrs(name, a, warnings) for name, a in self._stat("statnode", self.ifl.statnode,
                                                                             NODE_ATTRS)]
        jobs = [j for name, a in self._stat("statjob", self.ifl.statjob, JOB_ATTRS)
                if (j := job_from_attrs(name, a, warnings)) is not None]
        return Snapshot(t, tuple(jobs), tuple(nodes), tuple(queues), self.name,
                        {"warnings": warnings, "server": server_attrs})

    def run_job(self, job_id: str, placement: Placement) -> None:
        conn = self._connect()
        rc = self.ifl.runjob(conn, job_id, location(placement))
        if rc != 0:
            raise self._error("runjob", job_id)

    def get_job(self, job_id: str) -> Job | None:
        conn = self._connect()
        res = self.ifl.statjob_one(conn, job_id, JOB_ATTRS)
        if not res:
            code = self.ifl.errno()
            if code in (0, PBSE_UNKJOBID):
                return None
            raise self._error("statjob", job_id)
        return job_from_attrs(res[0][0], res[0][1], [])
