"""Status commands asked about a job array: TORQUE lists its sub-jobs (``7487[3].vm``), and
qsub -t answered ``7487[].vm``. Seen live: 'mysched why 7487[].vm' said the job was 'not in the
status of the last cycle (finished, deleted, or a typo?)' while four of its sub-jobs waited."""

from __future__ import annotations

import time

from mysched.cli.main import main
from mysched.config import config_from_text
from mysched.core.model.batch import JobState, Node
from mysched.core.planner import plan
from mysched.core.share.usage import Usage
from mysched.daemon.statusfile import build_status, write_status

from ..conftest import queued, running, snap

CFG = config_from_text('vos = { atlas = { groups = ["atlas"]; share = 100; }; };')


def _status(tmp_path) -> None:
    jobs = [running("7487[1].vm", "bob", "atlas", "wn01"), running("7487[2].vm", "bob", "atlas", "wn01")]
    jobs += [queued(f"7487[{i}].vm", "bob", "atlas", state=JobState.HELD) for i in range(3, 7)]
    jobs += [queued("748.vm", "alice", "atlas")]
    s = snap(jobs, [Node("wn01", 2)])
    write_status(str(tmp_path), build_status(s, plan(s, CFG, Usage(), 1000.0), CFG, published=time.time()))


def test_why_and_when_of_an_array_name_its_sub_jobs(tmp_path, capsys):
    _status(tmp_path)
    for cmd in ("why", "when"):
        for ask in ("7487[].vm", "7487[]", "7487"):
            assert main([cmd, "--state-dir", str(tmp_path), "--max-age", "99999", ask]) == 1
            err = capsys.readouterr().err
            assert "is a job array: ask about one of its 6 sub-job(s)" in err and "7487[1].vm" in err, (cmd, ask)
    assert main(["why", "--state-dir", str(tmp_path), "--max-age", "99999", "7487[].other"]) == 1
    assert "not in the status" in capsys.readouterr().err  # another server's array
    assert main(["why", "--state-dir", str(tmp_path), "--max-age", "99999", "7487[3]"]) == 0  # a sub-job as before
    out = capsys.readouterr().out  # held by the array's slot limit (qsub -t 1-6%2): Hold_Types l, no qhold
    assert "held" in out and "slot limit" in out and "Hold_Types" in out
    assert main(["why", "--state-dir", str(tmp_path), "--max-age", "99999", "748"]) == 0  # not 7487's prefix
    assert "alice" in capsys.readouterr().out
