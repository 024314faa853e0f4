#!/usr/bin/env python3
"""The floor of mysched's read path: time the bare pbs_statjob call against a live pbs_server,
through the same ctypes binding and with the same attribute list the daemon asks for, beside
the daemon's whole read (``TorqueServer.snapshot()``: server, queues, nodes and jobs, converted
and mapped to the model).

    tools/statjob_floor.py [--server HOST | pbs://HOST:PORT] [--rounds 7] [--all-attributes]
                           [--cycle -c FILE] [--json FILE]

Prints, as medians over the rounds: the bare call (pbs_statjob + pbs_statfree), the one-pass
conversion of its reply (the daemon's walk -- in C where it was built -- and the Python walk),
the whole read with a warm job cache (as every cycle but the first
sees it), and read / floor. With the server on this host, the CPU seconds pbs_server spent
per call are read from /proc (--server-pid, default: found by name); --all-attributes asks
for every attribute (no select list), to show what the list saves on both sides. A
``pbs://`` server is OpenPBS, read through libpbs and `OpenPBSServer` (its job list with
sub-jobs, as the daemon reads it). --cycle also times a whole dry-run daemon cycle (read,
plan, the status file written to a temporary directory, no start) with the configuration given
by -c, and its phases. The load average is printed before and after: ratios are what
compare across runs on a shared host.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from mysched.backends.torque.backend import JOB_ATTRS, TorqueServer  # noqa: E402
from mysched.backends.torque.ifl import _C_WALK, CtypesIFL, convert_packed, convert_packed_py  # noqa: E402
from mysched.config.servers import openpbs_host, scheme  # noqa: E402


def server_pid() -> int | None:
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/comm") as f:
                    if f.read().strip() in ("pbs_server", "pbs_server.bin"):
                        return int(pid)
            except OSError:
                continue
    return None


def cpu_s(pid: int | None) -> float:
    if pid is None:
        return 0.0
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--server", help="pbs_server host (default: the client's server_name)")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--all-attributes", action="store_true", help="no select list: every attribute")
    ap.add_argument("--server-pid", type=int, help="pbs_server's pid for its CPU time (default: by name)")
    ap.add_argument("--cycle", action="store_true", help="also time a dry-run daemon cycle (needs -c)")
    ap.add_argument("-c", "--config", help="configuration for --cycle")
    ap.add_argument("--json", help="also write the figures here")
    args = ap.parse_args()
    if args.rounds < 1:
        ap.error("--rounds must be at least 1")
    if args.cycle and not args.config:
        ap.error("--cycle needs -c FILE")

    pbs = bool(args.server) and scheme(args.server) == "openpbs"
    extend = None
    if pbs:
        from mysched.backends.openpbs.backend import JOB_ATTRS as PBS_ATTRS, OpenPBSServer
        from mysched.backends.openpbs.ifl import OpenPBSIFL

        host = openpbs_host(args.server)
        ifl: CtypesIFL = OpenPBSIFL(timeout=120)
        job_attrs, extend, make = PBS_ATTRS, b"t", lambda: OpenPBSServer(host, timeout=120)
    else:
        host = args.server
        ifl = CtypesIFL(timeout=120)
        job_attrs, make = JOB_ATTRS, lambda: TorqueServer(host, timeout=120)
    conn = ifl.connect(host)
    if conn < 0:
        print(f"cannot connect to pbs_server ({conn})", file=sys.stderr)
        return 1
    attrs = () if args.all_attributes else job_attrs
    sel = ifl._select(attrs)
    first = ctypes.pointer(sel[0]) if sel else None
    pid = args.server_pid or server_pid()
    call, free, conv, conv_py, server_cpu, jobs = [], [], [], [], [], 0
    load_before = os.getloadavg()
    for _ in range(args.rounds):
        c0 = cpu_s(pid)
        t0 = time.perf_counter()
        head = ifl.lib.pbs_statjob(conn, b"", first, extend)
        t1 = time.perf_counter()
        server_cpu.append(cpu_s(pid) - c0)
        if not head:
            print(f"pbs_statjob failed: pbs_errno {ifl.errno()}", file=sys.stderr)
            return 1
        rows = convert_packed(head)
        t2 = time.perf_counter()
        py = 0.0
        if _C_WALK is not None:
            convert_packed_py(head)
            py = time.perf_counter() - t2
            conv_py.append(py)
        ifl.lib.pbs_statfree(head)
        t3 = time.perf_counter()
        call.append(t1 - t0)
        conv.append(t2 - t1)
        free.append(t3 - t2 - py)
        jobs = len(rows)
        del rows
    ifl.disconnect(conn)

    read = []
    srv = make()
    srv.snapshot()  # the first read maps every job; a daemon's cycles after it find most unchanged
    for _ in range(args.rounds):
        t0 = time.perf_counter()
        srv.snapshot()
        read.append(time.perf_counter() - t0)
    cycle: list[float] = []
    phases: dict[str, list[float]] = {}
    if args.cycle:
        from mysched.config import load_config
        from mysched.daemon.cycle import Daemon

        state = tempfile.mkdtemp(prefix="statjob_floor.")
        try:
            daemon = Daemon(load_config(args.config), srv, dry_run=True, state_dir=state)
            daemon.cycle()
            for _ in range(args.rounds):
                t0 = time.perf_counter()
                done = daemon.cycle()
                cycle.append(time.perf_counter() - t0)
                for k, v in done.phases.items():
                    phases.setdefault(k, []).append(v)
        finally:
            shutil.rmtree(state, ignore_errors=True)
    srv.close()
    load_after = os.getloadavg()

    med = statistics.median
    floor = med(call) + med(free)
    out = {"jobs": jobs, "attributes": list(attrs) or "all", "rounds": args.rounds,
           "statjob_s": round(med(call), 4), "statfree_s": round(med(free), 4), "floor_s": round(floor, 4),
           "walk": "C" if _C_WALK is not None else "Python",
           "convert_s": round(med(conv), 4), "convert_python_s": round(med(conv_py), 4) if conv_py else None,
           "read_s": round(med(read), 4),
           "read_over_floor": round(med(read) / floor, 3) if floor else None,
           "server_cpu_s": round(med(server_cpu), 3) if pid else None,
           "cycle_s": round(med(cycle), 4) if cycle else None,
           "cycle_over_floor": round(med(cycle) / floor, 3) if cycle and floor else None,
           "phases_s": {k: round(med(v), 4) for k, v in phases.items()},
           "load": [round(x, 2) for x in load_before + load_after]}
    print(f"{jobs} jobs, {'all attributes' if not attrs else f'{len(attrs)} attributes'}, "
          f"medians of {args.rounds}:")
    print(f"  floor (pbs_statjob {out['statjob_s']:.3f} s + pbs_statfree {out['statfree_s']:.3f} s): "
          f"{floor:.3f} s" + (f"; pbs_server CPU {out['server_cpu_s']:.3f} s per call" if pid else ""))
    print(f"  one-pass conversion of the reply ({out['walk']} walk): {out['convert_s']:.3f} s"
          + (f"; the Python walk: {out['convert_python_s']:.3f} s" if conv_py else ""))
    print(f"  whole read (snapshot, warm): {out['read_s']:.3f} s = {out['read_over_floor']:.2f} x the floor")
    if cycle:
        print(f"  dry-run daemon cycle (read, plan, publish, warm): {out['cycle_s']:.3f} s = "
              f"{out['cycle_over_floor']:.2f} x the floor; phases (medians): "
              + ", ".join(f"{k} {v:.3f} s" for k, v in out["phases_s"].items() if v >= 0.0005))
    print(f"  load average before {' '.join(f'{x:.2f}' for x in load_before)}, "
          f"after {' '.join(f'{x:.2f}' for x in load_after)}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
