"""The OpenPBS server behind the `BatchServer` interface.

What it shares with TORQUE's adapter (`TorqueServer`, which it extends): one long-lived
connection (libpbs starts a setuid ``pbs_iff`` for every connect), a reconnect when a stat
call finds it broken, the read of jobs queue by queue as packed rows with the `Job` of every
unchanged job kept, and the translation of IFL errors into the exception tree -- with
OpenPBS's own error numbers (src/include/pbs_error.h of 23.06, not TORQUE's).

What is its own: vnodes (`pbs_statvnode`), requests from ``select``/``place``, and starts
that always name a location, one ``(vnode:ncpus=N)`` per chunk: without one pbs_runjob hands
the job to pbs_sched, and with one the server checks no capacity, so mysched's plan is the
only check (as with TORQUE). libpbs waits for a reply at least 600 s, so every call is
bounded here by cutting its socket after ``server.timeout``.
"""

from __future__ import annotations

import time
from typing import Callable

from mysched.backends.openpbs.ifl import OpenPBSIFL
from mysched.backends.openpbs.mapping import (job_from_attrs, node_from_attrs, queue_from_attrs, chunks_of,
                                              server_limits_from_attrs)
from mysched.backends.openpbs.values import Chunk, bool_value, location
from mysched.backends.torque import connsocket
from mysched.backends.torque.backend import TorqueServer
from mysched.backends.torque.ifl import IFL, StatResult, unpack
from mysched.backends.torque.mapping import JobReader
from mysched.core.model.batch import Job, Placement, Snapshot
from mysched.gcpause import gc_paused

JOB_ATTRS = ("job_state", "queue", "euser", "egroup", "Resource_List", "schedselect", "exec_vnode", "qtime", "stime",
             "Priority", "Job_Name", "project")
VNODE_ATTRS = ("state", "resources_available", "jobs", "comment")
LIMIT_ATTRS = ("max_running", "max_user_run", "max_group_run", "max_run", "max_run_res", "max_user_res",
               "max_group_res", "max_run_soft", "max_run_res_soft", "max_user_run_soft", "max_group_run_soft",
               "max_user_res_soft", "max_group_res_soft")
"""A queue's or the server's run limits, old form and new, hard and soft (`mapping._limits`)."""
QUEUE_ATTRS = ("queue_type", "enabled", "started", *LIMIT_ATTRS, "resources_max")
SERVER_ATTRS = ("server_state", "scheduling", "total_jobs", *LIMIT_ATTRS, "pbs_version")

PBSE_UNKJOBID = 15001
PBSE_PERM = 15007
PBSE_BADHOST = 15008
PBSE_SYSTEM = 15010
PBSE_BADSTATE = 15016
PBSE_UNKQUE = 15018
PBSE_BADCRED = 15019
PBSE_PROTOCOL = 15031
PBSE_NOCONNECTS = 15033
PBSE_NOSERVER = 15034
PBSE_MOMREJECT = 15041
PBSE_RESCUNAV = 15044
PBSE_ALRDYEXIT = 15050
PBSE_SVRDOWN = 15060
PBSE_UNKNODE = 15062
PBSE_NORELYMOM = 15070
PBSE_BADNODESPEC = 15089
PBSE_NOSCHEDULER = 15099
PBSE_NODESTALE = 15115
PBSE_HISTJOBID = 15139


