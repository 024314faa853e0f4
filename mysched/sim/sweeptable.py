"""The summary of a sweep: one row per setting and policy over the seeds, the Pareto front marked.

A setting that wins on one seed and loses on the next is no setting to deploy: a row shows the
median and the worst occupancy over seeds beside the waits, so the spread is in sight. The
front is over occupancy (higher is better), the multi-core mean wait and the share violations
(lower is better): a row off the front is beaten on all three by another.
"""

from __future__ import annotations

import csv
import io
import json
import statistics
from typing import Any, Iterable

from mysched.sim.result import SIZES, multicore_wait
from mysched.sim.sweep import Cell
from mysched.sim.sweepgrid import show


def _mean(xs: list[float]) -> float | None:
    return round(statistics.fmean(xs), 6) if xs else None


def _pool_figures(docs: list[dict]) -> dict[str, float]:
    """Each pool's numeric figures, averaged over seeds (``pool.NAME.FIGURE``)."""
    vals: dict[str, list[float]] = {}
    for d in docs:
        for name, figs in (d.get("pools") or {}).items():
            for k, v in (figs.items() if isinstance(figs, dict) else ()):
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    vals.setdefault(f"pool.{name}.{k}", []).append(float(v))
    return {k: _mean(v) for k, v in sorted(vals.items())}  # type: ignore[misc]


def summarise(cells: Iterable[Cell], results: dict[str, dict]) -> list[dict[str, Any]]:
    """One row per (settings, policy) of the cells that have a result, in the cells' order."""
    groups: dict[tuple, list[tuple[Cell, dict]]] = {}
    for cell in cells:
        if cell.key in results:
            groups.setdefault((cell.settings, cell.policy), []).append((cell, results[cell.key]))
    rows = []
    for (settings, policy), members in groups.items():
        docs = [d for _, d in members]
        occ = [d["occupancy"] for d in docs if d.get("occupancy") is not None]
        row: dict[str, Any] = {
            "setting": show(settings), "settings": {k: v for k, v in settings}, "policy": policy,
            "seeds": [c.seed for c, _ in members if c.seed is not None], "cells": len(docs),
            "occupancy_median": round(statistics.median(occ), 6) if occ else None,
            "occupancy_worst": min(occ) if occ else None,
            "occupancy_best": max(occ) if occ else None,
        }
        for c in SIZES:
            present = [d["by_size"][c] for d in docs if d.get("by_size", {}).get(c, {}).get("jobs")]
            row[f"wait_mean_s[{c}]"] = _mean([p["wait_mean"] for p in present])
            row[f"wait_p95_s[{c}]"] = _mean([p["wait_p95"] for p in present])
        mc = [w for w in map(multicore_wait, docs) if w is not None]
        row["multicore_wait_s"] = _mean(mc)
        row["multicore_wait_min_s"] = min(mc) if mc else None
        row["multicore_wait_max_s"] = max(mc) if mc else None
        row["bounded_slowdown"] = _mean([d["bounded_slowdown"] for d in docs if "bounded_slowdown" in d])
        row["share_violations"] = _mean([d["share_violations"] for d in docs if "share_violations" in d])
        row["drain_waste"] = _mean([d["drain_waste"] for d in docs if "drain_waste" in d])
        row.update(_pool_figures(docs))
        rows.append(row)
    mark_pareto(rows)
    return rows


def _objectives(row: dict) -> tuple[float, float, float]:
    """Higher is better in each: occupancy, minus the multi-core wait, minus the violations
    (a row without multi-core jobs has no multi-core wait to lose)."""
    return (row["occupancy_median"] if row["occupancy_median"] is not None else float("-inf"),
            -(row["multicore_wait_s"] or 0.0), -(row["share_violations"] or 0.0))


def mark_pareto(rows: list[dict]) -> None:
    """Set ``pareto`` on each row: True where no other row is at least as good in every
    objective and better in one."""
    objs = [_objectives(r) for r in rows]
    for r, a in zip(rows, objs):
        r["pareto"] = not any(all(x >= y for x, y in zip(b, a)) and b != a for b in objs)


