#!/usr/bin/env python3
"""The multi-core matrix: is multi-core work served as well as EASY serves it, out of the box?

Runs the synthetic workload at each `--mcore-fraction` x seed x farm x cycle mode under three
policies -- mysched, easy, and mysched on the same jobs split into single-core ones
(`--split-multicore`) -- on the embedded configuration with the farm's shape (the VOs' per-node
job limits, 6 on 8 slots, grow with the node: tools/pools_sim.py) and no drain or reservation
settings, and prints one row per run with the targets:

  mc<=easy   the mysched policy's multi-core mean wait <= the easy policy's on the same jobs (the
             issue's target, counted in the summary); the verdict holds it to max(easy's, the
             split run's): easy keeps no shares, and where fair share alone kept the same jobs
             split waiting longer than easy did, their shape is not what made them wait
             (docs/design/drain.md, "The anchors on seeds 1-8")
  sp mc      the split run's multi-core mean wait, as the jobs were submitted
  mc/1c      multi-core mean wait / single-core mean wait in the same run (the issue's target:
             <= 2; median over seeds <= 1.5, in the summary)
  split      the same ratio in the split run, as the jobs were submitted (a split job waited the
             mean of its pieces' waits): what fair share alone gives those jobs, without their
             shape -- the production VOs' users are often over their share, so their jobs wait
             longer whatever their cores
  vs split   mc/1c / max(1, split): the target the verdict uses (<= 2, median <= 1.5). It is
             mc/1c itself unless the same jobs split already waited longer than single-core
             ones (docs/design/drain.md, "The ratio's anchor")
  occ-easy   occupancy - easy's (>= -1 point); occ-split: - the split run's (>= -3 points)
  viol       share violations (0)

The cells run on `mysched sweep`'s executors (a pool of processes, `--workers`); with
`--results DIR` finished cells are kept and reused (keyed by configuration, workload, policy and
seed -- not by the code: clear DIR, or `--fresh mysched`, after changing the planner).

Usage: tools/mcore_matrix.py [--fractions 0.5,1.0] [--seeds 1-8] [--farms 50x8,20x32,100x16]
                             [--modes 60s,event] [--duration 48] [--workers N] [--results DIR]
                             [--fresh mysched] [--json FILE]
Exit status 0 when every target is met, 1 when one is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from pools_sim import config_text  # noqa: E402

from mysched.sim.result import multicore_wait  # noqa: E402
from mysched.sim.sweep import Cell, ProcessExecutor, ResultStore, run_sweep  # noqa: E402
from mysched.errors import UsageError  # noqa: E402
from mysched.sim.sweepgrid import parse_seeds  # noqa: E402

POLICIES = ("mysched", "easy", "split")


def _farm(text: str) -> tuple[int, int]:
    n, _, s = text.partition("x")
    return int(n), int(s)


def _wait(doc: dict, cls: str, key: str = "by_size") -> float:
    return float(doc.get(key, {}).get(cls, {}).get("wait_mean", 0.0) or 0.0)


def _has_as_submitted(path: str) -> bool:
    """Does a kept split run report its waits as submitted (runs kept before it did not)?"""
    try:
        with open(path) as fh:
            return "as_submitted" in json.load(fh).get("result", {})
    except (OSError, ValueError):
        return False


def cells_for(fraction: float, farm: tuple[int, int], mode: str, seed: int, duration: float) -> dict[str, Cell]:
    nodes, slots = farm
    text = config_text(slots, 0, pools=False)
    args = ["--nodes", str(nodes), "--slots-per-node", str(slots), "--duration", f"{duration:g}",
            "--mcore-fraction", f"{fraction:g}"] + (["--event-driven"] if mode == "event" else [])
    out = {}
    for p in POLICIES:
        extra = ["--split-multicore"] if p == "split" else []
        out[p] = Cell((), seed, "mysched" if p == "split" else p, text, tuple(args + extra))
    return out


def _ratio(a: float, b: float) -> float:
    return a / b if b else (0.0 if a == 0 else float("inf"))


def verdict(d: dict[str, dict]) -> dict:
    """One run's figures and the targets it missed, from the `--json` documents of its
    "mysched", "easy" and "split" cells."""
    mc, easy_mc, one = multicore_wait(d["mysched"]) or 0.0, multicore_wait(d["easy"]) or 0.0, _wait(d["mysched"], "1")
    split_mc = multicore_wait(d["split"], "as_submitted") or 0.0
    ratio = _ratio(mc, one)
    split_ratio = _ratio(split_mc, _wait(d["split"], "1", "as_submitted"))
    shape = ratio / max(1.0, split_ratio)
    occ = d["mysched"]["occupancy"]
    de, ds = 100 * (occ - d["easy"]["occupancy"]), 100 * (occ - d["split"]["occupancy"])
    viol = d["mysched"]["share_violations"]
    missed = [name for name, bad in (("mc>easy", mc > max(easy_mc, split_mc)), ("vs-split>2", shape > 2), ("occ<easy-1", de < -1),
                                     ("occ<split-3", ds < -3), ("viol", viol > 0)) if bad]
    return dict(mc_wait=mc, easy_mc_wait=easy_mc, split_mc_wait=split_mc, one_wait=one, ratio=ratio, split_ratio=split_ratio,
                vs_split_ratio=shape, occupancy=occ, vs_easy=de, vs_split=ds, violations=viol, missed=missed)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fractions", default="0.5,1.0")
    ap.add_argument("--seeds", default="1-8")
    ap.add_argument("--farms", default="50x8,20x32,100x16")
    ap.add_argument("--modes", default="60s,event")
    ap.add_argument("--duration", type=float, default=48.0)
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--results", default=None)
    ap.add_argument("--fresh", action="append", default=[], choices=POLICIES,
                    help="run this policy's cells again even if --results has them")
    ap.add_argument("--json", default=None, help="write every row here")
    a = ap.parse_args()
    try:
        fractions = [float(x) for x in a.fractions.split(",")]
    except ValueError:
        ap.error(f"--fractions {a.fractions}: expected fractions like 0.5,1.0")
    try:
        farms = [_farm(x) for x in a.farms.split(",")]
    except ValueError:
        ap.error(f"--farms {a.farms}: expected NODESxSLOTS like 50x8,20x32")
    modes = a.modes.split(",")
    if not set(modes) <= {"60s", "event"}:
        ap.error(f"--modes {a.modes}: expected 60s, event or both")
    try:
        seeds = parse_seeds(a.seeds)
    except UsageError as e:
        ap.error(str(e))
    runs = []
    for f in fractions:
        for farm in farms:
            for mode in modes:
                for seed in seeds:
                    runs.append(((f, farm, mode, seed), cells_for(f, farm, mode, seed, a.duration)))
    store = ResultStore(a.results)
    if a.results:
        for _, cells in runs:
            for p in POLICIES:
                path = store._path(cells[p])
                if os.path.exists(path) and (p in a.fresh or p == "split" and not _has_as_submitted(path)):
                    os.unlink(path)
    allcells = [c for _, cells in runs for c in cells.values()]
    results, failed = run_sweep(allcells, ProcessExecutor(a.workers), store)
    for cell, why in failed:
        print(f"failed: {cell.name} {' '.join(cell.sim_args)}: {why}", file=sys.stderr)
    if failed:
        return 2
    rows = []
    ok = True
    print(f"{'frac':>4} {'farm':>6} {'mode':>5} {'seed':>4}  {'mc h':>6} {'easy h':>6} {'sp mc':>6} {'1c h':>5} {'mc/1c':>5}"
          f" {'split':>5} {'vs sp':>5}  {'occ':>6} {'-easy':>6} {'-split':>6} {'viol':>4}  missed")
    for (f, farm, mode, seed), cells in runs:
        d = {p: results[c.key] for p, c in cells.items()}
        row = dict(fraction=f, farm=f"{farm[0]}x{farm[1]}", mode=mode, seed=seed, **verdict(d))
        ok &= not row["missed"]
        rows.append(row)
        print(f"{f:4g} {row['farm']:>6} {mode:>5} {seed:4d}  {row['mc_wait'] / 3600:6.2f} "
              f"{row['easy_mc_wait'] / 3600:6.2f} {row['split_mc_wait'] / 3600:6.2f} {row['one_wait'] / 3600:5.2f} {row['ratio']:5.2f} "
              f"{row['split_ratio']:5.2f} {row['vs_split_ratio']:5.2f}  {row['occupancy']:6.2%} {row['vs_easy']:+6.2f} "
              f"{row['vs_split']:+6.2f} {row['violations']:4d}  {' '.join(row['missed'])}")
    print("\nmedian over seeds (target <= 1.5): mc/1c (the issue's), mc/1c / max(1, split) (the verdict's)")
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["fraction"], r["farm"], r["mode"]), []).append(r)
    for (f, farm, mode), rs in groups.items():
        med, med_vs = statistics.median(r["ratio"] for r in rs), statistics.median(r["vs_split_ratio"] for r in rs)
        ok &= med_vs <= 1.5
        print(f"  {f:4g} {farm:>6} {mode:>5}: {med:.2f} {med_vs:.2f}{'' if med_vs <= 1.5 else '  MISSED'}")
    n = len(rows)
    print(f"\nruns: mc<=easy {sum(r['mc_wait'] <= r['easy_mc_wait'] for r in rows)}/{n}, "
          f"mc<=max(easy, sp mc) {sum('mc>easy' not in r['missed'] for r in rows)}/{n}, "
          f"mc/1c<=2 {sum(r['ratio'] <= 2 for r in rows)}/{n}, vs split<=2 {sum(r['vs_split_ratio'] <= 2 for r in rows)}/{n}, "
          f"occ>=easy-1 {sum(r['vs_easy'] >= -1 for r in rows)}/{n}, occ>=split-3 {sum(r['vs_split'] >= -3 for r in rows)}/{n}, "
          f"no violation {sum(r['violations'] == 0 for r in rows)}/{n}, every target {sum(not r['missed'] for r in rows)}/{n}")
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    print("\nall targets met" if ok else "\nsome targets missed")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
