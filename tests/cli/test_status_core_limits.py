"""The status commands show core and user limits as the plan gives them: `why` names the limit
and the numbers, and a job held by one counts as blocked."""

from __future__ import annotations

import json
import time

from mysched.cli.main import main
from mysched.config import config_from_text
from mysched.core.model.batch import Node
from mysched.core.planner import plan
from mysched.core.share.usage import Usage
from mysched.daemon.statusfile import build_status, write_status

from ..conftest import queued, running, snap

CFG = config_from_text('''
vos = { atlas = { groups = ["atlas"]; share = 50; }; cms = { groups = ["cms"]; share = 50; max_cores = 12; }; };
users = { default = { max_running = 1; }; pilot = {}; };
''')
NOW = 1_000_000.0


def test_why_jobs_and_shares_show_a_core_limit_and_a_user_limit(tmp_path, capsys):
    jobs = [running(f"r{i}", "pilot", "cms", "wn01", cores=c, start=NOW - 60) for i, c in enumerate((2, 2, 2, 2, 1))]
    jobs += [running("ra", "alice", "atlas", "wn02", start=NOW - 60)]
    jobs += [queued("wide", "pilot", "cms", cores=4, submit=NOW - 30), queued("one", "pilot", "cms", submit=NOW - 20),
             queued("a2", "alice", "atlas", submit=NOW - 10)]
    s = snap(jobs, [Node("wn01", 16), Node("wn02", 16)])
    s = s.__class__(NOW, s.jobs, s.nodes, s.queues)
    p = plan(s, CFG, Usage(), NOW)
    assert [x.job_id for x in p.starts] == ["one"]
    write_status(str(tmp_path), build_status(s, p, CFG, published=time.time(), usage=Usage()))

    assert main(["why", "--state-dir", str(tmp_path), "wide"]) == 0
    out = capsys.readouterr().out
    assert "blocked: the VO's running cores and the job's would pass the VO's max_cores" in out
    assert "detail: VO cms runs 5 job(s) on 9 core(s); max_cores 12 leaves 3, the job asks 4" in out
    assert main(["why", "--state-dir", str(tmp_path), "a2"]) == 0
    out = capsys.readouterr().out
    assert "blocked: the job's user runs their max_running jobs" in out
    assert "detail: user alice runs 1 job(s); users.default max_running 1" in out

    assert main(["jobs", "--state-dir", str(tmp_path), "--json"]) == 0
    rows = {r["id"]: r for r in json.loads(capsys.readouterr().out)["jobs"]}
    assert rows["wide"]["reason"] == "vo_core_limit" and rows["a2"]["reason"] == "user_limit"
    assert main(["shares", "--state-dir", str(tmp_path), "--json"]) == 0
    vos = json.loads(capsys.readouterr().out)["vos"]
    assert vos["cms"]["blocked_jobs"] == 1 and vos["atlas"]["blocked_jobs"] == 1
    assert vos["cms"]["max_cores"] == 12 and vos["cms"]["max_running"] is None and vos["atlas"]["max_cores"] is None
    # the table shows the caps, so a VO's RUNNING beside its cap needs no why (live: shares showed
    # atlas at 6 cores and BLOCKED 2, and nothing of its max_cores 6)
    assert main(["shares", "--state-dir", str(tmp_path)]) == 0
    table = capsys.readouterr().out.splitlines()
    cols = table[0].split()
    got = {ln.split()[0]: dict(zip(cols, ln.split())) for ln in table[1:3]}
    assert got["cms"]["LIMIT"] == "12c" and got["atlas"]["LIMIT"] == "-"
