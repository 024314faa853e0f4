"""A pbs_server that keeps its connections open but answers nothing must not hold the daemon
in pbs_disconnect (seen live: TORQUE 6.1-dev deadlocked, and the daemon's cycle thread sat in
pbs_disconnect's read for 13 minutes, until pbs_server was killed). No TORQUE needed: the fake
IFL below opens a real TCP connection to a listener that never answers, and disconnects as
libtorque does -- a request, then a read until the server closes."""

from __future__ import annotations

import os
import socket
import threading
import time

import pytest

from mysched.backends.torque import connsocket
from mysched.backends.torque.backend import TorqueServer
from mysched.backends.torque.fake import FakeIFL
from mysched.errors import ServerTimeout

pytestmark = pytest.mark.skipif(not os.path.isdir(connsocket.FD_DIR), reason="needs /proc/self/fd")


class SilentServerIFL(FakeIFL):
    """Connects to `address` (a listener nobody accepts from); pbs_disconnect's read waits."""

    def __init__(self, address: tuple[str, int]) -> None:
        super().__init__(nodes=[("n1", {"state": "free", "np": "2"})], queues=[("q", {"queue_type": "Execution"})])
        self.address = address
        self.sock: socket.socket | None = None
        self.disconnect_returned = threading.Event()

    def connect(self, server):  # noqa: ANN001, ANN201
        self.connects += 1
        self.sock = socket.create_connection(self.address, timeout=5)
        self.sock.settimeout(None)  # libtorque's read in pbs_disconnect blocks
        return 1

    def disconnect(self, conn: int) -> None:
        self.disconnects += 1
        try:
            self.sock.sendall(b"disconnect")
            while self.sock.recv(4096):  # until the server closes the connection
                pass
        except OSError:
            pass
        self.sock.close()
        self.disconnect_returned.set()


@pytest.fixture
def silent_server():
    listener = socket.create_server(("127.0.0.1", 0), backlog=8)
    try:
        yield listener.getsockname()[:2]
    finally:
        listener.close()  # resets a connection it never accepted: a blocked read ends


def _in_thread(fn) -> tuple[threading.Thread, list]:  # noqa: ANN001
    out: list = []

    def run() -> None:
        try:
            out.append(fn())
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            out.append(exc)
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, out


def test_a_timed_out_call_does_not_hang_in_pbs_disconnect(silent_server):
    ifl = SilentServerIFL(silent_server)
    srv = TorqueServer(ifl=ifl, timeout=1)
    srv.snapshot()  # connected
    ifl.fail_stat = [15085]  # the next call runs into the timeout (the server hangs)
    t, out = _in_thread(srv.snapshot)  # the daemon calls from a worker thread, too
    t.join(5)
    assert not t.is_alive(), "snapshot() hung in pbs_disconnect"
    assert isinstance(out[0], ServerTimeout) and srv.conn is None and ifl.disconnect_returned.is_set()


def test_an_orderly_disconnect_waits_only_the_grace_period(silent_server, monkeypatch):
    monkeypatch.setattr(connsocket, "GRACE", 0.3)
    ifl = SilentServerIFL(silent_server)
    srv = TorqueServer(ifl=ifl)
    srv.snapshot()
    t0 = time.monotonic()
    t, _ = _in_thread(srv.close)
    t.join(5)
    assert not t.is_alive(), "close() hung in pbs_disconnect"
    assert 0.25 <= time.monotonic() - t0 < 3 and ifl.disconnects == 1


def test_a_descriptor_reused_for_another_socket_is_not_touched():
    a, b = socket.socketpair()
    try:
        st = os.fstat(a.fileno())
        ident = (a.fileno(), st.st_dev, st.st_ino + 1)  # "the connection's socket" was another one
        called = []
        connsocket.disconnect(ident, lambda: called.append(1), lost=True)
        assert called == [1]
        b.sendall(b"x")
        assert a.recv(1) == b"x"  # a was not shut down
    finally:
        a.close()
        b.close()


def test_a_connect_that_opened_no_socket_or_several_is_not_remembered():
    before = connsocket.open_sockets()
    assert connsocket.new_socket(before) is None
    a, b = socket.socketpair()
    try:
        assert connsocket.new_socket(before) is None  # two new sockets: which is it?
        assert connsocket.new_socket(None) is None
    finally:
        a.close()
        b.close()
