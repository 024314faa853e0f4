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


def test_a_server_that_stops_answering_during_starts_ends_the_starts(local_server_pid, tmp_path):
    """pbs_server is stopped at the cycle's first pbs_runjob: that call and the re-read of its
    job get no answer, the rest of the plan waits (before, the next start was tried too),
    and once the server answers again the job is looked at before it is started -- once."""
    from mysched.backends.torque.backend import TorqueServer
    from mysched.config import config_from_text
    from mysched.core.model.batch import JobState
    from mysched.daemon.cycle import Daemon
    from mysched.history.store import Store

    from .test_torque_live import delete_now, qsub, quiet_four_core_farm

    try:
        srv = TorqueServer(HOST, timeout=2)
        quiet_four_core_farm(srv)
    except MyschedError as exc:
        pytest.skip(f"pbs_server not usable: {exc}")
    ids = [qsub(u, q, "nodes=1:ppn=1,walltime=00:05:00", seconds=5)
           for u, q in (("alice", "atlas"), ("carol", "cms"), ("bob", "atlas"))]
    tried: list[str] = []
    real = srv.run_job

    def run_job(job_id, placement):
        tried.append(job_id)
        if len(tried) == 1:
            os.kill(local_server_pid, signal.SIGSTOP)
        return real(job_id, placement)
    srv.run_job = run_job
    cfg = config_from_text('vos = { atlas = { groups = ["atlas"]; share = 50; }; '
                           'cms = { groups = ["cms"]; share = 50; }; };')
    d = Daemon(cfg, srv, store=Store(f"sqlite:///{tmp_path}/h.db"), state_dir="")
    try:
        out = d.cycle()
    finally:
        os.kill(local_server_pid, signal.SIGCONT)
    try:
        assert len(tried) == 1 and out.result == "partial" and out.failures == {"timeout": 1}, (tried, out.error)
        assert d._uncertain == {tried[0]} and d.store.open_intents() == []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            out = d.cycle()
            if out.result == "ok" and not d._uncertain:
                break
            time.sleep(1)
        assert out.result == "ok" and not d._uncertain, out.error
        states = {j.id: j.state for j in srv.snapshot().jobs if j.id in ids}
        assert all(s != JobState.QUEUED for s in states.values()), states
        assert tried.count(tried[0]) <= 2  # tried again only after a look that found it queued
    finally:
        delete_now(ids)
        srv.close()
