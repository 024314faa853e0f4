"""Every reason the scheduler gives, defined once: why a job starts, why one waits, and
which waits no free slot can end.

The planner, the status commands, start estimates and the simulator's share-violation check
all read these, so a reason means the same everywhere and a new one is added in one place:
a `Reason` member and its text in `REASONS`, `START_REASONS` or `REPLAY_REASONS`
(tests/test_reason_literals.py refuses a reason spelled as a bare string elsewhere).
"""

from __future__ import annotations

import enum


class _StrEnum(str, enum.Enum):
    """Python 3.10's stand-in for `enum.StrEnum` (3.11): a member prints, formats and goes into
    JSON and Prometheus labels as its plain value. Batch servers on 3.10 (pbs-python builds
    only there) run mysched too, so the language is not bumped for this."""

    def __str__(self) -> str:
        return str.__str__(self)

    __format__ = str.__format__


StrEnum = getattr(enum, "StrEnum", _StrEnum)


class Reason(StrEnum):
    """Why a job waits or starts: the one spelling the planner, the commands' JSON, the status
    file, the simulator and the metrics' labels share. A member is its string: it equals,
    hashes, prints and serializes as its value, so a status file written by an older mysched
    (plain strings) reads the same; `Reason("x")` refuses a spelling no one gives."""

    # waits (REASONS)
    HELD = "held"
    NOT_QUEUED = "not_queued"
    QUEUE_DISABLED = "queue_disabled"
    NOT_EXECUTION_QUEUE = "not_execution_queue"
    QUEUE_MAX_RUNNING = "queue_max_running"
    QUEUE_USER_LIMIT = "queue_user_limit"
    QUEUE_GROUP_LIMIT = "queue_group_limit"
    SERVER_MAX_RUNNING = "server_max_running"
    SERVER_USER_LIMIT = "server_user_limit"
    SERVER_GROUP_LIMIT = "server_group_limit"
    QUEUE_PROJECT_LIMIT = "queue_project_limit"
    SERVER_PROJECT_LIMIT = "server_project_limit"
    QUEUE_RESOURCE_LIMIT = "queue_resource_limit"
    SERVER_RESOURCE_LIMIT = "server_resource_limit"
    VO_LIMIT = "vo_limit"
    GROUP_LIMIT = "group_limit"
    VO_CORE_LIMIT = "vo_core_limit"
    GROUP_CORE_LIMIT = "group_core_limit"
    QUEUE_CORE_LIMIT = "queue_core_limit"
    USER_LIMIT = "user_limit"
    USER_CORE_LIMIT = "user_core_limit"
    ARRAY_SLOT_LIMIT = "array_slot_limit"
    UNSAFE_REQUEST = "unsafe_request"
    TOO_LARGE = "too_large"
    NEVER_FITS = "never_fits"
    NODES_DOWN = "nodes_down"
    NODE_TYPE = "node_type"
    QUEUE_NODES = "queue_nodes"
    VO_NODE_LIMIT = "vo_node_limit"
    GROUP_NODE_LIMIT = "group_node_limit"
    PACKING = "packing"
    NO_FREE_SLOT = "no_free_slot"
    START_LIMIT = "start_limit"
    EXTERNAL_LOAD = "external_load"
    NODE_LOAD = "node_load"
    DRAINING = "draining"
    RESERVED = "reserved"
    DOWNTIME = "downtime"
    POOL_HELD = "pool_held"
    LOAN_REFUSED = "loan_refused"

    # a node's refusal only, never a job's wait (NODE_REFUSALS)
    NODE_DOWN = "node_down"
    NODE_NAME = "node_name"
    NODE_PROPERTIES = "node_properties"
    NODE_MEMORY = "node_memory"

    # starts (START_REASONS)
    HOT = "hot"
    SHARE = "share"
    FAIRSHARE = "fairshare"
    FIFO = "fifo"
    EASY = "easy"

    # the simulator's own (REPLAY_REASONS): no plan gives these
    NEXT_CYCLE = "next_cycle"
    START_FAILED = "start_failed"


