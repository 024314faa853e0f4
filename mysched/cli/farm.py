"""`mysched nodes`, `shares` and `free`: the farm, the VOs' shares, and what could start now."""

from __future__ import annotations

import argparse
from typing import Any

from mysched.cli.common import non_empty
from mysched.cli.main import command
from mysched.cli import farmslots, nodeextras, nodejobs, statusdoc
from mysched.cli.statusdoc import RUNNING, load, options
from mysched.cli.textout import dump_json, table
from mysched.core.model.batch import Job
from mysched.core.place.admission import Ask, IdleAdmission
from mysched.core.place.nodeindex import NodeEntry
from mysched.core.rules.access import node_key, node_type, queue_admits, refusal
from mysched.core.model.batch import NodeState
from mysched.core.model.reasons import BLOCKING, Reason
from mysched.daemon.statusfile import hosts, rows


# -- nodes ------------------------------------------------------------------------------------

@command("nodes", "per-node slots, VOs, users and diversity")
def fill_nodes(p: argparse.ArgumentParser) -> None:
    """Per node: state, type, slots used/total, jobs per VO, distinct users, diversity (distinct
    users / jobs), the packing class holding it and the admin's note (pbsnodes -N, last: it may
    hold spaces); then a farm summary."""
    options(p, json_keys="summary{node_count,by_state,slots,used_slots,closed_slots,diversity} (slots: of the nodes not "
            "down or offline, plus those jobs use on the others, as 'jobs' counts the farm; closed_slots: the "
            "others' idle slots), nodes[{name,state,type,slots,used,"
            "jobs,vos,users,diversity,class,properties,note}], drains{NODE: {since,ready}}, "
            "reservations{JOBID: {start,nodes}}, downtimes{NODE: {name,start,end,begin}}, downtime_clashes[{name,start,"
            "end,begin,state,nodes,jobs[{id,nodes,end}]}] (nodes: host names; running jobs expected to run past a window's start, or still "
            "running in it); with --state or --type only those of the listed nodes; with NODE names, "
            "jobs_on{NODE: [{id,user,vo,cores,job_cores,start,end}]}")
    p.add_argument("names", nargs="*", metavar="NODE",
                   help="only these nodes, each with the jobs running there and when they end by their requested "
                        "walltime (checknode)")
    p.add_argument("--state", choices=statusdoc.NODE_STATES, help="only nodes in this state")
    p.add_argument("--type", type=non_empty, help="only nodes of this node type")
    p.set_defaults(run=run_nodes)


def run_nodes(args: argparse.Namespace) -> int:
    doc = load(args)
    every = rows(doc, "nodes")
    named = nodejobs.pick(every, args.names) if args.names else every
    nodes = [n for n in named if (not args.state or n["state"] == args.state) and (not args.type or n["type"] == args.type)]
    picked = [f"--{k} {v}" for k, v in (("state", args.state), ("type", args.type)) if v] + list(args.names)
    ex = nodeextras.extras(doc, {n["name"] for n in nodes} if picked else None)
    by_state: dict[str, int] = {}
    for n in nodes:
        by_state[n["state"]] = by_state.get(n["state"], 0) + 1
    busy = [n for n in nodes if n["jobs"] and n["diversity"] is not None]
    div = sum(n["diversity"] for n in busy) / len(busy) if busy else None
    summary = {"node_count": len(nodes), "by_state": by_state, "slots": sum(map(farmslots.counted, nodes)),
               "used_slots": sum(n["used"] for n in nodes), "closed_slots": farmslots.closed(nodes),
               "diversity": round(div, 4) if div is not None else None}
    on = nodejobs.jobs_on(doc, {n["name"] for n in nodes}) if args.names else None
    if args.json:
        clashes = [{**c, "jobs": [{**j, "nodes": hosts(j["nodes"])} for j in c["jobs"]]} for c in ex["downtime_clashes"]]
        dump_json({"summary": summary, "nodes": nodes, "drains": ex["drains"], "reservations": ex["reservations"],
                   "downtimes": ex["downtimes"], "downtime_clashes": clashes}
                  | ({"jobs_on": on} if on is not None else {}))
        return 0
    colour = {"free": "green", "down": "red", "offline": "red", "busy": "yellow"}
    # Every cell filled ("-"), so --noheader splits on blanks up to the note, which takes the rest.
    table(["NODE", "STATE", "TYPE", "USED", "JOBS", "USERS", "DIV", "CLASS", "VOS", "NOTE"],
          [[n["name"], n["state"], n["type"] or "-", f"{n['used']}/{n['slots']}", n["jobs"], n["users"],
            f"{n['diversity']:.2f}" if n["diversity"] is not None else "-", n["class"] or "-",
            ",".join(f"{k}:{v}" for k, v in sorted(n["vos"].items())) or "-", n["note"] or "-"] for n in nodes],
          noheader=args.noheader, colours=[colour.get(n["state"]) for n in nodes], right=(4, 5, 6))
    if not args.noheader:
        if nodes:
            print(f"\n{summary['node_count']} nodes (" + ", ".join(f"{v} {k}" for k, v in sorted(by_state.items()))
                  + f"); {farmslots.slots_text(summary['used_slots'], summary['slots'], summary['closed_slots'])}; "
                  + "mean diversity " + (f"{div:.3f}" if div is not None else "-"))
        else:  # "0 nodes (); slots used 0 of 0"
            kinds = sorted({n["type"] or "-" for n in every}) if args.type else sorted({n["state"] for n in every})
            print(f"no node matches {' '.join(picked)} (the farm's {len(every)} nodes are of "
                  + (f"node type(s) {', '.join(kinds)})" if args.type else f"state(s) {', '.join(kinds)})"))
        for line in nodeextras.lines(doc, ex):
            print(line)
    if on is not None:
        nodejobs.print_jobs(doc, nodes, on, args.noheader)
    if not args.noheader:
        for note in statusdoc.notes(doc):
            print(note)
    return 0


