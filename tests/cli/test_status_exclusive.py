"""`free` and `when` see a node running a job that asked for its node alone as the planner
does: nothing else starts there until that job ends."""

from __future__ import annotations

import json

from mysched.cli.main import main
from mysched.config import config_from_text
from mysched.core.model.batch import Job, JobState, Node, Snapshot
from mysched.core.planner import plan
from mysched.core.model.request import Request
from mysched.core.share.usage import Usage
from mysched.daemon.statusfile import build_status, write_status

CFG = config_from_text('vos = { atlas = { groups = ["atlas"]; share = 100; }; };')
NOW = 1000.0


def _publish(tmp_path):
    alone = Job("x", "q", "u", "atlas", 1, JobState.RUNNING, 0.0, 900.0, 3600.0, placement=(("wn01", 1),),
                request=Request(exclusive=True))
    fill = [Job(f"f{i}", "q", "v", "atlas", 1, JobState.RUNNING, 0.0, 900.0, 7200.0, placement=(("wn02", 1),))
            for i in range(4)]
    wait = Job("w", "q", "w", "atlas", 1, JobState.QUEUED, 950.0, None, 600.0)  # no reservation: an estimate
    snap = Snapshot(NOW, (alone, *fill, wait), (Node("wn01", 4), Node("wn02", 4)), ())
    write_status(str(tmp_path), build_status(snap, plan(snap, CFG, Usage(), NOW), CFG))


def test_free_shows_no_core_on_a_node_held_alone(tmp_path, capsys):
    _publish(tmp_path)
    assert main(["free", "--state-dir", str(tmp_path), "--max-age", "1e10", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["total_free"] == 0


def test_when_waits_for_the_job_holding_the_node_alone(tmp_path, capsys):
    _publish(tmp_path)
    assert main(["when", "w", "--state-dir", str(tmp_path), "--max-age", "1e10", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["start"] == 900.0 + 3600.0  # when x ends (wn02's jobs end later), not now


def test_free_counts_idle_slots_on_draining_nodes_apart(tmp_path, capsys):
    from mysched.daemon.statusfile import read_status

    _publish(tmp_path)
    doc = read_status(str(tmp_path))
    for name in ("wn03", "wn04"):  # two idle nodes; wn03 drains for a multi-core job
        doc["nodes"].append([name, "free", "", 4, 0, 0, {}, 0, None, "", [], ""])
    doc["drains"] = {"wn03": {"since": NOW, "ready": None}}
    write_status(str(tmp_path), doc)
    assert main(["free", "--state-dir", str(tmp_path), "--max-age", "1e10", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["total_free"] == 4 and got["held"] == {"draining": 4, "reserved": 0, "pool_held": 0, "downtime": 0}  # wn04 is free to all, wn03 kept
