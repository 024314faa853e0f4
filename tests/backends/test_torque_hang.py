"""Against a live pbs_server (marked `torque`; skipped when none answers): a pbs_server that
keeps its connections but answers nothing (stopped with SIGSTOP for a few seconds, as a
deadlocked one behaves) costs a call its timeout, and the call returns -- from a worker
thread, as the daemon makes it. Before, pbs_disconnect's read held the thread until
pbs_server went away. Needs root and a pbs_server on this host; it is continued afterwards.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
import time

import pytest

from mysched.errors import MyschedError, ServerTimeout

pytestmark = pytest.mark.torque

HOST = os.environ.get("MYSCHED_TORQUE_SERVER") or None


@pytest.fixture
def local_server_pid():
    if HOST not in (None, "localhost", "127.0.0.1", socket.gethostname()):
        pytest.skip("pbs_server is not on this host")
    try:
        socket.create_connection(("127.0.0.1", 15001), timeout=1).close()
    except OSError:
        pytest.skip("no pbs_server answers on 127.0.0.1:15001")
    if os.geteuid() != 0:
        pytest.skip("stopping pbs_server needs root")
    pids = subprocess.run(["pgrep", "-x", "pbs_server"], capture_output=True, text=True).stdout.split()
    if len(pids) != 1:
        pytest.skip(f"expected one pbs_server process, found {len(pids)}")
    return int(pids[0])


def test_a_hung_pbs_server_costs_the_timeout_not_the_thread(local_server_pid):
    from mysched.backends.torque.backend import TorqueServer

    try:
        srv = TorqueServer(HOST, timeout=3)
        srv.snapshot()
    except MyschedError as exc:
        pytest.skip(f"pbs_server not usable: {exc}")
    out: dict = {}

    def cycle() -> None:
        t0 = time.monotonic()
        try:
            srv.snapshot()
        except Exception as exc:  # noqa: BLE001 - handed to the test
            out["exc"] = exc
        out["s"] = time.monotonic() - t0

    os.kill(local_server_pid, signal.SIGSTOP)
    try:
        t = threading.Thread(target=cycle, daemon=True)
        t.start()
        t.join(15)
        hung = t.is_alive()
    finally:
        os.kill(local_server_pid, signal.SIGCONT)
    t.join(30)  # without the fix the thread ends only now, when pbs_server answers again
    assert not hung, "the call was still in pbs_disconnect 15 s after a 3 s timeout"
    assert isinstance(out.get("exc"), ServerTimeout) and out["s"] < 8, out
    srv.snapshot()  # and the next call connects again
    srv.close()
