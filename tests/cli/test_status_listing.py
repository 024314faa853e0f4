"""`mysched jobs`, `why` and `when` as a site's users read them: ids in qstat's numeric order,
a job the last cycle started shown running for 0 s, ids as qstat and qsub print them."""

from __future__ import annotations

import json
import time

import pytest

from mysched.cli.jobs import id_order
from mysched.cli.main import main
from mysched.config import config_from_text
from mysched.core.model.batch import JobState, Node
from mysched.core.planner import plan
from mysched.core.share.usage import Usage
from mysched.daemon.statusfile import build_status, write_status

from ..conftest import queued, running, snap

CFG = config_from_text('vos = { atlas = { groups = ["atlas"]; share = 100; }; };')
NOW = 1000.0
SRV = "batch.grid.example.org"


def _status(tmp_path) -> None:
    jobs = [running(f"7.{SRV}", "alice", "atlas", "wn01", start=NOW - 60),
            running(f"12.{SRV}", "alice", "atlas", "wn01", start=NOW - 600)]
    jobs += [queued(f"{n}.{SRV}", "bob", "atlas", state=JobState.HELD) for n in (10, 9, 100)]
    jobs += [queued(f"55.{SRV}", "carol", "atlas")]  # the one free slot: started by this cycle
    s = snap(jobs, [Node("wn01", 3)])
    write_status(str(tmp_path), build_status(s, plan(s, CFG, Usage(), NOW), CFG, published=time.time()))


def _json(capsys, *argv: str) -> dict:
    assert main([*argv, "--max-age", "99999", "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_jobs_lists_running_longest_first_and_blocked_in_numeric_order(tmp_path, capsys):
    _status(tmp_path)
    doc = _json(capsys, "jobs", "--state-dir", str(tmp_path))
    ids = [j["id"].split(".")[0] for j in doc["jobs"]]
    assert ids == ["12", "7", "55", "9", "10", "100"], ids  # as qstat: 9 before 10 before 100
    started = doc["jobs"][2]
    assert started["class"] == "running" and started["elapsed_s"] == 0  # started now, not "-"
    assert main(["jobs", "--state-dir", str(tmp_path), "--max-age", "99999", "--noheader"]) == 0
    line = capsys.readouterr().out.splitlines()[2]
    assert line.startswith(f"55.{SRV}") and line.split()[7] == "0s", line


def test_id_order():
    assert sorted(["10.s", "9.s", "7[10].s", "7[2].s", "7[].s", "x.s", "100"], key=id_order) == \
        ["7[].s", "7[2].s", "7[10].s", "9.s", "10.s", "100", "x.s"]


def test_a_job_is_found_by_a_shorter_id_up_to_a_dot(tmp_path, capsys):
    _status(tmp_path)
    for ask in ("12", "12.batch", "12.batch.grid", f"12.{SRV}"):
        assert _json(capsys, "why", "--state-dir", str(tmp_path), ask)["job"]["id"] == f"12.{SRV}", ask
    assert main(["why", "--state-dir", str(tmp_path), "--max-age", "99999", "12.bat"]) == 1  # not at a dot
    assert "not in the status" in capsys.readouterr().err


@pytest.mark.parametrize("cmd", ["why", "when"])
def test_an_empty_job_id_is_refused_as_such(tmp_path, capsys, cmd):
    _status(tmp_path)
    with pytest.raises(SystemExit) as exc:
        main([cmd, "--state-dir", str(tmp_path), ""])
    assert exc.value.code == 2 and "JOBID: must not be empty" in capsys.readouterr().err


def test_why_and_when_agree_on_how_many_wait_ahead(tmp_path, capsys):
    """`why` gives a waiting job's position, `when` the jobs ahead of it: the jobs the last
    cycle started run now and are ahead of no one (counted, the first waiting job of a farm
    said 'position 168')."""
    jobs = [queued(f"{n}.{SRV}", "bob", "atlas", submit=float(n)) for n in range(1, 9)]
    s = snap(jobs, [Node("wn01", 3)])
    write_status(str(tmp_path), build_status(s, plan(s, CFG, Usage(), NOW), CFG, published=time.time()))
    doc = _json(capsys, "jobs", "--state-dir", str(tmp_path), "--state", "queued")
    assert [j["rank"] for j in doc["jobs"]] == [1, 2, 3, 4, 5]  # three started: the first waits at 1
    for j in doc["jobs"]:
        why = _json(capsys, "why", "--state-dir", str(tmp_path), j["id"])
        when = _json(capsys, "when", "--state-dir", str(tmp_path), j["id"])
        assert f"position {j['rank']} in" in why["explanation"] and when["ahead"] == j["rank"] - 1, (why, when)
