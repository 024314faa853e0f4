"""The daemon under external load from file and command sources: the throttle follows within
a refresh interval, a hanging probe never delays a cycle, garbage keeps the last good value
until it is stale, and the status file and `mysched loads` say all of it."""

from __future__ import annotations

import json
import time

from mysched.backends.loads import LoadSources
from mysched.backends.sim.farm import SimulatedFarm
from mysched.cli.main import main
from mysched.config import config_from_text
from mysched.core.model.batch import Node, TraceJob
from mysched.daemon.cycle import Daemon
from mysched.daemon.metrics import Metrics
from prometheus_client import CollectorRegistry
from mysched.daemon.statusfile import read_status

from ..conftest import queued
from .test_daemon import FlakyServer

REFRESH = 0.5


def _daemon(tmp_path, sources_text: str, rules_text: str):
    cfg = config_from_text(
        'vos = { atlas = { groups = ["atlas"]; share = 50; }; cms = { groups = ["cms"]; share = 50; }; };\n'
        f"load_sources = {{ {sources_text} }};\nload_rules = {{ {rules_text} }};\n")
    wl = [TraceJob(queued(f"{i}.s", f"u{i}", "atlas" if i % 2 else "cms", submit=i), 1e6) for i in range(40)]
    farm = SimulatedFarm([Node(f"wn{i:02d}", 4) for i in range(20)], wl, start=0.0)
    farm.advance(100.0)
    sources = LoadSources(cfg.load_sources)
    sources.wait_first(3)
    m = Metrics(CollectorRegistry())
    d = Daemon(cfg, FlakyServer(farm), state_dir=str(tmp_path / "s"), loads=sources, dry_run=True, metrics=m)
    d.m = m
    return d, sources


def _level(d: Daemon, rule: str) -> tuple[str, float]:
    t0 = time.monotonic()
    out = d.cycle()
    return {t.rule: t.level for t in out.plan.throttles}[rule], time.monotonic() - t0


def _until(d: Daemon, rule: str, want: str, limit: float) -> float:
    t0 = time.monotonic()
    while _level(d, rule)[0] != want:
        assert time.monotonic() - t0 < limit, f"{rule} never became {want}"
        time.sleep(0.05)
    return time.monotonic() - t0


def test_a_file_probe_throttles_within_a_refresh_and_a_vanished_one_is_ignored_when_stale(tmp_path, capsys):
    probe = tmp_path / "se.json"
    probe.write_text(json.dumps({"atlas": 0.2}))
    d, sources = _daemon(tmp_path, f'se = {{ type = "file"; path = "{probe}"; key = "atlas"; interval = {REFRESH}; '
                         'max_age = 2; };', 'r = { source = "se"; vos = ["atlas"]; low = 0.5; high = 0.9; };')
    try:
        assert _level(d, "r")[0] == "open"
        probe.write_text(json.dumps({"atlas": 0.97}))
        assert _until(d, "r", "closed", 3) <= REFRESH + 0.3
        probe.unlink()  # the probe died and took its file: the value stays, then goes stale
        assert _level(d, "r")[0] == "closed"
        _until(d, "r", "open", 5)  # stale, and on_stale = "ignore": throttles nothing
        doc = read_status(str(tmp_path / "s"))
        src = doc["load_sources"][0]
        assert src["state"] == "stale" and "cannot read" in src["error"] and src["value"] == 0.97
        assert main(["loads", "--state-dir", str(tmp_path / "s")]) == 0
        out = capsys.readouterr().out
        assert "stale" in out and "cannot read" in out
    finally:
        sources.close()


def test_a_hanging_probe_never_delays_a_cycle_and_garbage_keeps_the_last_value(tmp_path):
    value = tmp_path / "value"
    value.write_text("0.95\n")
    flag = tmp_path / "hang"
    cmd = f'["/bin/sh", "-c", "if [ -f {flag} ]; then sleep 30; fi; cat {value}"]'
    d, sources = _daemon(tmp_path, f'p = {{ type = "command"; command = {cmd}; interval = 1.0; timeout = 0.8; '
                         'max_age = 4.5; on_stale = "stop"; };',
                         'r = { source = "p"; groups = ["atlas"]; low = 0.5; high = 0.9; };')
    try:
        assert _level(d, "r")[0] == "closed"
        flag.touch()
        t0 = time.monotonic()
        slowest = 0.0
        while time.monotonic() - t0 < 2.0:  # the probe hangs and is killed again and again
            level, took = _level(d, "r")
            slowest = max(slowest, took)
            assert level == "closed"  # last good value kept
        assert slowest < 0.5, slowest  # cycles never wait for the probe (0.8 s before it is killed)
        assert "no answer within 0.8 s (killed)" in sources.readings()["p"].error
        sample = d.m.registry.get_sample_value
        assert sample("mysched_load_failing", {"source": "p"}) == 1
        assert sample("mysched_load_stale", {"source": "p"}) == 0 and sample("mysched_load_value", {"source": "p"}) == 0.95
        flag.unlink()
        value.write_text("garbage\n")
        time.sleep(2.0)  # two probe intervals
        r = sources.readings()["p"]
        assert "output: not a number: 'garbage'" in r.error and r.value == 0.95
        _until(d, "r", "stale", 4)  # on_stale = "stop": atlas gets nothing new
        assert d.m.registry.get_sample_value("mysched_load_stale", {"source": "p"}) == 1
        assert d.m.registry.get_sample_value("mysched_load_throttle_factor", {"rule": "r"}) == 0
        out = d.cycle()
        assert any(w.reason == "external_load" and "stale" in w.detail for w in out.plan.waits.values())
        value.write_text("0.1\n")
        _until(d, "r", "open", 3)
    finally:
        sources.close()
