"""Status commands for admins and users: jobs, why, nodes, shares, usage, when, free.

They read the status file the daemon publishes after each cycle (world-readable, so they
work for unprivileged users) and, for `usage`, the history store. Every command has
``--json`` with stable keys; tables have ``--noheader``.
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

from mysched.cli.main import command
from mysched.errors import StatusError, UsageError
from mysched.core.estimate import estimate_start, node_admits
from mysched.core.reasons import BLOCKING, REASONS, START_REASONS
from mysched.daemon.statusfile import read_status, rows
from mysched.cli.textout import dump_json, duration, table
from mysched.cli.common import date_arg

RUNNING = ("R", "E", "S")


def _common(p: argparse.ArgumentParser, *, json_keys: str, table_: bool = True) -> None:
    p.add_argument("--state-dir", metavar="DIR", help="where the daemon writes status.json (default: "
                   "$MYSCHED_STATE_DIR, else daemon.state_dir of -c FILE, else /var/lib/mysched)")
    p.add_argument("-c", "--config", metavar="FILE", help="configuration file (for daemon.state_dir)")
    p.add_argument("--max-age", type=float, metavar="SECONDS",
                   help="refuse a status older than this (default: 3 cycle intervals, at least 300 s)")
    p.add_argument("--json", action="store_true", help=f"JSON output; keys: {json_keys}")
    if table_:
        p.add_argument("--noheader", action="store_true", help="no header line (for scripts)")


def _state_dir(args: argparse.Namespace) -> str:
    if args.state_dir:
        return args.state_dir
    if os.environ.get("MYSCHED_STATE_DIR"):
        return os.environ["MYSCHED_STATE_DIR"]
    if args.config:
        from mysched.config import load_config

        return load_config(args.config).state_dir
    return "/var/lib/mysched"


def load(args: argparse.Namespace) -> dict[str, Any]:
    path = _state_dir(args)
    doc = read_status(path)
    max_age = args.max_age if args.max_age is not None else max(300.0, 3 * float(doc.get("interval", 60)))
    age = time.time() - doc.get("published", 0)
    if age > max_age:
        raise StatusError(f"{path}: status is stale: last published {age:.0f} s ago (is the daemon running? it "
                          f"publishes every {doc.get('interval', 60):g} s; --max-age overrides)")
    return doc


def _classify(j: dict[str, Any]) -> str:
    if j["state"] in RUNNING:
        return "running"
    if j["reason"] in BLOCKING:
        return "blocked"
    return "queued"


# -- jobs ------------------------------------------------------------------------------------

@command("jobs", "running, queued and blocked jobs with priorities and reasons (showq, squeue)")
def fill_jobs(p: argparse.ArgumentParser) -> None:
    """List jobs: running (with elapsed time), queued (eligible, with wait time, rank in the last
    cycle's order, priority and why they wait) and blocked (held, or at a limit)."""
    _common(p, json_keys="time, farm{total_slots,used_slots,occupancy}, counts{running,queued,blocked}, "
            "jobs[{id,vo,group,user,queue,cores,state,class,wait_s,elapsed_s,rank,priority,reason,detail,nodes}]")
    p.add_argument("-u", "--user")
    p.add_argument("-g", "--group")
    p.add_argument("--vo")
    p.add_argument("-q", "--queue")
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
        cls = _classify(j)
        counts[cls] += 1
        if args.state and cls != args.state:
            continue
        j["class"] = cls
        j["elapsed_s"] = (now - j["start"]) if cls == "running" and j["start"] else None
        j["wait_s"] = (now - j["submit"]) if cls != "running" else None
        out.append(j)
    order = {"running": 0, "queued": 1, "blocked": 2}
    out.sort(key=lambda j: (order[j["class"]], j["rank"] if j["rank"] is not None else 1 << 30,
                            j["start"] or 0, j["id"]))
    farm = doc["farm"]
    occ = farm["used_slots"] / farm["total_slots"] if farm["total_slots"] else 0.0
    if args.json:
        dump_json({"time": now, "farm": {**farm, "occupancy": round(occ, 4)}, "counts": counts,
                   "jobs": [{k: j[k] for k in ("id", "vo", "group", "user", "queue", "cores", "state", "class",
                                                "wait_s", "elapsed_s", "rank", "priority", "reason", "detail",
                                                "nodes")} for j in out]})
        return 0
    colours = {"running": "green", "queued": None, "blocked": "yellow"}
    table(["JOBID", "VO", "GROUP", "USER", "QUEUE", "CORES", "STATE", "TIME", "RANK", "PRIORITY", "REASON"],
          [[j["id"], j["vo"], j["group"], j["user"], j["queue"], j["cores"], j["class"],
            duration(j["elapsed_s"] if j["class"] == "running" else j["wait_s"]),
            j["rank"] if j["class"] != "running" else "", f"{j['priority']:.3f}" if j["priority"] is not None else "",
            j["reason"] if j["class"] != "running" else j["nodes"]] for j in out],
          noheader=args.noheader, colours=[colours[j["class"]] for j in out], right=(5, 8, 9))
    if not args.noheader:
        print(f"\n{counts['running']} running, {counts['queued']} queued, {counts['blocked']} blocked; "
              f"slots used {farm['used_slots']} of {farm['total_slots']} ({occ:.1%}); "
              f"status of {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(now))}")
    return 0


# -- why --------------------------------------------------------------------------------------

@command("why", "everything about one job and why it is not running (checkjob)")
def fill_why(p: argparse.ArgumentParser) -> None:
    """Explain one job: its place in the last cycle's order and why, the limits it meets (VO and
    group totals and per node), and how many nodes were rejected for each reason."""
    _common(p, json_keys="job{...}, class, explanation, reason_text, limits{vo,group}, nodes_rejected",
            table_=False)
    p.add_argument("job_id", metavar="JOBID")
    p.set_defaults(run=run_why)


def _find(doc: dict[str, Any], job_id: str) -> dict[str, Any]:
    jobs = rows(doc, "jobs")
    for j in jobs:
        if j["id"] == job_id:
            return j
    matches = [j for j in jobs if j["id"].split(".")[0] == job_id]
    if len(matches) == 1:
        return matches[0]
    raise StatusError(f"job {job_id} is not in the status of the last cycle (finished, deleted, or a typo?)")


def run_why(args: argparse.Namespace) -> int:
    doc = load(args)
    j = _find(doc, args.job_id)
    vo = doc["vos"].get(j["vo"], {})
    cls = _classify(j)
    group_running = sum(1 for x in rows(doc, "jobs") if x["group"] == j["group"] and x["state"] in RUNNING)
    glimits = doc.get("limits", {}).get("groups", {}).get(j["group"], {})
    limits = {
        "vo": {"name": j["vo"], "running_jobs": vo.get("running_jobs"), "max_running": vo.get("max_running"),
               "max_per_node": vo.get("max_per_node"), "running_slots": vo.get("running_slots"),
               "guarantee": vo.get("guarantee"), "below_guarantee": vo.get("below_guarantee")},
        "group": {"name": j["group"], "running_jobs": group_running, "max_running": glimits.get("max_running"),
                  "max_per_node": glimits.get("max_per_node")},
    }
    rejected = doc["rejected"][j["rejected"]] if j.get("rejected") is not None else {}
    si = doc["job_columns"].index("state")
    n_waiting = sum(1 for x in doc["jobs"] if x[si] not in RUNNING)
    if cls == "running":
        text = (f"running since {duration(doc['snapshot_time'] - (j['start'] or doc['snapshot_time']))} on "
                f"{j['nodes']}" + (f" (started by the last cycle: {START_REASONS.get(j['reason'], j['reason'])})"
                                   if j["state"] == "S" else ""))
    else:
        text = (f"waiting, position {j['rank']} in the last cycle's order ({n_waiting} waiting), VO priority "
                f"{j['priority']:.3f}: {REASONS.get(j['reason'], j['reason'])}")
    if args.json:
        dump_json({"job": j, "class": cls, "explanation": text, "reason_text": REASONS.get(j["reason"], ""),
                   "limits": limits, "nodes_rejected": rejected})
        return 0
    print(f"job {j['id']}: user {j['user']}, group {j['group']}, VO {j['vo']}, queue {j['queue']}, "
          f"{j['cores']} core(s), walltime {duration(j['walltime'])}")
    print(f"  {text}")
    if j.get("detail"):
        print(f"  detail: {j['detail']}")
    v = limits["vo"]
    print(f"  VO {v['name']}: {v['running_slots']} slots running, guarantee {v['guarantee']} "
          f"({'below' if v['below_guarantee'] else 'at or above'}), {v['running_jobs']} jobs"
          + (f" of max {v['max_running']}" if v["max_running"] is not None else "")
          + (f", at most {v['max_per_node']} per node" if v["max_per_node"] is not None else ""))
    g = limits["group"]
    if g["max_running"] is not None or g["max_per_node"] is not None:
        print(f"  group {g['name']}: {g['running_jobs']} jobs"
              + (f" of max {g['max_running']}" if g["max_running"] is not None else "")
              + (f", at most {g['max_per_node']} per node" if g["max_per_node"] is not None else ""))
    if rejected:
        print("  nodes rejected in the last cycle: " + ", ".join(f"{k} {v}" for k, v in
                                                                 sorted(rejected.items(), key=lambda kv: -kv[1])))
    return 0


# -- nodes ------------------------------------------------------------------------------------

@command("nodes", "per-node slots, VOs, users and diversity")
def fill_nodes(p: argparse.ArgumentParser) -> None:
    """Per node: state, type, slots used/total, jobs per VO, distinct users, diversity (distinct
    users / jobs) and the packing class holding it; then a farm summary."""
    _common(p, json_keys="summary{nodes,by_state,slots,used_slots,diversity}, nodes[{name,state,type,slots,used,"
            "jobs,vos,users,diversity,class,properties}]")
    p.add_argument("--state", help="only nodes in this state (free, partial, full, down, offline, busy)")
    p.add_argument("--type", help="only nodes of this node type")
    p.set_defaults(run=run_nodes)


def run_nodes(args: argparse.Namespace) -> int:
    doc = load(args)
    nodes = [n for n in rows(doc, "nodes") if (not args.state or n["state"] == args.state)
             and (not args.type or n["type"] == args.type)]
    by_state: dict[str, int] = {}
    for n in nodes:
        by_state[n["state"]] = by_state.get(n["state"], 0) + 1
    busy = [n for n in nodes if n["jobs"]]
    div = sum(n["diversity"] for n in busy) / len(busy) if busy else None
    summary = {"nodes": len(nodes), "by_state": by_state, "slots": sum(n["slots"] for n in nodes),
               "used_slots": sum(n["used"] for n in nodes), "diversity": round(div, 4) if div is not None else None}
    if args.json:
        dump_json({"summary": summary, "nodes": nodes})
        return 0
    colour = {"free": "green", "down": "red", "offline": "red", "busy": "yellow"}
    table(["NODE", "STATE", "TYPE", "USED", "JOBS", "USERS", "DIV", "CLASS", "VOS"],
          [[n["name"], n["state"], n["type"] or "-", f"{n['used']}/{n['slots']}", n["jobs"], n["users"],
            f"{n['diversity']:.2f}" if n["diversity"] is not None else "-", n["class"] or "-",
            ",".join(f"{k}:{v}" for k, v in sorted(n["vos"].items()))] for n in nodes],
          noheader=args.noheader, colours=[colour.get(n["state"]) for n in nodes], right=(4, 5, 6))
    if not args.noheader:
        print(f"\n{summary['nodes']} nodes (" + ", ".join(f"{v} {k}" for k, v in sorted(by_state.items()))
              + f"); slots used {summary['used_slots']} of {summary['slots']}; mean diversity "
              + (f"{div:.3f}" if div is not None else "-"))
    return 0


# -- shares -----------------------------------------------------------------------------------

@command("shares", "per-VO shares, guarantees, usage and priority (sshare, diagnose -f)")
def fill_shares(p: argparse.ArgumentParser) -> None:
    """Per VO: configured share, guarantee in slots, running slots and jobs, queued jobs, decayed
    wall-clock usage over the history window, current priority, and whether it is below its
    guarantee. --groups and --users break running/queued jobs and usage down further."""
    _common(p, json_keys="window_s, vos{VO:{share,guarantee,running_slots,running_jobs,queued_jobs,usage_h,"
            "priority,below_guarantee}}, groups{...}, users{...}")
    p.add_argument("--groups", action="store_true", help="also per group")
    p.add_argument("--users", action="store_true", help="also per user")
    p.set_defaults(run=run_shares)


def run_shares(args: argparse.Namespace) -> int:
    doc = load(args)
    vos = {name: {"share": v["share"], "guarantee": v["guarantee"], "running_slots": v["running_slots"],
                  "running_jobs": v["running_jobs"], "queued_jobs": v["queued_jobs"],
                  "usage_h": round(v["usage_s"] / 3600.0, 2), "priority": v["priority"],
                  "below_guarantee": v["below_guarantee"]} for name, v in sorted(doc["vos"].items())}
    detail: dict[str, dict[str, dict[str, Any]]] = {"groups": {}, "users": {}}
    if args.groups or args.users:
        for j in rows(doc, "jobs"):
            for kind, key in (("groups", j["group"]), ("users", j["user"])):
                d = detail[kind].setdefault(key, {"vo": j["vo"], "running_jobs": 0, "running_slots": 0,
                                                  "queued_jobs": 0})
                if j["state"] in RUNNING:
                    d["running_jobs"] += 1
                    d["running_slots"] += j["cores"]
                else:
                    d["queued_jobs"] += 1
        for kind, ukey in (("groups", "group"), ("users", "user")):
            for key, d in detail[kind].items():
                d["usage_h"] = round(doc.get("usage", {}).get(ukey, {}).get(key, 0.0) / 3600.0, 2)
    if args.json:
        out = {"window_s": doc.get("usage", {}).get("window_s"), "vos": vos}
        if args.groups:
            out["groups"] = detail["groups"]
        if args.users:
            out["users"] = detail["users"]
        dump_json(out)
        return 0
    table(["VO", "SHARE", "GUARANTEE", "RUNNING", "JOBS", "QUEUED", "USAGE(h)", "PRIORITY", "BELOW"],
          [[k, f"{v['share']:.1%}", v["guarantee"], v["running_slots"], v["running_jobs"], v["queued_jobs"],
            f"{v['usage_h']:.1f}", f"{v['priority']:.3f}", "yes" if v["below_guarantee"] else "no"]
           for k, v in vos.items()],
          noheader=args.noheader, colours=["yellow" if v["below_guarantee"] and v["queued_jobs"] else None
                                           for v in vos.values()], right=(1, 2, 3, 4, 5, 6, 7))
    for kind, on in (("groups", args.groups), ("users", args.users)):
        if on:
            print()
            items = sorted(detail[kind].items(), key=lambda kv: (kv[1]["vo"], kv[0]))
            table([kind[:-1].upper(), "VO", "RUNNING", "JOBS", "QUEUED", "USAGE(h)"],
                  [[k, d["vo"], d["running_slots"], d["running_jobs"], d["queued_jobs"], f"{d['usage_h']:.1f}"]
                   for k, d in items], noheader=args.noheader, right=(2, 3, 4, 5))
    return 0


# -- usage ------------------------------------------------------------------------------------

@command("usage", "wall-clock and CPU hours from the history store (accounting summary)")
def fill_usage(p: argparse.ArgumentParser) -> None:
    """Accounting summary from the history store: jobs, wall-clock core-hours (clipped to the
    interval) and CPU hours, per VO, group, user or queue."""
    p.add_argument("-c", "--config", metavar="FILE", help="configuration (history.database, group -> VO)")
    p.add_argument("--db", metavar="URL", help="history database URL (default: history.database)")
    p.add_argument("--since", type=date_arg, metavar="DATE", help="from DATE (YYYY-MM-DD[THH:MM], UTC)")
    p.add_argument("--until", type=date_arg, metavar="DATE", help="until DATE")
    p.add_argument("--by", choices=("vo", "group", "user", "queue"), default="vo")
    p.add_argument("--json", action="store_true", help="JSON: since, until, by, rows[{key,jobs,wall_hours,"
                   "cpu_hours}], total{jobs,wall_hours,cpu_hours}")
    p.add_argument("--noheader", action="store_true")
    p.set_defaults(run=run_usage)


def run_usage(args: argparse.Namespace) -> int:
    from mysched.history.store import Store
    from mysched.cli.common import config_or_default

    cfg = config_or_default(args.config)
    url = args.db or cfg.database
    if url.startswith("sqlite:///"):
        path = url[len("sqlite:///"):]
        if not os.path.exists(path):
            raise StatusError(f"{path}: no history database (the daemon creates it; or give --db URL)")
        if not os.access(path, os.R_OK):
            raise StatusError(f"{path}: permission denied (ask your admin for read access, or use "
                              "'mysched shares' which needs none)")
    if args.since is not None and args.until is not None and args.until <= args.since:
        raise UsageError("--until must be later than --since")
    store = Store(url, create=False)
    out = store.usage_summary(args.since, args.until, by=args.by, vo_of=cfg.vo_of)
    total = {"jobs": sum(r["jobs"] for r in out), "wall_hours": round(sum(r["wall_hours"] for r in out), 3),
             "cpu_hours": round(sum(r["cpu_hours"] for r in out), 3)}
    if args.json:
        dump_json({"since": args.since, "until": args.until, "by": args.by,
                   "rows": [{**r, "wall_hours": round(r["wall_hours"], 3), "cpu_hours": round(r["cpu_hours"], 3)}
                            for r in out], "total": total})
        return 0
    table([args.by.upper(), "JOBS", "WALL(h)", "CPU(h)", "EFFICIENCY"],
          [[r["key"], r["jobs"], f"{r['wall_hours']:.1f}", f"{r['cpu_hours']:.1f}",
            f"{r['cpu_hours'] / r['wall_hours']:.0%}" if r["wall_hours"] else "-"] for r in out],
          noheader=args.noheader, right=(1, 2, 3, 4))
    if not args.noheader:
        print(f"\ntotal: {total['jobs']} jobs, {total['wall_hours']:.1f} wall-clock core-hours, "
              f"{total['cpu_hours']:.1f} CPU hours")
    return 0


# -- when -------------------------------------------------------------------------------------

@command("when", "when a waiting job is expected to start (showstart, spwhen)")
def fill_when(p: argparse.ArgumentParser) -> None:
    """Estimate when a waiting job starts, from running jobs' requested walltimes and the jobs
    ahead of it in the last cycle's order; says plainly when no estimate is possible."""
    _common(p, json_keys="job, start (Unix time or null), in_s, exact, why, ahead", table_=False)
    p.add_argument("job_id", metavar="JOBID")
    p.set_defaults(run=run_when)


def run_when(args: argparse.Namespace) -> int:
    doc = load(args)
    j = _find(doc, args.job_id)
    est = estimate_start(doc, j["id"])
    now = doc["snapshot_time"]
    if args.json:
        dump_json({"job": j["id"], "start": est.start, "in_s": None if est.start is None else est.start - now,
                   "exact": est.exact, "why": est.why, "ahead": est.ahead})
        return 0
    if est.start is None:
        print(f"job {j['id']}: no start estimate — {est.why}")
    elif j["state"] in RUNNING:
        print(f"job {j['id']}: already running")
    else:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(est.start))
        print(f"job {j['id']}: expected to start in {duration(est.start - now)} (about {when}), "
              f"{est.ahead} job(s) ahead; {est.why}")
    return 0


