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


def test_a_cycle_that_raises_is_logged_counted_and_followed_by_the_next(monkeypatch, caplog):
    """A bug in the planner must not stop scheduling: the loop logs it (traceback once),
    counts it, backs off, pings no watchdog for it, and schedules again."""
    import threading

    from mysched.daemon import cycle as cycle_mod
    from mysched.daemon import sdnotify
    from mysched.daemon.metrics import Metrics
    from mysched.daemon.service import Service

    from .test_daemon import make

    real_plan = cycle_mod.plan
    calls = {"n": 0}

    def buggy(*a, **kw):
        calls["n"] += 1
        if calls["n"] <= 3:
            raise KeyError("vo")
        return real_plan(*a, **kw)

    monkeypatch.setattr(cycle_mod, "plan", buggy)
    pings = []
    monkeypatch.setattr(sdnotify, "watchdog", lambda: pings.append(1))
    metrics = Metrics()
    d, server, farm = make(metrics=metrics)
    server.speed = 1000.0  # back-off delays scaled down: milliseconds
    svc = Service(d)
    caplog.set_level("ERROR", logger="mysched")
    t = threading.Thread(target=svc.run, daemon=True)
    t.start()
    try:
        assert wait_for(lambda: svc.cycles >= 4 and svc.last is not None and svc.last.result == "ok", timeout=30)
    finally:
        svc.stop()
        t.join(10)
    assert metrics.cycle_errors.labels("internal")._value.get() == 3
    assert metrics.cycles.labels("crash")._value.get() == 3
    tracebacks = [r for r in caplog.records if r.exc_info is not None]
    assert len(tracebacks) == 1 and "KeyError" in str(tracebacks[0].exc_info[1].__class__)
    assert sum("crashed again" in r.getMessage() for r in caplog.records) == 2
    assert len(pings) == svc.cycles - 3  # only completed cycles ping the watchdog
    assert any(j.state.value == "R" for j in farm.jobs.values())  # and it scheduled after all


def test_sigterm_during_start_up_exits_cleanly_and_says_so(tmp_path):
    """A daemon stopped while still starting (here: waiting for the first reading of a load
    source whose command hangs; a configuration that is a pipe nobody writes is refused now)."""
    mark = tmp_path / "reading"
    cfg = tmp_path / "slow.cfg"
    cfg.write_text(CFG + f'load_sources = {{ slow = {{ type = "command"; timeout = 20; '
                         f'command = ["/bin/sh", "-c", "touch {mark}; sleep 30"]; }}; }};\n')
    script = Path(sys.executable).parent / "mysched"
    proc = subprocess.Popen([str(script), "run", "-c", str(cfg), "--server", "sim://", "--no-db",
                             "--metrics-address", "off", "--state-dir", str(tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert wait_for(mark.exists, timeout=30)  # now it waits for the source's first reading
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, out
    assert "signal SIGTERM during start-up: exiting" in out and "Traceback" not in out
