"""`mysched jobs`, `why` and `when`: what runs, what waits and why, and when it may start."""

from __future__ import annotations

import argparse
import re
from typing import Any

from mysched.cli.common import non_empty
from mysched.cli.main import command
from mysched.cli import farmslots, statusdoc, when_request, whylimits
from mysched.cli.statusdoc import RUNNING, classify, find_job, load, options
from mysched.cli.textout import dump_json, duration, table
from mysched.core.estimate import Estimate
from mysched.core.model.reasons import BLOCKING, REASONS, START_REASONS, Reason
from mysched.daemon.statusfile import hosts, rows


# -- jobs ------------------------------------------------------------------------------------

@command("jobs", "running, queued and blocked jobs with priorities and reasons (showq, squeue)")
def fill_jobs(p: argparse.ArgumentParser) -> None:
    """List jobs: running (with elapsed time), queued (eligible, with wait time, rank in the last
    cycle's order, priority and why they wait) and blocked (held, or at a limit)."""
    options(p, json_keys="time, farm{total_slots,used_slots,free_slots,node_count,occupancy,closed_slots} (total_slots: "
            "nodes not down or offline, plus the slots jobs use on those that are; closed_slots: their idle slots, "
            "not counted), "
            "counts{running,queued,blocked}, daemon{role,host,pid,since,lock (file, database or null)}, standby (null or "
            "{role,host,pid,since,checked,leader,error}), jobs[{id,vo,group,user,queue,cores,state,class,"
            "wait_s,elapsed_s,rank,priority,reason,detail,nodes (host names)}]; absent values are null (docs/json.md)")
    p.add_argument("-u", "--user", type=non_empty, help="only this user's jobs")
    p.add_argument("-g", "--group", type=non_empty, help="only this Unix group's jobs")
    p.add_argument("--vo", type=non_empty, help="only this VO's jobs")
    p.add_argument("-q", "--queue", type=non_empty, help="only jobs in this queue")
    p.add_argument("--state", choices=("running", "queued", "blocked"), help="only jobs in this state")
    p.set_defaults(run=run_jobs)


def run_jobs(args: argparse.Namespace) -> int:
    doc = load(args)
    now = doc["snapshot_time"]
    cols = doc["job_columns"]
    idx = {c: i for i, c in enumerate(cols)}
    out = []
    counts = {"running": 0, "queued": 0, "blocked": 0}
    for r in doc["jobs"]:
        if args.user and r[idx["user"]] != args.user or args.group and r[idx["group"]] != args.group:
            continue
        if args.vo and r[idx["vo"]] != args.vo or args.queue and r[idx["queue"]] != args.queue:
            continue
        j = dict(zip(cols, r))
        cls = classify(j)
        counts[cls] += 1
        if args.state and cls != args.state:
            continue
        j["class"] = cls
        # a job the last cycle started has no start_time from pbs_server yet: it runs since then
        start = j["start"] if j["start"] is not None or j.get("cycle") != "started" else now
        j["elapsed_s"] = (now - start) if cls == "running" and start is not None else None
        j["wait_s"] = (now - j["submit"]) if cls != "running" else None
        out.append(j)
    order = {"running": 0, "queued": 1, "blocked": 2}
    # running: longest first; waiting: by position, blocked ones (none) by id; ids in qstat's
    # numeric order
    out.sort(key=lambda j: (order[j["class"]], 1 << 30 if j["rank"] is None or j["class"] == "running" else j["rank"],
                            -(j["elapsed_s"] or 0), id_order(j["id"])))
    farm = {**doc["farm"], "closed_slots": farmslots.closed(rows(doc, "nodes"))}
    farm["node_count"] = farm.pop("nodes", None)  # "nodes" in the JSON is always a list of host names
    occ = farm["used_slots"] / farm["total_slots"] if farm["total_slots"] else 0.0
    if args.json:
        dump_json({"time": now, "farm": {**farm, "occupancy": round(occ, 4)}, "counts": counts,
                   "daemon": doc.get("role"), "standby": doc.get("standby"),
                   "jobs": [{k: j[k] for k in ("id", "vo", "group", "user", "queue", "cores", "state", "class",
                                                "wait_s", "elapsed_s", "rank", "priority", "reason", "detail")}
                            | {"nodes": hosts(j["nodes"])} for j in out]})
        return 0
    colours = {"running": "green", "queued": None, "blocked": "yellow"}
    # One table for every class, so scripts (--noheader) see the same columns on every line:
    # waiting jobs say why they wait, running jobs where they run.
    table(["JOBID", "VO", "GROUP", "USER", "QUEUE", "CORES", "STATE", "TIME", "RANK", "PRIORITY", "REASON", "NODES"],
          [[j["id"], j["vo"], j["group"], j["user"], j["queue"], j["cores"], j["class"],
            duration(j["elapsed_s"] if j["class"] == "running" else j["wait_s"]),
            j["rank"] if j["class"] != "running" and j["rank"] is not None else "-",
            f"{j['priority']:.3f}" if j["priority"] is not None and j["class"] != "running" else "-",
            j["reason"] if j["class"] != "running" else "-", j["nodes"] or "-"] for j in out],
          noheader=args.noheader, colours=[colours[j["class"]] for j in out], right=(5, 8, 9))
    if not args.noheader:
        print(f"\n{counts['running']} running, {counts['queued']} queued, {counts['blocked']} blocked; "
              f"{farmslots.slots_text(farm['used_slots'], farm['total_slots'], farm['closed_slots'])}; "
              f"status of {statusdoc.clock(doc, now)}")
        for note in statusdoc.notes(doc):
            print(note)
    return 0