# -- shares -----------------------------------------------------------------------------------

@command("shares", "per-VO shares, guarantees, usage and priority (sshare, diagnose -f)")
def fill_shares(p: argparse.ArgumentParser) -> None:
    """Per VO: configured share, guarantee in slots, running slots and jobs, queued jobs, decayed
    wall-clock usage over the history window, current priority, and whether it is below its
    guarantee; LIMIT: its vos.NAME.max_running (j, jobs) and max_cores (c, cores), '-' for none. --groups and --users break running/queued jobs and usage down further."""
    options(p, json_keys="window_s, vos{VO:{share,guarantee,running_slots,running_jobs,queued_jobs,eligible_jobs,"
            "blocked_jobs,usage_h,priority,below_guarantee,throttled,max_running,max_cores}}, "
            "groups{GROUP:{vo,share,running_jobs,running_slots,queued_jobs,eligible_jobs,blocked_jobs,usage_h}}, "
            "users{USER:{vo,running_jobs,running_slots,queued_jobs,eligible_jobs,blocked_jobs,usage_h}}; "
            "queued_jobs: every waiting job (eligible_jobs + blocked_jobs), eligible_jobs: the QUEUED column "
            "(a free slot would start them), blocked_jobs: the BLOCKED column")
    p.add_argument("--groups", action="store_true", help="also per group")
    p.add_argument("--users", action="store_true", help="also per user")
    p.set_defaults(run=run_shares)


