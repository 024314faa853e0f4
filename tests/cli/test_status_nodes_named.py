"""`mysched nodes NODE...` (MAUI's checknode): the named nodes only, each with the jobs running
there -- cores there, start, and when each ends by its requested walltime, soonest first."""

from __future__ import annotations

import json
import time

from mysched.cli.main import main
from mysched.config import config_from_text
from mysched.core.model.batch import Job, JobState, Node
from mysched.core.planner import plan
from mysched.core.share.usage import Usage
from mysched.daemon.statusfile import build_status, write_status

from ..conftest import snap

CFG = config_from_text('vos = { atlas = { groups = ["atlas"]; share = 100; }; };')


def _status(tmp_path) -> None:
    ns = [Node("wn01", 4, properties=frozenset({"ib"})), Node("wn02", 4), Node("wn03", 4)]
    running = [Job("7.srv", "q", "alice", "atlas", 1, JobState.RUNNING, 0.0, 1000.0, 7200.0, placement=(("wn01", 1),)),
               Job("8.srv", "q", "bob", "atlas", 4, JobState.RUNNING, 0.0, 1000.0, 600.0,
                   placement=(("wn01", 2), ("wn02", 2))),
               Job("9.srv", "q", "carol", "atlas", 1, JobState.RUNNING, 0.0, 900.0, None, placement=(("wn03", 1),))]
    s = snap(running, ns)
    write_status(str(tmp_path), build_status(s, plan(s, CFG, Usage(), 1000.0), CFG, published=time.time()))


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main([*argv, "--max-age", "9999999999"])
    got = capsys.readouterr()
    return rc, got.out, got.err


def test_named_nodes_list_their_jobs_soonest_end_first(tmp_path, capsys):
    _status(tmp_path)
    rc, out, _ = _run(capsys, "nodes", "wn01", "--state-dir", str(tmp_path))
    assert rc == 0
    assert "wn02" not in out.split("\n\n")[0]  # the table holds wn01 alone
    assert "wn01: partial, 3 of 4 slot(s) used, properties ib; 2 job(s) running (soonest end first)" in out
    lines = [ln for ln in out.splitlines() if ln.startswith(("7.srv", "8.srv"))]
    assert [ln.split()[0] for ln in lines] == ["8.srv", "7.srv"]  # 8 ends at +600, 7 at +7200
    assert "2 of 4" in lines[0] and "(in 10m00s)" in lines[0]
    doc = json.loads(_run(capsys, "nodes", "wn03", "wn02", "--json", "--state-dir", str(tmp_path))[1])
    assert [n["name"] for n in doc["nodes"]] == ["wn03", "wn02"]
    assert doc["jobs_on"]["wn03"] == [{"id": "9.srv", "user": "carol", "vo": "atlas", "cores": 1, "job_cores": 1,
                                       "start": 900.0, "end": None}]
    assert [j["id"] for j in doc["jobs_on"]["wn02"]] == ["8.srv"]
    assert "no walltime" in _run(capsys, "nodes", "wn03", "--state-dir", str(tmp_path))[1]


def test_an_unknown_node_is_one_line_naming_some_that_exist(tmp_path, capsys):
    _status(tmp_path)
    rc, out, err = _run(capsys, "nodes", "wn09", "--state-dir", str(tmp_path))
    assert rc == 1 and out == ""
    assert err.strip() == "mysched: error: node wn09 is not in the status (3 node(s): wn01, wn02, wn03)"
    # a fully qualified name finds the short one pbs_server lists
    assert _run(capsys, "nodes", "wn01.grid.example.org", "--state-dir", str(tmp_path))[0] == 0


def test_a_job_the_last_cycle_started_shows_its_end(tmp_path, capsys):
    # TORQUE reports its start_time only at the next read: the status's time is its start (it
    # showed "no walltime" and no start, as a job without a walltime would)
    s = snap([Job("5.srv", "q", "dave", "atlas", 1, JobState.QUEUED, 900.0, None, 3600.0)], [Node("wn01", 4)])
    write_status(str(tmp_path), build_status(s, plan(s, CFG, Usage(), 1000.0), CFG, published=time.time()))
    doc = json.loads(_run(capsys, "nodes", "wn01", "--json", "--state-dir", str(tmp_path))[1])
    assert doc["jobs_on"]["wn01"] == [{"id": "5.srv", "user": "dave", "vo": "atlas", "cores": 1, "job_cores": 1,
                                       "start": 1000.0, "end": 4600.0}]