_ID = re.compile(r"(\d+)(?:\[(\d*)\])?")


def id_order(job_id: str) -> tuple:
    """Sort key of a job id in TORQUE's numeric order, as qstat lists them: 9.srv before
    10.srv, 7[2] before 7[10]; ids of another form after them, by text."""
    number, _, rest = job_id.partition(".")
    m = _ID.fullmatch(number)
    if m is None:
        return (1, 0, -1, job_id)
    return (0, int(m[1]), int(m[2]) if m[2] else -1, rest)


JOBID_HELP = ("as qsub or qstat print it: 123.batch.example.org, or 123 or 123.batch when unambiguous; "
              "7[2] for a sub-job of an array")


# -- why --------------------------------------------------------------------------------------

@command("why", "everything about one job and why it is not running (checkjob)")
def fill_why(p: argparse.ArgumentParser) -> None:
    """Explain one job: its place in the last cycle's order and why, the limits it meets (its VO's,
    group's, queue's and user's running jobs and cores against max_running and max_cores, and per
    node), how many nodes were rejected for each reason, and the admin's
    note (pbsnodes -N) of each down or offline node it names (where it runs or waits for)."""
    options(p, json_keys="job{...}, class, explanation, reason_text, limits{vo{name,running_jobs,running_slots,"
            "max_running,max_cores,max_per_node,guarantee,below_guarantee},group{name,running_jobs,running_cores,"
            "max_running,max_cores,max_per_node},queue{name,running_jobs,running_cores,max_running,max_cores},"
            "user{name,key (users.NAME or users.default),running_jobs,running_cores,max_running,max_cores}}, "
            "run_limit (a batch server's run limit holding it back, as qmgr spells it, or null), nodes_rejected, "
            "nodes_out[{name,state,note}] (down or offline nodes it names, with the admin's note)",
            table_=False)
    p.add_argument("job_id", metavar="JOBID", type=non_empty, help=JOBID_HELP)
    p.set_defaults(run=run_why)


