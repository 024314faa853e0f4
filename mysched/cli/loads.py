"""`mysched loads`: the external load sources, their values, and what their rules throttle."""

from __future__ import annotations

import argparse
import time

from mysched.cli.main import command
from mysched.cli import statusdoc
from mysched.cli.statusdoc import load, options
from mysched.cli.textout import dump_json, table


@command("loads", "external load sources, their values and the VOs they throttle")
def fill(p: argparse.ArgumentParser) -> None:
    """Each load source of the configuration (load_sources) with its latest good value, its age
    and state (ok, or stale: no value, or older than max_age) and its last error; then each
    rule (load_rules) with its level (open, scaled, closed, stale) and whom it throttles; then
    the nodes skipped for the load their pbs_mom reports (node_load)."""
    options(p, json_keys="sources[{name,type,value,at,age_s,state,error,on_stale,interval,max_age}], "
            "rules[{rule,source,level,factor,value,low,high,vos,groups,queues,detail}], node_load{NODE: why}")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    doc = load(args)
    sources = doc.get("load_sources") or []
    rules = doc.get("throttles") or []
    loaded = doc.get("node_load") or {}
    if args.json:
        dump_json({"sources": sources, "rules": rules, "node_load": loaded})
        return 0
    if not sources and not loaded:
        print("no load sources configured (load_sources, load_rules and node_load in the configuration)")
        return 0
    if sources:
        table(["SOURCE", "TYPE", "VALUE", "AGE", "STATE", "ON_STALE", "ERROR"],
              [[s["name"], s["type"], f"{s['value']:g}" if s["value"] is not None else "-",
                f"{s['age_s']:.0f}s" if s["age_s"] is not None else "-", s["state"], s["on_stale"],
                s["error"] or "-"] for s in sources],
              noheader=args.noheader, colours=["red" if s["state"] == "stale" else None for s in sources],
              right=(2, 3))
    if rules:
        print()
        table(["RULE", "SOURCE", "LEVEL", "FACTOR", "LOW", "HIGH", "THROTTLES"],
              [[r["rule"], r["source"], r["level"], f"{r['factor']:.0%}", f"{r['low']:g}", f"{r['high']:g}",
                " ".join([*(f"vo:{v}" for v in r["vos"]), *(f"group:{g}" for g in r["groups"]),
                          *(f"queue:{q}" for q in r["queues"])])] for r in rules],
              noheader=args.noheader, colours=[None if r["level"] == "open" else "red" for r in rules],
              right=(3, 4, 5))
    if loaded:
        print()
        table(["NODE", "WHY NO NEW JOBS"], [[n, w] for n, w in sorted(loaded.items())], noheader=args.noheader)
    if not args.noheader:
        print(f"\nstatus of {statusdoc.clock(doc, doc.get('published'))}; values as of the daemon's last cycle "
              f"(now {time.strftime('%H:%M:%S')})")
        for note in statusdoc.notes(doc):
            print(note)
    return 0
