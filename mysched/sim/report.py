"""Human-readable simulation reports (the JSON form is `SimResult.to_json`)."""

from __future__ import annotations

from typing import Callable

from mysched.core.model.reasons import REASONS, REPLAY_REASONS, Reason
from mysched.sim.result import SIZES, SimResult


def _hms(seconds: float) -> str:
    s = int(round(seconds))
    d, s = divmod(s, 86400)
    h, s = divmod(s, 3600)
    m, s = divmod(s, 60)
    if d:
        return f"{d}d{h:02d}h{m:02d}m"
    if h:
        return f"{h}h{m:02d}m"
    if m:
        return f"{m}m{s:02d}s"
    return f"{s}s"


hms = _hms
"""Seconds as the report writes them (1d02h03m, 4h05m, 6m07s, 8s), for other modules' lines."""


def _num(v) -> str:
    return "-" if v is None else f"{v:.3f}"


def _pct(v, width: int = 7) -> str:
    return f"{'-':>{width}}" if v is None else f"{v:{width}.2%}"


OCCUPANCY = "used / all the farm's slot-seconds while jobs waited"
UTILISATION = "used / all the farm's slot-seconds over the whole replay"
"""The two figures' one definition, for every line that names them (a downtime's slots are in
the base: idle, never left out, so its closed slots cannot raise either figure)."""


def _occupancy_line(r: SimResult) -> str:
    if r.occupancy is None:
        return f"  occupancy              -   ({OCCUPANCY}: no job ever waited, so there is nothing to measure)"
    share = r.queued_s / r.span_s if r.span_s else 0.0
    return (f"  occupancy        {r.occupancy:7.2%}   ({OCCUPANCY}, {share:.1%} of the replay; "
            f"{_pct(r.occupancy_submitting, 0)} until the last submission)")


def _slots(r: SimResult) -> str:
    return f"{r.slots // r.nodes} slots" if r.nodes and r.slots % r.nodes == 0 else f"{r.slots} slots in all"


def _closed_lines(r: SimResult) -> list[str]:
    if not r.closed_nodes:
        return []
    by: dict[str, list[str]] = {}
    for node, why in sorted(r.closed_nodes.items()):
        by.setdefault(why, []).append(node)
    return [f"  closed nodes     {len(r.closed_nodes):7d}   of {r.nodes} admit no job of the workload ("
            + "; ".join(f"{why}: {', '.join(ns[:4])}{', ...' if len(ns) > 4 else ''}" for why, ns in by.items())
            + "): their slots count as available and stay idle"]


def _wait_reason_lines(r: SimResult) -> list[str]:
    """What the jobs waited for, most first; when it was not a free slot, what that means."""
    total = sum(r.wait_reasons.values())
    if total <= 0:
        return []
    top = [(k, s / total) for k, s in r.wait_reasons.items()][:4]
    lines = [f"  waited for       {total / 3600:.1f} job-hours: " + ", ".join(
        f"{k} {f:.1%}" for k, f in top if f >= 0.001) + ("; ..." if len(r.wait_reasons) > 4 else "")]
    reason, frac = top[0]
    if reason != Reason.NO_FREE_SLOT:  # a full farm is what waiting usually means; anything else is news
        what = REASONS.get(reason) or REPLAY_REASONS.get(reason) or reason
        cap = r.wait_caps.get(reason)
        lines.append(f"  mostly           {reason} ({frac:.0%} of the job-hours waited): {what}"
                     + (f" ({cap})" if cap else ""))
    return lines


def _size_waits(cls: str, v: dict) -> str:
    """One size class's jobs and waits ("2-8 cores: 145 jobs, wait mean 9h08m p95 18h59m")."""
    return (f"{cls} core{'s' if cls != '1' else ''}: {v['jobs']} jobs, wait mean {_hms(v['wait_mean'])} p95 "
            f"{_hms(v['wait_p95'])}")