def run_shares(args: argparse.Namespace) -> int:
    doc = load(args)
    # Waiting jobs: eligible (a free slot would start them: QUEUED) or blocked (held, at a limit,
    # never fitting: BLOCKED), counted alike for VOs, groups and users; queued_jobs, all of them.
    eligible: dict[str, int] = {}
    blocked: dict[str, int] = {}
    for j in rows(doc, "jobs"):
        if j["state"] not in RUNNING:
            into = blocked if j["reason"] in BLOCKING else eligible
            into[j["vo"]] = into.get(j["vo"], 0) + 1
    vos = {name: {"share": v["share"], "guarantee": v["guarantee"], "running_slots": v["running_slots"],
                  "running_jobs": v["running_jobs"], "queued_jobs": v["queued_jobs"],
                  "eligible_jobs": eligible.get(name, 0), "blocked_jobs": blocked.get(name, 0),
                  "usage_h": round(v["usage_s"] / 3600.0, 2), "priority": v["priority"],
                  "below_guarantee": v["below_guarantee"], "throttled": v.get("throttled") or [],
                  "max_running": v.get("max_running"), "max_cores": v.get("max_cores")}
           for name, v in sorted(doc["vos"].items())}
    detail: dict[str, dict[str, dict[str, Any]]] = {"groups": {}, "users": {}}
    if args.groups or args.users:
        for j in rows(doc, "jobs"):
            for kind, key in (("groups", j["group"]), ("users", j["user"])):
                d = detail[kind].setdefault(key, {"vo": j["vo"], "running_jobs": 0, "running_slots": 0,
                                                  "queued_jobs": 0, "eligible_jobs": 0, "blocked_jobs": 0})
                if j["state"] in RUNNING:
                    d["running_jobs"] += 1
                    d["running_slots"] += j["cores"]
                else:
                    d["queued_jobs"] += 1
                    d["blocked_jobs" if j["reason"] in BLOCKING else "eligible_jobs"] += 1
        for kind, ukey in (("groups", "group"), ("users", "user")):
            for key, d in detail[kind].items():
                d["usage_h"] = round(doc.get("usage", {}).get(ukey, {}).get(key, 0.0) / 3600.0, 2)
        weights = {g: (v or {}).get("share", 1.0) for g, v in ((doc.get("limits") or {}).get("groups") or {}).items()}
        for g, d in detail["groups"].items():
            d["share"] = weights.get(g, 1.0)  # a weight among its VO's groups
    if args.json:
        out = {"window_s": doc.get("usage", {}).get("window_s"), "vos": vos}
        if args.groups:
            out["groups"] = detail["groups"]
        if args.users:
            out["users"] = detail["users"]
        dump_json(out)
        return 0
    # QUEUED: jobs a free slot would start; BLOCKED the rest of the queued (a VO below its
    # guarantee with only a held or never-fitting job waiting is not short of slots)
    table(["VO", "SHARE", "GUARANTEE", "RUNNING", "JOBS", "LIMIT", "QUEUED", "BLOCKED", "USAGE(h)", "PRIORITY",
           "BELOW", "THROTTLE"],
          [[k, f"{v['share']:.1%}", v["guarantee"], v["running_slots"], v["running_jobs"], _limit(v),
            v["eligible_jobs"], v["blocked_jobs"], f"{v['usage_h']:.1f}", f"{v['priority']:.3f}",
            "yes" if v["below_guarantee"] else "no", ",".join(v["throttled"]) or "-"]
           for k, v in vos.items()],
          noheader=args.noheader, colours=["red" if v["throttled"] else
                                           "yellow" if v["below_guarantee"] and v["eligible_jobs"]
                                           else None for v in vos.values()], right=(1, 2, 3, 4, 5, 6, 7, 8, 9))
    if not args.noheader:
        for t in doc.get("throttles") or ():
            if t["level"] != "open":
                print(f"throttled by load rule {t['rule']}: {t['detail']}")
    for kind, on in (("groups", args.groups), ("users", args.users)):
        if on:
            print()
            items = sorted(detail[kind].items(), key=lambda kv: (kv[1]["vo"], kv[0]))
            share = kind == "groups"  # a group's weight among its VO's groups (groups.NAME.share)
            head = [kind[:-1].upper(), "VO"] + (["SHARE"] if share else []) + ["RUNNING", "JOBS", "QUEUED", "BLOCKED",
                                                                               "USAGE(h)"]
            table(head,
                  [[k, d["vo"]] + ([f"{d['share']:g}"] if share else [])
                   + [d["running_slots"], d["running_jobs"], d["eligible_jobs"], d["blocked_jobs"], f"{d['usage_h']:.1f}"]
                   for k, d in items], noheader=args.noheader, right=tuple(range(2, len(head))))
    return 0


def _limit(v: dict[str, Any]) -> str:
    """A VO's caps as the LIMIT column shows them: '4000j' (max_running), '96c' (max_cores),
    both as '4000j/96c', '-' for none."""
    parts = [f"{v[k]}{u}" for k, u in (("max_running", "j"), ("max_cores", "c")) if v.get(k) is not None]
    return "/".join(parts) or "-"


# -- free -------------------------------------------------------------------------------------

@command("free", "free slots now per node type and queue, and who may use them (showbf, spwhat)")
def fill_free(p: argparse.ArgumentParser) -> None:
    """What could start right now: free slots per node type and queue (the largest per node, for
    multi-core jobs), and which VOs and groups may use them. Idle slots on nodes that are
    draining, reserved or held by a guarantee pool are not free to all: they are counted apart."""
    options(p, json_keys="total_free, rows[{type,queue,free_slots,nodes (host names),max_per_node,vos,groups}], "
            "held{draining,reserved,pool_held,downtime} (idle slots kept apart; 0 where none)")
    p.set_defaults(run=run_free)


