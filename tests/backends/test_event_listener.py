"""The event port against hostile users (issue #34, item 3; #32's address filter).

Real sockets on 127.0.0.1; every loop is bounded and every wait has a deadline, so a broken
listener fails these tests rather than hanging them.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import socket
import struct
import threading
import time

import pytest
from prometheus_client import CollectorRegistry

from mysched.backends.torque.schedproto import (LOOPBACK, ContactRule, SchedulerListener, contact_rule,
                                                server_command)
from mysched.daemon.metrics import Metrics

JUNK = [struct.pack("!I", 0), struct.pack("!I", 6), struct.pack("!I", 8), struct.pack("!I", 0xDEADBEEF),
        b"\x00\x00", b"GET / HTTP/1.0\r\n\r\n", struct.pack("!I", 1) + b"\x00", b""]
"""Not pbs_server commands: codes it never sends (null, unused, quit, garbage), a short
read, a web request, a valid code with a byte more, nothing at all."""


def _wait(pred, timeout: float = 20.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.01)
    return pred()


def _send(port: int, data: bytes, source_port: int = 0, source: str = "127.0.0.1") -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if source_port or source != "127.0.0.1":
            s.bind((source, source_port))
        s.settimeout(10)
        s.connect(("127.0.0.1", port))
        if data:
            s.sendall(data)


class _Recorder:
    def __init__(self) -> None:
        self.events: list[str] = []
        self.lock = threading.Lock()

    def __call__(self, name: str) -> None:
        with self.lock:
            self.events.append(name)


def _sample(reg: CollectorRegistry, name: str, **labels: str) -> float:
    return reg.get_sample_value(name, labels) or 0.0


def test_only_what_pbs_server_sends_is_a_command():
    assert [server_command(struct.pack("!I", c)) for c in (1, 2, 3, 4, 5, 10)] == [
        "new", "term", "time", "recycle", "command", "first"]
    assert all(server_command(j) is None for j in JUNK)


def test_a_flood_of_junk_and_idle_connections_does_not_stall_pbs_servers_events():
    """1,000 junk contacts and 30 idle connections from a user beside 20 real contacts: every
    real one is handled while the idle ones are still open, and each junk one is refused and
    counted (before, any 4 bytes were an event, and 20-26 idle connections blocked the
    single-threaded listener for minutes)."""
    reg = CollectorRegistry()
    metrics = Metrics(reg)
    got = _Recorder()
    lst = SchedulerListener(("127.0.0.1", 0), on_event=got, rule=ContactRule(LOOPBACK, reserved_port=False),
                            on_contact=metrics.event_contact, deadline=60.0).start()
    idle = []
    try:
        for _ in range(30):
            idle.append(socket.create_connection(("127.0.0.1", lst.port), timeout=10))
        stop = threading.Event()
        sent_junk = [0]

        def flood() -> None:
            for i in range(1000):
                if stop.is_set():
                    return
                try:
                    _send(lst.port, JUNK[i % len(JUNK)])
                except OSError:
                    continue  # a contact reset by the listener's close is still a refused one
                sent_junk[0] += 1
        flooder = threading.Thread(target=flood)
        flooder.start()
        real = [1, 2, 3, 10] * 5
        for code in real:
            _send(lst.port, struct.pack("!I", code))
            time.sleep(0.005)
        assert _wait(lambda: len(got.events) == len(real)), got.events
        assert lst.counts["timeout"] == 0  # handled while the 30 idle ones were all still open
        flooder.join(120)
        assert not flooder.is_alive()
        assert _wait(lambda: lst.counts["malformed"] == sent_junk[0]), (lst.counts, sent_junk)
        assert sent_junk[0] > 900
        assert sorted(got.events) == sorted(["new", "term", "time", "first"] * 5)  # no junk among them
        assert _sample(reg, "mysched_event_contacts_total") == len(real)
        assert _sample(reg, "mysched_event_contacts_refused_total", reason="malformed") == sent_junk[0]
    finally:
        for s in idle:
            s.close()
        lst.close()


def test_a_flood_is_logged_once_per_address_and_reason(caplog):
    caplog.set_level(logging.DEBUG, logger="mysched")
    lst = SchedulerListener(("127.0.0.1", 0), rule=ContactRule(LOOPBACK)).start()
    try:
        for _ in range(50):
            _send(lst.port, b"junk")
        assert _wait(lambda: lst.counts["malformed"] == 50)
    finally:
        lst.close()
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING and "refused" in r.getMessage()]
    assert len(warnings) == 1 and "not a pbs_server scheduler command" in warnings[0].getMessage()


def test_idle_contacts_time_out_and_are_counted():
    reg = CollectorRegistry()
    metrics = Metrics(reg)
    lst = SchedulerListener(("127.0.0.1", 0), rule=ContactRule(LOOPBACK), on_contact=metrics.event_contact,
                            deadline=0.3).start()
    idle = [socket.create_connection(("127.0.0.1", lst.port), timeout=10) for _ in range(3)]
    try:
        assert _wait(lambda: lst.counts["timeout"] == 3)
        assert idle[0].recv(1) == b""  # closed by the listener
        assert _sample(reg, "mysched_event_contacts_refused_total", reason="timeout") == 3
    finally:
        for s in idle:
            s.close()
        lst.close()


def test_open_contacts_are_bounded_the_oldest_dropped():
    got = _Recorder()
    lst = SchedulerListener(("127.0.0.1", 0), on_event=got, rule=ContactRule(LOOPBACK), deadline=60.0,
                            max_open=5).start()
    idle = []
    try:
        for _ in range(8):
            idle.append(socket.create_connection(("127.0.0.1", lst.port), timeout=10))
        assert _wait(lambda: lst.counts["dropped"] == 3)
        assert idle[0].recv(1) == b""  # the oldest went first
        _send(lst.port, struct.pack("!I", 1))
        assert _wait(lambda: got.events == ["new"])
    finally:
        for s in idle:
            s.close()
        lst.close()


def test_contacts_from_outside_the_allow_list_are_refused_and_counted():
    """An allow-list without 127.0.0.1 refuses a well-formed contact from it (issue #32: a
    contact from another address is refused and counted); one with it accepts."""
    reg = CollectorRegistry()
    metrics = Metrics(reg)
    got = _Recorder()
    rule = contact_rule("pbs.example", ["10.0.0.0/8", "pbs.example"], False, resolver=lambda h: ["192.0.2.7"],
                        local_names=lambda: (), server_uid=lambda: None)
    lst = SchedulerListener(("127.0.0.1", 0), on_event=got, rule=rule, on_contact=metrics.event_contact).start()
    try:
        for _ in range(3):
            _send(lst.port, struct.pack("!I", 1))
        assert _wait(lambda: lst.counts["address"] == 3)
        assert got.events == []
        assert _sample(reg, "mysched_event_contacts_refused_total", reason="address") == 3
        assert _sample(reg, "mysched_event_contacts_total") == 0
    finally:
        lst.close()
    rule = contact_rule("pbs.example", ["10.0.0.0/8", "127.0.0.1"], False, resolver=lambda h: ["192.0.2.7"],
                        local_names=lambda: (), server_uid=lambda: None)
    lst = SchedulerListener(("127.0.0.1", 0), on_event=got, rule=rule, on_contact=metrics.event_contact).start()
    try:
        _send(lst.port, struct.pack("!I", 2))
        assert _wait(lambda: got.events == ["term"])
        assert _sample(reg, "mysched_event_contacts_total") == 1
    finally:
        lst.close()


def test_on_one_listener_a_contact_from_another_address_is_refused_and_pbs_servers_accepted():
    """pbs_server's host is 127.0.0.1 (daemon.event_allow); a user on 127.0.0.2 -- another
    address of the loopback network -- sends the same command to the same port: refused,
    counted by reason, no cycle brought forward; pbs_server's contact still counts."""
    reg = CollectorRegistry()
    metrics = Metrics(reg)
    got = _Recorder()
    rule = contact_rule("pbs.example", ["127.0.0.1"], False, resolver=lambda h: ["192.0.2.7"],
                        local_names=lambda: (), server_uid=lambda: None)
    lst = SchedulerListener(("127.0.0.1", 0), on_event=got, rule=rule, on_contact=metrics.event_contact).start()
    try:
        _send(lst.port, struct.pack("!I", 1), source="127.0.0.2")
        assert _wait(lambda: lst.counts["address"] == 1)
        _send(lst.port, struct.pack("!I", 1))
        assert _wait(lambda: got.events == ["new"])
        assert _sample(reg, "mysched_event_contacts_refused_total", reason="address") == 1
        assert _sample(reg, "mysched_event_contacts_total") == 1
    finally:
        lst.close()


