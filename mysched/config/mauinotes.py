"""What `mysched import-maui` carries over from a maui.cfg, and what it names as not carried
over with what mysched does instead: the two tables docs/import-maui.md lists (a test holds
them to each other, so the page cannot drift from the importer)."""

from __future__ import annotations

import re

MAPPED: dict[str, str] = {
    "ACCOUNTCFG[x] FSTARGET": "vos.x.share",
    "ACCOUNTCFG[x] MAXJOB": "vos.x.max_running",
    "ACCOUNTCFG[x] MAXPROC": "vos.x.max_cores",
    "GROUPCFG[x] FSTARGET": "vos.VO.share, groups.x.share",
    "GROUPCFG[x] MAXJOB": "groups.x.max_running",
    "GROUPCFG[x] MAXPROC": "groups.x.max_cores",
    "USERCFG[DEFAULT] MAXJOB": "users.default.max_running",
    "USERCFG[DEFAULT] MAXPROC": "users.default.max_cores",
    "USERCFG[x] MAXJOB": "users.x.max_running",
    "USERCFG[x] MAXPROC": "users.x.max_cores",
    "CLASSCFG[x] MAXJOB": "queues.x.max_running",
    "CLASSCFG[x] MAXPROC": "queues.x.max_cores",
    "FSDEPTH": "history.window",
    "FSINTERVAL": "history.window, history.half_life",
    "FSDECAY": "history.half_life",
    "RESERVATIONDEPTH": "scheduler.reservation_depth",
    "RMPOLLINTERVAL": "scheduler.interval",
    "RMCFG[x] HOST": "server.url",
    "SRCFG[x] HOSTLIST": "downtimes.x.hosts",
    "SRCFG[x] PERIOD": "downtimes.x.start, downtimes.x.end",
    "SRCFG[x] STARTTIME": "downtimes.x.start",
    "SRCFG[x] ENDTIME": "downtimes.x.end",
    "SRCFG[x] DAYS": "downtimes.x.start, downtimes.x.end",
    "SRCFG[x] DEPTH": "downtimes.x_1 ... downtimes.x_N",
}
"""MAUI parameter (``x`` any name) -> the mysched keys it becomes."""

_HOT = "hot lists (hot.queues, hot.vos, hot.groups, hot.users) put jobs ahead of the share order"
_ORDER = ("mysched sums no weighted factors: VOs below their guaranteed share go first, then fair share "
          "(share / (eps + usage)), then the user's qsub -p priority and submit order")

