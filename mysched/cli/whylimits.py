"""The limits `mysched why` shows for one job: its VO's, its group's, its queue's and its
user's, each with what runs against it -- running jobs against max_running, running cores
against max_cores (MAUI's MAXJOB and MAXPROC) -- as the status file publishes them.

A status file of the same format from a daemon that did not publish max_cores or the users
limits yet has none of those keys: the limits are then unknown (null) and not shown."""

from __future__ import annotations

from typing import Any

from mysched.cli.statusdoc import RUNNING
from mysched.core.settings import Config, UserLimits
from mysched.daemon.statusfile import rows


def limits(doc: dict[str, Any], j: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """`why`'s `limits` of job row `j`: vo, group, queue and user."""
    vo = doc["vos"].get(j["vo"], {})
    lim = doc.get("limits") or {}
    glimits = (lim.get("groups") or {}).get(j["group"]) or {}
    qlimits = (doc.get("queue_config") or {}).get(j["queue"]) or {}
    users = {k: UserLimits((v or {}).get("max_running"), (v or {}).get("max_cores"))
             for k, v in (lim.get("users") or {}).items()}
    ukey, ulimits = Config(users=users).user_limits(j["user"]) or (None, UserLimits())  # the planner's rule
    jobs = dict.fromkeys(("group", "queue", "user"), 0)  # running jobs of the job's group, queue and user
    cores = dict.fromkeys(jobs, 0)  # and their cores
    for x in rows(doc, "jobs"):
        if x["state"] in RUNNING:
            for k in jobs:
                if x[k] == j[k]:
                    jobs[k] += 1
                    cores[k] += x["cores"]
    return {
        "vo": {"name": j["vo"], "running_jobs": vo.get("running_jobs"), "max_running": vo.get("max_running"),
               "max_per_node": vo.get("max_per_node"), "running_slots": vo.get("running_slots"),
               "max_cores": vo.get("max_cores"), "guarantee": vo.get("guarantee"),
               "below_guarantee": vo.get("below_guarantee")},
        "group": {"name": j["group"], "running_jobs": jobs["group"], "running_cores": cores["group"],
                  "max_running": glimits.get("max_running"), "max_cores": glimits.get("max_cores"),
                  "max_per_node": glimits.get("max_per_node")},
        "queue": {"name": j["queue"], "running_jobs": jobs["queue"], "running_cores": cores["queue"],
                  "max_running": qlimits.get("max_running"), "max_cores": qlimits.get("max_cores")},
        # key: the block that sets the user's limits (users.NAME, else users.default; null: none)
        "user": {"name": j["user"], "key": ukey, "running_jobs": jobs["user"], "running_cores": cores["user"],
                 "max_running": ulimits.max_running, "max_cores": ulimits.max_cores},
    }


def lines(lim: dict[str, dict[str, Any]]) -> list[str]:
    """One line per limited thing: the VO always, the others when some limit is set."""
    v, g, q, u = lim["vo"], lim["group"], lim["queue"], lim["user"]
    out = [f"VO {v['name']}: {v['running_slots']} slots running" + _of("max_cores", v.get("max_cores"))
           + f", guarantee {v['guarantee']} ({'below' if v['below_guarantee'] else 'at or above'}), "
           f"{v['running_jobs']} jobs" + _of("max", v["max_running"]) + _per_node(v)]
    if any(g.get(k) is not None for k in ("max_running", "max_cores", "max_per_node")):
        out.append(f"group {g['name']}: {g['running_jobs']} jobs" + _of("max", g["max_running"])
                   + (f", {g['running_cores']} cores of max_cores {g['max_cores']}" if g.get("max_cores") is not None
                      else "") + _per_node(g))
    if q.get("max_running") is not None or q.get("max_cores") is not None:
        out.append(f"queue {q['name']}: {q['running_jobs']} jobs on {q['running_cores']} core(s); "
                   + _caps(f"queues.{q['name']}", q))
    if u.get("max_running") is not None or u.get("max_cores") is not None:
        out.append(f"user {u['name']} runs {u['running_jobs']} job(s) on {u['running_cores']} core(s); "
                   + _caps(u["key"], u))
    return out


def _of(word: str, cap: int | None) -> str:
    return f" of {word} {cap}" if cap is not None else ""


def _per_node(x: dict[str, Any]) -> str:
    return f", at most {x['max_per_node']} per node" if x.get("max_per_node") is not None else ""


def _caps(key: str, x: dict[str, Any]) -> str:
    """'users.default max_running 2 / max_cores 8', naming only what is set."""
    return f"{key} " + " / ".join(f"{k} {x[k]}" for k in ("max_running", "max_cores") if x.get(k) is not None)