def test_a_contact_from_an_unprivileged_port_is_refused_when_pbs_server_runs_as_root():
    reg = CollectorRegistry()
    metrics = Metrics(reg)
    got = _Recorder()
    lst = SchedulerListener(("127.0.0.1", 0), on_event=got, rule=ContactRule(LOOPBACK, reserved_port=True),
                            on_contact=metrics.event_contact).start()
    try:
        _send(lst.port, struct.pack("!I", 1))
        assert _wait(lambda: lst.counts["port"] == 1)
        assert got.events == []
        assert _sample(reg, "mysched_event_contacts_refused_total", reason="port") == 1
        if os.geteuid() == 0:  # as pbs_server: from a reserved port
            for port in range(1023, 600, -1):
                try:
                    _send(lst.port, struct.pack("!I", 1), source_port=port)
                    break
                except OSError:
                    continue
            assert _wait(lambda: got.events == ["new"])
    finally:
        lst.close()


def _rule(server: str, addrs: dict[str, list[str]], uid: int | None = None, start: int = 1024,
          **kw) -> ContactRule:
    def resolver(host: str) -> list[str]:
        if host not in addrs:
            raise OSError("Name or service not known")
        return addrs[host]
    return contact_rule(server, resolver=resolver, local_names=lambda: ("me",), server_uid=lambda: uid,
                        port_start=lambda: start, **kw)


