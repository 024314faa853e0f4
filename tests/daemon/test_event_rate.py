"""Events against a running service: a user's flood on the event port changes neither the
cycle rate nor the handling of pbs_server's own events (issue #34, item 3).

Real sockets on 127.0.0.1; bounded loops and waits."""

from __future__ import annotations

import socket
import struct
import threading
import time

from prometheus_client import CollectorRegistry

from mysched.backends.torque.schedproto import LOOPBACK, ContactRule, SchedulerListener
from mysched.config import config_from_text
from mysched.daemon.metrics import Metrics
from mysched.daemon.service import Service

from .test_daemon import CFG, make


def _send(port: int, data: bytes) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(data)
        return True
    except OSError:
        return False


def _wait(pred, timeout: float = 20.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end and not pred():
        time.sleep(0.01)
    return pred()


def test_a_flood_on_the_event_port_neither_speeds_cycles_nor_stalls_real_events():
    reg = CollectorRegistry()
    d, server, farm = make(cfg_text=CFG + "scheduler = { interval = 3600; min_interval = 1; };\n",
                           metrics=Metrics(reg))
    starts: list[float] = []
    cycle = d.cycle

    def timed_cycle():
        starts.append(time.monotonic())
        return cycle()
    d.cycle = timed_cycle
    listeners: list[SchedulerListener] = []

    def factory(on_event):
        lst = SchedulerListener(("127.0.0.1", 0), on_event=on_event, rule=ContactRule(LOOPBACK),
                                on_contact=d.metrics.event_contact, deadline=30.0)
        listeners.append(lst.start())
        return lst
    svc = Service(d, listener_factory=factory)
    t = threading.Thread(target=svc.run, daemon=True)
    t.start()
    idle: list[socket.socket] = []
    try:
        assert _wait(lambda: svc.cycles == 1 and listeners)
        port = listeners[0].port
        idle = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(30)]
        # Junk alone: no cycle comes forward, and it is no event seen (the silent-events warning
        # still watches for pbs_server's own).
        junk = sum(_send(port, b"\x00\x00\x00\x07") for _ in range(300))
        assert _wait(lambda: listeners[0].counts["malformed"] == junk)
        time.sleep(1.5)  # past min_interval: a cycle brought forward would have come
        assert svc.cycles == 1 and not d.events_seen
        assert reg.get_sample_value("mysched_event_contacts_refused_total", {"reason": "malformed"}) == junk

        # Junk beside real events: every real one is handled, cycles come at most one per min_interval.
        flooder = threading.Thread(target=lambda: [_send(port, b"\xde\xad\xbe\xef") for _ in range(700)])
        flooder.start()
        first = time.monotonic()
        real = 0
        while time.monotonic() - first < 3.0 and real < 200:
            real += _send(port, struct.pack("!I", 1))
            time.sleep(0.05)
        flooder.join(120)
        assert _wait(lambda: listeners[0].events == real)
        assert d.events_seen
        later = [s for s in starts if s >= first]
        assert len(later) >= 2  # events brought cycles forward (the interval is an hour) ...
        gaps = [b - a for a, b in zip(starts, starts[1:])]
        assert min(gaps) >= 0.95  # ... never closer than min_interval (1 s)
        assert listeners[0].counts["timeout"] == 0  # the 30 idle connections stayed open throughout
    finally:
        for s in idle:
            s.close()
        svc.stop()
        t.join(15)


def test_run_wires_the_configured_allow_list_and_counts_refusals_in_the_metrics():
    """`mysched run` builds its listener from daemon.event_allow and daemon.event_reserved_port
    and counts each contact in the daemon's metrics."""
    from mysched.cli.run import _torque_events

    reg = CollectorRegistry()
    d, server, farm = make(metrics=Metrics(reg))
    got: list[str] = []
    for allow, accepted in (('["10.0.0.0/8"]', False), ('["10.0.0.0/8", "127.0.0.1"]', True)):
        cfg = config_from_text(f"daemon = {{ event_allow = {allow}; event_reserved_port = false; }};")
        lst = _torque_events("127.0.0.1:0", "torque://localhost", cfg, d.metrics)(got.append)
        try:
            assert _send(lst.port, struct.pack("!I", 1))
            assert _wait(lambda: sum(lst.counts.values()) == 1)
        finally:
            lst.close()
        assert lst.counts == ({"accepted": 1} if accepted else {"address": 1})
    assert got == ["new"]
    assert reg.get_sample_value("mysched_event_contacts_refused_total", {"reason": "address"}) == 1
    assert reg.get_sample_value("mysched_event_contacts_total") == 1
