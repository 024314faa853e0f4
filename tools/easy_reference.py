#!/usr/bin/env python3
"""Textbook EASY backfilling (Mu'alem & Feitelson 2001) on N identical one-core nodes, as an
independent yardstick for `mysched simulate --policy easy --event-driven`.

FIFO by submit time; the first job that does not fit gets a shadow time (when, by the running
jobs' requested ends, enough processors are free; all that ends at that moment counts) and
extra processors (those free then beyond what it needs); a later job backfills if it fits now
and either ends by the shadow time or uses only extra processors. One pass at every distinct
arrival and end. AccaSim 1.1.3's EASYBackfilling does not protect the reservation (it passes
no reserved nodes to its allocator), so it backfills more freely than this.

Usage: tools/easy_reference.py TRACE.swf NODES   (an uncompressed SWF, filtered as
tools/accasim_compare_easy.sh filters it); prints {"jobs", "wait_mean", "bounded_slowdown"}.
"""

from __future__ import annotations

import heapq
import json
import math
import sys

TAU = 10.0


def read(path: str) -> list[tuple[float, str, int, float, float]]:
    jobs = []
    with open(path) as f:
        for line in f:
            p = line.split()
            if not p or p[0].startswith(";") or len(p) < 18:
                continue
            alloc, req_procs = int(p[4]), int(p[7])
            size = alloc if alloc > 0 else req_procs
            req = float(p[8])
            jobs.append((float(p[1]), p[0], max(size, 1), float(p[3]), req if req > 0 else math.inf))
    jobs.sort()
    return jobs


def run(jobs: list, nodes: int) -> dict[str, tuple[float, float, float]]:
    """Job id -> (submit, start, run time)."""
    free = nodes
    running: list = []  # (actual end, id, size, requested end)
    queue: list = []
    starts: dict[str, tuple[float, float, float]] = {}

    def start(j: tuple, t: float) -> None:
        nonlocal free
        sub, jid, size, rt, req = j
        free -= size
        heapq.heappush(running, (t + rt, jid, size, t + req))
        starts[jid] = (sub, t, rt)

    def schedule(t: float) -> None:
        nonlocal queue
        while queue and queue[0][2] <= free:
            start(queue.pop(0), t)
        if not queue:
            return
        head = queue[0]
        avail, shadow = free, math.inf
        for end, size in sorted((max(e, t), s) for _, _, s, e in running):
            if end > shadow:
                break
            avail += size
            if avail >= head[2] and shadow == math.inf:
                shadow = end
        extra = avail - head[2]
        rest = []
        for j in queue[1:]:
            if j[2] <= free:
                if t + j[4] <= shadow:
                    start(j, t)
                    continue
                if j[2] <= extra:
                    extra -= j[2]
                    start(j, t)
                    continue
            rest.append(j)
        queue = [head] + rest

    i = 0
    while i < len(jobs) or running:
        t = min(jobs[i][0] if i < len(jobs) else math.inf, running[0][0] if running else math.inf)
        while running and running[0][0] <= t:
            free += heapq.heappop(running)[2]
        while i < len(jobs) and jobs[i][0] <= t:
            if jobs[i][2] <= nodes:
                queue.append(jobs[i])
            i += 1
        schedule(t)
    return starts


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__.split("\n\n")[-1].strip(), file=sys.stderr)
        return 2
    starts = run(read(sys.argv[1]), int(sys.argv[2]))
    waits = [st - sub for sub, st, _ in starts.values()]
    bsld = [max(1.0, (st - sub + rt) / max(rt, TAU)) for sub, st, rt in starts.values()]
    print(json.dumps({"jobs": len(starts), "wait_mean": sum(waits) / len(waits),
                      "bounded_slowdown": sum(bsld) / len(bsld)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
