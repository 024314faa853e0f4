"""`mysched bench`: how long a planning cycle takes at a given farm size."""

from __future__ import annotations

import argparse
import gc
import json
import resource
import statistics
import time

from mysched.cli.main import command
from mysched.errors import InputError, UsageError
from mysched.files import write_output
from mysched.gcpause import gc_paused
from mysched.backends.sim.farm import MAX_FARM_SLOTS
from mysched.cli.common import fraction, int_between, int_up_to, non_empty, non_negative_int, output_path
from mysched.config.values import MAX_FARM_NODES, MAX_NODE_SLOTS

MAX_QUEUED = 1_000_000
"""The longest queue benchmarked: 20 times a large site's (more only measures the swap)."""


@command("bench", "measure the planner at a given farm size (and how it scales)")
def fill(p: argparse.ArgumentParser) -> None:
    """Build a realistic synthetic farm (20 VOs, hundreds of users, node types, limits, a hot
    queue, an exclusive packing class), then time the planner alone over repeated cycles, the
    snapshot build from server replies (TORQUE attribute dictionaries through the TORQUE
    adapter's conversion), and the peak memory. --scaling adds a table from 1k to 50k queued
    jobs and 1k to 20k slots."""
    p.add_argument("--nodes", type=int_up_to(MAX_FARM_NODES), default=2500, metavar="N",
                   help=f"worker nodes (default 2500; at most {MAX_FARM_NODES}, and {MAX_FARM_SLOTS} slots in all)")
    p.add_argument("--slots-per-node", type=int_up_to(MAX_NODE_SLOTS), default=8, metavar="S", help="default 8")
    p.add_argument("--running", type=non_negative_int, default=18000, metavar="N",
                   help="default 18000, at most the farm's slots")
    p.add_argument("--queued", type=int_between(0, MAX_QUEUED), default=50000, metavar="N",
                   help=f"default 50000, at most {MAX_QUEUED}")
    p.add_argument("--repeat", type=int_between(1, 1000), default=7, metavar="K",
                   help="planner cycles to time (default 7)")
    p.add_argument("--no-packing", action="store_true", help="leave the packing class out")
    p.add_argument("--mcore-fraction", type=fraction, default=None, metavar="F",
                   help="fraction of the queued jobs asking for 8 cores (default: 5 %% of one production "
                        "group's), to time reservations, backfill and the multi-core partition (on by "
                        "default, as in every bench run)")
    p.add_argument("--pools", action="store_true", help="add a package guarantee pool over every worker node "
                   "(10 %% and 20 packages of 8 slots for two production groups)")
    p.add_argument("--scaling", action="store_true", help="also print the scaling table")
    p.add_argument("--json", type=non_empty, metavar="FILE",
                   help='write {"plan_s": {"p50","max"}, "build_s": {"p50","first"}, "peak_rss_mb", "starts", ...} '
                        '(\'-\' for stdout)')
    p.set_defaults(run=run)


def _server_replies(snapshot) -> tuple[list, list]:
    """What pbs_statjob/pbs_statnode would return for this farm (attribute dictionaries)."""
    jobs = []
    for j in snapshot.jobs:
        a = {"job_state": j.state.value, "queue": j.queue, "euser": j.user, "egroup": j.group,
             "Job_Owner": f"{j.user}@ce", "Resource_List.nodes": f"1:ppn={j.cores}", "qtime": str(int(j.submit_time)),
             "Resource_List.walltime": f"{int(j.walltime or 3600) // 3600:02d}:00:00"}
        if j.placement:
            node, cores = j.placement[0]
            a["exec_host"] = f"{node}/0-{cores - 1}" if cores > 1 else f"{node}/0"
            a["start_time"] = str(int(j.start_time or 0))
        jobs.append((j.id, a))
    nodes = [(n.name, {"state": "free", "np": str(n.slots), "properties": ""}) for n in snapshot.nodes]
    return jobs, nodes