class OpenPBSServer(TorqueServer):
    """An OpenPBS server (23.x) reached through libpbs. Not thread-safe: one caller at a time."""

    GONE = frozenset({PBSE_UNKJOBID})
    BAD_STATE = frozenset({PBSE_BADSTATE, PBSE_ALRDYEXIT, PBSE_HISTJOBID})
    UNAUTHORIZED = frozenset({PBSE_PERM, PBSE_BADHOST, PBSE_BADCRED})
    REFUSED = frozenset({PBSE_RESCUNAV, PBSE_UNKNODE, PBSE_MOMREJECT, PBSE_NORELYMOM, PBSE_BADNODESPEC,
                         PBSE_NODESTALE, PBSE_NOSCHEDULER})
    LOST = frozenset({PBSE_PROTOCOL, PBSE_NOCONNECTS, PBSE_NOSERVER})
    DECLINED = frozenset({PBSE_SVRDOWN})
    TIMEOUT = None
    UNKNOWN_QUEUE = PBSE_UNKQUE
    SERVER = "the OpenPBS server"
    JOB_ATTRS, OWNER = JOB_ATTRS, ("Job_Owner",)
    EVENTS = "hook"
    """OpenPBS contacts no scheduler's port; a server hook can (tools/openpbs_event_hook.py)."""
    SCHEME = "pbs"

    @staticmethod
    def _load_ifl(path: str | None, timeout: float | None) -> IFL:
        return OpenPBSIFL(path, timeout)

    def __init__(self, host: str | None = None, *, libpbs: str | None = None, ifl: IFL | None = None,
                 clock: Callable[[], float] = time.time, timeout: float | None = 30.0,
                 read_by_queue: bool = True) -> None:
        super().__init__(host, libtorque=libpbs, ifl=ifl, clock=clock, timeout=timeout,
                         read_by_queue=read_by_queue)
        self._jobs = JobReader(job_from_attrs)
        self._rows: dict[bytes, bytes] = {}
        """The jobs as last read (packed): a start reads its job's chunks from there, to name
        one location per chunk (only the few jobs a cycle starts are read so)."""
        self._properties: dict[str, frozenset[str]] = {}

    def _stat(self, call: str, fn: Callable, *args, missing_ok: bool = False) -> StatResult:
        return super()._stat(call, self._bounded(fn), *args, missing_ok=missing_ok)

    def _bounded(self, fn: Callable) -> Callable:
        def call(conn: int, *args):  # noqa: ANN202
            with connsocket.deadline(self._sock, self.timeout):
                return fn(conn, *args)
        return call

    def _snapshot(self) -> Snapshot:
        warnings: list[str] = []
        t = self.clock()
        server = self._stat("statserver", self.ifl.statserver, SERVER_ATTRS)
        queue_rows = self._stat("statque", self.ifl.statque, QUEUE_ATTRS)
        queues = [q for name, a in queue_rows if (q := queue_from_attrs(name, a, warnings)) is not None]
        vnodes = self._stat("statvnode", self.ifl.statvnode, VNODE_ATTRS)  # type: ignore[attr-defined]
        nodes = [node_from_attrs(name, a, warnings) for name, a in vnodes]
        self._properties = {n.name: n.properties for n in nodes}
        names = frozenset(n.name for n in nodes)
        if names == self._node_names:
            names = self._node_names
        self._node_names = names
        routing = {name for name, _ in queue_rows} - {q.name for q in queues}
        rows = self._read_jobs([name for name, _ in queue_rows], routing)
        jobs = self._jobs.read(rows, warnings, names)
        self._rows = dict(rows)
        attrs = server[0][1] if server else {}
        if bool_value(attrs.get("scheduling", "") or "false"):
            warnings.append("scheduling = True: pbs_sched starts jobs beside mysched "
                            "(qmgr -c 'set server scheduling = False')")
        limits = server_limits_from_attrs(attrs, warnings)
        self._report(warnings)
        return Snapshot(t, tuple(jobs), tuple(nodes), tuple(queues), self.name,
                        {"warnings": warnings, "server": attrs}, limits=limits)

    def _chunks(self, job_id: str) -> tuple[Chunk, ...]:
        """The job's chunks as last read (none: not read, one chunk per vnode is named)."""
        packed = self._rows.get(job_id.encode(errors="replace"))
        return chunks_of(job_id, unpack(packed), [])[0] if packed is not None else ()

    def run_job(self, job_id: str, placement: Placement) -> None:
        """pbs_runjob at ``(vnode:ncpus=N)+...``, one per chunk of the job's select. A broken or
        timed-out call raises `ServerTimeout`: re-read the job (`get_job`) before trying again."""
        self._run_at(job_id, lambda: location(self._chunks(job_id), placement, self._properties))

    map_job = staticmethod(job_from_attrs)
    """A job's attributes as OpenPBS names them (get_job: finished ones read as complete)."""
