"""Scheduled downtimes in the status commands: `nodes` says which windows are in force or
ahead and on which nodes, `free` counts the closed nodes' idle slots apart, `why` names the
window that keeps a job waiting."""

from __future__ import annotations

import json
import time

from mysched.cli.main import main
from mysched.config import config_from_text
from mysched.core.model.batch import Node
from mysched.core.planner import plan
from mysched.core.share.usage import Usage
from mysched.daemon.statusfile import build_status, write_status

from ..conftest import queued, snap

# snapshot time 1000 s after 1970: one window in force, one ahead; the partition off, so that
# the waiting 4-core job takes a reservation from its walltime (on, the partition serves it)
CFG = config_from_text('vos = { atlas = { groups = ["atlas"]; share = 100; }; };\ndrain = { rate = 0; };\n'
                       'downtimes = { now = { start = "1970-01-01T00:00"; end = "1970-01-01T02:00"; hosts = ["wn01"]; };\n'
                       '  later = { start = "1970-01-01T01:00"; end = "1970-01-01T03:00"; hosts = ["wn02", "wn03"]; }; };')


def _status(tmp_path) -> None:
    nodes = [Node("wn01", 4), Node("wn02", 4), Node("wn03", 4), Node("wn04", 2)]
    long = queued("1.srv", "bob", "atlas", cores=4)._replace(walltime=4 * 3600.0)
    s = snap([long], nodes)
    write_status(str(tmp_path), build_status(s, plan(s, CFG, Usage(), 1000.0), CFG, published=time.time()))


def _run(capsys, *argv: str) -> str:
    assert main([*argv, "--max-age", "9999999999"]) == 0
    return capsys.readouterr().out


def test_nodes_lists_each_window_once_with_its_nodes(tmp_path, capsys):
    _status(tmp_path)
    out = _run(capsys, "nodes", "--state-dir", str(tmp_path))
    lines = [line for line in out.splitlines() if line.startswith("downtime ")]
    assert len(lines) == 2
    assert lines[0].startswith("downtime now from ") and "in force: no new jobs, on 1 node(s): wn01" in lines[0]
    assert lines[1].startswith("downtime later from ") and "ahead: only jobs that end by " in lines[1] and lines[1].endswith("on 2 node(s): wn02, wn03")  # its start less the 5-minute margin
    doc = json.loads(_run(capsys, "nodes", "--state-dir", str(tmp_path), "--json"))
    assert doc["downtimes"]["wn01"] == {"name": "now", "start": 0.0, "end": 7200.0, "begin": -300.0}
    assert set(doc["downtimes"]) == {"wn01", "wn02", "wn03"}


def test_free_counts_the_closed_node_apart(tmp_path, capsys):
    _status(tmp_path)
    doc = json.loads(_run(capsys, "free", "--state-dir", str(tmp_path), "--json"))
    assert doc["held"]["downtime"] == 4  # wn01, in its window
    # wn02 and wn03 still take short jobs; the waiting 4-hour job is reserved wn01 for the end
    # of its window, which comes first
    assert doc["held"]["reserved"] == 0 and doc["total_free"] == 4 + 4 + 2
    nodes = json.loads(_run(capsys, "nodes", "--state-dir", str(tmp_path), "--json"))
    assert nodes["reservations"]["1.srv"] == {"start": 7200.0, "nodes": ["wn01"]}
    assert "4 more idle on downtime nodes: in a scheduled downtime" in _run(capsys, "free", "--state-dir", str(tmp_path))


def test_why_names_the_window(tmp_path, capsys):
    _status(tmp_path)
    doc = json.loads(_run(capsys, "why", "--state-dir", str(tmp_path), "1.srv", "--json"))
    assert doc["job"]["reason"] == "downtime"
    out = _run(capsys, "why", "--state-dir", str(tmp_path), "1.srv")
    assert "downtime" in out and "later (1970-01-01 01:00 to 1970-01-01 03:00 UTC; jobs end 5 min before)" in out


