#!/usr/bin/env python3
"""How long the event listener takes to hand pbs_server's contact to the daemon, quiet and
under a user's flood (issue #34: 1,000 junk contacts and 30 idle connections).

A measurement, not a test: ``python tools/event_flood.py [--real 200] [--junk 1000] [--idle 30]``
on loopback prints the latency from a real contact's connect to its `on_event` call
(median, 95th percentile, max) and the listener's counts. Nothing here needs TORQUE.
"""

from __future__ import annotations

import argparse
import multiprocessing
import socket
import statistics
import struct
import threading
import time

from mysched.backends.torque.schedproto import LOOPBACK, ContactRule, SchedulerListener


def _hold(port: int, idle: int, stop) -> None:  # noqa: ANN001 - a multiprocessing.Event
    held = [socket.create_connection(("127.0.0.1", port)) for _ in range(idle)]
    stop.wait(120)
    for s in held:
        s.close()


def _flood(port: int, junk: int) -> None:
    for i in range(junk):
        try:
            with socket.create_connection(("127.0.0.1", port)) as s:
                s.sendall(b"\x00\x00\x00\x07" if i % 2 else b"GET / HTTP/1.0\r\n\r\n")
        except OSError:
            pass


def _send_real(port: int, real: int, sent) -> None:  # noqa: ANN001 - a multiprocessing.Queue
    """pbs_server's side: one contact every 5 ms, each timed from just before its connect."""
    for _ in range(real):
        t = time.perf_counter()  # CLOCK_MONOTONIC: comparable across processes
        with socket.create_connection(("127.0.0.1", port)) as s:
            s.sendall(struct.pack("!I", 1))
        sent.put(t)
        time.sleep(0.005)


def measure(real: int, junk: int, idle: int) -> tuple[list[float], dict[str, int], float]:
    arrived: dict[int, float] = {}
    done = threading.Event()

    def on_event(name: str) -> None:
        arrived[len(arrived)] = time.perf_counter()
        if len(arrived) == real:
            done.set()
    lst = SchedulerListener(("127.0.0.1", 0), on_event=on_event, rule=ContactRule(LOOPBACK),
                            deadline=600.0).start()
    # The user's side runs in processes of its own, as it would: not on the listener's GIL.
    stop = multiprocessing.Event()
    holder = multiprocessing.Process(target=_hold, args=(lst.port, idle, stop))
    flooders = [multiprocessing.Process(target=_flood, args=(lst.port, junk)) for _ in range(2 if junk else 0)]
    holder.start()
    t0 = time.perf_counter()
    for f in flooders:
        f.start()
    sent = multiprocessing.Queue()
    sender = multiprocessing.Process(target=_send_real, args=(lst.port, real, sent))
    sender.start()
    times = [sent.get(timeout=120) for _ in range(real)]
    sender.join()
    done.wait(30)
    for f in flooders:
        f.join()
    wall = time.perf_counter() - t0
    lat = [arrived[i] - times[i] for i in range(min(len(arrived), real))]
    counts = dict(lst.counts)
    stop.set()
    holder.join()
    lst.close()
    return lat, counts, wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--real", type=int, default=200)
    ap.add_argument("--junk", type=int, default=1000, help="junk contacts per flooding process (two of them)")
    ap.add_argument("--idle", type=int, default=30)
    a = ap.parse_args()
    for label, junk, idle in (("quiet", 0, 0), (f"flood ({2 * a.junk} junk, {a.idle} idle)", a.junk, a.idle)):
        lat, counts, wall = measure(a.real, junk, idle)
        ms = sorted(x * 1000 for x in lat)
        print(f"{label}: {len(ms)}/{a.real} real contacts handled in {wall:.2f} s; latency ms median "
              f"{statistics.median(ms):.2f}, p95 {ms[int(0.95 * (len(ms) - 1))]:.2f}, max {ms[-1]:.2f}; counts {counts}")


if __name__ == "__main__":
    main()
