"""Immutable picture of a batch farm at one instant.

A `Snapshot` is what every batch-server adapter (TORQUE, the simulated farm) produces and
what the pure planner consumes. It holds raw facts only; derived views (VO of a job,
slots used per node) are computed by the planner from the configuration.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import NamedTuple

from mysched.core.model.request import NodePart, Request

__all__ = ["Changes", "FinishedJob", "HOLDS_SLOTS", "Job", "JobState", "Node", "NodePart", "NodeState", "Placement",
           "Queue", "Request", "RunCap", "ServerLimits", "Snapshot", "TraceJob"]

Placement = tuple[tuple[str, int], ...]
"""Where a job runs or should run: ``((node, cores), ...)``; one entry per node."""


class JobState(str, Enum):
    """TORQUE job states (single-letter codes as `qstat` prints them)."""

    QUEUED = "Q"
    RUNNING = "R"
    HELD = "H"
    WAITING = "W"
    EXITING = "E"
    COMPLETE = "C"
    TRANSIT = "T"
    SUSPENDED = "S"

    @property
    def holds_slots(self) -> bool:
        """Running, exiting or suspended: the job keeps its cores (a suspended job resumes
        where it stopped, so its cores are not free for new work)."""
        return self in HOLDS_SLOTS

    @classmethod
    def parse(cls, code: str) -> "JobState":
        try:
            return cls(code.strip().upper()[:1])
        except ValueError:
            raise ValueError(f"unknown job state {code!r}") from None


HOLDS_SLOTS = frozenset({JobState.RUNNING, JobState.EXITING, JobState.SUSPENDED})
"""Job states whose cores stay taken on their nodes."""


class NodeState(str, Enum):
    """What a node can do now, reduced from TORQUE's comma-separated state flags."""

    FREE = "free"
    FULL = "job-exclusive"
    BUSY = "busy"
    OFFLINE = "offline"
    DOWN = "down"

    @classmethod
    def parse(cls, flags: str) -> "NodeState":
        """Reduce e.g. ``"down,offline"`` or ``"job-exclusive,busy"`` to one state."""
        parts = {p.strip().lower() for p in flags.split(",") if p.strip()}
        if parts & {"down", "unknown"}:
            return cls.DOWN
        if "offline" in parts:
            return cls.OFFLINE
        if "busy" in parts:
            return cls.BUSY
        if parts & {"job-exclusive", "job-sharing", "reserve"}:
            return cls.FULL
        if parts <= {"free", "time-shared", "state-unknown"} and parts:
            return cls.FREE
        if not parts:
            return cls.DOWN
        return cls.FREE

    @property
    def usable(self) -> bool:
        """True if the scheduler may place jobs here (given free slots)."""
        return self in (NodeState.FREE, NodeState.FULL)


class Job(NamedTuple):
    """One batch job. Times are Unix seconds; `walltime` and `mem` are the requests.

    (A NamedTuple, not a frozen dataclass: as immutable, and made four times faster -- a
    trace brings hundreds of thousands of jobs, a TORQUE snapshot tens of thousands.)"""

    id: str
    queue: str
    user: str
    group: str
    cores: int = 1
    state: JobState = JobState.QUEUED
    submit_time: float = 0.0
    start_time: float | None = None
    walltime: float | None = None
    mem: int | None = None
    placement: Placement = ()
    vo: str | None = None
    """Set only where the source names the VO itself; otherwise the config maps group -> VO."""
    name: str = ""
    request: Request | None = None
    """The whole resource request where it is more than `cores` on one node (several nodes,
    node properties or names, memory, exclusive nodes); None: `cores` on any one node."""
    priority: int = 0
    """TORQUE's job priority (``qsub -p``, ``qalter -p``; -1024..1023): orders the user's own
    jobs only (higher first), so it cannot take anything from other users."""
    array: str | None = None
    """The job array a sub-job belongs to (its parent's id, TORQUE's ``2007[].vm``); its slot
    limit is in `Snapshot.arrays`."""
    hazard: str = ""
    """Why starting the job would harm the batch server itself (set by the backend, e.g. a
    field TORQUE cannot write into its accounting record); empty: none. It waits
    `unsafe_request`."""
    project: str = ""
    """The project the job is charged to where the server keeps one (OpenPBS ``qsub -P``);
    the server's per-project run limits count by it. Empty: none."""


@dataclass(frozen=True, slots=True)
class Node:
    """One worker node: `slots` is TORQUE's np; `properties` its node properties."""

    name: str
    slots: int
    state: NodeState = NodeState.FREE
    properties: frozenset[str] = frozenset()
    jobs: tuple[str, ...] = ()
    """Ids of the jobs the server says run here (may list jobs the job list lacks)."""
    mem: int | None = None
    """Physical memory in bytes (None: unknown, memory requests are not checked here)."""
    load: float | None = None
    """pbs_mom's load average (None: not reported)."""
    avail_mem: int | None = None
    """pbs_mom's available memory in bytes (None: not reported)."""
    vmem: int | None = None
    """Physical memory plus swap in bytes, pbs_mom's totmem (None: unknown, virtual memory
    requests are not checked here)."""
    note: str = ""
    """The admin's note (``pbsnodes -N``): why a node is out, shown where it is named."""