COLUMNS = (("", "pareto"), ("setting", "setting"), ("policy", "policy"), ("occ med", "occupancy_median"),
           ("occ worst", "occupancy_worst"), ("wait 1 h", "wait_mean_s[1]"), ("p95 1 h", "wait_p95_s[1]"),
           ("wait 2-8 h", "wait_mean_s[2-8]"), ("p95 2-8 h", "wait_p95_s[2-8]"), ("wait >8 h", "wait_mean_s[>8]"),
           ("bsld", "bounded_slowdown"), ("viol", "share_violations"), ("drain waste", "drain_waste"))


def _cell_text(key: str, v: Any) -> str:
    if key == "pareto":
        return "*" if v else ""
    if v is None:
        return "-"
    if key.startswith("occupancy"):
        return f"{v:.1%}"
    if key.startswith("wait_"):
        return f"{v / 3600.0:.2f}"
    if isinstance(v, float):
        return f"{v:.2f}" if key != "drain_waste" else f"{v:.3f}"
    return str(v)


def format_table(rows: list[dict]) -> str:
    """The rows as aligned text; waits in hours; * marks the Pareto front."""
    cols = [(h, k) for h, k in COLUMNS if k in ("pareto", "setting", "policy") or any(r.get(k) is not None for r in rows)]
    table = [[h for h, _ in cols]] + [[_cell_text(k, r.get(k)) for _, k in cols] for r in rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(cols))]
    out = ["  ".join(c.ljust(w) if i < 3 else c.rjust(w) for i, (c, w) in enumerate(zip(line, widths))).rstrip()
           for line in table]
    out.append("* on the Pareto front: no other row has higher occupancy, lower multi-core wait and fewer "
               "share violations at once")
    return "\n".join(out)


def rows_json(rows: list[dict], refused: list[tuple[str, str]], failed: list[tuple[str, str]]) -> str:
    return json.dumps({"rows": rows, "refused": [{"setting": s, "why": w} for s, w in refused],
                       "failed": [{"cell": c, "why": w} for c, w in failed]}, indent=2, sort_keys=True) + "\n"


def rows_csv(rows: list[dict]) -> str:
    keys: list[str] = []
    for r in rows:
        keys.extend(k for k in r if k not in keys and k != "settings")
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=keys, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: (" ".join(map(str, v)) if isinstance(v, list) else v) for k, v in r.items()})
    return buf.getvalue()


def plot_rows(rows: list[dict], path: str) -> None:
    """Occupancy against multi-core wait (or the overall mean wait where no job had more than
    one core), one point per row, error bars from the best to the worst seed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5.5))
    multi = any(r["multicore_wait_s"] is not None for r in rows)
    for r in rows:
        if r["occupancy_median"] is None:
            continue
        w = r["multicore_wait_s"] if multi else r.get("wait_mean_s[1]")
        if w is None:
            continue
        lo, hi = (r["multicore_wait_min_s"], r["multicore_wait_max_s"]) if multi else (w, w)
        ax.errorbar(w / 3600.0, r["occupancy_median"] * 100,
                    xerr=[[max(0.0, (w - lo) / 3600.0)], [max(0.0, (hi - w) / 3600.0)]],
                    yerr=[[(r["occupancy_median"] - r["occupancy_worst"]) * 100],
                          [(r["occupancy_best"] - r["occupancy_median"]) * 100]],
                    fmt="o" if r["pareto"] else "x", capsize=3, label=f"{r['setting']} ({r['policy']})")
    ax.set_xlabel(f"{'multi-core' if multi else 'single-core'} mean wait (h)")
    ax.set_ylabel("occupancy (%)")
    ax.set_title("sweep: o on the Pareto front, x off it; bars: range over seeds")
    if len(rows) <= 20:
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
