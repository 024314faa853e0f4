"""Metrics exposition, the Grafana dashboard's names, sd_notify and the systemd unit."""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import urllib.request

import pytest
from prometheus_client import CollectorRegistry

from mysched.daemon import sdnotify
from mysched.errors import ServerUnavailable, UsageError
from mysched.daemon.metrics import Metrics, parse_address, serve

from ..conftest import REPO


def scrape(port: int) -> str:
    return urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()


def test_metrics_served_over_http_with_values():
    m = Metrics(CollectorRegistry())
    _, port = serve(m, "127.0.0.1:0")
    m.observe_cycle(0.3, "ok")
    m.record_start("atlas", "share")
    m.record_start_failure("refused")
    m.set_farm_state(running_by_vo={"atlas": 5}, queued_by_vo={"atlas": 7}, used_slots_by_vo={"atlas": 5},
                     total_slots=10, used_slots=5, share_target_by_vo={"atlas": 0.3},
                     share_achieved_by_vo={"atlas": 0.5}, pending_by_reason={"vo_limit": 3})
    with pytest.raises(ServerUnavailable):
        with m.time_call("statjob"):
            raise ServerUnavailable("down")
    text = scrape(port)
    assert 'mysched_cycles_total{result="ok"} 1.0' in text
    assert 'mysched_jobs_started_total{reason="share",vo="atlas"} 1.0' in text
    assert 'mysched_running_jobs{vo="atlas"} 5.0' in text
    assert 'mysched_pending_jobs{reason="vo_limit"} 3.0' in text
    assert 'mysched_server_call_errors_total{call="statjob"} 1.0' in text
    assert "mysched_cycle_duration_seconds_bucket" in text and "mysched_build_info" in text
    # a reason that disappears is dropped
    m.set_farm_state(running_by_vo={}, queued_by_vo={}, used_slots_by_vo={}, total_slots=10, used_slots=0,
                     share_target_by_vo={}, share_achieved_by_vo={}, pending_by_reason={"no_free_slot": 1})
    text = scrape(port)
    assert "vo_limit" not in text and 'mysched_pending_jobs{reason="no_free_slot"} 1.0' in text


def test_bad_metrics_address():
    with pytest.raises(UsageError, match="HOST:PORT"):
        parse_address("localhost")
    assert parse_address("[::1]:9720") == ("::1", 9720)
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(1)
    try:
        with pytest.raises(UsageError, match="cannot serve metrics"):
            serve(Metrics(CollectorRegistry()), f"127.0.0.1:{s.getsockname()[1]}")
    finally:
        s.close()


def test_dashboard_uses_only_metrics_that_exist():
    m = Metrics(CollectorRegistry())
    names = set()
    for metric in m.registry.collect():
        names.add(metric.name)
        suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_count", "_sum"), "info": ("_info",)}
        names |= {metric.name + s for s in suffixes.get(metric.type, ())}
    dash = json.loads((REPO / "tools" / "grafana" / "mysched.json").read_text())
    used = set()
    for panel in dash["panels"]:
        for t in panel["targets"]:
            used |= set(re.findall(r"mysched_[a-z_]+", t["expr"]))
    assert used and used <= names, used - names


def test_sd_notify_messages(tmp_path, monkeypatch):
    path = str(tmp_path / "notify")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    sock.settimeout(2)
    monkeypatch.setenv("NOTIFY_SOCKET", path)
    try:
        assert sdnotify.ready("cycle ok")
        assert sock.recv(1024) == b"READY=1\nSTATUS=cycle ok"
        sdnotify.watchdog()
        assert sock.recv(1024) == b"WATCHDOG=1"
        sdnotify.stopping()
        assert sock.recv(1024) == b"STOPPING=1"
    finally:
        sock.close()
    monkeypatch.delenv("NOTIFY_SOCKET")
    assert sdnotify.ready() is False  # not under systemd: a no-op


@pytest.mark.skipif(not shutil.which("systemd-analyze"), reason="systemd-analyze not installed")
def test_systemd_unit_verifies_and_keeps_torque_reachable(tmp_path):
    import sys
    text = (REPO / "systemd" / "mysched.service").read_text()
    assert "Type=notify" in text and "PrivateTmp=no" in text and "StateDirectory=mysched" in text
    assert "AF_UNIX AF_INET AF_INET6" in text and "ExecReload=/bin/kill -HUP $MAINPID" in text
    from pathlib import Path
    script = Path(sys.executable).parent / "mysched"  # the console script of this environment
    assert script.exists()
    unit = tmp_path / "mysched.service"
    unit.write_text(text.replace("/opt/mysched/bin/mysched", str(script)))
    res = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert "mysched.service" not in res.stderr, res.stderr
