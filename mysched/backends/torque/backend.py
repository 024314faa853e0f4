"""The TORQUE batch server behind the `BatchServer` interface.

Reads queues, jobs and nodes with pbs_stat*, maps TORQUE attributes to the model, starts
jobs with pbs_runjob at the location the planner chose (``node:ppn=N`` — a bare node name
would run an N-core job on one core), and translates IFL error codes into the project's
exception tree here, at the boundary. Codes are TORQUE 6.1's (src/include/pbs_error_db.h).
"""

from __future__ import annotations

import grp
import logging
import os
import pwd
import time
from typing import Callable

from mysched.errors import (JobGone, JobStateError, RunRefused, ServerError, ServerTimeout, ServerUnavailable,
                      Unauthorized)
from mysched.gcpause import gc_paused
from mysched.core.model.batch import Job, Placement, Snapshot
from mysched.backends.torque import connsocket
from mysched.backends.torque.ifl import IFL, PackedRows, StatResult, load_ifl, pack
from mysched.backends.torque.mapping import (JobReader, array_limits, job_from_attrs, node_from_attrs,
                                             queue_from_attrs, request_from_attrs, server_limits_from_attrs,
                                             server_slot_limit)

__all__ = ["TorqueServer", "JobReader", "job_from_attrs", "node_from_attrs", "queue_from_attrs", "request_from_attrs",
           "location"]

log = logging.getLogger("mysched")

# Only what the mapping below reads: the server sends nothing else (the attrl select list).
# Every attribute costs on the server, on the wire and in the conversion (per job and cycle),
# so the mapping's fallbacks (Job_Owner for euser, ctime for qtime) are not asked for: TORQUE
# sets euser and qtime when it queues a job.
JOB_ATTRS = ("job_state", "queue", "euser", "egroup", "Resource_List", "exec_host", "qtime", "start_time",
             "node_exclusive", "Priority", "Job_Name", "Account_Name")
OWNER = ("Job_Owner",)
"""Asked for in routing queues only, where pbs_server has not set euser yet."""
NODE_ATTRS = ("state", "np", "jobs", "properties", "status", "note")
QUEUE_ATTRS = ("queue_type", "enabled", "started", "max_running", "max_user_run", "max_group_run", "resources_max")
SERVER_ATTRS = ("server_state", "scheduling", "total_jobs", "max_running", "max_user_run", "max_group_run",
                "max_slot_limit")
ARRAY_ATTRS = ("job_array_request",)
"""Asked of arrays' parents (``qsub -t 0-400%1``): the slot limit, which no sub-job carries."""

PBSE_UNKJOBID = 15001
PBSE_IVALREQ = 15004
PBSE_PERM = 15007
PBSE_IFF_NOT_FOUND = 15008
PBSE_BADHOST = 15010
PBSE_BADSTATE = 15018
PBSE_PROTOCOL = 15033
PBSE_RESCUNAV = 15046
PBSE_ALRDYEXIT = 15052
PBSE_SVRDOWN = 15062
PBSE_UNKQUE = 15020
PBSE_UNKNODE = 15064
PBSE_TIMEOUT = 15085
PBSE_JOBNOTFOUND = 15086
PBSE_SERVER_BUSY = 15134
PBSE_EOF = 15171

GONE = {PBSE_UNKJOBID, PBSE_JOBNOTFOUND}
BAD_STATE = {PBSE_BADSTATE, PBSE_ALRDYEXIT}
UNAUTHORIZED = {PBSE_PERM, PBSE_IFF_NOT_FOUND, 15176}  # 15176 PBSE_NO_PRIVILEGES
REFUSED = {PBSE_RESCUNAV, PBSE_UNKNODE,
           15043,  # PBSE_MOMREJECT: execution server rejected request
           15072,  # PBSE_NORELYMOM: server could not connect to MOM
           15110,  # PBSE_BADMOMSTATE: mom is down, cannot run job
           15132}  # PBSE_NODE_DOWN
LOST = {PBSE_PROTOCOL, PBSE_TIMEOUT, PBSE_EOF,
        15035, 15036,  # PBSE_NOCONNECTS, PBSE_NOSERVER
        15096, 15097, 15098, 15099,  # PBSE_SOCKET_FAULT/_WRITE/_READ/_CLOSE
        15114, 15120, 15133}  # PBSE_PREMATURE_EOF, PBSE_CONNECT, PBSE_SERVER_NOT_FOUND
"""The connection broke or timed out mid-request: what the server did is unknown."""
DECLINED = {PBSE_SVRDOWN, PBSE_SERVER_BUSY}
"""The server is up but turned the request away as a whole (shutting down, busy)."""