PARAMS: list[tuple[str, str, str]] = [
    ("QOSCFG, QOS*", r"QOS.*", f"mysched has no QOS: {_HOT}; limits are per VO, group, queue and user"),
    ("*WEIGHT, *CAP, XFACTOR*, XFMINWCLIMIT", r".*WEIGHT|.*CAP|XF.*", _ORDER),
    ("NODEALLOCATIONPOLICY, TASKDISTRIBUTIONPOLICY, NODESET*",
     r"NODEALLOCATIONPOLICY|TASKDISTRIBUTIONPOLICY|NODESET.*",
     "mysched places a job on a node of a type closed to other groups if it may use one, then on the node "
     "with the fewest jobs of its user and the most distinct users; "
     "while multi-core jobs run or wait, on busy nodes before empty ones"),
    ("BACKFILLPOLICY, BACKFILL*, BF*", r"BACKFILL.*|BF.*",
     "mysched always backfills: a job starts ahead of the reserved ones if it ends, by its requested "
     "walltime, before their reservations start (scheduler.reservation_depth)"),
    ("RESERVATIONPOLICY, RESERVATIONQOSLIST, RESERVATIONRETRYTIME, RESDEPTH",
     r"RESERVATIONPOLICY|RESERVATIONQOSLIST|RESERVATIONRETRYTIME|RESDEPTH",
     "mysched reserves for the scheduler.reservation_depth longest-waiting jobs that do not fit "
     "(scheduler.reservation_wait_factor chooses which)"),
    ("NODEACCESSPOLICY", r"NODEACCESSPOLICY",
     "mysched shares a node among jobs up to its slots (TORQUE's np); queues.NAME.exclusive and node_types "
     "keep nodes for some jobs"),
    ("FSPOLICY", r"FSPOLICY",
     "mysched charges cores x wall-clock of running and finished jobs (as DEDICATEDPS), decayed over history.window"),
    ("FSCONFIGFILE", r"FSCONFIGFILE", "fs.cfg is not read: give its targets as GROUPCFG[x] FSTARGET=N lines and "
     "import again"),
    ("NODECFG, NODE* (load and polling)", r"NODE.*",
     "mysched reads the nodes from pbs_server each cycle; node_types.NAME (nodes, properties, groups, vos, mem) "
     "types them and node_load skips loaded nodes"),
    ("DEFERTIME, DEFERCOUNT, DEFERSTARTCOUNT", r"DEFER.*",
     "mysched never defers or holds a job: one that cannot start waits with its reason (mysched why)"),
    ("SERVERHOST, SERVERPORT, SERVERMODE, SERVERNAME, ADMIN1-3, ADMINHOST(S), CLIENTCFG, CLIENTTIMEOUT",
     r"SERVER.*|ADMIN.*|CLIENT.*",
     "mysched runs as a systemd service on the batch server; its status commands read status.json, so there "
     "are no admin lists or client ports"),
    ("LOG*", r"LOG.*", "mysched logs to the journal (mysched run --log-level)"),
    ("CHECKPOINT*, CP*, STATDIR", r"CHECKPOINT.*|CP.*|STATDIR",
     "mysched keeps its state in daemon.state_dir and the history database (history.database)"),
    ("RMCFG[x] (other than HOST), RM* (other than RMPOLLINTERVAL)", r"RM.*",
     "server.url names pbs_server, server.timeout bounds each call to it"),
    ("SIM*", r"SIM.*", "mysched simulate replays a trace or a synthetic workload on a simulated farm (farm section)"),
    ("PREEMPTPOLICY", r"PREEMPT.*", "mysched never preempts a running job"),
    ("ENABLEMULTINODEJOBS, ENABLEMULTIREQJOBS, ENABLENEGJOBPRIORITY, REJECTNEGPRIOJOBS",
     r"ENABLE.*|REJECTNEGPRIOJOBS", "mysched starts every request TORQUE accepts (nodes=, ppn=, procs=)"),
    ("SYSTEMMAX*, SYSTEMDEFAULTJOBWALLTIME, JOB*", r"SYSTEM.*|JOB.*",
     "TORQUE's queue resources_max and resources_default (qmgr) bound requests; mysched reads "
     "resources_max.walltime (scheduler.max_walltime)"),
    ("RESOURCELIMITPOLICY, WCVIOLATIONACTION, PURGETIME", r"RESOURCELIMITPOLICY|WCVIOLATIONACTION|PURGETIME",
     "pbs_mom enforces walltime and resource limits"),
    ("MAXJOBPERUSER*, MAXPROCPERUSER*, MAX*PERUSER* (MAUI 3.0 style)", r"MAX.*PERUSER.*",
     "write them as USERCFG[DEFAULT] MAXJOB=N MAXPROC=N and import again"),
    ("SR* (old style standing reservations)", r"SR.*",
     "write them as SRCFG[NAME] ATTR=VALUE lines and import again"),
    ("AMCFG", r"AMCFG", "mysched has no allocation manager: usage comes from TORQUE's accounting logs"),
    ("other MAUI parameters", r".*", "no such setting in mysched"),
]
"""Whole parameters not carried over: (label in docs/import-maui.md, name pattern, what mysched
does instead); the first whose pattern matches the parameter's name."""