class RunCap(NamedTuple):
    """A limit the batch server keeps on what may run at once and leaves to its scheduler:
    at most `cap` running jobs (`measure` "jobs"), cores ("cores") or bytes of memory
    ("mem", of the jobs that ask memory) of everyone (`by` "all") or of each user, group or
    project (`by`). With a `name` it is that one's own limit, which replaces the generic one
    (no name) for it, as OpenPBS's ``[u:alice=8]`` does ``[u:PBS_GENERIC=4]``; a generic
    limit holds every one without a limit of its own."""

    measure: str
    by: str
    cap: int
    name: str | None = None
    setting: str = ""
    """How the server spells it, for `why` (``max_run_res.ncpus [u:PBS_GENERIC=4]``)."""


@dataclass(frozen=True, slots=True)
class Queue:
    """A TORQUE execution queue (limits: None where unset)."""

    name: str
    enabled: bool = True
    started: bool = True
    max_running: int | None = None
    max_user_run: int | None = None
    """Running jobs of one user in this queue at most (qmgr ``max_user_run``)."""
    max_group_run: int | None = None
    """Running jobs of one group in this queue at most (qmgr ``max_group_run``)."""
    max_walltime: float | None = None
    """The longest walltime the queue takes, seconds (qmgr ``resources_max.walltime``)."""
    caps: tuple[RunCap, ...] = ()
    """Its other run limits (jobs, cores or memory of a user, group or project), beside
    `max_running` (which joins the configuration's queue limit)."""


@dataclass(frozen=True, slots=True)
class ServerLimits:
    """The batch server's own run limits (qmgr ``set server max_running`` ...; None: unset)."""

    max_running: int | None = None
    max_user_run: int | None = None
    max_group_run: int | None = None
    caps: tuple[RunCap, ...] = ()
    """Its other run limits (`Queue.caps`, for the whole server)."""


class Changes(NamedTuple):
    """What changed since an earlier snapshot of the same server (optional).

    A server that knows it (the simulated farm) says so, and the planner then updates what
    it keeps between cycles in proportion to the change instead of looking at every
    running job. `since` is the earlier snapshot's `Snapshot.token`."""

    since: object
    started: tuple[Job, ...]
    """Running jobs that were not running then, or were other objects then."""
    stopped: tuple[str, ...]
    """Ids of jobs running then that no longer run (or run as other objects now)."""
    waiting: tuple[Job, ...]
    """Every job waiting now (queued, held, waiting, in transit), in `Snapshot.jobs` order."""


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Queues, jobs and nodes as read from the batch server at `time`."""

    time: float
    jobs: tuple[Job, ...]
    nodes: tuple[Node, ...]
    queues: tuple[Queue, ...] = ()
    server: str = ""
    extra: dict = field(default_factory=dict, compare=False, hash=False)
    token: object = field(default=None, compare=False, hash=False)
    """Identifies this snapshot to a later one's `changes` (any object; compared by identity)."""
    changes: Changes | None = field(default=None, compare=False, hash=False)
    limits: ServerLimits | None = field(default=None, compare=False, hash=False)
    """The server's run limits (None: it has none, or says nothing of them)."""
    arrays: dict[str, int] = field(default_factory=dict, compare=False, hash=False)
    """Slot limits of job arrays (``qsub -t 0-400%1``): array id -> sub-jobs it may run at once."""


class TraceJob(NamedTuple):
    """A job of a workload to replay: submitted at ``job.submit_time``, it runs `runtime`
    seconds once started (the simulator ends it then, whatever its walltime request)."""

    job: Job
    runtime: float
    split_of: tuple[str, int] | None = None
    """(id, cores) of the job this one is a single-core piece of (`--split-multicore`), so
    that a split run can report its waits as the jobs were submitted; None for a job replayed
    as it was submitted."""


@dataclass(frozen=True, slots=True)
class FinishedJob:
    """A wall-clock record of a job that ran: what the history store keeps and what
    decayed usage is computed from. `end` is None while the job still runs."""

    id: str
    user: str
    group: str
    queue: str
    start: float
    end: float | None
    cores: int = 1
    vo: str | None = None
    cput: float | None = None
    exit_status: int | None = None
    nodes: tuple[str, ...] = ()


def id_order(job_id: str) -> tuple[int, int, int, str]:
    """A sort key for jobs submitted in the same second (TORQUE's qtime is whole seconds):
    the order pbs_server numbered them -- 9.srv before 10.srv, an array's [2] before its [10]
    -- not the ids' order as strings. Ids of another form go after, by their string."""
    num, bracket, rest = job_id.partition(".")[0].partition("[")
    if not num.isdigit():
        return (1, 0, 0, job_id)
    idx = rest[:-1] if bracket else ""
    return (0, int(num), int(idx) if idx.isdigit() else -1, job_id)