def location(placement: Placement) -> str | None:
    """The pbs_runjob location for a placement: ``node:ppn=N[+node:ppn=M]`` (None: server's choice)."""
    if not placement:
        return None
    return "+".join(f"{node}:ppn={cores}" for node, cores in placement)


class TorqueServer:
    """A pbs_server reached through IFL.

    Keeps one connection; when a stat call finds it broken (server restarted, connection
    dropped) it reconnects and asks once more. `timeout` bounds each wait for the server
    (libtorque's own default is 300 s, long enough to stall a cycle). A server that hangs
    costs `timeout` per failing call: the abandoned connection's socket is shut down before
    pbs_disconnect, which would otherwise wait for the server to close it (`connsocket`).
    Not thread-safe: one caller at a time.
    """

    # What each IFL error code means (TORQUE 6.1's numbers; another product's adapter sets its own).
    GONE, BAD_STATE, UNAUTHORIZED, REFUSED, LOST, DECLINED = GONE, BAD_STATE, UNAUTHORIZED, REFUSED, LOST, DECLINED
    TIMEOUT: int | None = PBSE_TIMEOUT
    """The code of a call that ran into its time-out (None: the product has none of its own)."""
    UNKNOWN_QUEUE = PBSE_UNKQUE
    SERVER = "pbs_server"
    """What the batch server is called in messages."""
    JOB_ATTRS, OWNER = JOB_ATTRS, OWNER
    EVENTS = "scheduling"
    """What makes the server contact mysched's event port: TORQUE's ``scheduling = True``."""
    SCHEME = "torque"
    """The server's URL scheme (its name in messages: ``torque://HOST``)."""

    @staticmethod
    def _load_ifl(path: str | None, timeout: float | None) -> IFL:
        """The product's client library, bound (a subclass binds its own product's)."""
        return load_ifl(path, timeout)

    def __init__(self, host: str | None = None, *, libtorque: str | None = None, ifl: IFL | None = None,
                 clock: Callable[[], float] = time.time, timeout: float | None = 30.0,
                 read_by_queue: bool = True) -> None:
        self.host = host
        self.name = f"{self.SCHEME}://{host or 'localhost'}"
        self._node_names: frozenset[str] = frozenset()
        self._jobs = JobReader()
        self.read_by_queue = read_by_queue
        if ifl is None:
            try:
                ifl = self._load_ifl(libtorque, timeout)
            except ServerUnavailable as exc:  # say which server could not be read, as every other failure does
                raise ServerUnavailable(f"{self.name}: {exc}") from None
        self.ifl = ifl
        self.clock = clock
        self.timeout = timeout
        self.conn: int | None = None
        self._sock: connsocket.Ident | None = None
        self._warned: set[str] = set()
        self._arrays: dict[str, int | None] = {}
        """Slot limit per job array seen (None: none); a parent's request never changes."""

    # -- connection ------------------------------------------------------------------------
    def _connect(self) -> int:
        if self.conn is not None:
            return self.conn
        before = connsocket.open_sockets()
        c = self.ifl.connect(self.host)
        if c is None or c < 0:
            code = -c if isinstance(c, int) and c < -1 else self.ifl.errno()
            if code >= 15000:
                msg = _strerror(self.ifl, code)
            elif code > 0:
                msg = os.strerror(code)
            else:
                msg = ""
            where = self.host or "the default server"
            msg = msg.rstrip(": ")  # OpenPBS's texts may end in ": " (pbse_to_txt(15010): "System error: ")
            raise ServerUnavailable(f"cannot connect to {self.SERVER} at {where}"
                                    f"{f': {msg}' if msg else ''}{f' (error {code})' if code else ''}",
                                    code=code or None, call="connect")
        self.conn = c
        self._sock = connsocket.new_socket(before)
        return c

    def close(self, lost: bool = False) -> None:
        """Disconnect; a `lost` connection (broken, timed out) is cut first, and an orderly
        disconnect waits at most `connsocket.GRACE` s for a server that answers nothing."""
        if self.conn is not None:
            conn, self.conn = self.conn, None
            sock, self._sock = self._sock, None
            try:
                connsocket.disconnect(sock, lambda: self.ifl.disconnect(conn), lost=lost)
            except Exception:  # noqa: BLE001 - a dead connection may fail to say goodbye
                pass

    def _timed_out(self, started: float) -> bool:
        """libtorque reports a call that ran into its timeout like a broken connection
        (15033), so the time it took tells the two apart."""
        return bool(self.timeout) and time.monotonic() - started >= 0.9 * self.timeout

    def _error(self, call: str, code: int, subject: str = "", *, effect_unknown: bool = False,
               timed_out: bool = False) -> ServerError:
        """The exception for IFL error `code`; drops the connection where it is no good."""
        timeout = False
        if timed_out and code in self.LOST:
            timeout = True
            code = self.TIMEOUT if self.TIMEOUT is not None else code
            msg = f"no answer within {self.timeout:g} s"
        else:
            msg = self.ifl.errmsg(self.conn) if self.conn is not None else ""
        if not msg and code:
            msg = _strerror(self.ifl, code)
        text = f"{call}{f' {subject}' if subject else ''}: {msg or 'failed'}" + (f" (error {code})" if code else "")
        lost = timeout or code in self.LOST or code <= 0
        if lost or code in self.DECLINED:
            self.close(lost=True)  # a reply may still be in flight: never reuse this connection
        if code in self.GONE:
            return JobGone(text, code=code, call=call)
        if code in self.BAD_STATE:
            return JobStateError(text, code=code, call=call)
        if code in self.UNAUTHORIZED:
            if call == "runjob":
                text += f"; {_not_operator(self.host, self.SERVER)}"
            return Unauthorized(text, code=code, call=call)
        if code in self.REFUSED:
            return RunRefused(text, code=code, call=call)
        if code in self.DECLINED:
            return ServerUnavailable(text, code=code, call=call)
        if lost:
            cls = ServerTimeout if effect_unknown or timeout or code == self.TIMEOUT else ServerUnavailable
            return cls(text, code=code or None, call=call)
        return ServerError(text, code=code, call=call)

    def _stat(self, call: str, fn: Callable, *args, missing_ok: bool = False) -> StatResult:
        """A stat call; one fresh connection and retry if the first broke. [] if `missing_ok`
        and the server says the object is unknown."""
        for attempt in (1, 2):
            conn = self._connect()
            started = time.monotonic()
            res = fn(conn, *args)
            if res:
                return res
            code = self.ifl.errno()
            if code == 0 or (missing_ok and (code in self.GONE or code == self.UNKNOWN_QUEUE)):
                return []
            err = self._error(call, code, args[0] if len(args) > 1 else "", timed_out=self._timed_out(started))
            if attempt == 1 and isinstance(err, ServerUnavailable) and not isinstance(err, ServerTimeout):
                log.debug("%s; reconnecting", err)
                continue
            raise err
        raise AssertionError("unreachable")

    # -- BatchServer -----------------------------------------------------------------------
    def snapshot(self) -> Snapshot:
        with gc_paused():  # tens of thousands of new objects, no cycles: spare the collector's scans
            return self._snapshot()

    def _snapshot(self) -> Snapshot:
        warnings: list[str] = []
        t = self.clock()
        server = self._stat("statserver", self.ifl.statserver, SERVER_ATTRS)
        queue_rows = self._stat("statque", self.ifl.statque, QUEUE_ATTRS)
        queues = [q for name, a in queue_rows if (q := queue_from_attrs(name, a, warnings)) is not None]
        nodes = [node_from_attrs(name, a, warnings)
                 for name, a in self._stat("statnode", self.ifl.statnode, NODE_ATTRS)]
        names = frozenset(n.name for n in nodes)
        if names == self._node_names:
            names = self._node_names  # the same object: requests read before are found by identity
        self._node_names = names
        routing = {name for name, _ in queue_rows} - {q.name for q in queues}
        jobs = self._jobs.read(self._read_jobs([name for name, _ in queue_rows], routing), warnings, names)
        if routing:
            jobs = [_owner_group(j) if j.queue in routing else j for j in jobs]
        attrs = server[0][1] if server else {}
        limits = server_limits_from_attrs(attrs, warnings)
        arrays = self._array_limits(jobs, attrs, warnings)
        self._report(warnings)
        return Snapshot(t, tuple(jobs), tuple(nodes), tuple(queues), self.name,
                        {"warnings": warnings, "server": attrs}, limits=limits, arrays=arrays)

    def _array_limits(self, jobs: list[Job], server: dict[str, str], warnings: list[str]) -> dict[str, int]:
        """The slot limits of the arrays whose sub-jobs are listed. Their parents are listed
        only with ``summarize_arrays`` (a row for every plain job too), so that is asked for
        only when an array not seen before appears."""
        present = {j.array for j in jobs if j.array is not None}
        if not present:
            self._arrays = {}
            return {}
        known = self._arrays
        if not present <= known.keys():
            rows = self._stat("statjob", lambda conn, attrs: self.ifl.statjob(conn, attrs, "summarize_arrays"),
                              ARRAY_ATTRS)
            found = array_limits(rows, server_slot_limit(server, warnings), warnings)
            known = {**known, **{a: None for a in present}, **found}  # a parent not listed: asked once
        self._arrays = {a: known[a] for a in present if a in known}
        return {a: n for a, n in self._arrays.items() if n is not None}

    def _read_jobs(self, queue_names: list[str], routing: set[str] = frozenset()) -> PackedRows:
        """All jobs as packed rows, read queue by queue where the IFL can: libtorque builds the
        whole reply in C memory before it returns (2.3 KB per job, 114 MB at 50,000 jobs), so
        one queue at a time keeps only the largest queue's reply in memory at once. A job
        moved between two queues' reads is taken once (the later read); one submitted to a
        queue created after `statque` waits for the next cycle. Jobs in a routing queue have
        no euser or egroup yet: their Job_Owner is asked for too."""
        fn = getattr(self.ifl, "statjob_packed", None)
        if fn is None:
            return [(name.encode(errors="replace"), pack(a))
                    for name, a in self._stat("statjob", self.ifl.statjob, self.JOB_ATTRS)]
        if not self.read_by_queue or not queue_names or not all(q[:1].isalpha() for q in queue_names):
            return self._stat("statjob", fn, self.JOB_ATTRS + self.OWNER if routing else self.JOB_ATTRS)
        rows: dict[bytes, bytes] = {}
        for q in queue_names:
            rows.update(self._stat("statjob", lambda conn, queue, attrs: fn(conn, attrs, queue), q,
                                   self.JOB_ATTRS + self.OWNER if q in routing else self.JOB_ATTRS, missing_ok=True))
        return list(rows.items())

    def _report(self, warnings: list[str]) -> None:
        """Log each distinct malformed value once, not every cycle."""
        for w in warnings:
            if w not in self._warned:
                if len(self._warned) < 10000:
                    self._warned.add(w)
                log.warning("pbs_server reply: %s", w)

    def run_job(self, job_id: str, placement: Placement) -> None:
        """pbs_runjob at ``node:ppn=N``. A broken or timed-out call raises `ServerTimeout`:
        the job may have started, so re-read it (`get_job`) before trying again."""
        self._run_at(job_id, lambda: location(placement))

    def _run_at(self, job_id: str, where: Callable[[], str]) -> None:
        """pbs_runjob at the location `where` gives (read on the open connection), its failure
        raised as ours: the effect of a broken call is unknown."""
        conn = self._connect()
        started = time.monotonic()
        rc = self._bounded(self.ifl.runjob)(conn, job_id, where())
        if rc == 0:
            return
        # pbs_runjob returns the PBSE code; pbs_errno can be -1 when the socket broke.
        errno = self.ifl.errno()
        code = rc if rc >= 15000 else errno if errno >= 15000 else -abs(rc)
        raise self._error("runjob", code, job_id, effect_unknown=True, timed_out=self._timed_out(started))

    def _bounded(self, fn: Callable) -> Callable:
        """An IFL call as made: libtorque bounds its own waits (`timeout`)."""
        return fn

    map_job = staticmethod(job_from_attrs)
    """The product's mapping of a job's attributes to the model."""

    def get_job(self, job_id: str) -> Job | None:
        res = self._stat("statjob", self.ifl.statjob_one, job_id, self.JOB_ATTRS, missing_ok=True)
        if not res:
            return None
        return self.map_job(res[0][0], res[0][1], [])


