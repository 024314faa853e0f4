"""`mysched check-config`: validate a configuration file before deploying it."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Callable

from mysched.cli.main import command
from mysched.config import validate
from mysched.config.guarantees import farm_slots, overpromised, unguaranteed, unguaranteed_text
from mysched.config.parse import in_file_order, parse_file
from mysched.core.settings import Config
from mysched.core.model.windows import when
from mysched.core.place.nodeindex import NodeIndex
from mysched.core.model.batch import Node, Snapshot
from mysched.errors import MyschedError


@command("check-config", "validate a configuration file")
def fill(p: argparse.ArgumentParser) -> None:
    """Validate a configuration file: unknown keys, wrong types, shares over 100 %, a group in
    two VOs, unknown queues, duplicate keys, pool consumers that do not exist. Every problem is
    printed as FILE:LINE: key: message; the exit status is 1 if there is any. With guarantee
    pools it also works out each pool's hosts and packages -- on pbs_server's nodes with
    --server, else (for a sim:// server.url only) on the simulated farm of the `farm` section --
    and reports pools that promise more packages than they hold (overcommitted: exit status 1)
    and hosts in no pool. With --server it also warns of what the server does not have:
    configured queues it lacks, node types and queue node lists that match none of its nodes
    (likely typos; exit status unchanged), and VOs with no guarantee (no share, or the undeclared
    default VO) whose running jobs hold 10 % of its slots or more. VO guarantees (slots, and shares of the farm) that
    add up to more slots than the farm has are an error, checked on pbs_server's nodes with
    --server, else on the sim:// farm of a sim:// server.url (run and a reload refuse them
    too). An empty file is refused, as run and a reload refuse it."""
    p.add_argument("-c", "--config", required=True, metavar="FILE", help="configuration file to check")
    p.add_argument("--server", nargs="?", const="", metavar="URL",
                   help="read the queues and nodes from this batch server (default URL: server.url of the "
                        "file) to check the pools, queues and node types against the real farm")
    p.set_defaults(run=run)


def pool_report(cfg: Config, nodes: tuple[Node, ...]) -> tuple[list[str], list[str]]:
    """Lines describing each pool on `nodes`, and the problems (overcommitted pools)."""
    idx = NodeIndex().get(cfg, nodes)
    lines, problems = [], []
    for pool in cfg.pools:
        hosts = [e.node for e in idx.entries if idx.pool_of.get(e.node.name) is pool and e.counted]
        total = sum(pool.fit(n.slots, n.mem) for n in hosts)
        owed = [(c, c.guarantee(total)) for c in pool.consumers]
        promised = sum(g for _, g in owed)
        pk = " + ".join(([f"{pool.slots} slot(s)"] if pool.slots else [])
                        + ([f"{pool.mem / 1024**3:g} GB"] if pool.mem else []))
        lines.append(f"  pool {pool.name}: {len(hosts)} host(s), {total} package(s) of {pk}; guaranteed {promised} ("
                     + ", ".join(f"{c} {c.packages if c.percent is None else f'{c.percent:g} %'} = {g}"
                                 for c, g in owed) + ")" + ("; OVERCOMMITTED" if promised > total else ""))
        if promised > total:
            problems.append(f"{cfg.source}: pools.{pool.name}: overcommitted: guarantees {promised} package(s), "
                            f"its {len(hosts)} host(s) hold {total}")
        if not hosts:
            lines.append("    selects no host: check hosts, node_types, properties, min_mem and min_slots"
                         + (" (these nodes report no memory)" if pool.min_mem and all(e.node.mem is None for e in
                                                                                     idx.entries) else ""))
        unknown_mem = sum(1 for n in hosts if n.mem is None)
        if pool.mem and unknown_mem:
            lines.append(f"    {unknown_mem} host(s) report no memory: packages counted by slots there "
                         "(set node_types.NAME.mem)")
    lost = sorted(e.node.name for e in idx.entries if e.node.name not in idx.pool_of)
    if lost:
        lines.append(f"  hosts in no pool ({len(lost)}): " + ", ".join(lost[:20]) + (" ..." if len(lost) > 20 else ""))
    return lines, problems


def farm_warnings(cfg: Config, snap: Snapshot, where: Callable[[tuple], str] | None = None) -> list[str]:
    """What the configuration names that the server's farm does not have; `where` gives a
    key's ``FILE:LINE`` (the parsed file's), else the file alone."""
    at = where or (lambda path: cfg.source)
    out = []
    if snap.queues:
        have = {q.name for q in snap.queues}
        out += [f"{at(('queues', q))}: queues.{q}: pbs_server has no such queue" for q in cfg.queues if q not in have]
    idx = NodeIndex().get(cfg, snap.nodes)
    keys = {e.key for e in idx.entries}  # each node's type and queues
    out += [f"{at(('downtimes', d.name))}: downtimes.{d.name}: matches none of the server's {len(snap.nodes)} node(s)"
            for d in cfg.downtimes if not any(d in ws for ws in idx.downtimes.values())]
    out += [f"{at(('node_types', nt.name))}: node_types.{nt.name}: matches none of the server's {len(snap.nodes)} node(s)"
            for nt in cfg.node_types if all(k.ntype != nt.name for k in keys)]
    for q in cfg.queues.values():
        if q.restricted and not any(q.name in k.queues for k in keys):
            out.append(f"{at(('queues', q.name))}: queues.{q.name}: its nodes/node_types match none of the server's nodes: "
                       "its jobs can never start")
    return out


def running_warnings(cfg: Config, snap: Snapshot) -> list[str]:
    """The VOs that run a good part of the server's slots now with no guarantee
    (`unguaranteed`): a file that works on paper but leaves much of the real work unprotected."""
    total = farm_slots(n.slots for n in snap.nodes)
    if not total:
        return []
    cores: dict[str, int] = {}
    for j in snap.jobs:
        if j.state.holds_slots:
            vo = j.vo or cfg.vo_of(j.group)
            cores[vo] = cores.get(vo, 0) + j.cores
    return [f"{cfg.source}: " + unguaranteed_text(cfg, vo, part, "runs {part} of pbs_server's slots now")
            for vo, part in unguaranteed(cfg, {vo: c / total for vo, c in cores.items()}, total)]


def group_share_lines(cfg: Config) -> list[str]:
    """Each VO whose groups' shares differ, split as its slots would be: a group without a share
    weighs 1, which is easy to forget beside production 80 and analysis 20."""
    out = []
    for vo in sorted(cfg.vos):
        groups = sorted(g for g, v in cfg.group_vo.items() if v == vo)
        weights = {g: cfg.groups[g].share if g in cfg.groups else 1.0 for g in groups}
        if len(set(weights.values())) > 1:
            total = sum(weights.values())
            out.append(f"group shares in VO {vo}: " + ", ".join(
                f"{g} {w / total:.1%}" for g, w in sorted(weights.items(), key=lambda kv: (-kv[1], kv[0])))
                + " (a group without a share weighs 1)")
    return out


def run(args: argparse.Namespace) -> int:
    parsed = parse_file(args.config)
    # every problem of the file, and the farm's checks of the rest: one mistake hides no other
    cfg, errors = validate(parsed)
    lines: list[str] = []
    problems: list[str] = []
    warnings: list[str] = []
    nodes: tuple[Node, ...] | None = None
    if args.server is not None:
        from mysched.cli.run import make_server

        url = args.server or cfg.server
        try:
            server = make_server(url, cfg)
            try:
                snap = server.snapshot()
            finally:
                server.close()
        except MyschedError as exc:
            if not errors:
                raise
            snap = None
            warnings = [f"{url}: not checked: {exc}"]
        if snap is not None:
            nodes = snap.nodes
            where = f"pbs_server {url}: {len(nodes)} node(s)"
            warnings = farm_warnings(cfg, snap, parsed.where) + running_warnings(cfg, snap)
            why = overpromised(cfg, farm_slots(n.slots for n in nodes), parsed.where)
            if why and why not in errors:  # (a sim:// file checked on its own farm has it already)
                errors.append(why)
    if nodes is None and not cfg.server.startswith("sim:") and any(v.slots for v in cfg.vos.values()):
        lines.append(f"VO guarantees in slots: not checked against a farm (server.url is {cfg.server}); --server "
                     "checks them on pbs_server's nodes")
    if cfg.pools and nodes is None and not cfg.server.startswith("sim:"):
        # The hosts a pool selects are pbs_server's: the simulated farm's names say nothing of them.
        lines += [f"pools: not checked against a farm (server.url is {cfg.server}); --server checks them on "
                 "pbs_server's nodes"]
    elif cfg.pools:
        if nodes is None:
            from mysched.backends.sim.farm import make_nodes

            f = cfg.farm
            nodes = make_nodes(f.nodes, f.slots_per_node, f.name_format)
            where = f"the simulated farm, {f.nodes} x {f.slots_per_node} slots (--server checks the real one)"
        got, problems = pool_report(cfg, nodes)
        lines += [f"pools on {where}:"] + got
    if errors:  # with the pools' problems, which the rest of the file shows too
        for line in in_file_order(errors + problems + warnings, parsed):
            print(("warning: " + line) if line in warnings else f"mysched: error: {line}",
                  file=sys.stderr)
        return 1
    total = sum(v.share for v in cfg.vos.values()) * 100
    print(f"{args.config}: {'OK' if not problems else f'{len(problems)} problem(s)'} — {len(cfg.vos)} VOs "
          f"({total:g} % of slots guaranteed), {len(cfg.group_vo)} groups mapped, {len(cfg.queues)} queues, "
          f"{len(cfg.node_types)} node types, {len(cfg.packing)} packing classes, {len(cfg.pools)} guarantee pools, "
          + (f"user limits ({'default and ' if 'default' in cfg.users else ''}"
             f"{len(cfg.users) - ('default' in cfg.users)} user(s)); " if cfg.users else "no user limits; ")
          + f"default VO '{cfg.default_vo}'"
          + ("" if cfg.default_vo in cfg.vos else " (not declared under vos: no share, no limits)"))
    lines += group_share_lines(cfg)
    now = time.time()
    for d in cfg.downtimes:
        state = "over" if d.end <= now else "in force" if d.start <= now else "ahead"
        lines.append(f"downtime {when(d)}: {state}")
    for line in lines + problems:
        print(line)
    for line in warnings:
        print("warning: " + line)
    return 1 if problems else 0
