"""The daemon as a process: `mysched run --server sim://`, SIGHUP with a bad file, SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from ..conftest import REPO

CFG = (REPO / "etc" / "mysched.cfg").read_text()


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_for(pred, timeout=20.0):
    end = time.time() + timeout
    while time.time() < end:
        if pred():
            return True
        time.sleep(0.1)
    return False


def test_daemon_runs_reloads_and_stops_cleanly(tmp_path):
    cfg = tmp_path / "mysched.cfg"
    cfg.write_text(CFG)
    state = tmp_path / "state"
    port = free_port()
    notify = tmp_path / "notify"
    nsock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    nsock.bind(str(notify))
    nsock.settimeout(20)
    env = dict(os.environ, NOTIFY_SOCKET=str(notify))
    script = Path(sys.executable).parent / "mysched"
    proc = subprocess.Popen(
        [str(script), "run", "-c", str(cfg), "--server", "sim://?nodes=10&slots=4&speed=600&hours=6",
         "--state-dir", str(state), "--db", f"sqlite:///{tmp_path}/h.db", "--metrics-address", f"127.0.0.1:{port}",
         "--event-address", "off"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    try:
        assert nsock.recv(4096).startswith(b"READY=1")
        status = state / "status.json"
        assert wait_for(status.exists)
        first = json.loads(status.read_text())["published"]
        assert wait_for(lambda: json.loads(status.read_text())["published"] > first)
        metrics = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
        assert 'mysched_cycles_total{result="ok"}' in metrics
        # a broken file on reload is rejected and the daemon goes on
        cfg.write_text(CFG + "\nscheduler = { interval = 5; };\n")
        proc.send_signal(signal.SIGHUP)
        assert wait_for(lambda: 'mysched_config_reloads_total{result="error"} 1.0' in
                        urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode())
        before = json.loads(status.read_text())["published"]
        assert wait_for(lambda: json.loads(status.read_text())["published"] > before)
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
        assert proc.returncode == 0, out
        assert "configuration reload rejected" in out and "duplicate setting" in out
        assert "Traceback" not in out
    finally:
        if proc.poll() is None:
            proc.kill()
        nsock.close()


def test_run_once_against_an_unreachable_torque_fails_cleanly(tmp_path):
    script = Path(sys.executable).parent / "mysched"
    cfg = tmp_path / "c.cfg"
    cfg.write_text('server = { libtorque = "/nonexistent/libtorque.so.2"; };\n')
    res = subprocess.run([str(script), "run", "-c", str(cfg), "--once", "--no-db", "--metrics-address", "off",
                          "--state-dir", str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert res.returncode == 1
    assert "Traceback" not in res.stderr
    assert "libtorque" in res.stderr


def test_sigkill_at_any_instant_leaves_consistent_history(tmp_path):
    """Each cycle and its start attempts are one transaction: a killed daemon leaves no half cycle."""
    from sqlalchemy import create_engine, text
    script = Path(sys.executable).parent / "mysched"
    import sqlite3
    db = f"sqlite:///{tmp_path}/h.db"

    def cycles_recorded() -> int:
        try:
            with sqlite3.connect(f"file:{tmp_path}/h.db?mode=ro", uri=True, timeout=1) as c:
                return c.execute("SELECT count(*) FROM cycles").fetchone()[0]
        except sqlite3.Error:
            return 0  # not created yet, or locked for a moment

    for target in (6, 12):  # kill, then restart on the same database and kill again
        proc = subprocess.Popen(
            [str(script), "run", "--server", "sim://?nodes=20&slots=8&speed=3000&hours=24", "--state-dir",
             str(tmp_path / "state"), "--db", db, "--metrics-address", "off", "--event-address", "off"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # cycles follow each other without pause: killing once enough are recorded hits one mid-way
        assert wait_for(lambda: cycles_recorded() >= target, timeout=60)
        proc.kill()
        proc.wait()
    eng = create_engine(db)
    with eng.connect() as c:
        cycles = c.execute(text("SELECT id, n_started, n_failed FROM cycles")).all()
        assert len(cycles) > 5
        for cid, n_started, n_failed in cycles:
            n = c.execute(text("SELECT count(*) FROM starts WHERE cycle_id = :c"), {"c": cid}).scalar_one()
            assert n == n_started + n_failed
        assert c.execute(text("SELECT count(*) FROM finished_jobs")).scalar_one() > 0
    eng.dispose()
