"""`mysched pools`: package guarantees, modelled on LSF's ``bresources -g -l``."""

from __future__ import annotations

import argparse

from mysched.cli.main import command
from mysched.cli import statusdoc
from mysched.cli.statusdoc import load, options
from mysched.cli.textout import dump_json, table
from mysched.errors import StatusError


@command("pools", "package guarantees per pool and consumer (bresources -g -l)")
def fill(p: argparse.ArgumentParser) -> None:
    """Per guarantee pool: its package, hosts, total and free packages, how many are guaranteed
    and used by owners, lent out and used by others, the hosts held for owners this cycle, and a
    status (ok, or overcommitted when it promises more packages than its up hosts hold). Per
    consumer: guaranteed, allocated (its jobs in the pool), owner use, loaned (of its idle
    guarantee), pending (packages its waiting jobs ask for) and owed (what the pool holds or
    drains for it now)."""
    options(p, json_keys="pools{POOL:{pool,package{slots,mem},hosts,total,free,guaranteed,owner_use,loan_use,"
            "other_use,held_hosts,guarded_hosts,status,consumers[{consumer,kind,guaranteed,allocated,owner_use,"
            "loaned,pending,owed}]}}")
    p.add_argument("pool", nargs="?", help="only this pool")
    p.set_defaults(run=run)


def _package(pk: dict) -> str:
    parts = ([f"{pk['slots']} slot(s)"] if pk["slots"] else []) + ([f"{pk['mem'] / 1024**3:g} GB"] if pk["mem"] else [])
    return " + ".join(parts)


def run(args: argparse.Namespace) -> int:
    doc = load(args)
    pools = doc.get("pools") or {}
    if args.pool:
        if args.pool not in pools:
            known = ", ".join(sorted(pools)) or "none are configured"
            raise StatusError(f"no pool '{args.pool}' in the status of the last cycle ({known})")
        pools = {args.pool: pools[args.pool]}
    if args.json:
        dump_json({"pools": pools})
        return 0
    if not pools:
        print("no guarantee pools (configure pools.NAME)")
        return 0
    for i, (name, st) in enumerate(sorted(pools.items())):
        if i:
            print()
        if not args.noheader:
            print(f"POOL {name}: package {_package(st['package'])}; {st['hosts']} host(s); status {st['status']}")
            print(f"  total {st['total']}, free {st['free']}, guaranteed {st['guaranteed']}; used by owners "
                  f"{st['owner_use']}, lent {st['loan_use']}, others {st['other_use']}"
                  + (f"; held for owners: {', '.join(st['held_hosts'])}" if st["held_hosts"] else ""))
        table(["CONSUMER", "KIND", "GUARANTEED", "ALLOCATED", "OWNER_USE", "LOANED", "PENDING", "OWED"],
              [[c["consumer"], c["kind"], c["guaranteed"], c["allocated"], c["owner_use"], c["loaned"],
                c["pending"], c["owed"]] for c in st["consumers"]],
              noheader=args.noheader, right=(2, 3, 4, 5, 6, 7))
    if not args.noheader:
        for note in statusdoc.notes(doc):
            print(note)
    return 0
