"""What `mysched nodes` says below its table about the nodes it lists: node load, drains,
reservations, scheduled downtimes and the running jobs that run into them -- only for the
listed nodes when --state or --type picks some, with a count of what it left out."""

from __future__ import annotations

from typing import Any

from mysched.cli import statusdoc
from mysched.daemon import downtimeclash


def extras(doc: dict[str, Any], listed: set[str] | None) -> dict[str, Any]:
    """The facts of the `listed` nodes (None: every node): node_load, drains, reservations (those
    with a listed node), downtimes, downtime_clashes; `left_out`: how many of each kind were for
    other nodes."""
    loaded = doc.get("node_load") or {}
    drains = doc.get("drains") or {}
    reservations = doc.get("reservations") or {}
    downtimes = doc.get("downtimes") or {}
    out = {"node_load": loaded, "drains": drains, "reservations": reservations, "downtimes": downtimes}
    if listed is not None:
        out = {"node_load": {n: v for n, v in loaded.items() if n in listed},
               "drains": {n: v for n, v in drains.items() if n in listed},
               "reservations": {j: r for j, r in reservations.items() if not listed.isdisjoint(r["nodes"])},
               "downtimes": {n: v for n, v in downtimes.items() if n in listed}}
    out["left_out"] = {"node_load": len(loaded) - len(out["node_load"]), "draining": len(drains) - len(out["drains"]),
                       "reservations": len(reservations) - len(out["reservations"]),
                       "downtime": len(downtimes) - len(out["downtimes"])}
    out["downtime_clashes"] = downtimeclash.clashes(doc, only=listed)
    return out


_LEFT = {"node_load": "node(s) skipped for their load", "draining": "draining node(s)",
         "reservations": "reservation(s)", "downtime": "node(s) under a scheduled downtime"}


def lines(doc: dict[str, Any], ex: dict[str, Any]) -> list[str]:
    """The lines below the table, one a node, reservation or window."""
    out = [f"{name}: no new jobs (node_load): {why}" for name, why in sorted(ex["node_load"].items())]
    # one line a node, as node_load: dozens of drains made one line of thousands of columns
    for n, d in sorted(ex["drains"].items()):
        cores = f"{d['want']}-core" if d.get("want") else "multi-core"
        out.append(f"{n}: draining for {cores} jobs (since {statusdoc.clock(doc, d['since'])}"
                   + (f", ready since {statusdoc.clock(doc, d['ready'])})" if d["ready"] is not None else ")"))
    for jid, r in sorted(ex["reservations"].items()):
        out.append(f"reserved for {jid}: {'+'.join(r['nodes'])} from {statusdoc.clock(doc, r['start'])}")
    # each window's clash under it (a window further ahead on the same nodes: at the end)
    clash = {(c["name"], c["start"], c["end"]): downtimeclash.text(c, doc.get("snapshot_time", 0.0), lambda t: statusdoc.clock(doc, t))
             for c in ex["downtime_clashes"]}
    for key, line in downtime_lines(doc, ex["downtimes"]):
        out.append(line)
        if key in clash:
            out.append("  " + clash.pop(key))
    out += clash.values()
    left = [f"{n} {_LEFT[k]}" for k, n in ex["left_out"].items() if n]
    if left:
        out.append("not shown, on nodes not listed: " + ", ".join(left))
    return out


def downtime_lines(doc: dict[str, Any], downtimes: dict[str, dict[str, Any]]) -> list[tuple[tuple, str]]:
    """One line per scheduled downtime, with its (name, start, end): when, in force or ahead,
    on which nodes (the first 10)."""
    by: dict[tuple, list[str]] = {}
    for n, w in downtimes.items():
        by.setdefault((w["start"], w["end"], w["name"], w.get("begin", w["start"])), []).append(n)
    out = []
    now = doc.get("snapshot_time", 0.0)
    for (start, end, name, begin), names in sorted(by.items()):
        names.sort()
        shown = ", ".join(names[:10]) + (f" and {len(names) - 10} more" if len(names) > 10 else "")
        state = "in force: no new jobs" if begin <= now else \
            f"ahead: only jobs that end by {statusdoc.clock(doc, begin)}"
        out.append(((name, start, end), f"downtime {name} from {statusdoc.clock(doc, start)} to "
                    f"{statusdoc.clock(doc, end)}, {state}, on {len(names)} node(s): {shown}"))
    return out