def format_result(r: SimResult) -> str:
    """A one-run report: farm, throughput, the three quality figures, per-VO table."""
    j = r.to_json()
    w, c = j["wait_s"], j["cycle_s"]
    lines = [
        f"policy {r.policy}: {r.jobs} jobs on {r.nodes} nodes / {r.slots} slots, "
        f"{_hms(r.span_s)} simulated in {r.wall_s:.1f} s ({r.cycles} planner cycles)",
        f"  started {r.started}, finished {r.finished}" + (f", start failures {r.start_failures}"
                                                          if r.start_failures else "")
        + (f"; never started: {sum(r.unplaceable.values())} ("
           + ", ".join(f"{k} {v}" for k, v in sorted(r.unplaceable.items())) + ")" if r.unplaceable else ""),
        *([f"  larger than farm {r.too_large_jobs:7d}   jobs ask for more cores, nodes or memory than the farm's nodes have (up to "
           f"{r.too_large} cores; {r.nodes} x {_slots(r)}): they never start, and the figures below leave them "
           "out of the waiting work"]
          if r.too_large_jobs else []),
        *_closed_lines(r),
        *([f"  downtimes  {r.downtime_slot_s / 3600:10.1f}   slot-hours closed by scheduled downtimes: in the figures "
           "below as idle slots"] if r.downtime_slot_s else []),
        _occupancy_line(r),
        f"  utilisation      {r.utilisation:7.2%}   ({UTILISATION})",
        ("  diversity              -   (no node was ever busy)" if r.diversity is None else
         f"  diversity        {r.diversity:7.3f}   (distinct users / jobs per busy node)"),
        f"  share violations {r.share_violations:7d}   (starts over guarantee while a VO below it could run)",
        (f"  wait             mean {_hms(w['mean'])}, p50 {_hms(w['p50'])}, p95 {_hms(w['p95'])}, max {_hms(w['max'])}"
         f"; bounded slowdown {j['bounded_slowdown']:.2f} (tau 10 s)" if r.started else
         "  wait             -   (no job started: no wait to measure)"),
        *_wait_reason_lines(r),
        f"  planner cycle    p50 {c['p50'] * 1000:.2f} ms, p99 {c['p99'] * 1000:.2f} ms, max {c['max'] * 1000:.2f} ms",
    ]
    for c, v in sorted(r.packing.items()):
        if c == "farm":
            at = next(i for i, line in enumerate(lines) if line.startswith("  share violations"))
            lines.insert(at, f"  fill factor      {_num(v['fill_factor']):>7}   (the farm's: the occupancy, as the "
                            "packing study names it)")
        else:
            lines.append(f"  class {c} ({v['policy']}): packing index {_num(v['packing_index'])}, "
                         f"class fill factor {_num(v['fill_factor'])}")
    if r.drain_waste:
        lines.append(f"  drain waste      {r.drain_waste:7.2%}   (idle slot-seconds on draining or reserved nodes, "
                     "of all slot-seconds)")
    if len(j["by_size"]) > 1:
        lines.append("  by size          " + "; ".join(
            f"{_size_waits(k, v)} max {_hms(v['wait_max'])}, bsld {v['bounded_slowdown']:.1f}"
            for k, v in j["by_size"].items()))
    if j.get("as_submitted"):
        lines.append("  as submitted     " + "; ".join(_size_waits(k, v) for k, v in j["as_submitted"].items())
                     + " (a split job waited the mean of its pieces' waits)")
    if r.multicore_why:
        lines.append(f"  why multi-core   {r.multicore_why['text']}")
    for name, v in sorted(r.pools.items()):
        if not v.get("guaranteed"):  # nothing promised: "unmet 0s" would be a confident zero
            why = v.get("why") or ("its guarantees come to no package of those it holds" if v.get("packages") else
                                   "a pool's min_mem or package mem needs node memory, which simulated nodes have "
                                   "only from a node type's mem")
            lines.append(f"  pool {name:<11} {v.get('hosts', 0)} hosts, {v.get('packages', 0)} packages, none "
                         f"guaranteed on this farm: its guarantees measured nothing ({why})")
            continue
        lines.append(f"  pool {name:<11} {v['hosts']} hosts, {v['packages']} packages ({v['guaranteed']} guaranteed), "
                     f"loaned {v['loaned_slot_h']:.1f} slot-hours, invariant breaches "
                     f"{v['invariant_breaches']}; guarantee unmet while work waited: " + "; ".join(
                         f"{c} {_hms(x['unmet_s'])} (longest {_hms(x['longest_unmet_s'])})"
                         for c, x in v["consumers"].items()) + (f"; no package on this farm: {v['why']}"
                                                                if v.get("why") else ""))
    if r.throttled_s is not None:
        held = ", ".join(f"{vo} {s / 3600:.1f}" for vo, s in sorted(r.throttled_s.items()) if s > 0)
        lines.append(f"  throttled        slot-hours held back by external load: {held or 'none'}")
    lines += ["", f"  {'VO':<14} {'share':>6} {'guar.':>6} {'jobs':>7} {'wait mean':>10} {'slots while waiting':>20} "
                  f"{'below guar.':>12} {'work':>6}"]
    for vo, v in sorted(r.vo.items()):
        head = f"  {vo:<14} {v['share']:6.1%} {v['guarantee']:6d} {v['jobs']:7d}"
        if not v["jobs"]:
            lines.append(f"{head} {'no jobs in the workload':>30}")
            continue
        lines.append(f"{head} {_hms_or(v['wait_mean_s']):>10} {_pct(v['slots_while_waiting'], 20)} "
                     f"{_hms(v['below_guarantee_s']):>12} {v['used']:6.1%}")
    lines += [f"  slots while waiting: the VO's running slots / the farm's {r.slots}, averaged over the time it "
              "had jobs waiting (- : it never waited);",
              "  below guar.: time from a cycle that left it with fewer slots than guar. and jobs waiting that its own "
              "caps (max_running, max_cores of the VO, its groups, its users) did not hold, to one that did not (not "
              "the wait for the first cycle);",
              "  work: its part of the core-hours run -- the workload's mix once every job has run, whatever the "
              "configuration"]
    lines += [f"  note: {text}" for text in r.unguaranteed]
    capped = [(vo, v.get("below_guarantee_capped_s") or 0) for vo, v in sorted(r.vo.items())]
    if any(s for _, s in capped):  # below its guarantee by its own configuration, not by the scheduler
        lines.append("  held below guar. by its own caps (all its waiting jobs held by max_running or max_cores of "
                     "the VO, their group or their user; left out of below guar.): "
                     + ", ".join(f"{vo} {_hms(s)}" for vo, s in capped if s))
    return "\n".join(lines)


