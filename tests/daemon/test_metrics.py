"""Metrics exposition and what each series means on a leader, a standby and after a failed cycle;
sd_notify and the systemd unit."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
import urllib.request

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from mysched.daemon import sdnotify
from mysched.errors import ServerUnavailable, UsageError
from mysched.daemon import metrics as metrics_module
from mysched.daemon.endpoint import parse_address, serve_metrics
from mysched.daemon.metrics import Metrics

from ..conftest import REPO


def scrape(port: int) -> str:
    return urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()


def test_metrics_served_over_http_with_values():
    m = Metrics(CollectorRegistry())
    _, port = serve_metrics(m.registry, "127.0.0.1:0")
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
    assert 'mysched_pending_jobs{reason="vo_limit"} 0.0' in text  # every reason listed: 0 when none waits
    assert 'mysched_pending_jobs{reason="no_free_slot"} 1.0' in text and "running_jobs{" not in text


def test_bad_metrics_address():
    with pytest.raises(UsageError, match="HOST:PORT"):
        parse_address("localhost")
    assert parse_address("[::1]:9720") == ("::1", 9720)
    with pytest.raises(UsageError, match="cannot serve metrics"):  # not an address of this host
        serve_metrics(Metrics(CollectorRegistry()).registry, "192.0.2.1:9720")


def test_a_metrics_address_in_use_is_taken_once_it_is_free(caplog):
    """A second daemon on the host (a standby with the same configuration) refused to start
    ('cannot serve metrics on 127.0.0.1:9720: Address already in use'): it schedules on and
    binds when the address frees."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(1)
    port = s.getsockname()[1]
    m = Metrics(CollectorRegistry())
    try:
        assert serve_metrics(m.registry, f"127.0.0.1:{port}", retry=0.1) == ("127.0.0.1", 0)
        assert "Address already in use" in caplog.text and "tried every 0.1 s" in caplog.text
    finally:
        s.close()
    for _ in range(100):
        try:
            text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2).read().decode()
            break
        except OSError:
            time.sleep(0.1)
    else:
        pytest.fail("the metrics address was never taken")
    assert "mysched_cycles_total" in text


def test_a_run_once_whose_metrics_address_is_in_use_says_it_serves_none(tmp_path, caplog):
    # (live walk-through) `run --once` beside the daemon logged an ERROR that the address 'is
    # tried every 30 s', for a run that ends after its cycle
    from mysched.cli.main import main

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(1)
    try:
        port = s.getsockname()[1]
        assert main(["run", "--once", "--no-db", "--state-dir", str(tmp_path), "--server", "sim://?nodes=2",
                     "--metrics-address", f"127.0.0.1:{port}", "--event-address", "off"]) == 0
    finally:
        s.close()
    said = [r for r in caplog.records if f"127.0.0.1:{port}" in r.getMessage()]
    assert said and all(r.levelname == "WARNING" and "tried every" not in r.getMessage() for r in said), caplog.text
    assert "metrics not served" in caplog.text


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


def farm(m: Metrics, running: dict, **kw) -> None:
    m.set_farm_state(running_by_vo=running, queued_by_vo={}, used_slots_by_vo=running, total_slots=10,
                     used_slots=sum(running.values()), share_target_by_vo={}, share_achieved_by_vo={},
                     pending_by_reason={}, **kw)


def test_standby_polls_and_crashes_are_not_timed_cycles_nor_successes():
    m = Metrics(CollectorRegistry())
    value = m.registry.get_sample_value
    m.observe_cycle(0.0, "standby")  # a standby's try of the lock: no cycle ran
    m.observe_cycle(0.0, "crash")  # raised: its duration was never measured
    assert value("mysched_cycle_duration_seconds_count") == 0
    assert value("mysched_cycles_total", {"result": "standby"}) == 1
    assert value("mysched_last_successful_cycle_timestamp_seconds") == 0
    m.observe_cycle(0.02, "ok")
    m.observe_cycle(3.0, "error")  # a failed read still took its time
    assert value("mysched_cycle_duration_seconds_count") == 2
    ok_at = value("mysched_last_successful_cycle_timestamp_seconds")
    assert ok_at > 0
    m.observe_cycle(0.0, "standby")
    assert value("mysched_last_successful_cycle_timestamp_seconds") == ok_at


