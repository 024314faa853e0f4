"""The daemon runs on: a SIGHUP with a file that trips a bug, a bug after a cycle, an unwritable state directory."""

from __future__ import annotations

import threading
import time

from mysched.daemon import reload as reload_module
from mysched.daemon.service import Service

from .test_daemon import CFG, make

BAD_URL = CFG + 'load_sources = { s = { type = "prometheus"; url = "http://[::1"; query = "up"; }; };\n'


def test_a_prometheus_url_that_does_not_parse_is_a_config_error(tmp_path, caplog):
    """urlparse raises ValueError on an open bracket: that ended the daemon at a SIGHUP
    ('internal error: ValueError: Invalid IPv6 URL', exit 70)."""
    (tmp_path / "m.cfg").write_text(CFG)
    d, server, farm = make(config_path=str(tmp_path / "m.cfg"))
    before = d.config
    (tmp_path / "m.cfg").write_text(BAD_URL)
    assert d.reload() is False and d.config is before
    assert "load_sources.s.url: expected the Prometheus server's http(s)://HOST:PORT" in caplog.text


def _wait(pred, limit: float = 5.0) -> bool:
    end = time.monotonic() + limit
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.05)
    return False


def test_a_reload_that_raises_keeps_the_config_and_the_service_runs_on(tmp_path, monkeypatch, caplog):
    """A bug in reading the file (anything but a ConfigError) escaped the service's loop and
    ended the daemon."""
    (tmp_path / "m.cfg").write_text(CFG)
    d, server, farm = make(config_path=str(tmp_path / "m.cfg"))
    before = d.config

    def bug(path, running, slots=None):
        raise KeyError("a bug in building the configuration")
    monkeypatch.setattr("mysched.daemon.cycle.reread", bug)
    caplog.set_level("INFO", logger="mysched")
    svc = Service(d)
    t = threading.Thread(target=svc.run, daemon=True)
    t.start()
    try:
        assert _wait(lambda: svc.cycles >= 1)
        svc.request_reload()
        assert _wait(lambda: "a bug in building the configuration" in caplog.text or not t.is_alive())
        assert t.is_alive() and d.config is before
        monkeypatch.setattr("mysched.daemon.cycle.reread", reload_module.reread)
        svc.request_reload()  # the next good file is taken
        assert _wait(lambda: "configuration reloaded" in caplog.text) and d.config is not before
    finally:
        svc.stop()
        t.join(10)
    assert not t.is_alive()


def test_a_bug_after_a_cycle_does_not_stop_the_cycles_that_follow(tmp_path, monkeypatch, caplog):
    """An exception after the cycle itself (logging it, notifying systemd, working out the
    next delay) went to APScheduler, which scheduled nothing more: the daemon idled for good."""
    cfg = CFG + "scheduler = { interval = 1; min_interval = 1; };\n"
    d, server, farm = make(cfg_text=cfg)
    svc = Service(d)
    calls = {"n": 0}

    def after(out):
        calls["n"] += 1
        raise TypeError("a bug after the cycle")
    monkeypatch.setattr(svc, "_after_cycle", after)
    t = threading.Thread(target=svc.run, daemon=True)
    t.start()
    try:
        assert _wait(lambda: svc.cycles >= 3, 10), svc.cycles
    finally:
        svc.stop()
        t.join(10)
    assert "a bug after the cycle" in caplog.text


def test_an_unwritable_state_directory_is_logged_once_and_when_it_ends(tmp_path, monkeypatch, caplog):
    """Each cycle logged an error of its own (several a second when event-driven)."""
    import mysched.daemon.cycle as cycle_module

    d, server, farm = make(tmp_path=tmp_path)
    real = cycle_module.publish_status
    broken = {"on": True}

    def publish(state_dir, *a, **kw):
        if broken["on"]:
            raise PermissionError(13, "Permission denied", f"{state_dir}/.status.{len(caplog.records)}.tmp")
        return real(state_dir, *a, **kw)
    monkeypatch.setattr(cycle_module, "publish_status", publish)
    caplog.set_level("INFO", logger="mysched")
    for _ in range(3):
        assert d.cycle().result == "ok"
    errors = [r for r in caplog.records if "could not write the status file" in r.getMessage()
              and r.levelname == "ERROR"]
    assert len(errors) == 1
    broken["on"] = False
    d.cycle()
    assert "written again" in caplog.text and (tmp_path / "status.json").exists()


def test_a_restart_only_setting_is_reported_while_it_differs_from_what_runs(tmp_path, caplog):
    # An admin set metrics_address to 9721 and reloaded (told: restart needed), then put 9720
    # back and reloaded: told again that it changed, though 9720 ran all along; and a later
    # reload did not repeat that 9721 still waited for a restart.
    path = tmp_path / "m.cfg"
    path.write_text(CFG + 'daemon = { metrics_address = "127.0.0.1:9720"; };\n')
    from mysched.config import load_config

    d, server, farm = make(config_path=str(path))
    d.config = d._started_with = load_config(str(path))
    path.write_text(CFG + 'daemon = { metrics_address = "127.0.0.1:9721"; };\n')
    assert d.reload()
    assert caplog.text.count("daemon.metrics_address is '127.0.0.1:9721' in the file but '127.0.0.1:9720' runs") == 1
    assert d.reload()  # still waiting for a restart: said again
    assert caplog.text.count("daemon.metrics_address is '127.0.0.1:9721'") == 2
    caplog.clear()
    path.write_text(CFG + 'daemon = { metrics_address = "127.0.0.1:9720"; };\n')
    assert d.reload()
    assert "metrics_address" not in caplog.text


class _SchedulingOn:
    """The farm as pbs_server with scheduling = True reports it."""

    def __init__(self, server) -> None:
        self.inner = server

    def snapshot(self):
        import dataclasses

        snap = self.inner.snapshot()
        return dataclasses.replace(snap, extra={**snap.extra, "server": {"scheduling": "True"}})

    def __getattr__(self, name):
        return getattr(self.inner, name)


def test_no_event_while_jobs_come_and_go_is_said_once(caplog):
    # An admin copied event_address = "127.0.0.1:15004"; pbs_server contacts the address its
    # host name resolves to: no event ever came, and nothing said why cycles ran every 60 s.
    d, server, farm = make(n_jobs=8)
    d.server = _SchedulingOn(server)
    d.events_expected = True
    for t in (300.0, 600.0, 900.0, 1200.0, 1500.0, 1800.0, 2100.0):
        farm.advance(t)
        farm.jobs.pop(next(iter(farm.jobs)), None)  # a job ends (or goes) between cycles
        d.cycle()
    assert caplog.text.count("but no job event arrived") == 1
    caplog.clear()
    d2, server2, farm2 = make(n_jobs=8)
    d2.server, d2.events_expected, d2.events_seen = _SchedulingOn(server2), True, True  # events do arrive
    for t in (300.0, 600.0, 900.0, 1500.0):
        farm2.advance(t)
        farm2.jobs.pop(next(iter(farm2.jobs)), None)
        d2.cycle()
    assert "no job event" not in caplog.text