ATTRS: list[tuple[str, str, str]] = [
    ("*CFG[DEFAULT] of groups, accounts, classes", r"(GROUPCFG|ACCOUNTCFG|CLASSCFG)\[DEFAULT\] .*",
     "mysched has no default VO, group or queue limits: set each one"),
    ("USERCFG[x], CLASSCFG[x] FSTARGET", r"(USERCFG|CLASSCFG)\[.*\] FSTARGET",
     "mysched's shares are per VO and group; inside a group, the user with the least usage goes first"),
    ("*CFG[x] PRIORITY", r".* PRIORITY", f"mysched has no credential priorities: {_HOT}"),
    ("*CFG[x] QDEF, QLIST, PDEF, PLIST, FLAGS, JOBFLAGS", r".* (QDEF|QLIST|PDEF|PLIST|FLAGS|JOBFLAGS)",
     "mysched has no QOS or partitions: node_types and queues.NAME.nodes keep jobs to nodes"),
    ("CLASSCFG[x] MAXJOB[USER]", r"CLASSCFG\[.*\] MAXJOB\[USER\]",
     "set qmgr's max_user_run on the queue: mysched honours it (queue_user_limit)"),
    ("*CFG[x] MAXJOB[...], MAXPROC[...] (per-credential limits)", r".* MAX(JOB|PROC|NODE)\[.*\]",
     "mysched's limits are per VO, group, queue or user, not combined; users.NAME counts all of a user's jobs"),
    ("*CFG[x] MAXI* (idle limits)", r".* MAXI.*",
     "mysched limits running jobs only; TORQUE's max_queuable and max_user_queuable limit queued ones"),
    ("*CFG[x] MAXNODE, MAXMEM, MAXPS, MAXPE, MAXWC, OMAX*", r".* (MAXNODE|MAXMEM|MAXPS|MAXPE|MAXWC|OMAX.*)",
     "mysched limits running jobs (max_running) and cores (max_cores) only"),
    ("CLASSCFG[x] DEFAULT.*, MAX.*, MIN.*", r"CLASSCFG\[.*\] (DEFAULT|MAX|MIN)\..*",
     "TORQUE's queue resources_default, resources_max and resources_min (qmgr) do it"),
    ("SRCFG[x] with an access list (USERLIST, GROUPLIST, ACCOUNTLIST, CLASSLIST, QOSLIST, JOBATTRLIST, TIMELIMIT)",
     r"SRCFG\[.*\] (USERLIST|GROUPLIST|ACCOUNTLIST|CLASSLIST|QOSLIST|JOBATTRLIST|TIMELIMIT)",
     "a standing reservation for some jobs, not a maintenance: node_types.NAME (groups, vos), queues.NAME "
     "(nodes, exclusive) or pools.NAME give nodes to some jobs"),
    ("SRCFG[x] without HOSTLIST, with PERIOD=INFINITY, or all day every day", r"SRCFG\[.*\] (TASKCOUNT|PERIOD=INFINITY|ALWAYS)",
     "not a maintenance window with an end: take such nodes offline (pbsnodes -o), mysched starts nothing there"),
    ("SRCFG[x] of a downtime: RESOURCES, TPN, FLAGS, ACCESS, ...", r"SRCFG\[.*\] .*",
     "a downtime takes every listed host for its whole window"),
    ("other attributes", r".*", "none: named as an unknown attribute (a warning)"),
]
"""Attributes of a ``*CFG[x]`` line not carried over: (label, pattern on ``PARAM[x] ATTR``, instead)."""


KNOWN_OTHERS = frozenset({
    "DEFAULTCLASSLIST", "DISPLAYFLAGS", "FEATURENODETYPEHEADER", "FEATUREPARTITIONHEADER", "FEATUREPROCSPEEDHEADER",
    "FEEDBACKPROGRAM", "NOTIFICATIONPROGRAM", "PLOTMAXPROC", "PLOTMAXTIME", "PLOTMINPROC", "PLOTMINTIME",
    "PLOTPROCSCALE", "PLOTTIMESCALE", "TRAPFUNCTION", "TRAPJOB", "TRAPNODE", "TRAPRES", "USEMACHINESPEED",
    "USESYSTEMQUEUETIME", "MAXJOBQUEUEDPERUSERCOUNT", "FSCAP", "GROUPCFG", "ACCOUNTCFG", "USERCFG", "CLASSCFG",
    "SRCFG", "RMCFG", "SYSCFG", "PARCFG", "BYPASSWEIGHT", "MAXPSPERUSER", "MAXWCPERUSER", "ENFORCERESOURCELIMITS",
    "FSENFORCEMENT", "FSTARGET", "RESERVATIONDEPTH", "FSDEPTH", "FSINTERVAL", "FSDECAY", "RMPOLLINTERVAL",
})
"""MAUI parameters that only the last row of `PARAMS` names (the rest are known by their row)."""


def known(param: str) -> bool:
    """Is `param` a MAUI parameter (else a typo, named as unknown)?"""
    return param in KNOWN_OTHERS or any(re.fullmatch(p, param) for _l, p, _w in PARAMS[:-1])


def instead(table: list[tuple[str, str, str]], what: str) -> str:
    """What mysched does instead of `what`, from the first row of `table` that matches it."""
    for _label, pattern, why in table:
        if re.fullmatch(pattern, what):
            return why
    return "no such setting in mysched"