def test_when_moves_past_the_window(tmp_path, capsys):
    # A 1-core, 4-hour job (no reservation: the estimate answers): wn01 opens at 7200 s (its
    # window "now"); wn02 is free now, but the job would run into "later" there (from 3300 s).
    nodes = [Node("wn01", 4), Node("wn02", 4)]
    long = queued("1.srv", "bob", "atlas")._replace(walltime=4 * 3600.0)
    s = snap([long], nodes)
    p = plan(s, CFG, Usage(), 1000.0)
    assert not p.reservations and p.waits["1.srv"].reason == "downtime"
    write_status(str(tmp_path), build_status(s, p, CFG, published=time.time()))
    doc = json.loads(_run(capsys, "when", "--state-dir", str(tmp_path), "1.srv", "--json"))
    assert doc["start"] == 7200.0, doc


def test_why_shows_the_torque_priority_apart_from_the_vo_priority(tmp_path, capsys):
    # qsub -p 50: users took the PRIORITY column (their VO's fair-share priority) for it
    s = snap([queued("1.srv", "bob", "atlas")._replace(priority=50), queued("2.srv", "bob", "atlas")],
             [Node("wn01", 0)])
    write_status(str(tmp_path), build_status(s, plan(s, CFG, Usage(), 1000.0), CFG, published=time.time()))
    out = _run(capsys, "why", "--state-dir", str(tmp_path), "1.srv")
    assert "TORQUE priority 50 (qsub -p)" in out
    assert "TORQUE priority" not in _run(capsys, "why", "--state-dir", str(tmp_path), "2.srv")
    doc = json.loads(_run(capsys, "why", "--state-dir", str(tmp_path), "1.srv", "--json"))
    assert doc["job"]["torque_priority"] == 50


def test_free_counts_a_node_reserved_past_a_window_as_held_by_the_window(tmp_path, capsys):
    # wn01's window is ahead and a 4-core job is reserved there past it: free said "for jobs
    # that end before its reservation starts", but what may start there must end before the window.
    nodes = [Node("wn01", 4)]
    s = snap([queued("1.srv", "bob", "atlas", cores=4)._replace(walltime=4 * 3600.0)], nodes)
    cfg = config_from_text('vos = { atlas = { groups = ["atlas"]; share = 100; }; };\ndrain = { rate = 0; };\n'
                           'downtimes = { later = { start = "1970-01-01T01:00"; end = "1970-01-01T03:00"; }; };')
    p = plan(s, cfg, Usage(), 1000.0)
    assert p.reservations["1.srv"].nodes == ("wn01",)
    write_status(str(tmp_path), build_status(s, p, cfg, published=time.time()))
    doc = json.loads(_run(capsys, "free", "--state-dir", str(tmp_path), "--json"))
    assert doc["held"] == {"draining": 0, "reserved": 0, "pool_held": 0, "downtime": 4}


def test_shares_counts_blocked_jobs_apart_from_those_a_slot_would_start(tmp_path, capsys):
    # atlas below its guarantee with only a held job and one that can never fit: it showed
    # "BELOW yes, QUEUED 2" (highlighted) though no free slot would start either.
    from mysched.core.model.batch import JobState

    s = snap([queued("1.srv", "bob", "atlas", state=JobState.HELD), queued("2.srv", "bob", "atlas", cores=64),
              queued("3.srv", "bob", "cms")], [Node("wn01", 4)])
    cfg = config_from_text('vos = { atlas = { groups = ["atlas"]; share = 50; }; cms = { groups = ["cms"]; share = 50; }; };')
    p = plan(s, cfg, Usage(), 1000.0)
    write_status(str(tmp_path), build_status(s, p, cfg, published=time.time()))
    doc = json.loads(_run(capsys, "shares", "--state-dir", str(tmp_path), "--json"))
    assert (doc["vos"]["atlas"]["queued_jobs"], doc["vos"]["atlas"]["blocked_jobs"]) == (2, 2)
    out = _run(capsys, "shares", "--state-dir", str(tmp_path))
    head, *rows_ = out.splitlines()
    atlas = next(r.split() for r in rows_ if r.startswith("atlas"))
    cols = head.split()
    assert atlas[cols.index("QUEUED")] == "0" and atlas[cols.index("BLOCKED")] == "2"
