"""Human-readable simulation reports (the JSON form is `SimResult.to_json`)."""

from __future__ import annotations

from mysched.sim.result import SimResult


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


def _num(v) -> str:
    return "-" if v is None else f"{v:.3f}"


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
        f"  occupancy        {r.occupancy:7.2%}   (used / available slot-seconds while jobs queued; "
        f"{r.occupancy_submitting:.2%} until the last submission)",
        f"  diversity        {r.diversity:7.3f}   (distinct users / jobs per busy node)",
        f"  share violations {r.share_violations:7d}   (starts over guarantee while a VO below it could run)",
        f"  wait             mean {_hms(w['mean'])}, p50 {_hms(w['p50'])}, p95 {_hms(w['p95'])}, max {_hms(w['max'])}"
        f"; bounded slowdown {j['bounded_slowdown']:.2f} (tau 10 s)",
        f"  planner cycle    p50 {c['p50'] * 1000:.2f} ms, p99 {c['p99'] * 1000:.2f} ms, max {c['max'] * 1000:.2f} ms",
    ]
    for c, v in sorted(r.packing.items()):
        if c == "farm":
            lines.insert(6, f"  fill factor      {_num(v['fill_factor']):>7}   (used / available slots, farm)")
        else:
            lines.append(f"  class {c} ({v['policy']}): packing index {_num(v['packing_index'])}, "
                         f"class fill factor {_num(v['fill_factor'])}")
    if r.drain_waste:
        lines.append(f"  drain waste      {r.drain_waste:7.2%}   (idle slot-seconds on draining or reserved nodes)")
    if len(j["by_size"]) > 1:
        lines.append("  by size          " + "; ".join(
            f"{k} core{'s' if k != '1' else ''}: {v['jobs']} jobs, wait mean {_hms(v['wait_mean'])} p95 "
            f"{_hms(v['wait_p95'])} max {_hms(v['wait_max'])}, bsld {v['bounded_slowdown']:.1f}"
            for k, v in j["by_size"].items()))
    for name, v in sorted(r.pools.items()):
        lines.append(f"  pool {name:<11} loaned {v['loaned_slot_h']:.1f} slot-hours, invariant breaches "
                     f"{v['invariant_breaches']}; guarantee unmet while work waited: " + "; ".join(
                         f"{c} {_hms(x['unmet_s'])} (longest {_hms(x['longest_unmet_s'])})"
                         for c, x in v["consumers"].items()))
    if r.throttled_s is not None:
        held = ", ".join(f"{vo} {s / 3600:.1f}" for vo, s in sorted(r.throttled_s.items()) if s > 0)
        lines.append(f"  throttled        slot-hours held back by external load: {held or 'none'}")
    lines += ["", f"  {'VO':<14} {'share':>7} {'guar.':>6} {'used':>7} {'below guarantee':>16}"]
    for vo, v in sorted(r.vo.items()):
        lines.append(f"  {vo:<14} {v['share']:7.1%} {v['guarantee']:6d} {v['used']:7.1%} "
                     f"{_hms(v['below_guarantee_s']):>16}")
    return "\n".join(lines)


def format_comparison(results: list[SimResult]) -> str:
    """Several policies side by side on the same workload and farm."""
    rows = [
        ("occupancy", lambda r: f"{r.occupancy:.2%}"),
        ("diversity", lambda r: f"{r.diversity:.3f}"),
        ("share violations", lambda r: str(r.share_violations)),
        ("started", lambda r: str(r.started)),
        ("wait mean", lambda r: _hms(r.to_json()["wait_s"]["mean"])),
        ("wait p95", lambda r: _hms(r.to_json()["wait_s"]["p95"])),
        ("cycle p50 (ms)", lambda r: f"{r.to_json()['cycle_s']['p50'] * 1000:.2f}"),
        ("wall (s)", lambda r: f"{r.wall_s:.1f}"),
    ]
    for c in sorted({c for r in results for c in r.packing if c != "farm"}):
        rows.append((f"{c} PI", lambda r, c=c: _num(r.packing.get(c, {}).get("packing_index"))))
        rows.append((f"{c} class FF", lambda r, c=c: _num(r.packing.get(c, {}).get("fill_factor"))))
    if any(r.packing for r in results):
        rows.append(("farm FF", lambda r: _num(r.packing.get("farm", {}).get("fill_factor"))))
    for vo in sorted({v for r in results for v in r.vo}):
        rows.append((f"{vo} used", lambda r, vo=vo: f"{r.vo.get(vo, {}).get('used', 0):.1%}"))
        rows.append((f"{vo} below guar.", lambda r, vo=vo: _hms(r.vo.get(vo, {}).get('below_guarantee_s', 0))))
    width = max(14, *(len(r.policy) + 2 for r in results))
    head = f"{'':<20}" + "".join(f"{r.policy:>{width}}" for r in results)
    out = [f"{results[0].jobs} jobs on {results[0].nodes} nodes / {results[0].slots} slots", head]
    for label, fn in rows:
        out.append(f"{label:<20}" + "".join(f"{fn(r):>{width}}" for r in results))
    return "\n".join(out)