def run_why(args: argparse.Namespace) -> int:
    doc = load(args)
    j = find_job(doc, args.job_id)
    cls = classify(j)
    limits = whylimits.limits(doc, j)
    rejected = doc["rejected"][j["rejected"]] if j.get("rejected") is not None else {}
    si = doc["job_columns"].index("state")
    ri = doc["job_columns"].index("reason")
    n_waiting = sum(1 for x in doc["jobs"] if x[si] not in RUNNING)
    n_blocked = sum(1 for x in doc["jobs"] if x[si] not in RUNNING and x[ri] in BLOCKING)
    if cls == "running":
        text = (f"running since {duration(doc['snapshot_time'] - (j['start'] or doc['snapshot_time']))} on "
                f"{j['nodes']}" + (f" (started by the last cycle: {START_REASONS.get(j['reason'], j['reason'])})"
                                   if j.get("cycle") == "started" else ""))
    elif j.get("cycle") == "planned":
        text = (f"dry run: the last cycle would have started it on {j['nodes']} (position {j['rank']}: "
                f"{START_REASONS.get(j['reason'], j['reason'])}); nothing was started")
    elif j["reason"] in BLOCKING:  # not in the order: no position until what blocks it changes
        text = f"blocked: {REASONS.get(j['reason'], j['reason'])}"
    else:
        prio = f"{j['priority']:.3f}" if j["priority"] is not None else "-"  # not ordered by the cycle
        text = (f"waiting, position {j['rank'] if j['rank'] is not None else '-'} in the last cycle's order "
                f"({n_waiting} waiting" + (f", {n_blocked} of them blocked" if n_blocked else "")
                + f"), VO priority {prio}: {REASONS.get(j['reason'], j['reason'])}")
    run_limit = _run_limit(doc, j)
    out = _nodes_out(doc, j)
    if args.json:
        dump_json({"job": statusdoc.job_json(j), "class": cls, "explanation": text,
                   "reason_text": _reason_text(j),
                   "limits": limits, "run_limit": run_limit, "nodes_rejected": rejected, "nodes_out": out})
        return 0
    print(f"job {j['id']}: user {j['user']}, group {j['group']}, VO {j['vo']}, queue {j['queue']}, "
          f"{j['cores']} core(s)" + (f" ({j['request']})" if j.get("request") else "")
          + f", walltime {duration(j['walltime'])}")
    print(f"  {text}")
    if j.get("torque_priority"):  # not the VO priority above: it orders only the user's own jobs
        print(f"  TORQUE priority {j['torque_priority']} (qsub -p): goes before the user's jobs of lower priority")
    if j.get("detail"):
        print(f"  detail: {j['detail']}")
    for n in out:
        print(f"  {n['name']} is {n['state']}: " + (f"note \"{n['note']}\"" if n["note"] else "no note (pbsnodes -N)"))
    if run_limit is not None and run_limit != j.get("detail"):
        print(f"  {run_limit}")
    for line in whylimits.lines(limits):
        print(f"  {line}")
    if rejected:
        print("  nodes rejected in the last cycle: " + ", ".join(f"{k} {v}" for k, v in
                                                                 sorted(rejected.items(), key=lambda kv: -kv[1])))
    return 0


# -- when -------------------------------------------------------------------------------------

@command("when", "when a waiting job is expected to start (showstart, spwhen)")
def fill_when(p: argparse.ArgumentParser) -> None:
    """Estimate when a waiting job starts, from running jobs' requested walltimes and the jobs
    ahead of it in the last cycle's order; says plainly when no estimate is possible."""
    options(p, json_keys="job, start (Unix time or null), in_s, class (running, queued or blocked), exact, why, ahead, "
            "clock (wall or simulated), nodes (host names where it runs, is reserved or is expected to start; "
            "null if none)", table_=False)
    p.add_argument("job_id", metavar="JOBID", type=non_empty, help=JOBID_HELP)
    p.set_defaults(run=run_when)


def run_when(args: argparse.Namespace) -> int:
    doc = load(args)
    j = find_job(doc, args.job_id)
    now = doc["snapshot_time"]
    if j["state"] in RUNNING:
        start = j["start"] if j["start"] is not None else now
        est = Estimate(start, True, "already running", 0, tuple(hosts(j["nodes"]) or ()))
    elif j["reason"] in BLOCKING:
        est = Estimate(None, False, f"blocked ({j['reason']}): it cannot start until that changes", 0)
    elif j["id"] in (doc.get("reservations") or {}):
        r = doc["reservations"][j["id"]]
        est = Estimate(r["start"], False, f"nodes {'+'.join(r['nodes'])} are reserved for it from then (by the "
                       "requested walltimes of the jobs running there; later jobs may only backfill before)",
                       when_request.ahead_of(doc, j), tuple(r["nodes"]))
    else:
        est = when_request.estimate(doc, j)
    if args.json:
        # in_s counts from the status's time; a running job's start lies in the past: 0.
        dump_json({"job": j["id"], "start": est.start,
                   "in_s": None if est.start is None else max(0.0, est.start - now),
                   "class": classify(j), "exact": est.exact, "why": est.why, "ahead": est.ahead,
                   "clock": statusdoc.clock_kind(doc), "nodes": list(est.nodes) or None})
        return 0
    if j["state"] in RUNNING:
        print(f"job {j['id']}: already running (since {statusdoc.clock(doc, est.start)})")
    elif est.start is None:
        print(f"job {j['id']}: no start estimate — {est.why}")
    else:
        print(f"job {j['id']}: expected to start in {duration(est.start - now)} (about "
              f"{statusdoc.clock(doc, est.start)}), {est.ahead} job(s) ahead; {est.why}")
    return 0