def test_by_default_the_servers_own_host_and_loopback_when_it_runs_here():
    here = {"me": ["10.1.0.5"], "pbs": ["10.1.0.5"], "localhost": ["127.0.0.1", "::1"], "far": ["10.2.0.9"]}
    local = _rule("pbs", here, uid=0)
    assert local.refusal("127.0.0.1", 800) is None and local.refusal("::1", 800) is None
    assert local.refusal("10.1.0.5", 800) is None and local.refusal("10.1.0.6", 800) == "address"
    assert local.refusal("10.1.0.5", 40000) == "port"  # pbs_server runs here as root
    assert _rule("", here, uid=0).refusal("10.1.0.5", 800) is None  # the default server: this host
    remote = _rule("far", here, uid=0)  # a pbs_server here is not the one configured
    assert remote.refusal("10.2.0.9", 800) is None
    assert remote.refusal("127.0.0.1", 800) == "address" and remote.refusal("10.1.0.5", 800) == "address"
    assert remote.reserved_port  # as a standard build sends


def test_reserved_ports_are_not_required_of_a_server_seen_running_as_another_user():
    here = {"me": ["10.1.0.5"], "localhost": ["127.0.0.1"]}
    assert not _rule("localhost", here, uid=1000).reserved_port  # only --disable-privports works so
    assert _rule("localhost", here, uid=None).reserved_port  # not running yet: as root it would
    assert not _rule("localhost", here, uid=0, reserved_port=False).reserved_port  # the admin decides
    assert _rule("localhost", here, uid=1000, reserved_port=True).reserved_port


def test_a_kernel_letting_users_bind_low_ports_is_named(caplog):
    here = {"me": ["10.1.0.5"], "localhost": ["127.0.0.1"]}
    assert _rule("localhost", here, uid=0, start=0).reserved_port
    assert "net.ipv4.ip_unprivileged_port_start is 0 on this host" in caplog.text


def test_an_allow_list_replaces_the_default(caplog):
    here = {"me": ["10.1.0.5"], "localhost": ["127.0.0.1"], "head2": ["10.1.0.6"]}
    rule = _rule("localhost", here, allow=["head2", "192.168.0.0/16", "nowhere"], reserved_port=False)
    assert rule.networks == (ipaddress.ip_network("10.1.0.6/32"), ipaddress.ip_network("192.168.0.0/16"))
    assert rule.refusal("127.0.0.1", 800) == "address" and rule.refusal("192.168.3.4", 40000) is None
    assert "daemon.event_allow: host nowhere does not resolve" in caplog.text
    with pytest.raises(OSError, match="no address of daemon.event_allow resolves"):
        _rule("localhost", here, allow=["nowhere"])
    with pytest.raises(OSError, match="name the addresses to accept contacts from in daemon.event_allow"):
        _rule("unknown", here)


def test_the_uid_of_the_pbs_server_running_here_is_read_from_proc(tmp_path):
    from mysched.backends.torque.home import running_server_uid

    proc = tmp_path / "proc"
    for pid, comm, uid in ((7, "bash", 0), (12, "pbs_server", 1000)):
        (proc / str(pid)).mkdir(parents=True)
        (proc / str(pid) / "comm").write_text(comm + "\n")
        (proc / str(pid) / "status").write_text(f"Name:\t{comm}\nUid:\t{uid}\t{uid}\t{uid}\t{uid}\n")
    assert running_server_uid(str(proc)) == 1000
    (proc / "12" / "comm").write_text("pbs_mom\n")
    assert running_server_uid(str(proc)) is None
    assert running_server_uid(str(tmp_path / "none")) is None
