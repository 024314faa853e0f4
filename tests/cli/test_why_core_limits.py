"""`mysched why` shows a job's core and user limits as it shows max_running: the status file
publishes max_cores of VOs, groups and queues and the users limits, the status commands check
those keys, and a file of the same format from a daemon that did not publish them still reads."""

from __future__ import annotations

import json
import time

import pytest

from mysched.cli.main import main
from mysched.config import config_from_text
from mysched.core.model.batch import Node
from mysched.core.planner import plan
from mysched.core.share.usage import Usage
from mysched.daemon.statusfile import build_status, write_status

from ..conftest import queued, running, snap

CFG = config_from_text('''
vos = { atlas = { groups = ["atlas"]; share = 50; };
        cms = { groups = ["cms", "cmsprd"]; share = 50; max_cores = 14; }; };
groups = { cmsprd = { max_cores = 3; }; };
queues = { long = { max_cores = 4; }; };
users = { default = { max_running = 1; max_cores = 2; }; pilot = {}; prod = {}; };
''')
NOW = 1_000_000.0
WAITING = {"wide": "vo_core_limit", "g": "group_core_limit", "qq": "queue_core_limit", "a2": "user_limit"}


def _status(tmp_path, strip=None):
    jobs = [running(f"r{i}", "pilot", "cms", "wn01", cores=c, start=NOW - 60) for i, c in enumerate((2, 2, 2, 2, 1))]
    jobs += [running("p1", "prod", "cmsprd", "wn02", queue="long", cores=2, start=NOW - 60),
             running("ra", "alice", "atlas", "wn02", start=NOW - 60)]
    jobs += [queued("wide", "pilot", "cms", cores=4, submit=NOW - 50), queued("one", "pilot", "cms", submit=NOW - 40),
             queued("g", "prod", "cmsprd", cores=2, submit=NOW - 30),
             queued("qq", "ana", "atlas", queue="long", cores=3, submit=NOW - 20),
             queued("a2", "alice", "atlas", submit=NOW - 10)]
    s = snap(jobs, [Node("wn01", 16), Node("wn02", 16)])
    s = s.__class__(NOW, s.jobs, s.nodes, s.queues)
    p = plan(s, CFG, Usage(), NOW)
    assert [x.job_id for x in p.starts] == ["one"]
    assert {j: w.reason for j, w in p.waits.items()} == WAITING
    doc = build_status(s, p, CFG, published=time.time(), usage=Usage())
    if strip:
        strip(doc)
    write_status(str(tmp_path), json.loads(json.dumps(doc)))
    return doc


def _why(capsys, tmp_path, jid, *extra):
    assert main(["why", "--state-dir", str(tmp_path), jid, *extra]) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    return json.loads(out) if extra else out


def test_the_status_file_publishes_max_cores_and_the_users_limits(tmp_path):
    doc = _status(tmp_path)
    assert doc["vos"]["cms"]["max_cores"] == 14 and doc["vos"]["atlas"]["max_cores"] is None
    assert doc["limits"]["groups"]["cmsprd"]["max_cores"] == 3
    assert doc["queue_config"]["long"]["max_cores"] == 4
    assert doc["limits"]["users"] == {"default": {"max_running": 1, "max_cores": 2},
                                      "pilot": {"max_running": None, "max_cores": None},
                                      "prod": {"max_running": None, "max_cores": None}}


def test_why_shows_the_core_or_user_limit_a_job_waits_on(tmp_path, capsys):
    _status(tmp_path)
    out = _why(capsys, tmp_path, "wide")
    assert "VO cms: 12 slots running of max_cores 14, guarantee 16 (below), 7 jobs" in out
    assert "user pilot runs" not in out  # users.pilot = {}: no limits of its own, not the default's
    assert "group cmsprd: 1 jobs, 2 cores of max_cores 3" in _why(capsys, tmp_path, "g")
    assert "queue long: 1 jobs on 2 core(s); queues.long max_cores 4" in _why(capsys, tmp_path, "qq")
    out = _why(capsys, tmp_path, "a2")
    assert "user alice runs 1 job(s) on 1 core(s); users.default max_running 1 / max_cores 2" in out
    assert "VO atlas: 1 slots running, guarantee 16 (below), 1 jobs" in out  # no max_cores: none said

    lim = _why(capsys, tmp_path, "a2", "--json")["limits"]
    assert lim["user"] == {"name": "alice", "key": "users.default", "running_jobs": 1, "running_cores": 1,
                           "max_running": 1, "max_cores": 2}
    lim = _why(capsys, tmp_path, "g", "--json")["limits"]
    assert lim["group"]["max_cores"] == 3 and lim["group"]["running_cores"] == 2
    assert lim["vo"]["max_cores"] == 14 and lim["user"]["key"] == "users.prod" and lim["user"]["max_running"] is None


def _older(doc):
    """What a daemon of the same format before max_cores and users published."""
    for v in doc["vos"].values():
        del v["max_cores"]
    for g in doc["limits"]["groups"].values():
        del g["max_cores"]
    for q in doc["queue_config"].values():
        del q["max_cores"]
    del doc["limits"]["users"]


def test_a_status_file_without_them_still_reads(tmp_path, capsys):
    _status(tmp_path, _older)
    out = _why(capsys, tmp_path, "a2")
    assert "blocked: the job's user runs their max_running jobs" in out
    assert "VO atlas: 1 slots running, guarantee 16 (below), 1 jobs" in out and "job(s) on" not in out
    assert "VO cms: 12 slots running, guarantee 16" in _why(capsys, tmp_path, "wide")
    lim = _why(capsys, tmp_path, "g", "--json")["limits"]
    assert lim["vo"]["max_cores"] is None and lim["group"]["max_cores"] is None and lim["user"]["key"] is None
    for argv in (["jobs"], ["shares"], ["free"], ["when", "wide"]):
        assert main([*argv, "--state-dir", str(tmp_path)]) == 0, capsys.readouterr().err


@pytest.mark.parametrize("change, where", [
    (lambda d: d["vos"]["cms"].__setitem__("max_cores", "14"), "vos.cms.max_cores: expected a whole number"),
    (lambda d: d["limits"]["groups"]["cmsprd"].__setitem__("max_cores", -3),
     "limits.groups.cmsprd.max_cores: expected a whole number of at least 0, got -3"),
    (lambda d: d["queue_config"]["long"].__setitem__("max_cores", 4.5), "queue_config.long.max_cores: expected"),
    (lambda d: d["limits"].__setitem__("users", []), "limits.users: expected an object"),
    (lambda d: d["limits"]["users"]["default"].__setitem__("max_running", True),
     "limits.users.default.max_running: expected a whole number"),
])
def test_a_damaged_limit_is_refused_in_one_line(tmp_path, capsys, change, where):
    _status(tmp_path, change)
    assert main(["why", "--state-dir", str(tmp_path), "wide"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and where in err, err
