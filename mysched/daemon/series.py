"""The series the daemon exports whole after each cycle: the farm's figures and the external
load sources' (name -> help text and label names; `mysched.daemon.metrics` serves them)."""

from __future__ import annotations

FARM = {
    "mysched_running_jobs": ("Jobs holding slots (running, exiting or suspended) by VO, after the cycle's starts",
                             ("vo",)),
    "mysched_queued_jobs": ("Jobs waiting (queued, held, waiting or in transit) by VO, after the cycle's starts",
                            ("vo",)),
    "mysched_used_slots": ("Slots in use by VO, after the cycle's starts", ("vo",)),
    "mysched_farm_slots": ("Usable slots of the farm", ()),
    "mysched_farm_used_slots": ("Slots in use on the farm, after the cycle's starts", ()),
    "mysched_share_target_ratio": ("Configured share by VO (fraction of the usable slots)", ("vo",)),
    "mysched_share_achieved_ratio": ("Slots used by VO as a fraction of the usable slots", ("vo",)),
    "mysched_pending_jobs": ("Jobs the cycle left waiting, by reason (every reason listed, 0 if none)", ("reason",)),
    "mysched_nodes_load_skipped": ("Nodes skipped for the load or free memory pbs_mom reports", ()),
    "mysched_draining_nodes": ("Nodes in the multi-core partition (draining or drained)", ()),
    "mysched_draining_idle_slots": ("Free slots on draining or reserved nodes (integrate over time for the idle "
                                    "slot-seconds they cost)", ()),
    "mysched_reservations": ("Reservations held for waiting jobs", ()),
    "mysched_pool_packages": ("Package guarantee pools: total, free, guaranteed, owner_use, loan_use, other_use "
                              "packages; held_hosts; overcommitted (1/0)", ("pool", "figure")),
    "mysched_pool_consumer_packages": ("Per pool and consumer (kind:name): guaranteed, allocated, owner_use, loaned, "
                                       "pending and owed packages", ("pool", "consumer", "figure")),
}
LOADS = {
    "mysched_load_value": ("Latest good value of an external load source", ("source",)),
    "mysched_load_age_seconds": ("Age of a load source's latest good value at the cycle", ("source",)),
    "mysched_load_stale": ("1 while a load source's value is stale (or missing)", ("source",)),
    "mysched_load_failing": ("1 while a load source's last read failed (its last good value is kept until stale)",
                             ("source",)),
    "mysched_load_throttle_factor": ("Fraction of max_running and of max_cores a load rule leaves its VOs, groups "
                                     "and queues (1: open)", ("rule",)),
}