# -- free -------------------------------------------------------------------------------------

@command("free", "free slots now per node type and queue, and who may use them (showbf, spwhat)")
def fill_free(p: argparse.ArgumentParser) -> None:
    """What could start right now: free slots per node type and queue (the largest per node, for
    multi-core jobs), and which VOs and groups may use them."""
    _common(p, json_keys="total_free, rows[{type,queue,free_slots,nodes,max_per_node,vos,groups}]")
    p.set_defaults(run=run_free)


def run_free(args: argparse.Namespace) -> int:
    doc = load(args)
    nodes = [n for n in rows(doc, "nodes") if n["state"] in ("free", "partial")]
    queues = sorted(set(doc.get("queues", {})) | set(doc.get("queue_config", {}))) or ["(any)"]
    types = doc.get("node_types", {})
    out = []
    for q in queues:
        by_type: dict[str, list[dict[str, Any]]] = {}
        for n in nodes:
            if q != "(any)" and not node_admits(doc, n, q, "\0", "\0") and not _typed_admits(doc, n, q):
                continue
            by_type.setdefault(n["type"] or "-", []).append(n)
        for t, ns in sorted(by_type.items()):
            free = [n["slots"] - n["used"] for n in ns]
            tt = types.get(t, {})
            out.append({"type": t, "queue": q, "free_slots": sum(free), "nodes": len(ns), "max_per_node": max(free),
                        "vos": tt.get("vos") or (["all"] if not tt.get("groups") else []),
                        "groups": tt.get("groups") or (["all"] if not tt.get("vos") else [])})
    total = sum(n["slots"] - n["used"] for n in nodes)
    if args.json:
        dump_json({"total_free": total, "rows": out})
        return 0
    table(["TYPE", "QUEUE", "FREE", "NODES", "MAX/NODE", "VOS", "GROUPS"],
          [[r["type"], r["queue"], r["free_slots"], r["nodes"], r["max_per_node"], ",".join(r["vos"]) or "-",
            ",".join(r["groups"]) or "-"] for r in out], noheader=args.noheader, right=(2, 3, 4))
    if not args.noheader:
        print(f"\n{total} slot(s) free on {len(nodes)} node(s)")
    return 0


def _typed_admits(doc: dict[str, Any], node: dict[str, Any], queue: str) -> bool:
    """True if the queue may use the node for some group its type allows."""
    t = doc.get("node_types", {}).get(node["type"] or "", {})
    return any(node_admits(doc, node, queue, v, "\0") for v in t.get("vos", [])) or any(
        node_admits(doc, node, queue, "\0", g) for g in t.get("groups", []))

