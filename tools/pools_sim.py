#!/usr/bin/env python3
"""Package guarantees in the simulator (issue: package pools), side by side with the same
run without pools.

The embedded configuration plus a pool over every worker node: packages of 8 slots + 16 GB,
25 % of them guaranteed to the group ``atlasmc``, loans to every queue for jobs of at most
`--loan` hours. Node memory comes from a node type (2 GB per slot; pbs_mom's figure on a real
farm); the VOs' per-node job limits (6 on 8 slots) grow with the node. The synthetic workload keeps the farm full with single-core work; ``atlasmc`` submits
bursts of 8-core, 16 GB pilots (`mysched simulate --bursts`).

Usage: tools/pools_sim.py [--nodes 50] [--slots 8] [--bursts N] [--loan 12] [--duration 96]
Prints both reports and a summary against the issue's targets (run it with the Python that
has mysched installed, e.g. .venv/bin/python).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from importlib import resources


def config_text(slots: int, loan_h: float, pools: bool) -> str:
    text = resources.files("mysched.data").joinpath("mysched.cfg").read_text()
    swmgr = next(ln for ln in text.splitlines(keepends=True) if ln.startswith("  swmgr = {"))
    # after swmgr: a node takes the first type that matches
    text = text.replace(swmgr, swmgr + f'  wn = {{ nodes = ["wn*"]; mem = "{2 * slots}gb"; }};\n', 1)
    if slots > 8:  # the VOs' per-node limits are for 8-slot nodes: scale them to the node
        text = text.replace("max_per_node = 6;", f"max_per_node = {6 * slots // 8};")
    if pools:
        text += (f'\npools = {{\n  mcore = {{\n    hosts = ["wn*"];\n    package = {{ slots = 8; mem = "16gb"; }};\n'
                 f'    groups = {{ atlasmc = "25%"; }};\n'
                 f'    loan = {{ queues = ["all"]; max_walltime = "{int(loan_h)}:00:00"; }};\n  }};\n}};\n')
    return text


def print_occupancy(names: tuple[str, str], a: dict, b: dict, notes: tuple[str, str]) -> None:
    """The occupancy of run `a` beside run `b` (`names`), over the whole run and until the last
    submission, each with its difference in points and a note."""
    for key, label, note in (("occupancy", "occupancy", notes[0]),
                             ("occupancy_submitting", "until the last submission:", notes[1])):
        print(f"  {label} {names[0]} {a[key]:.2%}, {names[1]} {b[key]:.2%} "
              f"(difference {100 * (b[key] - a[key]):+.2f} points{note})")


def simulate_json(args: list[str], js: str) -> dict | None:
    """`mysched simulate ARGS --json JS` with this Python: its figures, or None when it failed
    (mysched has said why, naming the file and key)."""
    cmd = [sys.executable, "-c", "import sys; from mysched.cli.main import main; sys.exit(main())",
           "simulate", *args, "--json", js]
    print("$ mysched simulate", " ".join(args), flush=True)
    if subprocess.run(cmd).returncode != 0:
        return None
    with open(js) as f:
        return json.load(f)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=50)
    ap.add_argument("--slots", type=int, default=8)
    ap.add_argument("--bursts", type=int, default=0, help="jobs per burst (default: 1.5 x the guarantee)")
    ap.add_argument("--burst-every", type=float, default=24.0)
    ap.add_argument("--loan", type=float, default=12.0, help="longest walltime of a borrower, hours")
    ap.add_argument("--duration", type=float, default=96.0)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    packages = a.nodes * (a.slots // 8)
    bursts = a.bursts or max(1, int(packages * 0.25 * 1.5))
    out = {}
    with tempfile.TemporaryDirectory() as d:
        for pools in (False, True):
            cfg = os.path.join(d, f"pools-{pools}.cfg")
            with open(cfg, "w") as f:
                f.write(config_text(a.slots, a.loan, pools))
            got = simulate_json(["-c", cfg, "--nodes", str(a.nodes), "--slots-per-node", str(a.slots),
                                 "--duration", str(a.duration), "--seed", str(a.seed), "--bursts", str(bursts),
                                 "--burst-every", str(a.burst_every)], os.path.join(d, f"pools-{pools}.json"))
            if got is None:
                return 1
            out[pools] = got
    base, got = out[False], out[True]
    pool = got["pools"]["mcore"]
    unmet = pool["consumers"]["group atlasmc"]
    print(f"\nsummary {a.nodes} x {a.slots}, bursts of {bursts} every {a.burst_every:g} h, loans <= {a.loan:g} h:")
    print_occupancy(("without pools", "with"), base, got,
                    (", with the drain-out after the last submission, when only jobs longer than a loan may queue",
                     "; target within 2 while the workload keeps the farm full"))
    print(f"  atlasmc guarantee unmet while waiting: {unmet['unmet_s'] / 3600:.2f} h in all, longest "
          f"{unmet['longest_unmet_s'] / 3600:.2f} h (target <= {a.loan:g} h)")
    print(f"  loaned {pool['loaned_slot_h']:.0f} slot-hours; invariant breaches {pool['invariant_breaches']}; "
          f"share violations {got['share_violations']} (without pools {base['share_violations']})")
    print(f"  2-8 core wait mean: without {base['by_size'].get('2-8', {}).get('wait_mean', 0) / 3600:.2f} h, "
          f"with {got['by_size'].get('2-8', {}).get('wait_mean', 0) / 3600:.2f} h")
    return 0


if __name__ == "__main__":
    sys.exit(main())
