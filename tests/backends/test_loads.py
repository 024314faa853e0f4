"""Load sources: file, command and the Prometheus HTTP API (a stand-in server here; the real
Prometheus is in test_prometheus_live.py). A bad read keeps the last good value and says why."""

from __future__ import annotations

import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from mysched.backends.loads import LoadSources, SourceError, read_source
from mysched.core.settings import LoadSource


def _file(tmp_path, text, key=""):
    p = tmp_path / "load.json"
    p.write_text(text)
    return LoadSource("f", "file", path=str(p), key=key, interval=1, max_age=10)


def test_file_values_plain_and_by_key(tmp_path):
    assert read_source(_file(tmp_path, "0.75\n"), 0)[0] == 0.75
    src = _file(tmp_path, json.dumps({"se": {"atlas": 3}}), key="se.atlas")
    value, at = read_source(src, 0)
    assert value == 3.0 and abs(at - os.stat(src.path).st_mtime) < 1e-6  # as old as the file


@pytest.mark.parametrize("text,key,msg", [
    ("abc", "", "not a number: 'abc'"),
    ('{"se": {}}', "se.atlas", "key 'se.atlas' not found (at 'atlas')"),
    ('{"se": [1]}', "se", "holds list, not a number"),
    ("nan", "", "not a finite number"),
    ('{"a": 1', "a", "not a JSON document"),
])
def test_file_garbage_is_a_located_error(tmp_path, text, key, msg):
    src = _file(tmp_path, text, key)
    with pytest.raises(SourceError) as exc:
        read_source(src, 0)
    assert str(exc.value).startswith(src.path) and msg in str(exc.value)


def test_a_bad_read_keeps_the_last_good_value_and_its_time(tmp_path):
    src = _file(tmp_path, "0.5")
    ls = LoadSources({})
    good = ls.refresh(src)
    (tmp_path / "load.json").write_text("garbage")
    bad = ls.refresh(src)
    assert (bad.value, bad.at) == (good.value, good.at) and "not a number" in bad.error
    (tmp_path / "load.json").write_text("0.25")
    assert ls.refresh(src).value == 0.25 and ls.readings()["f"].error == ""


def _cmd(script: str, timeout: float = 1.0) -> LoadSource:
    return LoadSource("c", "command", command=("/bin/sh", "-c", script), interval=5, timeout=timeout, max_age=30)


def test_commands_print_numbers_or_fail_with_a_reason():
    assert read_source(_cmd("echo 42"), 7.0) == (42.0, 7.0)
    with pytest.raises(SourceError, match="output: not a number: 'hello'"):
        read_source(_cmd("echo hello"), 0)
    with pytest.raises(SourceError, match="exit status 3: probe broke"):
        read_source(_cmd("echo probe broke >&2; exit 3"), 0)
    with pytest.raises(SourceError, match="cannot run"):
        read_source(LoadSource("c", "command", command=("/nonexistent/probe",)), 0)


def test_a_hanging_command_is_killed_at_its_timeout_with_its_children(tmp_path):
    marker = tmp_path / "child.pid"
    src = _cmd(f"sleep 30 & echo $! > {marker}; wait", timeout=0.5)
    t0 = time.monotonic()
    with pytest.raises(SourceError, match="no answer within 0.5 s"):
        read_source(src, 0)
    assert time.monotonic() - t0 < 2.5
    pid = int(marker.read_text())
    time.sleep(0.2)
    try:  # the grandchild is gone too (or a zombie waiting for init to reap it)
        state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        state = "gone"
    assert state in ("gone", "Z", "X"), state


def test_sources_refresh_in_the_background_without_blocking_readings(tmp_path):
    slow = LoadSource("slow", "command", command=("/bin/sh", "-c", "sleep 5; echo 1"), interval=1, timeout=1,
                      max_age=10)
    fast = _file(tmp_path, "0.5")
    ls = LoadSources({"slow": slow, "f": fast})
    try:
        ls.wait_first(3.0)
        t0 = time.monotonic()
        r = ls.readings()  # never waits for a source
        assert time.monotonic() - t0 < 0.05
        assert r["f"].value == 0.5 and r["slow"].value is None and "no answer" in r["slow"].error
        (tmp_path / "load.json").write_text("0.9")
        deadline = time.monotonic() + 3
        while ls.readings()["f"].value != 0.9 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert ls.readings()["f"].value == 0.9  # within about one interval
    finally:
        ls.close()


class _Prom(BaseHTTPRequestHandler):
    reply: dict = {}
    status = 200

    def do_GET(self):  # noqa: N802
        body = json.dumps(self.reply).encode()
        self.send_response(self.status)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


@pytest.fixture
def prom():
    srv = HTTPServer(("127.0.0.1", 0), _Prom)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield srv
    srv.shutdown()


def _vec(*values):
    return {"status": "success", "data": {"resultType": "vector",
                                          "result": [{"metric": {}, "value": [1, str(v)]} for v in values]}}


def test_prometheus_replies(prom):
    src = LoadSource("p", "prometheus", url=f"http://127.0.0.1:{prom.server_port}", query="max(x)", timeout=2)
    _Prom.reply, _Prom.status = _vec(0.8), 200
    assert read_source(src, 5.0) == (0.8, 5.0)
    _Prom.reply = {"status": "success", "data": {"resultType": "scalar", "result": [1, "2.5"]}}
    assert read_source(src, 5.0)[0] == 2.5
    for reply, msg in ((_vec(), "0 series (no data)"), (_vec(1, 2), "2 series; aggregate them"),
                       ({"nonsense": 1}, "not a query reply")):
        _Prom.reply = reply
        with pytest.raises(SourceError, match=msg.replace("(", r"\(").replace(")", r"\)")):
            read_source(src, 0)
    _Prom.reply, _Prom.status = {"status": "error", "error": "parse error at char 4"}, 400
    with pytest.raises(SourceError, match="HTTP 400: parse error at char 4"):
        read_source(src, 0)
    down = LoadSource("p", "prometheus", url="http://127.0.0.1:9", query="x", timeout=1)
    with pytest.raises(SourceError, match="Prometheus http://127.0.0.1:9"):
        read_source(down, 0)


def test_a_reload_restarts_changed_sources_and_drops_removed_ones(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_text("1")
    b.write_text("2")
    src_a = LoadSource("x", "file", path=str(a), interval=0.2, max_age=10)
    ls = LoadSources({"x": src_a, "y": LoadSource("y", "file", path=str(b), interval=0.2, max_age=10)})
    try:
        ls.wait_first(2)
        assert {k: r.value for k, r in ls.readings().items()} == {"x": 1.0, "y": 2.0}
        ls.update({"x": LoadSource("x", "file", path=str(b), interval=0.2, max_age=10)})  # x now reads b
        ls.wait_first(2)
        time.sleep(0.3)
        assert {k: r.value for k, r in ls.readings().items()} == {"x": 2.0}
    finally:
        ls.close()
