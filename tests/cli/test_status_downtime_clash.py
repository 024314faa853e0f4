"""A downtime whose nodes run jobs that, by their requested walltime, end after it starts (or,
in force, still run): `mysched nodes` says how many and names a few; the daemon logs it once
per window when it writes the status file (MAUI's setres reports the conflict)."""

from __future__ import annotations

import json
import logging
import time

import pytest

from mysched.cli.main import main
from mysched.config import config_from_text
from mysched.core.model.batch import Node
from mysched.core.planner import plan
from mysched.core.share.usage import Usage
from mysched.daemon import downtimeclash, statusfile
from mysched.daemon.statusfile import build_status, publish_status, write_status

from ..conftest import running, snap

# snapshot time 1000 s after 1970: "now" in force on wn01, "later" from 3600 s on wn02
CFG = config_from_text('vos = { atlas = { groups = ["atlas"]; share = 100; }; };\n'
                       'downtimes = { now = { start = "1970-01-01T00:00"; end = "1970-01-01T02:00"; hosts = ["wn01"]; };\n'
                       '  later = { start = "1970-01-01T01:00"; end = "1970-01-01T03:00"; hosts = ["wn02"]; }; };')


def _snap():
    jobs = [running("1.srv", "bob", "atlas", "wn01")._replace(walltime=600.0),  # overdue: still runs, in force
            running("2.srv", "bob", "atlas", "wn02")._replace(walltime=7200.0),  # ends 7200 s, past 3600 s
            running("3.srv", "bob", "atlas", "wn02")._replace(walltime=1800.0),  # ends 1800 s: clear
            running("4.srv", "bob", "atlas", "wn02"),  # no walltime: may run on
            running("5.srv", "bob", "atlas", "wn03")._replace(walltime=9e4)]  # no window on wn03
    return snap(jobs, [Node("wn01", 4), Node("wn02", 4), Node("wn03", 4)])


def _status(tmp_path) -> None:
    s = _snap()
    write_status(str(tmp_path), build_status(s, plan(s, CFG, Usage(), 1000.0), CFG, published=time.time()))


def _out(capsys, *argv: str) -> str:
    assert main([*argv, "--max-age", "9999999999"]) == 0
    return capsys.readouterr().out


def test_nodes_says_which_running_jobs_run_into_each_window(tmp_path, capsys):
    _status(tmp_path)
    out = _out(capsys, "nodes", "--state-dir", str(tmp_path))
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("downtime now from "))
    now = lines[at + 1]  # under its window
    assert now.startswith("  downtime now is in force, but 1 job(s) still run on its nodes: 1.srv on wn01:1 "
                          "past its walltime since 19")
    later = lines[next(i for i, line in enumerate(lines) if line.startswith("downtime later from ")) + 1]
    assert later.startswith("  downtime later: ")
    assert "2 running job(s) on its nodes are expected, by their requested walltime, to run past its start" in later
    assert "4.srv on wn02:1 (no walltime: may run on), 2.srv on wn02:1 until " in later
    assert "3.srv" not in later and "5.srv" not in out
    doc = json.loads(_out(capsys, "nodes", "--json", "--state-dir", str(tmp_path)))
    by = {c["name"]: c for c in doc["downtime_clashes"]}
    assert by["now"]["state"] == "in_force" and [j["id"] for j in by["now"]["jobs"]] == ["1.srv"]
    assert by["later"]["state"] == "ahead" and by["later"]["jobs"] == [
        {"id": "4.srv", "nodes": ["wn02"], "end": None}, {"id": "2.srv", "nodes": ["wn02"], "end": 7200.0}]


def test_a_filter_shows_only_the_listed_nodes_clashes(tmp_path, capsys):
    _status(tmp_path)
    cfg = config_from_text('vos = { atlas = { groups = ["atlas"]; share = 100; }; };\n'
                           'node_types = { x = { nodes = ["wn01"]; }; };\n'
                           'downtimes = { now = { start = "1970-01-01T00:00"; end = "1970-01-01T02:00"; '
                           'hosts = ["wn01"]; };\n  later = { start = "1970-01-01T01:00"; end = "1970-01-01T03:00"; '
                           'hosts = ["wn02"]; }; };')
    s = _snap()
    write_status(str(tmp_path), build_status(s, plan(s, cfg, Usage(), 1000.0), cfg, published=time.time()))
    out = _out(capsys, "nodes", "--type", "x", "--state-dir", str(tmp_path))
    assert "downtime now is in force" in out and "downtime later" not in out


def test_no_clash_no_line(tmp_path, capsys):
    s = snap([running("3.srv", "bob", "atlas", "wn02")._replace(walltime=1800.0)], [Node("wn02", 4)])
    write_status(str(tmp_path), build_status(s, plan(s, CFG, Usage(), 1000.0), CFG, published=time.time()))
    out = _out(capsys, "nodes", "--state-dir", str(tmp_path))
    assert "downtime later from" in out and "run past" not in out


@pytest.fixture
def fresh(monkeypatch):
    w = downtimeclash.DowntimeWarnings()
    monkeypatch.setattr(statusfile, "WARNINGS", w)
    return w


def test_the_daemon_warns_once_per_window(tmp_path, caplog, fresh):
    s = _snap()
    p = plan(s, CFG, Usage(), 1000.0)
    with caplog.at_level(logging.WARNING, logger="mysched"):
        publish_status(str(tmp_path), s, p, CFG, published=time.time())
        publish_status(str(tmp_path), s, p, CFG, published=time.time())
    msgs = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(msgs) == 2, msgs
    assert msgs[0].startswith("downtime now (1970-01-01 00:00 to 1970-01-01 02:00 UTC") and "1.srv on wn01:1" in msgs[0]
    assert msgs[1].startswith("downtime later (1970-01-01 01:00 to 1970-01-01 03:00 UTC")
    assert "2 running job(s) on its nodes are expected" in msgs[1] and "qdel them or move the window" in msgs[1]


def test_the_daemon_says_nothing_without_a_clash(tmp_path, caplog, fresh):
    s = snap([running("3.srv", "bob", "atlas", "wn02")._replace(walltime=1800.0)], [Node("wn02", 4)])
    with caplog.at_level(logging.WARNING, logger="mysched"):
        publish_status(str(tmp_path), s, plan(s, CFG, Usage(), 1000.0), CFG, published=time.time())
    assert not [r for r in caplog.records if r.levelno == logging.WARNING]


def test_a_damaged_window_is_refused_in_one_line(tmp_path, capsys):
    s = _snap()
    doc = build_status(s, plan(s, CFG, Usage(), 1000.0), CFG, published=time.time())
    doc["downtime_windows"][0].pop("start")
    write_status(str(tmp_path), doc)
    assert main(["nodes", "--state-dir", str(tmp_path), "--max-age", "9999999999"]) == 1
    err = capsys.readouterr().err
    assert "downtime_windows[0].start: missing" in err and "Traceback" not in err