REASONS: dict[Reason, str] = {
    Reason.HELD: "the job is held: qhold (a user, operator or system hold), a dependency not yet met (-W depend), or "
                 "its array's slot limit (qsub -t ...%N); qstat -f shows its Hold_Types",
    Reason.NOT_QUEUED: "the job waits for its start time (qsub -a; qstat -f shows its Execution_Time) or its file "
                       "stage-in, or is in transit (state W/T)",
    Reason.QUEUE_DISABLED: "the job's queue is stopped (started = False; a queue with enabled = False only refuses "
                           "new jobs: those it holds run)",
    Reason.NOT_EXECUTION_QUEUE: "the job's queue is no execution queue of the server (a routing queue: pbs_server "
                                "moves the job on first)",
    Reason.QUEUE_MAX_RUNNING: "the job's queue runs its maximum number of jobs",
    Reason.QUEUE_USER_LIMIT: "the job's user runs as many jobs as the queue lets one user, or this user, run (qmgr "
                             "max_user_run; OpenPBS max_run [u:PBS_GENERIC=N] or [u:NAME=N])",
    Reason.QUEUE_GROUP_LIMIT: "the job's group runs as many jobs as the queue lets one group, or this group, run (qmgr "
                              "max_group_run; OpenPBS max_run [g:PBS_GENERIC=N] or [g:NAME=N])",
    Reason.SERVER_MAX_RUNNING: "the batch server runs its max_running jobs (qmgr; OpenPBS max_run [o:PBS_ALL=N])",
    Reason.SERVER_USER_LIMIT: "the job's user runs as many jobs as the batch server lets one user, or this user, run "
                              "(qmgr max_user_run; OpenPBS max_run [u:PBS_GENERIC=N] or [u:NAME=N])",
    Reason.SERVER_GROUP_LIMIT: "the job's group runs as many jobs as the batch server lets one group, or this group, "
                               "run (qmgr max_group_run; OpenPBS max_run [g:PBS_GENERIC=N] or [g:NAME=N])",
    Reason.QUEUE_PROJECT_LIMIT: "the job's project runs as many jobs as the queue lets it run (OpenPBS max_run "
                                "[p:PBS_GENERIC=N] or [p:NAME=N])",
    Reason.SERVER_PROJECT_LIMIT: "the job's project runs as many jobs as the batch server lets it run (OpenPBS max_run "
                                 "[p:PBS_GENERIC=N] or [p:NAME=N])",
    Reason.QUEUE_RESOURCE_LIMIT: "the cores or memory the queue's running jobs hold -- all of them, or the job's "
                                 "user's, group's or project's -- and the job's would pass a limit of the queue "
                                 "(OpenPBS max_run_res.ncpus, max_run_res.mem)",
    Reason.SERVER_RESOURCE_LIMIT: "the cores or memory running jobs hold -- all of them, or the job's user's, group's "
                                  "or project's -- and the job's would pass a limit of the batch server (OpenPBS "
                                  "max_run_res.ncpus, max_run_res.mem)",
    Reason.VO_LIMIT: "the VO runs its maximum number of jobs",
    Reason.GROUP_LIMIT: "the group runs its maximum number of jobs",
    Reason.VO_CORE_LIMIT: "the VO's running cores and the job's would pass the VO's max_cores",
    Reason.GROUP_CORE_LIMIT: "the group's running cores and the job's would pass the group's max_cores",
    Reason.QUEUE_CORE_LIMIT: "the queue's running cores and the job's would pass the queue's max_cores",
    Reason.USER_LIMIT: "the job's user runs their max_running jobs (users.NAME, else users.default)",
    Reason.USER_CORE_LIMIT: "the user's running cores and the job's would pass their max_cores (users.NAME, else "
                            "users.default)",
    Reason.ARRAY_SLOT_LIMIT: "the job's array runs as many sub-jobs as its slot limit allows (qsub -t ...%N)",
    Reason.UNSAFE_REQUEST: "starting the job would crash pbs_server (a job name or account string longer than "
                           "its accounting record can hold): shorten it with qalter -N or -A",
    Reason.TOO_LARGE: "the job asks for more cores than any usable node has",
    Reason.NEVER_FITS: "no set of the farm's nodes the job may use could ever serve its request (nodes, "
                       "properties, host names, memory)",
    Reason.NODES_DOWN: "the request needs nodes that are down or offline now (a named host, or more nodes than are "
                       "up): it waits for them to return",
    Reason.NODE_TYPE: "the nodes with room are of a type the job's group may not use",
    Reason.QUEUE_NODES: "the nodes with room are not assigned to the job's queue",
    Reason.VO_NODE_LIMIT: "the nodes with room already run the VO's per-node maximum",
    Reason.GROUP_NODE_LIMIT: "the nodes with room already run the group's per-node maximum",
    Reason.PACKING: "the nodes with room are reserved for another job class (exclusive packing)",
    Reason.NO_FREE_SLOT: "no usable node has enough free cores (and the memory the job asks for)",
    Reason.START_LIMIT: "the cycle reached max_starts_per_cycle before this job's turn",
    Reason.EXTERNAL_LOAD: "an external load source (storage element, site probe) throttles the job's VO, group or "
                          "queue",
    Reason.NODE_LOAD: "the nodes with room report too much load or too little free memory (node_load)",
    Reason.DRAINING: "the nodes with room are draining for waiting multi-core jobs (drain)",
    Reason.RESERVED: "the nodes with room are reserved for another job (a wide job that has waited longer: "
                     "reservation_depth), and this one would not end (by its requested walltime) before that job "
                     "starts nor leave it the cores it needs there (EASY backfill)",
    Reason.DOWNTIME: "the nodes with room are in a scheduled downtime, or one begins there before this job would end "
                     "(by its requested walltime; downtimes)",
    Reason.POOL_HELD: "the nodes with room are held by a guarantee pool for owners owed packages (pools)",
    Reason.LOAN_REFUSED: "the nodes with room keep a pool's idle guarantee, and the pool's loan policy does not lend "
                         "to this job (its queue or requested walltime)",
}