def test_a_daemon_that_stands_by_drops_its_farm_and_load_figures():
    m = Metrics(CollectorRegistry())
    value = m.registry.get_sample_value
    m.set_role(True)
    farm(m, {"atlas": 4}, draining=2)
    m.set_loads({"se": (0.9, 5.0, False, False)}, {"r": 0.5})
    assert value("mysched_farm_slots") == 10 and value("mysched_running_jobs", {"vo": "atlas"}) == 4
    m.set_role(False)
    for name, labels in (("mysched_farm_slots", {}), ("mysched_farm_used_slots", {}),
                         ("mysched_draining_nodes", {}), ("mysched_running_jobs", {"vo": "atlas"}),
                         ("mysched_load_value", {"source": "se"}), ("mysched_load_throttle_factor", {"rule": "r"})):
        assert value(name, labels) is None, name
    text = generate_latest(m.registry).decode()
    assert "# TYPE mysched_farm_slots gauge" in text and "\nmysched_farm_slots " not in text
    assert value("mysched_leader") == 0


def test_a_scrape_during_an_update_sees_the_previous_cycle_whole():
    m = Metrics(CollectorRegistry())
    farm(m, {"atlas": 4, "cms": 3})
    seen = []

    class Peeking(dict):
        def items(self):  # the server thread scrapes while the cycle thread updates
            seen.append(m.registry.get_sample_value("mysched_running_jobs", {"vo": "cms"}))
            return super().items()
    farm(m, Peeking(atlas=5, cms=2))
    assert seen and all(v == 3 for v in seen), seen
    assert m.registry.get_sample_value("mysched_running_jobs", {"vo": "cms"}) == 2


def test_known_label_values_start_at_zero():
    """A series born at 1 shows no increase: rate() and increase() miss the first failure."""
    m = Metrics(CollectorRegistry())
    value = m.registry.get_sample_value
    from mysched.core.model.reasons import START_REASONS
    from mysched.daemon.cycle import FAILURE_REASONS
    assert set(FAILURE_REASONS.values()) | {"unavailable", "error"} <= set(metrics_module.START_FAILURES)
    assert set(metrics_module.START_REASONS) <= set(START_REASONS)
    for reason in metrics_module.START_FAILURES:
        assert value("mysched_job_start_failures_total", {"reason": reason}) == 0
    for call in ("snapshot", "runjob"):
        assert value("mysched_server_call_errors_total", {"call": call}) == 0
    farm(m, {"atlas": 1})
    for reason in ("hot", "share", "fairshare"):
        assert value("mysched_jobs_started_total", {"vo": "atlas", "reason": reason}) == 0


def test_buckets_resolve_a_simulated_cycle_a_large_farms_and_short_phases():
    cycle, phase = metrics_module.CYCLE_BUCKETS, metrics_module.PHASE_BUCKETS
    assert sum(b < .01 for b in cycle) >= 2  # a 10 ms cycle (the simulator) is not in the first bucket
    assert sum(.05 <= b <= 2.5 for b in cycle) >= 5 and cycle[-1] >= 300  # ~1 s at 10,000 slots; a hang
    assert sum(b <= .005 for b in phase) >= 3 and phase[-1] >= 60  # phases of a millisecond, and a slow read


def test_failed_cycles_keep_the_last_figures_and_the_standby_drops_them(tmp_path):
    from .test_standby import pair

    daemons, server, _farm, _ = pair(tmp_path)
    (a, ma), (b, mb) = daemons["a"], daemons["b"]
    value = ma.registry.get_sample_value
    assert a.cycle().result == "ok"
    at = value("mysched_last_successful_cycle_timestamp_seconds")
    assert value("mysched_farm_slots") == 8 and value("mysched_farm_used_slots") == 6
    assert b.cycle().result == "standby"
    assert mb.registry.get_sample_value("mysched_farm_slots") is None
    assert mb.registry.get_sample_value("mysched_cycle_duration_seconds_count") == 0
    assert mb.registry.get_sample_value("mysched_last_successful_cycle_timestamp_seconds") == 0
    server.down = True
    assert a.cycle().result == "error"  # the figures stay, dated by the last success
    assert value("mysched_farm_used_slots") == 6 and value("mysched_last_successful_cycle_timestamp_seconds") == at
    server.down = False
    a.role.lead._close()  # a loses its lock; b takes over; a stands by
    assert b.cycle().result == "ok" and a.cycle().result == "standby"
    assert value("mysched_farm_slots") is None and value("mysched_running_jobs", {"vo": "atlas"}) is None
    assert mb.registry.get_sample_value("mysched_farm_slots") == 8
