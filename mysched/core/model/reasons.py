"""Every reason the scheduler gives, defined once: why a job starts, why one waits, and
which waits no free slot can end.

The planner, the status commands, start estimates and the simulator's share-violation check
all read these, so a reason means the same everywhere and a new one is added in one place.
"""

from __future__ import annotations

REASONS: dict[str, str] = {
    "held": "the job is held: qhold (a user, operator or system hold), a dependency not yet met (-W depend), or "
            "its array's slot limit (qsub -t ...%N); qstat -f shows its Hold_Types",
    "not_queued": "the job waits for its start time (qsub -a; qstat -f shows its Execution_Time) or its file "
                  "stage-in, or is in transit (state W/T)",
    "queue_disabled": "the job's queue is stopped (started = False; a queue with enabled = False only refuses "
                      "new jobs: those it holds run)",
    "not_execution_queue": "the job's queue is no execution queue of the server (a routing queue: pbs_server "
                           "moves the job on first)",
    "queue_max_running": "the job's queue runs its maximum number of jobs",
    "queue_user_limit": "the job's user runs the queue's max_user_run jobs (qmgr)",
    "queue_group_limit": "the job's group runs the queue's max_group_run jobs (qmgr)",
    "server_max_running": "the batch server runs its max_running jobs (qmgr)",
    "server_user_limit": "the job's user runs the batch server's max_user_run jobs (qmgr)",
    "server_group_limit": "the job's group runs the batch server's max_group_run jobs (qmgr)",
    "vo_limit": "the VO runs its maximum number of jobs",
    "group_limit": "the group runs its maximum number of jobs",
    "vo_core_limit": "the VO's running cores and the job's would pass the VO's max_cores",
    "group_core_limit": "the group's running cores and the job's would pass the group's max_cores",
    "queue_core_limit": "the queue's running cores and the job's would pass the queue's max_cores",
    "user_limit": "the job's user runs their max_running jobs (users.NAME, else users.default)",
    "user_core_limit": "the user's running cores and the job's would pass their max_cores (users.NAME, else "
                       "users.default)",
    "array_slot_limit": "the job's array runs as many sub-jobs as its slot limit allows (qsub -t ...%N)",
    "unsafe_request": "starting the job would crash pbs_server (a job name or account string longer than "
                      "its accounting record can hold): shorten it with qalter -N or -A",
    "too_large": "the job asks for more cores than any usable node has",
    "never_fits": "no set of the farm's nodes the job may use could ever serve its request (nodes, "
                  "properties, host names, memory)",
    "nodes_down": "the request needs nodes that are down or offline now (a named host, or more nodes than are "
                  "up): it waits for them to return",
    "node_type": "the nodes with room are of a type the job's group may not use",
    "queue_nodes": "the nodes with room are not assigned to the job's queue",
    "vo_node_limit": "the nodes with room already run the VO's per-node maximum",
    "group_node_limit": "the nodes with room already run the group's per-node maximum",
    "packing": "the nodes with room are reserved for another job class (exclusive packing)",
    "no_free_slot": "no usable node has enough free cores (and the memory the job asks for)",
    "start_limit": "the cycle reached max_starts_per_cycle before this job's turn",
    "external_load": "an external load source (storage element, site probe) throttles the job's VO, group or "
                     "queue",
    "node_load": "the nodes with room report too much load or too little free memory (node_load)",
    "draining": "the nodes with room are draining for waiting multi-core jobs (drain)",
    "reserved": "the nodes with room are reserved for another job (a wide job that has waited longer: "
                "reservation_depth), and this one would not end (by its requested walltime) before that job starts "
                "nor leave it the cores it needs there (EASY backfill)",
    "downtime": "the nodes with room are in a scheduled downtime, or one begins there before this job would end "
                "(by its requested walltime; downtimes)",
    "pool_held": "the nodes with room are held by a guarantee pool for owners owed packages (pools)",
    "loan_refused": "the nodes with room keep a pool's idle guarantee, and the pool's loan policy does not lend "
                    "to this job (its queue or requested walltime)",
}

START_REASONS: dict[str, str] = {
    "hot": "on a hot list: bypasses the share ordering",
    "share": "the VO runs fewer slots than its guaranteed share",
    "fairshare": "opportunistic: free slots go by decayed wall-clock usage relative to share",
    "fifo": "baseline policy: submit order",
    "easy": "baseline policy: submit order with EASY backfill (reservations for the first jobs that do not fit)",
}

BLOCKING: frozenset[str] = frozenset({
    "held", "not_queued", "queue_disabled", "not_execution_queue", "too_large", "never_fits", "nodes_down", "vo_limit", "group_limit", "queue_max_running",
    "external_load", "queue_user_limit", "queue_group_limit", "server_max_running", "server_user_limit",
    "server_group_limit", "vo_core_limit", "group_core_limit", "queue_core_limit", "user_limit", "user_core_limit",
    "array_slot_limit", "unsafe_request",
})
"""Waits that free capacity would not end: the job cannot start until something else changes
(a hold, its queue, a limit). `mysched jobs` lists these as blocked; estimates give no time."""

NODE_REJECTIONS: dict[str, str] = {
    "queue_nodes": "not assigned to the job's queue",
    "node_type": "node type not allowed for the job's group",
    "packing": "reserved for another job class",
    "vo_node_limit": "VO per-node limit reached",
    "group_node_limit": "group per-node limit reached",
    "node_load": "load or free memory past node_load",
    "reserved": "reserved for another job starting before this one would end",
    "draining": "draining for multi-core jobs",
    "downtime": "in a scheduled downtime, or one begins before the job would end",
    "pool_held": "held by a guarantee pool for its owners",
    "loan_refused": "guarded by a guarantee pool whose loan policy refuses the job",
}
"""Short texts for the reasons a node was rejected for a job that had room elsewhere."""