START_REASONS: dict[Reason, str] = {
    Reason.HOT: "on a hot list: bypasses the share ordering",
    Reason.SHARE: "the VO runs fewer slots than its guaranteed share",
    Reason.FAIRSHARE: "opportunistic: free slots go by decayed wall-clock usage relative to share",
    Reason.FIFO: "baseline policy: submit order",
    Reason.EASY: "baseline policy: submit order with EASY backfill (reservations for the first jobs that do not fit)",
}

REPLAY_REASONS: dict[Reason, str] = {
    Reason.NEXT_CYCLE: "jobs waited for the next cycle, which started them (no plan saw them wait): cycles on job "
                       "events cut it (scheduling = True with daemon.event_address; simulate --event-driven)",
    Reason.START_FAILED: "the last plan would start the job, but the replay ended without it running",
}
"""What the simulator counts beside the planner's waits: in `wait_reasons` (`next_cycle`) and
`unplaceable` (`start_failed`). Not a wait a status file or the metrics show."""

BLOCKING: frozenset[Reason] = frozenset({
    Reason.HELD, Reason.NOT_QUEUED, Reason.QUEUE_DISABLED, Reason.NOT_EXECUTION_QUEUE, Reason.TOO_LARGE,
    Reason.NEVER_FITS, Reason.NODES_DOWN, Reason.VO_LIMIT, Reason.GROUP_LIMIT, Reason.QUEUE_MAX_RUNNING,
    Reason.EXTERNAL_LOAD, Reason.QUEUE_USER_LIMIT, Reason.QUEUE_GROUP_LIMIT, Reason.SERVER_MAX_RUNNING,
    Reason.SERVER_USER_LIMIT, Reason.SERVER_GROUP_LIMIT, Reason.QUEUE_PROJECT_LIMIT, Reason.SERVER_PROJECT_LIMIT,
    Reason.QUEUE_RESOURCE_LIMIT, Reason.SERVER_RESOURCE_LIMIT, Reason.VO_CORE_LIMIT, Reason.GROUP_CORE_LIMIT,
    Reason.QUEUE_CORE_LIMIT, Reason.USER_LIMIT, Reason.USER_CORE_LIMIT, Reason.ARRAY_SLOT_LIMIT,
    Reason.UNSAFE_REQUEST,
})
"""Waits that free capacity would not end: the job cannot start until something else changes
(a hold, its queue, a limit). `mysched jobs` lists these as blocked; estimates give no time."""

NODE_REJECTIONS: dict[Reason, str] = {
    Reason.QUEUE_NODES: "not assigned to the job's queue",
    Reason.NODE_TYPE: "node type not allowed for the job's group",
    Reason.PACKING: "reserved for another job class",
    Reason.VO_NODE_LIMIT: "VO per-node limit reached",
    Reason.GROUP_NODE_LIMIT: "group per-node limit reached",
    Reason.NODE_LOAD: "load or free memory past node_load",
    Reason.RESERVED: "reserved for another job starting before this one would end",
    Reason.DRAINING: "draining for multi-core jobs",
    Reason.DOWNTIME: "in a scheduled downtime, or one begins before the job would end",
    Reason.POOL_HELD: "held by a guarantee pool for its owners",
    Reason.LOAN_REFUSED: "guarded by a guarantee pool whose loan policy refuses the job",
}
"""Short texts for the reasons a node was rejected for a job that had room elsewhere."""

NODE_REFUSALS: dict[Reason, str] = {
    Reason.NODE_DOWN: "down or offline",
    Reason.NODE_NAME: "not the host the request names",
    Reason.NODE_PROPERTIES: "without a property the request asks for there",
    Reason.NODE_MEMORY: "too little memory left for the request",
}
"""Why a node refused a job that no wait gives: counted among the nodes rejected (`why`), or
said in a whole request's detail (the nodes that lack the memory)."""
