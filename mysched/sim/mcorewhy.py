"""Why multi-core jobs waited much longer than single-core ones in a replay, and the setting
that would change it.

A report that only shows "2-8 cores wait mean 7h" leaves the admin to guess between a
partition that is off, one at its cap, drains held back by their rate, nodes too small for
the jobs, or walltimes the planner cannot believe -- and each has a different setting. The
cause is picked from what the replay counted (`mysched.sim.result.McoreWatch`) and the
configuration, in this order: nodes too small (no drain makes room a node does not have),
the partition off (for a baseline policy, also when only the mysched policy's automatic one
is on), at its cap (`drain.max_draining`, else half the nodes) for most of the time it held
nodes, its new drains held back by the rate for most of it, most multi-core (or all) jobs
without a believed walltime, and else draining nodes that took long to get room.
"""

from __future__ import annotations

import statistics

from mysched.core.hold.drains import partition_on
from mysched.core.settings import Config
from mysched.sim.report import hms
from mysched.sim.result import McoreWatch, SimResult, multicore_wait

FACTOR = 2.0
"""Multi-core jobs waited this many times as long as single-core ones, on average ..."""
GAP_S = 600.0
"""... and this many seconds longer: a gap an admin would want explained."""
MOST = 0.5
"""A fact holds for "most" jobs or "most of the time" above this fraction."""


def diagnose(r: SimResult, config: Config, watch: McoreWatch) -> dict[str, str | None] | None:
    """{cause, setting, text} when multi-core jobs waited much longer than single-core ones
    in the run `r` (its policy, under `config`); None when they did not, or either is missing."""
    sizes = r.size_figures()
    mc = multicore_wait({"by_size": sizes})
    one = sizes.get("1", {})
    if mc is None or not one.get("jobs"):
        return None
    single = one["wait_mean"]
    if not (mc > FACTOR * single and mc - single > GAP_S):
        return None
    cause, setting, why = _cause(r, config, watch)
    return {"cause": cause, "setting": setting,
            "text": f"multi-core jobs waited {hms(mc)} on average, single-core ones {hms(single)}: {why}"}


def _share(part: float, whole: float) -> float:
    return part / whole if whole else 0.0


def _cause(r: SimResult, config: Config, w: McoreWatch) -> tuple[str, str | None, str]:
    d = config.drain
    if _share(w.too_big, w.jobs) > MOST:
        return ("nodes_too_small", "farm (node types, slots per node)",
                f"{w.too_big} of the {w.jobs} multi-core jobs ask for more cores on one node than most nodes have "
                f"({w.node_slots} slots or fewer): no drain makes that room; larger nodes would (the farm's node "
                "types, slots per node)")
    if not partition_on(d, r.policy):
        if r.policy == "fifo":
            return ("partition_off", "policy",
                    "the fifo baseline drains no node for them (mysched, least-loaded and easy drain with drain.rate/"
                    "max_draining)")
        if d.on:  # only the automatic partition, which is the mysched policy's
            return ("partition_off", "drain.rate/max_draining",
                    f"the {r.policy} baseline runs no automatic partition (following the demand is the mysched "
                    "policy's); it drains only with drain.rate/max_draining set")
        return ("partition_off", "drain.rate/max_draining",
                f"the multi-core partition is off (drain.rate = {_setting(d.rate)}, drain.max_draining = "
                f"{_setting(d.max_draining)}): set drain.rate/max_draining or remove them (automatic)")
    if not w.in_use_s and w.rate == 0:
        return ("drains_too_slow", "drain.rate",
                f"the multi-core partition never held a node: drain.rate = {_setting(d.rate)} per hour starts none "
                "(the planner drains whole nodes, at least 1 an hour): raise drain.rate")
    if _share(w.at_cap_s, w.in_use_s) > MOST:
        held = f"{_share(w.at_cap_s, w.in_use_s):.0%} of the {hms(w.in_use_s)} it held nodes"
        if d.max_draining is not None:
            return ("partition_at_cap", "drain.max_draining",
                    f"the multi-core partition was at its cap (drain.max_draining = {w.cap}) {held}: raise "
                    "drain.max_draining (or remove it: automatic)")
        return ("partition_at_cap", "drain.max_draining",
                f"the multi-core partition was at its cap, half the nodes ({w.cap}, those running multi-core jobs "
                f"included), {held}: drain.max_draining above {w.cap} lets it grow at single-core work's expense (an "
                "override: one node drained per waiting multi-core job); replay the workload with it before adopting "
                "it, on some farms it costs more than it gains")
    if _share(w.rate_s, w.in_use_s) > MOST:
        return ("drains_too_slow", "drain.rate",
                f"new drains were held back by drain.rate = {_setting(d.rate)} per hour "
                f"{_share(w.rate_s, w.in_use_s):.0%} of the {hms(w.in_use_s)} the partition held nodes, "
                "below its cap: raise drain.rate")
    if _share(w.unknown_walltime, w.jobs) > MOST or _share(w.all_unknown_walltime, w.all_jobs) > MOST:
        # the mysched policy goes by run-time estimates there (mysched.core.rules.runtimes);
        # the baselines, textbook ones, by requested walltimes alone
        known = ("reservations and drains go by run-time estimates from the users' recent jobs, which nothing "
                 "enforces" if r.policy == "mysched" else "reservations and drains cannot tell when nodes free")
        return ("walltimes_unknown", "scheduler.max_walltime / queue resources_default.walltime",
                f"{w.unknown_walltime} of the {w.jobs} multi-core jobs and {w.all_unknown_walltime} of all "
                f"{w.all_jobs} request no walltime the planner believes (none, 0, or above scheduler.max_walltime): "
                f"{known}; give jobs one (a queue's resources_default.walltime) or raise scheduler.max_walltime")
    took = (f"draining nodes took {hms(statistics.median(w.to_room_s))} (median of {len(w.to_room_s)}) to get room"
            if w.to_room_s else "no draining node got room")
    if d.backfill == "requested":
        return ("drains_too_slow", "drain.backfill",
                f"{took}, below the partition's cap: drain.backfill = \"requested\" refills draining nodes with jobs "
                "taken to run to their requested walltime; \"expected\" empties them sooner")
    if d.auto:
        return ("drains_too_slow", "drain.max_draining",
                f"{took}: the automatic partition drains for the jobs the share order passed over, within half "
                "the nodes (those running multi-core jobs included); drain.max_draining (with drain.rate) lets more nodes drain at once, the first "
                "to empty serves")
    return ("drains_too_slow", "drain.rate",
            f"{took}, below the partition's cap and mostly not held back by its rate: a higher drain.rate drains "
            "more nodes at once, the first to empty serves")


def _setting(v: float | int | None) -> str:
    return "automatic" if v is None else f"{v:g}"
