"""External load from a real Prometheus server (Debian's `prometheus`; skipped without it).

Prometheus scrapes a small exporter started here, whose value the test changes; the daemon's
throttle follows within one refresh interval of Prometheus having the new value; killing the
exporter makes the value stale, and the source's `on_stale = "stop"` then holds its VO.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from mysched.backends.loads import LoadSources
from mysched.backends.sim.farm import SimulatedFarm
from mysched.config import config_from_text
from mysched.core.model.batch import Node, TraceJob
from mysched.daemon.cycle import Daemon

from ..conftest import queued
from ..daemon.test_daemon import FlakyServer

REFRESH = 1.0
MAX_AGE = 4.0


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Exporter(BaseHTTPRequestHandler):
    value = 0.2

    def do_GET(self):  # noqa: N802
        body = f"# TYPE se_load gauge\nse_load{{vo=\"atlas\"}} {Exporter.value}\n".encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


def _query(port: int, q: str) -> list:
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": q})
    with urllib.request.urlopen(url, timeout=2) as r:
        return json.load(r)["data"]["result"]


@pytest.fixture
def prometheus(tmp_path):
    binary = shutil.which("prometheus") or ("/usr/bin/prometheus" if shutil.os.path.exists("/usr/bin/prometheus")
                                            else None)
    if binary is None:
        pytest.skip("prometheus not installed (Debian package 'prometheus'; .ci/run installs it)")
    exporter = HTTPServer(("127.0.0.1", 0), Exporter)
    threading.Thread(target=exporter.serve_forever, daemon=True).start()
    port = _port()
    cfg = tmp_path / "prometheus.yml"
    cfg.write_text("global: {scrape_interval: 1s, scrape_timeout: 500ms, evaluation_interval: 1s}\n"
                   "scrape_configs:\n  - job_name: se\n    static_configs:\n"
                   f"      - targets: ['127.0.0.1:{exporter.server_port}']\n")
    proc = subprocess.Popen([binary, f"--config.file={cfg}", f"--storage.tsdb.path={tmp_path}/data",
                             f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"],
                            stdout=subprocess.DEVNULL, stderr=open(tmp_path / "prometheus.log", "w"))
    deadline = time.monotonic() + 60
    while True:
        try:
            if _query(port, "se_load"):
                break
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.skip(f"prometheus did not start: {(tmp_path / 'prometheus.log').read_text()[-300:]}")
        time.sleep(0.2)
    yield port, exporter
    proc.terminate()
    proc.wait(30)
    exporter.server_close()


def test_the_throttle_follows_prometheus_and_a_dead_exporter_goes_stale(prometheus):
    port, exporter = prometheus
    cfg = config_from_text(
        'vos = { atlas = { groups = ["atlas"]; share = 50; }; cms = { groups = ["cms"]; share = 50; }; };\n'
        f'load_sources = {{ se = {{ type = "prometheus"; url = "http://127.0.0.1:{port}"; '
        f'query = "max(se_load{{vo=\\"atlas\\"}})"; interval = {REFRESH:g}; timeout = 1; max_age = {MAX_AGE:g}; '
        'on_stale = "stop"; }; };\n'
        'load_rules = { atlas_se = { source = "se"; vos = ["atlas"]; low = 0.5; high = 0.9; }; };\n')
    wl = [TraceJob(queued(f"{i}.s", f"u{i}", "atlas" if i % 2 else "cms", submit=i), 1e6) for i in range(400)]
    farm = SimulatedFarm([Node(f"wn{i:03d}", 2) for i in range(300)], wl, start=0.0)
    farm.advance(1000.0)
    sources = LoadSources(cfg.load_sources)
    d = Daemon(cfg, FlakyServer(farm), state_dir="", loads=sources, dry_run=True)  # plans, starts nothing

    def level() -> str:
        out = d.cycle()
        return {t.rule: t.level for t in out.plan.throttles}["atlas_se"]

    def until(pred, limit: float) -> float:
        t0 = time.monotonic()
        while not pred():
            assert time.monotonic() - t0 < limit, "timed out"
            time.sleep(0.1)
        return time.monotonic() - t0

    try:
        sources.wait_first(3)
        assert level() == "open"
        Exporter.value = 0.95
        until(lambda: _query(port, 'max(se_load{vo="atlas"})')[0]["value"][1] == "0.95", 10)
        follow = until(lambda: level() == "closed", 5)
        assert follow <= REFRESH + 0.5, follow  # within one refresh interval of Prometheus having it
        out = d.cycle()
        atlas = [w for w in out.plan.waits.values() if w.reason == "external_load"]
        assert atlas and all("se = 0.95" in w.detail for w in atlas)
        assert not any(s.vo == "atlas" for s in out.plan.starts) and any(s.vo == "cms" for s in out.plan.starts)
        Exporter.value = 0.1
        until(lambda: level() == "open", REFRESH + 3)
        exporter.shutdown()  # the exporter dies: Prometheus marks the series stale
        exporter.server_close()
        t_dead = time.monotonic()
        until(lambda: "0 series" in sources.readings()["se"].error, 10)
        until(lambda: level() == "stale", MAX_AGE + 5)
        stale_after = time.monotonic() - t_dead
        out = d.cycle()
        assert any(w.reason == "external_load" and "stale" in w.detail for w in out.plan.waits.values())
        print(f"throttle followed Prometheus in {follow:.2f} s; stale {stale_after:.1f} s after "
              f"the exporter died (max_age {MAX_AGE:g} s)")
        assert stale_after <= MAX_AGE + 3  # max_age after the last good value, plus a scrape or two
    finally:
        sources.close()