def run_free(args: argparse.Namespace) -> int:
    doc = load(args)
    cfg = statusdoc.rules(doc)
    used = {n["name"]: n["used"] for n in rows(doc, "nodes")}
    every = statusdoc.nodes(doc)
    keys = {n.name: node_key(cfg, n.name, node_type(cfg, n.name, n.properties)) for n in every}
    # The planner's checks, asked of each node as it is now: up (not down or offline), with a free
    # core (pbs_server's job-exclusive has none), then open to the queue of each row.
    entries = {n.name: NodeEntry(n, keys[n.name].ntype, keys[n.name], n.state.usable, True) for n in every}
    checks = IdleAdmission(entries, lambda key, queue: refusal(cfg, key, queue),
                           free={n.name: n.slots - used[n.name] if n.state is NodeState.FREE else 0 for n in every})
    anyone = Ask(Job("free", "", "", ""), "", None, 1, set(keys.values()))
    nodes = [n for n in every if checks.first(n.name, anyone) is None]
    # Free cores the planner keeps for someone: not free to all (counted apart, by what keeps them).
    kept: dict[str, Reason] = {h: Reason.POOL_HELD for p in (doc.get("pools") or {}).values()
                               for h in p["held_hosts"]}
    kept.update((h, Reason.RESERVED) for r in (doc.get("reservations") or {}).values() for h in r["nodes"])
    kept.update((h, Reason.DRAINING) for h in doc.get("drains") or {})
    now = doc.get("snapshot_time", 0.0)
    # in a window, or reserved past one: what may start there ends before the window, not the reservation
    kept.update((h, Reason.DOWNTIME) for h, w in (doc.get("downtimes") or {}).items()
                if w.get("begin", w["start"]) <= now or kept.get(h) == Reason.RESERVED)
    held: dict[Reason, int] = dict.fromkeys(_HELD, 0)  # stable keys for scripts
    for n in nodes:
        if n.name in kept:
            held[kept[n.name]] = held.get(kept[n.name], 0) + n.slots - used[n.name]
    nodes = [n for n in nodes if n.name not in kept]
    queues: list[str | None] = sorted(set(doc.get("queues", {})) | set(cfg.queues)) or [None]
    types = {t.name: t for t in cfg.node_types}
    out = []
    for q in queues:
        ask = anyone._replace(job=Job("free", q or "", "", ""),
                              groups={k for k in set(keys.values()) if q is None or queue_admits(cfg, k, q)})
        by_type: dict[str | None, dict[str, int]] = {}
        for n in nodes:
            if checks.first(n.name, ask) is None:
                by_type.setdefault(keys[n.name].ntype, {})[n.name] = n.slots - used[n.name]
        for t, on in sorted(by_type.items(), key=lambda kv: kv[0] or ""):
            free = list(on.values())
            nt = types.get(t) if t is not None else None
            open_ = nt is None or not (nt.vos or nt.groups)
            # vos/groups: null when anyone may use the nodes, else who may
            out.append({"type": t, "queue": q, "free_slots": sum(free), "nodes": list(on), "max_per_node": max(free),
                        "vos": None if open_ else list(nt.vos), "groups": None if open_ else list(nt.groups)})
    total = sum(n.slots - used[n.name] for n in nodes)
    if args.json:
        dump_json({"total_free": total, "rows": out, "held": held})
        return 0

    def who(r: dict[str, Any], k: str) -> str:
        return "all" if r[k] is None else ",".join(r[k]) or "-"
    table(["TYPE", "QUEUE", "FREE", "NODES", "MAX/NODE", "VOS", "GROUPS"],
          [[r["type"] or "-", r["queue"] or "(any)", r["free_slots"], len(r["nodes"]), r["max_per_node"], who(r, "vos"),
            who(r, "groups")] for r in out], noheader=args.noheader, right=(2, 3, 4))
    if not args.noheader:
        print(f"\n{total} slot(s) free on {len(nodes)} node(s)")
        for what, n in sorted(held.items()):
            if n:
                print(f"{n} more idle on {what} nodes: {_HELD[what]}")
    return 0


_HELD = {Reason.DRAINING: "for multi-core jobs, and shorter jobs that end before the node empties",
         Reason.RESERVED: "for a reserved job, and jobs that end before its reservation starts",
         Reason.POOL_HELD: "for a guarantee pool's owners (mysched pools)",
         Reason.DOWNTIME: "in a scheduled downtime, or reserved past one: only jobs that end before it begins "
                          "start there (mysched nodes)"}