def _reason_text(j: dict[str, Any]) -> str | None:
    """The words for a job's reason: why the cycle started (or would start) it, or why it waits;
    None for a job running from before the cycle, which has no reason."""
    if j["reason"] is None:
        return None
    texts = START_REASONS if j.get("cycle") else REASONS  # started, planned or failed: a start's reason
    return texts.get(j["reason"], j["reason"])


_WORDS = re.compile(r"[\s,;:+=()]+")


def _nodes_out(doc: dict[str, Any], j: dict[str, Any]) -> list[dict[str, Any]]:
    """The down or offline nodes `why` names for `j` -- where it runs, the hosts its request
    names, those its wait's detail names -- with the admin's note, which says why they are out."""
    words = set(_WORDS.split(" ".join(filter(None, (j.get("nodes"), j.get("request"), j.get("detail"))))))
    return [{"name": n["name"], "state": n["state"], "note": n.get("note")} for n in rows(doc, "nodes")
            if n["state"] in ("down", "offline") and n["name"] in words]


_RUN_LIMITS = {Reason.QUEUE_USER_LIMIT: ("queue", "max_user_run", "user"),
               Reason.QUEUE_GROUP_LIMIT: ("queue", "max_group_run", "group"),
               Reason.SERVER_MAX_RUNNING: ("server", "max_running", None),
               Reason.SERVER_USER_LIMIT: ("server", "max_user_run", "user"),
               Reason.SERVER_GROUP_LIMIT: ("server", "max_group_run", "group")}
"""Wait reason -> (where the limit is set, its qmgr name, what it counts by)."""


_NAMED_LIMITS = frozenset({Reason.QUEUE_PROJECT_LIMIT, Reason.SERVER_PROJECT_LIMIT, Reason.QUEUE_RESOURCE_LIMIT,
                           Reason.SERVER_RESOURCE_LIMIT, *_RUN_LIMITS})
"""Waits for a batch server's limit whose detail, where the cycle gave one, names the limit as
the server spells it (OpenPBS's ``max_run_res.ncpus [u:PBS_GENERIC=4]``)."""


def _run_limit(doc: dict[str, Any], j: dict[str, Any]) -> str | None:
    """For a job held back by a batch server's run limit: the limit and what runs against it
    (the cycle's detail where it named one, else TORQUE's qmgr setting from the status)."""
    if j["reason"] in _NAMED_LIMITS and j.get("detail"):
        return j["detail"]
    what = _RUN_LIMITS.get(j["reason"])
    if what is None:
        return None
    where, key, by = what
    if where == "queue":
        cap = ((doc.get("queues") or {}).get(j["queue"]) or {}).get(key)
        scope, prefix = f"queue {j['queue']}", f"qmgr -c 'set queue {j['queue']} {key}'"
    else:
        cap = ((doc.get("limits") or {}).get("server") or {}).get(key)
        scope, prefix = "the server", f"qmgr -c 'set server {key}'"
    running = sum(1 for x in rows(doc, "jobs") if x["state"] in RUNNING
                  and (where == "server" or x["queue"] == j["queue"]) and (by is None or x[by] == j[by]))
    who = f"{by} {j[by]}" if by else "all users"
    return f"{who} run(s) {running} job(s) in {scope}; {key} = {cap if cap is not None else '?'} ({prefix})"