def _hms_or(seconds: float | None) -> str:
    return "-" if seconds is None else _hms(seconds)


def format_comparison(results: list[SimResult]) -> str:
    """Several policies side by side on the same workload and farm."""
    rows = [
        ("occupancy", lambda r: _pct(r.occupancy, 0)),
        ("utilisation", lambda r: f"{r.utilisation:.2%}"),
        ("diversity", lambda r: _num(r.diversity)),
        ("share violations", lambda r: str(r.share_violations)),
        ("started", lambda r: str(r.started)),
        ("wait mean", lambda r: _hms(r.to_json()["wait_s"]["mean"]) if r.started else "-"),
        ("wait p95", lambda r: _hms(r.to_json()["wait_s"]["p95"]) if r.started else "-"),
        ("cycle p50 (ms)", lambda r: f"{r.to_json()['cycle_s']['p50'] * 1000:.2f}"),
        ("wall (s)", lambda r: f"{r.wall_s:.1f}"),
    ]
    for c in sorted({c for r in results for c in r.packing if c != "farm"}):
        rows.append((f"{c} PI", lambda r, c=c: _num(r.packing.get(c, {}).get("packing_index"))))
        rows.append((f"{c} class FF", lambda r, c=c: _num(r.packing.get(c, {}).get("fill_factor"))))
    if any(r.packing for r in results):
        rows.append(("farm FF", lambda r: _num(r.packing.get("farm", {}).get("fill_factor"))))
    rows += _size_rows(results)
    for vo in sorted({v for r in results for v, x in r.vo.items() if x.get("jobs")}):
        rows.append((f"{vo} wait mean", lambda r, vo=vo: _hms_or(r.vo.get(vo, {}).get("wait_mean_s"))))
        rows.append((f"{vo} slots waiting", lambda r, vo=vo: _pct(r.vo.get(vo, {}).get("slots_while_waiting"), 0)))
        rows.append((f"{vo} below guar.", lambda r, vo=vo: _hms(r.vo.get(vo, {}).get("below_guarantee_s", 0))))
    width = max(14, *(len(r.policy) + 2 for r in results))
    head = f"{'':<20}" + "".join(f"{r.policy:>{width}}" for r in results)
    out = [f"{results[0].jobs} jobs on {results[0].nodes} nodes / {results[0].slots} slots", head]
    for label, fn in rows:
        out.append(f"{label:<20}" + "".join(f"{fn(r):>{width}}" for r in results))
    out.append(f"(occupancy: {OCCUPANCY}; utilisation: {UTILISATION}; a downtime's slots count as idle)")
    out.append(f"(VO slots waiting: its running slots / the farm's {results[0].slots} while it had jobs waiting; "
               "a VO's part of the work run is the workload's, the same under every policy: see --json 'used')")
    out += [f"why multi-core ({r.policy}): {r.multicore_why['text']}" for r in results if r.multicore_why]
    out += [f"note: {text}" for text in results[0].unguaranteed]  # the work is the workload's, under every policy
    return "\n".join(out)


SIZE_LABELS = {"1": "1 core", "2-8": "2-8 cores", ">8": "> 8 cores"}
"""The size classes (`mysched.sim.result.SIZES`) as the comparison's rows name them."""


def _size_rows(results: list[SimResult]) -> list[tuple[str, Callable[[SimResult], str]]]:
    """Wait mean, p95 and max per size class the runs started jobs of, when there are several:
    multi-core jobs may wait hours while the overall mean, mostly single-core jobs, looks fine."""
    figures = {id(r): r.size_figures() for r in results}
    present = [c for c in SIZES if any(figures[id(r)].get(c, {}).get("jobs") for r in results)]
    if len(present) < 2:
        return []
    return [(f"{SIZE_LABELS[c]} wait {k}",
             lambda r, c=c, k=k: _hms(figures[id(r)][c][f"wait_{k}"]) if figures[id(r)].get(c, {}).get("jobs") else "-")
            for c in present for k in ("mean", "p95", "max")]