def measure(nodes: int, slots: int, running: int, queued: int, repeat: int, packing: bool = True,
            mcore: float | None = None, pools: bool = False) -> dict:
    from mysched.sim.benchfarm import bench_config, bench_snapshot
    from mysched.core.planner import plan
    from mysched.backends.torque.backend import TorqueServer
    from mysched.backends.torque.fake import FakeIFL
    from mysched.core.share.usage import Usage

    cfg = bench_config(packing=packing, pools=pools)
    snap = bench_snapshot(nodes=nodes, slots=slots, running=running, queued=queued, mcore=mcore)
    usage = Usage(vo={f"vo{i:02d}": 1000.0 * (i + 1) for i in range(20)})

    jobs, nodes_ = _server_replies(snap)
    # As in the daemon, the planner plans what the adapter read: the generated snapshot goes
    # once the replies (which stand in for libtorque's) are made.
    when, free = snap.time, nodes * slots - sum(j.cores for j in snap.jobs if j.placement)
    del snap
    gc.collect()
    replies = FakeIFL(jobs, nodes_)  # answers with the prepared replies: the conversion is what is timed
    server = TorqueServer(ifl=replies, clock=lambda: when)
    builds = []
    for _ in range(3):  # the first reads every job, the others find them unchanged (as cycles do)
        t0 = time.perf_counter()
        snap = server.snapshot()
        builds.append(time.perf_counter() - t0)
    del replies, server, jobs, nodes_
    gc.collect()
    times = []
    p = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        with gc_paused():  # as the daemon plans
            p = plan(snap, cfg, usage, snap.time)
        times.append(time.perf_counter() - t0)
    return {
        "nodes": nodes, "slots_per_node": slots, "running": sum(1 for j in snap.jobs if j.placement),
        "queued": queued, "free_slots": free,
        "plan_s": {"p50": round(statistics.median(times), 4), "max": round(max(times), 4)},
        "build_s": {"p50": round(statistics.median(builds), 4), "first": round(builds[0], 4)},
        "starts": len(p.starts) if p else 0,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1),
    }


def run(args: argparse.Namespace) -> int:
    output_path(args.json, "--json")  # before the minutes of measuring, not after
    if args.nodes * args.slots_per_node > MAX_FARM_SLOTS:
        raise UsageError(f"--nodes {args.nodes} x --slots-per-node {args.slots_per_node} is "
                         f"{args.nodes * args.slots_per_node} slots: at most {MAX_FARM_SLOTS}")
    if args.running > args.nodes * args.slots_per_node:
        raise InputError(f"--running {args.running} is more than the farm's {args.nodes * args.slots_per_node} slots")
    r = measure(args.nodes, args.slots_per_node, args.running, args.queued, args.repeat, not args.no_packing,
                args.mcore_fraction, args.pools)
    print(f"farm {r['nodes']} nodes x {r['slots_per_node']} slots, {r['running']} running, {r['queued']} queued, "
          f"{r['free_slots']} free slots")
    print(f"  planner        p50 {r['plan_s']['p50']:.3f} s, max {r['plan_s']['max']:.3f} s over {args.repeat} cycles "
          f"({r['starts']} starts per cycle)")
    print(f"  snapshot build p50 {r['build_s']['p50']:.3f} s, first {r['build_s']['first']:.3f} s "
          "(server replies -> model; later reads keep unchanged jobs)")
    print(f"  peak RSS       {r['peak_rss_mb']:.0f} MB")
    if args.scaling:
        # Each row is printed as soon as it is measured: the table takes about a minute.
        print("\n  scaling (planner p50):")
        print(f"  {'nodes':>6} {'slots':>6} {'running':>8} {'queued':>7} {'plan p50 s':>11} {'per job+node us':>16}",
              flush=True)
        shapes = [(args.nodes, min(args.running, args.nodes * args.slots_per_node), q)
                  for q in (1000, 5000, 10000, 20000, 50000)]
        shapes += [(n, int(n * args.slots_per_node * 0.9), args.queued) for n in (125, 250, 625, 1250, 2500)]
        rows = []
        for n, running, queued in shapes:
            x = measure(n, args.slots_per_node, running, queued, 3, not args.no_packing)
            rows.append(x)
            total = x["running"] + x["queued"] + x["nodes"]
            print(f"  {x['nodes']:6d} {x['nodes'] * x['slots_per_node']:6d} {x['running']:8d} {x['queued']:7d} "
                  f"{x['plan_s']['p50']:11.3f} {1e6 * x['plan_s']['p50'] / total:16.2f}", flush=True)
        r["scaling"] = rows
    if args.json:
        text = json.dumps(r, indent=2)
        if args.json == "-":
            print(text)
        else:
            write_output(args.json, (text + "\n").encode(), "JSON")
    return 0
