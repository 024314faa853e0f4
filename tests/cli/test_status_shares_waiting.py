"""`mysched shares` counts waiting jobs alike on every row: QUEUED (a free slot would start
them) apart from BLOCKED (held, at a limit, never fitting), for VOs, groups and users, and
the JSON gives both beside queued_jobs (every waiting job)."""

from __future__ import annotations

import json
import time

from mysched.cli.main import main
from mysched.config import config_from_text
from mysched.core.model.batch import JobState
from mysched.core.planner import plan
from mysched.core.share.usage import Usage
from mysched.daemon.statusfile import build_status, write_status

from ..conftest import nodes, queued, running, snap

CFG = config_from_text('vos = { atlas = { groups = ["atlas"]; share = 50; }; cms = { groups = ["cms"]; share = 50; }; };')


def _status(tmp_path) -> None:
    # a full 4 x 4 farm; alice's one job is held (qhold), bob's waits for a slot
    jobs = [running(f"r{n}{i}", "carol", "cms", f"wn{n:02d}") for n in range(1, 5) for i in range(4)]
    jobs += [queued("1.srv", "alice", "atlas", state=JobState.HELD), queued("2.srv", "bob", "atlas")]
    s = snap(jobs, nodes(4, 4))
    write_status(str(tmp_path), build_status(s, plan(s, CFG, Usage(), 1000.0), CFG, published=time.time()))


def _out(capsys, *argv: str) -> str:
    assert main([*argv, "--max-age", "9999999999"]) == 0
    return capsys.readouterr().out


def _row(table: list[str], head: str, name: str) -> dict[str, str]:
    """Row `name` of the table under header `head` (a VO and a group may share a name)."""
    at = next(i for i, line in enumerate(table) if line.startswith(head))
    return dict(zip(table[at].split(), next(line for line in table[at + 1:] if line.split()[:1] == [name]).split()))


def test_vo_group_and_user_rows_count_a_held_job_as_blocked_not_queued(tmp_path, capsys):
    _status(tmp_path)
    lines = _out(capsys, "shares", "--groups", "--users", "--state-dir", str(tmp_path)).splitlines()
    vo = _row(lines, "VO ", "atlas")
    group = _row(lines, "GROUP ", "atlas")
    alice, bob = _row(lines, "USER ", "alice"), _row(lines, "USER ", "bob")
    assert (vo["QUEUED"], vo["BLOCKED"]) == ("1", "1")
    assert (group["QUEUED"], group["BLOCKED"]) == ("1", "1")  # was QUEUED 2
    assert (alice["QUEUED"], alice["BLOCKED"]) == ("0", "1")  # was QUEUED 1: her held job
    assert (bob["QUEUED"], bob["BLOCKED"]) == ("1", "0")


def test_json_gives_the_queued_column_as_eligible_jobs_and_keeps_queued_jobs(tmp_path, capsys):
    _status(tmp_path)
    doc = json.loads(_out(capsys, "shares", "--groups", "--users", "--json", "--state-dir", str(tmp_path)))
    for d in (doc["vos"]["atlas"], doc["groups"]["atlas"]):
        assert (d["queued_jobs"], d["eligible_jobs"], d["blocked_jobs"]) == (2, 1, 1)
    assert (doc["users"]["alice"]["eligible_jobs"], doc["users"]["alice"]["blocked_jobs"]) == (0, 1)
    assert (doc["users"]["bob"]["eligible_jobs"], doc["users"]["bob"]["blocked_jobs"]) == (1, 0)