_GROUPS: dict[str, tuple[str | None, float]] = {}
GROUP_TTL = 600.0
"""Seconds a user's login group is remembered: an account added or moved later is seen."""


def _login_group(user: str, clock: Callable[[], float] = time.monotonic) -> str | None:
    """A user's login group on this host, as pbs_server sets egroup when a job reaches an
    execution queue (the daemon runs on the batch server); None if unknown here."""
    now = clock()
    hit = _GROUPS.get(user)
    if hit is not None and now - hit[1] < GROUP_TTL:
        return hit[0]
    try:
        group: str | None = grp.getgrgid(pwd.getpwnam(user).pw_gid).gr_name
    except (KeyError, OverflowError):
        group = None
    if len(_GROUPS) >= 4096:
        _GROUPS.clear()
    _GROUPS[user] = (group, now)
    return group


def _owner_group(job: Job) -> Job:
    """A job in a routing queue with its owner's login group (it has no egroup yet), so that
    it counts for its VO rather than the default one."""
    if job.group != job.user:  # egroup was there after all
        return job
    group = _login_group(job.user)
    return job._replace(group=group) if group else job


def _not_operator(host: str | None, what: str = "pbs_server") -> str:
    """What a refused pbs_runjob means: only managers and operators may run jobs."""
    try:
        user = pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        user = f"uid {os.geteuid()}"
    server = f"{what} at {host}" if host else what
    fix = "" if user == "root" else "run mysched as root, or "
    return (f"the account {user} is not a manager or operator of {server}: {fix}add it "
            f"(qmgr -c 'set server operators += {user}@HOST')")


def _strerror(ifl: IFL, code: int) -> str:
    fn = getattr(ifl, "strerror", None)
    return fn(code) if fn is not None else ""
